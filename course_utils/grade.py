"""Batch grading of submitted notebooks: ``python -m course_utils grade NOTEBOOK|FOLDER... --out grades.csv``.

Each submission is graded on what its answer cells *do*, not on what the notebook *says*:

1. The notebook is read as JSON; its answer cells are the code cells marked with
   ``{"course": {"exercise": "<id>"}}``. Nothing else in it is run: not the check cells, not the
   saved outputs (dropped while the file is read). The submission is graded on every registered
   exercise of its lesson: ``--lesson``, else the ``NN`` of the file name ``NN_*.ipynb``, else the
   lesson of most of its answer cells, else of the exercise ids the file mentions, else the batch's
   one lesson. Answer cells of other lessons are not run; the grade says they were ignored.
2. The answer cells run, in notebook order, in a fresh process (:mod:`course_utils._grade_worker`,
   forked by a per-run supervisor, itself forked from a server that has imported PyTorch once) with
   a memory limit (``RLIMIT_DATA`` per process, and a watchdog here that sums the private memory of
   every process the run started), a time limit per cell and the package's own time limit per
   check. They run in the namespace a notebook's setup cell gives (``torch``, ``nn``, ``F``, ``cu``,
   ``math``, ``np``, ``device``), read as IPython reads them (magics and ``!`` commands do nothing).
   Each exercise is checked right after its last answer cell, as the notebook's check cell would be,
   so later cells cannot change its grade; PyTorch's global state (default device and dtype, grad
   mode, RNG, active torch function and dispatch modes...) is reset for each check.
3. Before any learner code runs, the worker snapshots what the checks rely on: every attribute of
   every ``course_utils`` module and class (functions down to their ``__code__``), the exercise
   registry, and the functions and classes of ``torch``, ``torch.nn``, ``torch.Tensor``,
   ``nn.Module``, ``builtins`` and a few standard modules. After every cell and every check it
   compares; any change and the whole submission scores 0, with a reason naming what changed.
4. Each exercise is checked with :func:`course_utils.check`. Results travel to this process on a
   private pipe, each message signed with an HMAC key made for that run; what the learner prints
   goes to ``/dev/null``. Results arrive as soon as they are known, so they survive a later crash.
5. A run that overruns ``--timeout`` is killed with every process it started: its process group,
   its supervisor's session, and what the supervisor (a subreaper) adopted. If a cell or a check ends
   the process (timeout, crash, ``os._exit``, a signal), that exercise scores 0 with the reason, and
   the rest are graded in a new process that skips the culprit, so one bad answer costs only its
   own points. Answer cells that read the checker's stack (``sys._getframe``, ``inspect.stack``,
   ``f_locals``... see :func:`reaches_into_course`) score 0 for their exercise, as does an answer that
   *is* a reference solution (an alias, a wrapper, a copy made from its source) or *calls* one while it
   is checked (see :mod:`course_utils._grade_worker`). A run whose supervisor was killed
   scores 0 as a whole (what happened after that depends on timing).

Threat model. This defeats what learners actually do, by accident or on purpose: redefining or
monkeypatching ``course_utils.check``, its registry, its helpers or PyTorch functions (in an answer
cell or from inside the answer during its check); edited check cells; printed or saved claims of
"passed"; importing the reference solution; infinite loops; crashes; memory bombs (forked ones
included); processes left running; stopping or killing the worker's parent; files that are not
notebooks, or not even JSON. The batch always carries on, every submission gets a row per exercise
of its lesson, rows are written as submissions finish, and the same input gives the same CSV.

It is **not a security sandbox**. Learner code runs with your user's rights: it can read and
write your files (the course's own included), use the network, find the HMAC key in its own
memory, patch and restore things between integrity checks (e.g. from a thread), signal or stop
every process of your user (``os.kill(-1, signal.SIGSTOP)``; the grader and its fork server resume
each other, but not if both are stopped), kill the grader (the rows written so far stay), or use
GPU memory (which no limit here covers). Run batches you do not trust in a container or VM with no
secrets and no network (see the instructor's guide). ``--jobs N`` may use up to
``N * --memory-mb`` of RAM.
"""
from __future__ import annotations

import argparse
import ast
import atexit
import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
import os
import re
import secrets
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, TextIO

from . import _grade_processes as procs
from .exercises import exercise_ids, get_exercise
from .notebook import cell_source, exercise_cells
from .results import FAILED, PASSED

CSV_HEADER = ("submission", "exercise", "points", "max_points", "passed", "feedback")
TOTAL = "TOTAL"
#: Seconds a worker may take to start (fork, limits, snapshot) before learner code runs.
STARTUP_LIMIT = 120.0
#: Notebook files larger than this are not read. Outputs are dropped while reading, so what
#: counts for answers is :data:`MAX_ANSWER_CHARS`.
MAX_NOTEBOOK_BYTES = 2**30
#: Answer cells longer than this (characters) are not run: that exercise scores 0.
MAX_ANSWER_CHARS = 2**20
#: Seconds between two looks at a run's processes (stopped, memory, count, gone).
WATCH_INTERVAL = 0.25
#: A run with more learner processes than this at once is stopped (a fork bomb).
MAX_PROCESSES = 64
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

