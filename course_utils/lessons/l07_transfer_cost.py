"""Lesson 07 - transfer cost: units, the latency + bandwidth model, and moving data once."""
from __future__ import annotations

import math
import traceback
from typing import Any, Callable

import torch

from .. import device as _device
from .. import misconceptions, transfer
from ..exercises import grader
from ..grading import (Crashed, ModesKept, TimeLimit, Wrong, call, devices_to_test, expect_float, expect_tensor,
                       is_tensor, safe_repr, same_values)
from ..quizzes import add_quiz

# --- quizzes ---------------------------------------------------------------------------------

add_quiz(
    "07.gb_vs_gib",
    "A spec sheet says a link moves 16 GB/s. A tool on your machine reports 14.9 GiB/s for it. "
    "Which number describes the faster link?",
    ["The spec sheet's, by about 7 %", "Your tool's", "Neither: they are the same speed",
     "They cannot be compared: one is bits, the other bytes"],
    2,
    "1 GB is 10**9 bytes; 1 GiB is 2**30 = 1,073,741,824 bytes, about 7.4 % more. "
    "14.9 GiB/s x 1.0737 = 16.0 GB/s: the same speed in two units. Both are bytes; "
    "bits are written Gbit/s or Gb/s and give numbers 8 times larger.",
)
add_quiz(
    "07.predict_100mb",
    "A link has 10 µs latency and 12 GB/s bandwidth. About how long does one 100 MB copy take?",
    ["About 10 µs: the latency decides", "About 8.3 ms", "About 67 ms", "About 8.3 s"],
    1,
    "Time = latency + bytes / bandwidth = 10 µs + 100e6 / 12e9 s = 0.00001 + 0.00833 s, about 8.3 ms. "
    "For a copy this big the latency is about 0.1 % of the time; for a 4 KB copy it is nearly all of it. "
    "67 ms is what you get by counting bits (x 8); 8.3 s by mixing up milliseconds and seconds.",
)
add_quiz(
    "07.same_device_to",
    "`t` is a 16 MiB tensor on the CPU. How does `t.to('cpu')` compare with `t.clone()`?",
    ["Almost no time: it returns `t` itself", "About the same time: both copy 16 MiB",
     "Twice as long: it reads and writes", "It raises: `t` is already on the CPU"],
    0,
    "`.to` returns the tensor itself when the device and dtype already match, so nothing is copied: "
    "it costs about a microsecond whatever the size. `t.clone()` (or `t.to('cpu', copy=True)`) "
    "really copies the 16 MiB.",
)
add_quiz(
    "07.dataloader_pin",
    "On a machine with no GPU you build `DataLoader(dataset, batch_size=16, pin_memory=True)` and take a "
    "batch. What happens?",
    ["It raises RuntimeError: pinned memory needs an accelerator",
     "It warns that no accelerator is found and gives ordinary (unpinned) CPU batches",
     "It pins the batches anyway", "It silently ignores the option"],
    1,
    "The DataLoader checks for an accelerator when you start iterating: with none it warns "
    "(\"'pin_memory' argument is set as true but no accelerator is found...\") and carries on without "
    "pinning. `tensor.pin_memory()` itself does raise without an accelerator. Either way, batches stay "
    "on the CPU: pinning never moves data to the GPU.",
)
add_quiz(
    "07.loop_vs_once",
    "You need 1,000 batches of 4 KB each on the GPU (10 µs latency, 12 GB/s). Which is faster, and by "
    "about how much: 1,000 separate `.to(device)` calls, or one `.to(device)` of all of them stacked (4 MB)?",
    ["About the same: the same 4 MB moves either way", "The 1,000 small copies, because they can overlap",
     "One stacked copy, about 2 times faster", "One stacked copy, about 30 times faster"],
    3,
    "Each copy pays the latency. 1,000 x (10 µs + 4,000 / 12e9 s) = about 10.3 ms; one copy is "
    "10 µs + 4e6 / 12e9 s = about 0.34 ms, some 30 times less. Stacking on the CPU first costs one host "
    "copy of the 4 MB, typically a fraction of a millisecond.",
)
add_quiz(
    "07.item_in_loop",
    "A GPU training loop calls `loss.item()` every step to add up the loss for logging. What does that "
    "line cost?",
    ["Nothing worth mentioning: it copies only 4 bytes", "It copies the whole model back to the CPU",
     "It raises: `.item()` needs a CPU tensor",
     "A wait: the CPU stops until the GPU has finished all the work queued so far, every step"],
    3,
    "GPU work is queued and runs asynchronously. `.item()` needs the value, so the CPU waits until the "
    "GPU has finished everything before it, then copies 4 bytes. The CPU can no longer run ahead and "
    "queue the next step. Keep the running total on the device and call `.item()` once at the end "
    "(or every few hundred steps). Add `loss.detach()` to that total, not `loss`: the loss requires "
    "grad, and a total built from it keeps every step's autograd graph alive.",
)


# --- shared helpers -----------------------------------------------------------------------------

def _as_number(got: Any, what: str) -> float:
    """A real number from the learner's return value, or a kind Wrong."""
    value = expect_float(got, what)
    if math.isnan(value):
        raise Wrong(f"{what} you returned NaN. Check for a division by zero or 0/0.", misconceptions.WRONG_VALUE)
    return value


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-15)


def _diagnose(got: float, want: float, candidates: list[tuple[Callable[[], float], str, str]], unit: str,
              default: str) -> tuple[str, str]:
    """What a wrong number says, and the code of its mistake: the first candidate formula that gives it, else a
    rounded answer, else ``default`` (a wrong value the check names no mistake for)."""
    for formula, message, code in candidates:
        try:
            if _close(got, float(formula())):
                return message, code
        except ZeroDivisionError:
            continue
    rounded = _rounded_feedback(got, want, unit)
    if rounded:
        return rounded, ROUNDED
    return default, misconceptions.WRONG_VALUE


