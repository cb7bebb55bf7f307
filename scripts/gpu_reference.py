#!/usr/bin/env python3
"""Measure a GPU the way lessons 02 and 07 do, and write the figures as JSON.

    python scripts/gpu_reference.py --out course_utils/data/reference_gpu.json

Records the GPU's name, memory and versions (PyTorch, CUDA, driver); lesson 02's matmul sweep (median
seconds per n×n float32 product, on the GPU and on this machine's CPU) and its per-call cost of a tiny
`torch.add`; lesson 07's copy sweeps (host → device pageable and pinned, device → host) with their
latency + bandwidth fits. The lessons show these beside a learner's own numbers, labelled with the machine
that produced them. Needs a CUDA GPU (``--device`` names another, or ``cpu`` to try the script).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import date
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from course_utils import transfer  # noqa: E402
from course_utils.timing import time_it  # noqa: E402

MATMUL_SIZES = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
CPU_MATMUL_SIZES = [16, 32, 64, 128, 256, 512, 1024]
ADD_COUNTS = [1, 10, 100, 1_000, 10_000]


def machine(device: torch.device) -> dict:
    """What ran the measurements: GPU, host, versions."""
    info = {"date": date.today().isoformat(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "python": platform.python_version(), "cpu_threads": torch.get_num_threads(),
            "cpu": _cpu_name()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(gpu=props.name, gpu_memory_bytes=props.total_memory,
                    compute_capability=f"{props.major}.{props.minor}", driver=_driver())
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def matmul_sweep(device: torch.device, sizes: list[int]) -> dict[str, float]:
    """Lesson 02's sweep: median seconds per n×n @ n×n (float32), keyed by n."""
    seconds = {}
    for n in sizes:
        a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
        seconds[str(n)] = time_it(torch.matmul, a, b, device=device, min_run_time=0.1).median
    return seconds


def add_per_call(device: torch.device) -> dict[str, float]:
    """Lesson 02's fixed cost: median seconds per `x + x` on `count` elements, keyed by count."""
    out = {}
    for count in ADD_COUNTS:
        x = torch.randn(count, device=device)
        out[str(count)] = time_it(torch.add, x, x, device=device, min_run_time=0.1).median
    return out


def copy_sweeps(device: torch.device) -> list[dict]:
    """Lesson 07's sweeps, each with its latency + bandwidth fit."""
    cap = transfer.memory_cap("cpu", device, buffers=2, fraction=0.05)
    sizes = transfer.sweep_sizes(cap, smallest=2**10, largest=2**28)
    runs = [transfer.copy_sweep(sizes, "cpu", device, label="host → device, pageable", min_time=0.1),
            transfer.copy_sweep(sizes, "cpu", device, pinned=True, non_blocking=True,
                                label="host → device, pinned", min_time=0.1),
            transfer.copy_sweep(sizes, device, "cpu", label="device → host, pageable", min_time=0.1)]
    result = []
    for sweep in runs:
        fit = sweep.fit()
        result.append({"label": sweep.label, "nbytes": list(sweep.nbytes), "seconds": list(sweep.seconds),
                       "latency_s": fit.latency_s, "bandwidth_gbps": fit.bandwidth_gbps})
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--device", default="cuda", help="device to measure (default: cuda)")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("no CUDA GPU here; --device cpu tries the script on the CPU")
    figures = {"machine": machine(device),
               "matmul_seconds": {str(device.type): matmul_sweep(device, MATMUL_SIZES),
                                  "cpu": matmul_sweep(torch.device("cpu"), CPU_MATMUL_SIZES)},
               "add_seconds": {str(device.type): add_per_call(device)},
               "copies": copy_sweeps(device) if device.type != "cpu" else []}
    print(json.dumps(figures["machine"], indent=1))
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(figures, indent=1) + "\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
