"""The exercise registry: one reference, one grader and hints per exercise (running a check is
:mod:`course_utils.checking`).

Each lesson module in :mod:`course_utils.lessons` defines its reference solutions and
registers them with :func:`grader`; the registry never imports one: every read of it loads the lessons first
(:func:`course_utils.loading.load_lessons`). The reference is the single source of the solution: the grader
compares against it, :func:`course_utils.solution` shows it, and the test-suite pastes it into
the notebooks to prove that every check passes."""
from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

from .exceptions import UnknownId
from .loading import load_lessons


@dataclass(frozen=True)
class Exercise:
    """One graded exercise."""

    id: str                       # "<lesson>.<name>", e.g. "01.nbytes"
    title: str                    # short, shown with results
    reference: Callable           # the solution: its __name__ is the name the learner defines
    grade: Callable[[Any], str]   # given the learner's function or class once it is one (course_utils.grading)
    hints: tuple[str, ...]        # from gentle to nearly-the-answer
    points: int = 1               # for a pass

    @property
    def name(self) -> str:
        """The function or class name the learner's answer cell defines."""
        return self.reference.__name__

    @property
    def kind(self) -> str:
        """What the learner's answer must be, like the reference: ``"class"`` or ``"function"``."""
        return "class" if inspect.isclass(self.reference) else "function"

    @property
    def public(self) -> bool:
        """Whether only public checks stand here (the students' package of an assessed class): the reference is a
        placeholder (:func:`course_utils.publiccheck.placeholder`) and the full checks run at grading."""
        return bool(getattr(self.reference, "__course_public__", False))

    @property
    def lesson(self) -> str:
        """The lesson number, e.g. ``"01"``."""
        return self.id.split(".", 1)[0]

    @property
    def solution_source(self) -> str:
        """Source code of the reference solution, ready to paste into the answer cell (a comment saying so where
        the package was built without it, for an assessed class)."""
        none = "# This installation of the course has no reference solutions (it was built for assessed work).\n"
        if self.public:
            return none
        try:
            return textwrap.dedent(inspect.getsource(self.reference)).strip() + "\n"
        except (OSError, TypeError):
            return none


_REGISTRY: dict[str, Exercise] = {}
#: What changes while the learner works (the grader's tamper check allows it, and watches each entry itself).
CHANGING = (_REGISTRY,)


def registry() -> Mapping[str, Exercise]:
    """Every registered exercise by id: a read-only view of the registry (it follows later registrations)."""
    load_lessons()
    return MappingProxyType(_REGISTRY)


def grader(exercise_id: str, *, reference: Callable, title: str, hints: tuple[str, ...] | list[str],
           points: int = 1) -> Callable[[Callable], Callable]:
    """Decorator that registers ``grade`` as the grader of ``exercise_id``; :func:`course_utils.checking.check` hands
    it the learner's answer only once it is a function (or a class, when ``reference`` is one)."""
    def register(grade: Callable[[Any], str]) -> Callable[[Any], str]:
        if exercise_id in _REGISTRY:
            raise ValueError(f"exercise {exercise_id!r} is registered twice")
        _REGISTRY[exercise_id] = Exercise(exercise_id, title, reference, grade, tuple(hints), points)
        return grade
    return register


def exercise_ids() -> list[str]:
    """All registered exercise ids, in course order."""
    load_lessons()
    return sorted(_REGISTRY)


def get_exercise(exercise_id: str) -> Exercise:
    """Look up an exercise; :class:`UnknownId` (a ``KeyError`` too) for an unknown id lists the known ones."""
    load_lessons()
    try:
        return _REGISTRY[exercise_id]
    except (KeyError, TypeError):
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownId(f"Unknown exercise id {exercise_id!r}. Known exercises: {known}") from None


def hints(exercise_id: str) -> tuple[str, ...]:
    """The hints of an exercise, gentlest first."""
    return get_exercise(exercise_id).hints


__all__ = ["Exercise", "grader", "get_exercise", "exercise_ids", "hints", "registry"]