def _fmt(want: float, got: float) -> tuple[str, str]:
    """Both numbers, with enough digits to see how they differ (a rounded answer, too)."""
    a, b = f"{want:.10g}", f"{got:.10g}"
    return (a, b) if a != b else (repr(want), repr(got))


def _rounding(got: float, want: float) -> str:
    """How ``got`` looks rounded from ``want`` (e.g. "to 3 decimal places"), or "" if it does not."""
    if not math.isfinite(want):
        return ""

    def same(a: float) -> bool:
        return math.isclose(got, a, rel_tol=1e-9, abs_tol=1e-300) and not _close(a, want)

    for d in range(0, 10):
        scale = 10 ** d
        if any(same(v) for v in (round(want, d), math.floor(want * scale) / scale)):
            return "to a whole number" if d == 0 else f"to {d} decimal place{'s' if d > 1 else ''}"
    for s in range(1, 10):
        if same(float(f"{want:.{s}g}")):
            return f"to {s} significant digit{'s' if s > 1 else ''}"
    return ""


def _rounded_feedback(got: float, want: float, unit: str) -> str:
    how = _rounding(got, want)
    if not how:
        return ""
    return (f"Your answer looks rounded {how} (by `round`, `int`, `//` or a format string). Return the full "
            f"value; round only when you display it, e.g. `print(f\"{{value:.3g}} {unit}\")`.")


# --- exercise 07.bandwidth_gbps ------------------------------------------------------------------

def bandwidth_gbps(nbytes, seconds):
    """Achieved bandwidth in GB/s (1 GB = 10**9 bytes) for ``nbytes`` bytes moved in ``seconds`` seconds."""
    return nbytes / seconds / 1e9


GIB_FOR_GB = misconceptions.define(
    "07.gib-for-gb", "Took a GiB (2**30 bytes) for a GB",
    "Believes a GB is 2**30 bytes; that is a GiB, 7.4 % more. Bandwidth figures (spec sheets, PCIe, this course) "
    "use decimal units: 1 GB = 10**9 bytes, so GB/s = bytes per second / 10**9.",
    section=("07_transfer_cost", "1. Two numbers describe a copy"),
    question="A tool reports 14.9 GiB/s and a spec sheet 16 GB/s. Which link is faster, and how do you convert?")
COUNTED_BITS = misconceptions.define(
    "07.counted-bits", "Mixed up bits and bytes",
    "Converts between bits and bytes (x 8 or / 8) where everything is already in bytes: `nbytes` counts bytes "
    "and GB/s is bytes per second. Bits are written Gbit/s (or Gb/s) and give numbers 8 times larger.",
    section=("07_transfer_cost", "1. Two numbers describe a copy"),
    question="A link moves 16 Gbit/s. How many GB/s is that, and which unit does `bandwidth_gbps` return?")
MEGA_FOR_GIGA = misconceptions.define(
    "07.mega-for-giga", "Used 10**6 where a GB is 10**9 bytes",
    "Uses 10**6 (mega) for the giga of GB/s, which gives MB/s (1000 times too large) or bytes per second 1000 "
    "times too small; 1 GB = 10**9 bytes. (A bandwidth 1000 times too large can also come from seconds taken for "
    "milliseconds: the check cannot tell the two apart.)",
    section=("07_transfer_cost", "1. Two numbers describe a copy"),
    question="How many bytes per second is 12 GB/s? And how many MB/s?")
TIME_NOT_IN_SECONDS = misconceptions.define(
    "07.time-not-in-seconds", "Times in milliseconds or microseconds, not seconds",
    "Converts times that are already in seconds (`seconds`, `latency_s`) to milliseconds, or returns a time in "
    "milliseconds or microseconds; every time in these functions is in seconds, whatever units a table displays.",
    section=("07_transfer_cost", "2. Measure it: a sweep of sizes › Exercise 07.bandwidth_gbps"),
    question="The sweep table shows a copy's time as `8.34 ms`. Which number do you pass as `seconds`, and which "
             "unit does `transfer_time` return?")
NO_GIGA = misconceptions.define(
    "07.gb-not-converted", "Left out the 10**9 between GB and bytes",
    "Mixes bytes and gigabytes without converting: bytes / seconds is bytes per second, not GB/s, and a bandwidth "
    "in GB/s must become bytes per second (x 10**9) before it divides a number of bytes.",
    section=("07_transfer_cost", "1. Two numbers describe a copy"),
    question="A copy of 100 MB takes 8 ms. What is bytes / seconds, and how many GB/s is that?")
GIGA_BACKWARDS = misconceptions.define(
    "07.gb-converted-backwards", "Converted GB and bytes the wrong way",
    "Applies the 10**9 in the wrong direction: bytes per second / 10**9 gives GB/s, and GB/s x 10**9 gives bytes "
    "per second, not the other way round.",
    section=("07_transfer_cost", "1. Two numbers describe a copy"),
    question="To turn 12 GB/s into bytes per second, do you multiply or divide by 10**9? And to turn bytes per "
             "second into GB/s?")
RATE_INVERTED = misconceptions.define(
    "07.rate-formula-inverted", "Multiplied where the rate divides, or upside down",
    "Combines bytes, time and bandwidth the wrong way (bytes x time, time / bytes, bytes x bandwidth, "
    "bandwidth / bytes). Bandwidth is what flows per second: bandwidth = bytes / seconds, so "
    "time = bytes / bandwidth.",
    section=("07_transfer_cost", "1. Two numbers describe a copy"),
    question="A copy twice as large, on the same link: does its bandwidth double? Does its flowing time?")
ROUNDED = misconceptions.define(
    "07.rounded-result", "Returned a rounded number",
    "Rounds the result (`round`, `int`, `//`, a format string), perhaps to match the sweep table's display; the "
    "function should return the full value and leave rounding to whatever displays it.",
    section=("07_transfer_cost", "2. Measure it: a sweep of sizes › Exercise 07.bandwidth_gbps"),
    question="The table shows bandwidths to 2 decimal places. Why should `bandwidth_gbps` still return every digit?")


