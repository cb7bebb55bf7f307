"""The mismatch explainer: which tensor is on which device, which one is the odd one out, and the fix.

A device-mismatch error names two devices but not the tensor. :func:`explain_devices` looks at
everything a forward pass touches that it can see (parameters, buffers, plain tensor attributes
of every submodule, the inputs and, if you pass it, the optimizer's state) and says what to move::

    from course_utils.mismatch import explain_devices
    report = explain_devices(model, {"x": x, "labels": labels}, device="cuda")
    report              # a table in a notebook, plain text in a terminal
    report.ok           # True when nothing is out of place
    report.mismatches   # sorted names of the tensors that are not on the target device

It never raises for what you pass it: odd inputs are listed and explained instead. The fixes it suggests are
:mod:`course_utils.devicefixes`'s. :func:`save_as_gpu_checkpoint` writes the file ``torch.save`` writes on a GPU
machine, so a CPU-only runtime can reproduce (and fix) loading a GPU checkpoint.
"""
from __future__ import annotations

import inspect
import re
from collections import Counter
from collections.abc import Mapping
from itertools import islice
from typing import Any, Optional

import torch
from torch import nn
from torch.utils.data import DataLoader

from . import inventory
from .devicemap.model import ODD, DeviceMap, collect
from .devicefixes import CPU_ONLY, MAYBE_LENGTHS, suggest
from .devicereport import MISMATCH, NOTE, OK, WARNING, DeviceReport, Entry, is_on
from .grading import safe_repr
from .inventory import Found

__all__ = ["explain_devices", "DeviceReport", "Entry", "save_as_gpu_checkpoint"]

_MAX_ITEMS = 200      # inputs and container items looked at, at most (a report, not a dump)
_MAX_DEPTH = 3        # how deep nested inputs (dicts of lists of tensors...) are followed


def explain_devices(model: Any = None, inputs: Any = None, device: Any = None, *,
                    optimizer: Any = None, loss: Any = None) -> DeviceReport:
    """List every parameter, buffer, plain tensor attribute and input with its device; flag the odd ones out.

    ``model`` is an ``nn.Module`` (``None``: inputs only); ``inputs`` what you pass it: a tensor, a mapping of name ->
    tensor (a Hugging Face ``BatchEncoding`` too) or a list/tuple, nested containers followed a few levels,
    non-tensors listed and skipped. ``device`` is where everything should be (``"cuda"``: the current CUDA device);
    when omitted, the device holding most of the model's parameters (by element count), else most of the inputs. An
    ``nn.DataParallel`` model on GPUs always targets its ``device_ids[0]``: it checks that its parameters are there
    before each call, and scatters the inputs itself from any device. ``optimizer``'s state should sit with its
    parameters. The tensors ``loss`` holds (a loss module, or a dict of name -> loss module; ``weight``,
    ``pos_weight``) are checked against the target but never choose it; a loss module passed as ``model``, and
    modules among the inputs, are read the same way.

    Some arguments must stay on the CPU whatever the target: a ``DataLoader``'s generator, and the sequence lengths
    given to ``pack_padded_sequence``. An integer tensor named like lengths (``lengths``, ``src_len``, ``x_len``,
    ``seq_lens``...) is judged by use: when the model's code calls ``pack_padded_sequence`` it must stay on the CPU;
    otherwise the report says it cannot tell, and never advises moving it to the target. Neither ever chooses the
    target. The :class:`DeviceReport` never raises for unusual arguments: it reports them."""
    report = DeviceReport(target=None, reason="")
    try:
        _explain(report, model, inputs, device, optimizer, loss)
    except Exception as e:  # the explainer must never be the thing that crashes
        report.problems.append(f"the inspection stopped early with {type(e).__name__}: {safe_repr(str(e), 160)}")
    report.device_map = _map_of(report, model, inputs, optimizer, loss)
    return report


def _map_of(report: DeviceReport, model: Any, inputs: Any, optimizer: Any, loss: Any) -> Optional[DeviceMap]:
    """The report's objects on a device map, named as the report names them, the odd ones out marked."""
    try:
        pairs = [("", model)] if isinstance(model, nn.Module) else []
        pairs += [(f.name, f.value) for f in _inputs(inputs) if f.role in (inventory.TENSOR, inventory.OTHER,
                                                                          inventory.MORE)]
        pairs += [(name, value) for name, value in (loss.items() if isinstance(loss, dict) else [("loss", loss)])
                  if isinstance(value, nn.Module)]
        if optimizer is not None:
            pairs.append(("optimizer", optimizer))
        device_map, odd = collect(pairs), set(report.mismatches)
        for block in device_map.blocks():
            if odd.intersection(block.names):
                block.status, block.note = ODD, f"not on {report.target}"
        return device_map
    except Exception:   # the picture is a bonus: the report stands without it
        return None


