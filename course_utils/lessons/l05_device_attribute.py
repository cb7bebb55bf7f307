"""Lesson 05 - `.device`: reading it on tensors, parameters and buffers, comparing devices, a model's device."""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable

import torch
from torch import nn

from .. import misconceptions
from ..exercises import grader
from ..grading import (Crashed, Wrong, call, devices_to_test, expect_int, is_tensor, safe_repr,
                       sample_tensors, text_of)
from ..quizzes import add_quiz
from .l01_tensors import ASSUMED_4_BYTES, COUNTED_ELEMENTS
from .l02_cpu_vs_gpu import DEVICE_STRING

# --- quizzes ---------------------------------------------------------------------------------

add_quiz(
    "05.cuda_vs_cuda0",
    "What does `torch.device('cuda') == torch.device('cuda:0')` give?",
    ["True: both mean the first GPU", "False", "It raises an error on a machine without a GPU",
     "True on a machine with one GPU, False with several"],
    1,
    "`torch.device('cuda')` has no index (`.index` is None): it means \"the current CUDA device\", "
    "whichever that is when something is allocated. `torch.device('cuda:0')` has index 0. Two devices are "
    "equal only when type and index both match, so the answer is False on every machine. Building a "
    "`torch.device` never touches the hardware, so it works without a GPU.",
)
add_quiz(
    "05.gpu_tensor_device",
    "On a CUDA GPU you make `g = torch.ones(2, device=\"cuda\")`, with no index. Which of these checks is True?",
    ["Only `g.device.type == \"cuda\"`", "Only `g.device == torch.device(\"cuda\")`",
     "Both: `g` was made with `device=\"cuda\"`", "Neither: only `str(g.device) == \"cuda\"` is True"],
    0,
    "A tensor lives on one definite GPU, so its `.device` has the index filled in: `cuda:0` (the current device), "
    "whatever you asked for. `torch.device(\"cuda\")` has no index, and two devices are equal only when type and "
    "index both match, so `g.device == torch.device(\"cuda\")` is False on every GPU. `.type` is `\"cuda\"` "
    "either way, and `str(g.device)` is `\"cuda:0\"`, not `\"cuda\"`.",
)
add_quiz(
    "05.module_device",
    "`model = nn.Linear(4, 2)`. What does `model.device` give?",
    ["`device(type='cpu')`", "`None`, because a model can span several devices",
     "The device of its first parameter", "An AttributeError"],
    3,
    "`nn.Module` has no `.device` attribute: a module is a container, and its parameters and buffers could "
    "each live somewhere else. Tensors have `.device`; to find a model's device you look at its tensors.",
)
add_quiz(
    "05.first_parameter",
    "`nn.ReLU()` has no parameters. What does `next(nn.ReLU().parameters()).device` do?",
    ["Gives `device(type='cpu')`", "Gives `None`", "Raises StopIteration", "Raises AttributeError"],
    2,
    "`module.parameters()` is a generator; `next` on an empty generator raises StopIteration. The popular "
    "one-liner `next(model.parameters()).device` fails on parameter-less modules, and on other modules it "
    "reports one tensor, not the whole model.",
)


# --- exercise 05.is_on -----------------------------------------------------------------------

def is_on(x, wanted):
    """True if ``x`` (a tensor or a torch.device) is on the device that ``wanted`` names."""
    actual = x.device if isinstance(x, torch.Tensor) else torch.device(x)
    wanted = torch.device(wanted)                     # accepts a string or a torch.device
    if actual.type != wanted.type:
        return False
    return wanted.index is None or actual.index == wanted.index


