"""What lives where: the learner's tensors, parameters, buffers, gradients and optimizer state, collected into one lane
per memory (host memory, each accelerator, ``meta``). What an object holds is read by :mod:`course_utils.inventory`; the
pieces of a map are :mod:`.blocks`', its drawing :mod:`.render`'s."""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import nn

from .. import gpusim, inventory
from . import render
from .blocks import COPIED, MOVED, NEW, ODD, STAYED, Block, Lane

__all__ = ["Block", "Lane", "DeviceMap", "collect", "compare", "named_from_caller", "learner_namespace",
           "MOVED", "COPIED", "STAYED", "NEW", "ODD"]

_MAX_DEPTH = 4        # containers inside containers
_MAX_ITEMS = 500      # blocks in one map (a big model's parameters beyond this are summed up)


@dataclass
class DeviceMap:
    """Where every collected object lives: :attr:`lanes` in a fixed order (cpu, accelerators, meta)."""

    lanes: list[Lane]
    skipped: list[str] = field(default_factory=list)   # names that hold no tensors, kindly listed

    def blocks(self) -> list[Block]:
        """Every block, lane by lane."""
        return [b for lane in self.lanes for b in lane.blocks]

    def find(self, name: str) -> Optional[Block]:
        """The block that ``name`` reaches, or ``None``."""
        return next((b for b in self.blocks() if name in b.names), None)

    def __str__(self) -> str:
        return render.text(self)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return render.html(self)


# --- collecting ----------------------------------------------------------------------------------

def collect(named: list[tuple[str, Any]]) -> DeviceMap:
    """Build the map of ``(name, object)`` pairs: tensors, modules (by submodule), optimizers, and containers of them,
    as :mod:`course_utils.inventory` walks them. Anything else is listed in :attr:`DeviceMap.skipped`."""
    found: dict[Any, Block] = {}
    skipped: list[str] = []
    walker = inventory.Inventory(max_depth=_MAX_DEPTH, max_items=_MAX_ITEMS)
    for name, obj in named:
        try:
            got = False
            for item in walker.walk(obj, name):
                kind = _kind(item)
                if kind is None:
                    continue
                got = True
                _add(found, item.name, item.value, kind, item.owner)
                if len(found) >= _MAX_ITEMS:
                    break
            if not got:
                skipped.append(name)
        except Exception:   # an object that breaks when looked at is skipped, never the map
            skipped.append(name)
    return DeviceMap(_lanes(found.values()), skipped)


#: What a block is, for each role of :mod:`course_utils.inventory` the map draws (an optimizer's
#: parameters are not drawn again: they are the model's).
_KIND = {inventory.PARAMETER: "parameter", inventory.BUFFER: "buffer", inventory.GRADIENT: "gradient",
         inventory.STATE: "optimizer state", inventory.TENSOR: "tensor", inventory.PLAIN: "tensor"}


def _kind(found: inventory.Found) -> Optional[str]:
    """The block's kind for what the inventory found, or ``None`` when the map does not draw it."""
    if found.role == inventory.TENSOR and isinstance(found.value, nn.Parameter):
        return "parameter"   # a parameter passed on its own
    return _KIND.get(found.role)


def _storage_key(t: torch.Tensor) -> Any:
    try:   # a tensor on the simulated GPU keeps its values, and its views share them, in a CPU tensor behind it
        return (str(t.device), gpusim.host(t).untyped_storage()._cdata)
    except Exception:   # no storage to share (e.g. some subclasses): the tensor is its own block
        return (str(t.device), "tensor", id(t))


def _nbytes(t: torch.Tensor) -> int:
    try:
        return int(gpusim.host(t).untyped_storage().nbytes())
    except Exception:
        return t.nbytes


def _pinned(t: torch.Tensor) -> bool:
    if t.device.type != "cpu":
        return False
    try:
        return bool(t.is_pinned())
    except Exception:   # a build or runtime without an accelerator cannot pin: nothing is pinned
        return False


