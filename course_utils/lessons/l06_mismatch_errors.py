"""Lesson 06 - device-mismatch errors: read them, reproduce them, find the tensor, fix it."""
from __future__ import annotations

import inspect
from typing import Any, Callable

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .. import device as _device
from .. import misconceptions
from ..exercises import grader
from ..grading import Crashed, Wrong, a_tensor, call, describe, devices_to_test, expect_tensor, is_tensor, safe_repr
from ..quizzes import add_quiz

# --- quizzes ---------------------------------------------------------------------------------

add_quiz(
    "06.add_error",
    "`a = torch.ones(3, device=target)` lives on your GPU (or the simulated GPU); `b = torch.ones(3)` names no device. "
    "What does `a + b` do?",
    ["It copies `b` to `a`'s device and adds", "It adds on the CPU and returns a CPU tensor",
     "It raises a RuntimeError about devices", "It returns a tensor on `a`'s device with a warning"],
    2,
    "PyTorch does not move `b` for you: `b` was made on the default device, the CPU, and an ordinary "
    "operation needs all its tensors on one device. You get a RuntimeError that names the two devices. "
    "(Section 7 shows the few narrow places where PyTorch does move a tensor for you.)",
)
add_quiz(
    "06.to_no_assign",
    "`batches` is a list of three CPU tensors. You run `for b in batches: b = b.to(target)`, with the "
    "assignment this time. Where is `batches[0]` now?",
    ["On `target`: `b = b.to(target)` keeps the moved tensor", "On both devices: the list now holds two copies",
     "Nowhere: the loop freed the CPU tensors as it moved them",
     "Still on the CPU: the loop only rebinds the name `b`"],
    3,
    "`b = b.to(target)` points the loop's name `b` at the moved tensor; the list still holds the CPU tensors, "
    "and each moved copy is thrown away at the next turn. It is the same rule as `x.to(target)` on a line of its "
    "own (lesson 03): `Tensor.to` never changes a tensor, it returns one, and only what you store keeps it. "
    "Build a new list: `batches = [b.to(target) for b in batches]`.",
)
add_quiz(
    "06.plain_attribute",
    "A module's `__init__` does `self.mean = torch.zeros(4)` (a plain attribute). After "
    "`norm = Standardize(...).to(target)`, where is `norm.mean`?",
    ["Still on the CPU", "On `target`, like the rest of the module", "On both devices",
     "It was dropped: `.to` keeps only parameters"],
    0,
    "`Module.to` moves what the module has registered: parameters, buffers and submodules. A plain tensor "
    "attribute is invisible to it (and to `state_dict()`): it stays on the CPU. Register it with "
    "`self.register_buffer(\"mean\", ...)` and it moves.",
)
add_quiz(
    "06.optimizer_state",
    "You build `opt = torch.optim.Adam(model.parameters())` on the CPU, train one step, then call "
    "`model.to(target)`. Where is Adam's `exp_avg` for the weight?",
    ["Still on the CPU, where Adam created it", "On `target`: `Module.to` moves the optimizer too",
     "Nowhere: Adam deletes its state and starts again", "On `target`, because the next `opt.step()` moves it"],
    0,
    "Optimizer state is made next to the parameters the first time `step()` runs, and nothing moves it "
    "afterwards: `Module.to` knows nothing about the optimizer. Move the model first, then create the "
    "optimizer (or load its state after moving).",
)
add_quiz(
    "06.zero_dim",
    "`a = torch.ones(3, device=target)`. Which of these runs without an error?",
    ["Both `a * torch.tensor(2.0)` and `a * torch.tensor([2.0])`", "Only `a * torch.tensor(2.0)`",
     "Only `a * torch.tensor([2.0])`", "Neither: both multiply by a CPU tensor"],
    1,
    "`torch.tensor(2.0)` is 0-dimensional. PyTorch lets one 0-dim CPU tensor take part in an operation of two "
    "tensors (`+`, `*`, comparisons...) or `torch.where` on any device, like a Python number. "
    "`torch.tensor([2.0])` has one element but one dimension, and gets no such pass.",
)
add_quiz(
    "06.weights_only",
    "You saved a whole model with `torch.save(model, 'model.pt')`. On PyTorch 2.6 or later, what does "
    "`torch.load('model.pt')` do?",
    ["Returns the model", "Returns only its `state_dict`",
     "Raises `UnpicklingError`: `weights_only=True` is the default", "Returns the model, on the CPU"],
    2,
    "Since PyTorch 2.6 `torch.load` unpickles only tensors, numbers, strings and plain containers unless you "
    "pass `weights_only=False`, which can run arbitrary code: do it only for files you trust. Saving "
    "`model.state_dict()` and rebuilding the model in code avoids the question.",
)


# --- exercise 06.find_mismatches -------------------------------------------------------------

