"""Lesson 07's capstone: a training script with six device bugs, its reference ``Classifier``, and the check that
runs the learner's ``fit`` on the CPU and on the learner's GPU (real or simulated; ``meta`` where none is registered),
names the first bug as a GPU meets it, and counts the bugs left for part marks."""
from __future__ import annotations

import contextlib
import copy
import os
import sys
from typing import Any, Callable, NamedTuple

import torch
import torch.nn.functional as F
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch import nn
from torch.utils._pytree import tree_flatten, tree_map_only

from .. import misconceptions, modes, transfer
from ..inventory import PLAIN, walk
from ..exercises import grader
from ..grading import (OBSERVERS, Crashed, ModesKept, NotAttempted, TimeLimit, Wrong, call, devices_to_test,
                       expect_tensor, gpu_refuses, is_tensor, read_no_data, safe_repr, text_of)
from .l06_mismatch_errors import CONSTANT_AS_PARAMETER, MADE_IN_FORWARD, NO_SUPER_INIT, PLAIN_ATTRIBUTE
# imported first, lesson 07's exercises register before the capstone, as in the course's order
from .l07_sum_batches import MEAN_NOT_SUM, preview

# --- exercise 07.capstone -------------------------------------------------------------------------

class Classifier(nn.Module):
    """Classifies sequences of 8 features into 3 classes; ``fit`` resumes training from a checkpoint."""

    def __init__(self, features=8, classes=3):
        super().__init__()
        self.layer = nn.Linear(features, classes)
        self.register_buffer("mean", torch.zeros(features))      # a buffer: `.to` moves it, the checkpoint fills it

    def forward(self, x):                                         # x: (batch, time steps, features)
        recent = torch.linspace(0.5, 1.0, x.shape[1], device=x.device)   # made where the input is
        pooled = ((x - self.mean) * recent[:, None]).sum(dim=1) / recent.sum()
        return self.layer(pooled)

    def fit(self, batches, device, checkpoint):
        """Resume from ``checkpoint``, take one Adam step per ``(inputs, labels)`` batch on ``device``, and
        return the optimizer and the sum of the losses (a 0-dim tensor on ``device``)."""
        self.load_state_dict(checkpoint["model"])
        self.to(device)                                           # move the model first,
        optimizer = torch.optim.Adam(self.parameters(), lr=0.01)  # then build the optimizer
        optimizer.load_state_dict(checkpoint["optimizer"])        # (its state goes where the parameters are)
        class_weights = torch.tensor([1.0, 2.0, 1.0], device=device)   # class 1 is rare: it counts double
        total = torch.zeros((), device=device)
        for inputs, labels in batches:
            inputs, labels = inputs.to(device), labels.to(device)
            loss = F.cross_entropy(self(inputs), labels, weight=class_weights)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.detach()                                # no .item(): nothing waits, step after step
        return optimizer, total


BATCH_NOT_MOVED = misconceptions.code("07.batch-not-moved")
MADE_IN_FIT = misconceptions.code("07.made-in-fit-without-device")
OPTIMIZER_BEFORE_MOVE = misconceptions.code("07.optimizer-before-move")
OPTIMIZER_NOT_LOADED = misconceptions.code("07.optimizer-state-not-loaded")
LOSS_WEIGHT_ON_CPU = misconceptions.code("07.loss-weight-on-cpu")
READ_EVERY_STEP = misconceptions.code("07.value-read-every-step")
TOTAL_READ_BACK = misconceptions.code("07.total-read-back")
TOTAL_KEEPS_GRAPH = misconceptions.code("07.total-keeps-graph")
CHANGED_ARITHMETIC = misconceptions.code("07.changed-the-arithmetic")
SCRIPT_CHANGED = misconceptions.code("07.script-structure-changed")
UNTRAINED = misconceptions.code("07.fit-skips-training")


