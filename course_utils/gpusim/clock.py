"""The simulated GPU's clock: the time a modeled GPU would take, for lessons about speed on a machine without one.

The simulated GPU's work is the CPU's, so a stopwatch around it measures the CPU and the simulator's bookkeeping.
This clock keeps a GPU's time instead, for the host and the device alike. Each operation on the simulated GPU costs
the host a kernel launch (PyTorch's own time for the call included) and queues a kernel on the modeled device,
which runs the kernels one after another, each for a short floor plus its work at the GPU's throughput (a matrix
product's FLOPs, any other kernel's bytes read and written at its memory bandwidth). The host runs ahead of the
device and waits only where a GPU makes it wait: reading a value (``.item()``, printing), a copy back to the host, a
copy from pageable host memory, ``synchronize()``. Copies cost their latency and size over the link, pinned or
pageable.

What the model counts: launches, kernels (matrix products and memory-bound kernels), copies and waits. What it
ignores: the host's own work between operations (Python, and PyTorch on CPU tensors: a few microseconds a step in
the lessons' loops), caches, occupancy and kernel fusion, tensor cores and lower precisions (float32 throughput
throughout), streams (one queue), the allocator, clocks boosting or throttling, and other processes sharing the GPU.

A profile is a GPU's figures: ``h100`` is calibrated on the course's recorded H100 run
(``course_utils/data/reference_gpu.json``), ``t4`` (the GPU Colab lends) comes from NVIDIA's published figures.
``python benchmarks/run.py --only simclock`` compares the model with the recorded run, size by size.
"""
from __future__ import annotations

import json
import statistics
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Matrix products, by ATen name: their FLOPs decide their time.
MATMULS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "convolution",
                     "_convolution", "cudnn_convolution"})


@dataclass(frozen=True)
class Profile:
    """A GPU as the model sees it: host launch costs, device throughput and the host link (latency s, bytes/s)."""

    name: str
    source: str
    launch_s: float         # host time to launch one kernel from PyTorch
    matmul_launch_s: float  # ... one matrix product (cuBLAS does more on the host)
    kernel_s: float         # the shortest kernel on the device
    flops: float            # float32 matrix-product throughput, FLOP/s
    bandwidth: float        # device memory, bytes/s
    pageable: tuple[float, float]  # host -> device from pageable memory
    pinned: tuple[float, float]    # host -> device from pinned memory
    readback: tuple[float, float]  # device -> host

    def kernel(self, name: str, flops: float, nbytes: float) -> float:
        """Device seconds of one kernel."""
        work = flops / self.flops if name in MATMULS else nbytes / self.bandwidth
        return self.kernel_s + work

    def copy(self, nbytes: float, link: tuple[float, float]) -> float:
        """Seconds of one copy of ``nbytes`` over ``link`` (its call included, as the recorded copies include it)."""
        return link[0] + nbytes / link[1]


def calibrated(reference: dict) -> Profile:
    """The profile of the GPU of a recorded run (the JSON ``scripts/gpu_reference.py`` writes): launch costs from
    the smallest additions and products, throughput from the largest product, the link from the copy fits; the
    device memory's bandwidth is not measured there and is the H100 SXM's published 3.35 TB/s, at 80 %."""
    gpu = next(k for k in reference["matmul_seconds"] if k != "cpu")
    matmul = {int(n): s for n, s in reference["matmul_seconds"][gpu].items()}
    launch = statistics.median(reference["add_seconds"][gpu].values())
    floor = statistics.median(s for n, s in matmul.items() if n <= 512)
    largest = max(matmul)
    fits = {c["label"]: (c["latency_s"], c["bandwidth_gbps"] * 1e9) for c in reference["copies"]}
    return Profile(reference["machine"]["gpu"], f"calibrated on the course's recorded run of "
                   f"{reference['machine']['date']}", launch_s=launch, matmul_launch_s=floor, kernel_s=2e-6,
                   flops=2 * largest**3 / (matmul[largest] - 2e-6), bandwidth=0.8 * 3.35e12,
                   pageable=fits["host → device, pageable"], pinned=fits["host → device, pinned"],
                   readback=fits["device → host, pageable"])


def _t4() -> Profile:
    return Profile("NVIDIA T4", "NVIDIA's published figures (8.1 TFLOPS float32, 320 GB/s, PCIe Gen3 x16); the "
                   "launch costs of the recorded H100 machine", launch_s=6.9e-6, matmul_launch_s=1.6e-5,
                   kernel_s=3e-6, flops=8.1e12 * 0.8, bandwidth=320e9 * 0.8, pageable=(1.0e-5, 6e9),
                   pinned=(5e-6, 12e9), readback=(1.2e-5, 6e9))


def profiles() -> dict[str, Profile]:
    """The GPUs the clock can model, by name."""
    path = Path(__file__).resolve().parent.parent / "data" / "reference_gpu.json"
    return {"h100": calibrated(json.loads(path.read_text(encoding="utf-8"))), "t4": _t4()}