def _add(found: dict, name: str, t: torch.Tensor, kind: str, group: str) -> None:
    key = _storage_key(t)
    block = found.get(key)
    if block is not None:   # a view of a storage already drawn: one block, one more name
        if name not in block.names:
            block.names.append(name)
        return
    found[key] = Block([name], kind, str(t.device), tuple(t.shape), str(t.dtype).replace("torch.", ""),
                       _nbytes(t), _pinned(t), group, key=key)


def _order(device: str) -> tuple:
    kind, _, index = device.partition(":")
    return (0 if kind == "cpu" else 2 if kind == "meta" else 1, kind, int(index) if index.isdigit() else -1)


def _lanes(blocks: Any) -> list[Lane]:
    lanes: dict[str, Lane] = {}
    for block in blocks:
        lanes.setdefault(block.device, Lane(block.device)).blocks.append(block)
    ordered = [lanes[d] for d in sorted(lanes, key=_order)]
    for lane in ordered:
        lane.free, lane.total = _memory(lane.device)
    return ordered


def _memory(device: str) -> tuple[Optional[int], Optional[int]]:
    """(free, total) bytes of an accelerator that reports them and is already in use; never starts one."""
    try:
        d = torch.device(device)
        if d.type == "cuda" and torch.cuda.is_initialized():
            free, total = torch.cuda.mem_get_info(d)
            return int(free), int(total)
    except Exception:
        pass
    return None, None


# --- before and after ----------------------------------------------------------------------------

def compare(before: DeviceMap, after: DeviceMap) -> None:
    """Mark in ``after`` what moved (a name now on another device), what was copied (a new name on another device,
    with the shape and dtype of a tensor still where it was: ``y = x.to(device)``), what stayed behind (a name still
    on a device that others left: the forgotten buffer) and what is new since ``before``."""
    old = {name: b for b in before.blocks() for name in b.names}
    left: set[str] = set()     # devices that something moved away from
    for block in after.blocks():
        was = next((old[n] for n in block.names if n in old), None)
        if was is not None and was.device != block.device:
            block.status, block.note = MOVED, f"was on {was.device}"
            left.add(was.device)
    for block in after.blocks():
        if block.status:
            continue
        was = next((old[n] for n in block.names if n in old), None)
        if was is None:
            twins = [b for b in after.blocks() if b is not block and b.device != block.device
                     and b.shape == block.shape and b.dtype == block.dtype and b.name in old]
            # the likeliest original: a variable of its own before a module's or a container's tensor
            twin = min(twins, key=lambda b: ("." in b.name or "[" in b.name), default=None)
            block.status, block.note = ((COPIED, f"copy of {twin.name} ({twin.device})") if twin
                                        else (NEW, "not there before"))
            if twin:
                left.add(twin.device)
    for block in after.blocks():
        if block.kind == "optimizer state" and not block.shape and block.device == "cpu":
            continue   # an optimizer's `step` count lives on the CPU on purpose, wherever the parameters are
        if not block.status and block.device in left and any(n in old for n in block.names):
            block.status, block.note = STAYED, f"still on {block.device}"


def named_from_caller(objects: tuple, frame: Optional[types.FrameType]) -> list[tuple[str, Any]]:
    """Names for positional objects: the variable names the caller used for them, when it has them."""
    names: dict[int, str] = {}
    for scope in [frame.f_locals, frame.f_globals] if frame is not None else []:
        for key, value in list(scope.items()):
            if not key.startswith("_"):
                names.setdefault(id(value), key)
    return [(names.get(id(obj), f"object {i + 1}"), obj) for i, obj in enumerate(objects)]


def learner_namespace(namespace: dict) -> list[tuple[str, Any]]:
    """The variables of a notebook worth mapping: tensors, modules, optimizers and containers of them."""
    def worth(value: Any) -> bool:
        if isinstance(value, (torch.Tensor, nn.Module, torch.optim.Optimizer)):
            return True
        if isinstance(value, (dict, list, tuple)) and 0 < len(value) <= _MAX_ITEMS:
            values = value.values() if isinstance(value, dict) else value
            return any(isinstance(v, (torch.Tensor, nn.Module)) for v in list(values)[:50])
        return False

    return [(k, v) for k, v in list(namespace.items())
            if not k.startswith("_") and not isinstance(v, (types.ModuleType, type)) and worth(v)]
