"""Lesson 02 - CPU vs GPU: picking a device, counting FLOPs, timing asynchronous work correctly."""
from __future__ import annotations

from typing import Any, Callable

import torch

from .. import misconceptions
from ..exercises import grader
from ..grading import NO_GPU_CUDA_BUILD, OTHER_ACCELERATOR, Crashed, Patched, Wrong, call, expect_int, safe_repr
from ..quizzes import add_quiz

# --- quizzes ---------------------------------------------------------------------------------

add_quiz(
    "02.which_check",
    "Which call tells you whether *any* accelerator PyTorch supports is usable: an NVIDIA GPU, "
    "Apple's MPS, Intel's XPU, ...?",
    ["`torch.cuda.is_available()`", "`torch.device('cuda') is not None`",
     "`torch.backends.cudnn.is_available()`", "`torch.accelerator.is_available()`"],
    3,
    "`torch.accelerator` (PyTorch 2.6 and later) asks whichever accelerator this PyTorch was built for. "
    "`torch.cuda.is_available()` only knows CUDA: it is False on an Apple-silicon Mac even when MPS is "
    "there. `torch.device('cuda')` is just a name and always succeeds; cuDNN is a library, not a device.",
)
add_quiz(
    "02.flops_double",
    "Going from a 1024×1024 to a 2048×2048 matrix product (`a @ b`, both square), how much more "
    "arithmetic is there to do?",
    ["2×", "4×", "8×", "16×"],
    2,
    "Each of the n² outputs is a sum of n products, so the work grows like n³: doubling n gives "
    "2³ = 8 times the arithmetic (the memory only grows 4×).",
)
add_quiz(
    "02.async_trap",
    "On a GPU you run `start = time.perf_counter(); c = a @ b; print(time.perf_counter() - start)` "
    "for two large matrices, with no synchronisation. What does it print?",
    ["Only the time to queue the work: far less than the product takes",
     "The time the GPU needs to compute the product",
     "The product's time plus the time to copy `c` back to the CPU",
     "Nothing: it raises, because `c` is not ready yet"],
    0,
    "GPU work is asynchronous: `a @ b` puts a kernel in the GPU's queue and returns at once. The clock "
    "stops before the GPU has finished. Python only waits when it needs the result (`print(c)`, "
    "`.item()`, `.cpu()`) or when you call `torch.accelerator.synchronize()`.",
)
add_quiz(
    "02.timer_threads",
    "`torch.utils.benchmark.Timer(...)` is created without `num_threads=`. How many CPU threads does "
    "the code it times get?",
    ["One", "As many as PyTorch normally uses (`torch.get_num_threads()`)",
     "One per core, whatever PyTorch's setting", "It depends on the size of the work"],
    0,
    "`benchmark.Timer` defaults to `num_threads=1`, so that measurements compare like with like. Your "
    "real program uses all of PyTorch's threads; pass `num_threads=torch.get_num_threads()` (as "
    "`cu.time_it` does) to time what it will really do.",
)
add_quiz(
    "02.small_throughput",
    "On the same CPU, which gets more GFLOP/s (arithmetic per second): a 16×16 matrix product or a "
    "1024×1024 one?",
    ["About the same: a CPU computes at a fixed speed",
     "16×16: small matrices fit in the cache",
     "It cannot be said without a GPU",
     "1024×1024, by far: a fixed cost per call swamps tiny work"],
    3,
    "Every call pays a fixed cost (Python, PyTorch's dispatcher, and on a GPU a kernel launch) of some "
    "microseconds. A 16×16 product is only 8,192 operations, so it is mostly that fixed cost; a "
    "1024×1024 product is two billion operations that keep every arithmetic unit busy.",
)
add_quiz(
    "02.tiny_add",
    "On the CPU, `x + x` for a 10-element `x` takes some time t per call. About how long per call for "
    "a 10,000-element `x`?",
    ["Less than t", "Not much more than t", "About 100·t", "About 1000·t (1000× the elements)"],
    1,
    "For tiny tensors the fixed cost of a call dominates: adding the numbers themselves takes "
    "nanoseconds. That fixed cost is why tiny work does not belong on a GPU, where the launch costs more.",
)


# --- exercise 02.pick_device -----------------------------------------------------------------

_SECTION_1 = ("02_cpu_vs_gpu", "1. Which device do I have?")

HARD_CODED = misconceptions.define(
    "02.hard-coded-device", "Hard-coded the device (`\"cuda\"`)",
    "Believes writing `\"cuda\"` (or another fixed device) is how to use the GPU. `torch.device(\"cuda\")` is only a "
    "name and never fails; using it fails on every machine without CUDA (a Mac's GPU is `mps`), so ask "
    "`torch.accelerator` what the machine has.",
    section=_SECTION_1,
    question="`torch.device(\"cuda\")` runs without an error on a laptop that has no GPU. When does the error come, "
             "and what does an Apple-silicon Mac call its GPU?")