def _is_on_cases() -> list[tuple[Any, Any, str]]:
    """(x, wanted, how to describe x) — tensors first, then the devices a GPU tensor would report."""
    cpu, meta = torch.ones(3), torch.ones(2, 2, device="meta")
    cases: list[tuple[Any, Any, str]] = [
        (cpu, "cpu", "a tensor on cpu"),
        (meta, "meta", "a tensor on meta"),
        (cpu, torch.device("cpu"), "a tensor on cpu"),
        (meta, "cpu", "a tensor on meta"),
        (cpu, "meta", "a tensor on cpu"),
        (cpu, "cuda", "a tensor on cpu"),
    ]
    # every sampled tensor is on the type it reports, and not on any other type
    for t in sample_tensors(seed=5, count=6):
        cases.append((t, t.device.type, f"a {_kind(t)} on {t.device}"))
        other = "meta" if t.device.type != "meta" else "cpu"
        cases.append((t, torch.device(other), f"a {_kind(t)} on {t.device}"))
    gpu = [
        (torch.device("cuda", 0), "cuda"),
        (torch.device("cuda", 0), torch.device("cuda")),
        (torch.device("cuda", 0), "cuda:0"),
        (torch.device("cuda", 1), "cuda:1"),
        (torch.device("cuda", 1), "cuda:0"),
        (torch.device("cuda", 0), torch.device("cuda", 1)),
        (torch.device("cuda", 10), "cuda:1"),
        (torch.device("cuda", 1), "cuda:10"),
        (torch.device("cuda", 0), "cpu"),
        (torch.device("cpu"), "cuda"),
        (torch.device("meta"), "meta"),
    ]
    cases += [(d, w, f"the device {d}") for d, w in gpu]
    acc = [d for d in devices_to_test() if d.type not in ("cpu", "meta")]
    for d in acc:                                   # a real accelerator tensor reports its index
        t = torch.ones(2, device=d.type)
        cases += [(t, d.type, f"a tensor on {t.device}"), (t, str(t.device), f"a tensor on {t.device}"),
                  (t, "cpu", f"a tensor on {t.device}")]
    return cases


def _kind(t: torch.Tensor) -> str:
    return f"{str(t.dtype).replace('torch.', '')} tensor"


DEVICE_OF_A_DEVICE = misconceptions.define(
    "05.device-of-a-device", "Read `.device` of a `torch.device`",
    "Believes everything passed in is a tensor; a `torch.device` (what `.device` returns) has `.type` and `.index` "
    "but no `.device`, so `x.device` raises AttributeError for it.",
    section=("05_device_attribute", "1. A tensor's `.device`"),
    question="What is `torch.ones(2).device.device`, and what parts does a `torch.device` have?")
DEVICE_VS_STRING = misconceptions.define(
    "05.compared-device-with-string", "Compared a `torch.device` with a string",
    "Believes a device equals the string it prints as (`x.device == 'cpu'`, or `.type`/`str(...)` against a "
    "`torch.device`); a `torch.device` never equals a string, silently. Compare `.type` with a string, or two "
    "`torch.device`s.",
    section=("05_device_attribute", "2. Comparing devices"),
    question="What do `torch.ones(1).device == 'cpu'` and `torch.ones(1).device.type == 'cpu'` give, and why?")
INDEX_LESS_EQUALS_INDEXED = misconceptions.define(
    "05.index-less-equals-indexed", "Treats index-less `cuda` as `cuda:0`",
    "Believes `torch.device('cuda')` equals the device a GPU tensor reports (`cuda:0`); it has index None and "
    "means the current device, and two devices are equal only when type and index both match. Compare `.type` "
    "when no index is asked for, and keep the device a tensor reports rather than rebuilding it from its type.",
    section=("05_device_attribute", "2. Comparing devices"),
    question="What do `torch.device('cuda') == torch.device('cuda:0')` and `g.device == torch.device('cuda')` give "
             "for a tensor `g` made with `device='cuda'`?")
DEVICE_TEXT = misconceptions.define(
    "05.compared-device-text", "Compared device names as text (`in`, `startswith`)",
    "Believes matching the printed name finds the device (`'cuda:1' in str(d)`); text matching also accepts "
    "`cuda:10`. Compare `.type` and `.index`.",
    section=("05_device_attribute", "Pitfalls"),
    question="Is `'cuda:1' in str(torch.device('cuda', 10))` True or False? What comparison avoids the trap?")
IGNORED_INDEX = misconceptions.define(
    "05.ignored-device-index", "Compared only `.type` when an index is asked for",
    "Believes comparing `.type` answers every request; when `wanted` names an index (`cuda:1`), that index must "
    "match too: `cuda:0` is not GPU 1.",
    section=("05_device_attribute", "2. Comparing devices"),
    question="How do you check 'is it on any CUDA GPU' and how 'is it on GPU 1'?")


