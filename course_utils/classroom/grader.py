"""Grading submissions: one notebook (:func:`grade_notebook`) or a batch (:func:`grade_all`), from
the messages of its runs to one row per exercise of its lesson."""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, NamedTuple, Optional, Sequence

from .. import misconceptions, modes
from ..exceptions import InvalidSubmission, NotANotebook
from ..results import FAILED, PASSED
from ..text import clean
from .reading.cells import (OWN_CELL, AnswerCell, answer_cells, checked_after, defines, own_cells, reaches_into_course,
                            run_order, why_unrunnable)
from .reading import layouts
from .reading.submissions import file_lesson, handed_in_at, lesson_exercises, lesson_of, read_notebook
from .sandbox.messages import FATAL_CELL_ERRORS, CellMessage, End, ResultMessage, Stage, StageMessage, TamperedMessage
from .sandbox.runs import STARTUP_LIMIT, Limits, Run, fork_server, grader_error, how_it_ended, run_worker, stop_server


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
    code: str = ""  # the misconceptions the feedback names (course_utils.misconceptions), space-separated
    submitted: str = ""  # when the file was handed in (SubmissionGrade.submitted)
    late: bool = False
    answers: str = ""  # what identical copies share (SubmissionGrade.answers)

    def values(self) -> tuple[str, ...]:
        """The row as CSV fields, in :data:`CSV_HEADER` order."""
        return (self.submission, self.exercise, str(self.points), str(self.max_points),
                "true" if self.passed else "false", self.feedback, self.code, self.submitted,
                "true" if self.late else "false", self.answers)


@dataclass
class SubmissionGrade:
    """The grade of one submission: a row per exercise, sorted by exercise id."""

    submission: str  # the path as given (or found in a given folder)
    rows: list[Row]
    note: str = ""  # why the submission as a whole was not graded (invalid file, tampering), or ""
    events: list[str] = field(default_factory=list)  # short notes for the summary, e.g. "01.nbytes: timed out"
    note_code: str = ""  # the misconception code of `note` (tampering, a time limit...)
    submitted: str = ""  # when the file was handed in (handed_in_at), ISO 8601 in UTC; "" when unknown
    late: bool = False  # Canvas's LATE marker, or handed in after `grade --deadline`
    answers: str = ""  # what identical copies share: the answer cells tried, and their hash ("3:5d41402abc4b")

    def all_rows(self) -> list[Row]:
        """Its rows, then its ``TOTAL``, each with when it was handed in, whether late, and its answers' hash."""
        return [dataclasses.replace(r, submitted=self.submitted, late=self.late, answers=self.answers)
                for r in self.rows + [self.total()]]

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
                   bool(self.rows) and self.passed == len(self.rows) and not self.note, feedback, self.note_code)


class Decision(NamedTuple):
    """How one exercise of a submission was decided: ``status``, ``feedback``, the misconception ``code`` and the
    ``points`` its check gave an answer that did not pass (part marks)."""

    status: str
    feedback: str
    code: str
    points: int = 0


def _failed(feedback: str, code: str) -> Decision:
    return Decision(FAILED, feedback, code)


def _grade_of(submission: str, exercises: list[str], decided: dict[str, Decision], note: str = "",
              events: Optional[list[str]] = None, note_code: str = "") -> SubmissionGrade:
    """The grade: a row per exercise (``decided``: exercise -> :class:`Decision`), none passed when
    ``note`` says why the whole submission was not graded (``note_code``: its code)."""
    from ..checking import part_marks
    from ..exercises import get_exercise
    rows, whole = [], note_code or misconceptions.NOT_GRADED
    for ex_id in exercises:
        ex = get_exercise(ex_id)
        status, feedback, code, part = decided.get(ex_id, _failed(note or "Not graded.", whole))
        passed = status == PASSED and not note
        if modes.assessed() and not passed:   # decided here, where learner code cannot switch the mode
            feedback = modes.withhold_fixes(feedback)
        points = ex.points if passed else 0 if note else part_marks(part, ex.points)
        rows.append(Row(submission, ex_id, points, ex.points, passed, clean(feedback),
                        "" if passed else (whole if note else code or misconceptions.WRONG_VALUE)))
    return SubmissionGrade(submission, rows, clean(note) if note else "", sorted(set(events or [])),
                           note_code if note else "")


