"""Running one submission: the fork server, a run's supervisor and worker, and the watch kept on
them (time, memory, process count, stopped or lost processes) until every process the run started
is gone. See :mod:`course_utils.classroom` for the design."""
from __future__ import annotations

import atexit
import contextlib
import math
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ... import modes
from . import processes as procs
from ..reading.cells import AnswerCell
from .messages import (TAMPERED_EXIT, CellMessage, DoneMessage, End, ErrorMessage, Job, Message, ReadyMessage,
                       ResultMessage, Stage, StageMessage, TamperedMessage, read_status, unsign)


#: Seconds a worker may take to start (fork, limits, snapshot) before learner code runs.
STARTUP_LIMIT = 120.0
#: Seconds between two looks at a run's processes (stopped, memory, count, gone).
WATCH_INTERVAL = 0.25
#: A cell or check still running this long after its own time limit (seconds, plus a quarter of the
#: limit) could not be stopped from inside the worker: the run is stopped, so that one such cell costs
#: about its own limit of the submission's time, not all of it.
STAGE_GRACE = 2.0
#: A run with more learner processes than this at once is stopped (a fork bomb).
MAX_PROCESSES = 64
MAX_MESSAGE = 2**20


@dataclass(frozen=True)
class Limits:
    """Resource limits for one submission."""

    timeout: float = 60.0        # wall-clock seconds for a worker run, from when it is ready to run learner code
    cell_timeout: float = 30.0   # each answer cell's top-level code (lesson-07 answers that time or plot take > 10 s)
    check_timeout: float = 20.0  # each check (the timeout of course_utils.check)
    memory_mb: int = 4096        # what learner code may allocate (RLIMIT_DATA), on top of what PyTorch holds before


class ForkServer:
    """A ``python`` process that has imported PyTorch once and, per run, forks a supervisor that forks a fresh worker
    (:func:`course_utils.classroom.sandbox.forkserver.serve`). It leads a session of its own, and exits, killing every
    process it started, when this closes (or when the thread that started it ends)."""

    def __init__(self) -> None:
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(os.environ)  # make sure the server imports this very course_utils
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["PYTHONHASHSEED"] = "0"  # the same set and dict orders in every batch: the same feedback
        code = f"from course_utils.classroom.sandbox.forkserver import serve; serve({theirs.fileno()})"
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
        """Ask for a worker that reads its job from, and reports on, these pipe ends (OSError: the server has gone)."""
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


_SERVER: Optional[ForkServer] = None
_SERVER_LOCK = threading.Lock()


def fork_server(cancelled: Optional[threading.Event] = None) -> ForkServer:
    """The fork server, started on first use (and again if it died); RuntimeError when ``cancelled`` is set (the
    grading it is for was interrupted: start no more workers)."""
    global _SERVER
    with _SERVER_LOCK:
        if cancelled is not None and cancelled.is_set():
            raise RuntimeError("grading was interrupted")
        if _SERVER is None or not _SERVER.alive():
            if _SERVER is not None:
                _SERVER.close()
            _SERVER = ForkServer()
            atexit.register(_SERVER.close)
        return _SERVER


def stop_server() -> None:
    """Stop the fork server now, killing the workers still running."""
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is not None:
            _SERVER.close()
            _SERVER = None


@dataclass
class Run:
    """What one worker run sent (:mod:`course_utils.classroom.sandbox.messages`), and how it ended."""

    messages: list[Message] = field(default_factory=list)
    end: Optional[End] = None  # None until it has ended
    ready: bool = False
    exitcode: Optional[int] = None  # negative: killed by that signal; None: unknown
    session: Optional[int] = None  # the run's supervisor: its pid, and the id of its session
    worker: Optional[int] = None  # the worker's pid, and the id of its process group
    supervisor_lost: bool = False  # the supervisor ended without a report (learner code killed it)


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to the pipe ``fd`` and close it (in a thread: the worker reads it when it starts)."""
    with contextlib.suppress(OSError), os.fdopen(fd, "wb") as f:
        f.write(data)  # OSError: the worker died before reading its job; the run reports that


def _remove_folder(path: str) -> None:
    """Delete a run's temporary folder, even if learner code made parts of it read-only."""
    def retry(function: Callable, name: str, *_: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), 0o700)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, 0o700)
                shutil.rmtree(name, ignore_errors=True)
            else:
                os.unlink(name)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)


def run_worker(cells: list[AnswerCell], check: list[str], limits: Limits,
               cancelled: Optional[threading.Event] = None) -> Run:
    """Run one worker to its end, collecting its signed messages (see :func:`_run_once`). A run that never reached
    learner code (the fork server was killed or broken, e.g. by another submission) is tried once more, with a fresh
    server if the old one has gone. Neither starts once ``cancelled`` (the grading's) is set."""
    run = _run_once(cells, check, limits, cancelled)
    if not run.ready and not run.messages and not (cancelled is not None and cancelled.is_set()):
        run = _run_once(cells, check, limits, cancelled)
    return run