@grader("05.is_on", reference=is_on, title="Is it on that device?", hints=(
    "Turn both sides into `torch.device` objects first: `x.device` for a tensor, `torch.device(wanted)` "
    "for the request. A `torch.device` never equals a string.",
    "Compare the parts, not the whole: `.type` must match; the `.index` matters only when `wanted` names one "
    "(`torch.device('cuda').index` is None).",
    "`actual = x.device if isinstance(x, torch.Tensor) else x`, `wanted = torch.device(wanted)`, then "
    "`return actual.type == wanted.type and (wanted.index is None or actual.index == wanted.index)`.",
))
def _grade_is_on(fn: Callable) -> str:
    cases = _is_on_cases()
    for x, wanted, what in cases:
        context = f"{what} and wanted={wanted!r}"
        try:
            got = call(fn, x, wanted, context=context)
        except Crashed as e:
            if isinstance(e.error, AttributeError) and isinstance(x, torch.device) and "device" in str(e.error):
                raise Wrong(f"Your code raised AttributeError for {context}: {safe_repr(str(e.error), 120)}. "
                            "`x` may be a `torch.device` itself (what `.device` gives you), and a device has "
                            "no `.device`: use `x.device` only when `x` is a tensor.", DEVICE_OF_A_DEVICE) from None
            raise
        want = is_on(x, wanted)
        if is_tensor(got):
            raise Wrong(f"For {context} you returned a tensor ({safe_repr(got)}). Return a plain Python bool.",
                        misconceptions.RETURNED_TENSOR)
        if type(got) is not bool:  # its real type: `__class__`, which isinstance asks, can lie
            raise Wrong(f"For {context} you returned {safe_repr(got)} ({type(got).__name__}); "
                        "return True or False.", misconceptions.WRONG_TYPE)
        if got != want:
            why, code = _is_on_diagnosis(x, wanted)
            raise Wrong(f"For {context} the answer is {want}, you returned {got}. " + why, code)
    return (f"Right on {len(cases)} cases: strings and torch.device requests, tensors on the cpu and other "
            "devices, and the indexed devices a GPU tensor reports (cuda:0, cuda:1, cuda:10).")


def _is_on_diagnosis(x: Any, wanted: Any) -> tuple[str, str]:
    """What went wrong, in words, and its misconception code."""
    actual = x.device if isinstance(x, torch.Tensor) else torch.device(x)
    request = torch.device(wanted)
    if isinstance(wanted, str) and actual == request:
        return (f"A `torch.device` never equals a string: `torch.device({str(actual)!r}) == {wanted!r}` is False. "
                "Turn the request into a device first: `torch.device(wanted)`.", DEVICE_VS_STRING)
    if actual == request and isinstance(wanted, torch.device):
        return (f"`{actual}` is exactly the device asked for. Did you compare a string (such as `.type` or "
                "`str(...)`) with a `torch.device`? They are never equal: make both sides devices with "
                "`torch.device(wanted)`, then compare their parts.", DEVICE_VS_STRING)
    if actual.type == request.type and request.index is None:
        return (f"`torch.device({request.type!r})` has index None, so it is not == `{actual}`. A request without "
                "an index asks for any device of that type: compare `.type`, and the index only when one is named.",
                INDEX_LESS_EQUALS_INDEXED)
    if actual.type == request.type and actual.index != request.index:
        if str(actual).startswith(str(request)) or str(request).startswith(str(actual)):
            return (f"'{request}' and '{actual}' start alike but are different devices: comparing text with "
                    "`in` or `startswith` gets this wrong. Compare `.type` and `.index`.", DEVICE_TEXT)
        return (f"`{actual}` and `{request}` have the same type but different indices: when `wanted` names an "
                "index, it must match too. Comparing only `.type` is not enough.", IGNORED_INDEX)
    if actual.type != request.type:
        return (f"`{actual}` is a {actual.type} device, `{request}` a {request.type} device: the types differ.",
                misconceptions.WRONG_VALUE)
    return "Compare the type, and the index when `wanted` names one.", misconceptions.WRONG_VALUE


# --- exercise 05.model_device ----------------------------------------------------------------

def model_device(module):
    """The one device holding all of ``module``'s parameters and buffers (None if it has none)."""
    devices = {p.device for p in module.parameters()} | {b.device for b in module.buffers()}
    if not devices:
        return None
    if len(devices) > 1:
        found = ", ".join(sorted(str(d) for d in devices))
        raise ValueError(f"the module's parameters and buffers are spread over several devices: {found}")
    return devices.pop()


class _Scaled(nn.Module):
    """A linear layer followed by a fixed scale kept in a buffer."""

    def __init__(self, scale_device: str = "cpu", persistent: bool = True):
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.register_buffer("scale", torch.full((2,), 0.5, device=scale_device), persistent=persistent)

    def forward(self, x):
        return self.linear(x) * self.scale


