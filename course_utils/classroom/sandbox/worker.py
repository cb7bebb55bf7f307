"""Worker side of ``python -m course_utils grade``: the process that runs one submission's answer cells and checks.

Private to :mod:`course_utils.classroom`, whose docstring describes the design and the threat model. The fork
server (:mod:`.forkserver`) forks a fresh worker per run. Importing this module imports PyTorch, every course module
and the modules PyTorch would otherwise import lazily during the first checks (3-5 s per process), so the server
does it once; where no GPU is, it also makes the state each run starts from once (:func:`pristine_state`: the
namespace, the guard, the snapshot). The worker reads its job, sends signed messages (one JSON line each) on its
channel, and sends the learner's prints to ``/dev/null``.

A run (:func:`main`) grades the way the notebook runs: answer cells in notebook order, read as
IPython reads them, each exercise checked right after its last answer cell, in PyTorch's pristine
global state (:mod:`course_utils.classroom.sandbox.integrity`), with the integrity of the course and of PyTorch
verified after every cell and every check. Whatever the learner's code raises (``KeyboardInterrupt``
and hostile ``__str__`` included) costs only its own exercise."""
from __future__ import annotations

import ast
import asyncio
import builtins
import contextlib
import gc
import importlib
import inspect
import math
import os
import pkgutil
import resource
import signal
import tempfile
import types
from typing import Any, Callable, Optional

# Ask PyTorch to probe CUDA through NVML, which does not initialise CUDA in the fork server
# (a CUDA context does not survive a fork).
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import course_utils  # noqa: E402
from course_utils import checking, exercises, misconceptions, modes  # noqa: E402
from course_utils.classroom.reading.cells import OWN_CELL, AnswerCell, strip_magics  # noqa: E402
from course_utils.classroom.sandbox.guard import ReferenceGuard  # noqa: E402
from course_utils.classroom.sandbox.integrity import (Snapshot, prepare_pytorch, pristine_torch, take_snapshot,  # noqa: E402
                                                      torch_settings, type_name, verify)
from course_utils.classroom.sandbox.messages import (FATAL_CELL_ERRORS, TAMPERED_EXIT, CellError, CellFailure,  # noqa: E402
                                                     CellMessage, DoneMessage, ErrorMessage, Job, Message, ReadyMessage,
                                                     ResultMessage, Stage, StageMessage, TamperedMessage, frame, sign)
from course_utils.device import warm_up  # noqa: E402
from course_utils.exceptions import GraderLimit  # noqa: E402
from course_utils.grading import TimeLimit, safe_repr, text_of  # noqa: E402
from course_utils.results import FAILED  # noqa: E402

try:  # learners may use numpy in an answer; it is optional for the course
    import numpy  # noqa: E402
except ImportError:  # pragma: no cover - numpy ships with torch wheels
    numpy = None

exercises.exercise_ids()  # register every lesson's exercises once, in the fork server
for _module in pkgutil.walk_packages(course_utils.__path__, "course_utils."):
    if not _module.name.endswith("__main__"):  # every course module, so all of them are snapshotted
        importlib.import_module(_module.name)
for _lazy in ("torch._dynamo", "torch.fx.experimental.symbolic_shapes", "IPython.core.inputtransformer2"):
    # Checks on `meta` tensors import these (sympy, dynamo...) on first use: 3-5 s per submission;
    # answer cells with magics need IPython's input transformer. Only a speed-up: any failure is ignored.
    with contextlib.suppress(Exception):
        __import__(_lazy)
prepare_pytorch()


def no_accelerator() -> bool:
    """Whether this machine has no CUDA or MPS device, asked as the fork server may (through NVML for CUDA, which
    starts nothing that a fork cannot keep)."""
    return not (torch.cuda.is_available() or torch.backends.mps.is_available())


#: Cell magics whose body IPython runs as ordinary code in the notebook's namespace.
_BODY_MAGICS = frozenset({"time", "capture"})
_MISSING = object()

__all__ = ["run_cell", "check_answer", "notebook_namespace", "main", "pristine_state", "no_accelerator", "Pristine"]


