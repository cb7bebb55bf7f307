"""Which of a student's submissions counts, lesson by lesson, for the gradebook and the class report.

By default the **latest** counts, as Canvas and Moodle keep it: Canvas's file id (it grows with each upload), then
when the file was handed in (``grade`` writes it in the CSV), then a copy's number (``03_to_device (2).ipynb``).
``--resubmissions best`` counts the submission with the most points instead. Either way every row of a lesson comes
from one submission, never a mix of versions, and a notebook counts before files that are not notebooks (a PDF
handed in beside it). The others are listed, as are files whose lesson could not be told, so that everything a
student handed in is accounted for."""
from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from ... import misconceptions
from ..grader import TOTAL, Row
from ..reading import layouts

LATEST, BEST = "latest", "best"
#: What ``--resubmissions`` may choose.
POLICIES = (LATEST, BEST)


def lesson_of_id(item: str) -> str:
    """The lesson of an exercise or quiz id (``"03.move"`` -> ``"03"``); ``"?"`` for an id that names none."""
    return item[:2] if item[:2].isdigit() else "?"


class Chosen(NamedTuple):
    """What counts of a class's rows (see :func:`choose`); students are keyed by :attr:`.layouts.Student.key`."""

    handed_in: dict[str, set[str]]  # each submission -> its lessons
    whose: dict[str, layouts.Student]  # each submission -> its student
    best: dict[tuple[str, str], Row]  # (student, exercise) -> the row of the submission that counts
    counted: dict[tuple[str, str], str]  # (student, lesson) -> the submission that counts
    others: dict[tuple[str, str], list[str]]  # (student, lesson) -> the student's other submissions of it
    unplaced: dict[str, list[Row]]  # student -> the TOTAL rows of their files whose lesson could not be told
    rows: dict[str, list[Row]]  # each submission -> its rows


def choose(rows: list[Row], policy: str = LATEST) -> Chosen:
    """Whose each submission is, and which one counts per student and lesson (``policy``: :data:`POLICIES`)."""
    by_submission: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_submission[row.submission].append(row)
    handed_in = {sub: {lesson_of_id(r.exercise) for r in mine if r.exercise != TOTAL}
                 for sub, mine in by_submission.items()}
    whose = layouts.students(handed_in)
    candidates: dict[tuple[str, str], list[str]] = defaultdict(list)
    unplaced: dict[str, list[Row]] = defaultdict(list)
    for sub, lessons in handed_in.items():
        for lesson in lessons:
            candidates[whose[sub].key, lesson].append(sub)
        if not lessons:
            unplaced[whose[sub].key] += by_submission[sub]

    def rank(sub: str, lesson: str) -> tuple:
        mine = [r for r in by_submission[sub] if lesson_of_id(r.exercise) == lesson]
        notebook = not all(misconceptions.NOT_A_NOTEBOOK in r.code.split() for r in mine)
        (file_id, copy), when = layouts.version(sub), max(r.submitted for r in mine)
        latest = (file_id, when, copy, sub)
        return (notebook, sum(r.points for r in mine), latest) if policy == BEST else (notebook, latest)

    counted, others = {}, {}
    for key, subs in candidates.items():
        ranked = sorted(subs, key=lambda sub: rank(sub, key[1]), reverse=True)
        counted[key] = ranked[0]
        if len(ranked) > 1:
            others[key] = ranked[1:]
    best = {(whose[r.submission].key, r.exercise): r for r in rows if r.exercise != TOTAL
            and counted[whose[r.submission].key, lesson_of_id(r.exercise)] == r.submission}
    return Chosen(handed_in, whose, best, counted, others, dict(unplaced), dict(by_submission))


__all__ = ["Chosen", "choose", "lesson_of_id", "LATEST", "BEST", "POLICIES"]
