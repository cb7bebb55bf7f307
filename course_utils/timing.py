"""Timing that is right on every device, built on ``torch.utils.benchmark``.

Accelerators run asynchronously: a plain ``time.time()`` around a CUDA call measures only the
launch. ``torch.utils.benchmark.Timer`` reads its clock through a ``timer`` function; its default
synchronises the *current* accelerator in recent releases, only CUDA or XPU in older ones (2.7),
and never a device that is not current. :func:`time_it` passes a timer that synchronises exactly
the device the work runs on, once per block of calls, on every PyTorch the course supports. It is the
course's one way of timing: :func:`course_utils.transfer.seconds_per_call` is its median.
"""
from __future__ import annotations

import timeit
from dataclasses import dataclass
from typing import Any, Callable

import torch

from . import device as _device
from . import gpusim


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the interquartile range over repeated blocks."""

    label: str
    median: float
    iqr: float
    runs: int

    def __str__(self) -> str:
        return f"{self.label}: {format_seconds(self.median)} per call (median of {self.runs} runs)"


def time_it(fn: Callable[..., Any], *args: Any, device: torch.device | str | None = None,
            min_run_time: float = 0.2, label: str = "", num_threads: int | None = None) -> Timing:
    """Time ``fn(*args)`` correctly, synchronising the ``device`` it runs on (default: the CPU) around every
    measurement, for at least ``min_run_time`` seconds, on ``num_threads`` CPU threads (default: all PyTorch uses;
    ``benchmark.Timer`` alone would use 1); the :class:`Timing` (named ``label`` in the printout) has the median
    seconds per call. Tensors on the simulated GPU (:mod:`course_utils.gpusim`) are timed as the CPU tensors that
    hold their values."""
    import torch.utils.benchmark as benchmark  # imported here: it costs ~0.4 s at import time

    device = torch.device(device) if device is not None else torch.device("cpu")
    if gpusim.is_simulated(device) or any(gpusim.is_sim_tensor(a) for a in args):
        device, args = torch.device("cpu"), gpusim.host(args)
    label = label or getattr(fn, "__name__", "call")
    timer = benchmark.Timer(stmt="fn(*args)", globals={"fn": fn, "args": args}, timer=synchronized_clock(device),
                            num_threads=num_threads or torch.get_num_threads(), label=label)
    m = timer.blocked_autorange(min_run_time=min_run_time)
    return Timing(label, m.median, m.iqr, len(m.times))


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


def format_seconds(seconds: float) -> str:
    """Human units: ``1.23 ms``, ``45.6 µs``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