_CAPSTONE_STEPS = 4
_LOSS_KERNELS = frozenset({"nll_loss_forward", "nll_loss2d_forward"})   # what `F.cross_entropy` computes the loss with
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OPTIM_DIR = os.path.dirname(torch.optim.__file__) + os.sep
_COURSE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _capstone_batches(gen: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Four batches of 6 sequences (5 time steps, 8 features) with labels 0 to 2, on the CPU."""
    return [(torch.randn(6, 5, 8, generator=gen) + 0.5, torch.randint(0, 3, (6,), generator=gen))
            for _ in range(_CAPSTONE_STEPS)]


def _capstone_checkpoint() -> dict:
    """What the training saved before: the reference model's weights and mean, and Adam's state after a step."""
    gen = torch.Generator().manual_seed(70)
    model = Classifier()
    with torch.no_grad():
        for t in model.state_dict().values():
            t.copy_(torch.randn(t.shape, generator=gen) * 0.5)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    inputs, labels = _capstone_batches(gen)[0]
    F.cross_entropy(model(inputs), labels).backward()
    optimizer.step()
    return {"model": copy.deepcopy(model.state_dict()), "optimizer": copy.deepcopy(optimizer.state_dict())}


class _Mixed(BaseException):
    """Stops the learner's ``fit`` at its first operation that mixes the CPU with the device (as a GPU would)."""


class _Watch(transfer.count_copies):
    """Watches one ``fit``: where each CPU tensor came from (inputs, labels, a plain attribute, made in ``forward`` or
    ``fit``), the operations that mix one with the device's tensors as a GPU refuses (stopped at the first, as a GPU
    stops), and the values read back (``.item()``, and the copies back it counts)."""

    def __init__(self, device: torch.device, batches: list, attributes: dict[int, str], repair: bool = False):
        super().__init__(device, meta_readback=True)
        self.repair = repair        # go on past each mix, the CPU tensors moved, to meet every bug (part marks)
        self.mixes: list[tuple[str, set[str], bool]] = []
        self.labels: dict[int, set[str]] = {}
        self._kept: list[torch.Tensor] = []              # keeps the ids above from being reused
        self.items = self.losses = 0
        for inputs, labels in batches:
            self._label(inputs, {"inputs"})
            self._label(labels, {"labels"})
        for key, name in attributes.items():
            self.labels[key] = {f"attribute:{name}"}

    @property
    def reads(self) -> list[str]:
        """Each value read back from the device, by kind."""
        return [".item()"] * self.items + [".cpu()"] * self.device_to_host

    def _label(self, t: Any, labels: set[str]) -> None:
        if type(t) is torch.Tensor:
            self.labels[id(t)] = set(labels)
            self._kept.append(t)

    @staticmethod
    def _where() -> tuple[str, bool]:
        """("forward" or "fit", whether the optimizer's code runs), from the learner's frames on the stack."""
        place, optimizer = "fit", False
        try:
            frame = sys._getframe(2)
        except ValueError:   # a backward pass on the autograd engine's thread of the device: no learner frames
            return place, optimizer
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.startswith(_OPTIM_DIR):
                optimizer = True
            elif not filename.startswith((_TORCH_DIR, _COURSE_DIR)) and frame.f_code.co_name == "forward":
                place = "forward"
            frame = frame.f_back
        return place, optimizer

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        for t in tensors:
            if t.device.type == "cpu" and id(t) not in self.labels:
                self._label(t, {self._where()[0]})
        on_device = any(t.device.type == self.device.type for t in tensors)
        if gpu_refuses(func, args, kwargs, self.device.type):
            cpu = [t for t in tensors if t.device.type == "cpu"]
            culprits = [t for t in cpu if t.dim() > 0] or cpu
            if culprits:
                labels = set().union(*(self.labels.get(id(t), set()) for t in culprits))
                self.mixes.append((name, labels, self._where()[1]))
                if not self.repair:
                    raise _Mixed()
                moved = {id(t): t.to(self.device) for t in culprits}
                args, kwargs = tree_map_only(torch.Tensor, lambda a: moved.get(id(a), a), (args, kwargs))
                tensors = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        self.losses += name in _LOSS_KERNELS
        if name == "_local_scalar_dense" and on_device:
            self.items += 1
            if self.device.type == "meta":       # no data: go on with a zero, only the count matters
                dtype = args[0].dtype
                return False if dtype == torch.bool else 0.0 if dtype.is_floating_point else 0
        out = super().__torch_dispatch__(func, types, args, kwargs)   # counts (and on `meta` fakes) copies back
        labels = set().union(*(self.labels.get(id(t), set()) for t in tensors if t.device.type == "cpu"))
        for o in tree_flatten(out)[0]:
            if type(o) is torch.Tensor and o.device.type == "cpu" and id(o) not in self.labels:
                self._label(o, labels or {self._where()[0]})
        return out


def _plain_attributes(model: nn.Module) -> dict[int, str]:
    """id -> name of every plain tensor attribute of ``model`` and its submodules (:mod:`course_utils.inventory`)."""
    return {id(found.value): found.name for found in walk(model) if found.role == PLAIN}


def _mix_feedback(op: str, labels: set[str], in_optimizer: bool, device: torch.device) -> tuple[str, str]:
    """What the first operation that mixed the CPU with ``device`` says, and the code of the bug it names."""
    on = f"on `{device}`"
    attributes = sorted(label.split(":", 1)[1] for label in labels if label.startswith("attribute:"))
    if in_optimizer:
        return (f"Bug: the optimizer's state. `optimizer.step()` mixed CPU tensors with your parameters {on} "
                f"(in `{op}`): the state loaded from the checkpoint (Adam's running averages) stayed on the CPU, "
                "because it was loaded while the parameters were still there. Move the model first, then build "
                "the optimizer and load its state: `optimizer.load_state_dict` puts each state tensor where its "
                "parameter is at that moment. `cu.show_devices(self, optimizer)` shows where each "
                "state tensor lives.", OPTIMIZER_BEFORE_MOVE)
    if "inputs" in labels:
        return (f"Bug: an input never moved. Your model's weights are {on}, but each batch's `inputs` are still "
                f"on the CPU when they reach them (`{op}` got both). Move each batch inside the loop: "
                "`inputs = inputs.to(device)`, and the labels with it. (`cu.explain_devices(self, inputs)` lists "
                "where every weight and input lives.)", BATCH_NOT_MOVED)
    if "labels" in labels:
        return (f"Bug: the labels never moved. The model's output is {on}, but each batch's `labels` are still "
                f"on the CPU when the loss compares them (`{op}` got both). Move them with the "
                "inputs: `labels = labels.to(device)`.", BATCH_NOT_MOVED)
    if attributes:
        name = attributes[0]
        return (f"Bug: a plain tensor attribute. `self.{name}` is a tensor stored with `self.{name} = ...`: "
                "`self.to(device)` moves parameters and buffers, not plain attributes, so it stayed on the CPU "
                f"and met tensors {on} in `forward` (in `{op}`). Register it as a buffer in "
                f"`__init__`: `self.register_buffer(\"{name}\", torch.zeros(features))`. A buffer also goes into "
                f"`state_dict()`, so the checkpoint's `{name}` loads into it. (`cu.explain_devices(self)` lists "
                "plain attributes apart from buffers.)", PLAIN_ATTRIBUTE)
    if "forward" in labels:
        return (f"Bug: a tensor made in `forward` without a device. A factory call such as `torch.linspace(...)`, "
                "`torch.ones(...)` or `torch.arange(...)` makes its tensor on the CPU (the default device), "
                f"whatever device the input is on, and `{op}` then mixed it with tensors {on}. Make it "
                "where the input is: pass `device=x.device`.", MADE_IN_FORWARD)
    if "loss" in op:
        return (f"Bug: the loss weight. The class weights you give the loss (`weight=...`) are on the CPU: "
                f"`torch.tensor([...])` makes them there, and `{op}` mixed them with the model's output {on}. "
                "Make them on the device once, before the loop: `torch.tensor([...], device=device)`.",
                LOSS_WEIGHT_ON_CPU)
    return (f"A tensor that `fit` made without a device is on the CPU, and `{op}` mixed it with tensors {on}. "
            "Make tensors on the device you are given (`device=device`), or move them once before the loop.",
            MADE_IN_FIT)


class _Run(NamedTuple):
    """One run of the learner's ``fit``: the model, what ``fit`` returned (None where it stopped at a mix), the watch,
    and the optimizer steps it took on the model's own parameters right after a backward pass."""
    model: nn.Module
    got: Any
    watcher: _Watch | None
    steps: int


def _run_fit(cls: type, device: torch.device, batches: list, checkpoint: dict, label: str,
             watch: bool, repair: bool = False) -> _Run:
    """Build the learner's model on the CPU and run its ``fit`` on ``device`` (``repair``: a watch that goes on past
    each mix, the CPU tensors moved, to meet every bug; where the run then fails, it stops at the mixes met)."""
    model = call(cls, context="Classifier()")
    if not issubclass(type(model), nn.Module) or "_parameters" not in vars(model):
        raise Wrong(f"`Classifier()` gave {safe_repr(model)}, not a working nn.Module. Keep "
                    "`class Classifier(nn.Module):` and `super().__init__()` at the start of `__init__`.",
                    NO_SUPER_INIT if issubclass(type(model), nn.Module) else SCRIPT_CHANGED)
    params = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
    if params != [("layer.weight", (3, 8)), ("layer.bias", (3,))]:
        names = ", ".join(f"`{n}` {s}" for n, s in params) or "none"
        raise Wrong(f"`Classifier()` should have exactly the parameters of `self.layer = nn.Linear(8, 3)`; it has "
                    f"{names}. Keep the model as given: the checkpoint holds those weights. The mean is a constant, "
                    "not a parameter: a buffer (`self.register_buffer(...)`).",
                    CONSTANT_AS_PARAMETER if any(n == "mean" for n, _ in params) else SCRIPT_CHANGED)
    fit = getattr(model, "fit", None)
    if not callable(fit):
        raise Wrong("Your `Classifier` has no `fit` method: keep `def fit(self, batches, device, checkpoint):`.",
                    SCRIPT_CHANGED)
    keys = set(model.state_dict())
    checkpoint = {"model": {k: v for k, v in checkpoint["model"].items() if k in keys},
                  "optimizer": checkpoint["optimizer"]}
    watcher = _Watch(device, batches, _plain_attributes(model), repair) if watch else None
    context, swap = f"{label} on {device}", torch.__future__.get_swap_module_params_on_conversion()
    steps, given = [], copy.deepcopy((batches, device, checkpoint)) if OBSERVERS else None   # fit may change them

    def count_step(optimizer: Any, *_: Any) -> None:   # a step of the model's own parameters, each with a gradient
        steps.append(not _not_the_models(model, optimizer) and all(p.grad is not None for p in model.parameters()))
    # `.to` keeps each Parameter object on `meta` too, as it does on a GPU: an optimizer built before the move trains
    torch.__future__.set_swap_module_params_on_conversion(swap or device.type == "meta")
    hook = register_optimizer_step_post_hook(count_step)
    try:
        with ModesKept(), watcher or contextlib.nullcontext():
            got = fit(batches, device, checkpoint)
    except _Mixed:
        got = None
    except NotImplementedError as e:
        raise (read_no_data(e, context) or NotAttempted()) from None
    except (KeyboardInterrupt, TimeLimit):
        raise
    except BaseException as e:
        text = text_of(e)
        if watcher is not None and watcher.mixes:   # failed past a mix it went on from: the mixes met say it
            watcher.repair, got = False, None
        elif isinstance(e, RuntimeError) and "state_dict" in text and ("Missing key" in text
                                                                       or "Unexpected key" in text):
            raise Wrong(f"With {context}, loading the checkpoint failed: {safe_repr(text, 200)}. The checkpoint "
                        "holds `layer.weight`, `layer.bias` and the buffer `mean`: keep those names.",
                        SCRIPT_CHANGED) from None
        else:
            raise Crashed(e, context) from None
    finally:
        hook.remove()
        torch.__future__.set_swap_module_params_on_conversion(swap)
    for observe in OBSERVERS if got is not None else ():   # as :func:`call` does (the students' public examples)
        observe(fit, given, {}, got, context)
    return _Run(model, got, watcher, sum(steps))


def _named_mix(run: _Run, device: torch.device, label: str) -> None:
    """The first operation of ``run`` that mixed the CPU with ``device``, named as the bug a GPU stops at."""
    if run.watcher is not None and run.watcher.mixes:
        message, code = _mix_feedback(*run.watcher.mixes[0], device)
        raise Wrong(f"With {label} on {device}: " + message, code)


def _trained(run: _Run, device: torch.device, checkpoint: dict) -> bool:
    """Whether ``run`` did the script's work: an optimizer step of the model's parameters and a loss (where watched)
    per batch, and, where the device holds values, parameters that changed from the checkpoint's."""
    if run.steps != _CAPSTONE_STEPS or (run.watcher is not None and run.watcher.losses < _CAPSTONE_STEPS):
        return False
    if device.type == "meta":
        return True
    try:
        start = checkpoint["model"]["layer.weight"]
        return not torch.equal(run.model.layer.weight.detach().cpu(), start)
    except Exception:
        return False


def _check_trained(run: _Run, device: torch.device, checkpoint: dict, label: str) -> None:
    if not _trained(run, device, checkpoint):
        raise Wrong(f"With {label} on {device}, `fit` did not do the training: it should compute a loss and take an "
                    f"optimizer step for each of the {_CAPSTONE_STEPS} batches, on whatever device it is given. Keep "
                    "the script's loop and fix where its tensors live; no branch may skip the work on a device.",
                    UNTRAINED)


def _check_fit(run: _Run, device: torch.device, checkpoint: dict, label: str) -> torch.Tensor:
    """Everything about one run but the values: what fit returned, the optimizer, the work done, reads, the total
    (returned), plain attributes."""
    model, got = run.model, run.got
    if type(got) not in (tuple, list) or len(got) != 2:
        raise Wrong(f"With {label} on {device}, `fit` returned {safe_repr(got)}; return two things: "
                    "`return optimizer, total`.", misconceptions.WRONG_TYPE)
    optimizer, total = got
    if not issubclass(type(optimizer), torch.optim.Optimizer):
        raise Wrong(f"With {label} on {device}, the first thing `fit` returned is {safe_repr(optimizer)}, not the "
                    "optimizer: `return optimizer, total`.", misconceptions.WRONG_TYPE)
    _check_optimizer(model, optimizer, device, label, trained=lambda: _check_trained(run, device, checkpoint, label))
    _check_reads(run.watcher, device)
    total = _check_total(total, device, label)
    _check_no_plain_attribute(model)
    return total


def _not_the_models(model: nn.Module, optimizer: torch.optim.Optimizer) -> bool:
    """Whether ``optimizer`` holds other parameters than the model's. Built before the move it holds the model's:
    `Module.to` keeps each Parameter object (on a GPU, and here on `meta`), and state loaded after the move lies
    where they are, so that order trains as well as move, build, load (lesson 03)."""
    held = [p for group in optimizer.param_groups for p in group["params"]]
    params = list(model.parameters())
    return len(held) != len(params) or any(not any(h is p for p in params) for h in held)


def _check_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer, device: torch.device, label: str,
                     trained: Callable[[], None]) -> None:
    """The optimizer trains the model's parameters, ``trained()`` (that it did, batch by batch), its state was loaded
    from the checkpoint (not only this run's steps), and that state lies on ``device``."""
    try:
        params, state = list(model.parameters()), optimizer.state
        before = _not_the_models(model, optimizer)
    except Exception:
        raise Wrong(f"With {label} on {device}, the optimizer you returned cannot be read (its `param_groups` "
                    "or `state`). Return the `torch.optim.Adam` that `fit` trained with.",
                    misconceptions.ODD_ANSWER) from None
    if before:
        raise Wrong("Bug: the optimizer does not hold your model's parameters, so its steps do not train the model "
                    "`fit` returns. Build it from `self.parameters()` once the model is where it trains: move the "
                    "model, then build the optimizer, then load its state. (`cu.show_devices(self, optimizer)` shows "
                    "where both live.)", OPTIMIZER_BEFORE_MOVE)
    trained()
    moments = [(n, t) for p in params for n, t in (state.get(p) or {}).items()
               if is_tensor(t) and n != "step"]
    if not moments:
        raise Wrong(f"With {label} on {device}, the optimizer has no state: load it from the checkpoint "
                    "(`optimizer.load_state_dict(checkpoint[\"optimizer\"])`) after building it.", OPTIMIZER_NOT_LOADED)
    try:
        steps = {float(state[p]["step"]) for p in params if "step" in (state.get(p) or {})}
    except Exception:
        steps = set()
    if steps == {float(_CAPSTONE_STEPS)}:
        raise Wrong(f"With {label} on {device}, the optimizer counted only your {_CAPSTONE_STEPS} steps: its state "
                    "from the checkpoint was never loaded, so training did not resume. Load it after building the "
                    "optimizer: `optimizer.load_state_dict(checkpoint[\"optimizer\"])`.", OPTIMIZER_NOT_LOADED)
    astray = sorted({f"{n} on {t.device}" for n, t in moments if t.device.type != device.type})
    if astray:
        raise Wrong(f"Bug: the optimizer's state. Your parameters are on `{device}`, but Adam's state is not: "
                    f"{', '.join(astray)}. Load the state after the move, into an optimizer built after it: "
                    "`optimizer.load_state_dict` puts each state tensor where its parameter is at that moment.",
                    OPTIMIZER_BEFORE_MOVE)


