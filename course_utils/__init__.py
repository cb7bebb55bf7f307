"""Helpers for the course "Where does my tensor live?".

Plain Python first, widgets on top::

    import course_utils as cu
    device = cu.setup("01")             # runtime banner, returns the lesson's device: your GPU or a simulated one
    cu.check("01.nbytes", nbytes)       # -> Result (works in any Python, never raises for answers)
    cu.exercise("01.nbytes")            # the same in a notebook, with Check / Hint / Solution buttons
    cu.quiz("01.default_device")        # predict, commit, then see the explanation
    cu.progress()                       # your progress across the lessons
    cu.explain_devices(model, {"x": x}) # which parameter, buffer and input lives where, and the fix
    cu.explain_error(error)             # an error (or its pasted text): cause, fix, lesson
    cu.show_devices(model, x)           # a map: which memory holds each tensor, and how big it is

In any notebook, ``%load_ext course_utils`` explains device errors under their tracebacks.

Importing the package is light: each public name imports its module (and PyTorch) when first used, and the
lessons load when a registry (exercises, quizzes, misconceptions) is first read (:mod:`course_utils.loading`).

The package reads bottom-up, in floors (docs/architecture.md says where each concept lives): plain blocks and
looking at devices (text, files, device, gpusim, inventory, results, errors, devicemap) → grading, timing,
extension → exercises, quizzes, runtime, transfer → lessons, mismatch, notebook → store → learner, widgets →
classroom → this package and its command line. tests/test_architecture.py keeps it so.
"""
import importlib
import pkgutil
from typing import Any

from .loading import set_loader

#: Each public name -> (the module that defines it, its name there). Resolved on first use (:func:`__getattr__`),
#: so that importing the package, and ``python -m course_utils --help``, does not import PyTorch.
_EXPORTS = {"setup": ("runtime", "setup"),
            "best_device": ("device", "best_device"), "accelerator": ("device", "accelerator"),
            "is_simulated": ("gpusim", "is_simulated"), "check": ("checking", "check"),
            "Result": ("results", "Result"), "exercise": ("widgets", "exercise"),
            "exercise_ids": ("exercises", "exercise_ids"), "quiz": ("widgets", "quiz"),
            "answer": ("learner", "answer"), "hint": ("learner", "hint"), "solution": ("learner", "solution"),
            "progress": ("store", "summary"), "time_it": ("timing", "time_it"),
            "explain_devices": ("mismatch", "explain_devices"), "explain_error": ("errors", "explain_error"),
            "show_devices": ("devicemap", "show_devices"), "show_figure": ("figures", "show")}
#: The package's modules (``cu.figures``, ``cu.transfer``, ``cu.lessons``...), imported on first use too.
_SUBMODULES = tuple(sorted(info.name for info in pkgutil.iter_modules(__path__) if info.name != "__main__"))

__all__ = ["setup", "best_device", "accelerator", "is_simulated", "check", "Result", "exercise",
           "exercise_ids", "quiz", "answer", "hint", "solution", "progress", "time_it", "explain_devices",
           "explain_error", "show_devices", "show_figure",
           "figures", "timing"]   # the modules the lessons use by name: cu.figures.style, cu.timing.clock
__version__ = "0.3.0"   # the one place: pyproject.toml reads it; CITATION.cff and CHANGELOG.md follow it


def load_ipython_extension(ipython) -> None:
    """``%load_ext course_utils``: explain device errors under the traceback of the cell that raised them."""
    from .extension import load
    load(ipython)


def unload_ipython_extension(ipython) -> None:
    """``%unload_ext course_utils``."""
    from .extension import unload
    unload(ipython)


def __getattr__(name: str) -> Any:
    """A public name or a module of the package, imported when first asked for (PEP 562). The value is not kept
    here: the package's namespace stays as it was imported, and ``sys.modules`` makes each later look-up cheap."""
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_SUBMODULES))


def _load_lessons() -> None:
    """Import the lessons, which register their quizzes, exercises and misconceptions (:mod:`course_utils.loading`)."""
    importlib.import_module(".lessons", __name__)


set_loader(_load_lessons)
