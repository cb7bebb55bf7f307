"""course_utils.timing: synchronised on the right device. No test here asserts a duration: the
benchmark script (benchmarks/run.py) compares the helper with a bare Timer."""
from __future__ import annotations

import timeit

import pytest
import torch
import torch.utils.benchmark as benchmark

from course_utils import accelerator, timing, transfer


def test_time_it_returns_a_median_per_call():
    t = timing.time_it(torch.mm, torch.ones(8, 8), torch.ones(8, 8), min_run_time=0.01, label="mm")
    assert t.median > 0 and t.iqr >= 0 and t.runs >= 1
    assert str(t).startswith("mm: ") and "per call" in str(t)


def test_the_clock_synchronises_the_device_the_work_runs_on(monkeypatch):
    """Recent Timers sync the *current* accelerator, 2.7's only CUDA or XPU: ours syncs the given one."""
    synced = []
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda device=None: synced.append(device))
    clock = timing.synchronized_clock(torch.device("cuda", 1))
    assert isinstance(clock(), float)
    assert synced == [torch.device("cuda", 1)]
    assert timing.synchronized_clock("cpu") is timing.synchronized_clock("meta") is timeit.default_timer


def test_time_it_times_with_that_clock(monkeypatch):
    seen = {}
    real = benchmark.Timer

    def spy(*args, **kwargs):
        seen.update(kwargs)
        kwargs["timer"] = timeit.default_timer   # keep the real measurement on this CPU machine
        return real(*args, **kwargs)
    synced = []
    monkeypatch.setattr(benchmark, "Timer", spy)
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda device=None: synced.append(device))
    timing.time_it(torch.add, torch.ones(4), 1, device="mps", min_run_time=0.01)
    seen["timer"]()
    assert synced == [torch.device("mps")]
    assert "synchronize" not in seen["stmt"]   # one sync per block of calls, as for CUDA


def test_uses_all_threads_unlike_a_bare_timer(monkeypatch):
    seen = {}
    real = benchmark.Timer

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(benchmark, "Timer", spy)
    timing.time_it(torch.add, torch.ones(4), 1, min_run_time=0.01)
    assert seen["num_threads"] == torch.get_num_threads()


@pytest.mark.parametrize("seconds, text", [(2.5, "2.5 s"), (0.0123, "12.3 ms"), (4.5e-6, "4.5 µs"),
                                           (3e-9, "3 ns")])
def test_format_seconds(seconds, text):
    assert timing.format_seconds(seconds) == text


@pytest.mark.gpu
def test_accelerator_timing_is_synchronised():
    device = accelerator()
    a = torch.randn(2048, 2048, device=device)
    t = timing.time_it(torch.mm, a, a, device=device, min_run_time=0.1)
    # 2*n^3 flops in t seconds: a synchronised time cannot exceed ~10^15 flop/s on today's GPUs
    assert 2 * 2048**3 / t.median < 1e15