_BANDWIDTH_CASES = ((100_000_000, 0.008), (4096, 2.5e-6), (2**30, 0.085), (64, 1.2e-5),
                    (12_000_000_000, 1.0), (0, 1e-5), (3_000_000, 0.75))


@grader("07.bandwidth_gbps", reference=bandwidth_gbps, title="Achieved bandwidth", hints=(
    "Check one row of the table by hand: how many bytes moved, in how many seconds? Bandwidth is what flows per "
    "second, written in GB/s. Which unit is a GB here?",
    "Bytes divided by seconds gives bytes per second; 1 GB is 10**9 bytes (not 2**30, that is a GiB), "
    "and `seconds` is already in seconds.",
    "`return nbytes / seconds / 1e9`",
))
def _grade_bandwidth_gbps(fn: Callable) -> str:
    for n, s in _BANDWIDTH_CASES:
        want = bandwidth_gbps(n, s)
        where = f"For nbytes={n:,} and seconds={s:g}"
        got = _as_number(call(fn, n, s, context=f"nbytes={n}, seconds={s}"), where)
        if _close(got, want):
            continue
        candidates = [
            (lambda: n / s / 2**30, "You divided by 2**30: that is GiB/s. Bandwidth figures use "
                                    "1 GB = 10**9 bytes.", GIB_FOR_GB),
            (lambda: n * 8 / s / 1e9, "That is 8 times too much: you counted bits (Gbit/s). "
                                      "GB/s counts bytes.", COUNTED_BITS),
            (lambda: n * 8 / s / 2**30, "You counted bits and used GiB (2**30). GB/s counts bytes, "
                                        "with 1 GB = 10**9 bytes.", COUNTED_BITS),
            (lambda: n / s / 1e6, "That is 1000 times too much: did you divide by 10**6 (that gives MB/s) "
                                  "or treat the seconds as milliseconds?", MEGA_FOR_GIGA),
            (lambda: n / (s * 1e3) / 1e9, "That is 1000 times too little: `seconds` is already in "
                                          "seconds; do not convert it to milliseconds.", TIME_NOT_IN_SECONDS),
            (lambda: n / s, "That is bytes per second. Divide by 10**9 to get GB/s.", NO_GIGA),
            (lambda: n / s * 1e9, "You multiplied by 10**9 where you should divide: GB/s = bytes "
                                  "per second / 10**9.", GIGA_BACKWARDS),
            (lambda: s / n * 1e9, "Your formula is upside down (seconds per byte). Bandwidth is bytes "
                                  "divided by seconds.", RATE_INVERTED),
            (lambda: s / n / 1e9, "Your formula is upside down (seconds per byte). Bandwidth is bytes "
                                  "divided by seconds.", RATE_INVERTED),
            (lambda: n * s / 1e9, "You multiplied by the time where you should divide by it: "
                                  "bandwidth = bytes / seconds.", RATE_INVERTED),
        ]
        diagnosis, code = _diagnose(got, want, candidates, "GB/s", "Bandwidth in GB/s = bytes / seconds / 10**9.")
        want_text, got_text = _fmt(want, got)
        raise Wrong(f"{where} the bandwidth is {want_text} GB/s, you returned {got_text}. {diagnosis}", code)
    return f"Right on {len(_BANDWIDTH_CASES)} copies, from 0 bytes to 12 GB, in decimal GB/s."


# --- exercise 07.transfer_time ------------------------------------------------------------------

def transfer_time(nbytes, latency_s, bandwidth_gbps):
    """Seconds to move ``nbytes`` bytes by the latency + bandwidth model (bandwidth in GB/s, 1 GB = 10**9 bytes)."""
    return latency_s + nbytes / (bandwidth_gbps * 1e9)


NO_LATENCY = misconceptions.define(
    "07.forgot-latency", "Left the latency out of a copy's time",
    "Believes a copy's time is bytes / bandwidth alone; every copy also pays a fixed start-up cost, the latency, "
    "even a copy of 0 bytes: time = latency + bytes / bandwidth. Small copies are almost all latency.",
    section=("07_transfer_cost", "1. Two numbers describe a copy"),
    question="How long does a copy of 0 bytes take on a link with 10 µs latency and 12 GB/s? And one of 4 KB?")
LATENCY_MULTIPLIED = misconceptions.define(
    "07.latency-multiplied", "Multiplied the latency by the flowing time",
    "Believes the latency scales the flowing time; the two costs add up: time = latency + bytes / bandwidth "
    "(the product is not even a time).",
    section=("07_transfer_cost", "1. Two numbers describe a copy"),
    question="On the log-log plot of section 2, which part of the curve is the latency, and which the bandwidth?")


_TIME_CASES = ((100_000_000, 1e-5, 12.0), (4096, 1e-5, 12.0), (0, 8e-6, 25.0), (2**30, 8e-6, 12.0),
               (64, 2e-6, 50.0), (1_000_000_000, 0.0, 10.0), (5_000_000, 3e-3, 0.5))


