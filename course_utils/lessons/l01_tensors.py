"""Lesson 01 - tensors: shape, dtype, device, bytes, and where new tensors are created."""
from __future__ import annotations

from typing import Callable

import torch

from .. import misconceptions
from ..exercises import grader
from ..grading import (Wrong, a_tensor, call, expect_int, expect_like, expect_tensor, safe_repr, same_values,
                       sample_tensors)
from ..quizzes import add_quiz

# --- quizzes ---------------------------------------------------------------------------------

add_quiz(
    "01.default_device",
    "`x = torch.ones(3)` names no device. Where does `x` live?",
    ["On the CPU", "On the GPU, if the machine has one", "Nowhere yet: memory is allocated on first use",
     "On whichever device was used last"],
    0,
    "New tensors go to the default device, which is the CPU unless you change it (with "
    "`torch.set_default_device` or a `with torch.device(...)` block). Having a GPU changes nothing: "
    "PyTorch never moves data there unless you ask.",
)
add_quiz(
    "01.float16_bytes",
    "How many bytes do the elements of `torch.zeros(1000, 1000, dtype=torch.float16)` occupy?",
    ["500,000", "1,000,000", "2,000,000", "4,000,000"],
    2,
    "One million elements times 2 bytes each (`float16` is 16 bits): 2,000,000 bytes. "
    "The same shape in `float32` takes twice as much, which is twice as much to move to a GPU.",
)
add_quiz(
    "01.zeros_like_device",
    "`x` lives on the GPU. Where does `torch.zeros_like(x)` live?",
    ["On the CPU, the default device", "On the GPU, like `x`", "It raises an error",
     "On the GPU only inside a `with torch.device(...)` block"],
    1,
    "`*_like` functions and `x.new_*` methods copy shape (for `*_like`), dtype **and device** from "
    "`x`. That is why they are the safe way to make helper tensors inside code that must run on any device.",
)
add_quiz(
    "01.device_block",
    "`gpu` is your GPU. Inside `with torch.device(gpu):` you run `y = torch.randn(2)` and "
    "`z = torch.randn(2, device='cpu')`. Where do `y` and `z` live?",
    ["Both on the CPU", "Both on the GPU", "`y` on the CPU, `z` on the GPU", "`y` on the GPU, `z` on the CPU"],
    3,
    "A `torch.device` block changes the default for factory functions that name no device; "
    "an explicit `device=` argument still wins.",
)


# --- exercise 01.nbytes ----------------------------------------------------------------------

def nbytes(t):
    """Bytes occupied by the elements of tensor ``t``."""
    return t.numel() * t.element_size()


COUNTED_ELEMENTS = misconceptions.define(
    "01.counted-elements", "Counted elements, not bytes",
    "Believes `t.numel()` is a tensor's size in memory; it counts elements, and each element takes "
    "`t.element_size()` bytes (1 to 8, by dtype), so the bytes are `t.numel() * t.element_size()`.",
    section=("01_tensors", "Pitfalls"),
    question="`torch.zeros(1000, dtype=torch.float64)` has 1000 elements. How many bytes do they take, and in "
             "`int8`?")
BYTES_OF_ONE_ELEMENT = misconceptions.define(
    "01.bytes-of-one-element", "Returned the bytes of one element",
    "Believes `t.element_size()` is the size of the whole tensor; it is the size of one element of its dtype "
    "(4 for `float32`), whatever the shape, and must be multiplied by `t.numel()`.",
    section=("01_tensors", "3. How many bytes?"),
    question="What do `torch.zeros(3).element_size()` and `torch.zeros(3000).element_size()` return, and why "
             "the same?")
ASSUMED_4_BYTES = misconceptions.define(
    "01.assumed-4-bytes", "Assumed 4 bytes per element",
    "Believes every element takes 4 bytes (true of `float32` only); the size depends on the dtype: 8 for "
    "`float64` and `int64`, 2 for `float16` and `bfloat16`, 1 for `int8`, `uint8` and `bool`.",
    section=("01_tensors", "3. How many bytes?"),
    question="Which dtypes printed in section 3 take 4 bytes per element, and which do not?")