@dataclass
class _Grading:
    """One submission on its way through the steps of :func:`grade_notebook`."""

    path: str
    limits: Limits
    lesson: Optional[str]
    cancelled: Optional[threading.Event] = None  # the batch's: set when it was interrupted
    nb: dict = field(default_factory=dict)
    cells: list[AnswerCell] = field(default_factory=list)  # its answer cells; then what the workers run
    answers: list[AnswerCell] = field(default_factory=list)  # the answer cells of its lesson's exercises
    exercises: list[str] = field(default_factory=list)  # its lesson's
    decided: dict[str, Decision] = field(default_factory=dict)  # exercise -> how it was decided
    events: list[str] = field(default_factory=list)
    final: Optional[SubmissionGrade] = None  # the whole submission's grade, once a step has decided it

    def end(self, note: str, event: str, code: str = misconceptions.NOT_GRADED) -> None:
        """Decide the whole submission: not graded, for the reason ``note`` (``code``: its misconception code)."""
        self.final = _grade_of(self.path, self.exercises, {}, note, [event], code)


def grade_notebook(path: str, limits: Limits = Limits(), lesson: Optional[str] = None, *,
                   cancelled: Optional[threading.Event] = None) -> SubmissionGrade:
    """Grade one submitted notebook (``path`` names the submission) as ``lesson`` (else the one detected): read it,
    choose its lesson, select the cells to run, make the static checks, then run the cells until every exercise is
    decided; no more runs start once ``cancelled`` is set. A step may decide the whole submission (a file that is not
    a notebook, tampering...). Never raises for anything in the file."""
    grading = _Grading(path, limits, lesson, cancelled)
    for step in (_read, _choose_lesson, _select_cells, _static_checks, _run_until_decided):
        step(grading)
        if grading.final is not None:
            return grading.final
    decided = {e: _unseen_names(d) for e, d in grading.decided.items()}
    return dataclasses.replace(_grade_of(path, grading.exercises, decided, events=grading.events),
                               answers=_answers(grading.answers, decided))


def _answers(cells: list[AnswerCell], decided: dict[str, Decision]) -> str:
    """What identical copies share (:attr:`SubmissionGrade.answers`): the answer cells tried (not a stub, not
    missing), each line's trailing spaces and the blank lines left out."""
    tried = [c.source for c in cells if decided.get(c.exercise, _failed("", "")).code
             not in (misconceptions.NOT_ATTEMPTED, misconceptions.MISSING)]
    text = "\n\n".join("\n".join(line.rstrip() for line in s.splitlines() if line.strip()) for s in tried)
    return f"{len(tried)}:{hashlib.sha256(text.encode('utf-8', 'replace')).hexdigest()[:12]}" if tried else ""


def _read(g: _Grading) -> None:
    """Read the notebook and its answer cells; a file that is not a notebook is not graded."""
    try:
        g.nb = read_notebook(g.path)
        g.cells = answer_cells(g.nb)
    except InvalidSubmission as e:
        lesson = g.lesson or lesson_of(g.path)
        g.exercises = lesson_exercises(lesson) if lesson else []
        g.end(f"Not graded: {e}.", "invalid notebook",
              misconceptions.NOT_A_NOTEBOOK if isinstance(e, NotANotebook) else misconceptions.NOT_GRADED)


