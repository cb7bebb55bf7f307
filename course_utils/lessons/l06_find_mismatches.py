"""Lesson 06's 06.find_mismatches: name the parameters, buffers and inputs that are not on the device (06.scaler
is in :mod:`course_utils.lessons.l06_mismatch_errors`)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import torch
from torch import nn

from .. import misconceptions
from ..exercises import grader
from ..grading import Crashed, Wrong, call, list_mistake, safe_repr, target_device

# --- exercise 06.find_mismatches -------------------------------------------------------------

MOVES_TO_CHECK = misconceptions.code("06.moves-tensors-to-check")
DEVICE_VS_STRING = misconceptions.code("06.device-compared-with-string")
IGNORED_INDEX = misconceptions.code("06.ignored-device-index")
USED_STATE_DICT = misconceptions.code("06.used-state-dict")
FORGOT_BUFFERS = misconceptions.code("06.forgot-buffers")
FORGOT_INPUTS = misconceptions.code("06.forgot-inputs")
FORGOT_PARAMETERS = misconceptions.code("06.forgot-parameters")
ZERO_DIM_EXEMPTED = misconceptions.code("06.zero-dim-exempted")
LISTED_MATCHING = misconceptions.code("06.listed-tensors-on-device")
SHORT_NAMES = misconceptions.code("06.short-tensor-names")


def find_mismatches(model, inputs, device):
    """Sorted names of the parameters, buffers and inputs that are not on ``device``."""
    device = torch.device(device)
    named = [*model.named_parameters(), *model.named_buffers(), *inputs.items()]
    return sorted(name for name, tensor in named if tensor.device != device)


def _net() -> nn.Module:
    """The model the checks use: nested layers, BatchNorm buffers, a persistent and a non-persistent buffer (built of
    PyTorch's own layers, so that the students' public checks can keep it)."""
    model = nn.Sequential(OrderedDict(body=nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6)), head=nn.Linear(6, 2)))
    model.register_buffer("scale", torch.ones(2))
    model.register_buffer("mask", torch.ones(2), persistent=False)
    return model


class _ReportsDevice(torch.Tensor):
    """A CPU tensor whose ``.device`` reports another device: a second GPU where the machine has fewer than two."""

    @property
    def device(self):  # type: ignore[override]
        return self._reported_device


def _on_gpu(index: int, gen: torch.Generator) -> torch.Tensor:
    """A tensor on GPU ``index`` of the learner's accelerator's type (CUDA's where none is registered): a real one
    where there are two (the simulated GPU has two), else a CPU tensor that reports it."""
    target = target_device()
    t = torch.randn(3, generator=gen)
    if target.type != "meta" and torch.accelerator.device_count() >= 2:
        return t.to(torch.device(target.type, index))
    t = torch.Tensor._make_subclass(_ReportsDevice, t)
    t._reported_device = torch.device("cuda" if target.type == "meta" else target.type, index)
    return t


def _mismatch_cases() -> list[tuple[str, nn.Module, dict, Any, str]]:
    """(description, model, inputs, device, tag) for each check; tag marks what a case is there to catch."""
    gen, target, cases = torch.Generator().manual_seed(6), target_device(), []

    cases.append((f"the model on the CPU, input `x` on {target}, device=\"cpu\" (a string)", _net(),
                  {"x": torch.randn(8, 4, generator=gen).to(target), "y": torch.randn(8, generator=gen)},
                  "cpu", "string"))

    model = _net()
    model.body.to(target)  # everything but the head moves
    model.scale, model.mask = model.scale.to(target), model.mask.to(target)
    cases.append((f"the model moved to {target} except its head, device=torch.device(\"{target}\")", model,
                  {"x": torch.randn(8, 4, generator=gen).to(target),
                   "labels": torch.randint(0, 2, (8,), generator=gen)}, target, "device"))

    model = _net().to(target)
    model.scale = torch.ones(2)  # replaces the registered buffer with a CPU tensor: still a buffer
    cases.append((f"a buffer (`scale`) left on the CPU, device=\"{target}\"", model,
                  {"x": torch.randn(8, 4, generator=gen).to(target)}, str(target), "buffer"))

    model = _net().to(target)
    model.mask = torch.ones(2)
    cases.append((f"a buffer registered with persistent=False (`mask`) left on the CPU, device=\"{target}\"", model,
                  {"x": torch.randn(8, 4, generator=gen).to(target)}, str(target), "nonpersistent"))

    cases.append(("everything on the CPU, device=torch.device(\"cpu\")", _net(),
                  {"x": torch.randn(8, 4, generator=gen)}, torch.device("cpu"), "none"))

    cases.append((f"the whole model on {target} and no inputs, device=\"cpu\"", _net().to(target), {}, "cpu",
                  "unsorted"))

    on_gpu0, on_gpu1 = _on_gpu(0, gen), _on_gpu(1, gen)
    cases.append((f"a machine with two GPUs: inputs on {on_gpu0.device} and {on_gpu1.device}, "
                  f"device=torch.device(\"{on_gpu0.device}\")", _net(),
                  {"on_gpu0": on_gpu0, "on_gpu1": on_gpu1}, on_gpu0.device, "index"))

    model = _net()
    model.head.to(target)  # everything but the body moves
    model.scale, model.mask = model.scale.to(target), model.mask.to(target)
    cases.append((f"the model on {target} except its body, input `x` on the CPU, device=\"{target}\"", model,
                  {"x": torch.randn(8, 4, generator=gen), "y": torch.randn(8, generator=gen).to(target)},
                  str(target), "accelerator"))
    return cases


def _placement(model: nn.Module) -> list[tuple[str, str]]:
    return [(n, str(t.device)) for n, t in [*model.named_parameters(), *model.named_buffers()]]


@grader("06.find_mismatches", points=3, reference=find_mismatches, title="Find the odd ones out", hints=(
    "Three kinds of tensors take part in a forward pass: the model's parameters, its buffers and the "
    "inputs. Collect the names of all three, keep those whose device is not `device`, and sort.",
    "`model.named_parameters()` and `model.named_buffers()` give (name, tensor) pairs, and so does "
    "`inputs.items()`. Compare devices as devices: `torch.device(device)` turns a string into one, and "
    "`t.device == \"cpu\"` is always False because a device never equals a string.",
    "`device = torch.device(device)`, then "
    "`return sorted(n for n, t in [*model.named_parameters(), *model.named_buffers(), *inputs.items()] "
    "if t.device != device)`.",
))
def _grade_find_mismatches(fn: Callable) -> str:
    cases = _mismatch_cases()
    for description, model, inputs, device, tag in cases:
        expected = find_mismatches(model, inputs, device)
        before = _placement(model)
        try:
            got = call(fn, model, dict(inputs), device, context=description)
        except Crashed as e:
            if tag == "index":
                raise Wrong(f"In {description}, your function raised {type(e.error).__name__}: "
                            f"{safe_repr(str(e.error), 160)}. Look at where tensors are, don't move them: "
                            "compare `t.device` with `torch.device(device)`.", MOVES_TO_CHECK) from None
            raise
        if _placement(model) != before:
            raise Wrong("Your function moved the model's tensors (a `model.to(...)` inside?). "
                        "Only look at where tensors are; leave them there.", MOVES_TO_CHECK)
        # compare plain values only: a list subclass (or str subclass) could define == to say anything
        names = type(got) is list and all(type(name) is str for name in got)
        if not names or got != expected:
            why, code = _diagnose(got, expected, model, inputs, device, tag)
            said = f"your list differs from the answer: {_difference(got, expected)}" if names else \
                f"you returned {safe_repr(got, 200)}"
            raise Wrong(f"In the case of {description}, {said}.\n" + why, code)
    where = ", ".join(sorted({str(torch.device(c[3])) for c in cases if c[4] != "index"}))
    return (f"Right in {len(cases)} cases: parameters, buffers (persistent or not) and inputs, on {where}, "
            "the device given as a string or a torch.device, and a second GPU.")


def _difference(got: list[str], expected: list[str]) -> str:
    """How ``got`` differs from ``expected``: the names missing and the names extra, each list whole."""
    return "; ".join(f"{label} {', '.join(safe_repr(n, 60) for n in sorted(names))}" for label, names in (
        ("it misses", set(expected) - set(got)), ("it has extra", set(got) - set(expected))) if names) or (
        "a name twice" if len(set(got)) != len(got) else "the same names in another order")


def _zero_dim_cpu_skipped(missing: set[str], model: nn.Module, inputs: dict, params: set[str],
                          buffers: set[str]) -> set[str]:
    """The missing names that look skipped for being 0-dim CPU tensors: of each kind (parameters, buffers, inputs), only
    when every missing tensor of that kind is one (an answer that ignores all buffers is told about buffers instead)."""
    tensors = {**dict(model.named_parameters()), **dict(model.named_buffers()), **inputs}
    zero = {n for n in missing if isinstance(tensors.get(n), torch.Tensor) and tensors[n].dim() == 0
            and tensors[n].device.type == "cpu"}
    skipped: set[str] = set()
    for kind in (params, buffers, set(inputs)):
        if missing & kind and missing & kind <= zero:
            skipped |= missing & kind
    return skipped


def _diagnose(got: Any, expected: list[str], model: nn.Module, inputs: dict, device: Any, tag: str) -> tuple[str, str]:
    """What is wrong with ``got``, and the misconception's code (the first reason's, where there are several)."""
    kind = list_mistake(got, str, "names", "the names that `named_parameters()`, `named_buffers()` and the "
                        "`inputs` keys give")
    if kind:
        return kind[0].upper() + kind[1:], misconceptions.WRONG_TYPE
    if len(set(got)) != len(got):
        return "Some names appear twice: list each tensor once.", misconceptions.WRONG_VALUE
    params = {n for n, _ in model.named_parameters()}
    buffers = {n for n, _ in model.named_buffers()}
    whole = _whole_answer_mistake(set(got), set(expected), params | buffers | set(inputs), device)
    if whole:
        return whole
    missing, extra = set(expected) - set(got), set(got) - set(expected)
    reasons = _missing_reasons(missing, model, inputs, params, buffers, device, tag)
    if extra:
        reasons.append((f"You reported {', '.join(sorted(extra))}, which {'is' if len(extra) == 1 else 'are'} "
                        f"already on {torch.device(device)}.", misconceptions.WRONG_VALUE))
    if not reasons:
        return "Compare each tensor's device with `torch.device(device)`.", misconceptions.WRONG_VALUE
    return " ".join(reason for reason, _ in reasons), reasons[0][1]


def _whole_answer_mistake(got_set: set[str], want: set[str], everything: set[str],
                          device: Any) -> tuple[str, str] | None:
    """A mistake that the whole set of names shows (the wrong order, unknown names, the tensors on the device,
    every tensor), and its code; None when the answer is a near miss to be told name by name."""
    if got_set == want:
        return "The right names, in the wrong order: return them sorted (`sorted(names)`).", misconceptions.WRONG_VALUE
    unknown = got_set - everything
    if unknown:
        return (f"{safe_repr(sorted(unknown))} are not names of this model's tensors or inputs. Use the full "
                "dotted names that `named_parameters()` / `named_buffers()` give (like `head.weight`), and "
                "the input dict's keys.", SHORT_NAMES)
    on_device = everything - want
    if on_device and got_set == on_device:
        return "You listed the tensors that ARE on the device; list the ones that are not.", LISTED_MATCHING
    if on_device and got_set == everything:
        if isinstance(device, str):
            return (f"You reported every tensor, even those on `{device}`. Here `device` is the string "
                    f"{device!r}, and a torch.device never equals a string (`t.device == \"cpu\"` is False). "
                    "Convert first: `torch.device(device)`.", DEVICE_VS_STRING)
        return ("You reported every tensor, even those already on the device. Here `device` is a "
                "torch.device: comparing it with a string such as `str(t.device)` is always unequal. "
                "Convert both sides to `torch.device` (`torch.device(device)`) and compare those.", DEVICE_VS_STRING)
    return None


def _missing_reasons(missing: set[str], model: nn.Module, inputs: dict, params: set[str], buffers: set[str],
                     device: Any, tag: str) -> list[tuple[str, str]]:
    """Why each kind of name is ``missing`` (0-dim CPU tensors, a device index ignored, buffers, inputs,
    parameters), each with its code, in the order the feedback gives them."""
    reasons = []
    skipped = _zero_dim_cpu_skipped(missing, model, inputs, params, buffers)
    if skipped:
        names = ", ".join(f"`{n}`" for n in sorted(skipped))
        one = len(skipped) == 1
        reasons.append((f"You skipped {names}, {'a 0-dim tensor' if one else '0-dim tensors'} on the CPU. Section "
                        "7's pass lets a 0-dim CPU tensor join an element-wise operation of two tensors on any "
                        f"device, but {'it is' if one else 'they are'} still not on {torch.device(device)}, and this "
                        "exercise lists every tensor that is not on `device` (operations such as `torch.addmm` "
                        "refuse such a tensor, and `model.to(device)` would move it). "
                        f"List {'it' if one else 'them'} too: leave out the 0-dim exception.", ZERO_DIM_EXEMPTED))
        missing = missing - skipped
    if tag == "index" and "on_gpu1" in missing:
        wanted = torch.device(device)
        reasons.append((f"An input on {wanted.type}:1 is not on {wanted}, but your function let it pass: comparing "
                        "only `.type` ignores the device index. Compare whole devices: "
                        "`t.device != torch.device(device)`.", IGNORED_INDEX))
    non_persistent = {n for n in buffers if n.rsplit(".", 1)[-1] == "mask"}
    if missing & buffers and missing & buffers <= non_persistent and tag == "nonpersistent":
        reasons.append(("You missed the buffer `mask`, registered with persistent=False. `state_dict()` leaves "
                        "such buffers out; `model.named_buffers()` lists them all.", USED_STATE_DICT))
    elif missing & buffers:
        reasons.append((f"You missed buffers ({', '.join(sorted(missing & buffers))}): buffers move with the "
                        "model and take part in forward too. Add `model.named_buffers()`.", FORGOT_BUFFERS))
    if missing & set(inputs) and not (tag == "index" and missing & set(inputs) == {"on_gpu1"}):
        reasons.append((f"You missed inputs ({', '.join(sorted(missing & set(inputs)))}): check the `inputs` "
                        "dict as well, by its keys.", FORGOT_INPUTS))
    if missing & params:
        reasons.append((f"You missed parameters ({', '.join(sorted(missing & params))}): use "
                        "`model.named_parameters()`, which includes every submodule's.", FORGOT_PARAMETERS))
    return reasons