NOT_CHECKED = misconceptions.define(
    "02.accelerator-not-checked", "`current_accelerator()` without `is_available()`",
    "Believes `torch.accelerator.current_accelerator()` gives a usable device or nothing. It names the accelerator "
    "PyTorch was built for, usable or not (`cuda` for a CUDA build, such as pip's default on Linux, on a machine "
    "without a GPU; None on a CPU-only build), and `current_device_index()` raises without one: ask `is_available()` first, or pass "
    "`check_available=True`.",
    section=_SECTION_1,
    question="On a laptop without a GPU, running pip's default (CUDA) build of PyTorch, what do "
             "`torch.accelerator.current_accelerator()` and `torch.accelerator.is_available()` return?")
NO_CPU_FALLBACK = misconceptions.define(
    "02.no-cpu-fallback", "No fallback to the CPU",
    "Returned `current_accelerator(check_available=True)` alone, as if it gave the CPU when there is no "
    "accelerator. It gives None there: the code must fall back to `torch.device(\"cpu\")` itself.",
    section=_SECTION_1,
    question="Without an accelerator, what does `torch.accelerator.current_accelerator(check_available=True)` "
             "return, and what should `pick_device()` return instead?")
DEVICE_STRING = misconceptions.define(
    "02.returned-device-string", "Returned a device name (a string), not a `torch.device`",
    "Believes the string `\"cuda\"` or `\"cpu\"` is a device. It is only a name that `.to` and `device=` accept: a "
    "`torch.device` never equals a string (`torch.device('cpu') == 'cpu'` is False), and a string has no `.type`.",
    section=("03_to_device", "4. Strings and device objects"),
    question="What does `pick_device()`'s result have that the string `\"cuda\"` lacks (try `.type` and "
             "`.index`)? After lesson 03: is `torch.device(\"cpu\") == \"cpu\"` True?")
CUDA_ONLY = misconceptions.define(
    "02.cuda-only-check", "Checked only `torch.cuda.is_available()`",
    "Believes `torch.cuda.is_available()` says whether there is a GPU. It knows CUDA only: it is False on an "
    "Apple-silicon Mac (MPS) or with an Intel GPU (XPU). `torch.accelerator.is_available()` asks whichever "
    "accelerator this PyTorch was built for.",
    section=_SECTION_1,
    question="On an Apple-silicon Mac, what do `torch.cuda.is_available()` and `torch.accelerator.is_available()` "
             "return?")
BACKEND_LIST = misconceptions.define(
    "02.backend-list", "Checked a fixed list of backends",
    "Tests backends one by one (`torch.cuda`, `torch.backends.mps`, `torch.xpu`, ...), believing the list covers "
    "every accelerator. Any backend it leaves out (and any PyTorch adds later) falls back to the CPU; "
    "`torch.accelerator` knows whichever one this PyTorch was built for, so no list is needed.",
    section=_SECTION_1,
    question="What does an `if cuda ... elif mps ...` chain return on a machine whose accelerator it does not "
             "name, and which two calls replace the whole chain?")


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
        text = f"{type(e.error).__name__}: {message}"
        if "nvidia driver" in message.lower() and _raised_in_accelerator_api(e.error):
            code = NOT_CHECKED    # a CUDA build without a GPU: torch.accelerator.current_device_index() and co.
            why = ("That call needs an accelerator. Ask `torch.accelerator.is_available()` first and "
                   "fall back to `torch.device(\"cpu\")`.")
        elif "not compiled with cuda" in message.lower() or "nvidia driver" in message.lower():
            code = HARD_CODED
            why = ("This is what hard-coding `\"cuda\"` does on a machine without CUDA. Ask "
                   "`torch.accelerator.is_available()` first and fall back to `torch.device(\"cpu\")`.")
        elif "NoneType" in message:
            code = NOT_CHECKED
            why = ("`torch.accelerator.current_accelerator()` is None when there is no accelerator: "
                   "check `torch.accelerator.is_available()` first and fall back to `torch.device(\"cpu\")`.")
        elif "none is available" in message.lower():
            code = NOT_CHECKED
            why = ("That call needs an accelerator. Ask `torch.accelerator.is_available()` first and "
                   "fall back to `torch.device(\"cpu\")`.")
        else:  # no mistake the check knows: the learner's code raised
            code = misconceptions.RAISED
            why = "Read the message and fix the cell; `pick_device()` takes no arguments."
        raise Wrong(f"{where[0].upper()}{where[1:]}, your function raised {text}\n"
                    f"`pick_device()` must never fail there. {why}", code) from None


