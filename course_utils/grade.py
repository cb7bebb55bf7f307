"""Batch grading of submitted notebooks: ``python -m course_utils grade NOTEBOOK|FOLDER... --out grades.csv``.

Each submission is graded on what its answer cells *do*, not on what the notebook *says*:

1. The notebook is read as JSON; its answer cells are the code cells marked with
   ``{"course": {"exercise": "<id>"}}``. Nothing else in it is run: not the check cells, not the
   saved outputs. The submission is graded on every registered exercise of its lesson (the ``NN``
   of its answer-cell ids, else of the file name ``NN_*.ipynb``, or ``--lesson``).
2. The answer cells run, in notebook order, in a fresh process (:mod:`course_utils._grade_worker`,
   forked from a server that has imported PyTorch once) with a memory limit (``RLIMIT_DATA``), a
   time limit per cell and the package's own time limit per check. They run in the namespace a
   notebook's setup cell gives (``torch``, ``nn``, ``F``, ``cu``, ``math``, ``np``, ``device``).
3. Before any learner code runs, the worker snapshots what the checks rely on: every attribute of
   every ``course_utils`` module and class (functions down to their ``__code__``), the exercise
   registry, and the functions and classes of ``torch``, ``torch.nn``, ``torch.Tensor``,
   ``nn.Module``, ``builtins`` and a few standard modules. After every cell and every check it
   compares; any change and the whole submission scores 0, with a reason naming what changed.
4. Each exercise is checked with :func:`course_utils.check`. Results travel to this process on a
   private pipe, each message signed with an HMAC key made for that run; what the learner prints
   goes to ``/dev/null``. Results arrive as soon as they are known, so they survive a later crash.
5. A run that overruns ``--timeout`` is killed with its process group. If a cell or a check ends
   the process (timeout, crash, ``os._exit``, a signal), that exercise scores 0 with the reason, and
   the rest are graded in a new process that skips the culprit, so one bad answer costs only its
   own points. Answer cells that read the reference solutions or the checker's stack
   (``get_exercise``, ``course_utils.lessons``, ``sys._getframe``, ``f_locals``...) score 0 for their
   exercise, as does an answer that *is* the reference solution.

Threat model. This defeats what learners actually do, by accident or on purpose: redefining or
monkeypatching ``course_utils.check``, its registry, its helpers or PyTorch functions (in an answer
cell or from inside the answer during its check); edited check cells; printed or saved claims of
"passed"; importing the reference solution; infinite loops; crashes; memory bombs; files that are
not notebooks. The batch always carries on, and the same input gives the same CSV.

It is **not a security sandbox**. Learner code runs with your user's rights: it can read and
write your files, use the network, find the HMAC key in its own memory, patch and restore things
between integrity checks (e.g. from a thread), escape its process group, or use GPU memory
(which ``RLIMIT_DATA`` does not limit). Run batches you do not trust in a container or VM with no
secrets and no network (e.g. ``docker run --network none --memory 8g ...``). ``--jobs N`` may use
up to ``N * --memory-mb`` of RAM.
"""
from __future__ import annotations

import argparse
import ast
import atexit
import csv
import hashlib
import hmac
import json
import os
import re
import secrets
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, TextIO

from .exercises import exercise_ids, get_exercise
from .notebook import cell_source, exercise_cells
from .results import FAILED, PASSED

