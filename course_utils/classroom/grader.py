"""Grading submissions: one notebook (:func:`grade_notebook`) or a batch (:func:`grade_all`), from
the messages of its runs to one row per exercise of its lesson."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from ..exercises import get_exercise
from ..results import FAILED, PASSED
from .messages import clean
from .runs import CANCELLED, STARTUP_LIMIT, Limits, fork_server, how_it_ended, run_worker, stop_server
from .submissions import (OWN_CELL, AnswerCell, InvalidSubmission, answer_cells, checked_after, defines,
                          file_lesson, lesson_exercises, lesson_of, own_cells, reaches_into_course, read_notebook,
                          why_unrunnable)


TOTAL = "TOTAL"
#: A rerun (after a cell that could not be stopped) needs at least this much of the submission's time.
MIN_RUN_SECONDS = 0.5


@dataclass(frozen=True)
class Row:
    """One CSV row: an exercise of a submission, or its ``TOTAL``."""

    submission: str
    exercise: str
    points: int
    max_points: int
    passed: bool
    feedback: str

    def values(self) -> tuple[str, ...]:
        """The row as CSV fields, in :data:`CSV_HEADER` order."""
        return (self.submission, self.exercise, str(self.points), str(self.max_points),
                "true" if self.passed else "false", self.feedback)


@dataclass
class SubmissionGrade:
    """The grade of one submission.

    Attributes:
        submission: the path as given (or found in a given folder).
        rows: one row per exercise, sorted by exercise id.
        note: why the submission as a whole was not graded (invalid file, tampering), or ``""``.
        events: short notes for the summary, e.g. ``"01.nbytes: timed out"``.
    """

    submission: str
    rows: list[Row]
    note: str = ""
    events: list[str] = field(default_factory=list)

    @property
    def points(self) -> int:
        """Points earned."""
        return sum(r.points for r in self.rows)

    @property
    def max_points(self) -> int:
        """Points available."""
        return sum(r.max_points for r in self.rows)

    @property
    def passed(self) -> int:
        """Number of exercises passed."""
        return sum(r.passed for r in self.rows)

    def total(self) -> Row:
        """The ``TOTAL`` row: sums, ``passed`` when every exercise passed."""
        feedback = self.note or f"{self.passed} of {len(self.rows)} exercises passed"
        return Row(self.submission, TOTAL, self.points, self.max_points,
                   bool(self.rows) and self.passed == len(self.rows) and not self.note, feedback)



def grade_of(submission: str, exercises: list[str], decided: dict[str, tuple[str, str]],
           note: str = "", events: Optional[list[str]] = None) -> SubmissionGrade:
    rows = []
    for ex_id in exercises:
        ex = get_exercise(ex_id)
        status, feedback = decided.get(ex_id, (FAILED, note or "Not graded."))
        passed = status == PASSED and not note
        rows.append(Row(submission, ex_id, ex.points if passed else 0, ex.points, passed, clean(feedback)))
    return SubmissionGrade(submission, rows, clean(note) if note else "", sorted(set(events or [])))


def grade_notebook(path: str, limits: Limits = Limits(), lesson: Optional[str] = None) -> SubmissionGrade:
    """Grade one submitted notebook.

    Args:
        path: the notebook file (the string is used as the submission's name).
        limits: time and memory limits.
        lesson: grade on this lesson's exercises (e.g. ``"01"``) instead of detecting the lesson.

    Returns:
        Its :class:`SubmissionGrade`; never raises for anything in the file.
    """
    try:
        nb = read_notebook(path)
        cells = answer_cells(nb)
    except InvalidSubmission as e:
        lesson = lesson or lesson_of(path)
        return grade_of(path, lesson_exercises(lesson) if lesson else [], {}, f"Not graded: {e}.",
                      ["invalid notebook"])
    events: list[str] = []
    if lesson is None:
        lesson = lesson_of(path, cells)
        named = file_lesson(path)
        if lesson and named and named != lesson:
            events.append(f"graded as lesson {lesson}, the lesson of its answer cells (its name says {named})")
    if lesson is None:
        return grade_of(path, [], {}, "Not graded: could not tell which lesson this notebook belongs to (no "
                      "answer cells, and the file name does not start with a lesson number); use --lesson.",
                      ["unknown lesson"])
    exercises = lesson_exercises(lesson)
    # Answer cells of other lessons' exercises (or of no registered exercise) are not run: they are
    # not part of this assignment. They are reported, so that a wrong file is noticed.
    ignored = sorted({c[1] for c in cells if c[1] not in exercises})
    cells = [c for c in cells if c[1] in exercises]
    decided: dict[str, tuple[str, str]] = {}
    events += [f"ignored answer cells of {', '.join(ignored)}"] if ignored else []
    elsewhere = (f" This notebook has answer cells for {', '.join(ignored)}, which are not exercises of lesson "
                 f"{lesson}: they are not graded. Is this the right notebook?") if ignored else ""
    own = _own_cells(nb, cells, exercises, events)
    for ex_id in exercises:
        if not any(c[1] == ex_id for c in cells) and not any(get_exercise(ex_id).name in defines(c.source)
                                                              for c in own):
            decided[ex_id] = (FAILED, "Answer cell missing: the notebook has no cell marked as the answer to "
                                      f"{ex_id}. Keep the answer cell and write your code in it." + elsewhere)
    cells = sorted(cells + own + checked_after(nb, cells, own, exercises))
    unrunnable = {c[0]: why_unrunnable(c[2]) for c in cells}
    for index, ex_id, _ in cells:
        if unrunnable[index] and ex_id not in decided:
            decided[ex_id] = (FAILED, unrunnable[index])
            events.append(f"{ex_id}: unreadable answer cell")
    cells = [c for c in cells if not unrunnable[c[0]]]
    for _, ex_id, source in cells:
        construct = reaches_into_course(source)
        if construct and ex_id == OWN_CELL:
            for other in exercises:
                decided.setdefault(other, (FAILED, f"Not graded: a cell your answers use reads the call stack "
                                                   f"(`{construct}`), where the checker keeps the expected answers. "
                                                   "Solve the exercises with your own code."))
            events.append("a cell of the learner's own reads the checker's frames")
        elif construct and ex_id not in decided:
            decided[ex_id] = (FAILED, f"Not graded: your answer cell uses `{construct}`, which reads the call "
                                      "stack, where the checker keeps the expected answers. Solve the exercise "
                                      "with your own code.")
            events.append(f"{ex_id}: reads the checker's frames")
    skip: set[int] = set()
    deadline = time.monotonic() + limits.timeout  # for the whole submission, every rerun included
    while any(e not in decided for e in exercises):
        to_check = [e for e in exercises if e not in decided]
        left = deadline - time.monotonic()
        if left < MIN_RUN_SECONDS:
            for ex_id in to_check:
                decided[ex_id] = (FAILED, f"Not graded: the submission used up its time limit ({limits.timeout:g} s "
                                          "for the whole submission) before this exercise could be checked.")
            events.append("timed out")
            break
        run = run_worker([c for c in cells if c[0] not in skip], to_check, dataclasses.replace(limits, timeout=left))
        stage: Optional[dict] = None
        for message in run.messages:
            kind = message["t"]
            if kind == "stage":
                stage = message
            elif kind == "cell":
                stage = None
                error = message.get("error") or {}
                if error.get("kind") in ("timeout", "memory"):
                    skip.add(message["index"])  # it cannot finish: later runs leave it out
                if error and message.get("exercise") == OWN_CELL:
                    events.append(f"cell {message['index'] + 1} of the learner's own failed ({error.get('kind')})")
            elif kind == "result" and message.get("exercise") in to_check:
                stage = None
                decided[message["exercise"]] = (str(message.get("status")), str(message.get("feedback")))
            elif kind == "tampered":
                changed = [str(c) for c in message.get("changed", [])]
                what = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
                where = (f" (in {_cell_name(stage)})" if stage and stage["stage"] == "cell"
                         else f" (while {stage['exercise']} was being checked)" if stage else "")
                return grade_of(path, exercises, {}, f"Not graded: the submission changes {what}{where}. Answer "
                              "cells must leave course_utils and PyTorch as they are.", ["tampering"])
        if run.end == "tampered":  # found by the worker, but its report was silenced
            where = f" (while {stage['exercise']} was being {'run' if stage['stage'] == 'cell' else 'checked'})" \
                if stage else ""
            return grade_of(path, exercises, {}, f"Not graded: the submission changes what the grader relies on"
                            f"{where}, and kept the grader from reading what. Answer cells must leave "
                            "course_utils, PyTorch and the grader's files as they are.", ["tampering"])
        if run.supervisor_lost:  # how far the run got after that depends on timing: grade none of it
            return grade_of(path, exercises, {}, "Not graded: the process that supervises this submission's run was "
                          "killed (by the submission itself, by another one graded at the same time, or by the "
                          "system). Answer cells must leave the grader's processes alone.", ["supervisor killed"])
        what, event = how_it_ended(run, limits)
        # When nothing can be blamed on one exercise, what is left is not graded, and that is final.
        if run.end == "done":
            why, event = "no result came back from its process", "results lost"
        elif run.end == "error" and stage is None:
            why, event = f"the grader failed ({run.messages[-1].get('message')})", "grader error"
        elif not run.ready:
            why = (f"the grader could not start a process within {STARTUP_LIMIT:g} s" if run.end == "timeout"
                   else f"its process ended before running any answer ({what})")
            event = "grader error"
        elif stage is None:
            why = f"its process stopped between two steps: it {what}"
        else:
            why = ""
        if why:
            left = [e for e in to_check if e not in decided]
            for ex_id in left:
                decided[ex_id] = (FAILED, f"Not graded: {why}.")
            if left:
                events.append(event)
            break
        ex_id = stage["exercise"]
        if stage["stage"] == "cell" and ex_id == OWN_CELL:  # the answers that need it will say so
            skip.add(stage["index"])
            events.append(f"cell {stage['index'] + 1} of the learner's own: {event}")
            continue
        if stage["stage"] == "cell":
            skip.add(stage["index"])
            decided.setdefault(ex_id, (FAILED, f"Your answer cell {what}."))
        else:
            name = get_exercise(ex_id).name
            decided[ex_id] = (FAILED, f"While `{name}` was being checked, your code {what}.")
        events.append(f"{ex_id}: {event}")
    return grade_of(path, exercises, {e: _unseen_names(s, f) for e, (s, f) in decided.items()}, events=events)


def _cell_name(stage: dict) -> str:
    """How a ``stage`` message's cell is named in a note: an exercise's answer cell, or one of the learner's own."""
    if stage["exercise"] == OWN_CELL:
        return f"cell {stage['index'] + 1}, a cell of the learner's own that the answers use"
    return f"the answer cell of {stage['exercise']}"


def _own_cells(nb: dict, answers: list[AnswerCell], exercises: list[str], events: list[str]) -> list[AnswerCell]:
    """The learner's own cells that the answers need (:func:`own_cells`), with a note for the summary."""
    own = own_cells(nb, answers, exercises)
    if own:
        names = sorted(set().union(*(defines(c.source) for c in own)))
        shown = ", ".join(f"`{n}`" for n in names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        events.append(f"also ran cell{'s' if len(own) > 1 else ''} {', '.join(str(c.index + 1) for c in own)} "
                      f"of the learner's own (defining {shown})")
    return own


_NOT_DEFINED = "is not defined"


def _unseen_names(status: str, feedback: str) -> tuple[str, str]:
    """A feedback that says a name is not defined, with what the grader runs (a name the learner's
    kernel still has from a deleted cell exists in the notebook, but not for the grader)."""
    if status != PASSED and _NOT_DEFINED in feedback and "Restart the kernel" not in feedback:
        feedback += (" The grader runs your answer cells, and the cells of yours that define the names they use; "
                     "no cell of this notebook defines that name. Restart the kernel and run all cells to see "
                     "what the grader sees.")
    return status, feedback


def grade_all(paths: Sequence[str], limits: Limits = Limits(), *, jobs: int = 1, lesson: Optional[str] = None,
              on_progress: Optional[Callable[[int, int], None]] = None,
              on_grade: Optional[Callable[[SubmissionGrade], None]] = None) -> list[SubmissionGrade]:
    """Grade many notebooks, ``jobs`` at a time.

    Every submission gets a row per exercise of its lesson. One whose lesson cannot be told (see
    :func:`grade_notebook`) is graded as the lesson of every other submission of the batch when they
    all have the same one, with a note saying so; otherwise it gets only a ``TOTAL`` row saying why.

    Args:
        paths: notebook files (see :func:`find_submissions`).
        limits: time and memory limits per submission.
        jobs: submissions graded in parallel.
        lesson: force the lesson (see :func:`grade_notebook`).
        on_progress: called with (done, total) after each submission.
        on_grade: called with each submission's final grade as soon as it is known (to write it out
            before the batch ends), in the order they finish.

    Returns:
        The grades, sorted by submission path (whatever order they finished in).
    """
    def one(path: str, lesson: Optional[str]) -> SubmissionGrade:
        try:
            return grade_notebook(path, limits, lesson)
        except Exception as e:  # a bug in the grader must not stop the batch, nor lose the rows
            lesson = lesson or _safe_lesson(path)
            return grade_of(path, lesson_exercises(lesson) if lesson else [], {},
                          f"Not graded: internal grader error ({type(e).__name__}: {e}).", ["grader error"])

    def finished(grade: SubmissionGrade) -> None:
        others = [p for p in same_file.get(_real(grade.submission), []) if p != grade.submission]
        if others:  # each path is graded on its own; say that they are one file
            same = "same file as " + ", ".join(others)
            grade = dataclasses.replace(grade, events=sorted(set(grade.events) | {same}))
        grades.append(grade)
        if on_grade:
            on_grade(grade)

    same_file: dict[str, list[str]] = {}
    for path in paths:
        same_file.setdefault(_real(path), []).append(path)

    CANCELLED.clear()
    if paths:  # started from this thread, so that it lives as long as this thread (see _ForkServer)
        with contextlib.suppress(OSError):  # if it cannot start, each submission says so
            fork_server()
    grades: list[SubmissionGrade] = []
    unknown: list[SubmissionGrade] = []  # graded without a lesson: decided once the batch is known
    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(paths))))
    try:
        futures = [pool.submit(one, p, lesson) for p in paths]
        for done, future in enumerate(as_completed(futures), 1):
            grade = future.result()
            if grade.rows or lesson:
                finished(grade)
            else:
                unknown.append(grade)
            if on_progress:
                on_progress(done, len(futures))
    except BaseException:  # Ctrl-C: drop the queue and kill the running workers, then stop
        CANCELLED.set()
        pool.shutdown(wait=False, cancel_futures=True)
        stop_server()
        raise
    pool.shutdown()
    lessons = {",".join(sorted({get_exercise(r.exercise).lesson for r in g.rows})) for g in grades if g.rows}
    for grade in unknown:
        if len(lessons) == 1:
            assumed = next(iter(lessons))
            regraded = one(grade.submission, assumed)
            why = (f"Graded as lesson {assumed}, the lesson of every other submission in this batch: this "
                   "notebook does not say which lesson it belongs to (no answer cells, and its name does "
                   "not start with a lesson number). Use --lesson to choose.")
            grade = dataclasses.replace(regraded, note=clean(f"{regraded.note} {why}".strip()),
                                        events=sorted(set(regraded.events) | {f"lesson {assumed} assumed"}))
        finished(grade)
    return sorted(grades, key=lambda g: g.submission)


def _real(path: str) -> str:
    """The file ``path`` leads to, links followed (``path`` itself if that fails)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _safe_lesson(path: str) -> Optional[str]:
    """The submission's lesson as :func:`grade_notebook` would find it, or ``None``; never raises."""
    try:
        return lesson_of(path, answer_cells(read_notebook(path)))
    except Exception:
        try:
            return lesson_of(path)
        except Exception:
            return None