_SECTION_5 = ("06_mismatch_errors", "5. Which tensor is it?")

MOVES_TO_CHECK = misconceptions.define(
    "06.moves-tensors-to-check", "Moved tensors to find where they are",
    "Moved the model or the tensors (`model.to(...)`, `t.to(device)`), or made a tensor on `device`, to find the "
    "odd ones out. Finding them only takes reading each tensor's `.device`; `Module.to` moves the model in place, "
    "changing what it was asked about, and using a device this machine lacks raises.",
    section=_SECTION_5,
    question="Which attribute tells you where a tensor lives without changing anything, and what does "
             "`model.to(device)` do to the model you were asked about?")
DEVICE_VS_STRING = misconceptions.define(
    "06.device-compared-with-string", "Compared a `torch.device` with a string",
    "Compared `t.device` with the string `device`, or `str(t.device)` with a `torch.device`, believing a device "
    "equals its name. A `torch.device` never equals a string (`torch.device(\"cpu\") == \"cpu\"` is False, with no "
    "error), so every tensor looked misplaced: convert with `torch.device(device)` first.",
    section=("03_to_device", "4. Strings and device objects"),
    question="`device` may arrive as `\"cpu\"` or as `torch.device(\"cpu\")`. What does `t.device == device` give "
             "for a CPU tensor in each case, and how do you make both work?")
IGNORED_INDEX = misconceptions.define(
    "06.ignored-device-index", "Compared only the device type, not the index",
    "Compared `t.device.type` only, believing `cuda:1` counts as being on `cuda:0`. A device names one exact "
    "device, type and index: on a machine with two GPUs a tensor on `cuda:1` still mismatches one on `cuda:0`.",
    section=("05_device_attribute", "2. Comparing devices"),
    question="On a machine with two GPUs, is a tensor on `cuda:1` on `torch.device(\"cuda:0\")`? Which comparison "
             "says so: `.type`, or the whole device?")
USED_STATE_DICT = misconceptions.define(
    "06.used-state-dict", "Looked for the tensors in `state_dict()`",
    "Took `state_dict()` for a list of every tensor the model holds. It leaves out buffers registered with "
    "`persistent=False`, which still move with `Module.to` and take part in `forward`: `named_buffers()` lists "
    "them all.",
    section=("06_mismatch_errors", "4. Cause: a plain tensor attribute"),
    question="A buffer is registered with `persistent=False`. Does `Module.to` move it, and does `state_dict()` "
             "list it?")
FORGOT_BUFFERS = misconceptions.define(
    "06.forgot-buffers", "Checked the parameters but not the buffers",
    "Believes a model's tensors are its parameters. Buffers (BatchNorm's running statistics, registered constants) "
    "move with the model and take part in `forward` too, so a buffer left behind raises the same error.",
    section=_SECTION_5,
    question="Which tensors does a `BatchNorm1d` layer hold besides its weight and bias, and could one of them "
             "cause a device-mismatch error?")
FORGOT_INPUTS = misconceptions.define(
    "06.forgot-inputs", "Checked the model but not the inputs",
    "Looked only inside the model. The inputs take part in the forward pass as well, and an input never moved is "
    "the most common cause of the error.",
    section=("06_mismatch_errors", "2. Cause: an input that was never moved"),
    question="The model is on the GPU and the error still names `cpu`. Which tensor that is not part of the model "
             "do you check first?")
FORGOT_PARAMETERS = misconceptions.define(
    "06.forgot-parameters", "Checked the buffers and inputs but not the parameters",
    "Left out the parameters, or took only the top-level module's (`named_parameters()` includes every "
    "submodule's). Weights and biases on the wrong device are a classic cause, e.g. a layer replaced after the "
    "model was moved.",
    section=_SECTION_5,
    question="A layer is replaced (`model.head = nn.Linear(...)`) after `model.to(device)`. Where do its weight "
             "and bias live, and which call lists them?")
ZERO_DIM_EXEMPTED = misconceptions.define(
    "06.zero-dim-exempted", "Left out 0-dim CPU tensors",
    "Took the 0-dim exception (a 0-dim CPU tensor may join an operation of two tensors on any device) to mean such "
    "a tensor is on every device. It is still on the CPU: on a GPU, per-argument operations such as `torch.addmm` "
    "refuse it, and `Module.to` would move it.",
    section=("06_mismatch_errors", "7. Where PyTorch does move a tensor for you"),
    question="`a` is on the GPU. Why does `a * torch.tensor(2.0)` work while `torch.addmm(torch.tensor(1.0), m, m)` "
             "raises, and where does `torch.tensor(2.0)` live?")