# --- the inspection ------------------------------------------------------------------------------

def _explain(report: DeviceReport, model: Any, inputs: Any, device: Any, optimizer: Any, loss: Any) -> None:
    """Fill ``report``: the target device, a row for each tensor (model, losses, inputs, optimizer), the fixes."""
    losses = _loss_modules(loss)
    if isinstance(model, nn.modules.loss._Loss):  # a loss passed as the model holds no model device
        losses.insert(0, ("loss", model))
        model = None
    walker = inventory.Inventory(max_items=_MAX_ITEMS)   # the model's, then the optimizer's (named after it)
    params, buffers, plain, unregistered = _model_tensors(model, report, walker)
    flat_inputs, movers, modules = _sorted_inputs(inputs)
    losses += modules
    packs = _packs_sequences(model)
    target, scatter = _settle_target(report, model, device, params + buffers, flat_inputs)
    _model_entries(report, target, params, buffers, plain, unregistered)
    _loss_entries(report, target, losses)
    _input_entries(report, target, flat_inputs, packs, data_parallel=scatter is not None)
    if optimizer is not None:
        _optimizer_entries(report, optimizer, walker, model is not None and bool(params))
    report.suggestions = [] if target is None else suggest(report, len(params) + len(buffers), movers,
                                                          data_parallel=scatter is not None)


def _sorted_inputs(inputs: Any) -> tuple[list, list[str], list]:
    """The inputs sorted by what the report does with them: (name, value, role) rows to judge, the names of
    containers with a `.to` of their own (a BatchEncoding), and the modules among them (losses and others)."""
    flat_inputs: list[tuple[str, Any, str]] = []
    movers: list[str] = []
    modules: list[tuple] = []
    for found in _inputs(inputs):
        name, value = found.name, found.value
        if found.role == inventory.BATCH:
            movers.append(name)
        elif isinstance(value, nn.Module):    # a loss (or another module) among the inputs: look at its tensors
            modules.append((name, value) if isinstance(value, nn.modules.loss._Loss) else (name, value, "module"))
        elif found.role != inventory.GRADIENT:
            flat_inputs.append((name, value, found.role))
    return flat_inputs, movers, modules


def _settle_target(report: DeviceReport, model: Any, device: Any, model_tensors: list,
                   flat_inputs: list) -> tuple[Optional[torch.device], Optional[torch.device]]:
    """(the target device, an ``nn.DataParallel``'s ``device_ids[0]`` or ``None``); the report's target and reason
    are set, and a ``device`` the DataParallel model cannot run on is a problem."""
    voters = [(n, v) for n, v, _ in flat_inputs if not (_cpu_only(n, v) or _lengths_like(n, v))]
    scatter = _data_parallel_device(model)
    if scatter is not None:
        target, reason = scatter, "nn.DataParallel's device_ids[0], where it checks the model is"
        try:
            asked = _normalise(device) if device is not None else scatter
        except Exception:
            asked = None
        if asked is None or not is_on(scatter, asked):
            report.problems.append(f"device={safe_repr(device)} is not where this nn.DataParallel runs: it needs "
                                   f"its parameters and buffers on device_ids[0], {scatter}, whatever the inputs.")
    else:
        target, reason = _choose_target(device, model_tensors, voters, report)
    report.target, report.reason = None if target is None else str(target), reason
    return target, scatter


def _status(t: torch.Tensor, target: Optional[torch.device]) -> str:
    """``OK`` when ``t`` is on the target (or there is none), else ``MISMATCH``."""
    return OK if target is None or is_on(t.device, target) else MISMATCH


def _model_entries(report: DeviceReport, target: Optional[torch.device], params: list, buffers: list, plain: list,
                   unregistered: list) -> None:
    """The model's rows: parameters and buffers, plain tensor attributes, modules in plain lists or dicts."""
    for kind, items in (("parameter", params), ("buffer", buffers)):
        for name, t in items:
            status = _status(t, target)
            note = ""
            if status == MISMATCH:
                note = "on meta: no data to move" if t.device.type == "meta" else f"not on {report.target}"
            report.entries.append(_entry(kind, name, t, status, note))
    for name, t in plain:
        wrong = _status(t, target) == MISMATCH
        report.entries.append(_entry("plain attribute", name, t, MISMATCH if wrong else WARNING,
                                     "plain tensor attribute: Module.to does not move it"))
    for name, layer in unregistered:
        inside = _module_tensors(layer) if isinstance(layer, nn.Module) else []
        report.entries.append(Entry("unregistered module", name, "", "", type(layer).__name__, WARNING,
                                    "module in a plain list/dict: Module.to does not see it"))
        for tname, t in inside:   # its tensors, where Module.to left them
            wrong = _status(t, target) == MISMATCH
            report.entries.append(_entry("unregistered module", f"{name}.{tname}", t, MISMATCH if wrong else WARNING,
                                         f"in a plain list/dict: Module.to left it on {t.device}" if wrong else
                                         "in a plain list/dict: will not follow Module.to"))