def _check_reads(watcher: _Watch | None, device: torch.device) -> None:
    """At most one value read back from the device during the run (none watched on the CPU)."""
    if watcher is not None and len(watcher.reads) > 1:
        kinds = ", ".join(sorted(set(watcher.reads)))
        raise Wrong(f"Bug: a value read every step. During {_CAPSTONE_STEPS} steps on `{device}`, your `fit` read "
                    f"{len(watcher.reads)} values back from the device ({kinds}). `loss.item()` (and `float(loss)`, "
                    "`print(loss)`, `.cpu()`, `.tolist()`) makes the CPU wait for the GPU to finish everything queued, "
                    "then copies the value: at every step the CPU stops running ahead. Keep the running total on the "
                    "device: start from `torch.zeros((), device=device)`, add `loss.detach()`, and return it.",
                    READ_EVERY_STEP)


def _check_total(total: Any, device: torch.device, label: str) -> torch.Tensor:
    """The total loss ``fit`` returned: a 0-dim tensor on ``device`` that keeps no autograd graph."""
    if not is_tensor(total):
        why = (" That `.item()` (or `float`) is a wait on a GPU; keep the total a tensor on the device."
               if type(total) in (float, int) else "")
        raise Wrong(f"With {label} on {device}, the total loss you returned is {safe_repr(total)} "
                    f"({type(total).__name__}), not a 0-dim tensor on `{device}`.{why} Start from "
                    "`torch.zeros((), device=device)` and add `loss.detach()` each step.",
                    TOTAL_READ_BACK if type(total) in (float, int) else misconceptions.NOT_A_TENSOR)
    total = expect_tensor(total, f"With {label} on {device}, the total loss")
    if total.dim() != 0 or total.device.type != device.type:
        raise Wrong(f"With {label} on {device}, the total loss should be a 0-dim tensor on `{device}`; yours is "
                    f"{safe_repr(total)}. Keep it on the device, and return it without `.item()` or `.cpu()`.",
                    TOTAL_READ_BACK if total.device.type != device.type else misconceptions.WRONG_SHAPE)
    if total.requires_grad:
        raise Wrong(f"With {label} on {device}, your total requires grad: `total += loss` keeps every step's "
                    "autograd graph alive. Add `loss.detach()`, the value without the graph.", TOTAL_KEEPS_GRAPH)
    return total