LISTED_MATCHING = misconceptions.define(
    "06.listed-tensors-on-device", "Listed the tensors on the device, not the others",
    "Inverted the test and kept the tensors whose device is `device`. The ones to find are those that are not on "
    "it: they are what the error complains about, and what must be moved.",
    section=_SECTION_5,
    question="The model should be on `cuda:0` and the error names `cuda:0` and `cpu`. Which tensors do you need to "
             "find, and what do you do with each?")
SHORT_NAMES = misconceptions.define(
    "06.short-tensor-names", "Used short names, not the dotted names",
    "Reported a tensor by its attribute name (`weight`) instead of the full dotted name that "
    "`named_parameters()` and `named_buffers()` give (`head.weight`). Several layers have a `weight`; only the "
    "dotted name says which tensor to move.",
    section=("06_mismatch_errors", "5. Which tensor is it? › Exercise 06.find_mismatches"),
    question="Two layers of a model each have a `weight`. How does `named_parameters()` tell them apart?")


def find_mismatches(model, inputs, device):
    """Sorted names of the parameters, buffers and inputs that are not on ``device``."""
    device = torch.device(device)
    named = [*model.named_parameters(), *model.named_buffers(), *inputs.items()]
    return sorted(name for name, tensor in named if tensor.device != device)


