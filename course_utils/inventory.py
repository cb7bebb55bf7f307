"""What lives where: one walk over a learner's objects that finds every tensor and says what holds it.

::

    from course_utils.inventory import walk
    for found in walk(model, "model"):
        print(found.name, found.role, found.value.device)    # model.0.weight parameter cpu ...

The device map (``cu.show_devices``), the mismatch explainer (``cu.explain_devices``) and the help under a failing
cell all read this walk, so they agree on what an object holds:

* a module: its parameters (each followed by its gradient), its buffers, the plain tensor attributes of every
  submodule (``Module.to`` skips them), and the tensors and modules in its plain list, tuple and dict attributes;
* an optimizer: each parameter it updates, followed by that parameter's state (``exp_avg``, ``step``...);
* a container (a dict, list, tuple, or any mapping, such as a Hugging Face ``BatchEncoding``): its items, a few
  levels deep, with names you can paste (``batch['x']``, ``pair[0]``);
* a tensor: itself, and its gradient.

Each find is a :class:`Found`, in a fixed order (a module's own order, then the items of its containers): a reader
that wants another order sorts them, and one that wants fewer stops early. An :class:`Inventory` walks several
objects as one; :func:`by_variable` walks a namespace. This module imports only torch and the standard library."""
from __future__ import annotations

import reprlib
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any, Iterator, NamedTuple

import torch
from torch import nn
from .text import shorten

__all__ = ["Found", "Inventory", "walk", "by_variable", "initialised", "moves_itself", "key_text", "TENSOR_ROLES",
           "PARAMETER", "BUFFER", "PLAIN", "GRADIENT", "OPTIMIZED", "STATE", "TENSOR",
           "UNREGISTERED", "BATCH", "OTHER", "MORE"]

# Roles of the tensors found.
PARAMETER = "parameter"               #: registered in a module: ``Module.to`` moves it
BUFFER = "buffer"                     #: registered in a module: ``Module.to`` moves it
PLAIN = "plain attribute"             #: held by a module as a plain attribute, or in a plain list or dict
GRADIENT = "gradient"                 #: the ``.grad`` of the tensor found just before it
OPTIMIZED = "optimized parameter"     #: a parameter an optimizer updates (its state follows it)
STATE = "optimizer state"             #: an optimizer's state for the parameter found just before it
TENSOR = "tensor"                     #: a tensor of its own: a variable, an input, a container's item
#: The roles whose value is a tensor.
TENSOR_ROLES = frozenset({PARAMETER, BUFFER, PLAIN, GRADIENT, OPTIMIZED, STATE, TENSOR})

# Roles of the other things a walk meets.
UNREGISTERED = "unregistered module"  #: a module in a plain list or dict attribute: ``Module.to`` never sees it
BATCH = "batch"                       #: a mapping with a ``.to`` of its own (a BatchEncoding), before its items
OTHER = "not a tensor"                #: anything else, as it is (a number, a NumPy array, a container too deep)
MORE = "more items"                   #: the items of a container past the limit: the value is how many


class Found(NamedTuple):
    """One thing a walk found."""

    name: str        # as code: model.0.weight, batch['x'], opt.state[0].exp_avg
    value: Any       # a tensor; for the other roles the object met, for MORE a count
    role: str        # PARAMETER, BUFFER...
    owner: str = ""  # the submodule it belongs to ("0" for model.0.weight; for optimizer state, its parameter's name)
    key: Any = None  # an attribute, a key or index, a state's name, or a parameter's position in its optimizer