def _raised_in_accelerator_api(error: BaseException) -> bool:
    """Whether ``error`` came out of ``torch.accelerator`` (asked before ``is_available()``), not a CUDA call."""
    tb = error.__traceback__
    while tb is not None:
        if "/torch/accelerator/" in tb.tb_frame.f_code.co_filename.replace("\\", "/"):
            return True
        tb = tb.tb_next
    return False


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
        raise Wrong(f"{where[0].upper()}{where[1:]}, you returned {safe_repr(got)} "
                    f"({type(got).__name__}); `pick_device()` should return a `torch.device`.",
                    misconceptions.WRONG_TYPE)
    return got


#: Backend-specific availability checks: (the backend's name, its module's name, module, function).
_BACKEND_CHECKS = (("CUDA", "torch.cuda", torch.cuda, "is_available"),
                   ("CUDA", "torch.cuda", torch.cuda, "device_count"),
                   ("MPS", "torch.backends.mps", torch.backends.mps, "is_available"),
                   ("MPS", "torch.backends.mps", torch.backends.mps, "is_built"),
                   ("MPS", "torch.mps", getattr(torch, "mps", None), "is_available"),
                   ("XPU", "torch.xpu", getattr(torch, "xpu", None), "is_available"),
                   ("XPU", "torch.xpu", getattr(torch, "xpu", None), "device_count"),
                   ("MTIA", "torch.mtia", getattr(torch, "mtia", None), "is_available"))


class _BackendsAsked(Patched):
    """Inside a simulation: note which backends the answer asks about one by one (``torch.cuda``,
    ``torch.backends.mps``, ``torch.xpu``, ...); the answers are whatever the simulation says."""

    def __init__(self, answer: Any = None):
        self.answer = answer
        self.asked: list[tuple[str, str]] = []

    def replacements(self) -> dict[tuple[Any, str], Any]:
        fakes = {}
        for backend, where, module, name in _BACKEND_CHECKS:
            original = getattr(module, name, None) if module is not None else None
            if callable(original) and (module, name) not in fakes:
                fakes[module, name] = self._noting((backend, where), original)
        return fakes

    def _noting(self, backend: tuple[str, str], original: Callable) -> Callable:
        def noted(*args: Any, **kwargs: Any) -> Any:
            if backend not in self.asked:
                self.asked.append(backend)
            return original(*args, **kwargs)
        return noted

    def entered(self) -> list[tuple[str, str]]:
        return self.asked


def _backend_list_feedback(fake: torch.device, asked: list[tuple[str, str]]) -> str:
    names = [backend for backend, _ in asked]
    modules = ", ".join(f"`{where}`" for _, where in asked)
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return (f"When `torch.accelerator` reports an accelerator (the check pretends one, shown as `{fake}`), "
            f"your function returned `cpu`. It asks backends one by one ({modules}), and the simulated "
            f"accelerator is none of {listed}: it stands for any backend your list leaves out. A fixed list "
            "of backends misses the others PyTorch supports (and any it adds later), and the check cannot "
            "pretend to be each of them. Ask `torch.accelerator.is_available()` and use "
            "`torch.accelerator.current_accelerator()`: they know whichever accelerator this PyTorch was "
            "built for, so your code needs no list.")


def _hard_coded(got: torch.device, expected: str) -> str:
    return (f"your function returned `{got}` instead of `{expected}`. It looks hard-coded: "
            f"hard-coding `\"{got.type}\"` works on one kind of machine and breaks on the others. "
            "Ask `torch.accelerator` what this machine has.")


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
    where = ("on this machine (no accelerator)" if real.type == "cpu"
             else f"on this machine (accelerator: {real.type})")
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
            raise Wrong(f"This machine has no accelerator, yet {_hard_coded(got, 'cpu')}", HARD_CODED)
        raise Wrong(f"This machine has a {real.type} accelerator, but your function returned `{got}`. "
                    "Return the accelerator when `torch.accelerator.is_available()` is True.",
                    misconceptions.WRONG_DEVICE)  # hard-coded, CUDA-only or CPU only: this step cannot tell

    # 2. an accelerator that is not CUDA (reported as the data-less `meta` device)
    where = "when PyTorch reports an accelerator that is not CUDA (the check shows it as `meta`)"
    with OTHER_ACCELERATOR.simulate(fn) as fake, _BackendsAsked(answer=fn) as asked:
        got = _expect_device(_picked(fn, where), where)
    if got.type == "cpu" and any(backend != "CUDA" for backend, _ in asked):
        raise Wrong(_backend_list_feedback(fake, asked), BACKEND_LIST)
    if got.type == "cpu":
        raise Wrong(f"When `torch.accelerator` reports an accelerator that is not CUDA (the check "
                    f"pretends one, shown as `{fake}`), your function returned `cpu`. Testing only "
                    "`torch.cuda.is_available()` (or a fixed list of backends) misses Apple's MPS, "
                    "Intel's XPU and others: ask `torch.accelerator.is_available()` and use "
                    "`torch.accelerator.current_accelerator()`.", CUDA_ONLY)
    if got.type != fake.type:
        raise Wrong(f"When `torch.accelerator` reports an accelerator that is not CUDA (shown as `{fake}`), "
                    f"your function returned `{got}`. It hard-codes a backend, or tests backends one by one "
                    "(`torch.cuda`, `torch.backends.mps`, ...) and so misses the others: ask "
                    "`torch.accelerator.current_accelerator()` instead.", HARD_CODED)
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