class _Net(nn.Module):
    """The model the checks use: nested layers, BatchNorm buffers, a persistent and a non-persistent buffer."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6))
        self.head = nn.Linear(6, 2)
        self.register_buffer("scale", torch.ones(2))
        self.register_buffer("mask", torch.ones(2), persistent=False)

    def forward(self, x):
        return self.head(self.body(x)) * self.scale * self.mask


class _ReportsDevice(torch.Tensor):
    """A CPU tensor whose ``.device`` reports another device: a stand-in for a second GPU on any machine."""

    @property
    def device(self):  # type: ignore[override]
        return self._reported_device


def _reporting(device: str, gen: torch.Generator) -> torch.Tensor:
    t = torch.Tensor._make_subclass(_ReportsDevice, torch.randn(3, generator=gen))
    t._reported_device = torch.device(device)
    return t


def _mismatch_cases() -> list[tuple[str, nn.Module, dict, Any, str]]:
    """(description, model, inputs, device, tag) for each check; tag marks what a case is there to catch."""
    gen = torch.Generator().manual_seed(6)
    meta = torch.device("meta")
    cases = []

    model = _Net()
    cases.append(("the model on the CPU, input `x` on meta, device=\"cpu\" (a string)", model,
                  {"x": torch.randn(8, 4, generator=gen).to(meta), "y": torch.randn(8, generator=gen)},
                  "cpu", "string"))

    model = _Net()
    model.body.to(meta)  # everything but the head moves to meta
    model.scale, model.mask = model.scale.to(meta), model.mask.to(meta)
    cases.append(("the model moved to meta except its head, device=torch.device(\"meta\")", model,
                  {"x": torch.randn(8, 4, generator=gen).to(meta),
                   "labels": torch.randint(0, 2, (8,), generator=gen)}, meta, "device"))

    model = _Net().to(meta)
    model.scale = torch.ones(2)  # replaces the registered buffer with a CPU tensor: still a buffer
    cases.append(("a buffer (`scale`) left on the CPU, device=\"meta\"", model,
                  {"x": torch.randn(8, 4, generator=gen).to(meta)}, "meta", "buffer"))

    model = _Net().to(meta)
    model.mask = torch.ones(2)
    cases.append(("a buffer registered with persistent=False (`mask`) left on the CPU, device=\"meta\"", model,
                  {"x": torch.randn(8, 4, generator=gen).to(meta)}, "meta", "nonpersistent"))

    cases.append(("everything on the CPU, device=torch.device(\"cpu\")", _Net(),
                  {"x": torch.randn(8, 4, generator=gen)}, torch.device("cpu"), "none"))

    cases.append(("the whole model on meta and no inputs, device=\"cpu\"", _Net().to(meta), {}, "cpu", "unsorted"))

    cases.append(("a simulated machine with two GPUs: inputs that report cuda:0 and cuda:1, "
                  "device=torch.device(\"cuda:0\")", _Net(),
                  {"on_gpu0": _reporting("cuda:0", gen), "on_gpu1": _reporting("cuda:1", gen)},
                  torch.device("cuda:0"), "index"))

    acc = _device.accelerator()
    if acc is not None:
        target = _device.best_device()
        model = _Net()
        model.head.to(target)  # everything but the body moves to the accelerator
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
        if type(got) is not list or any(type(name) is not str for name in got):
            why, code = _diagnose(got, expected, model, inputs, device, tag)
            raise Wrong(f"In the case of {description}, you returned {safe_repr(got, 200)}.\n" + why, code)
        if got != expected:
            why, code = _diagnose(got, expected, model, inputs, device, tag)
            raise Wrong(f"In the case of {description}, the answer is {safe_repr(expected, 200)}, "
                        f"you returned {safe_repr(got, 200)}.\n" + why, code)
    where = ", ".join(sorted({str(torch.device(c[3])) for c in cases if c[4] != "index"}))
    return (f"Right in {len(cases)} cases: parameters, buffers (persistent or not) and inputs, on {where}, "
            "the device given as a string or a torch.device, and a simulated second GPU.")


def _zero_dim_cpu_skipped(missing: set[str], model: nn.Module, inputs: dict, params: set[str],
                          buffers: set[str]) -> set[str]:
    """The missing names that look skipped for being 0-dim CPU tensors: of each kind (parameters,
    buffers, inputs), only when every missing tensor of that kind is one (an answer that ignores all
    buffers is told about buffers instead)."""
    tensors = {**dict(model.named_parameters()), **dict(model.named_buffers()), **inputs}
    zero = {n for n in missing if isinstance(tensors.get(n), torch.Tensor) and tensors[n].dim() == 0
            and tensors[n].device.type == "cpu"}
    skipped: set[str] = set()
    for kind in (params, buffers, set(inputs)):
        if missing & kind and missing & kind <= zero:
            skipped |= missing & kind
    return skipped


def _diagnose(got: Any, expected: list[str], model: nn.Module, inputs: dict, device: Any,
              tag: str) -> tuple[str, str]:
    """What is wrong with ``got``, and the misconception's code (the first reason's, where there are several)."""
    kind = _kind_mistake(got)
    if kind:
        return kind, misconceptions.WRONG_TYPE
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


def _kind_mistake(got: Any) -> str:
    """What is wrong with the kind of ``got`` or of its items (not a plain list of plain strings), or ""."""
    if got is None:
        return "Your function returned None: did you forget the `return`?"
    if isinstance(got, (set, frozenset)):
        return "Return a list, sorted: a set has no order. `sorted(...)` makes a list."
    if isinstance(got, (tuple, dict)) or inspect.isgenerator(got):
        return "Return a list of names, sorted: `sorted(...)` makes one from any iterable."
    if not isinstance(got, list):
        return f"Return a list of names, not a {type(got).__name__}."
    if type(got) is not list:
        return (f"Return a plain `list` (`sorted(...)` makes one), not a `{type(got).__name__}`: the check "
                "compares plain lists of plain strings.")
    if any(type(g) is not str for g in got):
        odd = next(g for g in got if type(g) is not str)
        if isinstance(odd, torch.Tensor):
            return "Return the names (strings), not the tensors themselves."
        if isinstance(odd, tuple):
            return "Return just the names, not (name, tensor) pairs."
        if isinstance(odd, str):
            return (f"Every item should be a plain string; one is a `{type(odd).__name__}`. Return the names "
                    "as `named_parameters()`, `named_buffers()` and the `inputs` keys give them.")
        return f"Every item should be a name (a string); one is {safe_repr(odd)} ({type(odd).__name__})."
    return ""


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
                        "7's pass lets a 0-dim CPU tensor join an operation of two tensors on any device, but "
                        f"{'it is' if one else 'they are'} still not on {torch.device(device)}, and this "
                        "exercise lists every tensor that is not on `device` (operations such as `torch.addmm` "
                        "refuse such a tensor, and `model.to(device)` would move it). "
                        f"List {'it' if one else 'them'} too: leave out the 0-dim exception.", ZERO_DIM_EXEMPTED))
        missing = missing - skipped
    if tag == "index" and "on_gpu1" in missing:
        reasons.append(("An input on cuda:1 is not on cuda:0, but your function let it pass: comparing only "
                        "`.type` ignores the device index. Compare whole devices: "
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


# --- exercise 06.scaler ----------------------------------------------------------------------

_SECTION_3 = ("06_mismatch_errors", "3. Cause: a tensor made inside `forward`")
_SECTION_4 = ("06_mismatch_errors", "4. Cause: a plain tensor attribute")

NO_SUPER_INIT = misconceptions.define(
    "06.no-super-init", "Forgot `super().__init__()`",
    "Wrote a module's `__init__` without calling `super().__init__()` first. `nn.Module.__init__` sets up the "
    "registries of parameters, buffers and submodules: without it `register_buffer` raises `AttributeError`, and "
    "`.to`, `parameters()` and `state_dict()` do not work.",
    section=("03_to_device", "Pitfalls"),
    question="What does `nn.Module.__init__` set up, and what happens when `__init__` calls `register_buffer` "
             "before it?")
CONSTANT_AS_PARAMETER = misconceptions.define(
    "06.constant-as-parameter", "Stored the constant as a trainable `nn.Parameter`",
    "Wrapped the constant in `nn.Parameter`, believing that is how a module keeps a tensor that follows `.to`. "
    "`model.parameters()` hands a parameter to the optimizer, which changes it; a buffer (`register_buffer`) "
    "moves with `.to` and is never trained.",
    section=_SECTION_4,
    question="Of an `nn.Parameter`, a buffer and a plain tensor attribute, which move with `Module.to`, and which "
             "does the optimizer train?")
FROZEN_PARAMETER = misconceptions.define(
    "06.frozen-parameter-as-constant", "Stored the constant as a frozen `nn.Parameter`",
    "Used `nn.Parameter(..., requires_grad=False)`, believing a frozen parameter is a constant. It is still a "
    "parameter: `model.parameters()` lists it, it goes to the optimizer and counts as a model weight. A constant "
    "is a buffer.",
    section=_SECTION_4,
    question="Does `list(model.parameters())` include a parameter made with `requires_grad=False`? Where does a "
             "constant that must follow `.to` belong?")
PLAIN_ATTRIBUTE = misconceptions.define(
    "06.plain-tensor-attribute", "Held a tensor as a plain attribute",
    "Assigned the tensor as a plain attribute (`self.scale = t`, or inside a list), believing `Module.to` moves "
    "every tensor a module holds. It moves only registered parameters, buffers and submodules: the attribute stays "
    "on the CPU and `forward` fails on a GPU. `self.register_buffer(...)` fixes it.",
    section=_SECTION_4,
    question="After `norm = Standardize(torch.zeros(4), torch.ones(4)).to(target)`, where is `norm.mean`, and "
             "which one change makes it follow `.to`?")
CONSTANT_PLACED = misconceptions.define(
    "06.constant-placed-in-init", "Put the constant on a device in `__init__`",
    "Created the constant on a chosen device in `__init__` (`device=` a global device, or `\"cuda\"`), believing "
    "the module must place it. A module builds its tensors on the default device and registers them; the caller's "
    "`Module.to` then moves them wherever the model goes.",
    section=_SECTION_4,
    question="Who decides where a model lives: its `__init__`, or the code that calls `model.to(device)`? What goes "
             "wrong when `__init__` picks the device?")
PLAIN_NUMBER = misconceptions.define(
    "06.plain-number-for-constant", "Multiplied by a plain number, not a constant vector",
    "Wrote `x * 2`: the right values, but it sidesteps what the exercise practises, a per-feature constant vector "
    "that the module holds. A Python number has no device and is fine in real code; a per-feature tensor (a mean, "
    "a scale) must be a buffer, so that `.to` moves it.",
    section=("06_mismatch_errors", "4. Cause: a plain tensor attribute › Exercise 06.scaler"),
    question="When is a plain number enough in `forward`, and when must a module hold its constant as a tensor, "
             "registered as a buffer?")
OVERRODE_TO = misconceptions.define(
    "06.overrode-module-to", "Overrode `Module.to`",
    "Wrote a `to` of its own (to move the constant by hand) that does not return the module. `Module.to` already "
    "moves registered buffers, in place, and returns the module itself.",
    section=("03_to_device", "5. Moving a model"),
    question="What does `model.to(device)` return, and why may it stand on a line of its own when `x.to(device)` "
             "must be assigned?")
MADE_IN_FORWARD = misconceptions.define(
    "06.tensor-made-in-forward", "Made a tensor in `forward` without `device=`",
    "Created a tensor inside `forward` with a factory function (`torch.full`, `torch.randn`, ...) and no "
    "`device=`, believing it lands where the input is. Factory functions use the default device, the CPU, so on a "
    "GPU `forward` mixes devices: use `device=x.device`, a `*_like` function, or a buffer made in `__init__`.",
    section=_SECTION_3,
    question="Inside `forward`, where does `torch.randn(x.shape)` put its tensor when `x` is on the GPU, and which "
             "two ways make it land next to `x`?")
OUTPUT_MOVED = misconceptions.define(
    "06.output-off-input-device", "Moved the output off the input's device",
    "Sent the result of `forward` to a fixed device (a global `device`, `.cpu()`, `\"cuda\"`). A module computes "
    "where its input is and returns the result there; where the data lives is the caller's choice.",
    section=_SECTION_3,
    question="On which device should `forward` return its result, and why should a layer not choose a device of "
             "its own?")


class Scaler(nn.Module):
    """Multiplies its input by a constant vector of ``features`` twos; the constant follows ``.to``."""

    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return x * self.scale


def _held_tensors(module: nn.Module) -> list[tuple[str, str, torch.Tensor]]:
    """(kind, name, tensor) for every tensor a module holds: parameters, buffers, plain attributes;
    each as a plain tensor (a tensor class of the learner's own fails, see :func:`expect_tensor`)."""
    held = [("parameter", n, p) for n, p in module.named_parameters()]
    held += [("buffer", n, b) for n, b in module.named_buffers()]
    for prefix, sub in module.named_modules():
        for key, value in vars(sub).items():
            name = f"{prefix}.{key}" if prefix else key
            if is_tensor(value):
                held.append(("plain attribute", name, value))
            elif issubclass(type(value), (list, tuple)) and not key.startswith("_"):
                held += [("plain attribute", f"{name}[{i}]", v) for i, v in enumerate(value) if is_tensor(v)]
    return [(kind, name, expect_tensor(t, f"The {kind} `{name}`")) for kind, name, t in held]


def _build(cls: type, features: int) -> nn.Module:
    try:
        module = call(cls, features, context=f"Scaler({features})")
    except Crashed as e:
        text = str(e.error)
        if isinstance(e.error, AttributeError) and ("before Module.__init__() call" in text
                                                    or "_parameters" in text or "_buffers" in text
                                                    or "_modules" in text):
            raise Wrong(f"Scaler({features}) raised AttributeError: {safe_repr(text, 120)}. Your `__init__` "
                        "must call `super().__init__()` first: that sets up the module's registries of "
                        "parameters, buffers and submodules.", NO_SUPER_INIT) from None
        raise
    if not issubclass(type(module), nn.Module):
        raise Wrong(f"Scaler({features}) gave {safe_repr(module)}, not an nn.Module.", misconceptions.WRONG_TYPE)
    if "_parameters" not in vars(module) or "_buffers" not in vars(module):
        raise Wrong("Your `__init__` never calls `super().__init__()`, so this is not a working module: "
                    "`.to`, `parameters()` and `state_dict()` all depend on it. Call it first.", NO_SUPER_INIT)
    return module


@grader("06.scaler", points=2, reference=Scaler, title="A constant that follows the model", hints=(
    "The constant is part of the module's state but must not be trained. Parameters are trained; plain "
    "attributes are not moved by `.to`. There is a third kind of tensor a module can hold.",
    "`self.register_buffer(name, tensor)` in `__init__` stores a tensor that `.to` moves and the optimizer "
    "never sees. `torch.full((features,), 2.0)` makes the twos.",
    "In `__init__`: `super().__init__()` then `self.register_buffer(\"scale\", torch.full((features,), 2.0))`; "
    "in `forward`: `return x * self.scale`.",
))
def _grade_scaler(cls: type) -> str:
    if not issubclass(cls, nn.Module):
        raise Wrong("`Scaler` should subclass `nn.Module`: `class Scaler(nn.Module):`.", misconceptions.WRONG_TYPE)
    gen = torch.Generator().manual_seed(60)
    for features in (3, 1, 5):
        module = _build(cls, features)
        held = _held_tensors(module)
        params = [(n, t) for k, n, t in held if k == "parameter"]
        if params:
            names = ", ".join(n for n, _ in params)
            if any(t.requires_grad for _, t in params):
                raise Wrong(f"Scaler({features}) has a parameter ({names}): an `nn.Parameter` is trainable. "
                            "`model.parameters()` hands it to the optimizer, which would change your twos. "
                            "Store the constant with `self.register_buffer(...)` instead.", CONSTANT_AS_PARAMETER)
            raise Wrong(f"Scaler({features}) has a parameter ({names}). Even with requires_grad=False it is "
                        "still a parameter: it shows up in `model.parameters()`, goes to the optimizer and "
                        "counts as a model weight. A constant is a buffer: `self.register_buffer(...)`.",
                        FROZEN_PARAMETER)
        plain = [n for k, n, _ in held if k == "plain attribute"]
        if plain:
            raise Wrong(_plain_attribute_feedback(module, plain[0], features), PLAIN_ATTRIBUTE)
        if held and not any(tuple(t.shape) == (features,) for _, _, t in held):
            shapes = ", ".join(f"{n} {tuple(t.shape)}" for _, n, t in held)
            raise Wrong(f"Scaler({features}) should hold a vector of {features} twos, shape ({features},); "
                        f"it holds {shapes}. Make it with `torch.full((features,), 2.0)`.", misconceptions.WRONG_SHAPE)
        off_cpu = [f"{n} ({t.device})" for _, n, t in held if t.device.type != "cpu"]
        if off_cpu:
            raise Wrong(f"A new Scaler({features}) already holds tensors off the CPU: {', '.join(off_cpu)}. "
                        "Create the constant on the default device and let `.to` move it.", CONSTANT_PLACED)
        _check_values(module, features, gen)
        if not held:
            _check_made_in_forward(module, features, gen)
    devices = [d for d in devices_to_test() if d.type != "cpu"]
    for dev in devices:
        _check_on(cls, dev, gen)
    where = ", ".join(str(d) for d in devices)
    if not held:
        return (f"Right: your Scaler makes its twos in `forward`, on the input's device, so it runs on the CPU "
                f"and on {where}. That is correct device handling; the other way, a buffer registered in "
                "`__init__` (`self.register_buffer`), makes the constant once and lets `.to` move it.")
    return ("Right: your Scaler multiplies by twos, holds its constant as a buffer (not trainable), and "
            f"after `.to(...)` lives and runs on {where}.")


#: Operations whose kernels check each argument's device: a 0-dim CPU tensor gets no pass there.
_PER_ARGUMENT_OPS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot",
                               "matmul", "linear", "embedding", "index_select", "convolution",
                               "_convolution", "einsum", "tensordot", "outer", "ger", "addr"})