def _model_cases() -> list[tuple[str, Callable[[], nn.Module]]]:
    """(description, factory): single-device modules, empty ones and spread ones, in the order checked."""
    cases: list[tuple[str, Callable[[], nn.Module]]] = [
        ("`nn.Linear(3, 2)` on cpu", lambda: nn.Linear(3, 2)),
        ("`nn.Linear(3, 2).to('meta')`", lambda: nn.Linear(3, 2).to("meta")),
        ("`nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))` moved to meta",
         lambda: nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to("meta")),
        ("`nn.ReLU()` (no parameters, no buffers)", lambda: nn.ReLU()),
        ("`nn.BatchNorm1d(4, affine=False)` on cpu (buffers only)", lambda: nn.BatchNorm1d(4, affine=False)),
        ("`nn.BatchNorm1d(4, affine=False).to('meta')` (buffers only)",
         lambda: nn.BatchNorm1d(4, affine=False).to("meta")),
        ("`nn.BatchNorm1d(4, track_running_stats=False)` (parameters only; its buffer slots hold None)",
         lambda: nn.BatchNorm1d(4, track_running_stats=False)),
        ("a module with a `Linear` on cpu and a buffer `scale` on meta", lambda: _Scaled("meta")),
        ("a module with a `Linear` on cpu and a non-persistent buffer `scale` on meta",
         lambda: _Scaled("meta", persistent=False)),
        ("`nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).to('meta'))`",
         lambda: nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).to("meta"))),
        ("`nn.Sequential(nn.Linear(4, 4).to('meta'), nn.BatchNorm1d(4, affine=False))`",
         lambda: nn.Sequential(nn.Linear(4, 4).to("meta"), nn.BatchNorm1d(4, affine=False))),
        ("`nn.Sequential(nn.ReLU(), nn.Flatten())` (no parameters, no buffers)",
         lambda: nn.Sequential(nn.ReLU(), nn.Flatten())),
        ("a module with a `Linear` and a buffer, all on cpu", lambda: _Scaled("cpu")),
    ]
    for d in devices_to_test():
        if d.type in ("cpu", "meta"):
            continue
        cases += [
            (f"`nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))` moved to {d}",
             lambda d=d: nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).to(d)),
            (f"`nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).to({str(d)!r}))`",
             lambda d=d: nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).to(d))),
        ]
    return cases


def _names(devices: set) -> str:
    return " and ".join(sorted(str(d) for d in devices)) or "nowhere"


def _named(device: torch.device, message: str) -> bool:
    """Whether ``message`` names ``device`` as it prints (`cuda:0`) or as its repr shows it
    (`device(type='cuda', index=0)`, what formatting a set or list of devices gives)."""
    return str(device) in message or repr(device) in message


MODEL_SECTION = ("05_device_attribute", "4. A model has no `.device`")
FIRST_PARAMETER = misconceptions.define(
    "05.first-parameter-only", "Asked only the first parameter",
    "Believes `next(model.parameters()).device` is the model's device; it raises StopIteration on a module without "
    "parameters and looks at one tensor only, while the others (and the buffers) can be elsewhere.",
    section=MODEL_SECTION,
    question="What does `next(nn.ReLU().parameters()).device` do, and what does it say about a model split over two "
             "devices?")
IGNORED_BUFFERS = misconceptions.define(
    "05.ignored-buffers", "Ignored the buffers",
    "Believes a model's parameters are all its tensors; buffers (`register_buffer`, BatchNorm's running "
    "statistics) live on a device too and can be elsewhere. `module.buffers()` lists them.",
    section=("05_device_attribute", "3. Parameters and buffers have a device too"),
    question="Where does `nn.BatchNorm1d(4, affine=False)` live, and what does `parameters()` say about it?")
IGNORED_PARAMETERS = misconceptions.define(
    "05.ignored-parameters", "Ignored the parameters",
    "Looked at the buffers alone; parameters (weights, biases) are most of a model's tensors, and each has its "
    "own device: `module.parameters()` lists them.",
    section=("05_device_attribute", "3. Parameters and buffers have a device too"),
    question="What are the two kinds of tensors a module holds, and which call lists each?")