CSV_HEADER = ("submission", "exercise", "points", "max_points", "passed", "feedback")
TOTAL = "TOTAL"
#: Seconds a worker may take to start (fork, limits, snapshot) before learner code runs.
STARTUP_LIMIT = 120.0
#: Notebooks larger than this are not read (a notebook with huge outputs is not an answer).
MAX_NOTEBOOK_BYTES = 100 * 2**20
_MAX_MESSAGE = 2**20
_FEEDBACK_LIMIT = 600


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission.

    Attributes:
        timeout: wall-clock seconds for one worker run, from the moment it is ready to run learner
            code (the process group is then killed).
        cell_timeout: seconds each answer cell may run (top-level code, not the checks).
        check_timeout: seconds each check may run (sets ``course_utils.exercises.TIME_LIMIT``).
        memory_mb: memory the learner's code may allocate (``RLIMIT_DATA``), on top of what PyTorch
            and the course hold before it runs (that part differs between CPU and CUDA builds).
    """

    timeout: float = 60.0
    cell_timeout: float = 10.0
    check_timeout: float = 20.0
    memory_mb: int = 4096


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


class InvalidSubmission(Exception):
    """The file cannot be graded as a notebook; the message says why."""


# --- reading submissions ---------------------------------------------------------------------

def find_submissions(paths: Sequence[str]) -> list[str]:
    """Expand files and folders into the notebooks to grade.

    Args:
        paths: notebook files (any name, any content: a broken file is graded as broken) and
            folders (searched recursively for ``*.ipynb``, skipping hidden and checkpoint folders).

    Returns:
        Submission paths as given or found, sorted, each file once.

    Raises:
        FileNotFoundError: a path that does not exist.
    """
    found: dict[str, str] = {}
    for arg in paths:
        path = Path(arg)
        if path.is_dir():
            files = [p for p in path.rglob("*.ipynb") if p.is_file() and not any(
                part.startswith(".") for part in p.relative_to(path).parts)]
        elif path.exists():
            files = [path]
        else:
            raise FileNotFoundError(f"No such file or folder: {arg}")
        for file in files:
            found.setdefault(os.path.realpath(file), str(file))
    return sorted(found.values())


def read_notebook(path: str) -> dict:
    """Read a notebook file as JSON.

    Raises:
        InvalidSubmission: unreadable, too large, not JSON, or not an nbformat-4 notebook.
    """
    try:
        if os.path.getsize(path) > MAX_NOTEBOOK_BYTES:
            raise InvalidSubmission(f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
        with open(path, "rb") as f:
            nb = json.loads(f.read().decode("utf-8"))
    except InvalidSubmission:
        raise
    except UnicodeDecodeError:
        raise InvalidSubmission("the file is not a notebook: it is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise InvalidSubmission(f"the file is not a notebook: it is not valid JSON ({e.msg} at line "
                                f"{e.lineno}, column {e.colno})") from None
    except OSError as e:
        raise InvalidSubmission(f"the file could not be read ({e.strerror or type(e).__name__})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise InvalidSubmission("the file is JSON but not a Jupyter notebook (it has no list of cells)")
    return nb


def answer_cells(nb: dict) -> list[tuple[int, str, str]]:
    """The answer cells of a notebook (:func:`course_utils.notebook.exercise_cells`), in order.

    Returns:
        ``(cell index, exercise id, source)`` per exercise; of a duplicated answer cell, the last copy.

    Raises:
        InvalidSubmission: the cells are not what nbformat 4 describes.
    """
    position = {id(cell): i for i, cell in enumerate(nb["cells"])}
    try:
        return sorted((position[id(cell)], ex_id, cell_source(cell))
                      for ex_id, cell in exercise_cells(nb).items())
    except (AttributeError, TypeError):
        raise InvalidSubmission("the file is not a valid notebook: its cells are malformed") from None


def lesson_of(path: str, cells: Sequence[tuple[int, str, str]] = ()) -> Optional[str]:
    """The lesson a submission belongs to: that of its answer cells' registered exercise ids, else
    the ``NN`` of a file name ``NN_*.ipynb``; ``None`` if neither names a lesson with exercises."""
    lessons = sorted({get_exercise(ex_id).lesson for _, ex_id, _ in cells if ex_id in exercise_ids()})
    if lessons:
        return lessons[0] if len(lessons) == 1 else ",".join(lessons)
    match = re.match(r"(\d\d)_", Path(path).name)
    if match and any(e.startswith(match.group(1) + ".") for e in exercise_ids()):
        return match.group(1)
    return None


def _lesson_exercises(lesson: str) -> list[str]:
    numbers = lesson.split(",")
    return [e for e in exercise_ids() if get_exercise(e).lesson in numbers]


def strip_magics(source: str) -> str:
    """Turn IPython magics and shell escapes (``%timeit f(x)``, ``!pip ...``) into ``pass``."""
    return "\n".join(line[: len(line) - len(line.lstrip())] + "pass  # " + line.lstrip()
                     if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


_BANNED_NAMES = {"reference", "solution_source", "_REGISTRY", "get_exercise", "_getframe", "currentframe",
                 "f_back", "f_locals", "f_globals", "get_referrers", "get_objects", "getouterframes"}
_BANNED_MODULES = ("course_utils.lessons", "course_utils.exercises", "course_utils.grading",
                   "course_utils.grade", "course_utils._grade_worker")


def reaches_into_course(source: str) -> Optional[str]:
    """The first construct in ``source`` that reads the reference solutions or the checker's stack
    (``get_exercise``, ``course_utils.lessons``, ``sys._getframe``, ``f_locals``...), or ``None``.

    Static and deliberately narrow: none of these has a place in an answer to this course.
    """
    try:
        tree = ast.parse(strip_magics(source))
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            of_inspect = isinstance(node.value, ast.Name) and node.value.id == "inspect"
            if node.attr in _BANNED_NAMES or (of_inspect and node.attr in ("stack", "trace")):
                return ast.unparse(node)
        if isinstance(node, ast.Name) and node.id in _BANNED_NAMES:
            return node.id
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""] + [a.name for a in node.names if a.name in _BANNED_NAMES]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            modules = [node.value]
        else:
            continue
        for module in modules:
            if module.startswith(_BANNED_MODULES) or module in _BANNED_NAMES:
                return module
    return None


# --- the worker channel ----------------------------------------------------------------------

def sign(key: bytes, message: dict) -> bytes:
    """Encode a worker message as ``<hex HMAC-SHA256> <JSON>``."""
    data = json.dumps(message, sort_keys=True).encode()
    return hmac.new(key, data, hashlib.sha256).hexdigest().encode() + b" " + data


def _unsign(key: bytes, raw: bytes) -> Optional[dict]:
    """The message in ``raw`` if its signature is right, else ``None`` (forgeries are ignored)."""
    mac, _, data = raw.partition(b" ")
    if not hmac.compare_digest(mac, hmac.new(key, data, hashlib.sha256).hexdigest().encode()):
        return None
    try:
        message = json.loads(data)
    except ValueError:
        return None
    return message if isinstance(message, dict) and "t" in message else None


class _ForkServer:
    """A ``python`` process that has imported PyTorch once and forks a fresh worker per run
    (:func:`course_utils._grade_worker.serve`). It exits, killing its workers, when this closes."""

    def __init__(self) -> None:
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(os.environ)  # make sure the server imports this very course_utils
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["PYTHONHASHSEED"] = "0"  # the same set and dict orders in every batch: the same feedback
        code = f"from course_utils._grade_worker import serve; serve({theirs.fileno()})"
        with theirs:
            self.process = subprocess.Popen([sys.executable, "-c", code], pass_fds=(theirs.fileno(),),
                                            stdin=subprocess.DEVNULL, env=env)
        self.lock = threading.Lock()

    def request(self, fds: list[int]) -> None:
        """Ask for a worker that reads its job from, and reports on, these pipe ends."""
        with self.lock:
            socket.send_fds(self.control, [b"j"], fds)

    def close(self) -> None:
        """Stop the server (it kills any worker still running)."""
        self.control.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


_SERVER: Optional[_ForkServer] = None
_SERVER_LOCK = threading.Lock()
_CANCELLED = threading.Event()  # set when a batch is interrupted: start no more workers


def _server() -> _ForkServer:
    """The fork server, started on first use (and again if it died)."""
    global _SERVER
    with _SERVER_LOCK:
        if _CANCELLED.is_set():
            raise RuntimeError("grading was interrupted")
        if _SERVER is None or _SERVER.process.poll() is not None:
            _SERVER = _ForkServer()
            atexit.register(_SERVER.close)
        return _SERVER


def _stop_server() -> None:
    """Stop the fork server now, killing the workers still running."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is not None:
            _SERVER.close()
            _SERVER = None