_SECTION_2 = ("02_cpu_vs_gpu", "2. Counting the work")

FLOPS_FORGOT_2 = misconceptions.define(
    "02.flops-forgot-the-2", "Counted n³: one operation per term",
    "Counted each of the n³ terms of the sums as one operation. Each term is a multiplication and an addition (a "
    "multiply-add), so PyTorch's FLOP counter, like every quoted GFLOP/s figure, counts 2·n³.",
    section=_SECTION_2,
    question="Write out one output of a 2×2 product: how many multiplications and additions make it, and what "
             "does `counted_flops(2)` say?")
FLOPS_OUTPUTS = misconceptions.define(
    "02.flops-counted-outputs", "Counted the outputs (n²), not the work",
    "Took the number of results for the amount of work. Each of the n² outputs is a sum of n products, each a "
    "multiply and an add: n² × 2n = 2·n³ operations.",
    section=_SECTION_2,
    question="How many numbers does an n×n product hold, and how many multiplications go into each one?")
FLOPS_PER_OUTPUT = misconceptions.define(
    "02.flops-one-multiply-add-per-output", "One multiply-add per output (2·n²)",
    "Counted one multiplication and one addition per output. Each output is a sum of n products, so it takes n "
    "multiply-adds: 2·n³ in all.",
    section=_SECTION_2,
    question="For a 3×3 product, how many products are summed to make the output `c[0, 0]`?")
FLOPS_EXACT = misconceptions.define(
    "02.flops-exact-count", "Exact count n²(2n−1), not the 2·n³ convention",
    "Counted exactly: n multiplications and n − 1 additions per output. The arithmetic is right, but the exercise "
    "asks for the number PyTorch's FLOP counter reports, and the counter (like quoted GFLOP/s figures) rounds each "
    "output up to n multiply-adds: 2·n³. `counted_flops(2)` says 16, the exact count 12.",
    section=_SECTION_2,
    question="n²(2n−1) counts every multiplication and addition exactly. Why do the FLOP counter and quoted "
             "GFLOP/s figures say 2·n³ instead?")
FLOPS_THREE = misconceptions.define(
    "02.flops-three-per-term", "Counted 3 operations per term",
    "Counted three operations for each term of a sum. A term is one multiplication and one addition (the add "
    "that accumulates it): 2 operations, 2·n³ in all.",
    section=_SECTION_2,
    question="In `c[i, j] = a[i, 0]·b[0, j] + a[i, 1]·b[1, j] + ...`, which operations does one term cost?")
FLOPS_FLOAT = misconceptions.define(
    "02.flops-through-float", "Computed the count through a float",
    "Used `** 3.0`, `math.pow` or `/`, believing a float holds whole numbers exactly. It holds every one only up to 2**53 "
    "(about 9e15); beyond, many are rounded, and `int(...)` afterwards cannot undo it (for `int(2 * n ** 3.0)` the "
    "first wrong n is 208,065, where n cubed passes 2**53). Python ints are exact at any size.",
    section=_SECTION_2,
    question="Section 2 asks for no floats on the way: why can `int(2 * n ** 3.0)` differ from `2 * n ** 3` when n "
             "is large?")
FLOPS_EMPTY = misconceptions.define(
    "02.flops-empty-product", "Counted work for an empty product (n = 0)",
    "Special-cased small sizes (a minimum, or a fixed value below some n), though 2·n³ holds for every n: an "
    "empty product, n = 0, does no arithmetic at all.",
    section=_SECTION_2,
    question="How many multiplications does a 0×0 @ 0×0 product do, and what does `counted_flops(0)` return?")
FLOPS_ONE = misconceptions.define(
    "02.flops-one-by-one", "Miscounted a 1×1 product",
    "Special-cased n = 1, typically as one operation (its single multiplication). By the multiply-add "
    "convention it costs 2, as 2·n³ gives.",
    section=_SECTION_2,
    question="What does `counted_flops(1)` return, and which two operations does it count?")


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