@grader("07.transfer_time", reference=transfer_time, title="The latency + bandwidth model", hints=(
    "Two parts add up: a fixed start-up cost that every copy pays, and the time the bytes need to flow.",
    "The flowing part is bytes / (bytes per second). The bandwidth is in GB/s, so bytes per second is "
    "`bandwidth_gbps * 1e9` (10**9, not 2**30). The answer is in seconds.",
    "`return latency_s + nbytes / (bandwidth_gbps * 1e9)`",
))
def _grade_transfer_time(fn: Callable) -> str:
    for n, lat, bw in _TIME_CASES:
        want = transfer_time(n, lat, bw)
        where = f"For nbytes={n:,}, latency_s={lat:g} and bandwidth_gbps={bw:g}"
        got = _as_number(call(fn, n, lat, bw, context=f"nbytes={n}, latency_s={lat}, bandwidth_gbps={bw}"),
                         where)
        if _close(got, want):
            continue
        flow = n / (bw * 1e9)
        candidates = [
            (lambda: flow, "You forgot the latency: every copy pays it, even a copy of 0 bytes.", NO_LATENCY),
            (lambda: lat + n / (bw * 2**30), "You used GiB (2**30 bytes). The bandwidth is in GB/s: "
                                             "1 GB = 10**9 bytes.", GIB_FOR_GB),
            (lambda: lat + 8 * n / (bw * 1e9), "The flowing part is 8 times too long: you counted bits. "
                                               "The bandwidth is in bytes per second already.", COUNTED_BITS),
            (lambda: lat + n / (8 * bw * 1e9), "The flowing part is 8 times too short: you converted "
                                               "bits and bytes. Both are in bytes already.", COUNTED_BITS),
            (lambda: 1e3 * want, "That is the time in milliseconds; return seconds.", TIME_NOT_IN_SECONDS),
            (lambda: 1e6 * want, "That is the time in microseconds; return seconds.", TIME_NOT_IN_SECONDS),
            (lambda: 1e3 * lat + flow, "`latency_s` is already in seconds; do not convert it.", TIME_NOT_IN_SECONDS),
            (lambda: lat + flow * 1e3, "The flowing part is 1000 times too long: bytes per second is "
                                       "`bandwidth_gbps * 1e9`, not `* 1e6`.", MEGA_FOR_GIGA),
            (lambda: lat + n / bw, "You forgot to turn GB/s into bytes per second (x 10**9).", NO_GIGA),
            (lambda: lat + n / (bw / 1e9), "You divided the bandwidth by 10**9 where you should multiply: "
                                           "bytes per second = GB/s x 10**9.", GIGA_BACKWARDS),
            (lambda: lat + n * bw * 1e9, "You multiplied the bytes by the bandwidth where you should "
                                         "divide: time = bytes / (bytes per second).", RATE_INVERTED),
            (lambda: lat + n * bw / 1e9, "You multiplied the bytes by the bandwidth where you should "
                                         "divide: time = bytes / (bytes per second).", RATE_INVERTED),
            (lambda: lat + bw * 1e9 / n, "Your flowing part is upside down: time = bytes / bandwidth, "
                                         "not bandwidth / bytes.", RATE_INVERTED),
            (lambda: lat * n / (bw * 1e9), "You multiplied the latency by the flowing time; add them.",
             LATENCY_MULTIPLIED),
        ]
        diagnosis, code = _diagnose(got, want, candidates, "s", "Time = latency_s + nbytes / (bandwidth_gbps x 10**9).")
        want_text, got_text = _fmt(want, got)
        raise Wrong(f"{where} the model gives {want_text} s, you returned {got_text}. {diagnosis}", code)
    return f"Right on {len(_TIME_CASES)} copies, from 0 bytes (all latency) to 1 GB (nearly all bandwidth)."


# --- exercise 07.sum_batches ---------------------------------------------------------------------

def sum_batches(batches, device):
    """Element-wise sum of equally shaped CPU tensors, computed on ``device`` after one host->device copy."""
    stacked = torch.stack(batches).to(device)          # one copy carries every batch
    return stacked.sum(dim=0, dtype=stacked.dtype)     # added up on the device; keeps the dtype


#: Operations that combine values (the "sum" part). Packing (stack, cat), views and copies are not in it.
ARITHMETIC = frozenset({
    "add", "add_", "sum", "nansum", "cumsum", "cumsum_", "sub", "sub_", "mul", "mul_", "div", "div_",
    "mean", "addcmul", "addcmul_", "addcdiv", "index_add", "index_add_", "scatter_add", "scatter_add_",
    "scatter_reduce", "index_reduce", "mm", "bmm", "addmm", "addmv", "mv", "matmul", "dot", "einsum",
    "baddbmm", "_foreach_add", "_foreach_add_", "linear", "tensordot",
})

NEVER_MOVED = misconceptions.define(
    "07.batches-never-copied", "The batches were never copied with `.to`",
    "No tensor copy carried the batches to the device: the sum was made and kept on the CPU, or the data was "
    "rebuilt there from Python lists (`torch.tensor(t.tolist(), device=...)`, which reads every value into "
    "Python first: slow, and no copy the check sees). One `.to(device)` of the stacked batches is the copy asked "
    "for.",
    section=("07_transfer_cost", "5. Move data once"),
    question="Which PyTorch call copies the stacked batches to `device`, and what does "
             "`torch.tensor(t.tolist(), device=device)` do on the way?")
COPY_PER_BATCH = misconceptions.define(
    "07.copy-per-batch", "One copy per batch instead of one for all",
    "Moves each batch with its own `.to(device)`; every copy pays the latency again, so many small copies cost "
    "far more than one copy of the same bytes. Stack the batches on the CPU (`torch.stack`) and move the stack "
    "once.",
    section=("07_transfer_cost", "5. Move data once"),
    question="1,000 batches of 4 KB on a 10 µs, 12 GB/s link: about how long do 1,000 copies take, and one copy "
             "of all of them?")
RESULT_MOVED_BACK = misconceptions.define(
    "07.result-moved-back", "Moved the result back to the CPU",
    "Brings the result back (`.cpu()`, `.to('cpu')`) as if a function must return CPU data; each copy back "
    "costs a transfer and, on a GPU, a wait. Keep the result on the device: the caller decides when (and "
    "whether) to read it.",
    section=("07_transfer_cost", "5. Move data once"),
    question="In section 5, how many copies back does `there_once` make, and why is `sum_batches` asked to make "
             "none?")
SUMMED_ON_CPU = misconceptions.define(
    "07.summed-on-cpu", "Added the batches up on the CPU",
    "Computes the sum before the copy (or beside it) on the CPU, in PyTorch or NumPy, and moves or rebuilds only "
    "the result; the work belongs where the data is going: move the stacked batches once, then add them on the "
    "device.",
    section=("07_transfer_cost", "5. Move data once"),
    question="Stacking on the CPU is allowed but adding is not: what is the difference between the two for the "
             "device?")
