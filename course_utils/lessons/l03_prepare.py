"""Lesson 03's 03.prepare: put a model and its batch on one device (`Module.to` moves in place, `Tensor.to` returns a
tensor to keep). 03.to_device, whose codes and helpers it shares, is in :mod:`course_utils.lessons.l03_to_device`."""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from .. import misconceptions
from ..exercises import grader
from ..grading import Crashed, Wrong, call, describe, expect_tensor, is_tensor, safe_repr, same_values
# imported first, 03.to_device registers before 03.prepare, as in the course's order
from .l03_to_device import (CHANGED_DTYPE, CREATED_NOT_MOVED, MOVED_INPUT_IN_PLACE, TO_NOT_ASSIGNED, WatchedTensor,
                            on_target, target_devices, to_was_called)

# --- exercise 03.prepare ---------------------------------------------------------------------

PARAMS_ONE_BY_ONE = misconceptions.code("03.params-one-by-one")
MODEL_NOT_MOVED = misconceptions.code("03.model-not-moved")
BATCH_NOT_MOVED = misconceptions.code("03.batch-not-moved")
COPIED_MODEL = misconceptions.code("03.copied-model")
NOT_BOTH_RETURNED = misconceptions.code("03.not-both-returned")
PAIR_SWAPPED = misconceptions.code("03.pair-swapped")


def prepare(model, batch, device):
    """Put ``model`` and the tensor ``batch`` on ``device``; return ``(model, batch)``."""
    model = model.to(device)   # in place; returns the same module
    batch = batch.to(device)   # the batch on device (a new tensor unless it was there): keep it!
    return model, batch


class _TinyText(nn.Module):
    """Token ids in, one score per sequence out (an int64 batch)."""

    def __init__(self, vocab: int = 20, dim: int = 6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(ids).mean(dim=1))


def _prepare_cases(gen: torch.Generator) -> list[tuple[str, Callable[[], nn.Module], torch.Tensor]]:
    def mlp() -> nn.Module:
        return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    return [case for n in (int(torch.randint(2, 9, (1,), generator=gen)), 1)
            for case in (("a Linear/BatchNorm model", mlp, torch.randn(n, 4, generator=gen)),
                         ("a token model", _TinyText, torch.randint(0, 20, (n, 5), generator=gen)))]


def _new_model(make: Callable[[], nn.Module]) -> nn.Module:
    with torch.random.fork_rng(devices=[]):  # model init must not touch the learner's global RNG
        torch.manual_seed(0)
        return make()


@grader("03.prepare", points=2, reference=prepare, title="Model and batch, same device", hints=(
    "Two things must end up on `device`: the model and the batch. Only one of them moves in place.",
    "`Module.to` moves the module itself and returns it. `Tensor.to` returns a tensor on `device` (a new one whenever "
    "the device or dtype changes) and leaves the old one where it was, so you must keep its result.",
    "`model = model.to(device)`, `batch = batch.to(device)`, then `return model, batch`.",
))
def _grade_prepare(fn: Callable) -> str:
    gen = torch.Generator().manual_seed(4)
    cases = _prepare_cases(gen)
    targets = target_devices()
    for target, norm in targets:
        for what, make, batch in cases:
            model = _new_model(make)
            before = batch.clone()
            context = f"{what} on cpu, batch = {describe(batch)}, device = {target!r}"
            try:
                got = call(fn, model, batch, target, context=context)
            except Crashed as e:
                if "set_data" in str(e.error):
                    raise Wrong(f"With {context} your code raised {type(e.error).__name__}: "
                                f"{safe_repr(str(e.error), 160)}\nAssigning `p.data = ...` one parameter "
                                "at a time cannot move a parameter to every device, and it would miss "
                                "the buffers anyway. Use `model.to(device)`.", PARAMS_ONE_BY_ONE) from None
                raise
            m, b = _unpack_prepare(got, model, batch)
            if not same_values(batch, before) or batch.device.type != "cpu":
                raise Wrong("Your function changed the batch it was given. Leave the input alone and "
                            "return the moved copy.", MOVED_INPUT_IN_PLACE)
            _check_model(m, model, norm, context)
            _check_batch(fn, b, model, batch, make, target, norm, context)
    return (f"Right for {len(cases)} model/batch pairs (float and int64 batches, a model with buffers) "
            f"moved to {', '.join(sorted({str(n) for _, n in targets}))}, with the device given as a "
            "string and as a torch.device.")


