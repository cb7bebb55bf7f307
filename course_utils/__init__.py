"""Helpers for the course "Where does my tensor live?".

Plain Python first, widgets on top::

    import course_utils as cu
    device = cu.setup("01")             # runtime banner, returns the device to use
    other = cu.second_device(device)    # the device to move tensors to: a GPU, the simulated one, or meta
    cu.check("01.nbytes", nbytes)       # -> Result (works in any Python, never raises for answers)
    cu.exercise("01.nbytes")            # the same in a notebook, with Check / Hint / Solution buttons
    cu.quiz("01.default_device")        # predict, commit, then see the explanation
    cu.progress()                       # your progress across the lessons
    cu.explain_devices(model, {"x": x}) # which parameter, buffer and input lives where, and the fix
    cu.explain_error(error)             # an error (or its pasted text): cause, fix, lesson
    cu.show_devices(model, x)           # a map: which memory holds each tensor, and how big it is

In any notebook, ``%load_ext course_utils`` explains device errors under their tracebacks.

The package reads bottom-up, in floors (docs/architecture.md says where each concept lives): plain blocks and
looking at devices (text, files, device, standin, inventory, results, errors, devicemap) → grading, timing,
extension → exercises, quizzes, runtime, transfer → lessons, mismatch, notebook → store → learner, widgets →
classroom → this package and its command line. tests/test_architecture.py keeps it so.
"""
from . import lessons  # noqa: F401  (registers every lesson's quizzes and exercises)
from .device import accelerator, best_device
from .devicemap import show_devices
from .errors import explain_error
from .figures import show as show_figure
from .exercises import check, exercise_ids
from .learner import answer, hint, solution
from .mismatch import explain_devices
from .store import summary as progress
from .results import Result
from .runtime import second_device, setup
from .simdevice import is_simulated
from .timing import time_it
from .widgets import exercise, quiz

__all__ = ["setup", "second_device", "best_device", "accelerator", "is_simulated", "check", "Result", "exercise", "exercise_ids",
           "quiz", "answer", "hint", "solution", "progress", "time_it", "explain_devices",
           "explain_error", "show_devices", "show_figure"]
__version__ = "0.2.0"   # the one place: pyproject.toml reads it; CITATION.cff and CHANGELOG.md follow it


def load_ipython_extension(ipython) -> None:
    """``%load_ext course_utils``: explain device errors under the traceback of the cell that raised them."""
    from .extension import load
    load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext course_utils``."""
    from .extension import unload
    unload(ipython)