#: Operations that move data between devices (their arguments are meant to differ) or take CPU indices.
_CROSS_DEVICE_OPS = frozenset({"copy_", "copy", "_copy_from", "_copy_from_and_resize", "_to_copy", "to",
                               "index", "index_put", "index_put_", "_index_put_impl_"})


class _ForwardWatch(TorchDispatchMode):
    """Watches one forward call. Records the operations that mix the input's device with another
    (``meta``'s own kernels let some of them through, e.g. ``mm`` with a CPU operand, while a GPU
    refuses them), and the shapes of the tensors forward uses that it did not compute from the
    input (its constants)."""

    def __init__(self, x: torch.Tensor):
        super().__init__()
        self.device_type = x.device.type
        self.mixes: list[tuple[str, torch.Tensor]] = []
        self.constants: list[tuple[int, ...]] = []   # shapes of the tensors not computed from the input
        self._from_input = {id(x)}
        self._kept = [x]  # keeps the ids above from being reused while the watch runs

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        self.constants += [tuple(t.shape) for t in tensors if id(t) not in self._from_input]
        if name not in _CROSS_DEVICE_OPS and any(t.device.type == self.device_type for t in tensors):
            off = [t for t in tensors if t.device.type != self.device_type and not (
                t.dim() == 0 and t.device.type == "cpu" and name not in _PER_ARGUMENT_OPS)]
            if off:
                self.mixes.append((name, off[0]))
        out = func(*args, **kwargs)
        made_new = name.endswith("_like") or name.startswith("new_")   # `torch.full_like(x, 2.0)`: a constant
        if not made_new and any(id(t) in self._from_input for t in tensors):
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    self._from_input.add(id(t))
                    self._kept.append(t)
        return out


