"""Lesson 05 - `.device`: reading it on tensors, parameters and buffers, comparing devices, a model's device:
05.is_on and 05.model_device; 05.training_bytes is in :mod:`course_utils.lessons.l05_training_bytes`."""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable

import torch
from torch import nn

from .. import misconceptions
from ..exercises import grader
from ..grading import Crashed, Wrong, a_tensor, call, is_tensor, safe_repr, sample_tensors, target_device, text_of
from .l02_cpu_vs_gpu import DEVICE_STRING    # lesson 02's: a device name (a string) returned for a `torch.device`

# --- exercise 05.is_on -----------------------------------------------------------------------

def is_on(x, wanted):
    """True if ``x`` (a tensor or a torch.device) is on the device that ``wanted`` names."""
    actual = x.device if isinstance(x, torch.Tensor) else torch.device(x)
    wanted = torch.device(wanted)                     # accepts a string or a torch.device
    if actual.type != wanted.type:
        return False
    return wanted.index is None or actual.index == wanted.index


def _gpu_type() -> str:
    """The learner's accelerator's device type (CUDA's where none is registered): the devices a GPU tensor reports."""
    target = target_device()
    return target.type if target.type != "meta" else "cuda"


def _is_on_cases() -> list[tuple[Any, Any, str]]:
    """(x, wanted, how to describe x): tensors on the CPU and on the check's device first, then the devices a GPU
    tensor reports (:func:`_gpu_type`)."""
    target, gpu = target_device(), _gpu_type()
    cpu, there = torch.ones(3), torch.ones(2, 2, device=target)
    on_there = f"a tensor on {there.device}"
    cases: list[tuple[Any, Any, str]] = [
        (cpu, "cpu", "a tensor on cpu"), (there, target.type, on_there), (cpu, torch.device("cpu"), "a tensor on cpu"),
        (there, str(there.device), on_there), (there, "cpu", on_there), (cpu, target.type, "a tensor on cpu"),
        (cpu, gpu, "a tensor on cpu"),
    ]
    # every sampled tensor is on the type it reports, and not on any other type
    for t in sample_tensors(seed=5, count=6):
        other = target.type if t.device.type == "cpu" else "cpu"
        cases += [(t, t.device.type, a_tensor(t)), (t, torch.device(other), a_tensor(t))]
    d = [torch.device(gpu, i) for i in (0, 1, 10)]
    devices = [(d[0], gpu), (d[0], torch.device(gpu)), (d[0], f"{gpu}:0"), (d[1], f"{gpu}:1"), (d[1], f"{gpu}:0"),
               (d[0], d[1]), (d[2], f"{gpu}:1"), (d[1], f"{gpu}:10"), (d[0], "cpu"), (torch.device("cpu"), gpu),
               (torch.device("cpu"), "cpu")]
    return cases + [(x, w, f"the device {x}") for x, w in devices]


DEVICE_OF_A_DEVICE = misconceptions.code("05.device-of-a-device")
DEVICE_VS_STRING = misconceptions.code("05.compared-device-with-string")
INDEX_LESS_EQUALS_INDEXED = misconceptions.code("05.index-less-equals-indexed")
DEVICE_TEXT = misconceptions.code("05.compared-device-text")
IGNORED_INDEX = misconceptions.code("05.ignored-device-index")


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
    gpu = _gpu_type()
    return (f"Right on {len(cases)} cases: strings and torch.device requests, tensors on the cpu and other "
            f"devices, and the indexed devices a GPU tensor reports ({gpu}:0, {gpu}:1, {gpu}:10).")


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

    def __init__(self, scale_device: str | torch.device = "cpu", persistent: bool = True):
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.register_buffer("scale", torch.full((2,), 0.5, device=scale_device), persistent=persistent)

    def forward(self, x):
        return self.linear(x) * self.scale


def _model_cases() -> list[tuple[str, Callable[[], nn.Module]]]:
    """(description, factory): single-device modules, empty ones and spread ones, in the order checked."""
    d = target_device()
    to = f".to({str(d)!r})"
    return [
        ("`nn.Linear(3, 2)` on cpu", lambda: nn.Linear(3, 2)),
        (f"`nn.Linear(3, 2){to}`", lambda: nn.Linear(3, 2).to(d)),
        (f"`nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))` moved to {d}",
         lambda: nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(d)),
        ("`nn.ReLU()` (no parameters, no buffers)", lambda: nn.ReLU()),
        ("`nn.BatchNorm1d(4, affine=False)` on cpu (buffers only)", lambda: nn.BatchNorm1d(4, affine=False)),
        (f"`nn.BatchNorm1d(4, affine=False){to}` (buffers only)", lambda: nn.BatchNorm1d(4, affine=False).to(d)),
        ("`nn.BatchNorm1d(4, track_running_stats=False)` (parameters only; its buffer slots hold None)",
         lambda: nn.BatchNorm1d(4, track_running_stats=False)),
        (f"a module with a `Linear` on cpu and a buffer `scale` on {d}", lambda: _Scaled(d)),
        (f"a module with a `Linear` on cpu and a non-persistent buffer `scale` on {d}",
         lambda: _Scaled(d, persistent=False)),
        (f"`nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2){to})`", _PARAMS_SPREAD[0]),
        (f"`nn.Sequential(nn.Linear(4, 4){to}, nn.BatchNorm1d(4, affine=False))`",
         lambda: nn.Sequential(nn.Linear(4, 4).to(d), nn.BatchNorm1d(4, affine=False))),
        ("`nn.Sequential(nn.ReLU(), nn.Flatten())` (no parameters, no buffers)",
         lambda: nn.Sequential(nn.ReLU(), nn.Flatten())),
        ("a module with a `Linear` and a buffer, all on cpu", lambda: _Scaled("cpu")),
    ]


