"""``python -m course_utils report GRADES --format gradebook``: one row per student, one column per lesson, for an LMS.

The grader writes a row per submission and exercise; a gradebook wants a row per student. Whose each submission is
comes from the layout the class was collected in (:mod:`.layouts`); a student who handed in an exercise more than
once counts with their best row (passed first, then points), as in the class report.

The CSV follows Canvas's gradebook import: ``Student, ID, SIS User ID, SIS Login ID, Section``, then a column per
lesson (``Lesson 03 (Where does my tensor live?)``) and ``Total``, with a first row ``Points Possible``. Canvas
matches rows by ``ID`` (its user id, read from the bulk download's file names) and makes an assignment of each new
column. Other LMSs (Moodle's CSV import among them) map the columns by name at import; Moodle's participant ids come
from an assignment's download and are given as ``Participant N``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ...files import atomic_open
from ..reading import layouts
from .class_stats import best_rows
from ..grader import Row
from .reports import csv_field

#: Canvas's leading columns, in its order.
LEADING = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
COURSE = "Where does my tensor live?"


def column(lesson: str) -> str:
    """The gradebook column of a lesson."""
    return f"Lesson {lesson} ({COURSE})"


def table(rows: Iterable[Row]) -> list[list[str]]:
    """The gradebook: a header, the ``Points Possible`` row, then one row per student (sorted by name).

    Args:
        rows: exercise rows as ``grade`` writes them (``TOTAL`` rows are ignored).
    """
    rows = [r for r in rows if r.exercise != "TOTAL"]
    _, whose, best = best_rows(rows)
    students = {whose[r.submission].key: whose[r.submission] for r in rows}
    lessons = sorted({exercise[:2] for _, exercise in best})
    possible: dict[str, int] = defaultdict(int)
    for exercise in {e for _, e in best}:
        possible[exercise[:2]] += max(r.max_points for (_, e), r in best.items() if e == exercise)
    points: dict[tuple[str, str], int] = defaultdict(int)
    handed_in: set[tuple[str, str]] = set()
    for (student, exercise), row in best.items():
        points[student, exercise[:2]] += row.points
        handed_in.add((student, exercise[:2]))
    out = [[*LEADING, *(column(lesson) for lesson in lessons), "Total"],
           ["Points Possible", "", "", "", "", *(str(possible[lesson]) for lesson in lessons),
            str(sum(possible.values()))]]
    for key in sorted(students, key=str.lower):
        student = students[key]
        identifier = f"Participant {student.id}" if student.layout == layouts.MOODLE and student.id else student.id
        marks = [str(points[key, lesson]) if (key, lesson) in handed_in else "" for lesson in lessons]
        out.append([student.name, identifier, "", "", "", *marks, str(sum(points[key, lesson] for lesson in lessons))])
    return out


def write(rows: Iterable[Row], out: str) -> list[str]:
    """Write the gradebook of ``rows`` to ``out`` as CSV, atomically (cells a spreadsheet would run are escaped).

    Returns:
        The files written.
    """
    with atomic_open(out, "w", encoding="utf-8", newline="") as f:
        for line in table(rows):
            f.write(",".join(csv_field(cell) for cell in line) + "\n")
    return [out]


__all__ = ["table", "write", "column", "LEADING"]
