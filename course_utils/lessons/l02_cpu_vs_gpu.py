"""Lesson 02 - CPU vs GPU: picking a device, counting FLOPs, timing asynchronous work correctly."""
from __future__ import annotations

import traceback
from typing import Any, Callable

import torch

from .. import misconceptions
from ..exercises import grader
from ..grading import NO_GPU_CUDA_BUILD, OTHER_ACCELERATOR, CallsNoted, Crashed, Wrong, call, expect_int, safe_repr

# --- exercise 02.pick_device -----------------------------------------------------------------

HARD_CODED = misconceptions.code("02.hard-coded-device")
NOT_CHECKED = misconceptions.code("02.accelerator-not-checked")
NO_CPU_FALLBACK = misconceptions.code("02.no-cpu-fallback")
DEVICE_STRING = misconceptions.code("02.returned-device-string")
CUDA_ONLY = misconceptions.code("02.cuda-only-check")
BACKEND_LIST = misconceptions.code("02.backend-list")


def pick_device():
    """The accelerator if there is one (CUDA, MPS, XPU, ...), else the CPU, as a torch.device."""
    if torch.accelerator.is_available():
        return torch.accelerator.current_accelerator()
    return torch.device("cpu")


def _picked(fn: Callable, where: str) -> Any:
    """Call the learner's pick_device; turn a crash into feedback that says what went wrong."""
    try:
        return call(fn, context=where)
    except Crashed as e:
        if isinstance(e.error, SystemExit):
            raise
        message = safe_repr(str(e.error), 200)
        low = message.lower()
        ask = "`torch.accelerator.is_available()` first and fall back to `torch.device(\"cpu\")`."
        if "nvidia driver" in low and _raised_in_accelerator_api(e.error):
            # a CUDA build without a GPU: torch.accelerator.current_device_index() and co.
            code, why = NOT_CHECKED, f"That call needs an accelerator. Ask {ask}"
        elif "not compiled with cuda" in low or "nvidia driver" in low:
            code, why = HARD_CODED, f"This is what hard-coding `\"cuda\"` does on a machine without CUDA. Ask {ask}"
        elif "NoneType" in message:
            code, why = NOT_CHECKED, ("`torch.accelerator.current_accelerator()` is None when there is no accelerator: "
                                      f"check {ask}")
        elif "none is available" in low:
            code, why = NOT_CHECKED, f"That call needs an accelerator. Ask {ask}"
        else:  # no mistake the check knows: the learner's code raised
            code, why = misconceptions.RAISED, "Read the message and fix the cell; `pick_device()` takes no arguments."
        raise Wrong(f"{where[0].upper()}{where[1:]}, your function raised {type(e.error).__name__}: {message}\n"
                    f"`pick_device()` must never fail there. {why}", code) from None


def _raised_in_accelerator_api(error: BaseException) -> bool:
    """Whether ``error`` came out of ``torch.accelerator`` (asked before ``is_available()``), not a CUDA call."""
    return any("/torch/accelerator/" in frame.f_code.co_filename.replace("\\", "/")
               for frame, _ in traceback.walk_tb(error.__traceback__))


def _expect_device(got: Any, where: str) -> torch.device:
    if issubclass(type(got), str):
        raise Wrong(f"{where[0].upper()}{where[1:]}, you returned the string {safe_repr(got)}. Return a "
                    f"`torch.device`, e.g. `torch.device({safe_repr(got)})`: a string is not a device "
                    f"(`torch.device('cpu') == 'cpu'` is False), and has no `.type` to inspect.", DEVICE_STRING)
    if got is None:
        raise Wrong(f"{where[0].upper()}{where[1:]}, you returned None. Without an accelerator, return "
                    "`torch.device(\"cpu\")` (`current_accelerator(check_available=True)` is None there).",
                    NO_CPU_FALLBACK)
    if type(got) is not torch.device:  # its real type: `__class__`, which isinstance asks, can lie
        raise Wrong(f"{where[0].upper()}{where[1:]}, you returned {safe_repr(got)} ({type(got).__name__}); "
                    "`pick_device()` should return a `torch.device`.", misconceptions.WRONG_TYPE)
    return got


#: Backend-specific availability checks: (module, function, (the backend's name, its module's name)).
_BACKEND_CHECKS = ((torch.cuda, "is_available", ("CUDA", "torch.cuda")),
                   (torch.cuda, "device_count", ("CUDA", "torch.cuda")),
                   (torch.backends.mps, "is_available", ("MPS", "torch.backends.mps")),
                   (torch.backends.mps, "is_built", ("MPS", "torch.backends.mps")),
                   (getattr(torch, "mps", None), "is_available", ("MPS", "torch.mps")),
                   (getattr(torch, "xpu", None), "is_available", ("XPU", "torch.xpu")),
                   (getattr(torch, "xpu", None), "device_count", ("XPU", "torch.xpu")),
                   (getattr(torch, "mtia", None), "is_available", ("MTIA", "torch.mtia")))