STATE_DICT_TENSORS = misconceptions.define(
    "05.state-dict-has-all-tensors", "Looked for devices in `state_dict()`",
    "Believes `module.state_dict()` holds every tensor of a module; it leaves out buffers registered with "
    "`persistent=False`, which can be on another device. `module.buffers()` has them all.",
    section=("05_device_attribute", "Pitfalls"),
    question="A module registers `mask` with `persistent=False`. Is `mask` in `state_dict()`? In `buffers()`?")
OWN_TENSORS_ONLY = misconceptions.define(
    "05.own-tensors-only", "Looked at the module's own tensors, not its submodules'",
    "Believes a container such as `nn.Sequential` holds the tensors itself; they belong to its submodules. "
    "`module.parameters()` and `module.buffers()` walk the submodules; `recurse=False` and `_parameters` do not.",
    section=MODEL_SECTION,
    question="Does `model.parameters()` list the parameters of the layers inside an `nn.Sequential`? Does the "
             "`Sequential` hold any of its own?")
DEVICE_AS_STRING = DEVICE_STRING   # lesson 02's: a device name (a string) returned for a `torch.device`
EMPTY_MODULE_HAS_DEVICE = misconceptions.define(
    "05.empty-module-has-device", "A device for a module with no tensors",
    "Believes a module without parameters or buffers lives on the CPU (or the default device); it holds no tensors, "
    "so it lives on no device, and the exercise asks for None.",
    section=MODEL_SECTION,
    question="Where does `nn.ReLU()` live, and what should `model_device(nn.ReLU())` return?")
EMPTY_MODULE_RAISES = misconceptions.define(
    "05.empty-module-raises", "Raised for a module with no tensors",
    "Treats 'not exactly one device' as an error (`len(devices) != 1`); a module with no tensors is not split over "
    "devices, it is on none, and the exercise asks for None. Only several devices are an error.",
    section=MODEL_SECTION,
    question="Which modules should make `model_device` raise, and what should it return for `nn.ReLU()`?")
SPREAD_HAS_ONE_DEVICE = misconceptions.define(
    "05.split-model-has-one-device", "Returned one device for a split model",
    "Believes a model always lives on one device; its parameters and buffers can be spread over several (a layer "
    "moved on its own), and then there is no single answer: raise ValueError naming the devices.",
    section=MODEL_SECTION,
    question="After only `half_moved[2]` moves to the GPU, where does `half_moved` live? What should "
             "`model_device(half_moved)` do?")
SPREAD_NOT_VALUE_ERROR = misconceptions.define(
    "05.split-model-not-value-error", "A split model reported without `ValueError`",
    "Raised another error (`assert`, `RuntimeError`) for a model spread over several devices; the exercise asks for "
    "`ValueError`, so that callers can catch this case by its type.",
    section=(MODEL_SECTION[0], f"{MODEL_SECTION[1]} › Exercise 05.model_device"),
    question="Why should `model_device` raise `ValueError` rather than use `assert` for a split model?")
SPREAD_MESSAGE_VAGUE = misconceptions.define(
    "05.split-model-message-vague", "Error message that does not name the devices",
    "The `ValueError` for a split model does not name the devices found (`cpu`, `cuda:0`...), so whoever reads it "
    "does not know where to look; `str(d)` gives each device as it prints.",
    section=(MODEL_SECTION[0], f"{MODEL_SECTION[1]} › Exercise 05.model_device"),
    question="What should the error for a split model say, so that its reader knows which tensors to move?")


