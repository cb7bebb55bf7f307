"""Quiz predictions handed in with the notebooks: read, written as a CSV, and counted per quiz.

A lesson's ``cu.progress()`` cell saves, with its output, a record of the learner's quiz predictions
(:data:`course_utils.results.PREDICTIONS_MIME`: each answered quiz's first prediction, as a letter, and how many were
committed). ``python -m course_utils grade --predictions predictions.csv`` reads the last such record in each
submission, keeps the quizzes of the submission's own lesson and writes them as a CSV (:data:`HEADER`);
``python -m course_utils report grades.csv predictions.csv`` counts them per quiz (:func:`quiz_stats`).

The record is what the learner's kernel wrote, and a learner can edit a saved notebook: predictions are a signal
for planning a class, never a grade. Each value is checked (a registered quiz of the lesson, a letter among its
options, a whole number of attempts); whether the first prediction was right is worked out from the letter."""
from __future__ import annotations

import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from ...exceptions import InvalidSubmission
from ...files import atomic_open
from ...results import PREDICTIONS_MIME
from ..reading.layouts import Student
from .reports import csv_field, csv_unescape
from ..reading.submissions import read_notebook

def _quizzes():
    """The quiz registry (imported when first needed: ``grade --help`` does not import PyTorch)."""
    from ... import quizzes
    return quizzes


#: The predictions CSV's columns: one row per submission and quiz.
HEADER = ("submission", "quiz", "first", "first_correct", "attempts")
#: Committed predictions of one quiz beyond this are counted as this many (a hand-edited record).
MAX_ATTEMPTS = 1000


@dataclass(frozen=True)
class Prediction:
    """A learner's first prediction on one quiz, as a submission recorded it."""

    submission: str
    quiz: str
    first: str          # the option's letter
    attempts: int       # predictions committed, the first included

    @property
    def first_correct(self) -> bool:
        """Whether the first prediction was the quiz's answer."""
        return self.first == string.ascii_lowercase[_quizzes().get_quiz(self.quiz).answer]

    def values(self) -> tuple[str, ...]:
        """The row as CSV fields, in :data:`HEADER` order."""
        return (self.submission, self.quiz, self.first, "true" if self.first_correct else "false", str(self.attempts))


def recorded(nb: dict, submission: str, lesson: str) -> list[Prediction]:
    """The predictions on ``lesson``'s quizzes in the last record of predictions saved in ``nb``'s outputs, as
    :func:`~course_utils.classroom.reading.submissions.read_notebook` keeps them; none without a record. What is not a
    registered quiz of the lesson, a letter among its options and a whole number of attempts is left out."""
    record = _last_record(nb)
    quizzes = record.get("quizzes") if isinstance(record, dict) else None
    if not isinstance(quizzes, dict):
        return []
    found = []
    for quiz_id in _quizzes().quiz_ids():
        entry = quizzes.get(quiz_id)
        if not quiz_id.startswith(f"{lesson}.") or not isinstance(entry, dict):
            continue
        letters = string.ascii_lowercase[:len(_quizzes().get_quiz(quiz_id).options)]
        first, attempts = entry.get("first"), entry.get("attempts", 1)
        whole = type(attempts) is int or (type(attempts) is float and attempts.is_integer())
        if isinstance(first, str) and len(first) == 1 and first in letters and whole:
            found.append(Prediction(submission, quiz_id, first, min(max(int(attempts), 1), MAX_ATTEMPTS)))
    return found


def _last_record(nb: dict) -> Any:
    """The record of predictions in the last output of ``nb`` that holds one, or ``None``."""
    cells = nb.get("cells")
    for cell in reversed(cells if isinstance(cells, list) else []):
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for output in reversed(outputs if isinstance(outputs, list) else []):
            data = output.get("data") if isinstance(output, dict) else None
            if isinstance(data, dict) and PREDICTIONS_MIME in data:
                return data[PREDICTIONS_MIME]
    return None


def read_submissions(lessons: Mapping[str, str]) -> list[Prediction]:
    """The predictions each submission recorded on its lesson's quizzes (``lessons``: submission -> its lesson).
    A file that cannot be read as a notebook has none (``grade`` reports why)."""
    found: list[Prediction] = []
    for submission, lesson in sorted(lessons.items()):
        try:
            found += recorded(read_notebook(submission), submission, lesson)
        except InvalidSubmission:
            continue
    return found


