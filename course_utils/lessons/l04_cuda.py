"""Lesson 04 - `.cuda()`, the current device, and device-agnostic code."""
from __future__ import annotations

import contextlib
import inspect
import io
import re
import textwrap
import tokenize
from typing import Callable

import torch

from .. import device as _device
from .. import misconceptions
from ..exercises import grader
from ..grading import (CPU_ONLY_BUILD, NO_GPU_CUDA_BUILD, OTHER_ACCELERATOR, CallsNoted, Crashed, Machine, Wrong,
                       a_tensor, call, describe, devices_to_test, expect_like, expect_tensor, random_tensor, safe_repr,
                       same_values, sample_tensors)
from .l02_cpu_vs_gpu import NOT_CHECKED

# --- shared helpers for the checks -------------------------------------------------------------

def _error_text(error: BaseException) -> str:
    try:
        return f"{type(error).__name__}: {error}"
    except BaseException:
        return type(error).__name__


def _asks_for_cuda(error: BaseException) -> bool:
    """Whether an error came from asking for CUDA where there is none."""
    text = _error_text(error).lower()
    return any(word in text for word in ("cuda", "nvidia", "accelerator device when none"))


def _code(fn: Callable) -> str:
    """The learner's source without comments ('' when it cannot be read)."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except BaseException:
        return ""
    try:
        tokens = [tok for tok in tokenize.generate_tokens(io.StringIO(src).readline) if tok.type != tokenize.COMMENT]
        return tokenize.untokenize(tokens)
    except BaseException:  # e.g. a lambda whose source line does not parse on its own
        return src


_INDEX_ZERO = re.compile(r"""cuda:0|\.cuda\(\s*(device\s*=\s*)?0\s*\)|device\(\s*['"]cuda['"]\s*,\s*0\s*\)""")


def _index_zero_note(fn: Callable) -> str:
    return "" if not _INDEX_ZERO.search(_code(fn)) else (
        " Also, `cuda:0` is GPU 0, which is not always the current device (`set_device`, `torch.cuda.device(i)` and "
        "`CUDA_VISIBLE_DEVICES` all change what 'current' is): a device without an index, such as "
        "`torch.accelerator.current_accelerator()`, means the current one.")


# --- exercise 04.to_accelerator ----------------------------------------------------------------

HARD_CODED_CUDA = misconceptions.code("04.hard-coded-cuda")
ONLY_CUDA_COUNTED = misconceptions.code("04.only-cuda-counted")
CHOSEN_ONCE = misconceptions.code("04.device-chosen-once")
FIXED_INDEX = misconceptions.code("04.fixed-device-index")
# `current_accelerator()` without `is_available()`: lesson 02's misconception, met again here (section 5).
NO_AVAILABILITY_CHECK = NOT_CHECKED
COPY_WITHOUT_ACCELERATOR = misconceptions.code("04.copy-without-accelerator")


def to_accelerator(t):
    """Move ``t`` to the current accelerator; without one, return ``t`` itself."""
    if not torch.accelerator.is_available():
        return t
    return t.to(torch.accelerator.current_accelerator())


@grader("04.to_accelerator", points=2, reference=to_accelerator, title="To the accelerator, whichever it is", hints=(
    "Two questions, asked inside the function each time it runs (so that a later `set_device` counts): is an "
    "accelerator usable at all, and which one? `torch.accelerator` answers both for CUDA, MPS, XPU and the rest; "
    "`torch.cuda` only knows about CUDA. Section 5's simulation cell shows what each call reports on each machine.",
    "`torch.accelerator.current_accelerator()` alone is not enough: on a CUDA build without a GPU it still "
    "says `cuda` (it names the build, as in section 1), and on a CPU-only build it is None. Ask "
    "`torch.accelerator.is_available()` first. Its device (e.g. `cuda`, without an index) means the current "
    "device, as `.cuda()` does. With no accelerator, return `t` itself: `return t`, not a copy.",
    "`if not torch.accelerator.is_available(): return t`, then `return t.to(torch.accelerator.current_accelerator())`.",
))
def _grade_to_accelerator(fn: Callable) -> str:
    cases = list(sample_tensors(seed=4, count=10, devices=[torch.device("cpu")]))
    _check_other_accelerator(fn, cases)
    # 2. No accelerator, on a CPU-only build and on a CUDA build without a GPU (where
    #    `current_accelerator()` still says `cuda`): the very same object comes back.
    for machine in (CPU_ONLY_BUILD, NO_GPU_CUDA_BUILD):
        _check_without_accelerator(fn, cases[:6] + cases[-2:], machine)
    checked_real = _check_real_accelerator(fn, cases)
    return (f"Right: moved {len(cases)} tensors to a simulated non-CUDA accelerator, returned the same "
            f"object when there was none{checked_real}.")


def _check_other_accelerator(fn: Callable, cases: list[torch.Tensor]) -> None:
    """1. An accelerator that is not CUDA (simulated): a `.cuda()` answer cannot pass."""
    with OTHER_ACCELERATOR.simulate(fn) as fake, CallsNoted(_DEVICE_QUERIES, answer=fn) as asked:
        for t in cases:
            if not _device.supports_dtype(fake, t.dtype):  # an accelerator without float64 (MPS)
                continue
            asked.clear()
            got = expect_tensor(_call_on_other_accelerator(fn, t), f"For {a_tensor(t)}, your result")
            _check_moved_to_other_accelerator(fn, got, fake, asked)
            _kept_shape_and_dtype(t, got)


def _call_on_other_accelerator(fn: Callable, t: torch.Tensor) -> object:
    """``fn(t)`` on the simulated non-CUDA accelerator; an answer that asks for CUDA there is told so."""
    try:
        return call(fn, t, context=f"{a_tensor(t)} ({OTHER_ACCELERATOR.name}, simulated)")
    except Crashed as e:
        if _asks_for_cuda(e.error):
            raise Wrong(
                "The check simulates a machine whose accelerator is not CUDA (as on a Mac with "
                "MPS): `torch.accelerator` reports it, `torch.cuda.is_available()` is False. Your function still "
                f"asked for CUDA and failed with {safe_repr(_error_text(e.error), 160)}. "
                "Hard-coded `.cuda()`, `.to('cuda')` or `'cuda:0'` only works with CUDA; move `t` to "
                "`torch.accelerator.current_accelerator()` instead." + _index_zero_note(fn), HARD_CODED_CUDA) from None
        raise


def _check_moved_to_other_accelerator(fn: Callable, got: torch.Tensor, fake: torch.device, asked: list[str]) -> None:
    """The result lies on the simulated accelerator ``fake``: not on a device chosen once outside the function, not
    on the CPU, not on CUDA."""
    outside = _device_from_outside(fn) if got.device.type != fake.type and not asked else None
    # an answer whose own code names CUDA (`.cuda()`, `'cuda'`, `torch.cuda`) is told about CUDA below instead
    if outside is not None and not re.search(r"\bcuda\b", _code(fn)):
        raise Wrong(
            "An accelerator was available (the check simulates one that is not CUDA), but your function moved the "
            f"tensor to `{got.device}`, and it asked nothing about devices while it ran: it reads `{outside[0]}` "
            f"(`{outside[1]}`), a device chosen once, outside the function, when its cell ran. Such a function "
            "cannot follow the machine it runs on, or a change of current device. Ask inside the function, each "
            "time it runs: `torch.accelerator.is_available()`, then `current_accelerator()`.", CHOSEN_ONCE)
    if got.device.type == "cpu":
        raise Wrong(
            "An accelerator was available (the check simulates one: `torch.accelerator` reports it, while "
            "`torch.cuda.is_available()` is False, as on a Mac with MPS), but your function returned the tensor "
            "on `cpu`. Testing `torch.cuda.is_available()`, or trying `.cuda()` and falling back, misses every "
            "accelerator that is not CUDA: ask `torch.accelerator.is_available()` and `current_accelerator()` "
            "inside the function.", ONLY_CUDA_COUNTED)
    if got.device.type != fake.type:
        raise Wrong(
            "The available accelerator was not CUDA (simulated, as on a Mac), but your function moved the tensor "
            f"to `{got.device}`. Hard-coded `.cuda()`, `.to('cuda')` or `'cuda:0'` only works with CUDA; "
            "move to `torch.accelerator.current_accelerator()`." + _index_zero_note(fn), HARD_CODED_CUDA)


def _check_real_accelerator(fn: Callable, cases: list[torch.Tensor]) -> str:
    """3. A real accelerator, if there is one: the *current* device, with the values intact; what was checked there
    ("" without one), for the verdict."""
    acc = _device.accelerator()
    if acc is None:
        return ""
    count = torch.accelerator.device_count()
    indices = [torch.accelerator.current_device_index()]
    switch = getattr(torch.accelerator, "device_index", None)   # a context manager (PyTorch >= 2.8)
    if count >= 2 and switch is not None:
        indices.append(count - 1 if indices[0] != count - 1 else 0)
    for index in indices:
        with (switch(index) if switch is not None else contextlib.nullcontext()):
            for t in cases:
                try:
                    want = to_accelerator(t)
                except Exception:  # a dtype this accelerator does not support (float64 on MPS)
                    continue
                _check_on_current_device(fn, t, want)
    return f", on this machine's `{acc.type}` ({len(indices)} current device(s))"


def _check_on_current_device(fn: Callable, t: torch.Tensor, want: torch.Tensor) -> None:
    """``fn(t)`` lies on the current device, as ``want`` (the reference's result) does, with ``t``'s values."""
    got = expect_tensor(call(fn, t, context=f"{a_tensor(t)} (current device: {want.device})"),
                        f"For {a_tensor(t)}, your result")
    if got.device != want.device:
        if got.device.type == want.device.type:
            raise Wrong(f"The current device was `{want.device}`, but your function moved the tensor to "
                        f"`{got.device}`. A fixed index such as `cuda:0` ignores `set_device` and "
                        "`torch.cuda.device(i)`: use the accelerator's device without an index.", FIXED_INDEX)
        raise Wrong(f"The accelerator here is `{want.device}`, but your function returned the "
                    f"tensor on `{got.device}`.", misconceptions.WRONG_DEVICE)
    _kept_shape_and_dtype(t, got)
    if not same_values(got, t):
        raise Wrong(f"For {a_tensor(t)} your result holds different values: moving must "
                    "not change them.", misconceptions.WRONG_VALUE)


#: The questions code asks to choose a device, noted (:class:`CallsNoted`) while an answer runs: one that asks none
#: chose its device before it was called. torch.accelerator's, and each backend's own.
_DEVICE_QUERIES = tuple((module, name, f"{getattr(module, '__name__', '')}.{name}") for module, name in (
    (torch.accelerator, "is_available"), (torch.accelerator, "current_accelerator"),
    (torch.accelerator, "current_device_index"), (torch.accelerator, "device_count"), (torch.cuda, "is_available"),
    (torch.cuda, "device_count"), (torch.cuda, "current_device"), (torch.backends.mps, "is_available"),
    (getattr(torch, "xpu", None), "is_available")))


def _device_from_outside(fn: Callable) -> tuple[str, str] | None:
    """``(name, device)`` of a device the function reads from outside itself (a global or a variable of an
    enclosing function holding a `torch.device` or a device string), or None."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    found = [(name, cell.cell_contents) for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ())
             if _filled(cell)]
    namespace = getattr(fn, "__globals__", {})
    found += [(name, namespace[name]) for name in code.co_names if name in namespace]
    for name, value in found:
        if isinstance(value, torch.device):
            return name, str(value)
        if isinstance(value, str) and value.split(":")[0] in ("cpu", "cuda", "mps", "xpu", "meta"):
            return name, value
    return None


def _filled(cell: object) -> bool:
    try:
        cell.cell_contents   # type: ignore[attr-defined]
    except ValueError:       # a variable not yet assigned
        return False
    return True


def _check_without_accelerator(fn: Callable, cases: list[torch.Tensor], machine: Machine) -> None:
    """Step 2 of 04.to_accelerator: with no usable accelerator, ``t`` itself comes back."""
    with machine.simulate(fn):
        for t in cases:
            try:
                got = call(fn, t, context=f"{a_tensor(t)} with no accelerator ({machine.name})")
            except Crashed as e:
                if _asks_for_cuda(e.error):
                    why = (" There `torch.accelerator.current_accelerator()` still names `cuda`: it names the "
                           "accelerator PyTorch was built for, usable or not." if machine.build else "")
                    raise Wrong(
                        f"With no accelerator ({machine.name}, simulated), your function still asked for CUDA and "
                        f"failed with {safe_repr(_error_text(e.error), 160)}.{why} Check "
                        "`torch.accelerator.is_available()` first, and return `t` unchanged when it is False.",
                        NO_AVAILABILITY_CHECK) from None
                if isinstance(e.error, AttributeError) and "NoneType" in _error_text(e.error):
                    raise Wrong("With no accelerator your function failed with "
                                f"{safe_repr(_error_text(e.error), 160)}: `torch.accelerator.current_accelerator()` "
                                "returns None when there is none. Check `torch.accelerator.is_available()` first, "
                                "and return `t` itself when it is False.", NO_AVAILABILITY_CHECK) from None
                raise
            if got is t:
                continue
            got = expect_tensor(got, f"With no accelerator, for {a_tensor(t)}, your result")
            if got.device != t.device:
                raise Wrong(f"With no accelerator, your function moved {a_tensor(t)} to `{got.device}`. "
                            "When `torch.accelerator.is_available()` is False, return `t` itself.",
                            misconceptions.WRONG_DEVICE)
            raise Wrong(f"With no accelerator, your function returned a copy of the {describe(t)} (for example "
                        "`t.clone()`, `t.to('cpu', copy=True)` or `t.cpu().clone()`), not `t` itself. The spec asks "
                        "for the same object: a copy costs memory and time and breaks code that expects "
                        "`to_accelerator(t) is t` on a CPU-only machine. Just `return t`.", COPY_WITHOUT_ACCELERATOR)


def _kept_shape_and_dtype(t: torch.Tensor, got: torch.Tensor) -> None:
    expect_like(got, t, f"For {a_tensor(t)}", shape="Moving must not change it.",
                dtype="Moving must not change the dtype: pass only the device to `.to`.")


# --- exercise 04.mask_future -------------------------------------------------------------------

MASK_ELSEWHERE = misconceptions.code("04.new-tensor-not-on-input-device")
MOVED_INPUT = misconceptions.code("04.moved-input")
MASKED_IN_PLACE = misconceptions.code("04.masked-in-place")
MASKED_DIAGONAL = misconceptions.code("04.masked-diagonal")
MASKED_PAST = misconceptions.code("04.masked-past")
MASK_NOT_INF = misconceptions.code("04.mask-not-inf")


def mask_future(scores):
    """``scores`` with every entry above the diagonal (column > row) set to -inf, on ``scores``' device."""
    n = scores.shape[-1]
    future = torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1)
    return scores.masked_fill(future, float("-inf"))


