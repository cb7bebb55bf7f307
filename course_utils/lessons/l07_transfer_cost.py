"""Lesson 07 - transfer cost: units, the latency + bandwidth model, and moving data once."""
from __future__ import annotations

import copy
import math
import os
import sys
import traceback
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .. import device as _device
from .. import misconceptions, modes, transfer
from ..exercises import grader
from ..grading import (Crashed, ModesKept, NotAttempted, TimeLimit, Wrong, call, devices_to_test, expect_float,
                       expect_tensor, is_tensor, safe_repr, same_values, text_of)
from ..quizzes import add_quiz
from .l06_mismatch_errors import CONSTANT_AS_PARAMETER, MADE_IN_FORWARD, NO_SUPER_INIT, PLAIN_ATTRIBUTE

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


def _preview(t: torch.Tensor, count: int = 4) -> str:
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
                raise Wrong(f"With {label}, the values are wrong: expected {_preview(want)}, got "
                            f"{_preview(got)}." + why, code)


#: What PyTorch says when code needs an accelerator that this machine lacks (pinning memory does).
_NO_ACCELERATOR = ("cannot access accelerator device when none is available", "found no nvidia driver",
                   "no pinned memory allocator", "torch not compiled with cuda", "no cuda gpus are available")


def _no_accelerator_feedback(e: Crashed) -> Wrong | None:
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
        wrong = _no_accelerator_feedback(e)
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


# --- exercise 07.capstone -------------------------------------------------------------------------

class Classifier(nn.Module):
    """Classifies sequences of 8 features into 3 classes; ``fit`` resumes training from a checkpoint."""

    def __init__(self, features=8, classes=3):
        super().__init__()
        self.layer = nn.Linear(features, classes)
        self.register_buffer("mean", torch.zeros(features))      # a buffer: `.to` moves it, the checkpoint fills it

    def forward(self, x):                                         # x: (batch, time steps, features)
        recent = torch.linspace(0.5, 1.0, x.shape[1], device=x.device)   # made where the input is
        pooled = ((x - self.mean) * recent[:, None]).sum(dim=1) / recent.sum()
        return self.layer(pooled)

    def fit(self, batches, device, checkpoint):
        """Resume from ``checkpoint``, take one Adam step per ``(inputs, labels)`` batch on ``device``, and
        return the optimizer and the sum of the losses (a 0-dim tensor on ``device``)."""
        self.load_state_dict(checkpoint["model"])
        self.to(device)                                           # move the model first,
        optimizer = torch.optim.Adam(self.parameters(), lr=0.01)  # then build the optimizer
        optimizer.load_state_dict(checkpoint["optimizer"])        # (its state goes where the parameters are)
        class_weights = torch.tensor([1.0, 2.0, 1.0], device=device)   # class 1 is rare: it counts double
        total = torch.zeros((), device=device)
        for inputs, labels in batches:
            inputs, labels = inputs.to(device), labels.to(device)
            loss = F.cross_entropy(self(inputs), labels, weight=class_weights)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()                                # no .item(): nothing waits, step after step
        return optimizer, total


BATCH_NOT_MOVED = misconceptions.define(
    "07.batch-not-moved", "A batch's inputs or labels never moved",
    "Moves the model to the device but not the data it is fed: each batch's `inputs` and `labels` are still "
    "CPU tensors when they meet the weights or the output. `Module.to` moves the model's own tensors only; "
    "each batch needs `inputs = inputs.to(device)` (and the labels with it) inside the loop.",
    section=("06_mismatch_errors", "2. Cause: an input that was never moved"),
    question="`self.to(device)` has run. Where are a batch's `inputs` and `labels` when the loop takes them, and "
             "which line moves them?")
MADE_IN_FIT = misconceptions.define(
    "07.made-in-fit-without-device", "A tensor made in the training code without `device=`",
    "Believes a tensor made in the training loop beside device tensors (a scale, an offset, a mask) lands on their "
    "device; a factory call (`torch.ones`, `torch.full`, `torch.tensor`...) uses the default device, the CPU, "
    "unless given `device=device`.",
    section=("06_mismatch_errors", "3. Cause: a tensor made inside `forward`"),
    question="`fit` is given `device`. Where does `torch.ones(8)` made inside `fit` live, and how do you make it "
             "where the batches go?")
OPTIMIZER_BEFORE_MOVE = misconceptions.define(
    "07.optimizer-before-move", "Optimizer built or loaded before the model moved",
    "Builds the optimizer or loads its state before `model.to(device)`. State loaded then goes next to the CPU "
    "parameters and stays there (a GPU step raises); on `meta`, where `.to` makes new parameter objects, an "
    "optimizer built before the move holds the old ones and trains nothing. Move the model, then build the "
    "optimizer, then load its state: `load_state_dict` puts each state tensor next to its parameter.",
    section=("06_mismatch_errors", "6. Optimizer state"),
    question="Resuming from a checkpoint: in which order do `model.to(device)`, building the optimizer and "
             "`optimizer.load_state_dict(...)` go, and why?")