def write_csv(predictions: Iterable[Prediction], path: str) -> None:
    """Write the predictions CSV to ``path`` (atomically; fields as :func:`~.reports.csv_field` writes them)."""
    with atomic_open(path, "w", encoding="utf-8", errors="backslashreplace", newline="") as f:
        f.write(",".join(HEADER) + "\n")
        for p in sorted(predictions, key=lambda p: (p.submission, p.quiz)):
            f.write(",".join(csv_field(v) for v in p.values()) + "\n")


def is_predictions_csv(header: Sequence[str]) -> bool:
    """Whether a CSV with this first row is a predictions CSV."""
    return tuple(header[:len(HEADER)]) == HEADER


def read_csv(rows: Iterable[list[str]]) -> list[Prediction]:
    """The predictions in a predictions CSV's ``rows`` (after its header); rows that are not a registered quiz,
    a letter among its options and a whole number of attempts are left out."""
    known, found = set(_quizzes().quiz_ids()), []
    for fields in rows:
        if len(fields) < len(HEADER) or fields[1] not in known:
            continue
        quiz = _quizzes().get_quiz(fields[1])
        first, attempts = fields[2], fields[4]
        if len(first) == 1 and first in string.ascii_lowercase[:len(quiz.options)] and attempts.isdigit():
            found.append(Prediction(csv_unescape(fields[0]), quiz.id, first, min(max(int(attempts), 1), MAX_ATTEMPTS)))
    return found


# --- counting -----------------------------------------------------------------------------------------------------

@dataclass
class QuizStats:
    """What the class predicted on one quiz."""

    quiz: str
    lesson: str
    question: str
    answer: str                 # the right option, "b) ..."
    students: int               # students who handed in the quiz's lesson
    predicted: int              # of them, those whose notebook recorded a prediction
    right_first: int            # of those, right with their first prediction
    wrong: list[tuple[str, int]] = field(default_factory=list)   # "a) option" -> students, most chosen first

    @property
    def share_right(self) -> float:
        """The share of those who predicted that were right first time."""
        return self.right_first / self.predicted if self.predicted else 0.0


def quiz_stats(predictions: Iterable[Prediction], whose: Mapping[str, Student],
               handed_in: Mapping[str, Iterable[str]]) -> list[QuizStats]:
    """Per quiz of the lessons handed in, what the students predicted first: each student once (from their first
    submission, in path order, that recorded the quiz), counted among the students who handed its lesson in
    (``whose``: submission -> student; ``handed_in``: submission -> its lessons, from the grades)."""
    of: dict[str, set[str]] = {}
    for submission, lessons in handed_in.items():
        for lesson in lessons:
            of.setdefault(lesson, set()).add(whose[submission].key)
    first: dict[tuple[str, str], Prediction] = {}
    for p in sorted(predictions, key=lambda p: p.submission):
        student = whose.get(p.submission)
        if student is not None and student.key in of.get(p.quiz[:2], ()):
            first.setdefault((p.quiz, student.key), p)
    stats = []
    for quiz_id in _quizzes().quiz_ids():
        lesson = quiz_id[:2]
        if lesson not in of:
            continue
        quiz = _quizzes().get_quiz(quiz_id)
        mine = [p for (q, _), p in first.items() if q == quiz_id]
        wrong = Counter(f"{p.first}) {quiz.options[string.ascii_lowercase.index(p.first)]}" for p in mine
                        if not p.first_correct)
        letter = string.ascii_lowercase[quiz.answer]
        stats.append(QuizStats(quiz_id, lesson, quiz.question, f"{letter}) {quiz.options[quiz.answer]}",
                               len(of[lesson]), len(mine), sum(p.first_correct for p in mine),
                               sorted(wrong.items(), key=lambda kv: (-kv[1], kv[0]))))
    return stats


def most_mispredicted(stats: Sequence[QuizStats], lesson: str, count: int = 2,
                      min_predicted: int = 1) -> list[QuizStats]:
    """The quizzes of ``lesson`` that the fewest predicted right first time (of those with at least
    ``min_predicted`` predictions and a wrong one), at most ``count``."""
    mine = [s for s in stats if s.lesson == lesson and s.predicted >= min_predicted and s.wrong]
    return sorted(mine, key=lambda s: (s.share_right, s.quiz))[:count]


def lesson_of(exercises: Iterable[str]) -> Optional[str]:
    """The lesson of a graded submission, from its exercises' ids (``None`` for a submission of none)."""
    lessons = {e[:2] for e in exercises}
    return lessons.pop() if len(lessons) == 1 else None


__all__ = ["HEADER", "Prediction", "recorded", "read_submissions", "write_csv", "is_predictions_csv", "read_csv",
           "QuizStats", "quiz_stats", "most_mispredicted", "lesson_of"]
