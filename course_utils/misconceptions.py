"""Misconceptions: the mistakes a check recognises, each with a stable code.

A grader raises ``Wrong(message, code)``; the code travels with the result into a notebook's progress, the
grader's CSV and Gradescope's ``results.json``, so that a teacher can count, across a class, *why* answers
failed (``python -m course_utils report``). A lesson's codes start with its number (``03.to-not-assigned``) and are
data, the ``"misconceptions"`` of ``course_utils/data/lessons/NN.json`` (never in the students' package: the
explanations hold the fixes), registered by :func:`register_lesson`; the module whose check gives one names it with
:func:`code`. ``any.*`` codes are the generic ones that the shared checks and the check itself give (``any.raised``),
and ``grade.*`` those of the batch grader (a missing answer cell, tampering, a time limit), both defined below.

A code is a promise: once released it keeps its meaning (rename the ``name``, never the code)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

from .loading import lesson_data, load_lessons

#: ``NN.slug``, ``any.slug`` or ``grade.slug``: lower case, digits and dashes.
CODE = re.compile(r"^(?:\d\d|any|grade)\.[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Misconception:
    """One recognised mistake."""

    code: str          # stable: "03.to-not-assigned"
    name: str          # short, for a table: "`.to` without keeping the result"
    explanation: str   # for the teacher: what the learner likely believed, and what is true instead
    section: Optional[tuple[str, str]] = None   # (notebook, heading) that teaches it (" › " joins a subsection)
    question: str = ""   # to discuss in class

    @property
    def generic(self) -> bool:
        """True for the ``any.*`` and ``grade.*`` codes, which name no particular misconception."""
        return not self.code[:2].isdigit()

    @property
    def lesson(self) -> str:
        """``"03"`` for a lesson's code, ``""`` for a generic one."""
        return "" if self.generic else self.code[:2]

    def link(self) -> str:
        """A link to the teaching section, relative to the notebooks folder (``""`` without a section)."""
        if self.section is None:
            return ""
        notebook, heading = self.section
        anchor = heading.split(" › ")[-1].replace("`", "").replace(" ", "-")
        return f"{notebook}.ipynb#{anchor}"


_REGISTRY: dict[str, Misconception] = {}


def define(code: str, name: str, explanation: str, *, section: Optional[tuple[str, str]] = None,
           question: str = "") -> str:
    """Register a misconception and return its code (a grader then writes ``raise Wrong(message, CODE)``);
    ``ValueError`` for a malformed or repeated code, or a lesson's code without a section."""
    if not CODE.match(code):
        raise ValueError(f"malformed misconception code {code!r}: use NN.slug, any.slug or grade.slug")
    if code in _REGISTRY:
        raise ValueError(f"misconception code {code!r} is defined twice")
    entry = Misconception(code, name, explanation, section, question)
    if not entry.generic and (section is None or not question):
        raise ValueError(f"{code}: a lesson's misconception needs the section that teaches it and a question")
    _REGISTRY[code] = entry
    return code


def register_lesson(number: str) -> None:
    """Define lesson ``number``'s misconceptions from its data file, in the file's order (:mod:`course_utils.lessons`
    does, once). The students' package's files hold none."""
    for m in lesson_data(number).get("misconceptions", []):
        if not m["code"].startswith(f"{number}."):
            raise ValueError(f"data/lessons/{number}.json holds misconception {m['code']!r} of another lesson")
        define(m["code"], m["name"], m["explanation"], section=tuple(m["section"]), question=m["question"])


def code(value: str) -> str:
    """``value``, a code that must be defined: a lesson module names the codes its check gives with it
    (``COUNTED_ELEMENTS = code("01.counted-elements")``), so that one missing from the data fails at import
    (``LookupError``)."""
    if value not in _REGISTRY:
        raise LookupError(f"misconception {value!r} is not defined: add it to course_utils/data/lessons/"
                          f"{value[:2]}.json")
    return value


def codes(text: str) -> list[str]:
    """The well-formed codes in ``text``, space-separated as a result and the grader's CSV hold them (the one its
    feedback names first)."""
    return [code for code in text.split() if CODE.match(code)]


