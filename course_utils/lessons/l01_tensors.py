"""Lesson 01 - tensors: shape, dtype, device, bytes, and where new tensors are created."""
from __future__ import annotations

from typing import Callable

import torch

from .. import misconceptions
from ..exercises import grader
from ..grading import (Wrong, a_tensor, call, expect_int, expect_like, expect_tensor, safe_repr, same_values,
                       sample_tensors, target_device)

# --- exercise 01.nbytes ----------------------------------------------------------------------

def nbytes(t):
    """Bytes occupied by the elements of tensor ``t``."""
    return t.numel() * t.element_size()


COUNTED_ELEMENTS = misconceptions.code("01.counted-elements")
BYTES_OF_ONE_ELEMENT = misconceptions.code("01.bytes-of-one-element")
ASSUMED_4_BYTES = misconceptions.code("01.assumed-4-bytes")
COUNTED_STORAGE = misconceptions.code("01.counted-storage")

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


CHANGED_INPUT = misconceptions.code("01.changed-input-in-place")
IGNORED_INPUT_DEVICE = misconceptions.code("01.ignored-input-device")
TIMES_ZERO = misconceptions.code("01.multiplied-by-zero")


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
    cases = list(sample_tensors(seed=2)) + [special, special.to(target_device())]
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
