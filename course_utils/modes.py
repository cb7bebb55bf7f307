"""The course's two modes: formative (the default, for self-learners and labs) and assessed (for graded work).

An instructor switches the assessed mode on for a class with ``COURSE_MODE=assessed`` in the students'
environment (a JupyterHub profile, a container) and in grading (``grade --assessed``; the Gradescope bundle made
with ``autograder --assessed``). In it the course shows no solution and not the last (most telling) hint, and a
check's feedback says what is wrong and where, but not the code to write: the sentences that hand over code are
left out, in a notebook and in ``grade`` alike, so Check and ``grade`` still agree.

The reference solutions live in the package that checks the answers. Students of an assessed class get the class's
release (``python -m course_utils release``): a package with no reference and no check of the lessons, only public
checks (:mod:`course_utils.publiccheck`), that always runs in assessed mode (:data:`BUILT_ASSESSED`), whatever
``COURSE_MODE`` says. Grade with the full package: in ``grade --assessed`` the grading process withholds the fixes
itself, so learner code cannot switch the mode."""
from __future__ import annotations

import os
import re
from pathlib import Path

#: The environment variable that selects the mode: ``assessed``, or anything else (unset) for formative.
MODE_ENV = "COURSE_MODE"
ASSESSED = "assessed"

#: What the course says where assessed mode withholds something.
WITHHELD = ("In this class the course runs in assessed mode (set by your instructor): it shows no solutions and "
            "its feedback says what is wrong, not the code to write.")

#: The verbs that open a sentence or a clause handing over the fix ("Use `torch.zeros_like(t)`.").
_FIX_VERBS = ("use", "move", "return", "register", "build", "create", "call", "write", "pass", "put", "replace",
              "make", "keep", "turn", "compare", "add", "define", "stack", "load", "save", "give", "change",
              "convert", "set", "wrap", "take", "start", "sum", "divide", "multiply", "count", "prefer", "fix",
              "do", "try", "apply", "instead", "then", "or", "ask", "look", "check")
_VERB = r"(?:" + "|".join(_FIX_VERBS) + r")\b"
#: A whole sentence that opens with an instruction and quotes code.
_FIX_SENTENCE = re.compile(r"^\(?" + _VERB + r"[^`]*`", re.IGNORECASE)
#: A clause after ":", ";" or "," that does the same, up to the sentence's end.
_FIX_CLAUSE = re.compile(r"\s*[:;,]\s+(?:e\.g\.\s+)?" + _VERB + r"[^`]*`.*$", re.IGNORECASE)
#: An example in brackets that quotes code: "(e.g. `torch.zeros_like(t)`)".
_EXAMPLE = re.compile(r"\s*\((?:e\.g\.|for example|such as)[^)]*`[^)]*\)", re.IGNORECASE)
#: Sentences end at ". ", "! " or "? " before an upper-case letter, a bracket or a back-tick, or at a line's end.
_SENTENCE = re.compile(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+(?=[A-Z(`])|\n+")

#: The marker file of the students' package of an assessed class (``python -m course_utils release``): always assessed.
BUILT_ASSESSED = Path(__file__).with_name("data") / "assessed-build.json"


def assessed() -> bool:
    """Whether the course runs in assessed mode: ``COURSE_MODE=assessed``, or a package built for an assessed class
    (:data:`BUILT_ASSESSED`)."""
    return os.environ.get(MODE_ENV, "").strip().lower() == ASSESSED or BUILT_ASSESSED.exists()


def withhold_fixes(feedback: str) -> str:
    """``feedback`` without what hands over code to write: sentences and clauses that open with an instruction and
    quote code ("Move each batch inside the loop: `inputs = inputs.to(device)`.", "...; use `t.element_size()`."),
    and examples in brackets that quote code. What is wrong, and where, stays."""
    kept = []
    for sentence in _SENTENCE.split(feedback):
        sentence = sentence.strip()
        if not sentence or _FIX_SENTENCE.match(sentence):
            continue
        end = sentence[-1] if sentence[-1] in ".!?" else ""
        sentence = _FIX_CLAUSE.sub("", _EXAMPLE.sub("", sentence)).rstrip(" .:;,")
        if sentence:
            kept.append(sentence + (end or ("" if sentence[-1] in ")\"'" else ".")))
    return " ".join(kept) or "Not yet right."


__all__ = ["MODE_ENV", "ASSESSED", "WITHHELD", "assessed", "withhold_fixes"]
