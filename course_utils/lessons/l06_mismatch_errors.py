"""Lesson 06 - device-mismatch errors: read them, reproduce them, find the tensor, fix it: 06.scaler (a
constant that follows the model); 06.find_mismatches is in :mod:`course_utils.lessons.l06_find_mismatches`."""
from __future__ import annotations

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from .. import misconceptions
from ..inventory import BUFFER, PARAMETER, PLAIN, walk
from ..exercises import grader
from ..grading import Crashed, Wrong, a_tensor, call, describe, expect_tensor, gpu_refuses, safe_repr, target_device

# --- exercise 06.scaler ----------------------------------------------------------------------

NO_SUPER_INIT = misconceptions.code("06.no-super-init")
CONSTANT_AS_PARAMETER = misconceptions.code("06.constant-as-parameter")
FROZEN_PARAMETER = misconceptions.code("06.frozen-parameter-as-constant")
PLAIN_ATTRIBUTE = misconceptions.code("06.plain-tensor-attribute")
CONSTANT_PLACED = misconceptions.code("06.constant-placed-in-init")
PLAIN_NUMBER = misconceptions.code("06.plain-number-for-constant")
OVERRODE_TO = misconceptions.code("06.overrode-module-to")
MADE_IN_FORWARD = misconceptions.code("06.tensor-made-in-forward")
OUTPUT_MOVED = misconceptions.code("06.output-off-input-device")


class Scaler(nn.Module):
    """Multiplies its input by a constant vector of ``features`` twos; the constant follows ``.to``."""

    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return x * self.scale


def _held_tensors(module: nn.Module) -> list[tuple[str, str, torch.Tensor]]:
    """(kind, name, tensor) for every tensor a module holds (:func:`course_utils.inventory.walk`): parameters,
    buffers, plain attributes (also in plain lists and dicts); each as a plain tensor (a tensor class of the
    learner's own fails, see :func:`expect_tensor`)."""
    return [(f.role, f.name, expect_tensor(f.value, f"The {f.role} `{f.name}`")) for f in walk(module)
            if f.role in (PARAMETER, BUFFER, PLAIN)]


def _build(cls: type, features: int) -> nn.Module:
    try:
        module = call(cls, features, context=f"Scaler({features})")
    except Crashed as e:
        text = str(e.error)
        if isinstance(e.error, AttributeError) and any(
                part in text for part in ("before Module.__init__() call", "_parameters", "_buffers", "_modules")):
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
            raise Wrong(f"Scaler({features}) has a parameter ({names}). Even with requires_grad=False it is still a "
                        "parameter: it shows up in `model.parameters()`, goes to the optimizer and counts as a model "
                        "weight. A constant is a buffer: `self.register_buffer(...)`.", FROZEN_PARAMETER)
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
    where = target_device()
    _check_on(cls, where, gen)
    if not held:
        return (f"Right: your Scaler makes its twos in `forward`, on the input's device, so it runs on the CPU "
                f"and on {where}. That is correct device handling; the other way, a buffer registered in "
                "`__init__` (`self.register_buffer`), makes the constant once and lets `.to` move it.")
    return ("Right: your Scaler multiplies by twos, holds its constant as a buffer (not trainable), and "
            f"after `.to(...)` lives and runs on {where}.")


class _ForwardWatch(TorchDispatchMode):
    """Watches one forward call. Records the operations that mix the input's device with another as a GPU refuses
    them (:func:`gpu_refuses`: ``meta``'s own kernels let some through, e.g. ``mm`` with a CPU operand), and the
    shapes of the tensors forward uses that it did not compute from the input (its constants)."""

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
        if gpu_refuses(func, args, kwargs, self.device_type):
            self.mixes.append((name, next(t for t in tensors if t.device.type != self.device_type)))
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
    target = target_device()
    moved = f"Scaler({features}).to(\"{target}\")"
    try:
        call(module.to, target, context=moved)
        where = next((t.device for k, n, t in _held_tensors(module) if n == name), None)
    except (Crashed, Wrong):
        where = None
    after = f" After `{moved}` it is still on {where}:" if where is not None and where.type != target.type else ""
    return (f"`{name}` is a plain tensor attribute.{after} `Module.to` moves only parameters, buffers and "
            "submodules, so on a GPU this constant would stay behind on the CPU and forward would fail. "
            "Register it with `self.register_buffer(...)`.")


def _check_values(module: nn.Module, features: int, gen: torch.Generator) -> None:
    for shape, dtype in (((features,), torch.float32), ((4, features), torch.float32),
                         ((2, 3, features), torch.float64)):
        x = torch.randn(shape, generator=gen, dtype=dtype)
        original = x.clone()
        out = expect_tensor(call(module, x, context=f"{a_tensor(x)}"), f"Scaler({features})(x) for x {a_tensor(x)}")
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
    if watch.mixes:  # the data-less device let it through; a GPU would not
        op, other = watch.mixes[0]
        raise Wrong(f"After `.to(\"{dev}\")`, your Scaler's forward, given {a_tensor(x)}, sent `{op}` a "
                    f"{describe(other)}. That ran here, but a GPU refuses it (\"Expected all tensors to be on the same "
                    f"device\"). Something in `forward` is not on {dev}: a tensor created there with no device (e.g. "
                    "`torch.full(...)` or `torch.diag(...)` inside forward) lands on the CPU. Register the constant as "
                    "a buffer in `__init__`, or create it with `device=x.device`.", MADE_IN_FORWARD)
    out = expect_tensor(out, f"Your Scaler's output for {a_tensor(x)}")
    if out.device != x.device:
        raise Wrong(f"For an input on {x.device} your output is on {out.device}: return it where the input is.",
                    OUTPUT_MOVED)
    if out.shape != x.shape:
        raise Wrong(f"For {a_tensor(x)} your output has shape {tuple(out.shape)}.", misconceptions.WRONG_SHAPE)
    if dev.type != "meta" and not torch.allclose(out.cpu(), x.cpu() * 2):
        raise Wrong(f"On {dev} your Scaler does not double its input.", misconceptions.WRONG_VALUE)
