"""Helpers for the course "Where does my tensor live?".

Plain Python first, widgets on top::

    import course_utils as cu
    device = cu.setup("01")             # runtime banner, returns the device to use
    cu.check("01.nbytes", nbytes)       # -> Result (works in any Python, never raises for answers)
    cu.exercise("01.nbytes")            # the same in a notebook, with Check / Hint / Solution buttons
    cu.quiz("01.default_device")        # predict, commit, then see the explanation
    cu.progress()                       # your progress across the seven lessons
    cu.explain_devices(model, {"x": x}) # which parameter, buffer and input lives where, and the fix
"""
from .device import accelerator, best_device
from .exercises import check, exercise_ids
from .mismatch import explain_devices
from .store import summary as progress
from .results import Result
from .runtime import setup
from .timing import time_it
from .widgets import answer, exercise, hint, quiz, solution

__all__ = ["setup", "best_device", "accelerator", "check", "Result", "exercise", "exercise_ids",
           "quiz", "answer", "hint", "solution", "progress", "time_it", "explain_devices"]
__version__ = "0.1.0"
