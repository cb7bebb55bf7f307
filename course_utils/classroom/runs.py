"""Running one submission: the fork server, a run's supervisor and worker, and the watch kept on
them (time, memory, process count, stopped or lost processes) until every process the run started
is gone. See :mod:`course_utils.classroom` for the design."""
from __future__ import annotations

import atexit
import json
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

from . import processes as procs
from .messages import TAMPERED_EXIT, unsign


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



class _ForkServer:
    """A ``python`` process that has imported PyTorch once and, per run, forks a supervisor that forks
    a fresh worker (:func:`course_utils.classroom.worker.serve`). It leads a session of its own, and
    exits, killing every process it started, when this closes (or when the thread that started it
    ends)."""

    def __init__(self) -> None:
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = dict(os.environ)  # make sure the server imports this very course_utils
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["PYTHONHASHSEED"] = "0"  # the same set and dict orders in every batch: the same feedback
        code = f"from course_utils.classroom.worker import serve; serve({theirs.fileno()})"
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
CANCELLED = threading.Event()  # set when a batch is interrupted: start no more workers


def fork_server() -> _ForkServer:
    """The fork server, started on first use (and again if it died)."""
    global _SERVER
    with _SERVER_LOCK:
        if CANCELLED.is_set():
            raise RuntimeError("grading was interrupted")
        if _SERVER is None or not _SERVER.alive():
            if _SERVER is not None:
                _SERVER.close()
            _SERVER = _ForkServer()
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
class _Run:
    """What one worker run sent, and how it ended."""

    messages: list[dict] = field(default_factory=list)
    #: "done", "tampered", "error" (as the worker reported; "tampered" also from its exit status),
    #: "timeout", "stuck" (a cell or check ran well past its own limit), "memory", "processes"
    #: (killed here) or "exit" (it ended by itself)
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


def run_worker(cells: list[tuple[int, str, str]], check: list[str], limits: Limits) -> _Run:
    """Run one worker to its end, collecting its signed messages (see :func:`_run_once`).

    A run that never reached learner code (the fork server was killed or broken, e.g. by another
    submission) is tried once more, with a fresh server if the old one has gone: no learner code
    ran, so the outcome cannot depend on it.
    """
    run = _run_once(cells, check, limits)
    if not run.ready and not run.messages and not CANCELLED.is_set():
        run = _run_once(cells, check, limits)
    return run


def _run_once(cells: list[tuple[int, str, str]], check: list[str], limits: Limits) -> _Run:
    """Run one worker to its end, collecting its signed messages; then kill every process the run
    started and remove its temporary folder.

    While it waits, every :data:`WATCH_INTERVAL` seconds it looks at the run's processes
    (:func:`course_utils.classroom.processes.run_processes`): it resumes the fork server or the run's
    supervisor if learner code stopped them (``SIGSTOP``), and kills the run when it has more than
    :data:`MAX_PROCESSES` processes, or when they together hold more than ``limits.memory_mb`` on top
    of what the worker held when it became ready (:func:`course_utils.classroom.processes.run_memory`:
    shared memory included, which each process's ``RLIMIT_DATA`` does not count).
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
            server = fork_server()
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
        if not run.end and run.ready and run.exitcode == TAMPERED_EXIT:  # its report could not arrive
            run.end = "tampered"
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
    stage_deadline = math.inf  # when the current cell or check is given up on
    gone = swept = False

    def take(fd: int, line: bytes) -> None:
        """Take in one line from the status pipe or the channel."""
        nonlocal deadline, baseline, stage_deadline
        if fd == status_r:  # "session S W", then "exit N" or "signal N" once the supervisor reaped W
            words = line.decode(errors="replace").split()
            if len(words) == 3 and words[0] == "session" and words[1].isdigit() and words[2].isdigit():
                if run.session is None:
                    run.session, run.worker = int(words[1]), int(words[2])
            elif len(words) == 2 and words[0] in ("exit", "signal") and words[1].isdigit():
                if run.exitcode is None:
                    run.exitcode = int(words[1]) if words[0] == "exit" else -int(words[1])
            return
        message = unsign(key, line)
        if message is None:  # not from the worker, or mangled: ignored
            return
        run.messages.append(message)
        if message["t"] == "stage":
            limit = limits.cell_timeout if message.get("stage") == "cell" else limits.check_timeout
            stage_deadline = time.monotonic() + 1.25 * limit + STAGE_GRACE
        elif message["t"] in ("cell", "result"):
            stage_deadline = math.inf
        if message["t"] == "ready" and not run.ready:
            run.ready, deadline = True, time.monotonic() + limits.timeout
            baseline = procs.run_memory([run.worker]) if run.worker else None
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
            pending[fd] = rest[-MAX_MESSAGE:]
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
        if run.ready and not run.end and baseline is not None:
            used = procs.run_memory(learner)
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
        if now >= min(deadline, stage_deadline):
            if not worker_over:
                run.end = run.end or ("timeout" if now >= deadline else "stuck")
            return
        if now >= next_watch:
            next_watch = now + WATCH_INTERVAL
            watch()
            continue
        read(min(deadline, stage_deadline, next_watch, grace or math.inf) - now)


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


def how_it_ended(run: _Run, limits: Limits) -> tuple[str, str]:
    """(What the process did, as a phrase; a short event name for the summary)."""
    if run.end == "timeout":
        return (f"ran past the time limit ({limits.timeout:g} s for the whole submission) and was stopped",
                "timed out")
    if run.end == "stuck":
        return (f"ran well past its own time limit ({limits.cell_timeout:g} s for a cell, {limits.check_timeout:g} s "
                "for a check) without stopping, and was stopped", "timed out")
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