def _check_made_in_forward(module: nn.Module, features: int, gen: torch.Generator) -> None:
    """A Scaler that holds no tensor must make its vector of twos in forward (``x * 2`` makes none)."""
    x = torch.randn(2, features, generator=gen)
    with _ForwardWatch(x) as watch:
        call(module, x, context=f"{a_tensor(x)}")
    if not watch.constants:
        raise Wrong(f"Scaler({features}) holds no tensor, and its forward multiplies by plain numbers only. "
                    "The exercise asks for a constant vector of `features` twos that belongs to the module "
                    "(so it follows `.to`): create it in `__init__` with `torch.full((features,), 2.0)` "
                    "and register it with `self.register_buffer(...)`.", PLAIN_NUMBER)
    if not any(len(shape) and shape[-1] == features for shape in watch.constants):
        shapes = ", ".join(str(shape) for shape in dict.fromkeys(watch.constants))
        raise Wrong(f"Scaler({features}) holds no tensor, and the constant its forward makes has shape {shapes}. "
                    f"It should be a vector of {features} twos, shape ({features},): "
                    "`torch.full((features,), 2.0)`, best made once in `__init__` and registered with "
                    "`self.register_buffer(...)`.", misconceptions.WRONG_SHAPE)


def _plain_attribute_feedback(module: nn.Module, name: str, features: int) -> str:
    try:
        call(module.to, "meta", context=f"Scaler({features}).to('meta')")
        where = next((t.device for k, n, t in _held_tensors(module) if n == name), None)
    except (Crashed, Wrong):
        where = None
    after = (f" After `Scaler({features}).to(\"meta\")` it is still on {where}:" if where is not None
             and where.type != "meta" else "")
    return (f"`{name}` is a plain tensor attribute.{after} `Module.to` moves only parameters, buffers and "
            "submodules, so on a GPU this constant would stay behind on the CPU and forward would fail. "
            "Register it with `self.register_buffer(...)`.")