def _loss_entries(report: DeviceReport, target: Optional[torch.device], losses: list) -> None:
    """The rows of the tensors each loss (or other module passed beside the model) holds."""
    for name, owner, *kind in losses:
        for tname, t in _module_tensors(owner):
            status = _status(t, target)
            note = f"held by '{name}': move it with `{name}.to(...)`" if status == MISMATCH else ""
            report.entries.append(_entry(kind[0] if kind else "loss", f"{name}.{tname}", t, status, note))


def _input_entries(report: DeviceReport, target: Optional[torch.device], flat_inputs: list, packs: bool,
                   data_parallel: bool) -> None:
    """The inputs' rows: tensors judged against the target, CPU-only arguments and lengths by their own rules,
    anything else noted."""
    for name, value, role in flat_inputs:
        if role == inventory.MORE:
            report.entries.append(Entry("input", name, "", "", "str", NOTE, f"{value} more items not shown"))
        elif _cpu_only(name, value):
            report.entries.append(_cpu_only_entry(name, value))
        elif _lengths_like(name, value):
            report.entries.append(_lengths_entry(name, value, target, packs))
        elif isinstance(value, torch.Tensor):
            status = _status(value, target)
            note = f"not on {report.target}" if status == MISMATCH else ""
            if status == MISMATCH and value.dim() == 0 and value.device.type == "cpu":
                status, note = NOTE, "0-dim CPU tensor: allowed to mix with any device"
            elif status == MISMATCH and data_parallel:
                status, note = NOTE, "nn.DataParallel scatters its inputs to its GPUs from any device"
            report.entries.append(_entry("input", name, value, status, note))
        else:
            report.entries.append(Entry("input", name, "", "", type(value).__name__, NOTE, _non_tensor_note(value)))


def _model_tensors(model: Any, report: DeviceReport, walker: inventory.Inventory) -> tuple[list[tuple[str, Any]], ...]:
    """The model's (name, tensor) parameters, buffers and plain attributes, and its (name, module)
    modules in plain lists or dicts; what stops the inspection is said in ``report.problems``."""
    found: list[Found] = []
    if model is not None and not isinstance(model, nn.Module):
        hint = " (did you swap the model and the inputs?)" if isinstance(model, (torch.Tensor, dict)) else ""
        report.problems.append(f"`model` is a {type(model).__name__}, not an nn.Module{hint}; "
                               "pass your model, or None to check only the inputs.")
    elif model is not None:
        if not inventory.initialised(model):
            report.problems.append(f"{type(model).__name__} was never initialised as a module: its "
                                   "__init__ must call super().__init__() first.")
        try:
            found = list(walker.walk(model))
        except Exception as e:
            report.problems.append(f"could not list the model's tensors ({type(e).__name__}: {safe_repr(str(e), 120)});"
                                   " is every submodule initialised with super().__init__()?")
    return tuple([(f.name, f.value) for f in found if f.role == role]
                 for role in (inventory.PARAMETER, inventory.BUFFER, inventory.PLAIN, inventory.UNREGISTERED))


def _inputs(inputs: Any) -> list[Found]:
    """What the inputs hold, named as code: a top-level key that is a Python name names a variable
    (``x``); other items are ``inputs[...]``, a lone tensor ``input``. Containers are followed
    ``_MAX_DEPTH`` levels, mappings of any kind included (a Hugging Face ``BatchEncoding``)."""
    if inputs is None:
        return []
    walker = inventory.Inventory(max_depth=_MAX_DEPTH, max_items=_MAX_ITEMS)
    if isinstance(inputs, (Mapping, list, tuple)):
        return list(walker.leaves(inputs, "inputs", named_keys=True))
    return list(walker.leaves(inputs, "input"))


