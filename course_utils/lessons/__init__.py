"""Lesson content: the ``lNN_*.py`` modules hold lesson NN's exercises, split by exercise where a lesson has many:
``l03_to_device`` and ``l03_prepare``, ``l05_device_attribute`` and ``l05_training_bytes``, ``l06_mismatch_errors``
and ``l06_find_mismatches``, ``l07_transfer_cost``, ``l07_sum_batches`` and the capstone's ``l07_capstone``.

An exercise lives in exactly one place: its reference solution, its grader and its hints sit together in a lesson
module. A lesson's quizzes and misconceptions are data, ``course_utils/data/lessons/NN.json``: importing this package
registers every lesson's, in the lessons' order, then imports the modules, which name the codes their checks give
(``misconceptions.code``: a code missing from the data fails at import). Each lesson's number, title and notebook
are its record in :data:`course_utils.syllabus.LESSONS`.
"""
from __future__ import annotations

import importlib
import pkgutil

from .. import misconceptions, quizzes
from ..loading import LESSON_DATA

for _number in sorted(path.stem for path in LESSON_DATA.glob("[0-9][0-9].json")):
    quizzes.register_lesson(_number)
    misconceptions.register_lesson(_number)

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("l") and _info.name[1:3].isdigit():
        importlib.import_module(f"{__name__}.{_info.name}")