def find_submissions(paths: Sequence[str], problems: Optional[list[str]] = None) -> list[str]:
    """Expand files and folders into the notebooks to grade.

    Args:
        paths: notebook files (any name, any content: a broken file is graded as broken) and
            folders (searched recursively for ``*.ipynb``, skipping hidden files and folders such as
            ``.ipynb_checkpoints``, and not following links to folders).
        problems: if given, gets a line for each folder that could not be read.

    Returns:
        Submission paths as given or found, sorted, each path once. Two paths to one file (a
        link, or a folder given twice under different names) are two submissions: each gets its
        own rows, under its own name.

    Raises:
        FileNotFoundError: a path that does not exist.
    """
    def unreadable(error: OSError) -> None:
        if problems is not None:
            problems.append(f"Could not read the folder {error.filename}: {error.strerror}.")

    found: set[str] = set()
    for arg in paths:
        if os.path.isdir(arg):
            for folder, dirs, files in os.walk(arg, onerror=unreadable):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in files:
                    file = os.path.join(folder, name)
                    if name.endswith(".ipynb") and not name.startswith(".") and os.path.isfile(file):
                        found.add(str(Path(file)))
        elif os.path.lexists(arg):
            found.add(str(Path(arg)))
        else:
            raise FileNotFoundError(f"No such file or folder: {arg}")
    return sorted(found)


_SURROGATE = re.compile("[\ud800-\udfff]")
_BIG_FILE = 32 * 2**20
_BIG_READS = threading.Semaphore(1)  # one large notebook in memory at a time, whatever --jobs is


