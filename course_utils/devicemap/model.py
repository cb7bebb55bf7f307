"""What lives where: the learner's tensors, parameters, buffers, gradients and optimizer state,
collected into one lane per memory (host memory, each accelerator, ``meta``). No drawing here: the
renderers in :mod:`course_utils.devicemap.render` read this model."""
from __future__ import annotations

import math
import types
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import torch
from torch import nn

_MAX_DEPTH = 4        # containers inside containers
_MAX_ITEMS = 500      # blocks in one map (a big model's parameters beyond this are summed up)

#: Block statuses set by :func:`compare` (and by the explainer's highlight).
MOVED, COPIED, STAYED, NEW, ODD = "moved", "copied", "stayed behind", "new", "odd one out"


@dataclass
class Block:
    """One storage in memory: a tensor, or several views of one storage drawn together.

    Attributes:
        names: every name that reaches this storage (``x``, ``x_view``), the first is the label.
        kind: ``tensor``, ``parameter``, ``buffer``, ``gradient`` or ``optimizer state``.
        device: where it lives (``"cpu"``, ``"cuda:0"``, ``"meta"``).
        shape, dtype: of the first name's tensor.
        nbytes: the bytes of the storage (views share it, so it is counted once).
        pinned: page-locked host memory (fast, asynchronous copies to a GPU).
        group: the submodule it belongs to (``"encoder"``), or ``""``.
        status: ``""`` or one of :data:`MOVED`, :data:`COPIED`, :data:`STAYED`, :data:`NEW`, :data:`ODD`.
        note: what the status means here (``"was on cpu"``, ``"copy of x"``).
    """

    names: list[str]
    kind: str
    device: str
    shape: tuple
    dtype: str
    nbytes: int
    pinned: bool = False
    group: str = ""
    status: str = ""
    note: str = ""
    key: Any = None       # the storage's identity, for sharing and comparing

    @property
    def name(self) -> str:
        """The label: the first name."""
        return self.names[0]


@dataclass
class Lane:
    """One memory and what is in it."""

    device: str
    blocks: list[Block] = field(default_factory=list)
    free: Optional[int] = None    # bytes, when the device reports it
    total: Optional[int] = None

    @property
    def used(self) -> int:
        """Bytes held by the blocks drawn here."""
        return sum(b.nbytes for b in self.blocks)

    @property
    def title(self) -> str:
        """``"cpu (host memory)"``, ``"cuda:0"``, ``"meta (no memory: shapes only)"``."""
        kind = self.device.split(":")[0]
        return {"cpu": "cpu (host memory)", "meta": "meta (no data: shapes only)"}.get(kind, self.device)


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
        from .render import text
        return text(self)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from .render import html
        return html(self)


# --- collecting ----------------------------------------------------------------------------------

def collect(named: list[tuple[str, Any]]) -> DeviceMap:
    """Build the map of ``(name, object)`` pairs: tensors, modules (by submodule), optimizers, and
    dicts, lists and tuples of them. Anything else is listed in :attr:`DeviceMap.skipped`."""
    found: dict[Any, Block] = {}
    skipped: list[str] = []
    params: dict[int, str] = {}
    seen: set[int] = set()
    for name, obj in named:
        try:
            got = False
            for item in _walk(name, obj, 0, seen, params):
                got = True
                _add(found, *item)
                if len(found) >= _MAX_ITEMS:
                    break
            if not got:
                skipped.append(name)
        except Exception:   # an object that breaks when looked at is skipped, never the map
            skipped.append(name)
    return DeviceMap(_lanes(found.values()), skipped)


def _walk(name: str, obj: Any, depth: int, seen: set[int], params: dict[int, str]) -> Iterator[tuple]:
    """(name, tensor, kind, group) for every tensor reachable from ``obj``."""
    if isinstance(obj, torch.Tensor):
        yield name, obj, "parameter" if isinstance(obj, nn.Parameter) else "tensor", ""
        if obj.grad is not None:
            yield f"{name}.grad", obj.grad, "gradient", ""
        return
    if id(obj) in seen or depth > _MAX_DEPTH:
        return
    seen.add(id(obj))
    if isinstance(obj, nn.Module):
        prefix = f"{name}." if name else ""
        for pname, p in obj.named_parameters():
            params[id(p)] = prefix + pname
            group = pname.rpartition(".")[0]
            yield prefix + pname, p, "parameter", group
            if p.grad is not None:
                yield f"{prefix}{pname}.grad", p.grad, "gradient", group
        for bname, b in obj.named_buffers():
            yield prefix + bname, b, "buffer", bname.rpartition(".")[0]
        for attr, value in list(vars(obj).items()):   # plain tensor attributes: Module.to skips them
            if isinstance(value, torch.Tensor) and not attr.startswith("_"):
                yield prefix + attr, value, "tensor", ""
        return
    if isinstance(obj, torch.optim.Optimizer):
        for i, p in enumerate(p for g in obj.param_groups for p in g.get("params", [])):
            for key, value in dict(obj.state.get(p, {})).items():
                if isinstance(value, torch.Tensor):   # named by position: stable when parameters move
                    yield f"{name}.state[{i}].{key}", value, "optimizer state", params.get(id(p), "")
        return
    if isinstance(obj, dict):
        items = list(obj.items())[:_MAX_ITEMS]
        for key, value in items:
            yield from _walk(f"{name}[{key!r}]", value, depth + 1, seen, params)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj[:_MAX_ITEMS]):
            yield from _walk(f"{name}[{i}]", value, depth + 1, seen, params)


def _storage_key(t: torch.Tensor) -> Any:
    try:
        return (str(t.device), t.untyped_storage()._cdata)
    except Exception:   # no storage to share (e.g. some subclasses): the tensor is its own block
        return (str(t.device), "tensor", id(t))


def _nbytes(t: torch.Tensor) -> int:
    try:
        return int(t.untyped_storage().nbytes())
    except Exception:
        return t.numel() * t.element_size()


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
    """Mark in ``after`` what moved, what was copied, what stayed behind and what is new since ``before``.

    * moved: a name now on another device (``x = x.to(device)``, ``model.to(device)``);
    * copied: a new name on another device, with the shape and dtype of a tensor that is still where it
      was (``y = x.to(device)``): two copies now;
    * stayed behind: a name still on a device that others left (the forgotten buffer, the batch never moved);
    * new: a name that was not there before.
    """
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
            block.status, block.note = (COPIED, f"copy of {twin.name} ({twin.device})") if twin else (NEW, "not there before")
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
    scopes = [frame.f_locals, frame.f_globals] if frame is not None else []
    for scope in scopes:
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


def human_bytes(n: int) -> str:
    """``4 B``, ``1.5 KiB``, ``4.0 GiB``."""
    if n < 1024:
        return f"{n} B"
    exp = min(int(math.log(n, 1024)), 5)
    return f"{n / 1024 ** exp:.1f} {'KMGTP'[exp - 1]}iB"