def _check_values(module: nn.Module, features: int, gen: torch.Generator) -> None:
    for shape, dtype in (((features,), torch.float32), ((4, features), torch.float32),
                         ((2, 3, features), torch.float64)):
        x = torch.randn(shape, generator=gen, dtype=dtype)
        original = x.clone()
        out = expect_tensor(call(module, x, context=f"{a_tensor(x)}"),
                            f"Scaler({features})(x) for x {a_tensor(x)}")
        if not torch.equal(x, original):
            raise Wrong("Your forward changed its input in place (`x *= ...` or `x.mul_(...)`?). "
                        "Return a new tensor: `x * self.scale`.", misconceptions.WRONG_VALUE)
        want = x * 2
        if out.shape != want.shape:
            raise Wrong(f"For x {a_tensor(x)}, Scaler({features})(x) has shape {tuple(out.shape)}; "
                        f"it should keep x's shape {tuple(x.shape)}.", misconceptions.WRONG_SHAPE)
        if out.dtype != want.dtype:
            raise Wrong(f"For {a_tensor(x)} your output is {str(out.dtype).replace('torch.', '')}. Keep the "
                        "input's dtype: make the constant float32 (the default), as `torch.full((n,), 2.0)` does.",
                        misconceptions.WRONG_DTYPE)
        if out.device.type != "cpu":
            raise Wrong(f"For a CPU input your output is on {out.device}: compute where the input is.", OUTPUT_MOVED)
        if not torch.allclose(out, want):
            raise Wrong(_value_diagnosis(module, x, out, features), misconceptions.WRONG_VALUE)