def _check_no_plain_attribute(model: nn.Module) -> None:
    """No plain tensor attribute on the model: ``.to`` leaves it behind and the checkpoint never fills it."""
    plain = [name for name in _plain_attributes(model).values()]
    if plain:
        raise Wrong(f"Bug: a plain tensor attribute. `self.{plain[0]}` is a plain tensor attribute: `.to(device)` "
                    "does not move it and `state_dict()` does not save it, so the checkpoint's value never loads. "
                    f"Register it as a buffer: `self.register_buffer(\"{plain[0]}\", torch.zeros(features))`.",
                    PLAIN_ATTRIBUTE)


def _check_capstone_values(model: nn.Module, total: torch.Tensor, want_model: nn.Module, want_total: torch.Tensor,
                  device: torch.device) -> None:
    got_state, want_state = model.state_dict(), want_model.state_dict()
    for key, want in want_state.items():
        got = got_state.get(key)
        if not is_tensor(got):
            raise Wrong(f"After `fit` on {device}, your model has no `{key}`; keep the names of the given script.",
                        SCRIPT_CHANGED)
        got = expect_tensor(got, f"`{key}`")
        if got.shape != want.shape or not torch.allclose(got.detach().float().cpu(), want.float().cpu(),
                                                         rtol=1e-4, atol=1e-5):
            raise Wrong(f"After `fit` on {device}, `{key}` differs from the reference's (expected "
                        f"{preview(want)}, got {preview(got)}). Fix the devices, not the arithmetic: keep "
                        "the model, the loss, its weights and the optimizer of the given script.", CHANGED_ARITHMETIC)
    got_total, want_total = total.detach().float().cpu(), want_total.detach().float().cpu()
    if not torch.allclose(got_total, want_total, rtol=1e-4, atol=1e-5):
        mean = " It looks like the mean of the losses; return their sum." if torch.allclose(
            got_total * _CAPSTONE_STEPS, want_total, rtol=1e-4, atol=1e-5) else ""
        raise Wrong(f"After `fit` on {device}, the total loss is {got_total.item():.6g}; the reference's is "
                    f"{want_total.item():.6g}.{mean}", MEAN_NOT_SUM if mean else misconceptions.WRONG_VALUE)