_MASK_SHAPES = ((1, 1), (4, 4), (2, 5, 5), (2, 3, 6, 6), (3, 3), (1, 2, 7, 7))
_MASK_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _score_cases(devices: list[torch.device]) -> list[torch.Tensor]:
    gen, cases = torch.Generator().manual_seed(404), []
    for i, shape in enumerate(_MASK_SHAPES):
        for j, device in enumerate(devices):
            dtype = _MASK_DTYPES[(i + j) % len(_MASK_DTYPES)]
            if _device.supports_dtype(device, dtype):  # no float64 on MPS
                cases.append(random_tensor(shape, dtype, gen, device))
    return cases


@grader("04.mask_future", points=2, reference=mask_future, title="A mask that goes where the scores are", hints=(
    "A function that receives tensors should not choose a device at all: leave `scores` where it is, "
    "and make every new tensor on `scores.device`.",
    "Build the mask with `torch.ones(n, n, dtype=torch.bool, device=scores.device)`, keep the part above the diagonal "
    "with `.triu(1)` (or `torch.triu(..., diagonal=1)`), then `scores.masked_fill(mask, float('-inf'))`.",
    "`n = scores.shape[-1]`; `future = torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1)`; "
    "`return scores.masked_fill(future, float('-inf'))`.",
))
def _grade_mask_future(fn: Callable) -> str:
    devices = devices_to_test()
    cases = _score_cases(devices)
    # Without an accelerator, a simulated one: an answer that moves the scores to "the accelerator" instead of
    # following them is caught on any machine.
    with OTHER_ACCELERATOR.simulate(fn) if _device.accelerator() is None else contextlib.nullcontext():
        for t in cases:
            _check_mask_case(fn, t)
    return (f"Right on {len(cases)} score tensors ({' and '.join(map(str, devices))}), batched or not, in four "
            "float dtypes: your mask follows the scores.")