class _NoIPython:
    """``get_ipython()`` while grading: magics, shell commands (``!cmd``) and help (``x?``) do nothing and return
    ``None`` (``files = !ls`` gives ``[]``); ``%%time`` and ``%%capture`` run their body (with ``run_body``, as
    answer-cell code)."""

    def __init__(self, run_body: Callable[[str], None]) -> None:
        self._run_body = run_body

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> None:
        """``%name line``: nothing."""

    def run_cell_magic(self, name: str, line: str, cell: str) -> None:
        """``%%name line`` over ``cell``: the body runs for :data:`_BODY_MAGICS`, else nothing."""
        if name in _BODY_MAGICS:
            self._run_body(cell)

    def system(self, cmd: str) -> None:
        """``!cmd``: nothing."""

    def getoutput(self, cmd: str, split: bool = True, depth: int = 0) -> list[str]:
        """``x = !cmd``: no output."""
        return []


def _compile(source: str, filename: str, guard: ReferenceGuard) -> types.CodeType:
    """Compile an answer cell as IPython would run it (:func:`course_utils.classroom.reading.cells.strip_magics`), and
    record its code as the learner's own (see :meth:`ReferenceGuard.answer_code`)."""
    code = compile(strip_magics(source), filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    guard.answer_code(code)
    return code


def _exec(code: types.CodeType, namespace: dict) -> None:
    """Run a compiled cell in ``namespace``; a cell with a top-level ``await`` (which IPython runs) in an
    event loop of its own."""
    if not code.co_flags & inspect.CO_COROUTINE:
        exec(code, namespace)
        return
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(eval(code, namespace))
    finally:
        loop.close()


def _is_memory_error(e: BaseException) -> bool:
    if issubclass(type(e), MemoryError):
        return True
    text = text_of(e).lower()
    return issubclass(type(e), RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text or "not enough memory" in text)



def _line(e: BaseException, filename: str) -> str:
    """`` on line N`` of the answer cell where ``e`` was raised, or ``""``."""
    try:
        if issubclass(type(e), SyntaxError) and e.filename == filename and e.lineno:
            return f" on line {int(e.lineno)}"
        tb, line = BaseException.__traceback__.__get__(e), 0
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
    except BaseException:  # a hostile exception
        return ""
    return f" on line {line}" if line else ""


def run_cell(source: str, filename: str, namespace: dict, seconds: float, memory_mb: int,
             guard: ReferenceGuard) -> Optional[CellFailure]:
    """Execute one answer cell in ``namespace`` within ``seconds``: ``None`` if it ran to the end, else how it
    failed."""
    try:
        code = _compile(source, filename, guard)
    except SyntaxError as e:
        return CellFailure(CellError.SYNTAX, f"Your answer cell has a syntax error{_line(e, filename)}: "
                                             f"{safe_repr(e.msg, 200)}.")
    ipython = _NoIPython(lambda body: _exec(_compile(body, filename, guard), namespace))
    namespace["get_ipython"] = lambda: ipython  # what IPython's transformer turns magics into
    before = set(namespace)
    try:
        with checking.time_limit(seconds):
            _exec(code, namespace)
    except TimeLimit:
        return CellFailure(CellError.TIMEOUT, f"Your answer cell did not finish within {seconds:g} s and was "
                                              "stopped. Look for a loop that never ends outside your function.")
    except BaseException as e:  # anything the learner's code raises, SystemExit and KeyboardInterrupt included
        if _is_memory_error(e):
            _forget(namespace, before)
            return CellFailure(CellError.MEMORY, f"Your answer cell ran out of memory (the limit is {memory_mb} MB) "
                                                 "and was stopped.")
        message = "called sys.exit()" if issubclass(type(e), SystemExit) else \
            f"raised {type_name(e)}{_line(e, filename)}: {safe_repr(text_of(e), 200)}"
        return CellFailure(CellError.EXCEPTION, f"Your answer cell {message}.")
    return None


def _forget(namespace: dict, before: set) -> None:
    """Drop the names a cell added to ``namespace`` (to get its memory back)."""
    for name in set(namespace) - before:
        del namespace[name]
    gc.collect()


def check_answer(ex_id: str, namespace: dict, cell_error: Optional[CellFailure], guard: ReferenceGuard,
                 start: list[Any], timeout: float | None = None) -> ResultMessage:
    """Check what the answer cells defined for ``ex_id``, within ``timeout`` seconds (the package's default when
    ``None``), in PyTorch's state ``start`` (:func:`course_utils.classroom.sandbox.integrity.pristine_torch`); the
    result carries the misconception ``code``, and ``points`` when the check ran. Whatever the answer raises, even out
    of :func:`course_utils.check` (``KeyboardInterrupt``, a hostile ``__str__``), fails this exercise only."""
    ex = exercises.get_exercise(ex_id)
    if cell_error and cell_error.kind in FATAL_CELL_ERRORS:
        timed_out = cell_error.kind == CellError.TIMEOUT
        return ResultMessage(ex_id, FAILED, cell_error.message,
                             misconceptions.TIMEOUT if timed_out else misconceptions.CELL_ERROR)
    answer = namespace.get(ex.name, _MISSING)
    if answer is _MISSING:
        prefix = cell_error.message + " " if cell_error else "Your answer cell does not define "
        missing = f"`{ex.name}` is not defined." if cell_error else f"`{ex.name}`."
        return ResultMessage(ex_id, FAILED, prefix + missing, misconceptions.MISSING)
    if guard.is_reference(answer):
        return ResultMessage(ex_id, FAILED, f"`{ex.name}` is a course reference solution (imported, wrapped or "
                                            "copied from course_utils), not your own code.", misconceptions.REFERENCE)
    if caught := _caught(guard, ex_id, ex.name):
        return caught
    try:
        with pristine_torch(start), guard.running(ex_id, checking=True):
            result = checking.check(ex_id, answer, timeout=timeout)
        status, feedback, code, points = str(result.status), str(result.feedback), str(result.code), result.points
    except BaseException as e:  # KeyboardInterrupt from the answer, or raised while describing its error
        return ResultMessage(ex_id, FAILED, f"Checking `{ex.name}` stopped: your code raised {type_name(e)}, which "
                                            "ended the check. Make sure it returns normally.", misconceptions.RAISED)
    if caught := _caught(guard, ex_id, ex.name):
        return caught
    if cell_error:
        feedback += f" (Note: {cell_error.message[0].lower()}{cell_error.message[1:]})"
    return ResultMessage(ex_id, status, feedback, code, points)


def _caught(guard: ReferenceGuard, ex_id: str, name: str) -> Optional[ResultMessage]:
    """The failing result of an exercise whose code (or a cell of the learner's own that the answers use) ran a copy
    of a reference, or took a frame of the call stack at run time (:meth:`ReferenceGuard.note_frame_access`), else
    ``None``."""
    if ex_id in guard.flagged or OWN_CELL in guard.flagged:
        return ResultMessage(ex_id, FAILED, f"`{name}` uses a course reference solution (your code calls one, or runs "
                                            "a copy of its code): write your own code.", misconceptions.REFERENCE)
    what = guard.frames_read.get(ex_id) or guard.frames_read.get(OWN_CELL)
    return None if what is None else ResultMessage(
        ex_id, FAILED, f"Not graded: your code took a frame of the call stack while it ran (`{what}`), and the checker "
        "keeps the expected answers there. Solve the exercise with your own code.", misconceptions.CALL_STACK)


def _isolate(memory_mb: int) -> None:
    """Own process group (the grader kills it whole), memory limit, learner output to /dev/null,
    and the run's own temporary folder (the grader removes it after the run)."""
    from course_utils.classroom.sandbox import processes as procs

    tmp = os.environ.pop("COURSE_GRADE_TMP", "") or tempfile.mkdtemp(prefix="course-grade-")
    _drop_privileges(os.environ.pop(GRADE_USER_ENV, ""), tmp)  # first: a change of user clears PDEATHSIG
    # A group of its own inside its supervisor's session (see forkserver): `os.killpg(0, ...)` in an
    # answer reaches the learner's processes, not the supervisor.
    os.setpgid(0, 0)
    procs.prctl(procs.PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with its supervisor
    procs.prctl(procs.PR_SET_DUMPABLE, 1)  # the supervisor is not; the grader reads this one's memory
    os.environ["TMPDIR"] = tempfile.tempdir = tmp  # the learner's temporary files go there too
    os.chdir(tmp)   # and the files it writes by a relative path: never in the graded folder, nor another run's
    # RLIMIT_DATA, not RLIMIT_AS: it caps what the process can actually allocate (heap and private
    # mappings) but not reserved address space, which CUDA reserves by the tens of GB. The limit is
    # counted on top of what PyTorch already holds, which differs by build (CUDA builds hold more).
    warm_up()  # the accelerator's start-up: before the limits, which are the learner's
    limit, hard = _data_in_use() + (memory_mb << 20), resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    # A learner's cu.exercise()/cu.quiz() must not write the grader's own progress file.
    os.environ["COURSE_PROGRESS_FILE"] = os.path.join(tmp, "progress.json")


#: The environment variable naming the user that learner code runs as when the grader runs as root
#: (the Gradescope bundle sets it): it then cannot write the grader's files or signal its processes.
GRADE_USER_ENV = "COURSE_GRADE_USER"


def _drop_privileges(user: str, tmp: str) -> None:
    """Become ``user`` (its own group, no others) if ``user`` is set and this process is root; the
    run's temporary folder becomes theirs. Anything short of that ends the run (exit 5): learner code
    must not run as root when a user was asked for."""
    if not user or os.geteuid() != 0:
        return
    try:
        import pwd
        entry = pwd.getpwnam(user)
        os.chown(tmp, entry.pw_uid, entry.pw_gid)
        os.setgroups([])
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)
    except (KeyError, OSError):
        os._exit(5)
    if os.geteuid() == 0 or os.getuid() == 0:  # pragma: no cover - setuid cannot half-succeed
        os._exit(5)


def _data_in_use() -> int:
    """Bytes this process already counts against ``RLIMIT_DATA`` (``VmData``; 0 without ``/proc``)."""
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1]) << 10
    return 0


