"""Lesson 07's 07.sum_batches: move many batches to the device with one copy and add them up there; the check counts
the copies (:mod:`course_utils.transfer`). Its ``preview`` and codes serve the capstone too."""
from __future__ import annotations

from typing import Any, Callable

import torch

from .. import device as _device
from .. import misconceptions, transfer
from ..exercises import grader
from ..grading import (Crashed, ModesKept, TimeLimit, Wrong, call, devices_to_test, expect_tensor, is_tensor,
                       read_no_data, same_values)
from . import l07_transfer_cost  # noqa: F401  (imported first: its exercises register first, in course order)

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
    "baddbmm", "_foreach_add", "_foreach_add_", "linear", "tensordot"})

NEVER_MOVED = misconceptions.code("07.batches-never-copied")
COPY_PER_BATCH = misconceptions.code("07.copy-per-batch")
RESULT_MOVED_BACK = misconceptions.code("07.result-moved-back")
SUMMED_ON_CPU = misconceptions.code("07.summed-on-cpu")
CHANGED_LIST = misconceptions.code("07.changed-input-list")
ADDED_INTO_INPUT = misconceptions.code("07.added-into-input")
RETURNED_INPUT = misconceptions.code("07.returned-input-itself")
SQUEEZED_BATCH_DIM = misconceptions.code("07.squeeze-dropped-batch-dim")
CAT_FOR_STACK = misconceptions.code("07.cat-for-stack")
STACK_DIM_KEPT = misconceptions.code("07.stack-dim-kept")
SUM_PROMOTES = misconceptions.code("07.sum-promoted-int")
FLOAT_ZEROS = misconceptions.code("07.float-zeros-accumulator")
TOTAL_OVERWRITTEN = misconceptions.code("07.total-overwritten")
MEAN_NOT_SUM = misconceptions.code("07.mean-not-sum")

_VALUE_CASES = (  # (number of batches, batch shape, dtype)
    (3, (4,), torch.float32), (2, (3, 4), torch.int32), (1, (2, 3), torch.float64), (5, (), torch.int64),
    (4, (2, 3, 2), torch.uint8), (3, (5,), torch.float16), (2, (0, 3), torch.float32),
    (1, (4,), torch.int16), (6, (3, 1), torch.int8))
_COUNT_CASES = ((3, (4,), torch.float32), (1, (2, 3), torch.float32), (4, (2, 2), torch.int32))


def _make_batches(count: int, shape: tuple, dtype: torch.dtype, gen: torch.Generator) -> list[torch.Tensor]:
    low, high = (0, 20) if dtype == torch.uint8 else (-15, 16)
    return [torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype) if dtype.is_floating_point
            else torch.randint(low, high, shape, generator=gen).to(dtype) for _ in range(count)]


def _label(batches: list[torch.Tensor], device: torch.device) -> str:
    first = batches[0]
    what = "a single batch" if len(batches) == 1 else f"{len(batches)} batches"
    return f"{what} of shape {tuple(first.shape)} ({str(first.dtype).replace('torch.', '')}) and device={device}"


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
        raise Wrong(f"With {label}, your function changed the list it was given (it now holds {len(batches)} item(s), "
                    "or different tensors). Build new lists or tensors instead of editing `batches`.", CHANGED_LIST)
    for b, s in zip(originals, saved):
        if not same_values(b, s):
            raise Wrong(f"With {label}, your function changed the values of an input batch: an in-place "
                        "add (`total = batches[0]; total += ...`) writes into the first batch. Start from "
                        "a new tensor (e.g. `.clone()`) or use out-of-place `+` / `sum`.", ADDED_INTO_INPUT)


def _check_result(got: Any, want: torch.Tensor, batches: list[torch.Tensor], device: torch.device,
                  label: str) -> torch.Tensor:
    got = expect_tensor(got, f"With {label}, your result")
    if any(got is b for b in batches) or (got.device.type == "cpu" and got.numel() > 0 and any(
            b.numel() > 0 and got.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() for b in batches)):
        raise Wrong(f"With {label}, you returned one of the input batches itself (or a view of it), not "
                    "a new tensor. Careful: `.to(device)` returns the very same tensor when it is already "
                    "there. Changing your result would change the caller's batch; return a new tensor.", RETURNED_INPUT)
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
        except (KeyboardInterrupt, TimeLimit):
            raise
        except BaseException as e:   # the stub was caught earlier
            raise (read_no_data(e, label) or Crashed(e, label)) from None
    return got, seen