def _unpack_prepare(got: Any, model: nn.Module, batch: torch.Tensor) -> tuple[Any, Any]:
    if got is None:
        raise Wrong("Your function returned None. Return both: `return model, batch`.", NOT_BOTH_RETURNED)
    if issubclass(type(got), nn.Module):
        raise Wrong("You returned only the model. The batch you moved is lost: return both, "
                    "`return model, batch`.", NOT_BOTH_RETURNED)
    if is_tensor(got):
        raise Wrong("You returned only the batch. Return both, model first: `return model, batch`.", NOT_BOTH_RETURNED)
    if type(got) not in (tuple, list):
        raise Wrong(f"You returned {safe_repr(got)} ({type(got).__name__}); return a pair, "
                    "`return model, batch`.", misconceptions.WRONG_TYPE)
    if len(got) != 2:
        raise Wrong(f"You returned {len(got)} item(s); return exactly two: `return model, batch`.",
                    misconceptions.WRONG_TYPE)
    m, b = got
    if is_tensor(m) and issubclass(type(b), nn.Module):
        raise Wrong("You returned `(batch, model)`: the order is `(model, batch)`.", PAIR_SWAPPED)
    if not issubclass(type(m), nn.Module):
        raise Wrong(f"The first item should be the model, but it is {safe_repr(m)} ({type(m).__name__}).",
                    misconceptions.WRONG_TYPE)
    if not is_tensor(b):
        raise Wrong(f"The second item should be the batch tensor, but it is {safe_repr(b)} "
                    f"({type(b).__name__}).", misconceptions.NOT_A_TENSOR)
    return m, expect_tensor(b, "The second item (the batch)")


def _check_model(m: nn.Module, model: nn.Module, norm: torch.device, context: str) -> None:
    if m is not model:
        raise Wrong("You returned a different model object (a copy?). `model.to(device)` moves the "
                    "model in place and returns that same object: return it. A copy leaves the caller's "
                    "model, and any optimizer built on it, behind.", COPIED_MODEL)
    params = [(n, p) for n, p in model.named_parameters() if not on_target(expect_tensor(p, f"Parameter `{n}`"), norm)]
    buffers = [(n, b) for n, b in model.named_buffers() if not on_target(expect_tensor(b, f"Buffer `{n}`"), norm)]
    if params:
        name, p = params[0]
        if len(params) == len(list(model.parameters())):
            raise Wrong(f"With {context}: your model is still on `{p.device}` (parameter `{name}`). You moved the "
                        "batch but not the model: call `model.to(device)` (it moves the model in place).",
                        MODEL_NOT_MOVED)
        raise Wrong(f"With {context}: parameter `{name}` is still on `{p.device}`. "
                    "`model.to(device)` moves every parameter and buffer at once.", PARAMS_ONE_BY_ONE)
    if buffers:
        name, b = buffers[0]
        raise Wrong(f"With {context}: the parameters moved but the buffer `{name}` is still on `{b.device}`. "
                    "Moving parameters one by one misses buffers such as BatchNorm's running statistics; "
                    "`model.to(device)` moves both.", PARAMS_ONE_BY_ONE)


def _check_batch(fn: Callable, b: torch.Tensor, model: nn.Module, batch: torch.Tensor,
                 make: Callable[[], nn.Module], target: Any, norm: torch.device, context: str) -> None:
    if not on_target(b, norm):
        where = f"With {context}: the batch you returned is still on `{b.device}`"
        if b is batch:
            watched = batch.as_subclass(WatchedTensor)
            if to_was_called(fn, (_new_model(make), watched, target), [watched]):
                raise Wrong(f"{where}. You called `batch.to(device)` but threw the result away: here "
                            "`.to` returned a new tensor and left `batch` where it was. Write "
                            "`batch = batch.to(device)`.", TO_NOT_ASSIGNED)
            raise Wrong(f"{where}. You moved the model but not the batch: the model would then meet a "
                        "batch on another device. Add `batch = batch.to(device)`.", BATCH_NOT_MOVED)
        raise Wrong(f"{where}; move it with `batch.to(device)`.", misconceptions.WRONG_DEVICE)
    if b.dtype != batch.dtype:
        raise Wrong(f"With {context}: you returned {describe(b)}. Move the batch without changing its dtype "
                    "(token ids must stay integers): `batch.to(device)`.", CHANGED_DTYPE)
    if b.shape != batch.shape:
        raise Wrong(f"With {context}: you returned {describe(b)}; keep the batch's shape.", misconceptions.WRONG_SHAPE)
    if not same_values(b, batch):
        raise Wrong(f"With {context}: the batch's values changed. `.to(device)` keeps the values.", CREATED_NOT_MOVED)