#: Operations that launch no kernel: allocations and changes of shape or strides.
NO_KERNEL = frozenset({"empty", "empty_strided", "detach", "alias", "lift_fresh", "resize_", "set_", "_reshape_alias",
                       "_local_scalar_dense"})


def flops(name: str, inputs: list, outputs: list) -> float:
    """Floating-point operations of a matrix product (2 per multiply-add); for others, one per output element."""
    if name in ("mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot"):
        a, b = (inputs[-2], inputs[-1]) if name.startswith("add") or name == "baddbmm" else (inputs[0], inputs[1])
        return 2.0 * a.numel() * (b.shape[-1] if b.dim() > 1 and name not in ("mv", "addmv") else 1)
    if name in MATMULS and len(inputs) > 1 and outputs:    # a convolution: per output, the weight's inputs
        return 2.0 * outputs[0].numel() * inputs[1][0].numel()
    return float(sum(t.numel() for t in outputs))


class Clock:
    """The modeled host's time and the modeled device's queue, in seconds since the process started using them."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.host = 0.0         # the host's time: the launches it made and the waits it sat through
        self.device_free = 0.0  # when the device will have finished what is queued
        self.lock = threading.Lock()   # the autograd engine launches from its own thread
        self.pinned: dict[int, weakref.ref] = {}   # host tensors that pin_memory() returned, by id

    def now(self) -> float:
        """The host's time on this clock."""
        return self.host

    def launch(self, device_s: float, host_s: float | None = None) -> None:
        """The host launches a kernel of ``device_s`` seconds: it pays the launch and runs on."""
        with self.lock:
            self.host += self.profile.launch_s if host_s is None else host_s
            self.device_free = max(self.device_free, self.host) + device_s

    def wait(self) -> None:
        """The host waits until the device has finished its queue."""
        with self.lock:
            self.host = max(self.host, self.device_free)

    def kernel(self, name: str, flops: float, nbytes: float) -> None:
        """An operation's kernel."""
        host = self.profile.matmul_launch_s if name in MATMULS else None
        self.launch(self.profile.kernel(name, flops, nbytes), host)

    def operation(self, name: str, is_view: bool, inputs: list, outputs: list) -> None:
        """One ATen operation on the simulated GPU (its CPU tensors in and out): a view or an allocation costs the
        host a little and the device nothing; anything else is a kernel."""
        if is_view or name.partition(".")[0] in NO_KERNEL:
            with self.lock:
                self.host += self.profile.launch_s / 4
            return
        self.kernel(name.partition(".")[0], flops(name.partition(".")[0], inputs, outputs),
                    sum(t.nbytes for t in inputs + outputs))

    def to_device(self, nbytes: int, source: Any, non_blocking: bool) -> None:
        """A copy from the host: from pageable memory the host waits for it, as a GPU's driver stages it."""
        kept = self.pinned.get(id(source))
        pinned = kept is not None and kept() is source
        self.launch(self.profile.copy(nbytes, self.profile.pinned if pinned else self.profile.pageable), 0.0)
        if not (pinned and non_blocking):
            self.wait()

    def pin(self, tensor: Any) -> None:
        """``pin_memory()`` made ``tensor``: the host copied it (at the pageable link's rate, the model's guess for a
        copy into page-locked memory), and the clock counts it as pinned from now on."""
        with self.lock:
            self.host += tensor.nbytes / self.profile.pageable[1]
        key = id(tensor)
        self.pinned[key] = weakref.ref(tensor, lambda _: self.pinned.pop(key, None))

    def to_host(self, nbytes: int) -> None:
        """A copy to the host (a value read, ``.cpu()``): after everything queued, and the host waits for it."""
        self.launch(self.profile.copy(nbytes, self.profile.readback), 0.0)
        self.wait()


_CLOCK = Clock(profiles()["h100"])


def clock() -> Clock:
    """The process's clock (the ``h100`` profile unless :func:`use` chose another)."""
    return _CLOCK


def use(name: str) -> Profile:
    """Model the GPU ``name`` (:func:`profiles`) from now on; returns its profile."""
    found = profiles()
    if name not in found:
        raise ValueError(f"no GPU profile {name!r}: choose one of {', '.join(found)}")
    clock().profile = found[name]
    return found[name]


def label() -> str:
    """What a modeled timing says it is: ``"modeled: NVIDIA H100 80GB HBM3"``."""
    return f"modeled: {clock().profile.name}"


def synchronized_now() -> float:
    """The clock's time after the host waited for the device: a timer for ``torch.utils.benchmark``."""
    clock().wait()
    return clock().now()


__all__ = ["Profile", "Clock", "calibrated", "profiles", "clock", "use", "label", "synchronized_now", "MATMULS"]
