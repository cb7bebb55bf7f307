"""Lesson content: the ``lNN_*.py`` modules hold lesson NN's quizzes and exercises (one module a lesson, and lesson
07's capstone one of its own, ``l07_capstone``).

An exercise lives in exactly one place: its reference solution, its grader and its hints sit
together in the lesson's module. Importing this package registers them all. Each lesson's number, title and
notebook are its record in :data:`course_utils.syllabus.LESSONS`.
"""
from __future__ import annotations

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("l") and _info.name[1:3].isdigit():
        importlib.import_module(f"{__name__}.{_info.name}")