def get(code: str) -> Misconception:
    """The misconception for ``code``; an unknown code (from an older CSV) gets a placeholder."""
    load_lessons()
    return _REGISTRY.get(code) or Misconception(code, code, "A code this version of the course does not know.")


def registry() -> Mapping[str, Misconception]:
    """Every registered misconception, by code (read-only view)."""
    from types import MappingProxyType

    load_lessons()
    return MappingProxyType(_REGISTRY)


# --- generic codes: the shared checks, the check itself, and the batch grader -----------------------------

NOT_ATTEMPTED = define("any.not-attempted", "Not attempted",
                       "The answer is still the stub that raises NotImplementedError.")
RAISED = define("any.raised", "The code raised an error",
                "The learner's code raised an exception other than a device error.")
RAISED_DEVICE = define("any.raised-device-error", "The code raised a device error",
                       "The learner's code raised one of the device errors the course teaches (tensors on different "
                       "devices, a CUDA call without CUDA...): the code runs, but not on every device.")
TIMEOUT = define("any.timeout", "Ran past the time limit", "The check was stopped: the code ran too long.")
NOT_CALLABLE = define("any.not-callable", "Not the function or class asked for",
                      "The answer was a value, an instance or a call's result instead of the function or class.")
NOT_A_TENSOR = define("any.not-a-tensor", "Returned something other than a tensor",
                      "A tensor was asked for; the answer returned another type (or a tensor subclass of its own).")
RETURNED_TENSOR = define("any.returned-tensor", "Returned a tensor instead of a number",
                         "A plain Python number was asked for; the answer returned a tensor (`.item()` converts one).")
WRONG_TYPE = define("any.wrong-type", "Returned the wrong type",
                    "The answer returned a value of the wrong type (a float for an int, a bool, a NumPy scalar...).")
WRONG_DEVICE = define("any.wrong-device", "Result on the wrong device",
                      "The result was made on the default device (or another) instead of the device asked for.")
WRONG_SHAPE = define("any.wrong-shape", "Result of the wrong shape", "The result's shape is not the one asked for.")
WRONG_DTYPE = define("any.wrong-dtype", "Result of the wrong dtype", "The result's dtype is not the one asked for.")
WRONG_VALUE = define("any.wrong-value", "A wrong result the check names no mistake for",
                     "The result is wrong in a way the check does not recognise as a known misconception.")
READ_META = define("any.read-meta-data", "Read the values of a meta tensor",
                   "A `meta` tensor has shape, dtype and device but no data; the code tried to read or copy values.")
MODE_LEFT = define("any.mode-left", "Left a torch mode active",
                   "The code entered a torch function or dispatch mode and never left it.")
ODD_ANSWER = define("any.odd-answer", "The answer object misbehaved",
                    "Inspecting the answer raised something unusual (a hostile or broken object).")

MISSING = define("grade.missing-answer", "Answer missing",
                 "The submission has no answer cell for the exercise, or the cell does not define the name asked for.")
CELL_ERROR = define("grade.cell-error", "Answer cell could not run",
                    "The answer cell has a syntax error, or ran past its time or memory limit.")
REFERENCE = define("grade.reference", "Used the reference solution",
                   "The answer imports, wraps or copies the course's reference solution.")
CALL_STACK = define("grade.call-stack", "Read the checker's call stack",
                    "The code reads stack frames, where the checker keeps the expected answers.")
TAMPERING = define("grade.tampering", "Changed course_utils, PyTorch or the grader",
                   "The submission changed what the grader relies on; it was not graded.")
OUT_OF_TIME = define("grade.timeout", "Submission ran out of time",
                     "The submission as a whole used up its time limit before this exercise could be checked.")
NOT_A_NOTEBOOK = define("grade.not-a-notebook", "Handed in a file that is not a notebook",
                        "The submission is another kind of file (a Python script, a PDF, an HTML page, an empty "
                        "file...): no answer was handed in.")
NOT_GRADED = define("grade.not-graded", "Not graded",
                    "The submission could not be graded (not a notebook, unknown lesson, a process killed...).")

__all__ = ["Misconception", "code", "define", "get", "register_lesson", "registry"]