OPTIMIZER_NOT_LOADED = misconceptions.define(
    "07.optimizer-state-not-loaded", "Resumed without the optimizer's state",
    "Believes loading the model's weights resumes training; the optimizer's state (Adam's running averages and "
    "step count) is saved apart and must be loaded too, into the optimizer built after the move: "
    "`optimizer.load_state_dict(checkpoint[\"optimizer\"])`.",
    section=("06_mismatch_errors", "6. Optimizer state"),
    question="What does Adam keep for each parameter, and what is lost if a resumed run loads only the model's "
             "`state_dict`?")
LOSS_WEIGHT_ON_CPU = misconceptions.define(
    "07.loss-weight-on-cpu", "The loss's class weights left on the CPU",
    "Makes the loss's constants (`weight=`, `pos_weight=`) with `torch.tensor([...])`, on the CPU, while the "
    "model's output is on the device; the model's `.to` does not move them. Make them with `device=device` "
    "(with `nn.CrossEntropyLoss(weight=w)`, moving the loss module moves its weight, a buffer).",
    section=("06_mismatch_errors", "Pitfalls"),
    question="`class_weights = torch.tensor([1.0, 2.0, 1.0])` and the logits are on the GPU. What does "
             "`F.cross_entropy(logits, labels, weight=class_weights)` do, and what is the fix?")
READ_EVERY_STEP = misconceptions.define(
    "07.value-read-every-step", "A value read back every step",
    "Believes `loss.item()` (or `float(loss)`, `print(loss)`, `.cpu()`) costs only a few bytes; on a GPU it "
    "makes the CPU wait for all queued work, every step, so it can no longer run ahead. Keep the running total "
    "on the device and read it once at the end.",
    section=("07_transfer_cost", "6. Hidden synchronisations"),
    question="Which lines of a training loop make the CPU wait for the GPU, and how do you log the loss without "
             "waiting every step?")
TOTAL_READ_BACK = misconceptions.define(
    "07.total-read-back", "Returned the total as a number or on the CPU",
    "Returns the running total as a Python number (`.item()`, `float`) or a CPU tensor (`.cpu()`), as if a "
    "result had to come back to the host; each is a wait on a GPU. Keep the total a 0-dim tensor on the "
    "device and let the caller read it.",
    section=("07_transfer_cost", "6. Hidden synchronisations"),
    question="`total` is a 0-dim tensor on the GPU. What does `total.item()` cost, and who should call it?")
TOTAL_KEEPS_GRAPH = misconceptions.define(
    "07.total-keeps-graph", "A running total of the loss itself (`total += loss`)",
    "Adds the loss itself to a running total; the loss requires grad, so the total does too and keeps every "
    "step's autograd graph (with its saved activations) alive. Add `loss.detach()`, the value without the graph.",
    section=("07_transfer_cost", "6. Hidden synchronisations"),
    question="After `total += loss` for three steps, does `total` require grad, and what does it keep alive? "
             "What does `loss.detach()` change?")
CHANGED_ARITHMETIC = misconceptions.define(
    "07.changed-the-arithmetic", "Changed what the script computes, not where",
    "Fixes a device bug by changing the computation (dropping the loss's class weights, another model, loss or "
    "optimizer) instead of moving or making tensors on the device; the trained weights then differ from the "
    "reference's. Device fixes change where tensors live, never the numbers.",
    section=("07_transfer_cost", "8. Capstone: a training script with device bugs"),
    question="The class weights are on the CPU. Why is deleting `weight=class_weights` not a fix, and what is?")
SCRIPT_CHANGED = misconceptions.define(
    "07.script-structure-changed", "Changed the given script's structure",
    "Changes what the check builds on (`Classifier` an `nn.Module`, its `layer` and `mean`, the `fit` method, "
    "its state names) while fixing the devices; the check must build the model, load the checkpoint and run "
    "`fit` as the given script does.",
    section=("07_transfer_cost", "8. Capstone: a training script with device bugs"),
    question="Which parts of the capstone's script must stay as given for the check to compare your training "
             "with the reference's?")


_CAPSTONE_STEPS = 4
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OPTIM_DIR = os.path.dirname(torch.optim.__file__) + os.sep
_COURSE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: Operations that take tensors on two devices by design: copies, and indexing with CPU indices.
_BETWEEN_DEVICES = frozenset({"_to_copy", "copy_", "copy", "_copy_from", "_copy_from_and_resize", "to", "index",
                              "index_put", "index_put_", "_index_put_impl_", "_local_scalar_dense"})
