"""course_utils.transfer: sizes capped from free memory, synchronised timing, the model fit, copy counting."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest
import torch

from course_utils import device as course_device
from course_utils import timing, transfer


# --- sizes that fit ---------------------------------------------------------------------------

def test_memory_cap_takes_a_fraction_of_the_least_free_device():
    free = {"cpu": 8 * 10**9, "cuda:0": 2 * 10**9}
    assert transfer.memory_cap("cpu", buffers=2, fraction=0.05, free=free) == 200_000_000
    assert transfer.memory_cap("cpu", "cuda:0", buffers=2, fraction=0.05, free=free) == 50_000_000
    assert transfer.memory_cap("cpu", "cuda:0", buffers=1, fraction=0.5, free=free) == 10**9


def test_memory_cap_unknown_free_memory_and_meta():
    assert transfer.memory_cap("mps", free={"mps": None}) == transfer.UNKNOWN_FREE_CAP
    assert transfer.memory_cap("cpu", "meta", free={"cpu": 10**9}) == 25_000_000   # meta holds no data
    assert transfer.memory_cap("meta", free={}) == transfer.UNKNOWN_FREE_CAP


@pytest.mark.parametrize("kwargs", [{"buffers": 0}, {"fraction": 0}, {"fraction": 1.5}])
def test_memory_cap_rejects_nonsense(kwargs):
    with pytest.raises(ValueError):
        transfer.memory_cap("cpu", free={"cpu": 10**9}, **kwargs)


def test_memory_cap_on_this_machine_is_a_small_part_of_free_memory():
    cap = transfer.memory_cap("cpu")
    free = course_device.free_memory("cpu")
    assert free is None or 0 < cap <= 0.05 * free


def test_sweep_sizes_stop_at_the_cap_and_the_largest_size():
    assert transfer.sweep_sizes(10**12) == [4**k * 2**10 for k in range(9)]       # 1 KiB .. 64 MiB
    assert transfer.sweep_sizes(60_000_000)[-1] == 2**24                           # 64 MiB does not fit
    assert transfer.sweep_sizes(10**12, largest=2**20) == [2**10, 2**12, 2**14, 2**16, 2**18, 2**20]
    assert transfer.sweep_sizes(2**10 - 1) == []
    assert transfer.sweep_sizes(10**6, smallest=1000, factor=10) == [1000, 10_000, 100_000, 1_000_000]
    with pytest.raises(ValueError):
        transfer.sweep_sizes(10**6, factor=1)


# --- timing -----------------------------------------------------------------------------------

def test_seconds_per_call_measures_the_work():
    """Each call sleeps 2 ms: the median per call cannot be less (no upper bound: a busy machine, or the suite's own
    parallel workers, may stretch a sleep; tests never assert how fast something is)."""
    seconds = transfer.seconds_per_call(lambda: time.sleep(0.002), min_time=0.02)
    assert seconds >= 0.0019


def test_seconds_per_call_warms_up_and_synchronises(monkeypatch):
    calls, syncs = [], []
    monkeypatch.setattr(course_device, "synchronize", lambda dev: syncs.append(torch.device(dev)))
    transfer.seconds_per_call(lambda: calls.append(1), "cuda", min_time=0.002)
    assert len(calls) > 3
    assert syncs and all(s.type == "cuda" for s in syncs)


def test_seconds_per_call_is_the_median_of_time_it(monkeypatch):
    """One way of timing in the course: the copy sweep measures as `cu.time_it` does."""
    seen = {}

    def time_it(fn, *args, **kwargs):
        seen.update(kwargs, fn=fn)
        return timing.Timing("x", 1.5e-6, 0.0, 3)
    monkeypatch.setattr(transfer, "time_it", time_it)
    work = lambda: None  # noqa: E731
    assert transfer.seconds_per_call(work, "meta", min_time=0.01) == 1.5e-6
    assert seen == {"fn": work, "device": "meta", "min_run_time": 0.01}


def test_seconds_per_call_without_device_does_not_synchronise(monkeypatch):
    monkeypatch.setattr(course_device, "synchronize", lambda dev: pytest.fail("synchronised"))
    assert transfer.seconds_per_call(lambda: None, min_time=0.001) > 0


# --- the model ----------------------------------------------------------------------------------

SIZES = [2**10 * 4**k for k in range(9)]


def test_fit_recovers_latency_and_bandwidth_from_exact_data():
    model = transfer.Fit(latency_s=10e-6, bandwidth_gbps=12.0)
    fit = transfer.fit_latency_bandwidth(SIZES, [model.seconds(n) for n in SIZES])
    assert fit.latency_s == pytest.approx(10e-6, rel=1e-6)
    assert fit.bandwidth_gbps == pytest.approx(12.0, rel=1e-6)


def test_fit_is_robust_to_relative_noise():
    model = transfer.Fit(latency_s=5e-6, bandwidth_gbps=25.0)
    gen = torch.Generator().manual_seed(0)
    noise = (1 + 0.05 * torch.randn(len(SIZES), generator=gen, dtype=torch.float64)).tolist()
    fit = transfer.fit_latency_bandwidth(SIZES, [model.seconds(n) * e for n, e in zip(SIZES, noise)])
    assert fit.latency_s == pytest.approx(5e-6, rel=0.15)
    assert fit.bandwidth_gbps == pytest.approx(25.0, rel=0.15)


def test_fit_clips_a_negative_latency_to_zero():
    # times that grow faster than linearly would need a negative latency
    sizes = [1000, 10_000, 100_000]
    fit = transfer.fit_latency_bandwidth(sizes, [1e-9, 1e-7, 1e-5])
    assert fit.latency_s == 0.0 and fit.bandwidth_gbps > 0


@pytest.mark.parametrize("sizes, seconds", [
    ([1000], [1e-6]),                       # one point
    ([1000, 1000], [1e-6, 2e-6]),           # one size
    ([1000, 2000], [1e-6, 0.0]),            # a zero time
    ([1000, 2000, 3000], [1e-6, 2e-6]),     # lengths differ
    ([1000, 1_000_000], [1e-3, 1e-6]),      # time falls as size grows
])
def test_fit_rejects_data_it_cannot_fit(sizes, seconds):
    with pytest.raises(ValueError):
        transfer.fit_latency_bandwidth(sizes, seconds)


def test_fit_prediction_and_text():
    fit = transfer.Fit(latency_s=10e-6, bandwidth_gbps=12.0)
    assert fit.seconds(0) == 10e-6
    assert fit.seconds(12 * 10**9) == pytest.approx(1 + 10e-6)
    assert str(fit) == "latency 10 µs, bandwidth 12 GB/s"


def test_published_pcie_figures_are_the_guides():
    assert transfer.PCIE_PUBLISHED == {"PCIe Gen3 x16": (12.0, 15.75), "PCIe Gen4 x16": (25.0, 31.5),
                                       "PCIe Gen5 x16": (50.0, 63.0)}
    assert transfer.GB == 10**9


# --- measuring copies -----------------------------------------------------------------------------

def test_copy_sweep_on_the_cpu():
    threads = torch.get_num_threads()
    sweep = transfer.copy_sweep([2**10, 2**14, 2**18], "cpu", "cpu", min_time=0.005)
    assert torch.get_num_threads() == threads                 # restored
    assert sweep.nbytes == (2**10, 2**14, 2**18) and len(sweep.seconds) == 3
    assert all(s > 0 for s in sweep.seconds)
    assert sweep.gbps == tuple(n / s / 1e9 for n, s in zip(sweep.nbytes, sweep.seconds))
    assert sweep.label == "cpu → cpu"
    assert "GB/s" in sweep.table() and "262,144" in sweep.table()
    assert isinstance(sweep.fit(), transfer.Fit)


def test_copy_sweep_refuses_pinned_memory_without_an_accelerator():
    with pytest.raises(ValueError, match="accelerator"):
        transfer.copy_sweep([1024], "cpu", "cpu", pinned=True)


# --- counting copies -------------------------------------------------------------------------------

def test_count_copies_sees_to_copy_and_copy_():
    x = torch.ones(10)                     # 40 bytes
    with transfer.count_copies("meta") as seen:
        x.to("meta")
        torch.as_tensor(x, device="meta")
        torch.empty(10, device="meta").copy_(x)
        x.to("meta", non_blocking=True)
        x.clone()                          # a host copy, not a transfer
        x.to("cpu")                        # nothing to do
    assert seen.host_to_device == 4 and seen.bytes_to_device == 160
    assert seen.device_to_host == 0
    assert "4 host→meta copies (160 bytes)" in str(seen)


def test_count_copies_does_not_count_moves_within_the_device():
    m = torch.ones(3, device="meta")
    with transfer.count_copies("meta") as seen:
        m.to("meta")
        m.clone()
        m.to(torch.float64)
    assert seen.host_to_device == seen.device_to_host == 0


def test_count_copies_back_from_meta():
    m = torch.ones(2, 3, device="meta", dtype=torch.float64)
    with pytest.raises(NotImplementedError):
        with transfer.count_copies("meta"):
            m.cpu()
    with transfer.count_copies("meta", meta_readback=True) as seen:
        back = m.cpu()
        into = torch.full((2, 3), 7.0, dtype=torch.float64).copy_(m)
    assert seen.device_to_host == 2 and seen.bytes_to_host == 96
    assert back.device.type == "cpu" and back.shape == (2, 3) and back.dtype == torch.float64
    assert bool((back == 0).all()) and bool((into == 7).all())


def test_count_copies_records_where_operations_ran():
    x = torch.ones(4)
    with transfer.count_copies("meta") as seen:
        y = (x + 1).to("meta")
        y.sum()
    assert seen.ran_on("cpu", {"add"}) == ["add"]
    assert seen.ran_on("meta", {"sum", "add"}) == ["sum"]
    assert [op.name for op in seen.ops] == ["add", "_to_copy", "sum"]


def test_count_copies_cannot_see_tensors_built_from_python_lists():
    """Documented limitation: torch.tensor(list, device=...) copies inside C++ code."""
    with transfer.count_copies("meta") as seen:
        torch.tensor([1.0, 2.0], device="meta")
    assert seen.host_to_device == 0


def test_count_copies_needs_a_device_other_than_the_cpu():
    with pytest.raises(ValueError):
        transfer.count_copies("cpu")


def test_count_copies_does_not_import_dynamo():
    """The mode opts out of torch.compile's wrapper, which would import torch._dynamo (seconds)."""
    code = ("import sys, torch\nfrom course_utils import transfer\n"
            "with transfer.count_copies('meta'):\n    torch.ones(2).to('meta').sum()\n"
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "False", out.stderr[-2000:]


# --- on a real accelerator ---------------------------------------------------------------------------

@pytest.mark.gpu
def test_copy_sweeps_on_the_accelerator():
    dev = course_device.best_device()
    sizes = [2**10, 2**16, 2**20]
    for sweep in (transfer.copy_sweep(sizes, "cpu", dev, min_time=0.005),
                  transfer.copy_sweep(sizes, dev, "cpu", min_time=0.005)):
        assert len(sweep.seconds) == 3 and all(s > 0 for s in sweep.seconds)
    if dev.type == "cuda":
        pinned = transfer.copy_sweep(sizes, "cpu", dev, pinned=True, non_blocking=True, min_time=0.005)
        assert pinned.label.endswith("(pinned), non_blocking")


@pytest.mark.gpu
def test_count_copies_on_the_accelerator():
    dev = course_device.best_device()
    with transfer.count_copies(dev) as seen:
        y = torch.ones(8).to(dev)
        y.cpu()
    assert (seen.host_to_device, seen.device_to_host) == (1, 1)
    assert seen.bytes_to_device == seen.bytes_to_host == 32