class Inventory:
    """A walk over several objects that share what they hold (a model, then its optimizer): containers followed
    ``max_depth`` deep (deeper ones are one :data:`OTHER`), ``max_items`` looked at in each (the rest are one
    :data:`MORE`); ``parameter_names`` maps ``id(parameter)`` to the name it was found under, for optimizer state."""

    def __init__(self, max_depth: int = 4, max_items: int = 500):
        self.max_depth, self.max_items = max_depth, max_items
        self.parameter_names: dict[int, str] = {}
        self._opened: set[int] = set()

    def walk(self, value: Any, name: str = "") -> Iterator[Found]:
        """Everything ``value`` holds: modules and optimizers are opened wherever they are met; an object already
        opened by this inventory (a module under two names, a list that contains itself) yields nothing again."""
        return self._visit(value, name, 0, None, True, False)

    def leaves(self, value: Any, name: str = "", *, named_keys: bool = False) -> Iterator[Found]:
        """The leaves of a structure of containers, as they are: tensors (with their gradients), and anything else
        (a module, an optimizer) as :data:`OTHER`; a mapping with a ``.to`` of its own is announced (:data:`BATCH`)
        before its items. With ``named_keys``, the keys of ``value`` (a mapping) that are Python names name their
        values (``{"x": x}`` gives ``x``), as in a namespace."""
        return self._visit(value, name, 0, None, False, named_keys)

    def optimizer(self, optimizer: Any, name: str = "optimizer") -> Iterator[Found]:
        """Each parameter an optimizer (anything with ``param_groups`` and ``state``) updates (:data:`OPTIMIZED`),
        followed by its state (:data:`STATE`). Positions count every parameter of every group, in order:
        ``opt.state[0].exp_avg`` keeps its name when the parameters move."""
        groups, state = list(optimizer.param_groups), optimizer.state
        params = ((g, j, p) for g, group in enumerate(groups) if isinstance(group, dict)
                  for j, p in enumerate(group.get("params", [])))
        for i, (g, j, p) in enumerate(params):
            if not isinstance(p, torch.Tensor):
                continue
            owner = self.parameter_names.get(id(p), "")
            yield Found(f"{name}.param_groups[{g}]['params'][{j}]", p, OPTIMIZED, owner, i)
            for key, value in dict(state.get(p, {}) or {}).items():
                if isinstance(value, torch.Tensor):
                    yield Found(f"{name}.state[{i}].{key}", value, STATE, owner, key)

    # --- the walk ---------------------------------------------------------------------------------

    def _visit(self, value: Any, name: str, depth: int, key: Any, opening: bool, named_keys: bool) -> Iterator[Found]:
        if isinstance(value, torch.Tensor):
            yield from _with_gradient(Found(name, value, TENSOR, "", key))
            return
        kind = _kind(value, opening)
        if kind is None or depth > self.max_depth:
            yield Found(name, value, OTHER, "", key)
            return
        if id(value) in self._opened:
            return
        self._opened.add(id(value))
        if kind == "module":
            yield from self._module(value, name)
        elif kind == "optimizer":
            yield from self.optimizer(value, name)
        else:
            yield from self._items(value, name, depth, opening, named_keys)

    def _items(self, container: Any, name: str, depth: int, opening: bool, named_keys: bool) -> Iterator[Found]:
        mapping = isinstance(container, Mapping)
        if mapping and moves_itself(container):
            yield Found(name, container, BATCH)
        for i, (key, item) in enumerate(container.items() if mapping else enumerate(container)):
            if i >= self.max_items:
                yield Found(f"{name}[...]", len(container) - i, MORE)
                return
            bare = named_keys and mapping and isinstance(key, str) and key.isidentifier()
            yield from self._visit(item, key if bare else f"{name}[{key_text(key)}]", depth + 1, key, opening, False)

    def _module(self, module: nn.Module, name: str) -> Iterator[Found]:
        if not initialised(module):   # super().__init__() never ran: it has only plain attributes
            yield from _attributes(module, name, "", self.max_items)
            return
        prefix = f"{name}." if name else ""
        for pname, p in module.named_parameters():
            self.parameter_names[id(p)] = prefix + pname
            owner, _, attr = pname.rpartition(".")
            yield from _with_gradient(Found(prefix + pname, p, PARAMETER, owner, attr))
        for bname, b in module.named_buffers():
            owner, _, attr = bname.rpartition(".")
            yield Found(prefix + bname, b, BUFFER, owner, attr)
        for path, sub in module.named_modules():
            yield from _attributes(sub, prefix + path if path else name, path, self.max_items)