@grader("05.model_device", points=2, reference=model_device, title="Where does this model live?", hints=(
    "A module has no `.device`, but every parameter and every buffer has one. Collect them all, from "
    "`module.parameters()` and `module.buffers()` (both include the submodules').",
    "Put the devices in a set. An empty set means the module holds no tensors: return None. More than one "
    "device: raise ValueError and name the devices in the message as they print (`str(d)`: `cuda:0`, `cpu`). "
    "Exactly one: return it.",
    "`devices = {p.device for p in module.parameters()} | {b.device for b in module.buffers()}`; then "
    "`if not devices: return None`, "
    "`if len(devices) > 1: raise ValueError('spread over ' + ', '.join(sorted(str(d) for d in devices)))`, "
    "`return devices.pop()`.",
))
def _grade_model_device(fn: Callable) -> str:
    cases = _model_cases()
    spread_seen = 0
    for what, make in cases:
        module = make()
        params = {p.device for p in module.parameters()}
        buffers = {b.device for b in module.buffers()}
        found = params | buffers
        if len(found) > 1:
            _check_spread(fn, module, what, params, buffers)
            spread_seen += 1
            continue
        want = next(iter(found)) if found else None
        try:
            got = call(fn, module, context=what)
        except Crashed as e:
            if isinstance(e.error, StopIteration):
                raise Wrong(f"For {what} your code raised StopIteration. That is what "
                            "`next(module.parameters())` does when a module has no parameters. Look at all "
                            "parameters and buffers, and return None when there are none.", FIRST_PARAMETER) from None
            if want is None and isinstance(e.error, ValueError):
                raise Wrong(f"For {what} you raised ValueError ({safe_repr(str(e.error), 120)}). A module "
                            "with no parameters and no buffers is not an error: return None.",
                            EMPTY_MODULE_RAISES) from None
            raise
        _compare_single(got, want, what, module, params, buffers)
    return (f"Right on {len(cases)} modules: parameters and buffers (also buffers only), submodules, "
            f"empty modules (None) and {spread_seen} spread ones (ValueError naming the devices).")


def _compare_single(got: Any, want: torch.device | None, what: str, module: nn.Module, params: set,
                    buffers: set) -> None:
    if issubclass(type(got), str):
        raise Wrong(f"For {what} you returned the string {safe_repr(got)}. Return the `torch.device` itself "
                    "(what `.device` gives you); a string is never == a device.", DEVICE_AS_STRING)
    if got is not None and type(got) is not torch.device:
        raise Wrong(f"For {what} you returned {safe_repr(got)} ({type(got).__name__}). Return a single "
                    "`torch.device`, or None for a module with no parameters and no buffers.",
                    misconceptions.WRONG_TYPE)
    if want is None:
        if got is not None:
            raise Wrong(f"{what[0].upper() + what[1:]} holds no tensors at all, so it lives on no device: "
                        f"return None. You returned `{got}`.", EMPTY_MODULE_HAS_DEVICE)
        return
    if got is None:
        if not params:
            raise Wrong(f"{what[0].upper() + what[1:]} has no parameters, but its buffers are on {want}, "
                        "and you returned None. Buffers live on a device too: include `module.buffers()`.",
                        IGNORED_BUFFERS)
        if not any(True for _ in module.parameters(recurse=False)):
            raise Wrong(f"{what[0].upper() + what[1:]} has parameters on {want}, but they all belong to its "
                        "submodules, and you returned None. `module.parameters()` walks the submodules too; "
                        "`recurse=False` and `module._parameters` give only the module's own.", OWN_TENSORS_ONLY)
        if not buffers:
            raise Wrong(f"{what[0].upper() + what[1:]} has parameters on {want}, and you returned None. "
                        "Look at the parameters too: `module.parameters()`.", IGNORED_PARAMETERS)
        raise Wrong(f"For {what} the tensors are on {want}, and you returned None.", misconceptions.WRONG_VALUE)
    if got != want:
        if got.type == want.type:
            raise Wrong(f"For {what} the tensors are on `{want}`, you returned `{got}`. Return the device the "
                        "tensors report (e.g. `p.device`), not one rebuilt from its type: "
                        f"`torch.device({want.type!r})` has index None and is not == `{want}`.",
                        INDEX_LESS_EQUALS_INDEXED)
        raise Wrong(f"For {what} the tensors are on `{want}`, but you returned `{got}`.", misconceptions.WRONG_VALUE)