@dataclass
class _Run:
    messages: list[dict]
    end: str  # "done", "tampered", "error", "timeout" (killed) or "exit" (ended by itself)
    ready: bool
    exitcode: Optional[int]  # negative: killed by that signal; None: unknown


def _write_all(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError:  # the worker died before reading its job; the run reports that
        pass


def _run_worker(cells: list[tuple[int, str, str]], check: list[str], limits: Limits) -> _Run:
    """Run one worker to its end (or kill it with its process group), collecting its signed messages."""
    key = secrets.token_bytes(32)
    job_r, job_w = os.pipe()
    channel_r, channel_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        _server().request([job_r, channel_w, status_w])
    finally:
        for fd in (job_r, channel_w, status_w):
            os.close(fd)
    job = {"key": key.hex(), "cells": cells, "check": check, "cell_timeout": limits.cell_timeout,
           "check_timeout": limits.check_timeout, "memory_mb": limits.memory_mb}
    threading.Thread(target=_write_all, args=(job_w, json.dumps(job).encode()), daemon=True).start()
    run = _Run([], "", False, None)
    pid: Optional[int] = None
    pending = {channel_r: b"", status_r: b""}  # open pipe ends -> incomplete last line

    def read(timeout: float) -> None:
        """Wait up to ``timeout`` for lines on the open pipes and take them in."""
        nonlocal pid
        poller = select.poll()  # not select(): no limit on descriptor numbers
        for fd in pending:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(max(timeout, 0) * 1000):
            chunk = os.read(fd, 65536)
            if not chunk:  # closed: the worker has ended (or the server has)
                del pending[fd]
                continue
            *lines, rest = (pending[fd] + chunk).split(b"\n")
            pending[fd] = rest[-_MAX_MESSAGE:]
            for line in lines:
                if fd == status_r:  # "pid N", then "exit N" or "signal N" once the server reaped it
                    word, _, number = line.decode(errors="replace").partition(" ")
                    if word == "pid" and number.isdigit():
                        pid = int(number)
                    elif word in ("exit", "signal") and number.isdigit():
                        run.exitcode = int(number) if word == "exit" else -int(number)
                    continue
                message = _unsign(key, line)
                if message is None:  # not from the worker, or mangled: ignored
                    continue
                run.messages.append(message)
                if message["t"] == "ready":
                    run.ready, deadlines[0] = True, time.monotonic() + limits.timeout
                elif message["t"] in ("done", "tampered", "error"):
                    run.end = message["t"]

    deadlines = [time.monotonic() + STARTUP_LIMIT]
    try:
        while not run.end and channel_r in pending and run.exitcode is None:
            if time.monotonic() >= deadlines[0]:
                run.end = "timeout"
                break
            read(deadlines[0] - time.monotonic())
        grace = time.monotonic() + 2.0  # let the last lines and the exit status arrive
        while channel_r in pending and run.exitcode is not None and not run.end and time.monotonic() < grace:
            read(grace - time.monotonic())
        while status_r in pending and run.exitcode is None and run.end != "timeout" \
                and time.monotonic() < grace:
            read(grace - time.monotonic())
        run.end = run.end or "exit"
    finally:
        if run.exitcode is None and pid is not None:  # still running: kill it and whatever it started
            for kill in (os.killpg, os.kill):  # the worker leads its own process group
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for fd in (channel_r, status_r):
            os.close(fd)
    return run


def _how_it_ended(run: _Run, limits: Limits) -> tuple[str, str]:
    """(What the process did, as a phrase; a short event name for the summary)."""
    if run.end == "timeout":
        return (f"ran past the time limit ({limits.timeout:g} s for the whole submission) and was stopped",
                "timed out")
    code = run.exitcode
    if code is None:
        return "ended unexpectedly", "stopped"
    if code < 0:
        if -code == signal.SIGKILL:
            return ("was killed (SIGKILL): it ran out of memory or killed its own process", "killed")
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"crashed the Python process ({name})", "crashed"
    return f"ended the Python process (exit code {code})", "exited"


# --- grading ---------------------------------------------------------------------------------

def _clean(text: str) -> str:
    """One line, no memory addresses, bounded length: the same answer gives the same feedback."""
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", str(text))
    text = re.sub(r"0x[0-9a-fA-F]{6,}", "0x…", text)
    text = " ".join(text.split())
    return text if len(text) <= _FEEDBACK_LIMIT else text[: _FEEDBACK_LIMIT - 1] + "…"


def _grade(submission: str, exercises: list[str], decided: dict[str, tuple[str, str]],
           note: str = "", events: Optional[list[str]] = None) -> SubmissionGrade:
    rows = []
    for ex_id in exercises:
        ex = get_exercise(ex_id)
        status, feedback = decided.get(ex_id, (FAILED, note or "Not graded."))
        passed = status == PASSED and not note
        rows.append(Row(submission, ex_id, ex.points if passed else 0, ex.points, passed, _clean(feedback)))
    return SubmissionGrade(submission, rows, _clean(note) if note else "", sorted(set(events or [])))


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
        return _grade(path, _lesson_exercises(lesson) if lesson else [], {}, f"Not graded: {e}.",
                      ["invalid notebook"])
    lesson = lesson or lesson_of(path, cells)
    if lesson is None:
        return _grade(path, [], {}, "Not graded: could not tell which lesson this notebook belongs to (no "
                      "answer cells, and the file name does not start with a lesson number); use --lesson.",
                      ["unknown lesson"])
    exercises = _lesson_exercises(lesson)
    cells = [c for c in cells if c[1] in exercises]
    decided: dict[str, tuple[str, str]] = {}
    events: list[str] = []
    for ex_id in exercises:
        if not any(c[1] == ex_id for c in cells):
            decided[ex_id] = (FAILED, "Answer cell missing: the notebook has no cell marked as the answer to "
                                      f"{ex_id}. Keep the answer cell and write your code in it.")
    for _, ex_id, source in cells:
        construct = reaches_into_course(source)
        if construct and ex_id not in decided:
            decided[ex_id] = (FAILED, f"Not graded: your answer cell uses `{construct}`, which reaches into "
                                      "the course's reference solutions or the checker itself. Solve the "
                                      "exercise with your own code.")
            events.append(f"{ex_id}: reaches into the checker")
    skip: set[int] = set()
    while any(e not in decided for e in exercises):
        to_check = [e for e in exercises if e not in decided]
        run = _run_worker([c for c in cells if c[0] not in skip], to_check, limits)
        stage: Optional[dict] = None
        for message in run.messages:
            kind = message["t"]
            if kind == "stage":
                stage = message
            elif kind == "cell":
                stage = None
                if (message.get("error") or {}).get("kind") in ("timeout", "memory"):
                    skip.add(message["index"])  # it cannot finish: later runs leave it out
            elif kind == "result" and message.get("exercise") in to_check:
                stage = None
                decided[message["exercise"]] = (str(message.get("status")), str(message.get("feedback")))
            elif kind == "tampered":
                changed = [str(c) for c in message.get("changed", [])]
                what = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
                where = (f" (in the answer cell of {stage['exercise']})" if stage and stage["stage"] == "cell"
                         else f" (while {stage['exercise']} was being checked)" if stage else "")
                return _grade(path, exercises, {}, f"Not graded: the submission changes {what}{where}. Answer "
                              "cells must leave course_utils and PyTorch as they are.", ["tampering"])
        what, event = _how_it_ended(run, limits)
        # When nothing can be blamed on one exercise, what is left is not graded, and that is final.
        if run.end == "done":
            why, event = "no result came back from its process", "results lost"
        elif run.end == "error":
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
        if stage["stage"] == "cell":
            skip.add(stage["index"])
            decided.setdefault(ex_id, (FAILED, f"Your answer cell {what}."))
        else:
            name = get_exercise(ex_id).name
            decided[ex_id] = (FAILED, f"While `{name}` was being checked, your code {what}.")
        events.append(f"{ex_id}: {event}")
    return _grade(path, exercises, decided, events=events)


def grade_all(paths: Sequence[str], limits: Limits = Limits(), *, jobs: int = 1, lesson: Optional[str] = None,
              on_progress: Optional[Callable[[int, int], None]] = None) -> list[SubmissionGrade]:
    """Grade many notebooks, ``jobs`` at a time.

    Args:
        paths: notebook files (see :func:`find_submissions`).
        limits: time and memory limits per submission.
        jobs: submissions graded in parallel.
        lesson: force the lesson (see :func:`grade_notebook`).
        on_progress: called with (done, total) after each submission.

    Returns:
        The grades, sorted by submission path (whatever order they finished in).
    """
    def one(path: str) -> SubmissionGrade:
        try:
            return grade_notebook(path, limits, lesson)
        except Exception as e:  # a bug in the grader must not stop the batch
            return _grade(path, [], {}, f"Not graded: internal grader error ({type(e).__name__}: {e}).",
                          ["grader error"])

    _CANCELLED.clear()
    grades = []
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        futures = [pool.submit(one, p) for p in paths]
        for done, future in enumerate(as_completed(futures), 1):
            grades.append(future.result())
            if on_progress:
                on_progress(done, len(futures))
    except BaseException:  # Ctrl-C: drop the queue and kill the running workers, then stop
        _CANCELLED.set()
        pool.shutdown(wait=False, cancel_futures=True)
        _stop_server()
        raise
    pool.shutdown()
    return sorted(grades, key=lambda g: g.submission)


# --- output ----------------------------------------------------------------------------------

def csv_rows(grades: Sequence[SubmissionGrade]) -> list[Row]:
    """All rows, sorted by submission, then exercise id, each submission's ``TOTAL`` last."""
    rows = [r for g in grades for r in g.rows + [g.total()]]
    return sorted(rows, key=lambda r: (r.submission, r.exercise == TOTAL, r.exercise))


def write_csv(grades: Sequence[SubmissionGrade], out: TextIO) -> None:
    """Write the grades as CSV (header :data:`CSV_HEADER`, ``\\n`` line ends) to ``out``."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    writer.writerows(r.values() for r in csv_rows(grades))


def gradescope_results(grade: SubmissionGrade) -> dict:
    """A submission's grade in Gradescope's ``results.json`` format."""
    tests = []
    for row in grade.rows:
        ex = get_exercise(row.exercise)
        tests.append({"name": f"{row.exercise}: {ex.title}", "number": row.exercise, "score": row.points,
                      "max_score": row.max_points, "status": "passed" if row.passed else "failed",
                      "output": row.feedback})
    return {"score": grade.points, "output": grade.total().feedback, "tests": tests}


def write_gradescope(grades: Sequence[SubmissionGrade], directory: str) -> list[Path]:
    """Write ``DIRECTORY/<submission>/results.json`` for each submission.

    The folder is named after the notebook's stem, or after its whole path when two submissions
    share a stem.

    Returns:
        The files written.
    """
    stems = [Path(g.submission).stem for g in grades]
    written = []
    for grade, stem in zip(grades, stems):
        if stems.count(stem) > 1:
            stem = re.sub(r"[^\w.-]+", "__", str(Path(grade.submission).with_suffix(""))).strip("_")
        target = Path(directory) / stem / "results.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(gradescope_results(grade), indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")
        written.append(target)
    return written


def summary_table(grades: Sequence[SubmissionGrade]) -> str:
    """One line per submission: points, exercises passed, and notes."""
    table = [("Submission", "Points", "Passed", "Notes")]
    for g in grades:
        notes = g.note if g.note else "; ".join(g.events)
        table.append((g.submission, f"{g.points}/{g.max_points}", f"{g.passed}/{len(g.rows)}",
                      notes if len(notes) <= 70 else notes[:69] + "…"))
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    lines = ["  ".join([c.ljust(w) for c, w in zip(row[:3], widths)] + [row[3]]).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths + [5]))
    return "\n".join(lines)


class _Progress:
    """A progress bar on stderr: redrawn in a terminal, a line per 10% otherwise."""

    def __init__(self, total: int, stream: TextIO):
        self.total, self.stream, self.last = total, stream, -1
        self.tty = stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            filled = 30 * done // total
            self.stream.write(f"\rgrading [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}"
                              + ("\n" if done == total else ""))
        elif 10 * done // total > self.last:
            self.last = 10 * done // total
            self.stream.write(f"graded {done}/{total} submissions\n")
        self.stream.flush()


# --- command line ----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``grade`` subcommand's arguments to ``parser``."""
    d = Limits()
    parser.add_argument("submissions", nargs="+", metavar="NOTEBOOK_OR_FOLDER",
                        help="submitted notebooks, or folders searched for *.ipynb")
    parser.add_argument("--out", default="grades.csv", help="CSV file to write (default: grades.csv)")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="submissions graded in parallel (default: 1)")
    parser.add_argument("--timeout", type=float, default=d.timeout,
                        help=f"seconds for a whole submission, checks included (default: {d.timeout:g})")
    parser.add_argument("--cell-timeout", type=float, default=d.cell_timeout,
                        help=f"seconds for each answer cell's top-level code (default: {d.cell_timeout:g})")
    parser.add_argument("--check-timeout", type=float, default=d.check_timeout,
                        help=f"seconds for each exercise check (default: {d.check_timeout:g})")
    parser.add_argument("--memory-mb", type=int, default=d.memory_mb,
                        help=f"memory per submission in MB, on top of what PyTorch itself holds (default: {d.memory_mb})")
    parser.add_argument("--lesson", help="grade every notebook as this lesson (e.g. 01), not the one detected")
    parser.add_argument("--gradescope", metavar="DIR", help="also write DIR/<submission>/results.json")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: for more than 5 submissions, or in a terminal)")


