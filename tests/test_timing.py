"""course_utils.timing: correct, synchronised, and agreeing with torch.utils.benchmark."""
from __future__ import annotations

import pytest
import torch
import torch.utils.benchmark as benchmark

from course_utils import accelerator, timing


def test_time_it_measures_real_work():
    a = torch.randn(256, 256)
    small = timing.time_it(torch.mm, a, a, min_run_time=0.05)
    big_a = torch.randn(512, 512)
    big = timing.time_it(torch.mm, big_a, big_a, min_run_time=0.05)
    assert 0 < small.median < big.median and small.runs >= 1
    assert "per call" in str(small)


def test_uses_all_threads_unlike_a_bare_timer(monkeypatch):
    seen = {}
    real = benchmark.Timer

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(benchmark, "Timer", spy)
    timing.time_it(torch.add, torch.ones(4), 1, min_run_time=0.01)
    assert seen["num_threads"] == torch.get_num_threads()


def test_agrees_with_torch_utils_benchmark():
    """Same operation, alternating between the helper and a bare Timer: medians agree."""
    a = torch.randn(384, 384)
    ours, theirs = [], []
    for _ in range(5):
        ours.append(timing.time_it(torch.mm, a, a, min_run_time=0.05).median)
        theirs.append(benchmark.Timer("torch.mm(a, a)", globals={"torch": torch, "a": a},
                                      num_threads=torch.get_num_threads())
                      .blocked_autorange(min_run_time=0.05).median)
    ours_m, theirs_m = sorted(ours)[2], sorted(theirs)[2]
    assert abs(ours_m - theirs_m) / theirs_m < 0.35   # the benchmark script reports the exact figure


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