def _choose_lesson(g: _Grading) -> None:
    """The lesson: as given, else as :func:`lesson_of` tells it (a note when the file name says another)."""
    if g.lesson is None:
        g.lesson = lesson_of(g.path, g.cells)
        named = file_lesson(g.path)
        if g.lesson and named and named != g.lesson:
            g.events.append(f"graded as lesson {g.lesson}, the lesson of its answer cells (its name says {named})")
    if g.lesson is None:
        g.end("Not graded: could not tell which lesson this notebook belongs to (no answer cells, and the file "
              "name does not start with a lesson number); use --lesson.", "unknown lesson")
        return
    g.exercises = lesson_exercises(g.lesson)


def _select_cells(g: _Grading) -> None:
    """The cells to run: the answer cells of the lesson's exercises (those of other lessons are reported, not run),
    the learner's own cells that they need (:func:`own_cells`), and the empty cells that check an exercise where its
    Check cell is (:func:`checked_after`). An exercise with no cell defining its name misses its answer cell."""
    from ..exercises import get_exercise
    ignored = sorted({c.exercise for c in g.cells if c.exercise not in g.exercises})
    answers = g.answers = [c for c in g.cells if c.exercise in g.exercises]
    g.events += [f"ignored answer cells of {', '.join(ignored)}"] if ignored else []
    elsewhere = (f" This notebook has answer cells for {', '.join(ignored)}, which are not exercises of lesson "
                 f"{g.lesson}: they are not graded. Is this the right notebook?") if ignored else ""
    own = _own_cells(g.nb, answers, g.exercises, g.events)
    for ex_id in g.exercises:
        if not any(c.exercise == ex_id for c in answers) and not any(get_exercise(ex_id).name in defines(c.source)
                                                                      for c in answers + own):
            g.decided[ex_id] = _failed("Answer cell missing: the notebook has no cell marked as the answer to "
                                       f"{ex_id}. Keep the answer cell and write your code in it." + elsewhere,
                                       misconceptions.MISSING)
    g.cells = run_order(answers + own + checked_after(g.nb, answers, own, g.exercises))


def _static_checks(g: _Grading) -> None:
    """Decide, before anything runs, the exercises whose cells cannot be run (:func:`why_unrunnable`: those cells are
    left out) or read the call stack (:func:`reaches_into_course`; in a cell of the learner's own, every exercise)."""
    unrunnable = {c.index: why_unrunnable(c.source) for c in g.cells}
    for c in g.cells:
        if unrunnable[c.index] and c.exercise not in g.decided:
            g.decided[c.exercise] = _failed(unrunnable[c.index], misconceptions.CELL_ERROR)
            g.events.append(f"{c.exercise}: unreadable answer cell")
    g.cells = [c for c in g.cells if not unrunnable[c.index]]
    for c in g.cells:
        construct = reaches_into_course(c.source)
        if construct and c.exercise == OWN_CELL:
            for other in g.exercises:
                g.decided.setdefault(other, _failed(f"Not graded: a cell your answers use reads the call stack "
                                                    f"(`{construct}`), where the checker keeps the expected "
                                                    "answers. Solve the exercises with your own code.",
                                                    misconceptions.CALL_STACK))
            g.events.append("a cell of the learner's own reads the checker's frames")
        elif construct and c.exercise not in g.decided:
            g.decided[c.exercise] = _failed(f"Not graded: your answer cell uses `{construct}`, which reads the "
                                            "call stack, where the checker keeps the expected answers. Solve the "
                                            "exercise with your own code.", misconceptions.CALL_STACK)
            g.events.append(f"{c.exercise}: reads the checker's frames")