def _check_mask_case(fn: Callable, t: torch.Tensor) -> None:
    before = t.clone()
    try:
        got = call(fn, t, context=f"scores that are {a_tensor(t)}")
    except Crashed as e:
        text = _error_text(e.error)
        if "expected device" in text or "same device" in text or "expected on" in text:
            raise Wrong(
                f"For scores that are {a_tensor(t)}, your mask and the scores ended up on different "
                f"devices: {safe_repr(text, 160)}. `torch.ones(n, n)` alone is made on the default device "
                "(the CPU), `.cuda()` picks the current GPU, and moving to 'the accelerator' is wrong too "
                "when the scores are elsewhere: make the mask with `device=scores.device`.", MASK_ELSEWHERE) from None
        if _asks_for_cuda(e.error):
            raise Wrong(f"For scores that are {a_tensor(t)}, your function still asks for CUDA (`.cuda()` or "
                        f"`'cuda'`) and fails: {safe_repr(text, 160)}. Make the mask with `device=scores.device` "
                        "and leave `scores` where it is.", HARD_CODED_CUDA) from None
        raise
    got = expect_tensor(got, f"For scores that are {a_tensor(t)}, your result")
    if not same_values(t, before):
        raise Wrong("Your function changed `scores` in place (`masked_fill_`?). Return a new tensor and "
                    "leave the input alone.", MASKED_IN_PLACE)
    if got is t:
        raise Wrong("Your function returned `scores` itself (`masked_fill_`, with the underscore, changes its "
                    "input in place). Return a new, masked tensor: `masked_fill`.", MASKED_IN_PLACE)
    expect_like(got, t, f"For scores that are {a_tensor(t)}",
                device=f"The scores were on `{t.device}` but your result is on `{got.device}`. A function that "
                       "receives tensors should not move them (that costs a copy, and the caller's other tensors "
                       "stay where they were): work on `scores.device`, not on 'the accelerator'.",
                dtype="Keep the scores' dtype.", device_code=MOVED_INPUT)
    if t.device.type == "meta":
        return
    want = mask_future(t)
    if torch.equal(got, want):
        return
    n = t.shape[-1]
    ones = torch.ones(n, n, dtype=torch.bool, device=t.device)
    if torch.equal(got, t.masked_fill(ones.triu(0), float("-inf"))):
        raise Wrong("You also masked the diagonal. Position i may look at itself: mask only column > row "
                    "(`triu(1)`, or `diagonal=1`).", MASKED_DIAGONAL)
    if torch.equal(got, t.masked_fill(ones.tril(-1), float("-inf"))):
        raise Wrong("You masked the past (below the diagonal) instead of the future (above it). "
                    "`triu` keeps the upper triangle, `tril` the lower one.", MASKED_PAST)
    future = ones.triu(1).expand_as(t)
    masked = got[future]
    if masked.numel() and bool(torch.isfinite(masked).all()) and torch.equal(got[~future], t[~future]):
        raise Wrong(f"The masked entries should be -inf (`float('-inf')`), but yours are "
                    f"{safe_repr(masked.unique()[:3].tolist())}.", MASK_NOT_INF)
    wrong = int((got != want).sum())
    raise Wrong(f"For scores that are {a_tensor(t)}, {wrong} entries differ from the expected result. "
                "Entries with column > row become -inf; every other entry keeps its score.", misconceptions.WRONG_VALUE)