def walk(value: Any, name: str = "", *, max_depth: int = 4, max_items: int = 500) -> Iterator[Found]:
    """Everything ``value`` holds, named from ``name`` (``""``: the module's own names, ``weight``, ``0.bias``): see
    :meth:`Inventory.walk`. The :class:`Found` come in the order of the module's ``named_parameters()``,
    ``named_buffers()`` and attributes, of the optimizer's groups, and of the containers' items."""
    return Inventory(max_depth, max_items).walk(value, name)


def by_variable(namespace: Mapping[str, Any], first: Iterable[str] = (),
                per_variable: int = 1000) -> Iterator[tuple[str, set[str]]]:
    """``(name, devices)`` for each variable of a namespace that holds tensors (``{"cpu", "meta"}``): the names in
    ``first`` first, then the others in the order of ``namespace``. Names starting with ``_`` are skipped, each value
    is walked with :func:`walk` for at most ``per_variable`` tensors, and one that breaks when walked is left out."""
    variables = dict(list(namespace.items()))
    for name in dict.fromkeys([n for n in first if n in variables] + list(variables)):
        if not isinstance(name, str) or name.startswith("_"):
            continue
        try:
            found = islice(walk(variables[name]), per_variable)
            devices = {str(f.value.device) for f in found if f.role in TENSOR_ROLES}
        except Exception:
            continue
        if devices:
            yield name, devices


def initialised(module: nn.Module) -> bool:
    """Whether ``nn.Module.__init__`` ran on ``module`` (a subclass may forget ``super().__init__()``)."""
    attributes = vars(module)
    return "_parameters" in attributes and "_modules" in attributes


def moves_itself(value: Any) -> bool:
    """A container with a ``.to`` of its own, as a ``BatchEncoding`` (looked up on its type: runs no code of it)."""
    return callable(getattr(type(value), "to", None)) and not isinstance(value, (torch.Tensor, nn.Module))


def key_text(key: Any, limit: int = 40) -> str:
    """A container's key as it is written in a name (``'x'``, ``0``), at most ``limit`` characters; never raises."""
    try:
        text = repr(key) if isinstance(key, str) else reprlib.repr(key)
    except Exception:
        text = f"<{type(key).__name__} object>"
    return shorten(text, limit)


def _kind(value: Any, opening: bool) -> str | None:
    """``"module"``, ``"optimizer"`` or ``"container"``: what a walk opens (``None``: a leaf)."""
    if opening and isinstance(value, nn.Module):
        return "module"
    if opening and isinstance(value, torch.optim.Optimizer):
        return "optimizer"
    return "container" if isinstance(value, (Mapping, list, tuple)) else None


def _with_gradient(found: Found) -> Iterator[Found]:
    """A tensor found, then its gradient (read only where PyTorch keeps one: no warning for other tensors)."""
    yield found
    t = found.value
    if (t.is_leaf or t.retains_grad) and t.grad is not None:
        yield Found(f"{found.name}.grad", t.grad, GRADIENT, found.owner, "grad")


def _attributes(module: nn.Module, name: str, owner: str, max_items: int) -> Iterator[Found]:
    """A module's own plain tensor attributes, and the tensors and modules in its plain lists and dicts
    (``nn.Module``'s own registries and hooks, and other names that start with ``_``, are not looked in)."""
    try:
        attributes = vars(module)
        own = attributes.keys() - _MODULE_INTERNALS
    except TypeError:
        return
    for attr in [a for a in attributes if a in own]:
        value = attributes[attr]
        here = f"{name}.{attr}" if name else attr
        if isinstance(value, torch.Tensor):
            yield from _with_gradient(Found(here, value, PLAIN, owner, attr))
        elif isinstance(value, (list, tuple, dict)) and not attr.startswith("_"):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for i, (key, item) in enumerate(items):
                if i >= max_items:
                    break
                if isinstance(item, torch.Tensor):
                    yield from _with_gradient(Found(f"{here}[{key_text(key)}]", item, PLAIN, owner, key))
                elif isinstance(item, nn.Module):
                    yield Found(f"{here}[{key_text(key)}]", item, UNREGISTERED, owner, key)


#: The attributes ``nn.Module.__init__`` gives every module (its registries, hooks and ``training``).
_MODULE_INTERNALS = frozenset(vars(nn.Module()))
