"""Lesson 07 - transfer cost: units and the latency + bandwidth model: 07.bandwidth_gbps and
07.transfer_time. Moving data once (07.sum_batches) is in :mod:`course_utils.lessons.l07_sum_batches`, the capstone
in :mod:`course_utils.lessons.l07_capstone`."""
from __future__ import annotations

import math
from typing import Any, Callable

from .. import misconceptions
from ..exercises import grader
from ..grading import Wrong, call, expect_float

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
    return (rounded, ROUNDED) if rounded else (default, misconceptions.WRONG_VALUE)


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
    return (f"Your answer looks rounded {how} (by `round`, `int`, `//` or a format string). Return the full value; "
            f"round only when you display it, e.g. `print(f\"{{value:.3g}} {unit}\")`.") if how else ""


# --- exercise 07.bandwidth_gbps ------------------------------------------------------------------

def bandwidth_gbps(nbytes, seconds):
    """Achieved bandwidth in GB/s (1 GB = 10**9 bytes) for ``nbytes`` bytes moved in ``seconds`` seconds."""
    return nbytes / seconds / 1e9


GIB_FOR_GB = misconceptions.code("07.gib-for-gb")
COUNTED_BITS = misconceptions.code("07.counted-bits")
MEGA_FOR_GIGA = misconceptions.code("07.mega-for-giga")
TIME_NOT_IN_SECONDS = misconceptions.code("07.time-not-in-seconds")
NO_GIGA = misconceptions.code("07.gb-not-converted")
GIGA_BACKWARDS = misconceptions.code("07.gb-converted-backwards")
RATE_INVERTED = misconceptions.code("07.rate-formula-inverted")
ROUNDED = misconceptions.code("07.rounded-result")

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


NO_LATENCY = misconceptions.code("07.forgot-latency")
LATENCY_MULTIPLIED = misconceptions.code("07.latency-multiplied")

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
        got = _as_number(call(fn, n, lat, bw, context=f"nbytes={n}, latency_s={lat}, bandwidth_gbps={bw}"), where)
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


__all__ = ["bandwidth_gbps", "transfer_time"]