def _choose_target(device: Any, model_tensors: list, inputs: list, report: DeviceReport):
    if device is not None:
        try:
            return _normalise(device), "the device you asked for"
        except Exception:
            report.problems.append(f"device={safe_repr(device)} is not a device PyTorch understands "
                                   "(try 'cpu', 'cuda', 'cuda:0', 'mps' or a torch.device); "
                                   "falling back to the model's device.")
    votes: Counter = Counter()
    for _, t in model_tensors:
        votes[str(t.device)] += max(t.numel(), 1)
    if votes:
        return torch.device(votes.most_common(1)[0][0]), "where most of the model's parameters are"
    for _, t in inputs:
        if isinstance(t, torch.Tensor):
            votes[str(t.device)] += 1
    if votes:
        return torch.device(votes.most_common(1)[0][0]), "where most of the inputs are"
    return None, ""


def _normalise(device: Any) -> torch.device:
    """``torch.device(device)``, with the index PyTorch would use: none for cpu/meta, the current one
    for an accelerator named without an index (``"cuda"`` means the current CUDA device)."""
    d = torch.device(device)
    if d.type in ("cpu", "meta"):
        return torch.device(d.type)
    if d.index is None:
        try:
            acc = torch.accelerator.current_accelerator()
            if acc is not None and acc.type == d.type:
                return torch.device(d.type, torch.accelerator.current_device_index())
        except Exception:
            pass
    return d


def _entry(kind: str, name: str, t: torch.Tensor, status: str, note: str) -> Entry:
    return Entry(kind, name, str(t.device), str(tuple(t.shape)), str(t.dtype).replace("torch.", ""), status, note)


def _non_tensor_note(value: Any) -> str:
    if isinstance(value, (bool, int, float, complex)):
        return "a Python number: works with tensors on any device"
    if type(value).__module__ == "numpy":
        return "a NumPy array lives on the CPU: torch.from_numpy(a).to(device)"
    return "not a tensor: skipped"


_LENGTH_WORD = re.compile(r"(?:len|lens|length|lengths)$", re.IGNORECASE)


def _cpu_only(name: str, value: Any) -> bool:
    """Inputs that belong on the CPU whatever the model's device: generators and DataLoaders."""
    return isinstance(value, (torch.Generator, DataLoader))


def _lengths_like(name: str, value: Any) -> bool:
    """An integer tensor of at most one dimension named like lengths: ``lengths``, ``src_len``, ``x_len``,
    ``seqlen``."""
    if not isinstance(value, torch.Tensor) or value.dim() > 1:
        return False
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        return False
    return any(_LENGTH_WORD.search(word) for word in re.split(r"[^A-Za-z]+|_", name) if word)


def _packs_sequences(model: Any) -> bool:
    """True when the ``forward`` of the model, or of one of its own submodules, calls ``pack_padded_sequence``."""
    if not isinstance(model, nn.Module):
        return False
    try:
        kinds = list(dict.fromkeys(type(m) for _, m in model.named_modules()))[:_MAX_ITEMS]
    except Exception:
        return False
    for kind in kinds:
        try:
            if not kind.__module__.startswith("torch.") and "pack_padded_sequence" in inspect.getsource(kind.forward):
                return True
        except Exception:   # no source (built in, or typed at a prompt): no evidence either way
            continue
    return False


def _lengths_entry(name: str, value: torch.Tensor, target: Optional[torch.device], packs: bool) -> Entry:
    """A tensor named like lengths: certain when the model packs sequences, otherwise a note that says so."""
    on_cpu = value.device.type == "cpu"
    if packs:
        return _entry("input", name, value, NOTE if on_cpu else MISMATCH,
                      f"{CPU_ONLY}: the model calls pack_padded_sequence, which reads lengths on the CPU")
    if on_cpu or target is None or is_on(value.device, target):
        return _entry("input", name, value, NOTE,
                      f"{MAYBE_LENGTHS}: keep it on the CPU if it goes to pack_padded_sequence; on the model's "
                      "device if the model computes with it (its code did not say which)")
    return _entry("input", name, value, MISMATCH, f"{MAYBE_LENGTHS}, on neither the CPU nor {target}")


def _data_parallel_device(model: Any) -> Optional[torch.device]:
    """The device an ``nn.DataParallel`` on GPUs needs its model on (``device_ids[0]``), else ``None``."""
    if not isinstance(model, nn.DataParallel):
        return None
    device = getattr(model, "src_device_obj", None)
    return device if getattr(model, "device_ids", None) and isinstance(device, torch.device) else None