CHANGED_LIST = misconceptions.define(
    "07.changed-input-list", "Changed the list it was given",
    "Edits the caller's list (`pop`, `append`, item assignment) as if it were the function's own; the caller "
    "still holds that list. Build new lists or tensors instead.",
    section=("07_transfer_cost", "5. Move data once › Exercise 07.sum_batches"),
    question="After `first = batches.pop(0)` inside `sum_batches`, what does the caller's list hold?")
ADDED_INTO_INPUT = misconceptions.define(
    "07.added-into-input", "Added in place into an input batch",
    "Believes `total = batches[0]` (or `batches[0].to(device)` when the device is the CPU) makes a new tensor; "
    "it names the same tensor, so `total += b` writes into the caller's first batch. Start from a copy "
    "(`.clone()`) or add out of place.",
    section=("07_transfer_cost", "3. Moving a tensor to where it already is"),
    question="`t` is on the CPU and `u = t.to('cpu')`. After `u += 1`, what is in `t`? How do you get a copy?")
RETURNED_INPUT = misconceptions.define(
    "07.returned-input-itself", "Returned an input batch itself",
    "Believes `batch.to(device)` always makes a new tensor; when the batch is already on that device (and "
    "dtype) `.to` returns the very same tensor, so the caller's batch comes back as the result. Ask for a copy "
    "(`.clone()`, `copy=True`).",
    section=("07_transfer_cost", "3. Moving a tensor to where it already is"),
    question="What does `t.to(t.device) is t` print, and what does `t.to(t.device, copy=True) is t` print?")
SQUEEZED_BATCH_DIM = misconceptions.define(
    "07.squeeze-dropped-batch-dim", "`squeeze()` dropped the dimension of the batches",
    "Uses `squeeze()` to tidy the stacked shape; it drops every dimension of size 1, including the stacking "
    "dimension when there is only one batch, and the sum then runs over the wrong dimension.",
    section=("07_transfer_cost", "5. Move data once › Exercise 07.sum_batches"),
    question="What is the shape of `torch.stack([torch.ones(2, 3)]).squeeze()`, and what does `.sum(dim=0)` of it "
             "add up?")
CAT_FOR_STACK = misconceptions.define(
    "07.cat-for-stack", "`torch.cat` where the sum needs `torch.stack`",
    "Believes `torch.cat` and `torch.stack` pack batches the same way; `cat` joins them along their existing "
    "first dimension, so summing over `dim=0` also adds the rows within each batch. `stack` adds a new first "
    "dimension, one entry per batch, to sum over.",
    section=("07_transfer_cost", "5. Move data once › Exercise 07.sum_batches"),
    question="For two batches of shape (3, 4), what shapes do `torch.cat` and `torch.stack` give, and what does "
             "`.sum(dim=0)` of each add up?")
STACK_DIM_KEPT = misconceptions.define(
    "07.stack-dim-kept", "Did not add up over the stacking dimension",
    "Stacks and moves the batches but returns the stack (or adds over another dimension); the element-wise sum "
    "of the batches is the sum over the new first dimension: `.sum(dim=0)`.",
    section=("07_transfer_cost", "5. Move data once › Exercise 07.sum_batches"),
    question="`stacked = torch.stack(batches)` holds 3 batches of shape (4,). What is its shape, and which `dim` "
             "gives their element-wise sum?")
SUM_PROMOTES = misconceptions.define(
    "07.sum-promoted-int", "`torch.sum` turned small integers into `int64`",
    "Expects `torch.sum` to keep the dtype; for integer (and bool) tensors it returns `int64` unless told "
    "`dtype=`, while `+` keeps the dtype of its operands. Since issue 33 the check of 07.sum_batches accepts "
    "that int64 for integer batches (an exact sum; the exercise is about the copy), so new reports no longer "
    "name this code; it stays so that older reports still read.",
    section=("07_transfer_cost", "5. Move data once › Exercise 07.sum_batches"),
    question="What dtype does `torch.stack([a, a]).sum(0)` have for `int32` batches, and how do you keep "
             "`int32`?")
FLOAT_ZEROS = misconceptions.define(
    "07.float-zeros-accumulator", "Started the total from float `torch.zeros`",
    "Starts the running total with `torch.zeros(shape)`, which is `float32` by default whatever the batches' "
    "dtype, so integer batches give a float sum. `torch.zeros_like(batch)` takes the batch's dtype (and "
    "device).",
    section=("01_tensors", "5. Zeros like another tensor"),
    question="`b` is an `int32` batch. What dtypes do `torch.zeros(b.shape)` and `torch.zeros_like(b)` have?")
TOTAL_OVERWRITTEN = misconceptions.define(
    "07.total-overwritten", "Replaced the running total instead of adding",
    "The loop assigns each batch to the total (`total = b`) instead of adding it (`total = total + b`), so "
    "the result is the last batch.",
    section=("07_transfer_cost", "5. Move data once › Exercise 07.sum_batches"),
    question="Trace `total = b` and `total = total + b` over three batches: what does each leave in `total`?")
MEAN_NOT_SUM = misconceptions.define(
    "07.mean-not-sum", "Returned the mean instead of the sum",
    "Averages where the sum is asked for (`.mean()`, or the sum divided by the count); the element-wise sum of "
    "the batches (or the total of the losses) is not divided by their number.",
    section=("07_transfer_cost", "5. Move data once › Exercise 07.sum_batches"),
    question="For batches [1, 2], [3, 4] and [5, 6], what is their element-wise sum, and what is their mean?")
PINNED_WITHOUT_ACCELERATOR = misconceptions.define(
    "07.pinned-without-accelerator", "Pinned memory on a machine without an accelerator",
    "Believes pinning is a CPU-side speed-up that works anywhere; pinned memory is set up by an accelerator's "
    "driver for its copy engine, so `.pin_memory()` (and `pin_memory=True` on a factory) raises without one. "
    "Pin only when the copy goes to a GPU.",
    section=("07_transfer_cost", "4. Pinned memory and `non_blocking`"),
    question="What does `torch.ones(3).pin_memory()` do on a machine without a GPU, and what does "
             "`DataLoader(..., pin_memory=True)` do there?")


