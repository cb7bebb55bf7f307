"""course_utils.gpusim.clock: the simulated GPU keeps a modeled GPU's time, calibrated on the recorded H100 run, and
every timing on it says it is modeled. Modeled times are the model's arithmetic, not a stopwatch's: the tests compare
them with the model and the recorded run (the error table is in benchmarks/, ``--only simclock``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from course_utils import reference
from course_utils.gpusim import backend
from course_utils.gpusim import clock as simclock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H100 = simclock.profiles()["h100"]


def test_the_h100_profile_is_calibrated_on_the_recorded_run():
    ref = reference.load()
    assert H100.name == ref.gpu and "recorded run" in H100.source
    assert H100.launch_s == pytest.approx(sorted(ref.add_seconds.values())[2])   # the median addition
    pageable, pinned, back = ref.fits()
    assert H100.pageable == pytest.approx((pageable.latency_s, pageable.bandwidth_gbps * 1e9))
    assert H100.pinned == pytest.approx((pinned.latency_s, pinned.bandwidth_gbps * 1e9))
    assert H100.readback == pytest.approx((back.latency_s, back.bandwidth_gbps * 1e9))
    largest = max(ref.matmul_seconds["cuda"])
    assert H100.kernel("mm", 2 * largest**3, 0) == pytest.approx(ref.matmul_seconds["cuda"][largest])
    t4 = simclock.profiles()["t4"]
    assert "published" in t4.source and t4.flops < H100.flops and t4.pinned[1] < H100.pinned[1]


def test_the_host_runs_ahead_of_the_device_and_waits_only_when_told():
    clock = simclock.Clock(H100)
    for _ in range(3):
        clock.launch(1e-3)   # three kernels of a millisecond
    assert clock.now() == pytest.approx(3 * H100.launch_s)          # the host only paid the launches
    assert clock.device_free == pytest.approx(H100.launch_s + 3e-3)  # the device runs them one after another
    clock.wait()
    assert clock.now() == pytest.approx(H100.launch_s + 3e-3)
    clock.to_host(4)                                                 # a value read: a copy back, and a wait
    assert clock.now() == pytest.approx(H100.launch_s + 3e-3 + H100.copy(4, H100.readback))


def test_a_pinned_non_blocking_copy_does_not_stop_the_host_and_a_pageable_one_does():
    clock, host = simclock.Clock(H100), torch.ones(2**20, dtype=torch.uint8)
    clock.to_device(host.nbytes, host, non_blocking=True)       # pageable: the host waits whatever it asked
    assert clock.now() == pytest.approx(H100.copy(2**20, H100.pageable))
    pinned = host.clone()
    clock.pin(pinned)
    start = clock.now()
    clock.to_device(pinned.nbytes, pinned, non_blocking=True)
    assert clock.now() == start                                 # queued on the copy engine
    clock.wait()
    assert clock.now() == pytest.approx(start + H100.copy(2**20, H100.pinned))


def test_flops_of_matrix_products_and_bytes_of_other_kernels():
    a, b = torch.ones(8, 4), torch.ones(4, 2)
    assert simclock.flops("mm", [a, b], [torch.ones(8, 2)]) == 2 * 8 * 4 * 2
    assert simclock.flops("addmm", [torch.ones(2), a, b], [torch.ones(8, 2)]) == 2 * 8 * 4 * 2
    assert simclock.flops("bmm", [torch.ones(3, 8, 4), torch.ones(3, 4, 2)], [torch.ones(3, 8, 2)]) == 2 * 3 * 8 * 4 * 2
    assert simclock.flops("add", [a, a], [a]) == a.numel()


SCRIPT = r"""
import json, sys, torch
import course_utils as cu
from course_utils.gpusim import backend, clock
device = backend.enable()
out = {}
for n in (256, 2048):
    a = torch.randn(n, n, device=device)
    timing = cu.time_it(torch.matmul, a, a, device=device)
    out[f"matmul {n}"], out["says"] = timing.median, str(timing)
x = torch.randn(64, 64, device=device)
def step():
    return (x - x.t()).square().mean()
def with_item(steps=20):
    return sum(step().item() for _ in range(steps))
def on_device(steps=20):
    total = torch.zeros((), device=device)
    for _ in range(steps):
        total += step()
    return total.item()
out["item every step"] = cu.time_it(with_item, device=device).median
out["kept on the device"] = cu.time_it(on_device, device=device).median
now = cu.timing.clock(device)
a = torch.randn(1024, 1024, device=device)
torch.accelerator.synchronize()
start = now(); a @ a; out["naive"] = now() - start
torch.accelerator.synchronize(); out["synced"] = now() - start
host = torch.ones(2**24, dtype=torch.uint8)
pinned = host.pin_memory()
out["pageable copy"] = cu.time_it(lambda: host.to(device), device=device).median
out["pinned copy"] = cu.time_it(lambda: pinned.to(device, non_blocking=True), device=device).median
out["modeled"] = cu.timing.modeled(device)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def modeled() -> dict:
    """What the lessons time, on the simulated GPU, in a process of its own (its registration cannot be undone)."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(not backend.available(), reason="the simulated GPU needs PyTorch 2.10 or later")
def test_the_lessons_timings_have_a_gpus_shapes_and_say_they_are_modeled(modeled):
    recorded = reference.load().matmul_seconds["cuda"]
    assert modeled["matmul 2048"] == pytest.approx(recorded[2048], rel=0.25)    # the model against the H100 run
    assert modeled["matmul 256"] == pytest.approx(recorded[256], rel=0.25)
    assert modeled["kept on the device"] < modeled["item every step"]          # a read per step waits
    assert modeled["naive"] < modeled["synced"] / 2                            # the launch, not the work
    assert modeled["pinned copy"] < modeled["pageable copy"] / 3               # 57 against 11 GB/s
    assert modeled["modeled"] == f"modeled: {H100.name}" and modeled["modeled"] in modeled["says"]