def _cpu_only_entry(name: str, value: Any) -> Entry:
    """A generator, or a DataLoader's: the one a DataLoader draws its shuffle order with belongs on the CPU."""
    loader = isinstance(value, DataLoader)
    if loader:
        gen = value.generator if isinstance(value.generator, torch.Generator) else None
        name, value = f"{name}.generator", gen or getattr(getattr(value, "sampler", None), "generator", None)
        if not isinstance(value, torch.Generator):
            return Entry("input", name, "", "", "None", NOTE, "no generator of its own: uses the CPU's global one")
    device = str(value.device)
    if loader:   # a DataLoader's sampler draws its permutation on the CPU
        return Entry("input", name, device, "", "Generator", NOTE if value.device.type == "cpu" else MISMATCH,
                     f"{CPU_ONLY}: a DataLoader draws with it on the CPU")
    return Entry("input", name, device, "", "Generator", NOTE,
                 f"a generator: a DataLoader's {CPU_ONLY}; one for torch.randn(..., generator=g) "
                 "belongs where it draws")


def _loss_modules(loss: Any) -> list:
    if loss is None:
        return []
    if isinstance(loss, dict):
        return [(str(k), v) for k, v in list(loss.items())[:_MAX_ITEMS] if isinstance(v, nn.Module)]
    return [("loss", loss)] if isinstance(loss, nn.Module) else []


def _module_tensors(module: nn.Module) -> list:
    """A loss module's parameters and buffers (``weight``, ``pos_weight``...) and plain tensor attributes."""
    try:
        roles = (inventory.PARAMETER, inventory.BUFFER, inventory.PLAIN)
        found = (f for f in inventory.walk(module, max_items=_MAX_ITEMS) if f.role in roles)
        return [(f.name, f.value) for f in islice(found, _MAX_ITEMS)]
    except Exception:
        return []


def _optimizer_entries(report: DeviceReport, optimizer: Any, walker: inventory.Inventory, has_model: bool) -> None:
    """Each state tensor next to its parameter, or not; parameters the model no longer has (``has_model``)."""
    try:
        found = list(walker.optimizer(optimizer))
    except Exception:
        report.problems.append(f"`optimizer` is a {type(optimizer).__name__}, not a torch.optim.Optimizer.")
        return
    p, pname, stale = None, "", False
    for f in found:   # each parameter, then its state
        if f.role == inventory.OPTIMIZED:
            p, pname, stale = f.value, f.owner or f"optimizer param #{f.key}", has_model and not f.owner
            if stale:
                report.entries.append(_entry("optimizer state", pname, p, WARNING, "not one of the model's "
                                             "parameters: the model no longer uses what this optimizer updates"))
            continue
        name, value = f"{pname} ({f.key})", f.value
        if value.device == p.device and stale:
            report.entries.append(_entry("optimizer state", name, value, NOTE, f"next to {pname}, which the "
                                         "model no longer uses"))
        elif value.device == p.device:
            report.entries.append(_entry("optimizer state", name, value, OK, ""))
        elif value.dim() == 0 and value.device.type == "cpu":
            report.entries.append(_entry("optimizer state", name, value, NOTE, "0-dim CPU tensor: allowed"))
        else:
            report.entries.append(_entry("optimizer state", name, value, MISMATCH, f"its parameter is on {p.device}"))


# --- reproducing a GPU checkpoint on any machine -------------------------------------------------

_TAG_AS: Optional[str] = None
_REGISTERED = False
#: Globals this module rebinds in normal use (the grader's tamper check allows it).
REBOUND = ("_REGISTERED",)


def _tag(storage: Any) -> Optional[str]:
    on_cpu = _TAG_AS is not None and getattr(storage, "device", None) is not None and storage.device.type == "cpu"
    return _TAG_AS if on_cpu else None


def _no_restore(storage: Any, location: str) -> None:
    return None  # leave loading to PyTorch's own deserializers


def save_as_gpu_checkpoint(obj: Any, f: Any, location: str = "cuda:0") -> None:
    """``torch.save(obj, f)``, writing CPU tensors as if they lived on ``location`` (default ``cuda:0``).

    ``torch.save`` records each storage's device as a *location tag* (``"cpu"``, ``"cuda:0"``) next
    to its bytes, and ``torch.load`` puts it back there. This writes the same bytes with the tag
    a GPU machine would write, so a CPU-only runtime can meet, and fix, the real error of loading a
    GPU checkpoint without ``map_location``. Nothing changes for any other ``torch.save`` call. The tensors of
    ``obj`` (e.g. a ``state_dict``) must be on the CPU; ``f`` is a path or a binary file object."""
    global _TAG_AS, _REGISTERED
    if not _REGISTERED:
        # priority -7: ahead of PyTorch's own taggers (cpu is 10), and unlikely to collide
        torch.serialization.register_package(-7, _tag, _no_restore)
        _REGISTERED = True
    _TAG_AS = str(location)
    try:
        torch.save(obj, f)
    finally:
        _TAG_AS = None
