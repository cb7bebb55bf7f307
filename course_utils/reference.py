"""Measurements made once on a real GPU, for a learner to read beside their own: lesson 02's matmul sweep and
lesson 07's copy sweeps, as ``scripts/gpu_reference.py`` records them (``data/reference_gpu.json``).

They are another machine's numbers, always shown with its name, and never stand in for a measurement of the
learner's own machine.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from .transfer import Fit, Sweep

_DATA = Path(__file__).with_name("data") / "reference_gpu.json"


@dataclass(frozen=True)
class Reference:
    """One reference run: the ``gpu``'s name (``"NVIDIA H100 80GB HBM3"``), the ``versions`` of PyTorch, CUDA and
    driver (``"PyTorch 2.11.0+cu130, CUDA 13.0, driver 580.159.04"``), the ISO ``date`` it was measured, the ``cpu``
    (the host's processor and the threads PyTorch used), ``matmul_seconds`` by device (``"cuda"``, ``"cpu"``: n ->
    median seconds per n×n float32 product), ``add_seconds`` (n -> median seconds per ``x + x`` of n elements on the
    GPU) and lesson 07's ``copies`` sweeps (host → device pageable and pinned, device → host)."""

    gpu: str
    versions: str
    date: str
    cpu: str
    matmul_seconds: dict[str, dict[int, float]]
    add_seconds: dict[int, float]
    copies: tuple[Sweep, ...]

    def describe(self) -> str:
        """The machine in one line, e.g. ``"an NVIDIA H100 80GB HBM3 (PyTorch 2.11.0+cu130, ...; 2026-11-26)"``."""
        return f"a reference run on an {self.gpu} ({self.versions}; measured {self.date})"

    def gflops(self, device_type: str = "cuda") -> dict[int, float]:
        """Matmul throughput by size, in GFLOP/s (2·n³ operations per product), as lesson 02 counts it."""
        return {n: 2 * n**3 / s / 1e9 for n, s in self.matmul_seconds[device_type].items()}

    def fits(self) -> tuple[Fit, ...]:
        """The latency + bandwidth fit of each copy sweep, in the order of :attr:`copies`."""
        return tuple(sweep.fit() for sweep in self.copies)

    def crossover(self) -> int | None:
        """The smallest n from which the GPU beat the host's CPU at every larger size measured on both."""
        gpu, cpu = self.matmul_seconds["cuda"], self.matmul_seconds["cpu"]
        sizes = sorted(set(gpu) & set(cpu))
        return next((n for i, n in enumerate(sizes) if all(gpu[m] < cpu[m] for m in sizes[i:])), None)


@functools.cache
def load() -> Reference:
    """The reference run shipped with the course."""
    raw = json.loads(_DATA.read_text(encoding="utf-8"))
    machine = raw["machine"]
    return Reference(
        gpu=machine["gpu"], date=machine["date"], cpu=f"{machine['cpu']}, {machine['cpu_threads']} threads",
        versions=f"PyTorch {machine['torch']}, CUDA {machine['cuda']}, driver {machine['driver']}",
        matmul_seconds={dev: {int(n): s for n, s in sizes.items()} for dev, sizes in raw["matmul_seconds"].items()},
        add_seconds={int(n): s for n, s in raw["add_seconds"]["cuda"].items()},
        copies=tuple(Sweep(f"{c['label']} ({machine['gpu']})", tuple(c["nbytes"]), tuple(c["seconds"]))
                     for c in raw["copies"]))


__all__ = ["Reference", "load"]