def _run_once(cells: list[AnswerCell], check: list[str], limits: Limits, cancelled: Optional[threading.Event]) -> Run:
    """Run one worker to its end, collecting its signed messages; then kill every process the run started and remove
    its temporary folder. While it waits, every :data:`WATCH_INTERVAL` seconds it looks at the run's processes
    (:func:`course_utils.classroom.sandbox.processes.run_processes`): it resumes the fork server or the run's
    supervisor if learner code stopped them (``SIGSTOP``), and kills the run when it has more than
    :data:`MAX_PROCESSES` processes, or when they together hold more than ``limits.memory_mb`` on top
    of what the worker held when it became ready (:func:`course_utils.classroom.sandbox.processes.run_memory`:
    shared memory included, which each process's ``RLIMIT_DATA`` does not count)."""
    key, run = secrets.token_bytes(32), Run()
    tmp = tempfile.mkdtemp(prefix="course-grade-")
    job_r, job_w = os.pipe()
    channel_r, channel_w = os.pipe()
    status_r, status_w = os.pipe()
    server: Optional[ForkServer] = None
    try:
        try:
            server = fork_server(cancelled)
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
            run.end = End.EXIT
            return run
        job = Job(key, tuple(cells), tuple(check), limits.cell_timeout, limits.check_timeout, limits.memory_mb, tmp,
                  modes.assessed())   # the grader's mode when it starts the run, not the server's
        threading.Thread(target=_write_all, args=(job_w, job.to_json()), daemon=True).start()
        _Follower(run, key, channel_r, status_r, server, limits).follow()
        if not run.end and run.ready and run.exitcode == TAMPERED_EXIT:  # its report could not arrive
            run.end = End.TAMPERED
        run.end = run.end or End.EXIT
    finally:
        _end_run(run, everything=True)
        for fd in (channel_r, status_r):
            os.close(fd)
        _remove_folder(tmp)
    return run


