"""Running a check: :func:`check` runs a learner's answer through its exercise's grader, with a time limit and
PyTorch's global state kept, and turns what the grader says into a :class:`~course_utils.results.Result`.

The exercises themselves (reference, grader, hints) are in the registry, :mod:`course_utils.exercises`; the pieces
a grader is made of are in :mod:`course_utils.grading`. ``cu.check``, the widgets' Check button
(:mod:`course_utils.learner`) and the batch grader's worker (:mod:`course_utils.classroom.sandbox.worker`) all run this.
"""
from __future__ import annotations

import contextlib
import io
import signal
import threading
from typing import Any, Iterator

from . import device as _device, misconceptions, modes
from .errors import explain_error
from .exercises import get_exercise
from .grading import Crashed, ModesKept, NotAttempted, TimeLimit, Wrong, expect_callable, safe_repr
from .results import CHECKED, FAILED, NOT_ATTEMPTED, PASSED, Result
from .text import shorten

#: Seconds a single check may run before it is stopped (learner code may loop forever).
TIME_LIMIT = 20.0


def check(exercise_id: str, answer: Any, *, timeout: float | None = None) -> Result:
    """Check a learner's ``answer`` (a function or class) against the exercise's reference, within ``timeout``
    seconds (default :data:`TIME_LIMIT`), as the batch grader does. Never raises for anything the learner passes (a
    stub gives "not attempted", wrong types, shapes, dtypes and devices give specific feedback); ``KeyError`` if
    ``exercise_id`` (``"01.nbytes"``) is not a registered exercise."""
    ex = get_exercise(exercise_id)
    printed = io.StringIO()
    status, feedback, code, earned = FAILED, "", "", 0
    seconds = TIME_LIMIT if timeout is None else timeout
    _device.warm_up()   # the accelerator's start-up is not the answer's time
    try:
        with time_limit(seconds), _torch_state_kept(), contextlib.redirect_stdout(printed), \
                contextlib.redirect_stderr(printed):
            with ModesKept() as kept:  # what learner code ran outside grading.call may leave active
                feedback = ex.grade(expect_callable(answer, ex.name, kind=ex.kind))
            if kept.changed:
                raise Wrong(_MODE_LEFT, misconceptions.MODE_LEFT)
        status = CHECKED if ex.public else PASSED   # public checks: the marks come at grading
    except NotAttempted:
        status, code, feedback = NOT_ATTEMPTED, misconceptions.NOT_ATTEMPTED, (
            f"Not attempted yet: `{ex.name}` still raises NotImplementedError. "
            f"Replace `raise NotImplementedError` with your code, run that cell, then check again.")
    except Wrong as e:
        feedback, code, earned = str(e), " ".join((e.code, *e.also)), e.earned
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
    points = ex.points if status == PASSED else 0 if ex.public else part_marks(earned, ex.points)
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


__all__ = ["check", "time_limit", "part_marks", "TIME_LIMIT"]