def _backend_list_feedback(asked: list[tuple[str, str]]) -> str:
    names = [backend for backend, _ in asked]
    modules = ", ".join(f"`{where}`" for _, where in asked)
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return (f"When `torch.accelerator` reports an accelerator (the check pretends one), your function returned "
            f"`cpu`. It asks backends one by one ({modules}), and the simulated accelerator is none of {listed}: "
            "it stands for any backend your list leaves out. A fixed list of backends misses the others PyTorch "
            "supports (and any it adds later), and the check cannot pretend to be each of them. Ask "
            "`torch.accelerator.is_available()` and use `torch.accelerator.current_accelerator()`: they know "
            "whichever accelerator this PyTorch was built for, so your code needs no list.")


@grader("02.pick_device", points=2, reference=pick_device, title="Pick the best device", hints=(
    "PyTorch has one device-agnostic module for this question: `torch.accelerator`. It knows CUDA, "
    "MPS, XPU and the other accelerators, so your code does not have to list them.",
    "`torch.accelerator.is_available()` says whether there is an accelerator; "
    "`torch.accelerator.current_accelerator()` gives its `torch.device`. Without one, fall back to "
    "`torch.device(\"cpu\")`.",
    "`if torch.accelerator.is_available(): return torch.accelerator.current_accelerator()`, "
    "then `return torch.device(\"cpu\")`.",
))
def _grade_pick_device(fn: Callable) -> str:
    # 1. this machine, as it really is
    real = pick_device()
    where = "on this machine (no accelerator)" if real.type == "cpu" else f"on this machine (accelerator: {real.type})"
    got = _expect_device(_picked(fn, where), where)
    unchecked = None  # a CUDA build without a GPU: told after step 2, which catches hard-coded "cuda"
    built_for = torch.accelerator.current_accelerator()
    if real.type == "cpu" and built_for is not None and got.type == built_for.type:
        unchecked = Wrong(f"This machine has no usable accelerator, yet your function returned `{got}`. "
                          f"`torch.accelerator.current_accelerator()` names the accelerator PyTorch was "
                          f"*built* for (`{built_for.type}` here), usable or not: check "
                          "`torch.accelerator.is_available()` first, or pass `check_available=True`.", NOT_CHECKED)
    elif got.type != real.type:
        if real.type == "cpu":
            raise Wrong(f"This machine has no accelerator, yet your function returned `{got}` instead of `cpu`. It "
                        f"looks hard-coded: hard-coding `\"{got.type}\"` works on one kind of machine and breaks on "
                        "the others. Ask `torch.accelerator` what this machine has.", HARD_CODED)
        raise Wrong(f"This machine has a {real.type} accelerator, but your function returned `{got}`. "
                    "Return the accelerator when `torch.accelerator.is_available()` is True.",
                    misconceptions.WRONG_DEVICE)  # hard-coded, CUDA-only or CPU only: this step cannot tell

    # 2. an accelerator that is not CUDA
    where = "when PyTorch reports an accelerator that is not CUDA (the check pretends one, as on a Mac)"
    with OTHER_ACCELERATOR.simulate(fn) as fake, CallsNoted(_BACKEND_CHECKS, answer=fn) as asked:
        got = _expect_device(_picked(fn, where), where)
    asked = list(dict.fromkeys(asked))
    if got.type == "cpu" and any(backend != "CUDA" for backend, _ in asked):
        raise Wrong(_backend_list_feedback(asked), BACKEND_LIST)
    if got.type == "cpu":
        raise Wrong(f"{where[0].upper()}{where[1:]}, your function returned `cpu`. Testing only "
                    "`torch.cuda.is_available()` (or a fixed list of backends) misses Apple's MPS, "
                    "Intel's XPU and others: ask `torch.accelerator.is_available()` and use "
                    "`torch.accelerator.current_accelerator()`.", CUDA_ONLY)
    if got.type != fake.type:
        raise Wrong(f"{where[0].upper()}{where[1:]}, your function returned `{got}`. It hard-codes a backend, "
                    "or tests backends one by one (`torch.cuda`, `torch.backends.mps`, ...) and so misses the "
                    "others: ask `torch.accelerator.current_accelerator()` instead.", HARD_CODED)
    if unchecked is not None:
        raise unchecked

    # 3. no accelerator, on a PyTorch build that supports CUDA (like a GPU-less cloud machine)
    where = f"on a machine without an accelerator (simulated: {NO_GPU_CUDA_BUILD.name})"
    with NO_GPU_CUDA_BUILD.simulate(fn):
        got = _expect_device(_picked(fn, where), where)
    if got.type != "cpu":
        raise Wrong(f"{where[0].upper()}{where[1:]}, your function returned `{got}`. "
                    "`torch.accelerator.current_accelerator()` names the accelerator PyTorch was *built* for, "
                    "usable or not: check `torch.accelerator.is_available()` first, or pass `check_available=True`.",
                    NOT_CHECKED)
    return (f"Right here (`{real.type}`), with a simulated non-CUDA accelerator, and with no accelerator "
            "at all: your code is device-agnostic.")


# --- exercise 02.matmul_flops ----------------------------------------------------------------