def _value_diagnosis(module: nn.Module, x: torch.Tensor, out: torch.Tensor, features: int) -> str:
    for _, name, t in _held_tensors(module):
        if t.numel() == features and t.device.type == "cpu" and not bool((t == 2).all()):
            return (f"Your constant `{name}` holds {safe_repr(t.flatten().tolist())}, not twos: the module "
                    "should multiply by a vector of `features` twos (`torch.full((features,), 2.0)`).")
    if torch.allclose(out, x):
        return "Your Scaler returns its input unchanged: multiply it by the constant."
    return (f"For x = {safe_repr(x.flatten()[:4].tolist())}..., Scaler({features})(x) gave "
            f"{safe_repr(out.flatten()[:4].tolist())}...; expected every value doubled.")


def _check_on(cls: type, dev: torch.device, gen: torch.Generator) -> None:
    features = 4
    module = _build(cls, features)
    moved = call(module.to, dev, context=f"Scaler({features}).to({str(dev)!r})")
    if moved is not module:
        raise Wrong("`Scaler(n).to(device)` should return the module itself (nn.Module's own `.to` does); "
                    "don't override `to`.", OVERRODE_TO)
    stuck = [f"{name} ({kind}, on {t.device})" for kind, name, t in _held_tensors(module) if t.device.type != dev.type]
    if stuck:
        raise Wrong(f"After `Scaler({features}).to(\"{dev}\")` these are not on {dev}: {', '.join(stuck)}. "
                    "Everything a module holds should follow `.to`: register tensors as buffers.", PLAIN_ATTRIBUTE)
    x = torch.randn(2, features, generator=gen).to(dev)
    try:
        with _ForwardWatch(x) as watch:
            out = call(module, x, context=f"{a_tensor(x)}")
    except Crashed as e:
        if isinstance(e.error, RuntimeError) and "device" in str(e.error):
            raise Wrong(f"After `.to(\"{dev}\")`, calling your Scaler on {a_tensor(x)} raised: "
                        f"{safe_repr(str(e.error), 160)}. Something in `forward` is not on {dev}: a tensor "
                        "created there with no device (e.g. `torch.full(...)` inside forward) lands on the "
                        "CPU. Use the registered buffer, or `device=x.device`.", MADE_IN_FORWARD) from None
        raise
    if watch.mixes:  # meta let it through; a GPU would not
        op, other = watch.mixes[0]
        raise Wrong(f"After `.to(\"{dev}\")`, your Scaler's forward, given {a_tensor(x)}, sent `{op}` a "
                    f"{describe(other)}. `{dev}` let that pass, but a GPU refuses it (\"Expected all tensors "
                    f"to be on the same device\"). Something in `forward` is not on {dev}: a tensor created there "
                    "with no device (e.g. `torch.full(...)` or `torch.diag(...)` inside forward) lands on the CPU. "
                    "Register the constant as a buffer in `__init__`, or create it with `device=x.device`.",
                    MADE_IN_FORWARD)
    out = expect_tensor(out, f"Your Scaler's output for {a_tensor(x)}")
    if out.device != x.device:
        raise Wrong(f"For an input on {x.device} your output is on {out.device}: return it where the input is.",
                    OUTPUT_MOVED)
    if out.shape != x.shape:
        raise Wrong(f"For {a_tensor(x)} your output has shape {tuple(out.shape)}.", misconceptions.WRONG_SHAPE)
    if dev.type != "meta" and not torch.allclose(out.cpu(), x.cpu() * 2):
        raise Wrong(f"On {dev} your Scaler does not double its input.", misconceptions.WRONG_VALUE)