COUNTED_STORAGE = misconceptions.define(
    "01.counted-storage", "Counted the storage behind a view",
    "Believes `t.untyped_storage().nbytes()` is the tensor's own size; it is the block of memory behind it, "
    "which a view such as `base[::2]` shares with its base (larger than the view); an `expand`ed tensor shows "
    "one stored element many times (its storage is smaller than it).",
    section=("01_tensors", "3. How many bytes?"),
    question="`every_other = base[::2]` for ten `float32`s: how many bytes are its elements, and how many bytes "
             "does its storage hold?")


#: Hints that answer a mistake the check names: shown first (``course_utils.hint``, the Hint button) when the
#: learner's last check of the exercise named that code.
HINT_FOR = {
    "01.nbytes": {
        ASSUMED_4_BYTES: "Not every element takes 4 bytes: that is `float32` only. `float64` and `int64` take 8, "
                         "`float16` 2, `int8`, `uint8` and `bool` 1. Ask the tensor instead of assuming: "
                         "`t.element_size()` (section 3) gives the bytes of one element of its dtype.",
        COUNTED_ELEMENTS: "`t.numel()` counts elements, not bytes: each element takes `t.element_size()` bytes "
                          "(1 to 8, by dtype, section 3). Combine the two.",
        BYTES_OF_ONE_ELEMENT: "`t.element_size()` is the size of ONE element, whatever the shape. How many "
                              "elements does `t` have (`t.numel()`, section 2)?",
        COUNTED_STORAGE: "The storage is the wrong number for a view: `base[::2]` shares its base's storage, "
                         "which is larger than the view. Count only `t`'s own elements (`t.numel()`), each "
                         "`t.element_size()` bytes.",
    },
}


@grader("01.nbytes", points=2, reference=nbytes, title="How many bytes?", hints=(
    "Which two facts about `t` itself decide how many bytes a copy of its elements takes? Sections 2 and 3 "
    "printed both.",
    "How many elements `t` has (`t.numel()`, section 2), and how many bytes one element of its dtype takes "
    "(`t.element_size()`, section 3). Both work on any device.",
    "Multiply them: `return t.numel() * t.element_size()` (PyTorch's `t.nbytes` gives the same number).",
))
def _grade_nbytes(fn: Callable) -> str:
    base = torch.arange(24, dtype=torch.float64)
    cases = list(sample_tensors(seed=1)) + [base[::3], base.view(4, 6)[:, :2]]  # views, too
    for t in cases:
        want = nbytes(t)
        got = expect_int(call(fn, t, context=f"{a_tensor(t)}"), f"For {a_tensor(t)}", want=want)
        if got != want:
            advice, code = _nbytes_diagnosis(t, got)
            raise Wrong(f"For {a_tensor(t)} the answer is {want} bytes, you returned {got}. " + advice, code)
    return f"Right on {len(cases)} tensors: every shape (even 0-d and empty), dtype, device and view."


def _nbytes_diagnosis(t: torch.Tensor, got: int) -> tuple[str, str]:
    """The advice for a wrong byte count, and the code of the mistake it names."""
    if got == t.numel():
        return "That is the number of elements: multiply by the bytes per element.", COUNTED_ELEMENTS
    if got == t.element_size():
        return "That is the size of one element: multiply by the number of elements.", BYTES_OF_ONE_ELEMENT
    if got == t.numel() * 4:
        return ("You assumed 4 bytes per element (float32); other dtypes differ: use `t.element_size()`.",
                ASSUMED_4_BYTES)
    if t.device.type != "meta" and got == t.untyped_storage().nbytes():
        return ("That is the size of the whole storage; this tensor is a view of part of it. "
                "Count only the tensor's own elements.", COUNTED_STORAGE)
    return "Bytes = number of elements x bytes per element.", misconceptions.WRONG_VALUE


# --- exercise 01.blank_like ------------------------------------------------------------------

def blank_like(t):
    """A zero tensor with the same shape, dtype and device as ``t``."""
    return torch.zeros_like(t)


CHANGED_INPUT = misconceptions.define(
    "01.changed-input-in-place", "Zeroed the input in place",
    "Believes an in-place method such as `t.zero_()` gives a new tensor; a method ending in `_` changes `t` "
    "itself and returns `t`, so the caller's data is wiped. A new tensor comes from a factory function "
    "(`torch.zeros_like(t)`).",
    section=("01_tensors", "5. Zeros like another tensor"),
    question="After `z = t.zero_()`, is `z` a new tensor? What happened to the `t` the caller passed in?")