_VALUE_CASES = (  # (number of batches, batch shape, dtype)
    (3, (4,), torch.float32), (2, (3, 4), torch.int32), (1, (2, 3), torch.float64), (5, (), torch.int64),
    (4, (2, 3, 2), torch.uint8), (3, (5,), torch.float16), (2, (0, 3), torch.float32),
    (1, (4,), torch.int16), (6, (3, 1), torch.int8),
)
_COUNT_CASES = ((3, (4,), torch.float32), (1, (2, 3), torch.float32), (4, (2, 2), torch.int32))


def _make_batches(count: int, shape: tuple, dtype: torch.dtype, gen: torch.Generator) -> list[torch.Tensor]:
    batches = []
    for _ in range(count):
        if dtype.is_floating_point:
            batches.append(torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype))
        elif dtype == torch.uint8:
            batches.append(torch.randint(0, 20, shape, generator=gen).to(dtype))
        else:
            batches.append(torch.randint(-15, 16, shape, generator=gen).to(dtype))
    return batches


def _label(batches: list[torch.Tensor], device: torch.device) -> str:
    first = batches[0]
    what = "a single batch" if len(batches) == 1 else f"{len(batches)} batches"
    extra = " (a device without data, used to count copies)" if device.type == "meta" else ""
    return (f"{what} of shape {tuple(first.shape)} ({str(first.dtype).replace('torch.', '')}) "
            f"and device={device}{extra}")


def _values_match(got: torch.Tensor, want: torch.Tensor) -> bool:
    got, want = got.cpu(), want.cpu()
    if _promoted_sum(got.dtype, want.dtype):   # torch.sum's int64 for integer batches: compare exactly in int64
        want = want.to(torch.int64)
    if want.dtype.is_floating_point:
        tol = {torch.float16: (1e-2, 2e-2), torch.float32: (1e-5, 1e-5)}.get(want.dtype, (1e-10, 1e-10))
        return bool(torch.allclose(got.double(), want.double(), rtol=tol[0], atol=tol[1]))
    return bool(torch.equal(got, want))


def _check_inputs_untouched(batches: list[torch.Tensor], originals: list[torch.Tensor],
                            saved: list[torch.Tensor], label: str) -> None:
    if len(batches) != len(originals) or any(a is not b for a, b in zip(batches, originals)):
        raise Wrong(f"With {label}, your function changed the list it was given (it now holds "
                    f"{len(batches)} item(s), or different tensors). Build new lists or tensors instead "
                    "of editing `batches`.", CHANGED_LIST)
    for b, s in zip(originals, saved):
        if not same_values(b, s):
            raise Wrong(f"With {label}, your function changed the values of an input batch: an in-place "
                        "add (`total = batches[0]; total += ...`) writes into the first batch. Start from "
                        "a new tensor (e.g. `.clone()`) or use out-of-place `+` / `sum`.", ADDED_INTO_INPUT)


def _check_result(got: Any, want: torch.Tensor, batches: list[torch.Tensor], device: torch.device,
                  label: str) -> torch.Tensor:
    got = expect_tensor(got, f"With {label}, your result")
    if any(got is b for b in batches) or (
            got.device.type == "cpu" and got.numel() > 0 and any(
                b.numel() > 0 and got.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
                for b in batches)):
        raise Wrong(f"With {label}, you returned one of the input batches itself (or a view of it), not "
                    "a new tensor. Careful: `.to(device)` returns the very same tensor when it is already "
                    "there. Changing your result would change the caller's batch; return a new tensor.",
                    RETURNED_INPUT)
    if got.device.type != device.type:
        if got.device.type == "cpu":
            raise Wrong(f"With {label}, your result is on the CPU, but it should stay on `{device}`: "
                        "do not move it back (`.cpu()`, `.to('cpu')`), the caller decides when to.", RESULT_MOVED_BACK)
        raise Wrong(f"With {label}, your result is on `{got.device}`, not on `{device}`.", misconceptions.WRONG_DEVICE)
    if got.shape != want.shape:
        if len(batches) == 1:
            why, code = (" For a single batch the sum is that batch (as a new tensor): watch out for `squeeze()`, "
                         "which also drops the batch dimension when there is only one."), SQUEEZED_BATCH_DIM
        elif want.ndim and got.shape == want.shape[1:]:
            why, code = (" You also added up along the first dimension of each batch. `torch.cat` joins the "
                         "batches along their existing first dimension; `torch.stack` adds a new one in front "
                         "to sum over."), CAT_FOR_STACK
        elif got.ndim == want.ndim + 1:
            why, code = " You kept the stacking dimension: sum over it (`dim=0`).", STACK_DIM_KEPT
        else:
            why, code = "", misconceptions.WRONG_SHAPE
        raise Wrong(f"With {label}, the sum has shape {tuple(want.shape)}, your result has shape "
                    f"{tuple(got.shape)}.{why}", code)
    if got.dtype != want.dtype and not _promoted_sum(got.dtype, want.dtype):
        if not want.dtype.is_floating_point and got.dtype == torch.int64:
            why, code = (" `torch.sum` turns small integer types into int64: pass `dtype=` "
                         "(e.g. `.sum(dim=0, dtype=stacked.dtype)`) or add with `+`."), SUM_PROMOTES
        elif not want.dtype.is_floating_point and got.dtype.is_floating_point:
            why, code = (" Integer batches gave a floating-point sum: did you start from `torch.zeros(...)`, "
                         "which is float32 by default? Use the batches' dtype (e.g. `torch.zeros_like`)."), FLOAT_ZEROS
        else:
            why, code = " Keep the dtype of the batches.", misconceptions.WRONG_DTYPE
        raise Wrong(f"With {label}, the sum has dtype {want.dtype}, your result has dtype {got.dtype}.{why}", code)
    return got