#: Hints that answer what the last check said (``course_utils.hint``, the Hint button show it first).
HINT_FOR = {
    "07.capstone": {
        misconceptions.NOT_ATTEMPTED: "Delete the `raise NotImplementedError` line, run the cell and check: the "
                                      "check then runs the script and stops at its first bug, as a GPU would, "
                                      "and names it. Six bugs hide in the script; fix one at a time.",
    },
}


@grader("07.capstone", points=12, reference=Classifier, title="Capstone: a training script with device bugs", hints=(
    "Six bugs hide in the script; fix one at a time. The check stops at the first bug, as a GPU would, and "
    "names it (it runs the script only once the `raise NotImplementedError` line is gone). Or run the script "
    "yourself on `target` in the cell below it: the error appears where a GPU raises it, and "
    "`cu.explain_error()` explains it.",
    "Ask the course's tools where things live: `cu.explain_devices(model, inputs)` lists every parameter, buffer, "
    "plain attribute and input with its device; `cu.show_devices(model, optimizer)` maps the optimizer's state "
    "too; `transfer.count_copies(target)` counts the copies (and a value read back each step).",
    "The six: move `inputs` and `labels` in the loop; `device=x.device` for the tensor made in `forward`; "
    "`self.register_buffer(\"mean\", ...)` for the plain attribute; `self.to(device)` before building the "
    "optimizer and loading its state; `device=device` for the loss's class weights; and a total kept on the "
    "device (`total = torch.zeros((), device=device)`, `total += loss.detach()`) instead of `.item()` every step.",
))
def _grade_capstone(cls: type) -> str:
    if not issubclass(cls, nn.Module):
        raise Wrong("`Classifier` should subclass `nn.Module`: keep `class Classifier(nn.Module):`.", SCRIPT_CHANGED)
    runs: list[_Run] = []
    try:
        return _capstone_verdict(cls, runs)
    except Wrong as wrong:   # part marks: BUG_POINTS for each of the six bugs fixed, counted from the same runs
        left = _bugs_left(cls, runs) | ({wrong.code} & CAPSTONE_BUGS)
        wrong.earned = BUG_POINTS * (len(CAPSTONE_BUGS) - len(left))
        wrong.also = tuple(sorted(left - {wrong.code}))   # every bug left counts in the class report
        if modes.assessed():   # the feedback names the bug, not its fix: say how many remain
            raise Wrong(f"{wrong} Bugs left: {len(left)} of {len(CAPSTONE_BUGS)}.", wrong.code,
                        earned=wrong.earned, also=wrong.also) from None
        raise


