"""The exercise registry and :func:`check`: one reference, one grader and hints per exercise.

Each lesson module in :mod:`course_utils.lessons` defines its reference solutions and
registers them with :func:`grader`; the registry never imports one: every read of it loads the lessons first
(:func:`course_utils.loading.load_lessons`). The reference is the single source of the solution: the grader
compares against it, :func:`course_utils.solution` shows it, and the test-suite pastes it into
the notebooks to prove that every check passes.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import signal
import textwrap
import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

from . import device as _device, misconceptions, modes, standin
from .loading import load_lessons
from .exceptions import UnknownId
from .errors import explain_error
from .grading import Crashed, ModesKept, NotAttempted, TimeLimit, Wrong, expect_callable, safe_repr
from .results import FAILED, NOT_ATTEMPTED, PASSED, Result
from .text import shorten

#: Seconds a single check may run before it is stopped (learner code may loop forever).
TIME_LIMIT = 20.0


@dataclass(frozen=True)
class Exercise:
    """One graded exercise.

    Attributes:
        id: ``"<lesson>.<name>"``, e.g. ``"01.nbytes"``.
        title: a short title shown with results.
        reference: the reference solution; its ``__name__`` is the name the learner defines.
        grade: ``grade(answer) -> str``, given the learner's function or class once it is known to be
            one (see :attr:`kind`); see :mod:`course_utils.grading`.
        hints: hints, from gentle to nearly-the-answer.
        points: points for a pass.
    """

    id: str
    title: str
    reference: Callable
    grade: Callable[[Any], str]
    hints: tuple[str, ...]
    points: int = 1

    @property
    def name(self) -> str:
        """The function or class name the learner's answer cell defines."""
        return self.reference.__name__

    @property
    def kind(self) -> str:
        """What the learner's answer must be, like the reference: ``"class"`` or ``"function"``."""
        return "class" if inspect.isclass(self.reference) else "function"

    @property
    def lesson(self) -> str:
        """The lesson number, e.g. ``"01"``."""
        return self.id.split(".", 1)[0]

    @property
    def solution_source(self) -> str:
        """Source code of the reference solution, ready to paste into the answer cell (a comment saying so where
        the package was built without it, for an assessed class)."""
        try:
            return textwrap.dedent(inspect.getsource(self.reference)).strip() + "\n"
        except (OSError, TypeError):
            return "# This installation of the course has no reference solutions (it was built for assessed work).\n"


_REGISTRY: dict[str, Exercise] = {}
#: What changes while the learner works (the grader's tamper check allows it, and watches each entry itself).
CHANGING = (_REGISTRY,)


def registry() -> Mapping[str, Exercise]:
    """Every registered exercise by id: a read-only view of the registry (it follows later registrations)."""
    load_lessons()
    return MappingProxyType(_REGISTRY)


def grader(exercise_id: str, *, reference: Callable, title: str, hints: tuple[str, ...] | list[str],
           points: int = 1) -> Callable[[Callable], Callable]:
    """Decorator that registers ``grade`` as the grader of ``exercise_id``.

    :func:`check` hands ``grade`` the learner's answer only once it is a function (or a class, when
    ``reference`` is one), so a grader starts from a callable.
    """
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
    """Look up an exercise.

    Raises:
        UnknownId: for an unknown id (a ``KeyError`` too); the message lists the known ones.
    """
    load_lessons()
    try:
        return _REGISTRY[exercise_id]
    except (KeyError, TypeError):
        known = ", ".join(sorted(_REGISTRY))
        raise UnknownId(f"Unknown exercise id {exercise_id!r}. Known exercises: {known}") from None