def preview(t: torch.Tensor, count: int = 4) -> str:
    """The first ``count`` values of ``t``, for a message (``[1, 2, 3, 4, …]``)."""
    values = t.detach().cpu().flatten()[:count].tolist()
    text = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in values)
    return f"[{text}{', …' if t.numel() > count else ''}]"


def _promoted_sum(got: torch.dtype, want: torch.dtype) -> bool:
    """Whether ``got`` is the int64 that `torch.sum` gives for integer batches of dtype ``want``: an exact sum of
    the batches too, accepted (the task is one copy and adding on the device, not the reduction's dtype rule)."""
    return got == torch.int64 and not (want.is_floating_point or want.is_complex or want == torch.bool)


def _diagnose_values(got: torch.Tensor, want: torch.Tensor, batches: list[torch.Tensor]) -> tuple[str, str]:
    """What wrong values say, and the code of the mistake they name."""
    got_c = got.cpu()
    if any(_values_match(got_c, b) for b in batches) and len(batches) > 1:
        return (" Your result equals one of the batches: does your loop replace the running total "
                "(`total = b`) instead of adding to it?", TOTAL_OVERWRITTEN)
    if want.dtype.is_floating_point and _values_match(got_c * len(batches), want):
        return " Your result is the mean (the sum divided by the number of batches): return the sum.", MEAN_NOT_SUM
    return "", misconceptions.WRONG_VALUE


def _call_and_count(fn: Callable, batches: list[torch.Tensor], device: torch.device,
                    label: str) -> tuple[Any, transfer.count_copies]:
    with transfer.count_copies(device, meta_readback=True) as seen:
        try:
            with ModesKept():  # as `call` does; the check counts copies itself
                got = fn(batches, device)
        except NotImplementedError as e:  # the stub was caught earlier; this comes from `meta`
            raise Wrong(f"With {label}, your code raised NotImplementedError: {safe_repr(str(e), 200)}. "
                        "Meta tensors have no data, so code that reads values (`.tolist()`, `.item()`, "
                        "NumPy) cannot run there. Keep the whole sum as tensor operations.",
                        misconceptions.READ_META) from None
        except (KeyboardInterrupt, TimeLimit):
            raise
        except RuntimeError as e:
            if "meta" in str(e):
                raise Wrong(f"With {label}, your code raised RuntimeError: {safe_repr(str(e), 200)}. "
                            "Meta tensors have no data, so reading a value (`.item()`, `float(t)`, `if t:`) "
                            "cannot run there. On a GPU each such read is a synchronisation too: keep the "
                            "sum as tensor operations.", misconceptions.READ_META) from None
            raise Crashed(e, label) from None
        except BaseException as e:
            raise Crashed(e, label) from None
    return got, seen


def _check_counts(got: Any, seen: transfer.count_copies, batches: list[torch.Tensor],
                  device: torch.device, label: str) -> None:
    count = len(batches)
    one_batch = batches[0].numel() * batches[0].element_size()
    h2d, moved = seen.host_to_device, seen.bytes_to_device
    on_cpu_result = is_tensor(got) and expect_tensor(got, f"With {label}, your result").device.type == "cpu"
    cpu_math = sorted(set(seen.ran_on("cpu", ARITHMETIC)))
    device_math = sorted(set(seen.ran_on(device.type, ARITHMETIC)))
    counted = f"I counted {h2d} host→device transfer{'s' if h2d != 1 else ''}"
    if h2d == 0:
        where = (" and your result is on the CPU: the batches were never moved to the device."
                 if on_cpu_result else ".")
        raise Wrong(f"With {label}, {counted}{where} Move the data with `.to(device)` (the check sees "
                    "copies made by `.to`, `.cuda()`, `torch.as_tensor` and `copy_`; a tensor rebuilt from "
                    "Python lists with `torch.tensor(...)` hides its copy and is slow).", NEVER_MOVED)
    if h2d > 1:
        per_batch = (" That is one transfer per batch: each pays the latency." if h2d == count else "")
        raise Wrong(f"With {label}, {counted}, expected exactly 1.{per_batch} Stack the batches on the CPU "
                    "(`torch.stack(batches)`) and move the stack once.", COPY_PER_BATCH)
    if seen.device_to_host or on_cpu_result:
        raise Wrong(f"With {label}, {counted} (good), but your result is on the CPU"
                    f"{f' (I saw {seen.device_to_host} copy back from the device)' if seen.device_to_host else ''}"
                    f". Return the sum on `device`; the caller decides when to bring it back.", RESULT_MOVED_BACK)
    if count > 1 and moved < count * one_batch:
        math_seen = f" I saw `{'`, `'.join(cpu_math)}` run on CPU tensors." if cpu_math else ""
        raise Wrong(f"With {label}, {counted} (good), but it carried {moved:,} bytes: all {count} batches "
                    f"are {count * one_batch:,} bytes. You added the batches up on the CPU and moved the "
                    f"result.{math_seen} Move the stacked batches, then add them on the device.", SUMMED_ON_CPU)
    if cpu_math:
        raise Wrong(f"With {label}, {counted} (good), but `{'`, `'.join(cpu_math)}` ran on CPU tensors: "
                    "the sum must be computed on the device. Stacking on the CPU is fine (a copy, not a "
                    "sum); the adding belongs after the move.", SUMMED_ON_CPU)
    if count > 1 and not device_math:
        raise Wrong(f"With {label}, {counted} (good), but I saw no addition (`add`, `sum`, ...) on "
                    f"`{device}`. Add the batches up on the device, with tensor operations.", SUMMED_ON_CPU)


