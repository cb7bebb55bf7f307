"""Lesson content: the ``lNN_*.py`` modules hold lesson NN's quizzes and exercises (one module a lesson, and lesson
07's capstone one of its own, ``l07_capstone``).

An exercise lives in exactly one place: its reference solution, its grader and its hints sit
together in the lesson's module. Importing this package registers them all.
"""
from __future__ import annotations

import importlib
import pkgutil

#: Lesson number -> title, in course order.
LESSONS = {
    "01": "Tensors",
    "02": "CPU vs GPU",
    "03": ".to(device)",
    "04": ".cuda()",
    "05": ".device",
    "06": "Device-mismatch errors",
    "07": "Transfer cost",
    "08": "Field guide (appendix)",
}
#: Lesson number -> its notebook, in ``notebooks/``.
NOTEBOOKS = {number: f"{number}_{stem}.ipynb" for number, stem in (
    ("01", "tensors"), ("02", "cpu_vs_gpu"), ("03", "to_device"), ("04", "cuda"), ("05", "device_attribute"),
    ("06", "mismatch_errors"), ("07", "transfer_cost"), ("08", "field_guide"))}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("l") and _info.name[1:3].isdigit():
        importlib.import_module(f"{__name__}.{_info.name}")
