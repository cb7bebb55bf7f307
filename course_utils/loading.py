"""Loading the lessons before what they register is read.

The registries (:mod:`course_utils.exercises`, :mod:`course_utils.quizzes`, :mod:`course_utils.misconceptions`)
sit below the lessons that fill them, so they never import a lesson. Importing ``course_utils`` hands this module
the way to load them (:func:`set_loader`), and each registry calls :func:`load_lessons` before it is read: importing
the package stays light (no PyTorch, no lessons), and the first read of a registry loads every lesson.
"""
from __future__ import annotations

from typing import Callable, Optional

_loader: Optional[Callable[[], object]] = None


def set_loader(loader: Callable[[], object]) -> None:
    """Make :func:`load_lessons` call ``loader`` (idempotent and cheap once done, as an import is)."""
    global _loader
    _loader = loader


def load_lessons() -> None:
    """Load every lesson (once; later calls cost an import's cache look-up), so that the registries are full."""
    if _loader is not None:
        _loader()