def _without_outputs(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for :func:`read_notebook`: drops saved outputs and attachments as soon as
    each is parsed (they are never graded), and turns lone surrogates in cell sources (``"\\ud800"``
    escapes, which no UTF-8 file can hold) into U+FFFD."""
    obj = dict(pairs)
    if "output_type" in obj:
        return {"output_type": obj["output_type"]}
    if "cell_type" in obj:
        obj.pop("outputs", None)
        obj.pop("attachments", None)
        source = obj.get("source")
        if isinstance(source, str):
            obj["source"] = _SURROGATE.sub("\ufffd", source)
        elif isinstance(source, list):
            obj["source"] = [_SURROGATE.sub("\ufffd", s) if isinstance(s, str) else s for s in source]
    return obj


def read_notebook(path: str) -> dict:
    """Read a notebook file as JSON, without its saved outputs (see :func:`_without_outputs`).

    Text that is not valid UTF-8 is read with U+FFFD in place of the bad bytes; UTF-8 with a byte
    order mark, UTF-16 and UTF-32 are read too.

    Raises:
        InvalidSubmission: unreadable, not a regular file, larger than :data:`MAX_NOTEBOOK_BYTES`,
            not JSON, nested too deeply, or not an nbformat-4 notebook.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block
        with open(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InvalidSubmission("the path is not a regular file")
            if info.st_size > MAX_NOTEBOOK_BYTES:
                raise InvalidSubmission(f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
            with _BIG_READS if info.st_size > _BIG_FILE else contextlib.nullcontext():
                data = f.read(MAX_NOTEBOOK_BYTES + 1)
                if len(data) > MAX_NOTEBOOK_BYTES:
                    raise InvalidSubmission(f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
                try:
                    text = data.decode(json.detect_encoding(data))
                except UnicodeDecodeError:
                    text = data.decode("utf-8", errors="replace")
                del data
                nb = json.loads(text.removeprefix("\ufeff"), object_pairs_hook=_without_outputs)
    except InvalidSubmission:
        raise
    except json.JSONDecodeError as e:
        raise InvalidSubmission(f"the file is not a notebook: it is not valid JSON ({e.msg} at line "
                                f"{e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise InvalidSubmission("the file is not a notebook: its JSON is nested too deeply") from None
    except (MemoryError, ValueError, LookupError) as e:  # e.g. a number too large to read
        raise InvalidSubmission(f"the file is not a notebook: its JSON could not be read "
                                f"({type(e).__name__})") from None
    except OSError as e:
        raise InvalidSubmission(f"the file could not be read ({e.strerror or type(e).__name__})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise InvalidSubmission("the file is JSON but not a Jupyter notebook (it has no list of cells)")
    return nb


def answer_cells(nb: dict) -> list[tuple[int, str, str]]:
    """The answer cells of a notebook, in notebook order: the code cells marked as an exercise's answer
    (:func:`course_utils.notebook.exercise_cells`).

    Every marked cell is kept: an answer split over two cells (both carry the metadata) keeps both
    halves, and a duplicated answer cell runs twice, as it would in the notebook.

    Returns:
        ``(cell index, exercise id, source)`` per answer cell.

    Raises:
        InvalidSubmission: the cells are not what nbformat 4 describes.
    """
    try:
        return [(index, ex_id, cell_source(cell)) for index, cell in enumerate(nb["cells"])
                for ex_id in exercise_cells({"cells": [cell]})]
    except (AttributeError, TypeError):
        raise InvalidSubmission("the file is not a valid notebook: its cells are malformed") from None


def _file_lesson(path: str) -> Optional[str]:
    """The ``NN`` of a file name ``NN_*.ipynb`` when lesson ``NN`` has exercises, else ``None``."""
    match = re.match(r"(\d\d)_", Path(path).name)
    return match.group(1) if match and _lesson_exercises(match.group(1)) else None


def lesson_of(path: str, cells: Sequence[tuple[int, str, str]] = ()) -> Optional[str]:
    """The lesson a submission is an assignment of.

    The file name says it first (``01_tensors.ipynb`` is lesson 01, whatever its cells hold: a
    notebook of lesson 02 saved under that name is a lesson-01 submission with no answers). Otherwise
    the lesson most of its answer cells (of registered exercises) belong to; ``None`` when that is a
    tie, or when neither names a lesson with exercises.
    """
    named = _file_lesson(path)
    if named:
        return named
    known = set(exercise_ids())
    counts: dict[str, int] = {}
    for _, ex_id, _ in cells:
        if ex_id in known:
            lesson = get_exercise(ex_id).lesson
            counts[lesson] = counts.get(lesson, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _lesson_exercises(lesson: str) -> list[str]:
    """The registered exercise ids of ``lesson`` (``"01"``; ``"01,02"`` for several), in course order."""
    numbers = lesson.split(",")
    return [e for e in exercise_ids() if get_exercise(e).lesson in numbers]


def strip_magics(source: str) -> str:
    """An answer cell as the Python that Jupyter runs: IPython's own input transformer turns magics
    (``%timeit f(x)``, ``t = %timeit -o f(x)``, ``%%time``), shell escapes (``!pip ...``,
    ``files = !ls``) and help (``x?``) into calls of ``get_ipython()``; the rest is left as it is
    (``!=`` and ``%`` on continuation lines stay operators).

    Without IPython (it comes with Jupyter), lines that start with ``%`` or ``!`` become ``pass``.
    """
    if not any(mark in source for mark in "%!?"):  # plain Python: nothing to transform (the common case)
        return source
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython is installed with Jupyter
        return "\n".join(line[: len(line) - len(line.lstrip())] + "pass  # " + line.lstrip()
                         if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # IPython gives up on it: Python's compiler reports what is wrong
        return source


#: Modules with functions that hand out frames of the call stack, whose local variables include
#: the checker's expected values.
_FRAME_MODULES = frozenset({"sys", "inspect", "gc", "traceback"})
#: Names that give access to frames (or to every object, as ``gc`` does) on whatever object they are
#: read: no other Python or PyTorch API has these names.
_FRAME_NAMES = frozenset({
    "_getframe", "_getframemodulename", "_current_frames", "currentframe", "getouterframes",
    "getinnerframes", "walk_stack", "get_referrers", "get_referents", "get_objects", "settrace",
    "setprofile", "f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame", "cr_frame",
    "ag_frame"})
#: Names that read frames only on the ``inspect`` module (``torch.stack`` is fine).
_INSPECT_FRAME_NAMES = frozenset({"stack", "trace"})
#: A frame API named in a string (for ``eval``, ``exec`` or ``operator.attrgetter``).
_FRAME_WORDS = re.compile(r"\b(?:" + "|".join(sorted(_FRAME_NAMES)) + r")\b|\binspect\s*\.\s*(?:stack|trace)\b")


def _frame_module(node: ast.AST, aliases: dict[str, str]) -> Optional[str]:
    """The frame module (:data:`_FRAME_MODULES`) that the expression ``node`` stands for, if any:
    a name it was imported as, ``__import__("sys")``, ``importlib.import_module("sys")`` or
    ``sys.modules["sys"]``."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        name = node.args[0].value
        if called in ("__import__", "import_module") and isinstance(name, str):
            return name.partition(".")[0] if name.partition(".")[0] in _FRAME_MODULES else None
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "modules" and isinstance(node.slice, ast.Constant)):
        return node.slice.value if node.slice.value in _FRAME_MODULES else None
    return None


def _frame_name(name: str, module: Optional[str]) -> bool:
    """Whether reading attribute ``name`` (of ``module``, when that is known) gives frames."""
    return name in _FRAME_NAMES or (module == "inspect" and name in _INSPECT_FRAME_NAMES)


def reaches_into_course(source: str) -> Optional[str]:
    """The first construct in the answer cell ``source`` that reads the call stack, or ``None``.

    Frames of the stack hold the checker's local variables (the expected values) while the answer
    is called, so an answer cell must not touch them: ``sys._getframe``, ``inspect.currentframe``,
    ``inspect.stack()``/``trace()`` (also as ``import inspect as i; i.stack()`` or ``from inspect
    import stack``), ``traceback.walk_stack``, ``gc.get_referrers``/``get_objects``, ``settrace``, a
    frame's ``f_back``/``f_locals``/``f_globals``, ``tb_frame``, a generator's ``gi_frame``; a
    ``getattr`` of such a name, or of a computed name on ``sys``, ``inspect``, ``gc`` or
    ``traceback``; ``vars()``/``__dict__`` of those modules; star imports from them; and strings that
    name a frame API (for ``eval``). The cell is read as IPython would run it (:func:`strip_magics`).

    Static and deliberately narrow: none of these has a place in an answer to this course, and no
    everyday name is among them. Reading the course's reference solutions is detected by what the
    answer *is* and *calls* while it is checked (see :mod:`course_utils._grade_worker`), not here.
    """
    try:
        tree = ast.parse(strip_magics(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    aliases = {name: name for name in _FRAME_MODULES}
    for node in ast.walk(tree):  # imports first: an alias may be used above the line that makes it
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                if top in _FRAME_MODULES:
                    aliases[alias.asname or top] = top
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").partition(".")[0] in _FRAME_MODULES:
            module = (node.module or "").partition(".")[0]
            for alias in node.names:
                if alias.name == "*" or _frame_name(alias.name, module):
                    return f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute):
            module = _frame_module(node.value, aliases)
            if _frame_name(node.attr, module) or (module and node.attr == "__dict__"):
                return ast.unparse(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            target = _frame_module(node.args[0], aliases)
            if node.func.id == "vars" and target:
                return ast.unparse(node)
            if node.func.id in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) > 1:
                name = node.args[1]
                literal = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
                if (literal is None and target) or (literal is not None and _frame_name(literal, target)):
                    return ast.unparse(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _FRAME_WORDS.search(node.value):
            return repr(node.value) if len(node.value) <= 60 else repr(node.value[:57] + "...")
    return None


_MENTION = re.compile(r"exercise\W{1,6}(\d\d\.[A-Za-z_]\w*)")


def _lesson_mentioned(path: str) -> Optional[str]:
    """The lesson a file names when neither its answer cells nor its name do: the lesson of the
    registered exercise ids in its answer-cell metadata (``"exercise": "01.nbytes"``) or check cells
    (``cu.exercise("01.nbytes")``), read as plain text (so it works on a damaged file too); ``None``
    when those name no lesson, or several."""
    try:
        with open(path, "rb") as f:
            text = f.read(64 * 2**20).decode("latin-1")
    except OSError:
        return None
    known = set(exercise_ids())
    lessons = {get_exercise(m).lesson for m in _MENTION.findall(text) if m in known}
    return lessons.pop() if len(lessons) == 1 else None


def _unrunnable(source: str) -> Optional[str]:
    """Why an answer cell cannot be run at all (the feedback for its exercise), or ``None``.

    Too long, or Python's own parser gives up on it (nested too deeply, a null character): reasons a
    learner can act on, which would otherwise stop the grader's checks or the worker. A plain
    syntax error is left to the worker, which reports its line.
    """
    if len(source) > MAX_ANSWER_CHARS:
        return (f"Your answer cell is too long to grade ({len(source):,} characters; the limit is "
                f"{MAX_ANSWER_CHARS:,}).")
    for text in (source, strip_magics(source)):
        try:
            ast.parse(text)
            compile(text, "<answer cell>", "exec", dont_inherit=True)
            return None
        except SyntaxError:
            continue
        except (RecursionError, MemoryError):
            return ("Your answer cell could not be graded: it is nested too deeply for Python to read "
                    "(an expression or a structure thousands of levels deep).")
        except (ValueError, UnicodeError) as e:
            return f"Your answer cell could not be graded: Python cannot read it ({_clean(str(e))})."
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
    """A ``python`` process that has imported PyTorch once and, per run, forks a supervisor that forks
    a fresh worker (:func:`course_utils._grade_worker.serve`). It leads a session of its own, and
    exits, killing every process it started, when this closes (or when the thread that started it
    ends)."""

    def __init__(self) -> None:
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(os.environ)  # make sure the server imports this very course_utils
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["PYTHONHASHSEED"] = "0"  # the same set and dict orders in every batch: the same feedback
        code = f"from course_utils._grade_worker import serve; serve({theirs.fileno()})"
        with theirs:
            self.process = subprocess.Popen([sys.executable, "-c", code], pass_fds=(theirs.fileno(),),
                                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.lock = threading.Lock()

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid

    def alive(self) -> bool:
        """Whether the server process is still there (it may be stopped: see :func:`_run_once`)."""
        return self.process.poll() is None

    def request(self, fds: list[int]) -> None:
        """Ask for a worker that reads its job from, and reports on, these pipe ends.

        Raises:
            OSError: the server has gone.
        """
        with self.lock:
            socket.send_fds(self.control, [b"j"], fds)

    def close(self) -> None:
        """Stop the server (it kills every process it started)."""
        self.control.close()
        procs.resume_if_stopped(self.process.pid)  # a stopped server would not see the socket close
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_SERVER: Optional[_ForkServer] = None
_SERVER_LOCK = threading.Lock()
_CANCELLED = threading.Event()  # set when a batch is interrupted: start no more workers


def _server() -> _ForkServer:
    """The fork server, started on first use (and again if it died)."""
    global _SERVER
    with _SERVER_LOCK:
        if _CANCELLED.is_set():
            raise RuntimeError("grading was interrupted")
        if _SERVER is None or not _SERVER.alive():
            if _SERVER is not None:
                _SERVER.close()
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
    """What one worker run sent, and how it ended."""

    messages: list[dict] = field(default_factory=list)
    #: "done", "tampered", "error" (as the worker reported), "timeout", "memory", "processes" (killed
    #: here) or "exit" (it ended by itself)
    end: str = ""
    ready: bool = False
    exitcode: Optional[int] = None  # negative: killed by that signal; None: unknown
    session: Optional[int] = None  # the run's supervisor: its pid, and the id of its session
    worker: Optional[int] = None  # the worker's pid, and the id of its process group
    supervisor_lost: bool = False  # the supervisor ended without a report (learner code killed it)


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to the pipe ``fd`` and close it (in a thread: the worker reads it when it starts)."""
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError:  # the worker died before reading its job; the run reports that
        pass


def _remove_folder(path: str) -> None:
    """Delete a run's temporary folder, even if learner code made parts of it read-only."""
    def retry(function: Callable, name: str, *_: object) -> None:
        try:
            os.chmod(os.path.dirname(name), 0o700)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, 0o700)
                shutil.rmtree(name, ignore_errors=True)
            else:
                os.unlink(name)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


def _run_worker(cells: list[tuple[int, str, str]], check: list[str], limits: Limits) -> _Run:
    """Run one worker to its end, collecting its signed messages (see :func:`_run_once`).

    A run that never reached learner code (the fork server was killed or broken, e.g. by another
    submission) is tried once more, with a fresh server if the old one has gone: no learner code
    ran, so the outcome cannot depend on it.
    """
    run = _run_once(cells, check, limits)
    if not run.ready and not run.messages and not _CANCELLED.is_set():
        run = _run_once(cells, check, limits)
    return run


def _run_once(cells: list[tuple[int, str, str]], check: list[str], limits: Limits) -> _Run:
    """Run one worker to its end, collecting its signed messages; then kill every process the run
    started and remove its temporary folder.

    While it waits, every :data:`WATCH_INTERVAL` seconds it looks at the run's processes
    (:func:`course_utils._grade_processes.run_processes`): it resumes the fork server or the run's
    supervisor if learner code stopped them (``SIGSTOP``), and kills the run when it has more than
    :data:`MAX_PROCESSES` processes, or when they together hold more than ``limits.memory_mb`` on top
    of what the worker held when it became ready (checked once there is more than one learner
    process; a single one has ``RLIMIT_DATA``).
    """
    key = secrets.token_bytes(32)
    run = _Run()
    tmp = tempfile.mkdtemp(prefix="course-grade-")
    job_r, job_w = os.pipe()
    channel_r, channel_w = os.pipe()
    status_r, status_w = os.pipe()
    server: Optional[_ForkServer] = None
    try:
        try:
            server = _server()
            server.request([job_r, channel_w, status_w])
        except OSError:  # the server went away: nothing ran, the caller tries again
            server = None
        except BaseException:
            os.close(job_w)
            raise
        finally:
            for fd in (job_r, channel_w, status_w):
                os.close(fd)
        if server is None:
            os.close(job_w)
            run.end = "exit"
            return run
        job = {"key": key.hex(), "cells": cells, "check": check, "cell_timeout": limits.cell_timeout,
               "check_timeout": limits.check_timeout, "memory_mb": limits.memory_mb, "tmp": tmp}
        threading.Thread(target=_write_all, args=(job_w, json.dumps(job).encode()), daemon=True).start()
        _follow(run, key, channel_r, status_r, server, limits)
        run.end = run.end or "exit"
    finally:
        _end_run(run, everything=True)
        for fd in (channel_r, status_r):
            os.close(fd)
        _remove_folder(tmp)
    return run


def _follow(run: _Run, key: bytes, channel_r: int, status_r: int, server: _ForkServer, limits: Limits) -> None:
    """Read a run's channel and status pipes into ``run`` until it has ended (see :func:`_run_once`)."""
    pending = {channel_r: b"", status_r: b""}  # open pipe ends -> incomplete last line
    deadline = time.monotonic() + STARTUP_LIMIT
    grace: Optional[float] = None  # once the worker has ended: how long to wait for the last lines
    next_watch = 0.0
    baseline: Optional[int] = None  # the worker's private memory when it became ready
    gone = swept = False

    def take(fd: int, line: bytes) -> None:
        """Take in one line from the status pipe or the channel."""
        nonlocal deadline, baseline
        if fd == status_r:  # "session S W", then "exit N" or "signal N" once the supervisor reaped W
            words = line.decode(errors="replace").split()
            if len(words) == 3 and words[0] == "session" and words[1].isdigit() and words[2].isdigit():
                if run.session is None:
                    run.session, run.worker = int(words[1]), int(words[2])
            elif len(words) == 2 and words[0] in ("exit", "signal") and words[1].isdigit():
                if run.exitcode is None:
                    run.exitcode = int(words[1]) if words[0] == "exit" else -int(words[1])
            return
        message = _unsign(key, line)
        if message is None:  # not from the worker, or mangled: ignored
            return
        run.messages.append(message)
        if message["t"] == "ready" and not run.ready:
            run.ready, deadline = True, time.monotonic() + limits.timeout
            baseline = procs.private_memory(run.worker) if run.worker else None
        elif message["t"] in ("done", "tampered", "error") and not run.end:
            run.end = message["t"]

    def read(timeout: float) -> None:
        """Wait up to ``timeout`` for lines on the open pipes and take them in."""
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
                take(fd, line)

    def watch() -> None:
        """Resume the server and the supervisor if stopped; note a worker that has gone; enforce the
        memory limit on the run's processes together."""
        nonlocal gone
        procs.resume_if_stopped(server.pid)  # learner code may stop the server: every run resumes it
        if run.session is None:
            return
        table = procs.process_table()
        if not table:  # no /proc: nothing more to see
            return
        supervisor = table.get(run.session)
        if supervisor is not None and supervisor.state == "T":
            procs.resume_if_stopped(run.session)
        learner = procs.run_processes(table, run.session, run.worker) - {run.session}
        gone = run.worker not in learner
        if run.ready and not run.end and len(learner) > MAX_PROCESSES:
            run.end = "processes"
            _end_run(run, everything=False)
        if run.ready and not run.end and baseline is not None and len(learner) > 1:
            used = sum(procs.memory_of(pid) for pid in learner)
            if used > baseline + (limits.memory_mb << 20):
                run.end = "memory"
                _end_run(run, everything=False)

    while True:
        now = time.monotonic()
        messages_over = bool(run.end) or channel_r not in pending
        if status_r not in pending and run.exitcode is None and run.session is not None:
            run.supervisor_lost = True
        if messages_over and (run.exitcode is not None or status_r not in pending):
            return
        worker_over = run.exitcode is not None or gone or run.supervisor_lost
        if worker_over and not messages_over and not swept:
            _end_run(run, everything=False)  # what it started may hold the channel open
            swept = True
        if grace is None and (messages_over or worker_over):
            grace = now + 2.0
        if grace is not None and now >= grace:
            return
        if now >= deadline:
            if not worker_over:
                run.end = run.end or "timeout"
            return
        if now >= next_watch:
            next_watch = now + WATCH_INTERVAL
            watch()
            continue
        read(min(deadline, next_watch, grace or math.inf) - now)


def _end_run(run: _Run, everything: bool) -> None:
    """Kill the processes of a run: the learner's (its worker's group, its supervisor's session, and
    what the supervisor adopted) and, with ``everything``, the supervisor itself."""
    session, worker = run.session, run.worker
    if session is None:
        return
    if worker is not None:
        try:
            os.killpg(worker, signal.SIGKILL)
        except OSError:
            pass

    def left() -> set[int]:
        found = procs.run_processes(procs.process_table(), session, worker)
        return found if everything else found - {session}

    procs.kill_until_gone(left)


def _how_it_ended(run: _Run, limits: Limits) -> tuple[str, str]:
    """(What the process did, as a phrase; a short event name for the summary)."""
    if run.end == "timeout":
        return (f"ran past the time limit ({limits.timeout:g} s for the whole submission) and was stopped",
                "timed out")
    if run.end == "memory":
        return (f"used more than {limits.memory_mb} MB of memory together with the processes it started, "
                "and was stopped", "out of memory")
    if run.end == "processes":
        return f"started more than {MAX_PROCESSES} processes at once, and was stopped", "too many processes"
    if run.end == "error":
        return f"could not be run by the grader ({run.messages[-1].get('message')})", "grader error"
    code = run.exitcode
    if code is None:
        if run.supervisor_lost:
            return "ended unexpectedly (the process supervising it was killed)", "stopped"
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
        lesson = lesson or lesson_of(path) or _lesson_mentioned(path)
        return _grade(path, _lesson_exercises(lesson) if lesson else [], {}, f"Not graded: {e}.",
                      ["invalid notebook"])
    lesson = lesson or lesson_of(path, cells) or _lesson_mentioned(path)
    if lesson is None:
        return _grade(path, [], {}, "Not graded: could not tell which lesson this notebook belongs to (no "
                      "answer cells, and the file name does not start with a lesson number); use --lesson.",
                      ["unknown lesson"])
    exercises = _lesson_exercises(lesson)
    # Answer cells of other lessons' exercises (or of no registered exercise) are not run: they are
    # not part of this assignment. They are reported, so that a wrong file is noticed.
    ignored = sorted({c[1] for c in cells if c[1] not in exercises})
    cells = [c for c in cells if c[1] in exercises]
    decided: dict[str, tuple[str, str]] = {}
    events: list[str] = [f"ignored answer cells of {', '.join(ignored)}"] if ignored else []
    elsewhere = (f" This notebook has answer cells for {', '.join(ignored)}, which are not exercises of lesson "
                 f"{lesson}: they are not graded. Is this the right notebook?") if ignored else ""
    for ex_id in exercises:
        if not any(c[1] == ex_id for c in cells):
            decided[ex_id] = (FAILED, "Answer cell missing: the notebook has no cell marked as the answer to "
                                      f"{ex_id}. Keep the answer cell and write your code in it." + elsewhere)
    unrunnable = {c[0]: _unrunnable(c[2]) for c in cells}
    for index, ex_id, _ in cells:
        if unrunnable[index] and ex_id not in decided:
            decided[ex_id] = (FAILED, unrunnable[index])
            events.append(f"{ex_id}: unreadable answer cell")
    cells = [c for c in cells if not unrunnable[c[0]]]
    for _, ex_id, source in cells:
        construct = reaches_into_course(source)
        if construct and ex_id not in decided:
            decided[ex_id] = (FAILED, f"Not graded: your answer cell uses `{construct}`, which reads the call "
                                      "stack, where the checker keeps the expected answers. Solve the exercise "
                                      "with your own code.")
            events.append(f"{ex_id}: reads the checker's frames")
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
        if run.supervisor_lost:  # how far the run got after that depends on timing: grade none of it
            return _grade(path, exercises, {}, "Not graded: the process that supervises this submission's run was "
                          "killed (by the submission itself, by another one graded at the same time, or by the "
                          "system). Answer cells must leave the grader's processes alone.", ["supervisor killed"])
        what, event = _how_it_ended(run, limits)
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
        if stage["stage"] == "cell":
            skip.add(stage["index"])
            decided.setdefault(ex_id, (FAILED, f"Your answer cell {what}."))
        else:
            name = get_exercise(ex_id).name
            decided[ex_id] = (FAILED, f"While `{name}` was being checked, your code {what}.")
        events.append(f"{ex_id}: {event}")
    return _grade(path, exercises, decided, events=events)


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
            return _grade(path, _lesson_exercises(lesson) if lesson else [], {},
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

    _CANCELLED.clear()
    if paths:  # started from this thread, so that it lives as long as this thread (see _ForkServer)
        with contextlib.suppress(OSError):  # if it cannot start, each submission says so
            _server()
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
        _CANCELLED.set()
        pool.shutdown(wait=False, cancel_futures=True)
        _stop_server()
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
            grade = dataclasses.replace(regraded, note=_clean(f"{regraded.note} {why}".strip()),
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
        return lesson_of(path, answer_cells(read_notebook(path))) or _lesson_mentioned(path)
    except Exception:
        try:
            return lesson_of(path) or _lesson_mentioned(path)
        except Exception:
            return None


# --- output ----------------------------------------------------------------------------------

def csv_rows(grades: Sequence[SubmissionGrade]) -> list[Row]:
    """All rows, sorted by submission, then exercise id, each submission's ``TOTAL`` last."""
    rows = [r for g in grades for r in g.rows + [g.total()]]
    return sorted(rows, key=lambda r: (r.submission, r.exercise == TOTAL, r.exercise))


#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_field(text: str) -> str:
    """One CSV field, safe to open in a spreadsheet.

    A field that starts like a formula (``=`` ``+`` ``-`` ``@``, tab or carriage return: a file named
    ``=HYPERLINK(...).ipynb``) gets a leading ``'``, as OWASP recommends, so that it stays text. A
    field holding a comma, semicolon (the separator in some locales), quote, tab or line break is
    quoted (RFC 4180).
    """
    if text.startswith(_FORMULA_START):
        text = "'" + text
    if any(c in text for c in ',;"\t\r\n'):
        text = '"' + text.replace('"', '""') + '"'
    return text


def _csv_lines(rows: Sequence[Row]) -> str:
    """CSV lines for ``rows``, each ending with ``\\n``."""
    return "".join(",".join(csv_field(v) for v in row.values()) + "\n" for row in rows)


def write_csv(grades: Sequence[SubmissionGrade], out: TextIO) -> None:
    """Write the grades as CSV (header :data:`CSV_HEADER`, ``\\n`` line ends, fields as
    :func:`csv_field` writes them) to ``out``."""
    out.write(",".join(CSV_HEADER) + "\n")
    out.write(_csv_lines(csv_rows(grades)))


class _CsvFile:
    """The ``--out`` file: each submission's rows are written as soon as it is graded, so a batch that
    is killed keeps what it graded; at the end the file is rewritten, sorted."""

    def __init__(self, f: TextIO) -> None:
        self.f = f
        self.grades: list[SubmissionGrade] = []
        self.progressive = f.seekable()  # a pipe or terminal gets the sorted CSV only, at the end
        if self.progressive:
            f.write(",".join(CSV_HEADER) + "\n")
            f.flush()

    def add(self, grade: SubmissionGrade) -> None:
        """Append one submission's rows (its ``TOTAL`` last)."""
        self.grades.append(grade)
        if self.progressive:
            self.f.write(_csv_lines(csv_rows([grade])))
            self.f.flush()

    def finish(self) -> None:
        """Rewrite the file with every row so far, sorted."""
        if self.progressive:
            self.f.seek(0)
            self.f.truncate()
        write_csv(self.grades, self.f)
        self.f.flush()


def gradescope_results(grade: SubmissionGrade) -> dict:
    """A submission's grade in Gradescope's ``results.json`` format (with the submission's path in
    ``extra_data``)."""
    tests = []
    for row in grade.rows:
        ex = get_exercise(row.exercise)
        tests.append({"name": f"{row.exercise}: {ex.title}", "number": row.exercise, "score": row.points,
                      "max_score": row.max_points, "status": "passed" if row.passed else "failed",
                      "output": row.feedback})
    return {"score": grade.points, "output": grade.total().feedback, "tests": tests,
            "extra_data": {"submission": grade.submission}}


_FOLDER_UNSAFE = frozenset('%/\\<>:"|?*~')
_FOLDER_MAX_BYTES = 200


def gradescope_folder(submission: str, strict: bool = False) -> str:
    """The folder name for a submission's ``results.json``: its path as given, percent-encoded.

    ``%``, ``/``, ``\\``, ``~``, the characters Windows forbids (``<>:"|?*``) and control characters
    become ``%XX`` (their UTF-8 bytes), as do a leading ``.`` and a trailing space or ``.``, so that
    the name is one folder on any system and ``urllib.parse.unquote(name) == submission``:
    ``subs/John Smith/hw.ipynb`` -> ``subs%2FJohn Smith%2Fhw.ipynb``. ``strict`` also encodes capital
    letters and non-ASCII characters (for names that differ only in case, which collide on macOS and
    Windows). A name over 200 bytes is cut, and ends with ``~`` and a hash of the path; it cannot be
    decoded: read ``extra_data.submission`` in its ``results.json``.
    """
    tokens = []
    for i, ch in enumerate(submission):
        edge = (i == 0 and ch == ".") or (i == len(submission) - 1 and ch in " .")
        if (ch in _FOLDER_UNSAFE or not ch.isprintable() or edge
                or (strict and (ch.isupper() or not ch.isascii()))):
            raw = ch.encode("utf-8", "surrogateescape" if "\udc80" <= ch <= "\udcff" else "surrogatepass")
            tokens.append("".join(f"%{b:02X}" for b in raw))
        else:
            tokens.append(ch)
    name = "".join(tokens)
    if len(name.encode()) <= _FOLDER_MAX_BYTES:
        return name
    digest = hashlib.sha256(submission.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    kept, size = [], 0
    for token in tokens:
        size += len(token.encode())
        if size > _FOLDER_MAX_BYTES - 17:
            break
        kept.append(token)
    return "".join(kept) + "~" + digest


def gradescope_folders(submissions: Sequence[str]) -> dict[str, str]:
    """Submission -> its folder (:func:`gradescope_folder`), unique even on a file system that ignores
    case or Unicode normalization: names that would collide there are encoded ``strict``."""
    def key(name: str) -> str:
        return unicodedata.normalize("NFC", name).casefold()

    names = {s: gradescope_folder(s) for s in submissions}
    counts: dict[str, int] = {}
    for name in names.values():
        counts[key(name)] = counts.get(key(name), 0) + 1
    return {s: gradescope_folder(s, strict=True) if counts[key(n)] > 1 else n for s, n in names.items()}


def _write_results(grade: SubmissionGrade, directory: str, folder: str) -> Path:
    """Write ``DIRECTORY/FOLDER/results.json`` for one submission; returns its path."""
    target = Path(directory) / folder / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(gradescope_results(grade), indent=2, ensure_ascii=False) + "\n",
                      encoding="utf-8", errors="backslashreplace")
    return target


def write_gradescope(grades: Sequence[SubmissionGrade], directory: str) -> list[Path]:
    """Write ``DIRECTORY/<folder>/results.json`` for each submission, the folder named by
    :func:`gradescope_folders` (the submission's path, percent-encoded: one folder per path).

    Returns:
        The files written.
    """
    folders = gradescope_folders([g.submission for g in grades])
    return [_write_results(grade, directory, folders[grade.submission]) for grade in grades]


def _printable(text: str) -> str:
    """``text`` safe to print on a terminal: control characters, lone surrogates (from file names
    that are not UTF-8) and other invisible characters become ``\\x1b``-style escapes."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def summary_table(grades: Sequence[SubmissionGrade]) -> str:
    """One line per submission: points, exercises passed, and notes."""
    table = [("Submission", "Points", "Passed", "Notes")]
    for g in grades:
        notes = _printable(g.note if g.note else "; ".join(g.events))
        table.append((_printable(g.submission), f"{g.points}/{g.max_points}", f"{g.passed}/{len(g.rows)}",
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
        """Show that ``done`` of ``total`` submissions are graded."""
        if self.tty:
            filled = 30 * done // total
            self.stream.write(f"\rgrading [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}"
                              + ("\n" if done == total else ""))
        elif 10 * done // total > self.last:
            self.last = 10 * done // total
            self.stream.write(f"graded {done}/{total} submissions\n")
        self.stream.flush()


# --- command line ----------------------------------------------------------------------------

#: Upper bounds for the options (a limit beyond these is a typo).
MAX_SECONDS = 86400.0
MAX_JOBS = 1024
MAX_MEMORY_MB = 2**24


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``grade`` subcommand's arguments to ``parser``."""
    d = Limits()
    parser.add_argument("submissions", nargs="+", metavar="NOTEBOOK_OR_FOLDER",
                        help="submitted notebooks, or folders searched for *.ipynb")
    parser.add_argument("--out", default="grades.csv",
                        help="CSV file to write, row by row as submissions are graded (default: grades.csv)")
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
    parser.add_argument("--lesson", help="grade every notebook as this lesson (e.g. 01), not the one detected")
    parser.add_argument("--gradescope", metavar="DIR",
                        help="also write DIR/<submission path, percent-encoded>/results.json")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: for more than 5 submissions, or in a terminal)")


def _option_problems(args: argparse.Namespace) -> list[str]:
    """What is wrong with the numeric options (empty when nothing is)."""
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
    return problems


def _writable_folder(path: str) -> Optional[str]:
    """Create the folder ``path`` if needed and check that files can be written there: why not, or ``None``."""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        return e.strerror or type(e).__name__
    return None


def run(args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Run ``python -m course_utils grade``.

    Options, submissions and output paths are checked before anything is graded. Rows are written
    to ``--out`` as submissions finish (sorted when the batch ends), so a batch that is killed or
    interrupted keeps what it graded.

    Args:
        args: parsed by a parser set up with :func:`add_arguments`.
        stdout: where the summary table goes (default ``sys.stdout``).
        stderr: where errors and the progress bar go (default ``sys.stderr``).

    Returns:
        0 when grading ran (whatever the grades), 2 for usage errors (nothing to grade, bad options,
        an output that cannot be written), 130 when interrupted (Ctrl-C; the CSV then holds the
        submissions graded so far).
    """
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        print("Grading needs Linux or macOS (it runs each submission in a forked, resource-limited process).",
              file=stderr)
        return 2
    problems = _option_problems(args)
    if args.lesson and not _lesson_exercises(args.lesson):
        lessons = sorted({get_exercise(e).lesson for e in exercise_ids()})
        problems.append(f"--lesson {args.lesson}: no lesson with exercises has that number "
                        f"(known: {', '.join(lessons)}).")
    if problems:
        print("\n".join(_printable(p) for p in problems), file=stderr)
        return 2
    unreadable: list[str] = []
    try:
        paths = find_submissions(args.submissions, unreadable)
    except FileNotFoundError as e:
        print(_printable(str(e)), file=stderr)
        return 2
    for problem in unreadable:
        print("Warning: " + _printable(problem), file=stderr)
    if not paths:
        print("No notebooks (*.ipynb) found in: " + _printable(", ".join(args.submissions)), file=stderr)
        return 2
    folders: dict[str, str] = {}
    if args.gradescope:
        why = _writable_folder(args.gradescope)
        if why:
            print(f"Cannot write Gradescope results under --gradescope {_printable(args.gradescope)}: {why}.",
                  file=stderr)
            return 2
        folders = gradescope_folders(paths)
    try:
        out = open(args.out, "w", encoding="utf-8", errors="backslashreplace", newline="")
    except OSError as e:
        print(f"Cannot write --out {_printable(args.out)}: {e.strerror or type(e).__name__}.", file=stderr)
        return 2
    limits = Limits(args.timeout, args.cell_timeout, args.check_timeout, args.memory_mb)
    show = args.progress if args.progress is not None else (len(paths) > 5 or stderr.isatty())
    started = time.monotonic()
    unwritten: list[str] = []  # Gradescope results that could not be written
    with out:
        csv_file = _CsvFile(out)

        def record(grade: SubmissionGrade) -> None:
            csv_file.add(grade)
            if args.gradescope:
                try:
                    _write_results(grade, args.gradescope, folders[grade.submission])
                except OSError as e:  # e.g. a full disk: the CSV still has the grade
                    unwritten.append(f"{folders[grade.submission]}: {e.strerror or type(e).__name__}")

        try:
            grades = grade_all(paths, limits, jobs=args.jobs, lesson=args.lesson, on_grade=record,
                               on_progress=_Progress(len(paths), stderr) if show else None)
        except KeyboardInterrupt:
            csv_file.finish()
            print(f"\nInterrupted: {len(csv_file.grades)} of {len(paths)} submissions were graded; their rows "
                  f"are in {_printable(args.out)}.", file=stderr)
            return 130
        csv_file.finish()
    elapsed = time.monotonic() - started
    points, available = sum(g.points for g in grades), sum(g.max_points for g in grades)
    full = sum(1 for g in grades if g.max_points and g.points == g.max_points)
    print(summary_table(grades), file=stdout)
    print(f"\n{len(grades)} submission(s) graded in {elapsed:.1f} s with --jobs {args.jobs}: "
          f"{points}/{available} points, {full} with full marks. Grades written to {_printable(args.out)}"
          + (f"; Gradescope results under {_printable(args.gradescope)}/" if args.gradescope else "") + ".",
          file=stdout)
    for problem in unwritten:
        print("Could not write Gradescope results " + _printable(problem), file=stderr)
    return 0


__all__ = ["Limits", "Row", "SubmissionGrade", "InvalidSubmission", "find_submissions", "read_notebook",
           "answer_cells", "lesson_of", "reaches_into_course", "grade_notebook", "grade_all", "csv_rows",
           "csv_field", "write_csv", "gradescope_results", "gradescope_folder", "gradescope_folders",
           "write_gradescope", "summary_table", "add_arguments", "run", "CSV_HEADER", "TOTAL"]
