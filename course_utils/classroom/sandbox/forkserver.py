"""The grader's fork server: it forks a supervisor per run, which forks the worker (:mod:`.worker`) and outlives it.

Private to :mod:`course_utils.classroom`, whose docstring describes the design and the threat model; the grader
starts the server (:func:`.runs.fork_server`) and talks to it over a socket. Importing this
module imports the worker, and with it PyTorch and every course module, once: where no GPU is, :func:`serve` also
makes the state each run starts from (:func:`~course_utils.classroom.sandbox.worker.pristine_state`) once, and every run
forks a copy of it. A run never comes from another submission's process.

Per run, the grader passes three pipes: the job (read by the worker), the channel (the worker's signed messages)
and the status, on which the run's supervisor writes ``session S W`` (its pid and the worker's), then ``exit N``
or ``signal N`` once it has reaped the worker."""
from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import socket
import time
import warnings
from typing import Optional

from course_utils.classroom.sandbox import processes as procs
from course_utils.classroom.sandbox import worker  # as a module: the worker imports every course module, this one too
from course_utils.classroom.sandbox.messages import Job, exit_line, session_line

__all__ = ["serve"]


def _child(job_fd: int, channel_fd: int, status_fd: int, pristine: Optional[worker.Pristine]) -> None:
    """The run's supervisor, forked by :func:`serve`: it forks the worker and outlives it. Never returns. It leads a
    new session and is a subreaper, so every process the learner's code starts stays in its session or is adopted by
    it (a double-forked daemon). It reports ``session <its pid> <worker pid>`` on the status pipe, waits for the
    worker, kills everything left below itself, then reports ``exit N`` or ``signal N``. Learner code that stops or
    kills its parent reaches this supervisor, not the fork server: the grader resumes it, or does without its report."""
    try:
        os.setsid()
        procs.prctl(procs.PR_SET_CHILD_SUBREAPER, 1)
        procs.prctl(procs.PR_SET_DUMPABLE, 0)  # learner code cannot open its pipes or ptrace it
        child = os.fork()
        if child == 0:  # the worker: read the job (with its key), then grade it
            try:
                os.close(status_fd)
                # Ctrl-C is the grader's (this process has its own session): a SIGINT here can only
                # come from learner code (os.kill, _thread.interrupt_main), which must not interrupt
                # the grader's own code between two steps.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                with os.fdopen(job_fd, "rb") as f:
                    job = Job.from_json(f.read())
                os.environ["COURSE_GRADE_TMP"] = job.tmp  # for the worker's isolation
            except BaseException:
                os._exit(4)
            worker.main(channel_fd, job, pristine)
        os.close(job_fd)
        os.close(channel_fd)
        _write_status(status_fd, session_line(os.getpid(), child))
        status = procs.supervise(child, status_fd)
        if status is not None:
            _write_status(status_fd, exit_line(status), close=True)
    except BaseException:
        pass
    os._exit(0)


def serve(control_fd: int) -> None:
    """Fork server loop: for each request on the control socket (1 byte carrying the job, channel and status pipes),
    fork a supervisor that forks the worker (:func:`_child`). Returns, killing every process it started, when the grader
    closes the socket. The server is a subreaper too: a learner's process whose supervisor was killed is adopted here
    and killed. While runs are going, it resumes the grader if learner code stopped it (and the grader the server)."""
    control = socket.socket(fileno=control_fd)
    pristine = _become_server()
    me = os.getpid()
    try:
        _serve_requests(control, pristine)
    finally:
        procs.kill_until_gone(lambda: procs.below(me), reap=True)


def _become_server() -> Optional[worker.Pristine]:
    """Make this process the fork server: signals, its place among the processes, and the state every run
    starts from (``None`` where a GPU is: each run makes its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle; it then closes the socket
    warnings.filterwarnings("ignore", message=".*fork", category=DeprecationWarning)  # torch's idle thread
    procs.prctl(procs.PR_SET_CHILD_SUBREAPER, 1)
    procs.prctl(procs.PR_SET_DUMPABLE, 0)  # learner code cannot ptrace it to tamper with later workers
    procs.prctl(procs.PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the grader, even while stopped
    # Where no accelerator has to start, every run forks a copy of one pristine state (its own would cost it about
    # 40 ms); where a GPU is, each run makes its own after CUDA's start-up, which must never happen in the server.
    pristine: Optional[worker.Pristine] = None
    if worker.no_accelerator():
        with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):  # cu.setup()'s banner
            pristine = worker.pristine_state()
    gc.freeze()  # what every run inherits: their collections need not visit (and copy) it
    return pristine


def _serve_requests(control: socket.socket, pristine: Optional[worker.Pristine]) -> None:
    """Fork a supervisor per request on ``control`` until the grader closes it; meanwhile reap them, resume the
    grader if it was stopped and kill the orphans adopted here (see :func:`serve`)."""
    grader, me = os.getppid(), os.getpid()
    supervisors: set[int] = set()
    next_look = busy_until = 0.0
    while True:
        now = time.monotonic()
        timeout = 0.05 if supervisors else (1.0 if now < busy_until else None)
        readable, _, _ = select.select([control], [], [], timeout)
        supervisors.difference_update(procs.reap_children())  # the supervisors (and adopted orphans) that ended
        now = time.monotonic()
        if supervisors:
            procs.resume_if_stopped(grader)
            busy_until = now + 5.0
        if now < busy_until and now >= next_look:  # adopted orphans (their supervisor was killed)
            next_look = now + 0.25
            orphans = {p.pid for p in procs.process_table().values() if p.ppid == me and p.state not in "ZX"}
            procs.signal_all(orphans - supervisors)
        if readable and not _fork_supervisor(control, pristine, supervisors):
            return


def _fork_supervisor(control: socket.socket, pristine: Optional[worker.Pristine], supervisors: set[int]) -> bool:
    """Take one request from ``control`` and fork its supervisor (:func:`_child`), noted in ``supervisors``; a
    request without its three pipes is dropped. Returns ``False`` when the grader has closed the socket."""
    message, fds, _, _ = socket.recv_fds(control, 1, 3)
    if not message:
        return False
    if len(fds) == 3:
        pid = os.fork()
        if pid == 0:
            control.close()
            _child(*fds, pristine)
        supervisors.add(pid)
    for fd in fds:
        os.close(fd)
    return True


def _write_status(fd: int, line: bytes, close: bool = False) -> None:
    """Write one line (:func:`~course_utils.classroom.sandbox.messages.session_line`, :func:`~course_utils.classroom.
    messages.exit_line`) to the grader's status pipe (and close it); a closed pipe is not an error."""
    with contextlib.suppress(OSError):  # the grader stopped listening
        os.write(fd, line)
    if close:
        os.close(fd)
