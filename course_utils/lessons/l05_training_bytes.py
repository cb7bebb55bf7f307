"""Lesson 05's 05.training_bytes: the bytes training keeps on the device for a model's parameters, their gradients and
the optimizer's state (:data:`course_utils.lessons.l05_device_attribute.STATE_COPIES`)."""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from .. import misconceptions
from ..exercises import grader
from ..grading import Wrong, call, expect_int
from .l01_tensors import ASSUMED_4_BYTES, COUNTED_ELEMENTS   # lesson 01's misconceptions, met again for parameters
from .l05_device_attribute import STATE_COPIES

# --- exercise 05.training_bytes --------------------------------------------------------------

def training_bytes(model, optimizer):
    """Bytes on the device for ``model``'s parameters, their gradients and the optimizer's state.

    ``optimizer`` is "sgd" (plain SGD), "momentum" (SGD with momentum) or "adam". Activations are not counted."""
    copies = 2 + {"sgd": 0, "momentum": 1, "adam": 2}[optimizer]     # weight + gradient + state
    return copies * sum(p.numel() * p.element_size() for p in model.parameters())


def _training_cases() -> list[tuple[str, Callable[[], nn.Module]]]:
    """(description, factory), in the order checked."""
    return [
        ("`nn.Linear(10, 5)` (float32)", lambda: nn.Linear(10, 5)),
        ("`nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))` (with buffers)",
         lambda: nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))),
        ("`nn.Linear(6, 3).half()` (float16: 2 bytes an element)", lambda: nn.Linear(6, 3).half()),
        ("`nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4).double(), nn.Linear(4, 2).to(torch.bfloat16))` "
         "(mixed dtypes)",
         lambda: nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4).double(), nn.Linear(4, 2).to(torch.bfloat16))),
        ("`nn.ReLU()` (no parameters)", lambda: nn.ReLU()),
        ("`nn.Linear(1000, 1000)` built without data (shapes only)", lambda: nn.Linear(1000, 1000, device="meta")),
        ("`nn.Linear(50_000, 50_000)` built without data (2.5 billion parameters, no memory used)",
         lambda: nn.Linear(50_000, 50_000, device="meta")),
    ]


def _bytes(tensors: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


ADAM_STATE = misconceptions.code("05.adam-state-undercounted")
MOMENTUM_STATE = misconceptions.code("05.momentum-state-missed")
NO_GRADIENTS = misconceptions.code("05.gradients-not-counted")
SGD_STATE = misconceptions.code("05.plain-sgd-has-state")
COUNTED_BUFFERS = misconceptions.code("05.counted-buffers")


def _training_diagnosis(got: int, module: nn.Module, optimizer: str) -> tuple[str, str]:
    """Name the realistic mistake that gives ``got``, with its code; ``("", WRONG_VALUE)`` when none matches."""
    p, b = _bytes(module.parameters()), _bytes(module.buffers())
    numel, state = sum(q.numel() for q in module.parameters()), STATE_COPIES[optimizer]
    if numel and got == 4 * numel * (2 + state) and p != 4 * numel:
        return ("You used 4 bytes for every element, but not every dtype is float32: float16 and bfloat16 take 2, "
                "float64 8. Use each parameter's `p.element_size()`.", ASSUMED_4_BYTES)
    if numel and got == numel * (2 + state) and p != numel:
        return ("That is a number of elements, not bytes: multiply each parameter's `numel()` by its "
                "`element_size()`.", COUNTED_ELEMENTS)
    # plain SGD is checked first on each model, so by momentum and Adam the gradients are known to be counted
    if optimizer == "adam" and p and got in (p * 2, p * 3):
        return ("Adam keeps **two** moments per parameter, `exp_avg` and `exp_avg_sq`, each the size and dtype of "
                "the parameter: weights + gradients + 2 moments = 4 copies.", ADAM_STATE)
    if optimizer == "momentum" and p and got == p * 2:
        return ("SGD with momentum keeps one `momentum_buffer` per parameter, the parameter's size and dtype.",
                MOMENTUM_STATE)
    if optimizer == "sgd" and p and got == p:
        return ("That is the weights alone. Training also stores a gradient (`p.grad`) the size and dtype of every "
                "parameter: count one more copy.", NO_GRADIENTS)
    if optimizer == "sgd" and p and got in (p * 3, p * 4):
        return "Plain SGD (no momentum) keeps no state: just the weights and their gradients, 2 copies.", SGD_STATE
    if b and got in ((p + b) * (2 + state), p * (2 + state) + b):
        return ("You counted the buffers (such as BatchNorm's running statistics). They are on the device too, "
                "but they get no gradient and no optimizer state, and this exercise counts parameters only.",
                COUNTED_BUFFERS)
    return "", misconceptions.WRONG_VALUE


#: What to return instead of a tensor or a float, and why, for a count of bytes.
_BYTES_ADVICE = {
    "tensor": "Return a plain Python int: `numel()` and `element_size()` already give ints.",
    "float": "Bytes are whole: return an int. Sizes come from each parameter's `numel()` and `element_size()`, "
             "not from its values (which the largest models checked do not even have); use `*` and `sum`, not `/`.",
}


@grader("05.training_bytes", points=3, reference=training_bytes, title="Will it fit for training?", hints=(
    "Count bytes per parameter tensor: `p.numel() * p.element_size()`, summed over `model.parameters()`. "
    "`element_size()` is 4 for float32, 2 for float16 and bfloat16, 8 for float64; neither needs the values.",
    "Training keeps several copies of those bytes: the weights, their gradients, and the optimizer's state: none "
    "for plain SGD, one `momentum_buffer` for momentum, two moments (`exp_avg`, `exp_avg_sq`) for Adam.",
    "`copies = {'sgd': 2, 'momentum': 3, 'adam': 4}[optimizer]`, then "
    "`return copies * sum(p.numel() * p.element_size() for p in model.parameters())`.",
))
def _grade_training_bytes(fn: Callable) -> str:
    cases = _training_cases()
    for what, make in cases:
        for optimizer in STATE_COPIES:
            module = make()
            want = training_bytes(module, optimizer)
            context = f"{what} and optimizer={optimizer!r}"
            got = expect_int(call(fn, module, optimizer, context=context), f"For {context}", want=want,
                             advice=_BYTES_ADVICE)
            if got != want:
                why, code = _training_diagnosis(got, module, optimizer)
                raise Wrong(f"For {context} the answer is {want:,} bytes, you returned {got:,}. "
                            + (why or "Count weights, gradients and the optimizer's state, each "
                                      "`numel() * element_size()` per parameter."), code)
    return (f"Right on {len(cases)} models with plain SGD, momentum and Adam: float32, float16, bfloat16 and "
            "float64 parameters, buffers left out, and models as large as 2.5 billion parameters.")
