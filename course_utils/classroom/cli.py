"""``python -m course_utils grade``: options and paths checked before any grading, rows written as
submissions finish, a progress bar and a summary."""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import socket
import sys
import tempfile
import time
from datetime import datetime
from typing import Iterator, Optional, TextIO

from .. import modes
from ..exceptions import UsageError
from ..files import is_within, same_file
from .reading import layouts
from .writing import predictions
from .grader import SubmissionGrade, grade_all
from .writing.reports import CsvFile, gradescope_folders, printable, summary_table, write_results
from .sandbox.runs import Limits
from .reading.submissions import find_submissions, lesson_exercises, lesson_number


class _Progress:
    """A progress bar on stderr: redrawn in a terminal, a line per 10% otherwise."""

    def __init__(self, total: int, stream: TextIO):
        self.total, self.stream, self.last = total, stream, -1
        self.tty = stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        """Show that ``done`` of ``total`` submissions are graded."""
        if self.tty:
            filled = 30 * done // total
            self.stream.write(f"\rgrading [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}"
                              + ("\n" if done == total else ""))
        elif 10 * done // total > self.last:
            self.last = 10 * done // total
            self.stream.write(f"graded {done}/{total} submissions\n")
        self.stream.flush()


#: Upper bounds for the options (a limit beyond these is a typo).
MAX_SECONDS = 86400.0
MAX_JOBS = 1024
MAX_MEMORY_MB = 2**24


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``grade`` subcommand's arguments to ``parser``."""
    d = Limits()
    parser.add_argument("submissions", nargs="+", metavar="NOTEBOOK_OR_FOLDER",
                        help="submitted notebooks, or folders: every file in them is a student's submission")
    parser.add_argument("--out", default="grades.csv",
                        help="CSV file to write, outside the folders graded; replaced when the batch ends "
                             "(default: grades.csv)")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="submissions graded in parallel (default: 1)")
    parser.add_argument("--timeout", type=float, default=d.timeout,
                        help=f"seconds for a whole submission, checks included (default: {d.timeout:g})")
    parser.add_argument("--cell-timeout", type=float, default=d.cell_timeout,
                        help=f"seconds for each answer cell's top-level code (default: {d.cell_timeout:g})")
    parser.add_argument("--check-timeout", type=float, default=d.check_timeout,
                        help=f"seconds for each exercise check (default: {d.check_timeout:g})")
    parser.add_argument("--memory-mb", type=int, default=d.memory_mb,
                        help="memory per submission in MB, all its processes together, on top of what PyTorch "
                             f"itself holds (default: {d.memory_mb})")
    parser.add_argument("--lesson", type=lesson_number,
                        help="grade every notebook as this lesson (e.g. 01 or 1), not the one detected")
    parser.add_argument("--gradescope", metavar="DIR",
                        help="also write DIR/<submission path, percent-encoded>/results.json")
    parser.add_argument("--predictions", metavar="CSV",
                        help="also write each submission's quiz predictions (from its saved cu.progress() output) "
                             "to CSV, outside the folders graded; `report` counts them per quiz")
    parser.add_argument("--assessed", action="store_true",
                        help=f"grade in assessed mode, as students with {modes.MODE_ENV}={modes.ASSESSED} check: "
                             "feedback says what is wrong, not the code to write")
    parser.add_argument("--deadline", type=_deadline, metavar="WHEN",
                        help="a file handed in after WHEN (2026-12-01T23:59, your time zone unless it says one) is "
                             "late, as Canvas's LATE marker says; the time is nbgrader's timestamp.txt, else the "
                             "file's, as the download kept it")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: for more than 5 submissions, or in a terminal)")


def _deadline(text: str) -> datetime:
    """``--deadline``: an ISO 8601 date and time, in the local time zone unless it gives one."""
    try:
        return datetime.fromisoformat(text.strip()).astimezone()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date and time such as 2026-12-01T23:59") from None


@contextlib.contextmanager
def _mode(assessed: bool) -> Iterator[None]:
    """Grade in assessed mode inside the block when ``assessed`` (else in the mode the environment says)."""
    if not assessed:
        yield
        return
    saved = os.environ.get(modes.MODE_ENV)
    os.environ[modes.MODE_ENV] = modes.ASSESSED
    try:
        yield
    finally:
        if saved is None:
            del os.environ[modes.MODE_ENV]
        else:
            os.environ[modes.MODE_ENV] = saved