def _names(devices: set) -> str:
    return " and ".join(sorted(str(d) for d in devices)) or "nowhere"


FIRST_PARAMETER = misconceptions.code("05.first-parameter-only")
IGNORED_BUFFERS = misconceptions.code("05.ignored-buffers")
IGNORED_PARAMETERS = misconceptions.code("05.ignored-parameters")
STATE_DICT_TENSORS = misconceptions.code("05.state-dict-has-all-tensors")
OWN_TENSORS_ONLY = misconceptions.code("05.own-tensors-only")
EMPTY_MODULE_HAS_DEVICE = misconceptions.code("05.empty-module-has-device")
EMPTY_MODULE_RAISES = misconceptions.code("05.empty-module-raises")
SPREAD_HAS_ONE_DEVICE = misconceptions.code("05.split-model-has-one-device")
SPREAD_NOT_VALUE_ERROR = misconceptions.code("05.split-model-not-value-error")
SPREAD_MESSAGE_VAGUE = misconceptions.code("05.split-model-message-vague")


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
    cases, spread_seen = _model_cases(), 0
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
                raise Wrong(f"For {what} you raised ValueError ({safe_repr(str(e.error), 120)}). A module with no "
                            "parameters and no buffers is not an error: return None.", EMPTY_MODULE_RAISES) from None
            raise
        _compare_single(got, want, what, module, params, buffers)
    return (f"Right on {len(cases)} modules: parameters and buffers (also buffers only), submodules, "
            f"empty modules (None) and {spread_seen} spread ones (ValueError naming the devices).")


def _compare_single(got: Any, want: torch.device | None, what: str, module: nn.Module, params: set,
                    buffers: set) -> None:
    if issubclass(type(got), str):
        raise Wrong(f"For {what} you returned the string {safe_repr(got)}. Return the `torch.device` itself "
                    "(what `.device` gives you); a string is never == a device.", DEVICE_STRING)
    if got is not None and type(got) is not torch.device:
        raise Wrong(f"For {what} you returned {safe_repr(got)} ({type(got).__name__}). Return a single `torch.device`, "
                    "or None for a module with no parameters and no buffers.", misconceptions.WRONG_TYPE)
    if want is None:
        if got is not None:
            raise Wrong(f"{what[0].upper() + what[1:]} holds no tensors at all, so it lives on no device: "
                        f"return None. You returned `{got}`.", EMPTY_MODULE_HAS_DEVICE)
        return
    if got is None:
        if not params:
            raise Wrong(f"{what[0].upper() + what[1:]} has no parameters, but its buffers are on {want}, and you "
                        "returned None. Buffers live on a device too: include `module.buffers()`.", IGNORED_BUFFERS)
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
            raise Wrong(f"For {what} the tensors are on `{want}`, you returned `{got}`. Return the device the tensors "
                        f"report (e.g. `p.device`), not one rebuilt from its type: `torch.device({want.type!r})` has "
                        f"index None and is not == `{want}`.", INDEX_LESS_EQUALS_INDEXED)
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
        # each device named as it prints (`cuda:0`) or as its repr shows it (`device(type='cuda', index=0)`, what
        # formatting a set or list of devices gives)
        if not all(str(d) in message or repr(d) in message for d in found):
            raise Wrong(f"For {what} you raised ValueError, good, but its message {safe_repr(message, 120)} "
                        f"does not name the devices: it should mention {names}, so whoever reads the error "
                        "knows where the tensors are.", SPREAD_MESSAGE_VAGUE) from None
        return
    device = type(got) is torch.device
    shown = f"`{got}`" if device else safe_repr(got)
    lead = (f"{what[0].upper() + what[1:]} is spread over {names}, but you returned {shown} instead of "
            "raising ValueError. ")
    raises_for_params = all(_raises_value_error(fn, make()) for make in _PARAMS_SPREAD)
    raises_for_buffers = _raises_value_error(fn, nn.Sequential(nn.BatchNorm1d(4, affine=False),
                                                                nn.BatchNorm1d(4, affine=False).to(target_device())))
    if device and got in params and buffers - params and raises_for_params:
        hidden = [n for n, b in module.named_buffers() if b.device not in params]
        note = "" if not hidden or any(n in module.state_dict() for n in hidden) else (
            f" `{hidden[0]}` is a non-persistent buffer: `module.state_dict()` leaves it out, `module.buffers()` "
            "does not.")
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
_PARAMS_SPREAD = (lambda: nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).to(target_device())),
                  lambda: nn.Sequential(nn.Linear(3, 4).to(target_device()), nn.Linear(4, 2)))


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


# --- section 5: the optimizer's state (05.training_bytes counts it) ------------------------

#: Optimizer state per parameter, in copies of the parameter: SGD keeps none, momentum one buffer
#: (`momentum_buffer`), Adam two moments (`exp_avg`, `exp_avg_sq`). Read-only: the check loops over it.
STATE_COPIES = MappingProxyType({"sgd": 0, "momentum": 1, "adam": 2})