#: The capstone's six bugs, by the code of the misconception each one is, and the points each is worth.
CAPSTONE_BUGS = frozenset({BATCH_NOT_MOVED, PLAIN_ATTRIBUTE, MADE_IN_FORWARD, LOSS_WEIGHT_ON_CPU,
                           OPTIMIZER_BEFORE_MOVE, READ_EVERY_STEP})
BUG_POINTS = 2


def _fresh(seed: int, checkpoint: dict) -> tuple[list, dict]:
    """The capstone's batches (drawn from ``seed``) and a copy of ``checkpoint``."""
    return _capstone_batches(torch.Generator().manual_seed(seed)), copy.deepcopy(checkpoint)


def _reference(device: torch.device, seed: int, checkpoint: dict) -> tuple[nn.Module, torch.Tensor]:
    """The reference's model and total after ``fit`` on ``device``."""
    model = Classifier()
    _, total = model.fit(*_fresh(seed, checkpoint)[:1], device, copy.deepcopy(checkpoint))
    return model, total


def _trains_as_the_script(model: nn.Module, total: Any, checkpoint: dict) -> bool:
    """Whether ``fit`` on the CPU (where no device bug shows) gave the reference's weights and total: as given, or with
    `mean` never loaded (its zeros), which is what the plain-attribute bug does there."""
    cpu = torch.device("cpu")
    unloaded = copy.deepcopy(checkpoint)
    unloaded["model"]["mean"] = torch.zeros_like(unloaded["model"]["mean"])
    got = [t.detach().float() for t in model.parameters()] + [torch.as_tensor(
        total.detach() if is_tensor(total) else float(total)).float().cpu()]
    for saved in (checkpoint, unloaded):
        want_model, want_total = _reference(cpu, 1, saved)
        want = [t.detach().float() for t in want_model.parameters()] + [want_total.detach().float()]
        if len(got) == len(want) and all(g.shape == w.shape and torch.allclose(g.cpu(), w, rtol=1e-4, atol=1e-5)
                                         for g, w in zip(got, want)):
            return True
    return False