def _check_options(args: argparse.Namespace) -> None:
    """Raise :class:`UsageError` when grading cannot run here, or a numeric option or ``--lesson`` is wrong."""
    from ..exercises import exercise_ids, get_exercise
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        raise UsageError("Grading needs Linux or macOS (it runs each submission in a forked, resource-limited "
                          "process).")
    problems = []
    if not 1 <= args.jobs <= MAX_JOBS:
        problems.append(f"--jobs must be between 1 and {MAX_JOBS} (got {args.jobs}).")
    for flag, value in (("--timeout", args.timeout), ("--cell-timeout", args.cell_timeout),
                        ("--check-timeout", args.check_timeout)):
        if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
            problems.append(f"{flag} must be a number of seconds above 0 and at most {MAX_SECONDS:g} "
                            f"(got {value:g}).")
    if not 512 <= args.memory_mb <= MAX_MEMORY_MB:
        problems.append(f"--memory-mb must be between 512 and {MAX_MEMORY_MB} (got {args.memory_mb}).")
    if args.lesson and not lesson_exercises(args.lesson):
        lessons = sorted({get_exercise(e).lesson for e in exercise_ids()})
        problems.append(f"--lesson {args.lesson}: no lesson with exercises has that number "
                        f"(known: {', '.join(lessons)}).")
    if problems:
        raise UsageError("\n".join(printable(p) for p in problems))


def _find(args: argparse.Namespace, stderr: TextIO) -> list[str]:
    """The submissions to grade (a warning for each folder that could not be read); raises
    :class:`UsageError` for a path that does not exist, or when there is nothing to grade."""
    unreadable: list[str] = []
    try:
        paths = find_submissions(args.submissions, unreadable)
    except FileNotFoundError as e:
        raise UsageError(printable(str(e))) from None
    for problem in unreadable:
        print("Warning: " + printable(problem), file=stderr)
    if not paths:
        raise UsageError("No files found in: " + printable(", ".join(args.submissions)))
    return paths



def _output_clash(args: argparse.Namespace, submissions: list[str]) -> Optional[str]:
    """Why ``--out`` or ``--gradescope`` would overwrite an input, or ``None``: an output may not be a
    submission (links and hard links included), nor lie inside a folder being graded."""
    folders = [a for a in args.submissions if os.path.isdir(a)]
    outputs = [("--out", args.out)] + [(flag, value) for flag, value in (("--gradescope", args.gradescope),
                                                                         ("--predictions", args.predictions)) if value]
    for flag, out in outputs:
        for sub in submissions:
            if same_file(out, sub):
                return (f"{flag} {out} is a notebook being graded: it would be overwritten. Nothing was written; "
                        f"choose another name (e.g. {flag} grades.csv).")
        for folder in folders:
            if is_within(out, folder):
                return (f"{flag} {out} is inside the folder being graded ({folder}): a file of a student's "
                        f"could be overwritten. Nothing was written; write it outside {folder}.")
    return None


def _open_outputs(args: argparse.Namespace, paths: list[str]) -> tuple[CsvFile, dict[str, str]]:
    """The ``--out`` file, and each submission's ``--gradescope`` folder (:func:`gradescope_folders`; none without
    the option). Raises :class:`UsageError` for an output that would overwrite an input or cannot be written."""
    clash = _output_clash(args, paths)
    if clash:
        raise UsageError(printable(clash))
    folders: dict[str, str] = {}
    if args.gradescope:
        try:   # the folder, made if needed, takes files
            os.makedirs(args.gradescope, exist_ok=True)
            with tempfile.TemporaryFile(dir=args.gradescope):
                pass
        except OSError as e:
            raise UsageError(f"Cannot write Gradescope results under --gradescope {printable(args.gradescope)}: "
                             f"{e.strerror or type(e).__name__}.") from None
        folders = gradescope_folders(paths)
    if args.predictions:
        parent = os.path.dirname(os.path.abspath(args.predictions))
        if os.path.isdir(args.predictions) or not os.path.isdir(parent):
            raise UsageError(f"Cannot write --predictions {printable(args.predictions)}: "
                              f"{'it is a folder' if os.path.isdir(args.predictions) else 'no such folder'}.")
    try:
        return CsvFile(args.out), folders
    except OSError as e:
        raise UsageError(f"Cannot write --out {printable(args.out)}: {e.strerror or type(e).__name__}.") from None