def _check_counts(got: Any, seen: transfer.count_copies, batches: list[torch.Tensor],
                  device: torch.device, label: str) -> None:
    count, one_batch = len(batches), batches[0].numel() * batches[0].element_size()
    h2d, moved = seen.host_to_device, seen.bytes_to_device
    on_cpu_result = is_tensor(got) and expect_tensor(got, f"With {label}, your result").device.type == "cpu"
    cpu_math = sorted(set(seen.ran_on("cpu", ARITHMETIC)))
    device_math = sorted(set(seen.ran_on(device.type, ARITHMETIC)))
    counted = f"I counted {h2d} host→device transfer{'s' if h2d != 1 else ''}"
    if h2d == 0:
        where = " and your result is on the CPU: the batches were never moved to the device." if on_cpu_result else "."
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
    reads = seen.ran_on(device.type, {"_local_scalar_dense"})
    if reads:
        raise Wrong(f"With {label}, {counted} (good), but your code read {len(reads)} value(s) back from the "
                    "device (`.item()`, `float(t)`, `if t:`): on a GPU each read makes the CPU wait for the device, "
                    "then copies the value. Keep the sum as tensor operations; the caller decides when to read it.",
                    RESULT_MOVED_BACK)
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


@grader("07.sum_batches", reference=sum_batches, title="Move once, add on the device", hints=(
    "Moving each batch separately pays the latency once per batch. How can you put all the batches "
    "into a single tensor while they are still on the CPU?",
    "`torch.stack(batches)` makes one tensor with a new first dimension, one row per batch. Move that "
    "with a single `.to(device)`, then add along the first dimension on the device (`.sum(dim=0)`). For "
    "integer batches `torch.sum` gives int64, which the check accepts; `dtype=stacked.dtype` keeps theirs.",
    "`stacked = torch.stack(batches).to(device)` then `return stacked.sum(dim=0, dtype=stacked.dtype)`",
))
def _grade_sum_batches(fn: Callable) -> str:
    gen = torch.Generator().manual_seed(7)
    cpu, dev = devices_to_test()
    # 1. values on the CPU; 2. copies and where the adding ran, on the check's device; 3. values there (none on
    # `meta`, which has no data). Counting before reading values there means an answer that never moves the
    # batches is told so, not that its result came back to the CPU.
    value_devices = [cpu] + ([dev] if dev.type != "meta" else [])
    _check_values(fn, [cpu], gen)
    for count, shape, dtype in _COUNT_CASES:
        batches = _make_batches(count, shape, dtype, gen)
        originals, saved = list(batches), [b.clone() for b in batches]
        label = _label(batches, dev)
        got, seen = _call_and_count(fn, batches, dev, label)
        _check_counts(got, seen, originals, dev, label)
        _check_inputs_untouched(batches, originals, saved, label)
        _check_result(got, torch.empty(shape, dtype=dtype), originals, dev, label)
    _check_values(fn, value_devices[1:], gen)

    where, counted = ", ".join(str(d) for d in value_devices), str(dev)
    ints = call(fn, [torch.ones(2, dtype=torch.int32), torch.ones(2, dtype=torch.int32)], torch.device("cpu"))
    note = (" Your integer sums come back as int64, as `torch.sum` gives them (an exact sum, accepted); "
            "`.sum(dim=0, dtype=stacked.dtype)` or `+` would keep the batches' dtype."
            if is_tensor(ints) and ints.dtype == torch.int64 else "")
    return (f"Right: values on {where} for 1 to 6 batches, 7 dtypes and shapes from 0-d to 3-d; "
            f"exactly one host→device transfer carrying every batch, and the adding done on the device "
            f"(counted on {counted}).{note}")


__all__ = ["sum_batches", "ARITHMETIC"]