FLOPS_FORGOT_2 = misconceptions.code("02.flops-forgot-the-2")
FLOPS_OUTPUTS = misconceptions.code("02.flops-counted-outputs")
FLOPS_PER_OUTPUT = misconceptions.code("02.flops-one-multiply-add-per-output")
FLOPS_EXACT = misconceptions.code("02.flops-exact-count")
FLOPS_THREE = misconceptions.code("02.flops-three-per-term")
FLOPS_FLOAT = misconceptions.code("02.flops-through-float")
FLOPS_EMPTY = misconceptions.code("02.flops-empty-product")
FLOPS_ONE = misconceptions.code("02.flops-one-by-one")


def matmul_flops(n):
    """Floating-point operations of an n×n @ n×n matrix product, as PyTorch's FLOP counter counts them."""
    return 2 * n ** 3


#: Sizes checked, in order: a typical size first (it tells the usual mistakes apart), then the
#: edge cases, then sizes too large for a float to hold 2·n³ exactly.
_FLOP_SIZES = (7, 0, 1, 2, 3, 16, 100, 1024, 4096, 10**6 + 1, 2**40 + 3)


@grader("02.matmul_flops", reference=matmul_flops, title="Count a matmul's FLOPs as PyTorch's counter does", hints=(
    "The product has n×n outputs. Write one out for n = 2: how many multiplications, how many additions? "
    "Then compare with `counted_flops(1)`, `counted_flops(2)` and `counted_flops(3)`.",
    "Each output is a sum of n products: n multiplications and n − 1 additions. The counter (like every "
    "published GFLOP/s figure) rounds that up to n multiply-adds: 2n operations for each of the n² outputs.",
    "`return 2 * n ** 3`: integers only, so it stays exact for any n.",
))
def _grade_matmul_flops(fn: Callable) -> str:
    for n in _FLOP_SIZES:
        want = matmul_flops(n)
        got = expect_int(call(fn, n, context=f"n={n}"), f"For n={n}", want=want, advice=_FLOP_ADVICE)
        if got != want:
            why, code = _flops_diagnosis(n, got)
            raise Wrong(f"For n={n} the count is {want:,}, you returned {got:,}. " + why, code)
    return (f"Exact for {len(_FLOP_SIZES)} sizes, from n = 0 and 1 up to n = {max(_FLOP_SIZES):,}: "
            "2·n³ as a Python int.")


#: What to return instead of a tensor, a float or a NumPy integer, and why, for a count of FLOPs.
_FLOP_ADVICE = {
    "tensor": "Return a plain Python int: a count needs no tensor (and int64 tensors overflow for large n).",
    "float": "Return an int: a float holds whole numbers exactly only up to 2**53 (about 9e15), so for large n "
             "a float count is rounded. Use integer arithmetic: `2 * n ** 3`, not `2 * n ** 3.0`, `math.pow` or `/`.",
    "integral": "Return a plain int (`int(...)` converts it), and compute with Python ints: unlike NumPy's, they "
                "never overflow.",
}


def _flops_diagnosis(n: int, got: int) -> tuple[str, str]:
    """What the wrong count ``got`` for ``n`` says, and the misconception's code."""
    if n == 0:
        return "Empty matrices need no arithmetic at all.", FLOPS_EMPTY
    if n == 1:
        return "A 1×1 product is one multiplication and, by the 2·n³ convention, one addition: 2.", FLOPS_ONE
    if got == n ** 3:
        return ("That is n³: you forgot the 2. Each of the n³ terms is a multiplication AND an addition "
                "(the add that accumulates it into the sum).", FLOPS_FORGOT_2)
    if got == n ** 2:
        return ("That is n², the number of outputs. Each output is a sum of n products, each multiplied and added.",
                FLOPS_OUTPUTS)
    if got == 2 * n ** 2:
        return ("That is 2·n²: one multiply-add per output. But each of the n² outputs needs n "
                "multiply-adds, one per term of its sum.", FLOPS_PER_OUTPUT)
    if got == n ** 2 * (2 * n - 1):
        return ("That is the exact count n²(2n−1): n multiplications and n−1 additions per output, right as "
                "arithmetic. The exercise asks for what PyTorch's FLOP counter reports, though: compare "
                "`counted_flops(2)`, 16, with your formula's 12. The counter, like every quoted GFLOP/s figure, "
                "rounds each output up to n multiply-adds: 2n operations per output, 2·n³ in all.", FLOPS_EXACT)
    if got in (int(2 * float(n) ** 3), int(2 * float(n ** 3)), int(float(2 * n ** 3))):
        return ("Your value went through a float on the way and was rounded: floats hold whole numbers "
                "exactly only up to 2**53. Use integer arithmetic: `2 * n ** 3`.", FLOPS_FLOAT)
    if got == 3 * n ** 3:
        return "Each term is one multiplication and one addition: 2 operations, not 3.", FLOPS_THREE
    return ("Count it as 2·n³: n² outputs, each a sum of n products, each product a multiply and an add.",
            misconceptions.WRONG_VALUE)