def run(args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run ``python -m course_utils grade`` (``args``: parsed as :func:`add_arguments` says): the summary goes to
    ``stdout``, errors and the progress bar to ``stderr``.

    Options, submissions and output paths are checked before anything is graded; an output that
    would overwrite an input is refused. Rows are kept in a partial file beside ``--out`` as
    submissions finish, and the sorted CSV replaces ``--out`` atomically when the batch ends or is
    interrupted, so a batch that is killed loses neither what it graded nor the old CSV. Returns 0 when grading
    ran (whatever the grades), 2 for usage errors, 130 when interrupted (the CSV then holds what was graded)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        _check_options(args)
        paths = _find(args, stderr)
        csv_file, folders = _open_outputs(args, paths)
    except UsageError as e:
        print(e, file=stderr)
        return 2
    started = time.monotonic()
    unwritten: list[str] = []  # Gradescope results that could not be written
    try:
        def record(grade: SubmissionGrade) -> None:
            csv_file.add(grade)
            if args.gradescope:
                try:
                    write_results(grade, args.gradescope, folders[grade.submission])
                except OSError as e:  # e.g. a full disk: the CSV still has the grade
                    unwritten.append(f"{folders[grade.submission]}: {e.strerror or type(e).__name__}")

        show = args.progress if args.progress is not None else (len(paths) > 5 or stderr.isatty())
        try:
            with _mode(args.assessed):
                grades = grade_all(paths, Limits(args.timeout, args.cell_timeout, args.check_timeout, args.memory_mb),
                                   jobs=args.jobs, lesson=args.lesson, on_grade=record, deadline=args.deadline,
                                   on_progress=_Progress(len(paths), stderr) if show else None)
        except KeyboardInterrupt:
            csv_file.finish()
            print(f"\nInterrupted: {len(csv_file.grades)} of {len(paths)} submissions were graded; their rows "
                  f"are in {printable(args.out)}.", file=stderr)
            return 130
        csv_file.finish()
    finally:
        csv_file.close()
    _summary(args, grades, time.monotonic() - started, stdout)
    for problem in unwritten:
        print("Could not write Gradescope results " + printable(problem), file=stderr)
    if args.predictions:
        _write_predictions(args.predictions, grades, stdout, stderr)
    return 0


def _write_predictions(path: str, grades: list[SubmissionGrade], stdout: TextIO, stderr: TextIO) -> None:
    """Write the quiz predictions that the graded submissions recorded on their lessons' quizzes to ``path``, and
    say how many (or why they could not be written)."""
    lessons = {g.submission: lesson for g in grades if (lesson := predictions.lesson_of(r.exercise for r in g.rows))}
    found = predictions.read_submissions(lessons)
    try:
        predictions.write_csv(found, path)
    except OSError as e:
        print(f"Could not write --predictions {printable(path)}: {e.strerror or type(e).__name__}.", file=stderr)
        return
    recording = len({p.submission for p in found})
    print(f"Quiz predictions: {len(found)} from {recording} of {len(grades)} submission(s) (a notebook records them "
          f"when its cu.progress() cell ran before it was saved), written to {printable(path)}.", file=stdout)


def _summary(args: argparse.Namespace, grades: list[SubmissionGrade], elapsed: float, stdout: TextIO) -> None:
    """Print the summary table and the batch's totals."""
    points, available = sum(g.points for g in grades), sum(g.max_points for g in grades)
    full = sum(1 for g in grades if g.max_points and g.points == g.max_points)
    print(summary_table(grades), file=stdout)
    whose = layouts.students({g.submission: {r.exercise[:2] for r in g.rows} for g in grades})
    late = sum(g.late for g in grades)
    print(f"\nRead as {printable(layouts.read_layout(whose))}." + (f" {late} handed in late." if late else ""),
          file=stdout)
    print(f"{len(grades)} submission(s) graded in {elapsed:.1f} s with --jobs {args.jobs}: "
          f"{points}/{available} points, {full} with full marks. Grades written to {printable(args.out)}"
          + (f"; Gradescope results under {printable(args.gradescope)}/" if args.gradescope else "") + ".",
          file=stdout)