class _Follower:
    """Reads a run's channel and status pipes into its :class:`Run`, and keeps watch on its processes,
    until it has ended (see :func:`_run_once`)."""

    def __init__(self, run: Run, key: bytes, channel_r: int, status_r: int, server: ForkServer, limits: Limits) -> None:
        self.run, self.key, self.server, self.limits = run, key, server, limits
        self.channel, self.status = channel_r, status_r
        self.pending = {channel_r: b"", status_r: b""}  # open pipe ends -> incomplete last line
        self.deadline = time.monotonic() + STARTUP_LIMIT
        self.stage_deadline = math.inf  # when the current cell or check is given up on
        self.baseline: Optional[int] = None  # the worker's private memory when it became ready
        self.gone = False  # the worker is no longer among the run's processes

    def follow(self) -> None:
        """Read and watch until the run has ended, or its time (or the current stage's) is up."""
        run = self.run
        grace: Optional[float] = None  # once the worker has ended: how long to wait for the last lines
        next_watch, swept = 0.0, False
        while True:
            now = time.monotonic()
            messages_over = bool(run.end) or self.channel not in self.pending
            if self.status not in self.pending and run.exitcode is None and run.session is not None:
                run.supervisor_lost = True
            if messages_over and (run.exitcode is not None or self.status not in self.pending):
                return
            worker_over = run.exitcode is not None or self.gone or run.supervisor_lost
            if worker_over and not messages_over and not swept:
                _end_run(run, everything=False)  # what it started may hold the channel open
                swept = True
            if grace is None and (messages_over or worker_over):
                grace = now + 2.0
            if grace is not None and now >= grace:
                return
            if now >= min(self.deadline, self.stage_deadline):
                if not worker_over:
                    run.end = run.end or (End.TIMEOUT if now >= self.deadline else End.STUCK)
                return
            if now >= next_watch:
                next_watch = now + WATCH_INTERVAL
                self.watch()
                continue
            self.read(min(self.deadline, self.stage_deadline, next_watch, grace or math.inf) - now)

    def read(self, timeout: float) -> None:
        """Wait up to ``timeout`` for lines on the open pipes and take them in."""
        poller = select.poll()  # not select(): no limit on descriptor numbers
        for fd in self.pending:
            poller.register(fd, select.POLLIN)
        for fd, _ in poller.poll(max(timeout, 0) * 1000):
            chunk = os.read(fd, 65536)
            if not chunk:  # closed: the worker has ended (or the server has)
                del self.pending[fd]
                continue
            *lines, rest = (self.pending[fd] + chunk).split(b"\n")
            self.pending[fd] = rest[-MAX_MESSAGE:]
            for line in lines:
                if fd == self.status:
                    self.take_status(line)
                else:
                    self.take_message(line)

    def take_status(self, line: bytes) -> None:
        """Take in a line of the status pipe (:func:`course_utils.classroom.sandbox.messages.read_status`)."""
        session, exitcode = read_status(line)
        if session is not None and self.run.session is None:
            self.run.session, self.run.worker = session
        elif exitcode is not None and self.run.exitcode is None:
            self.run.exitcode = exitcode

    def take_message(self, line: bytes) -> None:
        """Take in a line of the channel: a signed message, or else nothing."""
        run = self.run
        message = unsign(self.key, line)
        if message is None:  # not from the worker, or mangled: ignored
            return
        run.messages.append(message)
        if isinstance(message, StageMessage):
            limit = self.limits.cell_timeout if message.stage == Stage.CELL else self.limits.check_timeout
            self.stage_deadline = time.monotonic() + 1.25 * limit + STAGE_GRACE
        elif isinstance(message, (CellMessage, ResultMessage)):
            self.stage_deadline = math.inf
        if isinstance(message, ReadyMessage) and not run.ready:
            run.ready, self.deadline = True, time.monotonic() + self.limits.timeout
            # The worker's own pid, from its signed message: the supervisor's session line may come later.
            self.baseline = procs.run_memory([message.pid])
        elif isinstance(message, (DoneMessage, TamperedMessage, ErrorMessage)) and not run.end:
            run.end = End(message.kind)

    def watch(self) -> None:
        """Resume the server and the supervisor if stopped; note a worker that has gone; enforce the
        process count and the memory limit on the run's processes together."""
        run = self.run
        procs.resume_if_stopped(self.server.pid)  # learner code may stop the server: every run resumes it
        if run.session is None:
            return
        table = procs.process_table()
        if not table:  # no /proc: nothing more to see
            return
        supervisor = table.get(run.session)
        if supervisor is not None and supervisor.state == "T":
            procs.resume_if_stopped(run.session)
        learner = procs.run_processes(table, run.session, run.worker) - {run.session}
        self.gone = run.worker not in learner
        if run.ready and not run.end and len(learner) > MAX_PROCESSES:
            run.end = End.PROCESSES
            _end_run(run, everything=False)
        if (run.ready and not run.end and self.baseline is not None
                and procs.run_memory(learner) > self.baseline + (self.limits.memory_mb << 20)):
            run.end = End.MEMORY
            _end_run(run, everything=False)


def _end_run(run: Run, everything: bool) -> None:
    """Kill the processes of a run: the learner's (its worker's group, its supervisor's session, and
    what the supervisor adopted) and, with ``everything``, the supervisor itself."""
    session, worker = run.session, run.worker
    if session is None:
        return
    if worker is not None:
        with contextlib.suppress(OSError):
            os.killpg(worker, signal.SIGKILL)

    def left() -> set[int]:
        found = procs.run_processes(procs.process_table(), session, worker)
        return found if everything else found - {session}

    procs.kill_until_gone(left)


def grader_error(run: Run) -> Optional[str]:
    """What the grader's failure was, as the run's last message (:class:`ErrorMessage`) says; else ``None``."""
    last = run.messages[-1] if run.messages else None
    return last.message if isinstance(last, ErrorMessage) else None


def how_it_ended(run: Run, limits: Limits) -> tuple[str, str]:
    """(What the process did, as a phrase; a short event name for the summary)."""
    if run.end == End.TIMEOUT:
        return (f"ran past the time limit ({limits.timeout:g} s for the whole submission) and was stopped", "timed out")
    if run.end == End.STUCK:
        return (f"ran well past its own time limit ({limits.cell_timeout:g} s for a cell, {limits.check_timeout:g} s "
                "for a check) without stopping, and was stopped", "timed out")
    if run.end == End.MEMORY:
        return (f"used more than {limits.memory_mb} MB of memory together with the processes it started, "
                "and was stopped", "out of memory")
    if run.end == End.PROCESSES:
        return f"started more than {MAX_PROCESSES} processes at once, and was stopped", "too many processes"
    if run.end == End.ERROR:
        return f"could not be run by the grader ({grader_error(run)})", "grader error"
    code = run.exitcode
    if code is None:
        lost = " (the process supervising it was killed)" if run.supervisor_lost else ""
        return f"ended unexpectedly{lost}", "stopped"
    if code < 0:
        if -code == signal.SIGKILL:
            return ("was killed (SIGKILL): it ran out of memory or killed its own process", "killed")
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"crashed the Python process ({name})", "crashed"
    return f"ended the Python process (exit code {code})", "exited"