def _bugs_left(cls: type, runs: list[_Run]) -> set[str]:
    """The six bugs a failed answer still has, from the verdict's runs (on the CPU, then on the device going on past
    every mix) and one more on the device with the batches moved for it (what else mixes): all six unless each run
    did the script's work, and the CPU's as the script does."""
    checkpoint, (cpu, dev), label = _capstone_checkpoint(), devices_to_test(), f"{_CAPSTONE_STEPS} batches"
    try:
        (model, got, _, _), moved = runs
        if not (_trained(runs[0], cpu, checkpoint) and _trained(moved, dev, checkpoint)
                and type(got) in (tuple, list) and len(got) == 2 and _trains_as_the_script(model, got[1], checkpoint)):
            return set(CAPSTONE_BUGS)
        batches, saved = _fresh(2, checkpoint)
        batches = [(inputs.to(dev), labels.to(dev)) for inputs, labels in batches]
        run = _run_fit(cls, dev, batches, saved, label, watch=True, repair=True)
        if run.got is None or not _trained(run, dev, checkpoint):
            return set(CAPSTONE_BUGS)
        optimizer, model, watcher = run.got[0], run.model, run.watcher
        stale = _not_the_models(model, optimizer) or any(
            t.device.type != dev.type for p in model.parameters() for t in (optimizer.state.get(p) or {}).values()
            if is_tensor(t) and t.dim())
    except (Exception, TimeLimit):   # a crash, a stub, changed arithmetic, out of time: no part to mark
        return set(CAPSTONE_BUGS)
    left = {_mix_feedback(*mix, dev)[1] for mix in watcher.mixes}
    left |= {BATCH_NOT_MOVED} if any({"inputs", "labels"} & labels for _, labels, _ in moved.watcher.mixes) else set()
    left |= {PLAIN_ATTRIBUTE} if _plain_attributes(model) else set()
    left |= {OPTIMIZER_BEFORE_MOVE} if stale else set()
    left |= {READ_EVERY_STEP} if len(watcher.reads) > 1 else set()
    return left & CAPSTONE_BUGS