def _check_values(fn: Callable, devices: list[torch.device], gen: torch.Generator) -> None:
    """The learner's sums against the reference's, for every value case the device supports."""
    for dev in devices:
        for count, shape, dtype in _VALUE_CASES:
            if not _device.supports_dtype(dev, dtype):  # no float64 on MPS
                continue
            batches = _make_batches(count, shape, dtype, gen)
            originals, saved = list(batches), [b.clone() for b in batches]
            label = _label(batches, dev)
            want = sum_batches([b.clone() for b in batches], dev)
            got = call(fn, batches, dev, context=label)
            _check_inputs_untouched(batches, originals, saved, label)
            got = _check_result(got, want, originals, dev, label)
            if not _values_match(got, want):
                why, code = _diagnose_values(got, want, originals)
                raise Wrong(f"With {label}, the values are wrong: expected {preview(want)}, got "
                            f"{preview(got)}." + why, code)


#: What PyTorch says when code needs an accelerator that this machine lacks (pinning memory does).
_NO_ACCELERATOR = ("cannot access accelerator device when none is available", "found no nvidia driver",
                   "no pinned memory allocator", "torch not compiled with cuda", "no cuda gpus are available")


def no_accelerator_feedback(e: Crashed) -> Wrong | None:
    """Feedback for code that needs an accelerator on a machine without one, or None."""
    message = str(e.error)
    if not isinstance(e.error, (RuntimeError, AssertionError)) or not any(
            text in message.lower() for text in _NO_ACCELERATOR):
        return None
    try:
        lines = [frame.line or "" for frame in traceback.extract_tb(e.error.__traceback__)]
    except Exception:
        lines = []
    said = f"your code raised {type(e.error).__name__}: {safe_repr(message, 200)}"
    if "pin" in message.lower() or any("pin_memory" in line for line in lines):
        return Wrong(
            f"With {e.context}, {said}\nPinning memory (`.pin_memory()`, `pin_memory=True`) needs an "
            "accelerator: the accelerator's driver sets up the pinned (page-locked) memory, so on a machine "
            "without one it fails. The message depends on the PyTorch build: \"Cannot access accelerator "
            "device when none is available.\" on a CPU-only build, \"Found no NVIDIA driver on your "
            "system\" on a CUDA build without a GPU. This exercise does not need pinning: stack the batches "
            "and move them with one `.to(device)`. To keep it anyway, pin only when the copy goes to a GPU: "
            "`if device.type == \"cuda\": stacked = stacked.pin_memory()`.", PINNED_WITHOUT_ACCELERATOR)
    return Wrong(f"With {e.context}, {said}\nThat call needs an accelerator, and this machine has none. Here "
                 "that usually comes from pinning memory (`.pin_memory()`, `pin_memory=True`: the accelerator's "
                 "driver sets pinned memory up) or from naming a GPU yourself (`.cuda()`, `\"cuda\"`). The "
                 "exercise needs neither: stack the batches and move them with one `.to(device)`, using the "
                 "`device` you are given; that works for every device, the CPU included. To pin anyway, pin "
                 "only when the copy goes to a GPU: `if device.type == \"cuda\": stacked = stacked.pin_memory()`.",
                 misconceptions.RAISED_DEVICE)


@grader("07.sum_batches", reference=sum_batches, title="Move once, add on the device", hints=(
    "Moving each batch separately pays the latency once per batch. How can you put all the batches "
    "into a single tensor while they are still on the CPU?",
    "`torch.stack(batches)` makes one tensor with a new first dimension, one row per batch. Move that "
    "with a single `.to(device)`, then add along the first dimension on the device (`.sum(dim=0)`). For "
    "integer batches `torch.sum` gives int64, which the check accepts; `dtype=stacked.dtype` keeps theirs.",
    "`stacked = torch.stack(batches).to(device)` then "
    "`return stacked.sum(dim=0, dtype=stacked.dtype)`",
))
def _grade_sum_batches(fn: Callable) -> str:
    gen = torch.Generator().manual_seed(7)
    devices = devices_to_test()                                   # cpu, meta, and the accelerator if any
    value_devices = [d for d in devices if d.type != "meta"]      # where values can be read
    count_devices = [d for d in devices if d.type != "cpu"]       # where copies can be counted

    # 1. values on the CPU; 2. copies and where the adding ran, on meta (and the accelerator);
    # 3. values on the accelerator. Counting before reading accelerator values means an answer
    # that never moves the batches is told so, not that its result came back to the CPU.
    cpu_devices = [d for d in value_devices if d.type == "cpu"]
    try:
        _check_values(fn, cpu_devices, gen)
        for dev in count_devices:
            for count, shape, dtype in _COUNT_CASES:
                batches = _make_batches(count, shape, dtype, gen)
                originals, saved = list(batches), [b.clone() for b in batches]
                label = _label(batches, dev)
                got, seen = _call_and_count(fn, batches, dev, label)
                _check_counts(got, seen, originals, dev, label)
                _check_inputs_untouched(batches, originals, saved, label)
                _check_result(got, torch.empty(shape, dtype=dtype, device="meta"), originals, dev, label)
        _check_values(fn, [d for d in value_devices if d.type != "cpu"], gen)
    except Crashed as e:
        wrong = no_accelerator_feedback(e)
        if wrong is None:
            raise
        raise wrong from None

    where = ", ".join(str(d) for d in value_devices)
    counted = ", ".join(str(d) for d in count_devices)
    ints = call(fn, [torch.ones(2, dtype=torch.int32), torch.ones(2, dtype=torch.int32)], torch.device("cpu"))
    note = (" Your integer sums come back as int64, as `torch.sum` gives them (an exact sum, accepted); "
            "`.sum(dim=0, dtype=stacked.dtype)` or `+` would keep the batches' dtype."
            if is_tensor(ints) and ints.dtype == torch.int64 else "")
    return (f"Right: values on {where} for 1 to 6 batches, 7 dtypes and shapes from 0-d to 3-d; "
            f"exactly one host→device transfer carrying every batch, and the adding done on the device "
            f"(counted on {counted}).{note}")


__all__ = ["bandwidth_gbps", "transfer_time", "sum_batches", "ARITHMETIC"]