def _run_until_decided(g: _Grading) -> None:
    """Run the cells in fresh workers until every exercise is decided. A run that ends in a cell or a check (a hang,
    a crash, memory) decides that stage's exercise, and the next run leaves the cell out; all get ``limits.timeout``."""
    skip: set[int] = set()  # indexes of cells later runs leave out
    deadline = time.monotonic() + g.limits.timeout  # for the whole submission, every rerun included
    while any(e not in g.decided for e in g.exercises):
        to_check = [e for e in g.exercises if e not in g.decided]
        left = deadline - time.monotonic()
        if left < MIN_RUN_SECONDS:
            for ex_id in to_check:
                g.decided[ex_id] = _failed(f"Not graded: the submission used up its time limit ({g.limits.timeout:g} "
                                           "s for the whole submission) before this exercise could be checked.",
                                           misconceptions.OUT_OF_TIME)
            g.events.append("timed out")
            return
        run = run_worker([c for c in g.cells if c.index not in skip], to_check,
                         dataclasses.replace(g.limits, timeout=left), g.cancelled)
        stage = _take_messages(g, run, to_check, skip)
        if g.final is not None or _whole_run_lost(g, run, stage) or not _blame(g, run, stage, to_check, skip):
            return


def _take_messages(g: _Grading, run: Run, to_check: list[str], skip: set[int]) -> Optional[StageMessage]:
    """Take in what a run reported: results decide their exercises, a cell that cannot finish is left out of later
    runs, a tampered report decides the whole submission. Returns the stage the run was in when it ended, if any."""
    stage: Optional[StageMessage] = None
    for message in run.messages:
        if isinstance(message, StageMessage):
            stage = message
        elif isinstance(message, CellMessage):
            stage = None
            error = message.error
            if error and error.kind in FATAL_CELL_ERRORS:
                skip.add(message.index)  # it cannot finish: later runs leave it out
            if error and message.exercise == OWN_CELL:
                g.events.append(f"cell {message.index + 1} of the learner's own failed ({error.kind.value})")
        elif isinstance(message, ResultMessage) and message.exercise in to_check:
            stage = None
            g.decided[message.exercise] = Decision(message.status, message.feedback,   # points: clamped by _grade_of
                                                   " ".join(misconceptions.codes(message.code)), message.points)
        elif isinstance(message, TamperedMessage):
            changed = list(message.changed)
            what = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
            where = (f" (in {_cell_name(stage)})" if stage and stage.stage == Stage.CELL
                     else f" (while {stage.exercise} was being checked)" if stage else "")
            g.end(f"Not graded: the submission changes {what}{where}. Answer cells must leave course_utils and "
                  "PyTorch as they are.", "tampering", misconceptions.TAMPERING)
            return stage
    return stage


def _whole_run_lost(g: _Grading, run: Run, stage: Optional[StageMessage]) -> bool:
    """Decide the whole submission when nothing the run did can be trusted: it tampered, but its report was silenced,
    or its supervisor was killed (how far it got after that depends on timing)."""
    if run.end == End.TAMPERED:  # found by the worker, but its report was silenced
        where = (f" (while {stage.exercise} was being {'run' if stage.stage == Stage.CELL else 'checked'})"
                 if stage else "")
        g.end(f"Not graded: the submission changes what the grader relies on{where}, and kept the grader from "
              "reading what. Answer cells must leave course_utils, PyTorch and the grader's files as they are.",
              "tampering", misconceptions.TAMPERING)
    elif run.supervisor_lost:
        g.end("Not graded: the process that supervises this submission's run was killed (by the submission "
              "itself, by another one graded at the same time, or by the system). Answer cells must leave the "
              "grader's processes alone.", "supervisor killed")
    return g.final is not None