def _capstone_verdict(cls: type, runs: list[_Run]) -> str:
    """The capstone's check: the first bug named as a GPU meets it, or "Right" when all six are fixed. Its runs are
    kept in ``runs``, for the part marks."""
    checkpoint, (cpu, dev), label = _capstone_checkpoint(), devices_to_test(), f"{_CAPSTONE_STEPS} batches"
    runs.append(_run_fit(cls, cpu, *_fresh(1, checkpoint), label, watch=False))      # the stub stops here
    # then on the learner's GPU (real or simulated): the bugs are named as they show there
    runs.append(_run_fit(cls, dev, *_fresh(2, checkpoint), label, watch=True, repair=True))
    _named_mix(runs[1], dev, label)
    total = _check_fit(runs[1], dev, checkpoint, label)
    if dev.type != "meta":   # no values to compare on the data-less device
        _check_capstone_values(runs[1].model, total, *_reference(dev, 2, checkpoint), dev)
    total = _check_fit(runs[0], cpu, checkpoint, label)
    _check_capstone_values(runs[0].model, total, *_reference(cpu, 1, checkpoint), cpu)
    return (f"Right: all six bugs fixed. On {cpu} and {dev}, `fit` moves each batch, keeps every tensor it makes on "
            "the device, holds `mean` as a buffer, loads the optimizer's state after the move, and reads nothing "
            "back while it trains; the weights and the total loss match the reference's.")


__all__ = ["Classifier"]
