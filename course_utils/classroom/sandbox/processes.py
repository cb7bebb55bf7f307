"""Process control for ``python -m course_utils grade``: ``/proc`` and ``prctl`` on Linux.

Private to :mod:`course_utils.classroom` (the grader) and :mod:`course_utils.classroom.sandbox.worker` (its fork server
and each run's supervisor). With these they find every process a submission started, whichever process group or session
it moved to; measure the memory of all of them together; resume a grading process that learner code stopped
(``SIGSTOP``); and kill them all. Nothing here runs learner code.

Without ``/proc`` (macOS) :func:`process_table` is empty and :func:`prctl` does nothing, so grading falls back to
killing process groups, and the memory limit is the per-process ``RLIMIT_DATA`` only."""
from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Optional

#: ``prctl`` options (``<linux/prctl.h>``).
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


@lru_cache(maxsize=None)
def _libc() -> Optional[ctypes.CDLL]:
    """The C library, on Linux; ``None`` elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - a static Python
        return None


def prctl(option: int, value: int) -> bool:
    """Call Linux ``prctl(option, value)``; ``False`` where it is unavailable or refused."""
    libc = _libc()
    if libc is None:
        return False
    try:
        return libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0),
                          ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0
    except (AttributeError, ctypes.ArgumentError):  # pragma: no cover - no prctl symbol
        return False


@dataclass(frozen=True)
class Proc:
    """One line of the process table: ids and state (``R``, ``S``, ``T`` stopped, ``Z`` zombie...)."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str


def read_proc(pid: int) -> Optional[Proc]:
    """The process ``pid`` from ``/proc/<pid>/stat``, or ``None`` if it does not exist (or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0].decode())
    except (IndexError, ValueError):
        return None


def process_table() -> dict[int, Proc]:
    """Every process this user can see, by pid (empty without ``/proc``)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    found = (read_proc(int(name)) for name in names if name.isdigit())
    return {proc.pid: proc for proc in found if proc is not None}


def descendants(table: dict[int, Proc], root: int) -> set[int]:
    """Pids of every process below ``root`` in ``table`` (not ``root`` itself)."""
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found and child != root:
                found.add(child)
                todo.append(child)
    return found


def run_processes(table: dict[int, Proc], session: int, worker: Optional[int]) -> set[int]:
    """The live processes of one grading run: everything in the supervisor's ``session`` or the
    worker's process group, and everything below the supervisor (a subreaper, so it adopts the
    orphans that left both) or below the worker. Includes the supervisor; zombies are left out."""
    pids = descendants(table, session) | {p.pid for p in table.values() if p.sid == session}
    if worker is not None:
        pids |= descendants(table, worker) | {p.pid for p in table.values() if p.pgid == worker} | {worker}
    return _alive(pids, table)


def _alive(pids: Iterable[int], table: dict[int, Proc]) -> set[int]:
    """The pids in ``pids`` whose process is in ``table`` and not a zombie."""
    return {pid for pid in pids if pid in table and table[pid].state not in "ZX"}