def _check_spread(fn: Callable, module: nn.Module, what: str, params: set, buffers: set) -> None:
    found = params | buffers
    names = _names(found)
    try:
        got = call(fn, module, context=what)
    except Crashed as e:
        err = e.error
        if isinstance(err, StopIteration):
            raise Wrong(f"For {what} your code raised StopIteration (from `next(...)`?). Look at all parameters "
                        "and buffers.", FIRST_PARAMETER) from None
        if not issubclass(type(err), ValueError):
            raise Wrong(f"For {what} (tensors on {names}) you raised {type(err).__name__}: "
                        f"{safe_repr(text_of(err), 120)}. Raise ValueError, so that callers can catch this case "
                        "by its type.", SPREAD_NOT_VALUE_ERROR) from None
        message = text_of(err)
        if not all(_named(d, message) for d in found):
            raise Wrong(f"For {what} you raised ValueError, good, but its message {safe_repr(message, 120)} "
                        f"does not name the devices: it should mention {names}, so whoever reads the error "
                        "knows where the tensors are.", SPREAD_MESSAGE_VAGUE) from None
        return
    device = type(got) is torch.device
    shown = f"`{got}`" if device else safe_repr(got)
    lead = (f"{what[0].upper() + what[1:]} is spread over {names}, but you returned {shown} instead of "
            "raising ValueError. ")
    raises_for_params = all(_raises_value_error(fn, make()) for make in _PARAMS_SPREAD)
    raises_for_buffers = _raises_value_error(fn, _BUFFERS_SPREAD())
    if device and got in params and buffers - params and raises_for_params:
        hidden = [n for n, b in module.named_buffers() if b.device not in params]
        note = ""
        if hidden and all(n not in module.state_dict() for n in hidden):
            note = (f" `{hidden[0]}` is a non-persistent buffer: `module.state_dict()` leaves it out, "
                    "`module.buffers()` does not.")
        raise Wrong(lead + f"Its parameters are on {got}, but a buffer is on {_names(buffers - params)}: "
                    "you ignored (some of) the buffers." + note, STATE_DICT_TENSORS if note else IGNORED_BUFFERS)
    if device and got in buffers and params - buffers and raises_for_buffers:
        raise Wrong(lead + f"Its buffers are on {got}, but parameters are on {_names(params - buffers)}: "
                    "you ignored the parameters.", IGNORED_PARAMETERS)
    if not raises_for_params and all(_returns_first_parameter_device(fn, make()) for make in _PARAMS_SPREAD):
        raise Wrong(lead + "You return the device of the first parameter (`next(module.parameters())`?); "
                    "other tensors can be elsewhere. Check every parameter and buffer.", FIRST_PARAMETER)
    raise Wrong(lead + "A model spread over several devices has no single device: raise ValueError and name them.",
                SPREAD_HAS_ONE_DEVICE)


#: Probes used to tell apart why a spread module was not reported.
_PARAMS_SPREAD = (lambda: nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).to("meta")),
                  lambda: nn.Sequential(nn.Linear(3, 4).to("meta"), nn.Linear(4, 2)))


def _BUFFERS_SPREAD() -> nn.Module:
    return nn.Sequential(nn.BatchNorm1d(4, affine=False), nn.BatchNorm1d(4, affine=False).to("meta"))


def _raises_value_error(fn: Callable, module: nn.Module) -> bool:
    try:
        call(fn, module)
    except Crashed as e:
        return issubclass(type(e.error), ValueError)
    return False


def _returns_first_parameter_device(fn: Callable, module: nn.Module) -> bool:
    try:
        got = call(fn, module)
    except Crashed:
        return False
    return type(got) is torch.device and got == next(module.parameters()).device


# --- section 5 and Going further: device memory ---------------------------------------------

add_quiz(
    "05.empty_cache",
    "Your training loop runs out of GPU memory. You add `torch.cuda.empty_cache()` after every step. What does "
    "that do for your program?",
    ["It frees the tensors you no longer need, so the OOM goes away",
     "It gives cached, unused blocks back to the driver: `nvidia-smi` shows more free memory, but the tensors "
     "you still reference stay, and your next allocations must ask the driver again (slower)",
     "It frees every tensor on the GPU, including the model's weights",
     "Nothing at all: it only works in PyTorch versions before 2.0"],
    1,
    "PyTorch's caching allocator keeps the blocks of freed tensors to reuse them quickly. `empty_cache()` returns "
    "the blocks no tensor uses to the driver, so other processes (and `nvidia-smi`) see them free. It cannot free a "
    "tensor you still reference (a name, a list, a saved autograd graph), so your program has no more room than "
    "before, and asking the driver again for memory is slower than reusing the cache. Drop references (`del`, "
    "`loss.detach()`), then the memory is reusable by PyTorch at once.",
)
add_quiz(
    "05.adam_memory",
    "You train a model with 1 billion float32 parameters with Adam. How much GPU memory do the parameters, their "
    "gradients and Adam's state take, before any activations?",
    ["4 GB", "8 GB", "12 GB", "16 GB"],
    3,
    "Per parameter: 4 bytes for the weight, 4 for its gradient, and 8 for Adam's two moments (`exp_avg` and "
    "`exp_avg_sq`, each the parameter's size and dtype): 16 bytes, so 16 GB for a billion parameters. The weights "
    "alone (4 GB) are only a quarter of it, and the activations of a batch come on top.",
)

