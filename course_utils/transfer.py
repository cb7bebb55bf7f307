"""Measuring what it costs to move data between host and device, honestly.

Used by lesson 07::

    from course_utils import transfer
    cap = transfer.memory_cap("cpu", device)              # bytes a buffer may take on every device
    sizes = transfer.sweep_sizes(cap)                     # 1 KiB, 4 KiB, ... up to the cap
    sweep = transfer.copy_sweep(sizes, "cpu", device)     # timed copies, synchronised
    fit = transfer.fit_latency_bandwidth(sweep.nbytes, sweep.seconds)
    with transfer.count_copies(device) as seen:           # how many host<->device copies?
        ...

Four pieces: sizes that fit (:func:`memory_cap`: each buffer a small fraction of every device's free memory),
timing that is right on every device (:func:`seconds_per_call`, the median of :func:`course_utils.timing.time_it`),
the latency + bandwidth model (:func:`fit_latency_bandwidth`), and counting the copies between the host and a device
(:class:`count_copies`, which also counts them to the data-less ``meta`` device, so it runs on any machine).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from . import device as _device
from .timing import format_seconds, time_it

#: Bytes in a (decimal) gigabyte, the unit of bandwidth on spec sheets: 1 GB = 10**9 bytes.
GB = 10**9

#: Published PCIe x16 host-to-device bandwidths (pinned memory), in GB/s, for scale:
#: (typical measured, theoretical). These are published figures, not measurements.
PCIE_PUBLISHED = {"PCIe Gen3 x16": (12.0, 15.75), "PCIe Gen4 x16": (25.0, 31.5), "PCIe Gen5 x16": (50.0, 63.0)}

#: Assumed per-buffer limit (bytes) for a device whose free memory PyTorch cannot read (e.g. MPS).
UNKNOWN_FREE_CAP = 2**24


# --- sizes that fit ---------------------------------------------------------------------------

def memory_cap(*devices: torch.device | str, buffers: int = 2, fraction: float = 0.05,
               free: dict[str, int | None] | None = None) -> int:
    """The largest buffer (in bytes) a measurement may allocate: ``min over devices of fraction * free / buffers``.

    ``buffers`` of that size live on each of ``devices`` at once and together take at most ``fraction`` of its free
    memory; ``free`` (bytes by device string, for tests) replaces asking the devices. :data:`UNKNOWN_FREE_CAP` stands
    in for a device whose free memory cannot be read; a ``meta`` device holds no data at all."""
    if buffers < 1 or not 0 < fraction <= 1:
        raise ValueError("buffers must be >= 1 and fraction in (0, 1]")
    caps = []
    for dev in devices or ("cpu",):
        dev = torch.device(dev)
        if dev.type == "meta":
            continue
        free_bytes = free.get(str(dev)) if free is not None else _device.free_memory(dev)
        caps.append(UNKNOWN_FREE_CAP if free_bytes is None else int(free_bytes * fraction / buffers))
    return max(0, min(caps)) if caps else UNKNOWN_FREE_CAP


def sweep_sizes(cap: int, *, smallest: int = 2**10, largest: int = 2**26, factor: int = 4) -> list[int]:
    """Byte counts ``smallest, smallest * factor, ...`` up to ``min(cap, largest)``, smallest first; empty when not
    even ``smallest`` fits under ``cap``."""
    if smallest < 1 or factor < 2:
        raise ValueError("smallest must be >= 1 and factor >= 2")
    limit = min(cap, largest)
    sizes, n = [], smallest
    while n <= limit:
        sizes.append(n)
        n *= factor
    return sizes


# --- timing -----------------------------------------------------------------------------------

def seconds_per_call(fn: Callable[[], Any], device: torch.device | str | None = None, *,
                     min_time: float = 0.02) -> float:
    """Median seconds one call of ``fn()`` takes, measured correctly on any device.

    The median of :func:`course_utils.timing.time_it`: warmed up, repeated in blocks of calls for about ``min_time``
    seconds, ``device`` synchronised before the clock starts and before it stops (so queued, asynchronous work is
    counted, not just its launch; ``None`` or CPU: nothing to wait for), on the CPU threads PyTorch is set to use."""
    return time_it(fn, device=device, min_run_time=min_time).median


# --- the latency + bandwidth model -------------------------------------------------------------

@dataclass(frozen=True)
class Fit:
    """``seconds = latency_s + nbytes / (bandwidth_gbps * 1e9)``."""

    latency_s: float
    bandwidth_gbps: float

    def seconds(self, nbytes: float) -> float:
        """Predicted seconds to move ``nbytes`` bytes."""
        return self.latency_s + nbytes / (self.bandwidth_gbps * GB)

    def __str__(self) -> str:
        return f"latency {format_seconds(self.latency_s)}, bandwidth {self.bandwidth_gbps:.3g} GB/s"


def fit_latency_bandwidth(nbytes: Sequence[float], seconds: Sequence[float]) -> Fit:
    """Fit the latency + bandwidth model (a :class:`Fit`) to measured seconds per copy of ``nbytes`` bytes.

    A least-squares fit of ``seconds = latency + nbytes * per_byte`` that weighs every point by
    ``1 / seconds`` (relative error), so the small copies decide the latency and the large ones
    the bandwidth. A negative latency (noise) is clipped to 0 and the bandwidth refitted. ``ValueError`` for
    fewer than two different sizes, non-positive times, or times that do not grow with size."""
    n = torch.as_tensor(list(nbytes), dtype=torch.float64)
    t = torch.as_tensor(list(seconds), dtype=torch.float64)
    if n.shape != t.shape or n.numel() < 2 or len(set(n.tolist())) < 2:
        raise ValueError("need matching sizes and times for at least two different sizes")
    if bool((t <= 0).any()) or bool((n < 0).any()):
        raise ValueError("times must be positive and sizes non-negative")
    w = 1.0 / t
    design = torch.stack([torch.ones_like(n), n], dim=1) * w[:, None]
    latency, per_byte = torch.linalg.lstsq(design, (t * w)[:, None]).solution.flatten().tolist()
    if latency < 0:  # refit through the origin: minimise sum(((n * per_byte - t) / t) ** 2)
        latency = 0.0
        per_byte = float(((w * n) * (w * t)).sum() / ((w * n) ** 2).sum())
    if per_byte <= 0:
        raise ValueError("the times do not grow with the size: measure larger sizes")
    return Fit(latency, 1.0 / (per_byte * GB))


# --- measuring copies ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Sweep:
    """Measured seconds per copy for a series of sizes."""

    label: str
    nbytes: tuple[int, ...]
    seconds: tuple[float, ...]

    @property
    def gbps(self) -> tuple[float, ...]:
        """Achieved bandwidth for each size, in GB/s (1 GB = 10**9 bytes)."""
        return tuple(n / s / GB for n, s in zip(self.nbytes, self.seconds))

    def fit(self) -> Fit:
        """The latency + bandwidth model fitted to this sweep."""
        return fit_latency_bandwidth(self.nbytes, self.seconds)

    def table(self) -> str:
        """A small text table: size, time per copy, achieved GB/s."""
        rows = [f"{self.label}", f"{'bytes':>12} {'per copy':>10} {'GB/s':>7}"]
        rows += [f"{n:>12,} {format_seconds(s):>10} {g:>7.2f}" for n, s, g in zip(self.nbytes, self.seconds, self.gbps)]
        return "\n".join(rows)


def copy_sweep(sizes: Sequence[int], source: torch.device | str, target: torch.device | str, *,
               pinned: bool = False, non_blocking: bool = False, min_time: float = 0.02,
               threads: int | None = 1, label: str | None = None) -> Sweep:
    """Time ``dst.copy_(src)`` from ``source`` to ``target`` (at most one an accelerator) for each size in ``sizes``
    (bytes per copy: cap them with :func:`memory_cap` first), about ``min_time`` seconds each.

    Both buffers are made once per size (``uint8``, filled, so no page is untouched), so the clock
    sees only the copy, not the allocation. Buffers are freed before the next size. ``pinned`` puts the host-side
    buffer in pinned (page-locked) memory (it needs an accelerator); ``non_blocking`` is passed to ``copy_`` (the
    clock still waits for the copy). ``threads``: CPU threads for the copies (``None``: PyTorch's setting). One
    thread by default: a copy split over several threads waits for the slowest, and on a busy or shared machine that
    wait, not the memory, would be what the clock measures. ``label`` names it in plots (``"cpu → cuda:0 (pinned)"``).
    """
    source, target = torch.device(source), torch.device(target)
    accelerator = next((d for d in (source, target) if d.type != "cpu"), None)
    if pinned and accelerator is None:
        raise ValueError("pinned memory is for copies to or from an accelerator")
    saved_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        times = _time_copies(sizes, source, target, accelerator, pinned, non_blocking, min_time)
    finally:
        torch.set_num_threads(saved_threads)
    if label is None:
        label = f"{source} → {target}" + (" (pinned)" if pinned else "") + (", non_blocking" if non_blocking else "")
    return Sweep(label, tuple(int(n) for n in sizes), tuple(times))


def _time_copies(sizes: Sequence[int], source: torch.device, target: torch.device, accelerator: torch.device | None,
                 pinned: bool, non_blocking: bool, min_time: float) -> list[float]:
    times = []
    for n in sizes:
        src = torch.ones(n, dtype=torch.uint8, device=source)
        dst = torch.empty(n, dtype=torch.uint8, device=target)
        if pinned:   # pin_memory(): the simulated GPU's clock counts its copies as pinned too
            src, dst = (t.pin_memory() if t.device.type == "cpu" else t for t in (src, dst))

        def copy(dst=dst, src=src):
            dst.copy_(src, non_blocking=non_blocking)
        times.append(seconds_per_call(copy, accelerator, min_time=min_time))
        del src, dst, copy
    return times


# --- counting copies ----------------------------------------------------------------------------

@dataclass
class OpRecord:
    """One operation seen by :class:`count_copies`: its name and the device types of its tensors."""

    name: str
    input_devices: tuple[str, ...]
    output_devices: tuple[str, ...]


class count_copies(TorchDispatchMode):
    """Count copies between the host (CPU) and ``device`` made inside a ``with`` block.

    A copy is an ``aten._to_copy`` (what ``.to``, ``.cuda()``, ``torch.as_tensor`` run) or an
    ``aten.copy_`` (``dst.copy_(src)``) whose source is on the CPU and whose result is on a
    device of ``device``'s type (host to device), or the other way round (device to host).
    Every operation is also recorded in :attr:`ops`, with the device types of its tensors.

    Tensors built from Python lists (``torch.tensor([...], device=...)``) are copied inside PyTorch's C++ code and are
    not seen. ``meta`` works as ``device`` on any machine; a copy from it back to the CPU is impossible (no data), but
    with ``meta_readback`` it is counted and returns a CPU tensor of zeros instead of raising, so that code which copies
    back can still be counted (only the counts mean anything then). ``host_to_device`` and ``device_to_host`` count the
    copies each way, ``bytes_to_device`` and ``bytes_to_host`` the bytes they moved.
    """

    def __init__(self, device: torch.device | str, *, meta_readback: bool = False):
        super().__init__()
        self.device = torch.device(device)
        if self.device.type == "cpu":
            raise ValueError("count copies between the CPU and another device (an accelerator or 'meta')")
        self.meta_readback = meta_readback
        self.host_to_device = self.device_to_host = 0
        self.bytes_to_device = self.bytes_to_host = 0
        self.ops: list[OpRecord] = []

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Keep PyTorch from wrapping __torch_dispatch__ for torch.compile: that wrapper imports
        # torch._dynamo on first use (seconds), and nothing here is ever compiled.
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: D105
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        inputs = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        source = _copy_source(name, args)
        readback = (self.meta_readback and source is not None and source.device.type == "meta"
                    and _copy_destination(name, args, kwargs, source) == "cpu")
        out = _fake_readback(name, args, kwargs, source) if readback else func(*args, **kwargs)
        outputs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor)]
        self.ops.append(OpRecord(name, tuple(a.device.type for a in inputs), tuple(o.device.type for o in outputs)))
        if source is not None and outputs:
            nbytes = source.nbytes
            to = outputs[0].device.type
            if source.device.type == "cpu" and to == self.device.type:
                self.host_to_device += 1
                self.bytes_to_device += nbytes
            elif source.device.type == self.device.type and to == "cpu":
                self.device_to_host += 1
                self.bytes_to_host += nbytes
        return out

    def ran_on(self, device_type: str, names: set[str] | frozenset[str]) -> list[str]:
        """Names of recorded operations in ``names`` whose tensor inputs were all on ``device_type``."""
        return [op.name for op in self.ops if op.name in names and op.input_devices
                and all(d == device_type for d in op.input_devices)]

    def __str__(self) -> str:
        return (f"{self.host_to_device} host→{self.device.type} copies ({self.bytes_to_device:,} bytes), "
                f"{self.device_to_host} {self.device.type}→host copies ({self.bytes_to_host:,} bytes)")


def _copy_source(name: str, args: tuple) -> torch.Tensor | None:
    if name == "_to_copy" and args and isinstance(args[0], torch.Tensor):
        return args[0]
    if name == "copy_" and len(args) > 1 and isinstance(args[1], torch.Tensor):
        return args[1]
    return None


def _copy_destination(name: str, args: tuple, kwargs: dict, source: torch.Tensor) -> str:
    if name == "copy_":
        return args[0].device.type
    dev = kwargs.get("device")
    return torch.device(dev).type if dev is not None else source.device.type


def _fake_readback(name: str, args: tuple, kwargs: dict, source: torch.Tensor) -> torch.Tensor:
    if name == "copy_":
        return args[0]
    return torch.zeros(source.shape, dtype=kwargs.get("dtype") or source.dtype, device="cpu")


__all__ = ["GB", "PCIE_PUBLISHED", "memory_cap", "sweep_sizes", "seconds_per_call", "Fit",
           "fit_latency_bandwidth", "Sweep", "copy_sweep", "count_copies", "OpRecord"]