#: Operations whose GPU kernels check every argument: a 0-dim CPU tensor is refused there too.
_EVERY_ARGUMENT = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "matmul",
                             "linear", "embedding", "index_select", "cat", "stack", "gather", "nll_loss_forward",
                             "nll_loss2d_forward", "native_layer_norm", "convolution", "_convolution"})


def _capstone_batches(gen: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Four batches of 6 sequences (5 time steps, 8 features) with labels 0 to 2, on the CPU."""
    return [(torch.randn(6, 5, 8, generator=gen) + 0.5, torch.randint(0, 3, (6,), generator=gen))
            for _ in range(_CAPSTONE_STEPS)]


def _capstone_checkpoint() -> dict:
    """What the training saved before: the reference model's weights and mean, and Adam's state after a step."""
    gen = torch.Generator().manual_seed(70)
    model = Classifier()
    with torch.no_grad():
        for t in model.state_dict().values():
            t.copy_(torch.randn(t.shape, generator=gen) * 0.5)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    inputs, labels = _capstone_batches(gen)[0]
    F.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
    return {"model": copy.deepcopy(model.state_dict()), "optimizer": copy.deepcopy(optimizer.state_dict())}


class _Mixed(BaseException):
    """Stops the learner's ``fit`` at its first operation that mixes the CPU with the device (as a GPU would)."""


class _Watch(TorchDispatchMode):
    """Watches one ``fit``: where each CPU tensor came from (a batch's inputs or labels, a plain attribute of the
    model, made in ``forward`` or in ``fit``), the first operation that mixes a CPU tensor with the device's
    tensors (stopped there, as a GPU stops), and the values read back from the device (``.item()``, ``.cpu()``)."""

    def __init__(self, device: torch.device, batches: list, attributes: dict[int, str], repair: bool = False):
        super().__init__()
        self.device = device
        self.device_type = device.type
        self.repair = repair        # go on past each mix, the CPU tensors moved, to meet every bug (part marks)
        self.mixes: list[tuple[str, set[str], bool]] = []
        self.labels: dict[int, set[str]] = {}
        self._kept: list[torch.Tensor] = []              # keeps the ids above from being reused
        self.reads: list[str] = []
        self.mix: tuple[str, set[str], bool] | None = None
        for inputs, labels in batches:
            self._label(inputs, {"inputs"})
            self._label(labels, {"labels"})
        for key, name in attributes.items():
            self.labels[key] = {f"attribute:{name}"}

    @classmethod
    def _should_skip_dynamo(cls) -> bool:   # as transfer.count_copies: keep torch._dynamo unimported
        return False

    def _label(self, t: Any, labels: set[str]) -> None:
        if type(t) is torch.Tensor:
            self.labels[id(t)] = set(labels)
            self._kept.append(t)

    @staticmethod
    def _where() -> tuple[str, bool]:
        """("forward" or "fit", whether the optimizer's code runs), from the learner's frames on the stack."""
        frame, place, optimizer = sys._getframe(2), "fit", False
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(_OPTIM_DIR):
                optimizer = True
            elif not filename.startswith((_TORCH_DIR, _COURSE_DIR)) and frame.f_code.co_name == "forward":
                place = "forward"
            frame = frame.f_back
        return place, optimizer

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        for t in tensors:
            if t.device.type == "cpu" and id(t) not in self.labels:
                self._label(t, {self._where()[0]})
        on_device = any(t.device.type == self.device_type for t in tensors)
        if on_device and name not in _BETWEEN_DEVICES:
            strict = name in _EVERY_ARGUMENT
            culprits = [t for t in tensors if t.device.type == "cpu" and (strict or t.dim() > 0)]
            if culprits:
                labels = set().union(*(self.labels.get(id(t), set()) for t in culprits))
                self.mixes.append((name, labels, self._where()[1]))
                self.mix = self.mix or self.mixes[0]
                if not self.repair:
                    raise _Mixed()
                moved = {id(t): t.to(self.device) for t in culprits}
                args, kwargs = tree_map(lambda a: moved.get(id(a), a) if isinstance(a, torch.Tensor) else a,
                                        (args, kwargs))
                tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        if name == "_local_scalar_dense" and on_device:
            self.reads.append(".item()")
            if self.device_type == "meta":       # no data: go on with a zero, only the count matters
                dtype = args[0].dtype
                return False if dtype == torch.bool else 0.0 if dtype.is_floating_point else 0
        source = args[0] if name == "_to_copy" and args else args[1] if name == "copy_" and len(args) > 1 else None
        if isinstance(source, torch.Tensor) and source.device.type == self.device_type:
            to = args[0].device if name == "copy_" else kwargs.get("device") or source.device
            target = torch.device(to).type
            if target == "cpu":
                self.reads.append(".cpu()")
                if self.device_type == "meta":
                    if name == "copy_":
                        return args[0]
                    return torch.zeros(source.shape, dtype=kwargs.get("dtype") or source.dtype)
        out = func(*args, **kwargs)
        labels = set().union(*(self.labels.get(id(t), set()) for t in tensors if t.device.type == "cpu"))
        for o in tree_flatten(out)[0]:
            if type(o) is torch.Tensor and o.device.type == "cpu" and id(o) not in self.labels:
                self._label(o, labels or {self._where()[0]})
        return out


def _plain_attributes(model: nn.Module) -> dict[int, str]:
    """id -> name of every plain tensor attribute of ``model`` and its submodules."""
    found = {}
    for prefix, sub in model.named_modules():
        for key, value in vars(sub).items():
            if is_tensor(value):
                found[id(value)] = f"{prefix}.{key}" if prefix else key
    return found


def _on(device: torch.device) -> str:
    if device.type == "meta":      # the stand-in only where no GPU (real or simulated) runs the script first
        return "on `meta`" + (" (the stand-in for a GPU here)" if _device.accelerator() is None else "")
    return f"on `{device}`"


def _mix_feedback(op: str, labels: set[str], in_optimizer: bool, device: torch.device) -> tuple[str, str]:
    """What the first operation that mixed the CPU with ``device`` says, and the code of the bug it names."""
    on = _on(device)
    gpu = (" On a GPU that line raises \"Expected all tensors to be on the same device\" (or \"... but got mat1 "
           "is on cpu\"); `cu.explain_error()` after it explains the message.")
    attributes = sorted(label.split(":", 1)[1] for label in labels if label.startswith("attribute:"))
    if in_optimizer:
        return (f"Bug: the optimizer's state. `optimizer.step()` mixed CPU tensors with your parameters {on} "
                f"(in `{op}`): the state loaded from the checkpoint (Adam's running averages) stayed on the CPU, "
                "because it was loaded while the parameters were still there. Move the model first, then build "
                "the optimizer and load its state: `optimizer.load_state_dict` puts each state tensor where its "
                "parameter is at that moment." + gpu + " `cu.show_devices(self, optimizer)` shows where each "
                "state tensor lives.", OPTIMIZER_BEFORE_MOVE)
    if "inputs" in labels:
        return (f"Bug: an input never moved. Your model's weights are {on}, but each batch's `inputs` are still "
                f"on the CPU when they reach them (`{op}` got both)." + gpu + " Move each batch inside the loop: "
                "`inputs = inputs.to(device)`, and the labels with it. (`cu.explain_devices(self, inputs)` lists "
                "where every weight and input lives.)", BATCH_NOT_MOVED)
    if "labels" in labels:
        return (f"Bug: the labels never moved. The model's output is {on}, but each batch's `labels` are still "
                f"on the CPU when the loss compares them (`{op}` got both)." + gpu + " Move them with the "
                "inputs: `labels = labels.to(device)`.", BATCH_NOT_MOVED)
    if attributes:
        name = attributes[0]
        return (f"Bug: a plain tensor attribute. `self.{name}` is a tensor stored with `self.{name} = ...`: "
                "`self.to(device)` moves parameters and buffers, not plain attributes, so it stayed on the CPU "
                f"and met tensors {on} in `forward` (in `{op}`)." + gpu + " Register it as a buffer in "
                f"`__init__`: `self.register_buffer(\"{name}\", torch.zeros(features))`. A buffer also goes into "
                f"`state_dict()`, so the checkpoint's `{name}` loads into it. (`cu.explain_devices(self)` lists "
                "plain attributes apart from buffers.)", PLAIN_ATTRIBUTE)
    if "forward" in labels:
        return (f"Bug: a tensor made in `forward` without a device. A factory call such as `torch.linspace(...)`, "
                "`torch.ones(...)` or `torch.arange(...)` makes its tensor on the CPU (the default device), "
                f"whatever device the input is on, and `{op}` then mixed it with tensors {on}." + gpu + " Make it "
                "where the input is: pass `device=x.device`.", MADE_IN_FORWARD)
    if "loss" in op:
        return (f"Bug: the loss weight. The class weights you give the loss (`weight=...`) are on the CPU: "
                f"`torch.tensor([...])` makes them there, and `{op}` mixed them with the model's output {on}."
                + gpu + " Make them on the device once, before the loop: `torch.tensor([...], device=device)`.",
                LOSS_WEIGHT_ON_CPU)
    return (f"A tensor that `fit` made without a device is on the CPU, and `{op}` mixed it with tensors {on}."
            + gpu + " Make tensors on the device you are given (`device=device`), or move them once before the loop.",
            MADE_IN_FIT)


def _run_fit(cls: type, device: torch.device, batches: list, checkpoint: dict, label: str,
             watch: bool, repair: bool = False) -> tuple[nn.Module, Any, _Watch | None]:
    """Build the learner's model on the CPU, run its ``fit`` on ``device``; the model, what fit returned, the watch
    (``repair``: one that goes on past each mix, for :func:`_bugs_left`)."""
    model = call(cls, context="Classifier()")
    if not issubclass(type(model), nn.Module) or "_parameters" not in vars(model):
        raise Wrong(f"`Classifier()` gave {safe_repr(model)}, not a working nn.Module. Keep "
                    "`class Classifier(nn.Module):` and `super().__init__()` at the start of `__init__`.",
                    NO_SUPER_INIT if issubclass(type(model), nn.Module) else SCRIPT_CHANGED)
    params = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
    if params != [("layer.weight", (3, 8)), ("layer.bias", (3,))]:
        names = ", ".join(f"`{n}` {s}" for n, s in params) or "none"
        raise Wrong(f"`Classifier()` should have exactly the parameters of `self.layer = nn.Linear(8, 3)`; it has "
                    f"{names}. Keep the model as given: the checkpoint holds those weights. The mean is a constant, "
                    "not a parameter: a buffer (`self.register_buffer(...)`).",
                    CONSTANT_AS_PARAMETER if any(n == "mean" for n, _ in params) else SCRIPT_CHANGED)
    fit = getattr(model, "fit", None)
    if not callable(fit):
        raise Wrong("Your `Classifier` has no `fit` method: keep `def fit(self, batches, device, checkpoint):`.",
                    SCRIPT_CHANGED)
    keys = set(model.state_dict())
    checkpoint = {"model": {k: v for k, v in checkpoint["model"].items() if k in keys},
                  "optimizer": checkpoint["optimizer"]}
    watcher = _Watch(device, batches, _plain_attributes(model), repair) if watch else None
    context = f"{label} on {device}"
    try:
        with ModesKept():
            if watcher is None:
                got = fit(batches, device, checkpoint)
            else:
                with watcher:
                    got = fit(batches, device, checkpoint)
    except _Mixed:
        got = None
    except NotImplementedError as e:
        message = text_of(e).lower()
        if "meta" not in message and "could not run" not in message:
            raise NotAttempted() from None
        raise Wrong(f"With {context}, your code read the data of a `meta` tensor: NotImplementedError: "
                    f"{safe_repr(text_of(e), 160)}. Meta tensors have no data; keep values on the device "
                    "(`total += loss.detach()`), don't read them in `fit`.", misconceptions.READ_META) from None
    except (KeyboardInterrupt, TimeLimit):
        raise
    except BaseException as e:
        text = text_of(e)
        if isinstance(e, RuntimeError) and "state_dict" in text and ("Missing key" in text or "Unexpected key" in text):
            raise Wrong(f"With {context}, loading the checkpoint failed: {safe_repr(text, 200)}. The checkpoint "
                        "holds `layer.weight`, `layer.bias` and the buffer `mean`: keep those names.",
                        SCRIPT_CHANGED) from None
        wrong = _no_accelerator_feedback(Crashed(e, context))
        if wrong is not None:
            raise wrong from None
        raise Crashed(e, context) from None
    if watcher is not None and watcher.mix is not None and not repair:
        message, code = _mix_feedback(*watcher.mix, device)
        raise Wrong(f"With {context}: " + message, code)
    return model, got, watcher


def _check_fit(model: nn.Module, got: Any, watcher: _Watch | None, device: torch.device, label: str) -> tuple:
    """Everything about one run but the values: reads, what fit returned, the optimizer, plain attributes."""
    on = _on(device)
    if type(got) not in (tuple, list) or len(got) != 2:
        raise Wrong(f"With {label} on {device}, `fit` returned {safe_repr(got)}; return two things: "
                    "`return optimizer, total`.", misconceptions.WRONG_TYPE)
    optimizer, total = got
    if not issubclass(type(optimizer), torch.optim.Optimizer):
        raise Wrong(f"With {label} on {device}, the first thing `fit` returned is {safe_repr(optimizer)}, not the "
                    "optimizer: `return optimizer, total`.", misconceptions.WRONG_TYPE)
    try:
        held = [p for group in optimizer.param_groups for p in group["params"]]
        params = list(model.parameters())
        state = optimizer.state
    except Exception:
        raise Wrong(f"With {label} on {device}, the optimizer you returned cannot be read (its `param_groups` "
                    "or `state`). Return the `torch.optim.Adam` that `fit` trained with.",
                    misconceptions.ODD_ANSWER) from None
    if len(held) != len(params) or any(not any(h is p for p in params) for h in held):
        raise Wrong("Bug: the optimizer was built before the move. Your optimizer does not hold the model's "
                    f"parameters {on}: it holds {', '.join(safe_repr(h) for h in held[:2])}. "
                    + ("On `meta`, `.to` replaces each parameter with a new tensor, so an optimizer built before "
                       "`self.to(device)` keeps the old CPU ones and never trains the model. On a GPU the "
                       "parameters stay the same objects, but optimizer state loaded before the move stays on "
                       "the CPU. " if device.type == "meta" else "")
                    + "PyTorch's documentation asks for this order: move the model, then build the optimizer, then "
                    "load its state. (`cu.show_devices(self, optimizer)` shows where both live.)",
                    OPTIMIZER_BEFORE_MOVE)
    moments = [(n, t) for p in params for n, t in (state.get(p) or {}).items()
               if is_tensor(t) and n != "step"]
    if not moments:
        raise Wrong(f"With {label} on {device}, the optimizer has no state: load it from the checkpoint "
                    "(`optimizer.load_state_dict(checkpoint[\"optimizer\"])`) after building it.", OPTIMIZER_NOT_LOADED)
    try:
        steps = {float(state[p]["step"]) for p in params if "step" in (state.get(p) or {})}
    except Exception:
        steps = set()
    if steps == {float(_CAPSTONE_STEPS)}:
        raise Wrong(f"With {label} on {device}, the optimizer counted only your {_CAPSTONE_STEPS} steps: its state "
                    "from the checkpoint was never loaded, so training did not resume. Load it after building the "
                    "optimizer: `optimizer.load_state_dict(checkpoint[\"optimizer\"])`.", OPTIMIZER_NOT_LOADED)
    astray = sorted({f"{n} on {t.device}" for n, t in moments if t.device.type != device.type})
    if astray:
        raise Wrong(f"Bug: the optimizer's state. Your parameters are {on}, but Adam's state is not: "
                    f"{', '.join(astray)}. Load the state after the move, into an optimizer built after it: "
                    "`optimizer.load_state_dict` puts each state tensor where its parameter is at that moment.",
                    OPTIMIZER_BEFORE_MOVE)
    if watcher is not None and len(watcher.reads) > 1:
        kinds = ", ".join(sorted(set(watcher.reads)))
        raise Wrong(f"Bug: a value read every step. During {_CAPSTONE_STEPS} steps {on}, your `fit` read "
                    f"{len(watcher.reads)} values back from the device ({kinds}). `loss.item()` (and `float(loss)`, "
                    "`print(loss)`, `.cpu()`, `.tolist()`) makes the CPU wait for the GPU to finish everything queued, "
                    "then copies the value: at every step the CPU stops running ahead. Keep the running total on the "
                    "device: start from `torch.zeros((), device=device)`, add `loss.detach()`, and return it.",
                    READ_EVERY_STEP)
    if not is_tensor(total):
        why = (" That `.item()` (or `float`) is a wait on a GPU; keep the total a tensor on the device."
               if type(total) in (float, int) else "")
        raise Wrong(f"With {label} on {device}, the total loss you returned is {safe_repr(total)} "
                    f"({type(total).__name__}), not a 0-dim tensor on `{device}`.{why} Start from "
                    "`torch.zeros((), device=device)` and add `loss.detach()` each step.",
                    TOTAL_READ_BACK if type(total) in (float, int) else misconceptions.NOT_A_TENSOR)
    total = expect_tensor(total, f"With {label} on {device}, the total loss")
    if total.dim() != 0 or total.device.type != device.type:
        raise Wrong(f"With {label} on {device}, the total loss should be a 0-dim tensor on `{device}`; yours is "
                    f"{safe_repr(total)}. Keep it on the device, and return it without `.item()` or `.cpu()`.",
                    TOTAL_READ_BACK if total.device.type != device.type else misconceptions.WRONG_SHAPE)
    if total.requires_grad:
        raise Wrong(f"With {label} on {device}, your total requires grad: `total += loss` keeps every step's "
                    "autograd graph alive. Add `loss.detach()`, the value without the graph.", TOTAL_KEEPS_GRAPH)
    plain = [name for name in _plain_attributes(model).values()]
    if plain:
        raise Wrong(f"Bug: a plain tensor attribute. `self.{plain[0]}` is a plain tensor attribute: `.to(device)` "
                    "does not move it and `state_dict()` does not save it, so the checkpoint's value never loads. "
                    f"Register it as a buffer: `self.register_buffer(\"{plain[0]}\", torch.zeros(features))`.",
                    PLAIN_ATTRIBUTE)
    return optimizer, total


def _check_capstone_values(model: nn.Module, total: torch.Tensor, want_model: nn.Module, want_total: torch.Tensor,
                  device: torch.device) -> None:
    got_state, want_state = model.state_dict(), want_model.state_dict()
    for key, want in want_state.items():
        got = got_state.get(key)
        if not is_tensor(got):
            raise Wrong(f"After `fit` on {device}, your model has no `{key}`; keep the names of the given script.",
                        SCRIPT_CHANGED)
        got = expect_tensor(got, f"`{key}`")
        if got.shape != want.shape or not torch.allclose(got.detach().float().cpu(), want.float().cpu(),
                                                         rtol=1e-4, atol=1e-5):
            raise Wrong(f"After `fit` on {device}, `{key}` differs from the reference's (expected "
                        f"{_preview(want)}, got {_preview(got)}). Fix the devices, not the arithmetic: keep "
                        "the model, the loss, its weights and the optimizer of the given script.", CHANGED_ARITHMETIC)
    got_total, want_total = total.detach().float().cpu(), want_total.detach().float().cpu()
    if not torch.allclose(got_total, want_total, rtol=1e-4, atol=1e-5):
        mean = " It looks like the mean of the losses; return their sum." if torch.allclose(
            got_total * _CAPSTONE_STEPS, want_total, rtol=1e-4, atol=1e-5) else ""
        raise Wrong(f"After `fit` on {device}, the total loss is {got_total.item():.6g}; the reference's is "
                    f"{want_total.item():.6g}.{mean}", MEAN_NOT_SUM if mean else misconceptions.WRONG_VALUE)


#: Hints that answer what the last check said (``course_utils.hint``, the Hint button show it first).
HINT_FOR = {
    "07.capstone": {
        misconceptions.NOT_ATTEMPTED: "Delete the `raise NotImplementedError` line, run the cell and check: the "
                                      "check then runs the script and stops at its first bug, as a GPU would, "
                                      "and names it. Six bugs hide in the script; fix one at a time.",
    },
}


@grader("07.capstone", points=12, reference=Classifier, title="Capstone: a training script with device bugs", hints=(
    "Six bugs hide in the script; fix one at a time. The check stops at the first bug, as a GPU would, and "
    "names it (it runs the script only once the `raise NotImplementedError` line is gone). Or run the script "
    "yourself on `target` in the cell below it: the error appears where a GPU raises it, and "
    "`cu.explain_error()` explains it.",
    "Ask the course's tools where things live: `cu.explain_devices(model, inputs)` lists every parameter, buffer, "
    "plain attribute and input with its device; `cu.show_devices(model, optimizer)` maps the optimizer's state "
    "too; `transfer.count_copies(target)` counts the copies (and a value read back each step).",
    "The six: move `inputs` and `labels` in the loop; `device=x.device` for the tensor made in `forward`; "
    "`self.register_buffer(\"mean\", ...)` for the plain attribute; `self.to(device)` before building the "
    "optimizer and loading its state; `device=device` for the loss's class weights; and a total kept on the "
    "device (`total = torch.zeros((), device=device)`, `total += loss.detach()`) instead of `.item()` every step.",
))
def _grade_capstone(cls: type) -> str:
    if not issubclass(cls, nn.Module):
        raise Wrong("`Classifier` should subclass `nn.Module`: keep `class Classifier(nn.Module):`.", SCRIPT_CHANGED)
    try:
        return _capstone_verdict(cls)
    except Wrong as wrong:   # part marks: BUG_POINTS for each of the six bugs fixed
        left = _bugs_left(cls)
        wrong.earned = BUG_POINTS * (len(CAPSTONE_BUGS) - len(left))
        if modes.assessed():   # the feedback names the bug, not its fix: say how many remain
            raise Wrong(f"{wrong} Bugs left: {len(left)} of {len(CAPSTONE_BUGS)}.", wrong.code,
                        earned=wrong.earned) from None
        raise


#: The capstone's six bugs, by the code of the misconception each one is, and the points each is worth.
CAPSTONE_BUGS = frozenset({BATCH_NOT_MOVED, PLAIN_ATTRIBUTE, MADE_IN_FORWARD, LOSS_WEIGHT_ON_CPU,
                           OPTIMIZER_BEFORE_MOVE, READ_EVERY_STEP})
BUG_POINTS = 2


def _fresh(seed: int, checkpoint: dict) -> tuple[list, dict]:
    """The capstone's batches (drawn from ``seed``) and a copy of ``checkpoint``."""
    return _capstone_batches(torch.Generator().manual_seed(seed)), copy.deepcopy(checkpoint)


def _reference(device: torch.device, seed: int, checkpoint: dict) -> tuple[nn.Module, torch.Tensor]:
    """The reference's model and total after ``fit`` on ``device``."""
    model = Classifier()
    _, total = model.fit(*_fresh(seed, checkpoint)[:1], device, copy.deepcopy(checkpoint))
    return model, total


def _trains_as_the_script(model: nn.Module, total: Any, checkpoint: dict) -> bool:
    """Whether ``fit`` on the CPU (where no device bug shows) gave the reference's weights and total: as given, or with
    `mean` never loaded (its zeros), which is what the plain-attribute bug does there."""
    cpu = torch.device("cpu")
    unloaded = copy.deepcopy(checkpoint)
    unloaded["model"]["mean"] = torch.zeros_like(unloaded["model"]["mean"])
    got = [t.detach().float() for t in model.parameters()] + [torch.as_tensor(
        total.detach() if is_tensor(total) else float(total)).float().cpu()]
    for saved in (checkpoint, unloaded):
        want_model, want_total = _reference(cpu, 1, saved)
        want = [t.detach().float() for t in want_model.parameters()] + [want_total.detach().float()]
        if len(got) == len(want) and all(g.shape == w.shape and torch.allclose(g.cpu(), w, rtol=1e-4, atol=1e-5)
                                         for g, w in zip(got, want)):
            return True
    return False


def _bugs_left(cls: type) -> set[str]:
    """The six bugs an answer that failed still has; all six unless it trains as the script does on the CPU (where
    no device bug shows: its arithmetic is the script's). Each bug is met on its own on `meta`, on every machine alike:
    one run with the batches on the CPU (are they moved?), one with them on `meta` already (what else mixes), each
    going on past every mix; then the plain attributes, the optimizer's parameters and state, and the reads."""
    cpu, meta, label = torch.device("cpu"), torch.device("meta"), f"{_CAPSTONE_STEPS} batches"
    checkpoint = _capstone_checkpoint()
    try:
        model, (_, total), _ = _run_fit(cls, cpu, *_fresh(1, checkpoint), label, watch=False)
        if not _trains_as_the_script(model, total, checkpoint):
            return set(CAPSTONE_BUGS)
        _, _, moved = _run_fit(cls, meta, *_fresh(2, checkpoint), label, watch=True, repair=True)
        batches, saved = _fresh(2, checkpoint)
        batches = [(inputs.to(meta), labels.to(meta)) for inputs, labels in batches]
        model, (optimizer, _), watcher = _run_fit(cls, meta, batches, saved, label, watch=True, repair=True)
        held = [p for group in optimizer.param_groups for p in group["params"]]
        params = list(model.parameters())
        state = [t for p in params for t in (optimizer.state.get(p) or {}).values() if is_tensor(t) and t.dim()]
    except (Exception, TimeLimit):   # a crash, a stub, changed arithmetic, out of time: no part to mark
        return set(CAPSTONE_BUGS)
    left = {_mix_feedback(*mix, meta)[1] for mix in watcher.mixes}
    left |= {BATCH_NOT_MOVED} if any({"inputs", "labels"} & labels for _, labels, _ in moved.mixes) else set()
    left |= {PLAIN_ATTRIBUTE} if _plain_attributes(model) else set()
    stale = len(held) != len(params) or any(not any(h is p for p in params) for h in held) or any(
        t.device.type != "meta" for t in state)
    left |= {OPTIMIZER_BEFORE_MOVE} if stale else set()
    left |= {READ_EVERY_STEP} if len(watcher.reads) > 1 else set()
    return left & CAPSTONE_BUGS


def _capstone_verdict(cls: type) -> str:
    """The capstone's check: the first bug named as a GPU meets it, or "Right" when all six are fixed."""
    checkpoint = _capstone_checkpoint()
    devices = devices_to_test()
    label = f"{_CAPSTONE_STEPS} batches"

    def fresh(seed: int) -> tuple[list, dict]:
        return _fresh(seed, checkpoint)

    def reference(device: torch.device, seed: int) -> tuple[nn.Module, torch.Tensor]:
        return _reference(device, seed, checkpoint)

    cpu = torch.device("cpu")
    model, got, _ = _run_fit(cls, cpu, *fresh(1), label, watch=False)           # the stub stops here
    cpu_result = (model, got)
    # the learner's GPU (real or simulated) first: the bugs are named as they show there; `meta` last
    for dev in sorted(devices[1:], key=lambda d: d.type == "meta"):
        dev_model, dev_got, watcher = _run_fit(cls, dev, *fresh(2), label, watch=True)
        _, total = _check_fit(dev_model, dev_got, watcher, dev, label)
        if dev.type != "meta":
            _check_capstone_values(dev_model, total, *reference(dev, 2), dev)
    model, got = cpu_result
    _, total = _check_fit(model, got, None, cpu, label)
    _check_capstone_values(model, total, *reference(cpu, 1), cpu)
    where = ", ".join(str(d) for d in devices)
    return (f"Right: all six bugs fixed. On {where}, `fit` moves each batch, keeps every tensor it makes on the "
            "device, holds `mean` as a buffer, builds and loads the optimizer after the move, and reads nothing "
            "back while it trains; the weights and the total loss match the reference's.")


__all__ = ["bandwidth_gbps", "transfer_time", "sum_batches", "ARITHMETIC", "Classifier"]
