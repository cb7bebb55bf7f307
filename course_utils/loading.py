"""Loading the lessons before what they register is read.

The registries (:mod:`course_utils.exercises`, :mod:`course_utils.quizzes`, :mod:`course_utils.misconceptions`)
sit below the lessons that fill them, so they never import a lesson. Importing ``course_utils`` hands this module
the way to load them (:func:`set_loader`), and each registry calls :func:`load_lessons` before it is read: importing
the package stays light (no PyTorch, no lessons), and the first read of a registry loads every lesson.

A lesson's quizzes and misconceptions are data, ``data/lessons/NN.json`` (:func:`lesson_data`): importing the lessons
registers them before the lesson modules look their codes up."""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Callable, Optional

#: The lessons' data files, ``NN.json``: ``{"quizzes": [...], "misconceptions": [...], "order": [...]}`` (the order: the
#: lesson's quizzes and exercises as the notebook meets them, for the progress table).
LESSON_DATA = Path(__file__).resolve().parent / "data" / "lessons"

_loader: Optional[Callable[[], object]] = None


def set_loader(loader: Callable[[], object]) -> None:
    """Make :func:`load_lessons` call ``loader`` (idempotent and cheap once done, as an import is)."""
    global _loader
    _loader = loader


def load_lessons() -> None:
    """Load every lesson (once; later calls cost an import's cache look-up), so that the registries are full."""
    if _loader is not None:
        _loader()


@functools.cache
def lesson_data(number: str) -> dict[str, Any]:
    """Lesson ``number``'s data file (``"01"`` reads ``data/lessons/01.json``), read once."""
    return json.loads((LESSON_DATA / f"{number}.json").read_text(encoding="utf-8"))