def _blame(g: _Grading, run: Run, stage: Optional[StageMessage], to_check: list[str], skip: set[int]) -> bool:
    """Decide what a run that ended early leaves undecided: the exercise of the stage it ended in (a cell of the
    learner's own is left out of later runs, and the answers that need it say so), or, when nothing can be blamed on
    one exercise, all that is left (not graded, and that is final). Returns whether to run again."""
    from ..exercises import get_exercise
    what, event = how_it_ended(run, g.limits)
    if run.end == End.DONE:
        why, event = "no result came back from its process", "results lost"
    elif run.end == End.ERROR and stage is None:
        why, event = f"the grader failed ({grader_error(run)})", "grader error"
    elif not run.ready:
        why = (f"the grader could not start a process within {STARTUP_LIMIT:g} s" if run.end == End.TIMEOUT
               else f"its process ended before running any answer ({what})")
        event = "grader error"
    elif stage is None:
        why = f"its process stopped between two steps: it {what}"
    else:
        why = ""
    if why:
        left = [e for e in to_check if e not in g.decided]
        for ex_id in left:
            g.decided[ex_id] = _failed(f"Not graded: {why}.", misconceptions.NOT_GRADED)
        if left:
            g.events.append(event)
        return False
    ex_id = stage.exercise
    if stage.stage == Stage.CELL and ex_id == OWN_CELL:  # the answers that need it will say so
        skip.add(stage.index)
        g.events.append(f"cell {stage.index + 1} of the learner's own: {event}")
        return True
    out_of_time = run.end in (End.TIMEOUT, End.STUCK)
    if stage.stage == Stage.CELL:
        skip.add(stage.index)
        g.decided.setdefault(ex_id, _failed(f"Your answer cell {what}.", misconceptions.TIMEOUT if out_of_time
                                            else misconceptions.CELL_ERROR))
    else:
        g.decided[ex_id] = _failed(f"While `{get_exercise(ex_id).name}` was being checked, your code {what}.",
                                   misconceptions.TIMEOUT if out_of_time else misconceptions.RAISED)
    g.events.append(f"{ex_id}: {event}")
    return True


def _cell_name(stage: StageMessage) -> str:
    """How a stage message's cell is named in a note: an exercise's answer cell, or one of the learner's own."""
    if stage.exercise == OWN_CELL:
        return f"cell {stage.index + 1}, a cell of the learner's own that the answers use"
    return f"the answer cell of {stage.exercise}"


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


def _unseen_names(d: Decision) -> Decision:
    """A feedback that says a name is not defined, with what the grader runs (a name the learner's kernel still has
    from a deleted cell exists in the notebook, but not for the grader)."""
    if d.status != PASSED and _NOT_DEFINED in d.feedback and "Restart the kernel" not in d.feedback:
        return d._replace(feedback=d.feedback + (
            " The grader runs your answer cells, and the cells of yours that define the names they use; no cell of "
            "this notebook defines that name. Restart the kernel and run all cells to see what the grader sees."))
    return d


def grade_all(paths: Sequence[str], limits: Limits = Limits(), *, jobs: int = 1, lesson: Optional[str] = None,
              on_progress: Optional[Callable[[int, int], None]] = None,
              on_grade: Optional[Callable[[SubmissionGrade], None]] = None,
              deadline: Optional[datetime] = None) -> list[SubmissionGrade]:
    """Grade many notebooks, ``jobs`` at a time; the grades, sorted by path.

    Every submission gets a row per exercise of its lesson. One whose lesson cannot be told (see
    :func:`grade_notebook`) is graded as the lesson of every other submission of the batch when they
    all have the same one, with a note saying so; otherwise it gets only a ``TOTAL`` row saying why.
    ``on_progress(done, total)`` is called after each submission, ``on_grade`` with each final grade as soon as it
    is known; a file handed in after ``deadline`` (:func:`handed_in_at`) is late, as one Canvas marks ``LATE`` is."""
    batch = _Batch(paths, limits, lesson, on_grade, deadline)
    if paths:  # started from this thread, so that it lives as long as this thread (see ForkServer)
        with contextlib.suppress(OSError):  # if it cannot start, each submission says so
            fork_server()
    unknown = batch.grade_in_parallel(jobs, on_progress)
    batch.grade_as_the_batchs_lesson(unknown)
    return sorted(batch.grades, key=lambda g: g.submission)