def notebook_namespace() -> dict:
    """What a notebook's setup cell provides, for the answer cells to run in: its names, and what its
    ``cu.setup()`` does (the simulated GPU where there is no accelerator). Done before the snapshot, so
    that an answer cell which calls ``cu.setup()`` again (a copied setup cell) changes nothing."""
    try:
        device = course_utils.setup()   # its banner goes to /dev/null, as the learner's prints do
    except Exception:
        device = torch.device("cpu")
    namespace = {"__name__": "__main__", "__builtins__": builtins, "torch": torch, "nn": nn, "F": F,
                 "cu": course_utils, "course_utils": course_utils, "math": math, "device": device,
                 "display": lambda *args, **kwargs: None}
    if numpy is not None:
        namespace["np"] = numpy
    return namespace


def main(channel: int, job: Job, pristine: Optional[Pristine] = None) -> None:
    """Grade one submission's answer cells (``job``: the cells, the exercises to check, the limits and the run's HMAC
    key), reporting on the pipe ``channel``; the process ends here. ``pristine`` is the state to start from, made by the
    fork server (:func:`pristine_state`); else it is made here. The cells run in order; each exercise of ``check`` is
    checked right after its last cell (one without cells, at the end), as :mod:`.messages` describes."""
    send = _sender(channel, job.key)
    killpg = os.killpg  # its own reference, as send's (see _sender)
    try:
        _isolate(job.memory_mb)
        os.environ[modes.MODE_ENV] = modes.ASSESSED if job.assessed else ""   # as the grader runs
        run = _Run(job, send, pristine)
        send(ReadyMessage(os.getpid()))
        run.cells_and_checks()
        send(DoneMessage())
        killpg(0, signal.SIGKILL)  # end with whatever the learner's code started (own group, see _isolate)
    except BaseException as e:  # the grader's own limits or bugs (learner code is contained in _Run)
        try:
            message = text_of(e) if type(e) is GraderLimit else f"{type_name(e)}: {safe_repr(text_of(e), 200)}"
            send(ErrorMessage(message))
        except BaseException:
            pass
        os._exit(3)
    os._exit(0)  # skip interpreter shutdown: the learner's threads and atexit hooks do not run