def check(exercise_id: str, answer: Any, *, timeout: float | None = None) -> Result:
    """Check a learner's answer against the exercise's reference.

    Never raises for anything the learner passes: a stub gives "not attempted", exceptions,
    wrong types, shapes, dtypes and devices give specific feedback. The answer runs, and is compared,
    with the stand-in GPU (:mod:`course_utils.standin`) paused, as the batch grader runs it: Check in a
    notebook and ``grade`` give the same verdict.

    Args:
        exercise_id: e.g. ``"01.nbytes"``.
        answer: the learner's function or class.
        timeout: seconds the check may run before it is stopped (default :data:`TIME_LIMIT`).

    Returns:
        A :class:`~course_utils.results.Result`.

    Raises:
        KeyError: if ``exercise_id`` is not a registered exercise (a notebook typo, not a learner answer).
    """
    ex = get_exercise(exercise_id)
    printed = io.StringIO()
    status, feedback, code, earned = FAILED, "", "", 0
    seconds = TIME_LIMIT if timeout is None else timeout
    _device.warm_up()   # the accelerator's start-up is not the answer's time
    try:
        with standin.paused(), time_limit(seconds), _torch_state_kept(), contextlib.redirect_stdout(printed), \
                contextlib.redirect_stderr(printed):
            with ModesKept() as kept:  # what learner code ran outside grading.call may leave active
                feedback = ex.grade(expect_callable(answer, ex.name, kind=ex.kind))
            if kept.changed:
                raise Wrong(_MODE_LEFT, misconceptions.MODE_LEFT)
        status = PASSED
    except NotAttempted:
        status, code, feedback = NOT_ATTEMPTED, misconceptions.NOT_ATTEMPTED, (
            f"Not attempted yet: `{ex.name}` still raises NotImplementedError. "
            f"Replace `raise NotImplementedError` with your code, run that cell, then check again.")
    except Wrong as e:
        feedback, code, earned = str(e), e.code, e.earned
        if modes.assessed():   # what is wrong and where, not the code to write
            feedback = modes.withhold_fixes(feedback)
    except Crashed as e:
        feedback, code = _crash_feedback(e), _crash_code(e)
    except TimeLimit:
        code, feedback = misconceptions.TIMEOUT, (f"Your code ran for more than {seconds:g} s and was stopped. "
                                                  "Look for a loop that never ends.")
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # anything odd an answer object does while being inspected
        code, feedback = misconceptions.ODD_ANSWER, (
            f"Checking stopped with {type(e).__name__}: {safe_repr(str(e), 200)}. "
            f"Make sure `{ex.name}` is the {ex.kind} the exercise asks for.")
    points = ex.points if status == PASSED else part_marks(earned, ex.points)
    return Result(ex.id, ex.title, status, points, ex.points, feedback,
                  printed=shorten(printed.getvalue().strip(), 300), code=code)


_MODE_LEFT = ("Your code left a torch function mode or dispatch mode active while it was checked (one it entered "
              "and never left), which would see, and could change, every comparison the check makes. Leave "
              "every mode you enter: use a `with` block.")


def part_marks(earned: Any, points: int) -> int:
    """Points for an answer that did not pass: what its check said it ``earned``, as a whole number from 0 to one
    below ``points`` (only a pass earns them all; anything that is not a plain number earns 0)."""
    if type(earned) is not int:
        return 0
    return max(0, min(earned, points - 1))


def hints(exercise_id: str) -> tuple[str, ...]:
    """The hints of an exercise, gentlest first."""
    return get_exercise(exercise_id).hints


def _crash_feedback(e: Crashed) -> str:
    where = f" when called with {e.context}" if e.context else ""
    message = safe_repr(str(e.error), 300)
    if isinstance(e.error, SystemExit):
        return f"Your code called sys.exit(){where}. Return a value instead of exiting."
    return (f"Your code raised {type(e.error).__name__}{where}: {message}\n"
            "Read the message, fix the cell, run it, and check again.")


def _crash_code(e: Crashed) -> str:
    """``any.raised-device-error`` when the learner's code raised a device error the course explains."""
    if isinstance(e.error, Exception):
        explained = explain_error(e.error)
        if explained.known and explained.device_problem:
            return misconceptions.RAISED_DEVICE
    return misconceptions.RAISED


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`TimeLimit` after ``seconds`` (main thread on Unix; elsewhere no limit)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def on_alarm(signum, frame):
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _torch_state_kept() -> Iterator[None]:
    """Undo what learner code may change globally: default device and dtype, grad mode, RNG."""
    import torch

    device, dtype, grad = _default_device_set(), torch.get_default_dtype(), torch.is_grad_enabled()
    rng = torch.get_rng_state()
    try:
        yield
    finally:
        if _default_device_set() is not device:
            _restore_default_device(device)
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        torch.set_rng_state(rng)


def _default_device_set() -> Any:
    """The device ``torch.set_default_device`` set in this thread, or None when none is set."""
    import torch

    context = getattr(getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None), "device_context", None)
    return None if context is None else context.device


def _restore_default_device(device: Any) -> None:
    """``torch.set_default_device(device)``; None clears it ("cpu" would leave a slow mode on)."""
    import torch

    torch.set_default_device(device)
    context = getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None)
    if device is None and getattr(context, "device_context", False) is None:
        del context.device_context  # PyTorch 2.7's get_default_device() fails on the None it leaves


__all__ = ["Exercise", "grader", "check", "get_exercise", "exercise_ids", "hints", "registry", "time_limit",
           "Wrong", "NotAttempted", "Crashed"]