class _Batch:
    """A batch's grades as they come in (see :func:`grade_all`)."""

    def __init__(self, paths: Sequence[str], limits: Limits, lesson: Optional[str],
                 on_grade: Optional[Callable[[SubmissionGrade], None]], deadline: Optional[datetime]) -> None:
        self.paths, self.limits, self.lesson, self.on_grade, self.deadline = paths, limits, lesson, on_grade, deadline
        self.cancelled = threading.Event()  # set when the batch is interrupted: start no more workers
        self.grades: list[SubmissionGrade] = []
        self.same_file: dict[str, list[str]] = {}  # the file a path leads to -> the paths given for it
        for path in paths:
            self.same_file.setdefault(_real(path), []).append(path)

    def grade(self, path: str, lesson: Optional[str]) -> SubmissionGrade:
        """:func:`grade_notebook`; a bug in the grader must not stop the batch, nor lose the rows."""
        try:
            return grade_notebook(path, self.limits, lesson, cancelled=self.cancelled)
        except Exception as e:
            lesson = lesson or _safe_lesson(path)
            return _grade_of(path, lesson_exercises(lesson) if lesson else [], {},
                             f"Not graded: internal grader error ({type(e).__name__}: {e}).", ["grader error"])

    def finished(self, grade: SubmissionGrade) -> None:
        """Keep a final grade (noting the other paths to the same file, when it was handed in and whether late) and
        pass it to ``on_grade``."""
        others = [p for p in self.same_file.get(_real(grade.submission), []) if p != grade.submission]
        if others:  # each path is graded on its own; say that they are one file
            same = "same file as " + ", ".join(others)
            grade = dataclasses.replace(grade, events=sorted(set(grade.events) | {same}))
        at = handed_in_at(grade.submission)
        late = layouts.marked_late(grade.submission) or bool(self.deadline and at and at > self.deadline)
        grade = dataclasses.replace(grade, submitted=at.isoformat(timespec="seconds") if at else "", late=late)
        self.grades.append(grade)
        if self.on_grade:
            self.on_grade(grade)

    def grade_in_parallel(self, jobs: int,
                          on_progress: Optional[Callable[[int, int], None]]) -> list[SubmissionGrade]:
        """Grade every path, ``jobs`` at a time; returns the grades of those whose lesson could not be told."""
        unknown: list[SubmissionGrade] = []
        pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(self.paths))))
        try:
            futures = [pool.submit(self.grade, p, self.lesson) for p in self.paths]
            for done, future in enumerate(as_completed(futures), 1):
                grade = future.result()
                if grade.rows or self.lesson:
                    self.finished(grade)
                else:
                    unknown.append(grade)
                if on_progress:
                    on_progress(done, len(futures))
        except BaseException:  # Ctrl-C: drop the queue and kill the running workers, then stop
            self.cancelled.set()
            pool.shutdown(wait=False, cancel_futures=True)
            stop_server()
            raise
        pool.shutdown()
        return unknown

    def grade_as_the_batchs_lesson(self, unknown: list[SubmissionGrade]) -> None:
        """Grade again, as the batch's one lesson, the submissions whose lesson could not be told."""
        from ..exercises import get_exercise
        lessons = {",".join(sorted({get_exercise(r.exercise).lesson for r in g.rows})) for g in self.grades if g.rows}
        for grade in unknown:
            if len(lessons) == 1:
                assumed = next(iter(lessons))
                regraded = self.grade(grade.submission, assumed)
                why = (f"Graded as lesson {assumed}, the lesson of every other submission in this batch: this "
                       "notebook does not say which lesson it belongs to (no answer cells, and its name does "
                       "not start with a lesson number). Use --lesson to choose.")
                grade = dataclasses.replace(regraded, note=clean(f"{regraded.note} {why}".strip()),
                                            events=sorted(set(regraded.events) | {f"lesson {assumed} assumed"}))
            self.finished(grade)


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