def _sender(channel: int, key: bytes) -> Callable[[Message], None]:
    """``send(message)``: sign a message and write it to the grader's channel, on a line of its own.
    Made before any learner code runs, it holds its own references to what it calls: learner code
    cannot rebind them (rebinding module globals is detected, but only after the cell)."""
    write, signed, framed = os.write, sign, frame

    def send(message: Message) -> None:
        data = framed(signed(key, message))
        while data:
            data = data[write(channel, data):]

    return send


class _Run:
    """One submission in this worker (``job``: what :func:`main` was given; ``send``: :func:`_sender`'s): its answer
    cells in order, each exercise checked after its last cell, the integrity of what the checks rely on verified after
    each (see :func:`main`)."""

    def __init__(self, job: Job, send: Callable[[Message], None], pristine: Optional[Pristine] = None) -> None:
        self.job, self.send = job, send
        self.look, self.leave = verify, os._exit  # its own references, as send's
        self.namespace, self.guard, self.start, self.snap = pristine or pristine_state()
        self.cell_errors: dict[str, CellFailure] = {}  # exercise -> the error of its answer cells that counts

    def cells_and_checks(self) -> None:
        """Run the job's cells in order, checking each exercise of its ``check`` after its last cell;
        then check those that had no cell (the check says what is missing)."""
        cells = [AnswerCell(*c) for c in self.job.cells]
        to_check = list(self.job.check)
        last = {cell.exercise: position for position, cell in enumerate(cells)}
        for position, cell in enumerate(cells):
            self.run_cell(cell)
            if last[cell.exercise] == position and cell.exercise in to_check:
                to_check.remove(cell.exercise)
                self.check(cell.exercise)
        for ex_id in to_check:
            self.check(ex_id)

    def run_cell(self, cell: AnswerCell) -> None:
        """Run one cell (:func:`run_cell`), verify, and report how it ended."""
        self.send(StageMessage(Stage.CELL, cell.exercise, cell.index))
        before = set(self.namespace)
        with self.guard.running(cell.exercise, checking=False):
            error = run_cell(cell.source, f"<answer cell {cell.exercise}>", self.namespace, self.job.cell_timeout,
                             self.job.memory_mb, self.guard)
        freed: list[bool] = []
        self.intact(lambda: (_forget(self.namespace, before), freed.append(True)))
        if freed:  # it left so much memory in use that checking needed it back
            error = CellFailure(CellError.MEMORY, f"Your answer cell left so much memory in use (the limit is "
                                                  f"{self.job.memory_mb} MB) that it could not be graded.")
        if error and (cell.exercise not in self.cell_errors or error.kind in FATAL_CELL_ERRORS):
            self.cell_errors[cell.exercise] = error
        self.send(CellMessage(cell.index, cell.exercise, error))

    def check(self, ex_id: str) -> None:
        """Check one exercise (:func:`check_answer`), verify, and report its result."""
        self.send(StageMessage(Stage.CHECK, ex_id))
        result = check_answer(ex_id, self.namespace, self.cell_errors.get(ex_id), self.guard, self.start,
                              self.job.check_timeout)
        self.intact()  # before sending: a check run under patched code proves nothing
        self.send(result)

    def intact(self, free: Callable[[], Any] = lambda: None) -> None:
        """End the run with a ``tampered`` report if anything the checks rely on changed (``free``: see
        :func:`course_utils.classroom.sandbox.integrity.verify`)."""
        changed = self.look(self.snap, free)
        if changed:
            try:
                self.send(TamperedMessage(changed))
            finally:
                self.leave(TAMPERED_EXIT)


#: What a run starts from: (namespace, guard, PyTorch's settings, snapshot), see :func:`pristine_state`.
Pristine = tuple[dict, ReferenceGuard, list[Any], Snapshot]


def pristine_state() -> Pristine:
    """What a run starts from, before any learner code: the notebook's namespace (after its ``cu.setup()``), the
    reference guard installed on it, PyTorch's settings and the snapshot of what must not change."""
    torch.set_num_threads(1)  # the same arithmetic whatever --jobs is: deterministic grades
    namespace = notebook_namespace()
    guard = ReferenceGuard(namespace)
    guard.install()
    return namespace, guard, torch_settings(), take_snapshot()