def run(args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run ``python -m course_utils grade``.

    Args:
        args: parsed by a parser set up with :func:`add_arguments`.
        stdout: where the summary table goes (default ``sys.stdout``).
        stderr: where errors and the progress bar go (default ``sys.stderr``).

    Returns:
        0 when grading ran (whatever the grades), 2 for usage errors (nothing to grade, bad options),
        130 when interrupted (Ctrl-C).
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        print("Grading needs Linux or macOS (it runs each submission in a forked, resource-limited process).",
              file=stderr)
        return 2
    if args.jobs < 1 or args.memory_mb < 512 or min(args.timeout, args.cell_timeout, args.check_timeout) <= 0:
        print("--jobs must be at least 1, --memory-mb at least 512, and the timeouts positive.", file=stderr)
        return 2
    if args.lesson and not _lesson_exercises(args.lesson):
        lessons = sorted({get_exercise(e).lesson for e in exercise_ids()})
        print(f"--lesson {args.lesson}: no lesson with exercises has that number "
              f"(known: {', '.join(lessons)}).", file=stderr)
        return 2
    try:
        paths = find_submissions(args.submissions)
    except FileNotFoundError as e:
        print(e, file=stderr)
        return 2
    if not paths:
        print("No notebooks (*.ipynb) found in: " + ", ".join(args.submissions), file=stderr)
        return 2
    limits = Limits(args.timeout, args.cell_timeout, args.check_timeout, args.memory_mb)
    show = args.progress if args.progress is not None else (len(paths) > 5 or stderr.isatty())
    started = time.monotonic()
    try:
        grades = grade_all(paths, limits, jobs=args.jobs, lesson=args.lesson,
                           on_progress=_Progress(len(paths), stderr) if show else None)
    except KeyboardInterrupt:
        print("\nInterrupted: no grades written.", file=stderr)
        return 130
    elapsed = time.monotonic() - started
    with open(args.out, "w", encoding="utf-8", newline="") as f:
        write_csv(grades, f)
    if args.gradescope:
        write_gradescope(grades, args.gradescope)
    points, available = sum(g.points for g in grades), sum(g.max_points for g in grades)
    full = sum(1 for g in grades if g.max_points and g.points == g.max_points)
    print(summary_table(grades), file=stdout)
    print(f"\n{len(grades)} submission(s) graded in {elapsed:.1f} s with --jobs {args.jobs}: "
          f"{points}/{available} points, {full} with full marks. Grades written to {args.out}"
          + (f"; Gradescope results under {args.gradescope}/" if args.gradescope else "") + ".", file=stdout)
    return 0


__all__ = ["Limits", "Row", "SubmissionGrade", "InvalidSubmission", "find_submissions", "read_notebook",
           "answer_cells", "lesson_of", "reaches_into_course", "grade_notebook", "grade_all", "csv_rows",
           "write_csv", "gradescope_results", "write_gradescope", "summary_table", "add_arguments", "run",
           "CSV_HEADER", "TOTAL"]