#: Optimizer state per parameter, in copies of the parameter: SGD keeps none, momentum one buffer
#: (`momentum_buffer`), Adam two moments (`exp_avg`, `exp_avg_sq`). Read-only: the check loops over it.
STATE_COPIES = MappingProxyType({"sgd": 0, "momentum": 1, "adam": 2})


# --- exercise 05.training_bytes --------------------------------------------------------------

def training_bytes(model, optimizer):
    """Bytes on the device for ``model``'s parameters, their gradients and the optimizer's state.

    ``optimizer`` is "sgd" (plain SGD), "momentum" (SGD with momentum) or "adam". Activations are not counted.
    """
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
        ("`nn.Linear(1000, 1000, device='meta')`", lambda: nn.Linear(1000, 1000, device="meta")),
        ("`nn.Linear(50_000, 50_000, device='meta')` (2.5 billion parameters, no memory used)",
         lambda: nn.Linear(50_000, 50_000, device="meta")),
    ]


def _param_bytes(module: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in module.parameters())


def _buffer_bytes(module: nn.Module) -> int:
    return sum(b.numel() * b.element_size() for b in module.buffers())


TRAINING_SECTION = ("05_device_attribute", "5. What training keeps on the device")
# Lesson 01's misconceptions about bytes, met again for parameters.
FOUR_BYTES, ELEMENTS_NOT_BYTES = ASSUMED_4_BYTES, COUNTED_ELEMENTS
ADAM_STATE = misconceptions.define(
    "05.adam-state-undercounted", "Counted fewer than Adam's two moments",
    "Believes Adam keeps one copy of state per parameter (or none); it keeps two, `exp_avg` and `exp_avg_sq`, each "
    "the parameter's size and dtype: weights + gradients + 2 moments = 4 copies.",
    section=TRAINING_SECTION,
    question="How many bytes per float32 parameter does training with Adam keep, and what are they?")
MOMENTUM_STATE = misconceptions.define(
    "05.momentum-state-missed", "Left out SGD's `momentum_buffer`",
    "Believes SGD with momentum keeps no state, like plain SGD; it keeps one `momentum_buffer` per parameter, the "
    "parameter's size and dtype: 3 copies in all.",
    section=TRAINING_SECTION,
    question="What does `optimizer.state[p]` hold after one step of SGD with momentum, and how big is it?")
NO_GRADIENTS = misconceptions.define(
    "05.gradients-not-counted", "Left out the gradients",
    "Believes training needs only the weights (plus the optimizer's state); every parameter also gets a gradient "
    "(`p.grad`) of its size and dtype.",
    section=TRAINING_SECTION,
    question="After `loss.backward()`, what does each parameter hold besides its weights, and how big is it?")
SGD_STATE = misconceptions.define(
    "05.plain-sgd-has-state", "Gave plain SGD optimizer state",
    "Believes every optimizer keeps state; plain SGD (no momentum) keeps none: weights and gradients, 2 copies.",
    section=TRAINING_SECTION,
    question="How many copies of the parameters does training with plain SGD keep, and with SGD with momentum?")
COUNTED_BUFFERS = misconceptions.define(
    "05.counted-buffers", "Counted the buffers as trained",
    "Believes buffers (BatchNorm's running statistics) are trained like parameters; they sit on the device but get "
    "no gradient and no optimizer state, and the exercise counts parameters only.",
    section=TRAINING_SECTION,
    question="Does BatchNorm's `running_mean` get a gradient or Adam state? Why not?")


def _training_diagnosis(got: int, module: nn.Module, optimizer: str) -> tuple[str, str]:
    """Name the realistic mistake that gives ``got``, with its code; ``("", WRONG_VALUE)`` when none matches."""
    p, b = _param_bytes(module), _buffer_bytes(module)
    numel = sum(q.numel() for q in module.parameters())
    state = STATE_COPIES[optimizer]
    if numel and got == 4 * numel * (2 + state) and p != 4 * numel:
        return ("You used 4 bytes for every element, but not every dtype is float32: float16 and bfloat16 take 2, "
                "float64 8. Use each parameter's `p.element_size()`.", FOUR_BYTES)
    if numel and got == numel * (2 + state) and p != numel:
        return ("That is a number of elements, not bytes: multiply each parameter's `numel()` by its "
                "`element_size()`.", ELEMENTS_NOT_BYTES)
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