def private_memory(pid: int) -> Optional[int]:
    """Bytes of memory that only ``pid`` holds (private pages, and swap: a fork costs nothing until it writes), from
    ``/proc/<pid>/smaps_rollup`` (Linux 4.14+); ``None`` where that cannot be read."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    total = 0
    for line in lines:
        if line.startswith((b"Private_Clean:", b"Private_Dirty:", b"Swap:")):
            with contextlib.suppress(IndexError, ValueError):
                total += int(line.split()[1]) << 10
    return total


def memory_of(pid: int) -> int:
    """What ``pid`` costs in memory: :func:`private_memory`, else (a process that made itself
    unreadable) its whole resident size, shared pages included; 0 once it has gone."""
    private = private_memory(pid)
    if private is not None:
        return private
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


#: Above this much resident shared memory (``RssShmem``), a process's mappings are read one by one.
SHMEM_DETAIL = 8 << 20
#: Paths of the mappings that are shared memory rather than files: ``mmap(-1, n)`` (anonymous and shared, as
#: ``multiprocessing`` and PyTorch's ``share_memory_()`` make), POSIX and System V shared memory, ``memfd_create``.
_SHMEM_PATHS = (b"/dev/zero", b"/dev/shm/", b"/SYSV", b"/memfd:", b"/anon_hugepage")


def _shmem_resident(pid: int) -> int:
    """Bytes of shared memory ``pid`` maps and holds (``RssShmem``; 0 if unreadable)."""
    with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{pid}/status", "rb") as f:
        for line in f:
            if line.startswith(b"RssShmem:"):
                return int(line.split()[1]) << 10
    return 0


def _mappings(pid: int) -> Optional[tuple[int, dict[tuple[bytes, bytes], int]]]:
    """From ``/proc/<pid>/smaps``: the bytes only ``pid`` holds outside shared memory, and each shared
    memory object it maps (by device and inode) with the bytes it holds of it; ``None`` if unreadable."""
    try:
        with open(f"/proc/{pid}/smaps", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    private, shared = 0, {}
    key: Optional[tuple[bytes, bytes]] = None
    for line in lines:
        fields = line.split()
        if not fields:
            continue
        if not fields[0].endswith(b":"):   # a mapping's header: address perms offset dev inode [path]
            path = fields[5] if len(fields) > 5 else b""
            key = (fields[3], fields[4]) if len(fields) > 4 and path.startswith(_SHMEM_PATHS) else None
            continue
        try:
            size = int(fields[1]) << 10
        except (IndexError, ValueError):
            continue
        if key is not None and fields[0] in (b"Rss:", b"Swap:"):
            shared[key] = shared.get(key, 0) + size
        elif key is None and fields[0] in (b"Private_Clean:", b"Private_Dirty:", b"Swap:"):
            private += size
    return private, shared


def run_memory(pids: Iterable[int]) -> int:
    """What a run's processes hold together: each one's :func:`memory_of`, and shared memory counted
    once, however many of them map it. ``RLIMIT_DATA`` does not count shared mappings, so one
    process that maps gigabytes with ``mmap`` is caught here. A process holding little shared
    memory (under :data:`SHMEM_DETAIL`) is measured cheaply, from ``smaps_rollup``."""
    total, shared = 0, {}
    for pid in pids:
        detail = _mappings(pid) if _shmem_resident(pid) >= SHMEM_DETAIL else None
        if detail is None:
            total += memory_of(pid)
            continue
        total += detail[0]
        for key, size in detail[1].items():
            shared[key] = max(shared.get(key, 0), size)
    return total + sum(shared.values())


def resume_if_stopped(pid: Optional[int]) -> bool:
    """Send ``SIGCONT`` to ``pid`` if it is stopped (``T``); True if it was."""
    proc = read_proc(pid) if pid else None
    if proc is None or proc.state != "T":
        return False
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        return False
    return True


def signal_all(pids: Iterable[int], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to each pid, ignoring those that have gone."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def kill_until_gone(find: Callable[[], set[int]], seconds: float = 5.0, reap: bool = False) -> bool:
    """``SIGKILL`` what ``find()`` returns, again and again, until it returns nothing (a process can fork between one
    look and the kill); True when nothing was left within ``seconds``. ``reap`` also waits for this process's dead
    children."""
    deadline, delay = time.monotonic() + seconds, 0.0
    while True:
        if reap:
            reap_children()
        pids = find()
        if not pids:
            return True
        if time.monotonic() >= deadline:
            return False
        signal_all(pids)
        time.sleep(delay)
        delay = min(0.05, delay + 0.005)


def reap_children() -> dict[int, int]:
    """Wait for every child of this process that has ended (without blocking): their wait statuses, by pid."""
    reaped = {}
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped[pid] = code


def below(root: int) -> set[int]:
    """The live (not zombie) processes below ``root``, from a fresh look at ``/proc``."""
    table = process_table()
    return _alive(descendants(table, root), table)


def supervise(worker: int, report_fd: int) -> Optional[int]:
    """Wait until the child ``worker`` ends, then kill every process left below this one; returns the worker's wait
    status, or ``None`` when the grader went away first. ``report_fd`` is the write end of the pipe the grader reads:
    when the grader closes it (it gave up on the run, or died) the worker is killed at once. Runs in a subreaper: the
    orphans of anything the worker started (double-forked daemons too) are adopted here and killed with the rest."""
    poller = select.poll()
    poller.register(report_fd, 0)  # POLLERR (no reader left) is always reported
    try:
        worker_fd: Optional[int] = os.pidfd_open(worker)  # readable when the worker ends (Linux 5.3+)
        poller.register(worker_fd, select.POLLIN)
    except (AttributeError, OSError):
        worker_fd = None
    status = None
    try:
        while True:
            events = poller.poll(None if worker_fd is not None else 50)
            status = reap_children().get(worker)
            if status is not None or any(fd == report_fd for fd, _ in events):
                break
    finally:
        if worker_fd is not None:
            os.close(worker_fd)
        me = os.getpid()
        with contextlib.suppress(OSError):
            os.killpg(worker, signal.SIGKILL)  # the worker's group: all there is without /proc
        kill_until_gone(lambda: below(me), reap=True)
        reap_children()
    return status
