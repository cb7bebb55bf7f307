"""Timing that is right on every device, built on ``torch.utils.benchmark``.

Accelerators run asynchronously: a plain ``time.time()`` around a CUDA call measures only the
launch. ``torch.utils.benchmark.Timer`` reads its clock through a ``timer`` function; its default
synchronises the *current* accelerator in recent releases, only CUDA or XPU in older ones (2.7),
and never a device that is not current. :func:`time_it` passes a timer that synchronises exactly
the device the work runs on, once per block of calls, on every PyTorch the course supports. It is the
course's one way of timing: :func:`course_utils.transfer.seconds_per_call` is its median. On the simulated GPU the
time is the modeled GPU's (:mod:`course_utils.gpusim.clock`), and says so.
"""
from __future__ import annotations

import timeit
from dataclasses import dataclass
from typing import Any, Callable

import torch

from . import device as _device
from . import gpusim
from .gpusim import clock as modeled_clock


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the interquartile range over repeated blocks; ``modeled`` says which
    modeled GPU's clock gave them, on the simulated GPU (``""``: measured)."""

    label: str
    median: float
    iqr: float
    runs: int
    modeled: str = ""

    def __str__(self) -> str:
        how = f"; {self.modeled}" if self.modeled else ""
        return f"{self.label}: {format_seconds(self.median)} per call (median of {self.runs} runs{how})"


def time_it(fn: Callable[..., Any], *args: Any, device: torch.device | str | None = None,
            min_run_time: float = 0.2, label: str = "", num_threads: int | None = None) -> Timing:
    """Time ``fn(*args)`` correctly, synchronising the ``device`` it runs on (default: the CPU) around every
    measurement, for at least ``min_run_time`` seconds, on ``num_threads`` CPU threads (default: all PyTorch uses;
    ``benchmark.Timer`` alone would use 1); the :class:`Timing` (named ``label`` in the printout) has the median
    seconds per call. On the simulated GPU (:mod:`course_utils.gpusim`) the time is its modeled GPU's
    (:mod:`course_utils.gpusim.clock`), and the :class:`Timing` says so."""
    import torch.utils.benchmark as benchmark  # imported here: it costs ~0.4 s at import time

    device = torch.device(device) if device is not None else torch.device("cpu")
    label = label or getattr(fn, "__name__", "call")
    if gpusim.is_simulated(device) or any(gpusim.is_sim_tensor(a) for a in args):
        return _modeled(fn, args, label)
    timer = benchmark.Timer(stmt="fn(*args)", globals={"fn": fn, "args": args}, timer=synchronized_clock(device),
                            num_threads=num_threads or torch.get_num_threads(), label=label)
    m = timer.blocked_autorange(min_run_time=min_run_time)
    return Timing(label, m.median, m.iqr, len(m.times))


def _modeled(fn: Callable[..., Any], args: tuple, label: str, blocks: int = 3) -> Timing:
    """:func:`time_it` on the simulated GPU, on its modeled clock: a call's time in the steady state (a block of
    ``number + 1`` calls less a block of one, so that neither the first launch nor the last wait counts), for a few
    blocks of calls that each take about 20 ms of real time (the modeled clock gives every call the same time)."""
    def block(calls: int) -> float:
        begin = modeled_clock.synchronized_now()
        for _ in range(calls):
            fn(*args)
        return modeled_clock.synchronized_now() - begin

    fn(*args)   # warm-up, and how long a call really takes
    start = timeit.default_timer()
    fn(*args)
    number = max(1, min(1000, int(0.02 / max(timeit.default_timer() - start, 1e-6))))
    per_call = sorted((block(number + 1) - block(1)) / number for _ in range(blocks))
    return Timing(label, per_call[blocks // 2], per_call[-1] - per_call[0], blocks, modeled_clock.label())


def synchronized_clock(device: torch.device | str) -> Callable[[], float]:
    """A clock for ``benchmark.Timer(timer=...)`` that first waits for all work queued on ``device`` (where the timed
    work runs): a function returning seconds, like ``timeit.default_timer``, which is itself the clock for the CPU
    and ``meta``."""
    device = torch.device(device)
    if device.type in ("cpu", "meta"):
        return timeit.default_timer

    def clock() -> float:
        _device.synchronize(device)
        return timeit.default_timer()
    return clock


def clock(device: torch.device | str) -> Callable[[], float]:
    """A stopwatch's clock for work on ``device``: ``time.perf_counter``, or on the simulated GPU the host clock of
    the GPU it models (:mod:`course_utils.gpusim.clock`), which ``torch.accelerator.synchronize()`` moves on to the
    end of the queued work, as a GPU's host waits."""
    if gpusim.is_simulated(device):
        return modeled_clock.clock().now
    return timeit.default_timer


def modeled(device: torch.device | str) -> str:
    """What a timing on ``device`` is, when it is not a measurement: ``"modeled: NVIDIA H100 80GB HBM3"`` on the
    simulated GPU (the clock of the GPU it models), else ``""``."""
    return modeled_clock.label() if gpusim.is_simulated(device) else ""


def format_seconds(seconds: float) -> str:
    """Human units: ``1.23 ms``, ``45.6 µs``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