IGNORED_INPUT_DEVICE = misconceptions.define(
    "01.ignored-input-device", "Zeros made on the default device, not on `t`'s",
    "Believes a tensor made with `t`'s shape (`torch.zeros(t.shape)`) is created where `t` lives, or hard-codes "
    "a device; a factory function uses the default device (the CPU unless changed) unless given "
    "`device=t.device`, while `torch.zeros_like(t)` and `t.new_zeros(...)` take `t`'s device.",
    section=("01_tensors", "4. Where new tensors are created"),
    question="`t` lives on the GPU. Where does `torch.zeros(t.shape)` live, and what makes zeros on `t`'s device?")
TIMES_ZERO = misconceptions.define(
    "01.multiplied-by-zero", "Made zeros with `t * 0`",
    "Believes `t * 0` is always zero; in floating point `inf * 0` and `nan * 0` are NaN (and `bool * 0` is "
    "`int64`). A factory function such as `torch.zeros_like(t)` makes real zeros without reading `t`'s values.",
    section=("01_tensors", "5. Zeros like another tensor"),
    question="What is `torch.tensor([float('inf'), float('nan'), -1.0]) * 0`, and why do helper zeros not "
             "come from arithmetic on `t`?")


@grader("01.blank_like", reference=blank_like, title="Zeros, right where you need them", hints=(
    "Your zeros must match `t` in three ways: shape, dtype and device. A plain `torch.zeros(...)` "
    "only gets what you pass it, and uses the defaults for the rest.",
    "Section 2 read the three facts from a tensor (`t.shape`, `t.dtype`, `t.device`); section 3 passed "
    "`dtype=` to a factory function and section 4 passed `device=`. Pass all three.",
    "`return torch.zeros(t.shape, dtype=t.dtype, device=t.device)`, or PyTorch's shortcut, which section 5 "
    "shows next: `torch.zeros_like(t)`.",
))
def _grade_blank_like(fn: Callable) -> str:
    special = torch.tensor([float("inf"), float("nan"), -1.0])  # `t * 0` is not zero here
    cases = list(sample_tensors(seed=2)) + [special, special.to("meta")]
    for t in cases:
        before = t.clone()
        got = expect_tensor(call(fn, t, context=f"{a_tensor(t)}"), f"For {a_tensor(t)}, your result")
        if got is t:
            raise Wrong("You returned the input tensor itself. Return a new tensor of zeros.", CHANGED_INPUT)
        if not same_values(t, before):
            raise Wrong("Your function changed its input (an in-place op such as `zero_()`?). "
                        "Leave `t` alone and return a new tensor.", CHANGED_INPUT)
        expect_like(got, t, f"For {a_tensor(t)}",
                    device=f"The input was on `{t.device}` but your zeros are on `{got.device}`. "
                           "`torch.zeros(shape, dtype=...)` uses the default device; make the zeros on "
                           "`t`'s device (e.g. `torch.zeros_like(t)`).",
                    dtype="Pass the dtype along too, or use a `*_like` function.",
                    device_code=IGNORED_INPUT_DEVICE)
        if got.device.type != "meta" and got.numel() and bool((got != 0).any()):
            raise Wrong(f"For {a_tensor(t)} your result is not all zeros "
                        f"(it contains {safe_repr(got.flatten()[(got != 0).flatten()][:3].tolist())}). "
                        "Note that `t * 0` is NaN where `t` is inf or NaN.", _not_zeros_code(t, got))
    return f"Right on {len(cases)} tensors, on {', '.join(sorted({c.device.type for c in cases}))}."


def _not_zeros_code(t: torch.Tensor, got: torch.Tensor) -> str:
    """:data:`TIMES_ZERO` when the only non-zeros are NaN where ``t`` is inf or NaN (what `t * 0` gives), else the
    generic code (``got`` has ``t``'s device, shape and dtype)."""
    if not (got.dtype.is_floating_point or got.dtype.is_complex):
        return misconceptions.WRONG_VALUE
    off = got != 0
    return TIMES_ZERO if bool(got[off].isnan().all()) and not bool(t[off].isfinite().any()) \
        else misconceptions.WRONG_VALUE
