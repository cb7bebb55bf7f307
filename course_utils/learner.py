"""The plain learner API, for any Python (a notebook without widgets, a terminal, the command line):
answer a quiz, read a hint, see the solution, check an exercise and keep the progress.

:mod:`course_utils.widgets` puts buttons on top of these functions."""
from __future__ import annotations

import inspect
import sys
from typing import Any

from . import misconceptions, modes, store
from .checking import check
from .exercises import get_exercise
from .quizzes import Outcome, get_quiz, grade_choice
from .results import NOT_ATTEMPTED, Result

#: Stands for "no answer given": the answer is then looked up by name where the learner works.
MISSING: Any = object()


def answer(quiz_id: str, choice: Any) -> Outcome:
    """Commit a prediction without widgets: ``answer("01.default_device", "b")``. The ``choice`` is a letter
    (``"a"``), a 0-based index, or the option's text; the :class:`~course_utils.quizzes.Outcome` says right or wrong,
    and explains."""
    outcome = grade_choice(get_quiz(quiz_id), choice)
    if outcome.chosen is not None:
        store.record_quiz(quiz_id, outcome.correct, outcome.chosen)
    return outcome


def hints(exercise_id: str, code: str | None = None) -> tuple[str, ...]:
    """The hints of an exercise as they fit the learner now, gentlest first: when the learner's last check of it in
    this session (:func:`course_utils.store.session_codes`, or ``code``) named a misconception that the lesson's
    ``HINT_FOR = {exercise id: {code: hint}}`` (beside the check, see lesson 01) has a hint for, that hint takes the
    place of the first; otherwise they are the exercise's hints as written."""
    ex = get_exercise(exercise_id)
    if code is None:
        code = store.session_codes().get(exercise_id, "")
    fitting = _hint_for(ex).get(code) if code else None
    shown = (fitting,) + ex.hints[1:] if fitting else ex.hints
    return shown[:-1] if modes.assessed() and len(shown) > 1 else shown   # assessed: not the last, most telling


def _hint_for(ex: Any) -> dict[str, str]:
    """The lesson's ``HINT_FOR`` entry for ``ex``: misconception code -> the hint that answers it."""
    module = sys.modules.get(getattr(ex.reference, "__module__", ""))
    table = getattr(module, "HINT_FOR", None)
    entry = table.get(ex.id) if isinstance(table, dict) else None
    return entry if isinstance(entry, dict) else {}


def hint(exercise_id: str, number: int = 1) -> str:
    """Hint ``number`` (1 = gentlest) for an exercise; the first answers the mistake the last check named, where
    the lesson has a hint for it (:func:`hints`)."""
    shown = hints(exercise_id)
    number = max(1, min(number, len(shown)))
    return f"Hint {number}/{len(shown)}: {shown[number - 1]}"


def solution(exercise_id: str, force: bool = False) -> str:
    """The reference solution, once you have made an attempt (or with ``force=True``); none in assessed mode."""
    ex = get_exercise(exercise_id)
    if modes.assessed():
        return modes.WITHHELD
    attempts = store.load()["exercises"].get(exercise_id, {}).get("attempts", 0)
    if not (attempts or force):
        return (f"Have a go first: write `{ex.name}`, check it, and read the hints "
                f"(course_utils.hint({exercise_id!r}, 1)). Then the solution is yours.")
    return ex.solution_source


def run_check(exercise_id: str, answer: Any = MISSING, namespace: dict | None = None) -> Result:
    """Check an exercise (``"01.nbytes"``) and record the outcome in the learner's progress. Without ``answer``, the
    name the exercise asks for is looked up in ``namespace`` (default: :func:`user_namespace`) at the moment of
    checking: "not attempted" when it is not defined yet."""
    ex = get_exercise(exercise_id)
    if answer is MISSING:
        answer = (namespace or user_namespace()).get(ex.name, MISSING)
    if answer is MISSING:
        result = Result(ex.id, ex.title, NOT_ATTEMPTED, 0, ex.points, f"`{ex.name}` is not defined yet: run the "
                        "answer cell above first.", code=misconceptions.MISSING)
    else:
        result = check(exercise_id, answer)
    store.record_result(result.exercise_id, result.status, result.points, result.max_points, result.code)
    return result


def user_namespace() -> dict:
    """The notebook's namespace, or the globals of the code that called into the course's package."""
    try:
        from IPython import get_ipython
        shell = get_ipython()
        if shell is not None:
            return shell.user_ns
    except ImportError:
        pass
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__", "").startswith("course_utils"):
        frame = frame.f_back
    return frame.f_globals if frame is not None else {}
