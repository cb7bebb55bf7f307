"""The error catalogue: paste an error, get its cause, its fix and the lesson that teaches it.

::

    import course_utils as cu
    cu.explain_error(error)          # an exception, or the text you copied: one line or a whole traceback
    cu.explain_error(text).known     # False for anything the course does not teach; it never guesses

:data:`FAMILIES` is the one source for everything the course says about these errors: the
explainer reads it, ``scripts/error_index.py`` turns it into ``docs/errors.md``, the tests check
every wording in it. A family whose words depend on the message (the devices, the argument, the
type it names) carries its own ``tailor``, so a new family is one entry. :data:`LESSONS` says which
lesson section teaches each family; families no lesson teaches yet point to the appendix
:data:`FIELD_GUIDE`.

Every :class:`Wording` is a message exactly as PyTorch prints it, with the PyTorch versions that
print it and where that was checked (a build's string table, PyTorch's source, a real run). What
only a GPU or a Mac prints, and was not run on one, says so. This module imports nothing from the
rest of the package but the bottom floor's :mod:`course_utils.text`, so any part of it (``setup``
included) may use it.
"""
from __future__ import annotations

import html
import re
import sys
import traceback
import urllib.parse
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

from .text import card, code_html, shorten

__all__ = ["explain_error", "last_error", "Explanation", "Family", "Reading", "Wording", "FAMILIES", "LESSONS",
           "FIELD_GUIDE", "family"]

#: The appendix for problems no lesson teaches yet.
FIELD_GUIDE = "08_field_guide"

#: Family key -> (notebook, section) that teaches it. Update here when a lesson starts teaching one.
LESSONS: dict[str, tuple[str, str]] = {
    "devices": ("06_mismatch_errors", "1. Meet the error"),
    "no-kernel": ("06_mismatch_errors", "1. Meet the error"),
    "data-parallel": (FIELD_GUIDE, "Going further (optional) › DataParallel wants the model on `cuda:0` first"),
    "optimizer-state": ("06_mismatch_errors", "6. Optimizer state"),
    "cuda-oom": (FIELD_GUIDE, "CUDA out of memory"),
    "mps-oom": (FIELD_GUIDE, "Going further (optional) › MPS out of memory"),
    "numpy": ("03_to_device", "8. NumPy lives on the CPU"),
    "numpy-grad": ("03_to_device", "8. NumPy lives on the CPU"),
    "no-to": ("03_to_device", "7. Batches with structure"),
    "no-device": ("05_device_attribute", "4. A model has no `.device`"),
    "module-init": ("03_to_device", "Pitfalls"),
    "device-assert": (FIELD_GUIDE, "Device-side asserts"),
    "label-range": (FIELD_GUIDE, "Device-side asserts"),
    "module-prefix": (FIELD_GUIDE, "Checkpoints from DataParallel / DDP"),
    "fork": (FIELD_GUIDE, "CUDA in DataLoader workers"),
    "kernel-image": (FIELD_GUIDE, "A PyTorch built for other GPUs"),
    "mps-op": (FIELD_GUIDE, "Operators MPS lacks"),
    "index-device": ("06_mismatch_errors", "Going further (optional) › Indexing with an index on another device"),
    "mps-float64": ("04_cuda", "Going further (optional) › Apple's GPU (MPS) is not CUDA"),
    "lengths": (FIELD_GUIDE, "Going further (optional) › Sequence lengths stay on the CPU"),
    "no-cuda": ("04_cuda", "1. `.cuda()`: a shortcut that only knows CUDA"),
    "ordinal": ("04_cuda", "Going further (optional) › `CUDA_VISIBLE_DEVICES`: GPUs renumbered"),
    "map-location": (FIELD_GUIDE, "Loading a GPU checkpoint without a GPU"),
    "weights-only": ("06_mismatch_errors",
                     "Going further (optional) › Checkpoints: safe loading, and big models without memory"),
    "pin": ("07_transfer_cost", "4. Pinned memory and `non_blocking`"),
    "no-accelerator": ("07_transfer_cost", "4. Pinned memory and `non_blocking`"),
    "op-devices": ("06_mismatch_errors", "1. Meet the error"),
    "cpu-scalars": ("06_mismatch_errors", "7. Where PyTorch does move a tensor for you"),
    "addcmul-scalar": ("06_mismatch_errors", "Going further (optional) › Operations that refuse the 0-dim pass"),
    "leaf": ("03_to_device", "Going further (optional) › Training a tensor you moved"),
    "sync-debug": ("07_transfer_cost", "Going further (optional) › Let PyTorch point at every synchronisation"),
    "generator": (FIELD_GUIDE, "Going further (optional) › Default devices, samplers and generators"),
    "meta-data": ("06_mismatch_errors",
                  "Going further (optional) › Checkpoints: safe loading, and big models without memory"),
}

_DEV = r"[A-Za-z_]+(?::\d+)?"          # cpu, cuda:0, mps, meta, xpu:1 ...

# How the versions were checked, in the words the catalogue uses (see docs/errors.md):
#: a format string or source file found in the CUDA wheels of 2.7, 2.8 and 2.14 and the CPU build of 2.13
_ALL = "2.7, 2.8, 2.13 and 2.14 (all checked)"
#: what a Mac's build prints, read in PyTorch's source: the Linux wheels checked here do not contain it
_MAC = "Mac (MPS) builds; read in PyTorch's source, not run on a Mac here"


@dataclass(frozen=True)
class Wording:
    """One message exactly as PyTorch prints it.

    Attributes:
        text: the message, verbatim (sizes, device indices, operator names and hashes vary).
        versions: the PyTorch versions (and builds or devices) that print it, as far as checked.
        source: where it was checked: a build's string table, a file of PyTorch's source, a real run.
    """

    text: str
    versions: str
    source: str


@dataclass(frozen=True)
class Family:
    """One kind of error: how to recognise it, and what the course says about it.

    Attributes:
        key: short id, e.g. ``"devices"``.
        title: a few words for headings.
        patterns: regular expressions; any match recognises the family. A space in a pattern matches
            any run of white space (a message pasted from a wrapped terminal line still matches). Named
            groups ``arg``, ``op``, ``a`` (the odd tensor's device) and ``b`` (the device expected) are read.
        wordings: real messages, each with the versions that print it (docs and tests use them).
        cause: why it happens, in the course's words.
        fix: what to do.
        check: optional test of a match's groups; a match it rejects is not this family (e.g. a dtype
            look-alike).
        tailor: optional; fits the cause and the fix to what one message says (the devices, the argument,
            the type...): it gets a :class:`Reading` with the family's text and returns it changed.
        device_problem: False for the few errors the course teaches next to device problems
            (a forgotten ``super().__init__()``, a checkpoint ``torch.load`` refuses...).
    """

    key: str
    title: str
    patterns: tuple[str, ...]
    wordings: tuple[Wording, ...]
    cause: str
    fix: str
    check: Optional[Callable[[dict], bool]] = None
    tailor: Optional[Callable[[Reading], Reading]] = None
    device_problem: bool = True
    compiled: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", tuple(re.compile(p.replace(" ", r"\s+")) for p in self.patterns))

    @property
    def lesson(self) -> str:
        """The lesson notebook and section that teach this family."""
        notebook, section = LESSONS.get(self.key, (FIELD_GUIDE, self.title))
        return f"{notebook}, section {section}" if notebook != FIELD_GUIDE else f"{notebook} (appendix): {section}"


@dataclass(frozen=True)
class Reading:
    """What one message says, as its family's pattern read it: what a family's ``tailor`` gets and returns.

    Attributes:
        groups: the named groups of the pattern that matched.
        line: the line of the error that was recognised.
        text: all that was given: a traceback's frames too.
        arg, op: the argument and the operation the message names, or ``""``.
        a, b: the odd tensor's device and the device expected (lower case), or ``""``.
        cause, fix: the family's, until its tailor fits them to the message.
    """

    groups: dict
    line: str
    text: str
    arg: str
    op: str
    a: str
    b: str
    cause: str
    fix: str


def _type_device(text: str) -> str:
    """The device type inside a legacy type name: ``torch.cuda.FloatTensor`` -> ``cuda``."""
    low = text.lower()
    for name in ("cuda", "mps", "xpu", "meta", "mkldnn"):
        if name in low:
            return name
    return "cpu"


def _devices_differ(groups: dict) -> bool:
    """``Input type (X) and weight type (Y)``: a device problem only when X and Y name different devices."""
    return "ta" not in groups or _type_device(groups["ta"]) != _type_device(groups.get("tb") or "")


def _not_none(groups: dict) -> bool:
    """``'NoneType' object has no attribute 'to'`` is a missing ``return``, not a device problem."""
    return groups.get("type") != "NoneType"


#: The rule every device mismatch breaks (the first sentence of a mismatch's cause names the tensors).
_RULE = ("PyTorch runs each operation on one device and does not move tensors for you (apart from a few "
         "edges: one 0-dim CPU tensor as an operand of a binary operation like `x * torch.tensor(2.0)`, 0-dim CPU "
         "tensors in `torch.where`, `torch.lerp`'s weight from 2.6 and `addcmul`'s last factor, but not `clamp(min=t)` "
         "or `addmm`; a CPU index in `x[idx]`), so the model's "
         "parameters, the input and anything made inside `forward` must all be on one device.")

_GENERATOR_RULE = ("Usually `torch.set_default_device(\"cuda\")` is at work: a shuffling `DataLoader`'s sampler "
                   "then draws its permutation on the GPU with a CPU generator. Or a `torch.Generator()` made "
                   "on the CPU is used for GPU tensors.")

#: The last sentence of the mismatch fix: how to see which tensor is where.
_SEE_WHERE = "To see which tensor is where, run `cu.explain_devices(model, {\"x\": x})`."


def _data_parallel_fix(device: str) -> str:
    """The fix for a DataParallel whose model is not on ``device``, its ``device_ids[0]``."""
    return (f"Move the model to `device_ids[0]` (by default `cuda:0`) before wrapping it: `model.to(\"{device}\")`, "
            f"then `nn.DataParallel(model)` (or move the wrapper, `dp_model.to(\"{device}\")`). The inputs may stay "
            "on the CPU: DataParallel scatters them to the GPUs itself. Moving the inputs to the CPU does not help.")


# --- tailors: what one message adds to its family's text (a family's ``tailor``) ------------------------

def _tailor_devices(r: Reading) -> Reading:
    """Which tensor is where, and the fix in that direction, when the message says."""
    g, arg, a, b = r.groups, r.arg, r.a, r.b
    if "ta" in g:   # legacy type names: the input is on a, the layer's weight (the model) on b
        a, b, arg = _type_device(g["ta"]), _type_device(g.get("tb") or ""), "input"
    if "arg2" in g:   # legacy cudnn wording: two GPU indices
        a, b = f"cuda:{g['a']}", f"cuda:{g['b']}"
    if g.get("what") == "hidden":
        arg = "hx"
        said = f"The hidden state you pass (`h0`, or `(h0, c0)` for an LSTM) is on {b}, the input on {a}."
        fix = ("Put the input, the hidden state and the model on one device: move the input to the model's "
               "device first (`x = x.to(device)`), then create the state there (`h0 = torch.zeros(..., "
               "device=x.device)`), or pass no state: the RNN then starts from zeros on the input's device.")
    else:
        arg = "input" if g.get("what") else arg
        ordered = not arg and "found at least two devices" in " ".join(r.line.split())   # not which is odd
        said, fix = _devices_detail(arg, r.op, a, b, _fix_in_sight(r), ordered)
        if ordered:
            a, b = b, a   # keep the message's order
    rule = _RULE.split(", so ")[0] + "." if _no_model_in_sight(r) else _RULE
    if _two_gpus(a, b):
        said, fix = _two_gpus_detail(arg, a, b)
        rule = _RULE.split(" (apart")[0] + "."
    return replace(r, arg=arg, a=a, b=b, fix=fix, cause=f"{said} {rule}" if said else r.cause)


def _two_gpus(a: str, b: str) -> bool:
    """Whether a mismatch is between two GPUs of one kind (``cuda:1`` and ``cuda:0``), not a GPU and the CPU."""
    kinds = {d.split(":")[0] for d in (a, b)}
    return bool(a and b) and a != b and len(kinds) == 1 and not kinds & {"cpu", "meta"}


def _two_gpus_detail(arg: str, a: str, b: str) -> tuple[str, str]:
    """(what the message says, the fix) for tensors on two GPUs: the CPU advice would not help."""
    what = f"`{arg}` is on {a}, the other tensors on {b}" if arg else f"Your message names two GPUs, {a} and {b}"
    said = (f"{what}: two GPUs of this machine, and one operation runs on one of them. Usually part of the work was "
            "sent to a GPU by index (`\"cuda:1\"`) and the rest to plain `\"cuda\"`, which means the current GPU "
            "(`torch.cuda.current_device()`, changed by `torch.cuda.set_device`), or a checkpoint saved on another GPU "
            "was loaded without `map_location`.")
    fix = ("Put the tensors of the failing line on one GPU: `x = x.to(y.device)` moves `x` to the GPU `y` is on "
           "(`model.to(y.device)` for a model). Then name one device "
           "once, `device = torch.device(\"cuda:0\")`, and use it everywhere (plain `\"cuda\"` follows "
           "`torch.cuda.set_device`; `CUDA_VISIBLE_DEVICES` renumbers the GPUs). " + _SEE_WHERE)
    return said, fix


_MODULE_FRAME = re.compile(r"torch[/\\]nn[/\\]modules[/\\]")


def _no_model_in_sight(r: Reading) -> bool:
    """Whether a traceback came with the message and no layer is in it (``a + b`` in a cell): no model to move."""
    return 'File "' in r.text and not _MODULE_FRAME.search(r.text)


def _fix_in_sight(r: Reading) -> str:
    """The family's fix, or the fix for plain tensors when no model is in sight."""
    if not _no_model_in_sight(r):
        return r.fix
    return ("Put the tensors of the failing line on one device: move the one that is elsewhere with "
            "`t = t.to(device)` (`Tensor.to` returns a new tensor: keep the result), or create it there with "
            "`device=`. To see which is where, print each one's `.device`.")


def _tailor_data_parallel(r: Reading) -> Reading:
    return replace(r, fix=_data_parallel_fix(r.b)) if r.b else r


def _tailor_numpy(r: Reading) -> Reading:
    if r.a == "meta":
        return replace(r, fix="A meta tensor has no values, so there is nothing to convert, even after `.cpu()`: "
                              "make the tensor on a real device (`device=\"cpu\"`), then `t.detach().numpy()`.")
    return replace(r, cause=f"Your tensor is on {r.a}. {r.cause}") if r.a else r


_CONTAINERS = ("dict", "collections.OrderedDict", "OrderedDict", "collections.defaultdict", "defaultdict",
               "list", "tuple")


def _tailor_no_to(r: Reading) -> Reading:
    """``'<type>' object has no attribute 'to'`` (or ``'cuda'``): a container, an array, something else."""
    kind, attr = r.groups.get("type", ""), r.groups.get("attr", "to")
    if kind in _CONTAINERS:
        return r
    if kind == "numpy.ndarray":
        return replace(r, cause="A NumPy array lives on the CPU and knows nothing of devices: it has no `.to` or "
                                "`.cuda`.",
                       fix="Make it a tensor, then move it: `torch.from_numpy(a).to(device)` (float64 arrays: "
                           "`torch.from_numpy(a).to(device, torch.float32)`).")
    return replace(r, cause=f"Only tensors and modules have `.{attr}`, and this object is a `{kind}`.",
                   fix="Turn it into a tensor first (`torch.as_tensor(value)`, or your dataset's transform), then "
                       "`.to(device)`.")


def _tailor_no_device(r: Reading) -> Reading:
    kind = r.groups.get("type", "")
    if kind not in _CONTAINERS + ("numpy.ndarray",):
        return r
    return replace(r, cause=f"A `{kind}` has no `.device`: only tensors (and parameters and buffers) have one.",
                   fix="Look at the tensors inside: `{k: v.device for k, v in batch.items()}` for a dict, "
                       "`[t.device for t in batch]` for a list. A NumPy array always lives on the CPU.")


def _tailor_no_cuda(r: Reading) -> Reading:
    """A driver older than the CUDA the build needs: a GPU and a driver are there, the versions disagree."""
    if "driver on your system is too old" not in r.line:
        return r
    return replace(r, cause="This PyTorch was built with a newer CUDA than your NVIDIA driver supports (the version "
                            "in brackets is the newest CUDA the driver knows, 12080 = 12.8; `nvidia-smi` shows it as "
                            "\"CUDA Version\"). The GPU is there, but `torch.cuda.is_available()` is False.",
                   fix="Compare `nvidia-smi`'s \"CUDA Version\" with `torch.version.cuda`. Then either update the "
                       "NVIDIA driver, or install a PyTorch built for an older CUDA (pytorch.org's selector, e.g. "
                       "the cu126 index) that your driver supports.")


def _tailor_lengths(r: Reading) -> Reading:
    return replace(r, cause=f"Your `lengths` are on {r.a}. {r.cause}") if r.a else r


def _tailor_map_location(r: Reading) -> Reading:
    if "device_count()" not in r.line:
        return r
    return replace(r, cause="`torch.save` records each tensor's device, and `torch.load` puts tensors back there. "
                            "This checkpoint was saved on a GPU index this machine does not have.",
                   fix="Say where the tensors should go: `torch.load(path, map_location=\"cuda:0\")` (or "
                       "`map_location=device`).")


def _tailor_mps_op(r: Reading) -> Reading:
    if not r.op:
        return r
    return replace(r, cause=f"`{r.op}` is not implemented for MPS in your PyTorch. Apple's MPS backend does not have "
                            "every operator yet.")


def _tailor_module_prefix(r: Reading) -> Reading:
    """Which side has the ``module.`` prefix: the checkpoint (unexpected keys) or the model (missing keys)."""
    if not re.search(r'Unexpected key\(s\) in state_dict: "module\.|unexpected key "module\.', r.text):
        return replace(r, fix="Your model is wrapped (`DataParallel` / DDP) and the checkpoint is not: load it into "
                              "the inner model, `model.module.load_state_dict(state)`.")
    return replace(r, fix="The checkpoint was saved from a `DataParallel` / DDP wrapper: strip the prefix, "
                          "`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, \"module.\")`, "
                          "then `model.load_state_dict(state)`. Next time save `model.module.state_dict()`.")


def _from_dataloader(text: str) -> bool:
    low = text.lower()
    return "sampler" in low or "dataloader" in low or "utils/data" in low or "utils\\data" in low


def _tailor_generator(r: Reading) -> Reading:
    """``a`` is the generator's device type, ``b`` the one that draws."""
    a, b = r.a, r.b
    if r.groups.get("meta"):
        return replace(r, cause="`meta` is not an accelerator and has no random-number generator: "
                                "`torch.Generator(device=\"meta\")` is refused (tensors on `meta` hold no values, so "
                                "nothing is drawn there).",
                       fix="Make the generator for the device that draws, `torch.Generator()` for the CPU or "
                           "`torch.Generator(device=device)` for your accelerator.")
    if b == "cpu" and a:
        return replace(r, cause=f"A generator made on {a} drew numbers on the CPU. Usually a `DataLoader` got "
                                f"`generator=torch.Generator(device=\"{a}\")`: its sampler draws the shuffle order on "
                                "the CPU. Or `torch.randn(..., generator=g)` was called without `device=`.",
                       fix="Give a DataLoader a CPU generator, `torch.Generator()`, and move each batch with "
                           "`.to(device)`. For a draw with your own generator, draw where it lives: "
                           "`torch.randn(n, generator=g, device=g.device)`.")
    if _from_dataloader(r.text) and a and b:
        return replace(r, cause=f"A shuffling `DataLoader` drew its permutation on {b} with its generator on {a}: "
                                f"`torch.set_default_device(\"{b}\")` (or a `with torch.device(...)` block) is in "
                                "effect.")
    return replace(r, cause=f"A generator on {a} drew numbers for {b}. {_GENERATOR_RULE}") if a and b else r


def _tailor_meta_data(r: Reading) -> Reading:
    if not _from_dataloader(r.text):
        return r
    return replace(r, cause="A shuffling `DataLoader` drew its random seed on `meta`, where tensors have no values: "
                            "`torch.set_default_device(\"meta\")` (or a `with torch.device(\"meta\")` block) is in "
                            "effect.",
                   fix="Reset the default device before making and iterating the DataLoader: "
                       "`torch.set_default_device(None)`, and create tensors on a device with `device=` instead.")


def _tailor_op_devices(r: Reading) -> Reading:
    """SDPA's query/key/value, searchsorted's boundaries/values/sorter, cdist's X1/X2: which is where, and the
    fix towards the accelerator."""
    g = r.groups
    if "q" in g:
        devices = {"query": g["q"].lower(), "key": g["k"].lower(), "value": g["v"].lower()}
        target = next((d for d in devices.values() if not _host(d)), devices["query"])
        away = [n for n, d in devices.items() if d != target]
        where = ", ".join(f"{n} on {d}" for n, d in devices.items())
        moves = " and ".join(f"`{n} = {n}.to(\"{target}\")`" for n in away)
        return replace(r, arg=away[0] if len(away) == 1 else "", a=devices[away[0]] if away else "", b=target,
                       cause=f"`F.scaled_dot_product_attention` (the attention inside `nn.MultiheadAttention` and "
                             f"`nn.TransformerEncoderLayer` too) got {where}: all three must be on one device.",
                       fix=(f"Put all three on {target}: {moves}. " if away else "")
                       + "Usually one of them was made from a tensor that was never moved (the input, a cache, a "
                         "table kept as a plain attribute): move the input with `x = x.to(device)`, keep a module's "
                         "tensors in buffers (`self.register_buffer(...)`) so `model.to(device)` moves them, and make "
                         "an `attn_mask` on the query's device (`device=q.device`).")
    if "x1" in g or "i1" in g:
        x1, x2 = (g["x1"].lower(), g["x2"].lower()) if "x1" in g else (f"cuda:{g['i1']}", f"cuda:{g['i2']}")
        moved, other = ("x1", "x2") if _host(x1) and not _host(x2) else ("x2", "x1")
        return replace(r, arg=moved, a=x1 if moved == "x1" else x2, b=x2 if moved == "x1" else x1,
                       cause=f"`torch.cdist(x1, x2)` got `x1` on {x1} and `x2` on {x2}: both sets of points must be "
                             "on one device (for large inputs cdist checks this itself, in words of its own).",
                       fix=f"Move one to the other: `{moved} = {moved}.to({other}.device)`, or create both on your "
                           "device (`device=device`).")
    if g.get("sorter"):
        return replace(r, arg="sorter", cause=f"`torch.searchsorted(..., sorter=s)` got the sorter on {r.a} and the "
                                              f"sorted boundaries on {r.b} (this message calls them \"input value "
                                              "tensor\"): the sorter must be where the boundaries are.",
                       fix="Make the sorter where the boundaries are: `sorter = sorter.to(boundaries.device)`, or "
                           "`sorter = boundaries.argsort()`.")
    if r.a and r.b:
        fix = ("Move the boundaries to the values' device: `boundaries = boundaries.to(values.device)`."
               if _host(r.b) and not _host(r.a) else
               "Move the values where the boundaries are: `values = values.to(boundaries.device)`.")
        cause = (f"`torch.searchsorted(boundaries, values)` (or `torch.bucketize`) got the boundaries on {r.b} and "
                 f"the values on {r.a}: both must be on one device.")
        return replace(r, arg="input", cause=cause, fix=fix)
    return r


# --- the catalogue ---------------------------------------------------------------------------------------

_TORCH_CUDA = "torch/cuda/__init__.py"
_TO_HOST = r"(?:\. Use Tensor\.cpu\(\) to copy the tensor to host memory first)"

FAMILIES: tuple[Family, ...] = (
    Family(
        "devices", "Tensors on different devices",
        (r"Expected all tensors to be on the same (?:common )?device, but found at least two devices, (?P<b>" + _DEV
         + r") and (?P<a>" + _DEV + r")!?(?: \(when checking (?:argument|arugment) for argument (?P<arg>\w+) in "
         r"method (?P<op>\w+)\))?",
         r"Expected all tensors to be on the same device, but got (?P<arg>\w+) is on (?P<a>" + _DEV
         + r"), different from other tensors on (?P<b>" + _DEV
         + r")(?: \(when checking argument in method (?P<op>\w+)\))?",
         r"Expected object of device type (?P<b>\w+) but got device type (?P<a>\w+) for (?:argument #\d+|sequence "
         r"element \d+ in sequence argument at position #\d+) '(?P<arg>\w+)'(?: in call to (?P<op>\w+))?",
         r"Tensor for argument #\d+ '(?P<arg>\w+)' is on (?P<a>CPU), (?:Tensor for argument #\d+ '\w+' is on CPU, )?"
         r"but expected (?:it|them) to be on GPU(?: \(while checking arguments for (?P<op>\w+)\))?",
         r"Tensor on device (?P<a>" + _DEV + r") is not on the expected device (?P<b>" + _DEV + r")!",
         r"Input type \((?P<ta>[^()\n]{1,60})\) and (?P<param>weight|bias) "
         r"type \((?P<tb>[^()\n]{1,60})\) should be the same",
         r"Tensor for argument #?\d*\s*'?(?P<arg>\w+)'? is on (?P<a>" + _DEV + r") but expected on (?P<b>" + _DEV
         + r")",
         r"Expected tensor for argument #\d+ '(?P<arg>\w+)' to have the same device as tensor for argument #\d+ "
         r"'(?P<arg2>\w+)'; but device (?P<a>\d+) does not equal (?P<b>\d+)"
         r"(?: \(while checking arguments for (?P<op>\w+)\))?",
         r"Input and (?:parameter|hidden) tensors are not at the same device, found input tensor at (?P<a>" + _DEV
         + r") and (?P<what>parameter|hidden) tensor at (?P<b>" + _DEV + r")",
         r"(?P<arg>input)\(device='(?P<a>" + _DEV + r")'\) and weight\(device=(?P<b>" + _DEV
         + r")'\) must be on the same device",
         r"expected self and (?P<arg>mask) to be on the same device, but got mask on (?P<a>" + _DEV
         + r") and self on (?P<b>" + _DEV + r")",
         r"expected self and (?P<arg>mask) to be on the same device",
         r"Placeholder storage has not been allocated(?: on (?P<b>MPS) device)?",
         r"is not on the expected device",
         r"Expected all tensors to be on the same device"),
        (Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
                 "element-wise operations on CUDA; " + _ALL + ", and 1.x",
                 "TensorIterator.cpp, prefix verbatim in libtorch_cpu.so 2.7, 2.8, 2.14 (the two devices in the "
                 "order met, not which tensor is odd)"),
         Wording("Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors "
                 "on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
                 "2.8 and newer, on CUDA (ops that check each argument: addmm, mm, index_select, nll_loss...)",
                 "common_device_check_failure, aten/src/ATen/core/op_registration/adaption.cpp: format pieces in "
                 "libtorch_cpu.so 2.8 and 2.14, absent in 2.7; wrapper_CUDA_addmm in libtorch_cuda.so"),
         Wording("Expected all tensors to be on the same device, but got weight is on cpu, different from other "
                 "tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)",
                 "2.8 and newer, on CUDA: a loss's class weights left on the CPU",
                 "the same format (2.8, 2.14); wrapper_CUDA_nll_loss_forward in libtorch_cuda.so 2.7 to 2.14"),
         Wording("Expected all tensors to be on the same device, but got index is on cpu, different from other "
                 "tensors on cuda:0 (when checking argument in method wrapper_CUDA__index_select)",
                 "2.8 and newer, on CUDA: `nn.Embedding` or `index_select` with a CPU index",
                 "the same format (2.8, 2.14); wrapper_CUDA__index_select in libtorch_cuda.so 2.7 to 2.14"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                 "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
                 "up to 2.7, on CUDA (checked in 2.7; how far back was not checked)",
                 "adaption.cpp before 2.8: \"! (when checking argument for argument \" verbatim in libtorch_cpu.so "
                 "2.7, absent in 2.8 and 2.14"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                 "(when checking argument for argument weight in method wrapper_CUDA_nll_loss_forward)",
                 "up to 2.7, on CUDA: a loss's class weights left on the CPU",
                 "the same format as above (libtorch_cpu.so 2.7)"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                 "(when checking argument for argument mat1 in method wrapper_addmm)",
                 "late 1.x, after the misspelling was fixed in July 2021 (learner reports from 2022; no "
                 "build checked)",
                 "adaption.cpp with \"argument for argument\"; kernel names without the CUDA_ part"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                 "(when checking arugment for argument mat1 in method wrapper_addmm)",
                 "around 1.9 (\"arugment\" is misspelt in PyTorch itself; fixed in July 2021, pytorch/pytorch#61459)",
                 "adaption.cpp as pytorch/pytorch#60864 quotes it (June 2021)"),
         Wording("Expected object of device type cuda but got device type cpu for argument #1 'self' in "
                 "call to _th_addmm",
                 "1.x before the dispatcher's device check (up to about 1.7; learner reports)",
                 "checked_dense_tensor_unwrap, aten/src/ATen/Utils.h in PyTorch 1.x (read in old copies)"),
         Wording("Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU (while checking "
                 "arguments for addmm)",
                 "1.x on CUDA (learner reports with 1.6); MPS's `mm` in 2.x says the same for `mat2` (reports, "
                 "not run on a Mac here)",
                 "checkSameGPU, aten/src/ATen/TensorUtils.cpp: \" to be on GPU (while checking arguments for \" in "
                 "libtorch_cpu.so 2.7 and 2.14"),
         Wording("Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or input "
                 "should be a MKLDNN tensor and weight is a dense tensor",
                 "a CPU input and a CUDA model, when PyTorch picks its MKLDNN backend for the CPU input (most float32 "
                 "convolutions); " + _ALL,
                 "check_input_same_type_as_parameters, aten/src/ATen/native/Convolution.cpp: the MKLDNN clause is "
                 "added only for the MKLDNN backend, which is chosen only for a CPU input; suffix verbatim in "
                 "libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
                 "a CUDA input and a CPU model (never with the MKLDNN clause); every version (format in 2.7 to 2.14)",
                 "the same check without the clause (libtorch_cpu.so 2.7, 2.8, 2.14); legacy type names as PyTorch "
                 "prints them"),
         Wording("Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same",
                 "a CPU input and a CUDA model in 1.x (learner reports); 2.7 to 2.14 never print it for a CPU input",
                 "Convolution.cpp 2.x: a CPU input goes to MKLDNN, whose check adds the clause above, or to a slow "
                 "kernel that checks each argument (below)"),
         Wording("Expected all tensors to be on the same device, but got weight is on cuda:0, different from other "
                 "tensors on cpu (when checking argument in method wrapper_CUDA___slow_conv2d_forward)",
                 "2.8 and newer, on CUDA: one small image (no batch of them) through a `Conv2d` on the GPU, which "
                 "PyTorch hands to its slow convolution kernel instead of MKLDNN",
                 "Convolution.cpp: _select_conv_backend picks Slow2d, whose CUDA wrapper checks each argument; "
                 "wrapper_CUDA___slow_conv2d_forward in libtorch_cuda.so 2.7, 2.8, 2.14"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0! "
                 "(when checking argument for argument weight in method wrapper_CUDA___slow_conv2d_forward)",
                 "2.7, on CUDA: the same small image",
                 "adaption.cpp's 2.7 format (libtorch_cpu.so 2.7); the wrapper in libtorch_cuda.so 2.7"),
         Wording("Tensor for argument input is on cpu but expected on mps", _MAC,
                 "aten/src/ATen/native/mps/operations/Linear.mm; test/test_mps.py asserts it"),
         Wording("Tensor for argument weight is on cpu but expected on mps", _MAC,
                 "the same check for the layer's weight; test/test_mps.py asserts it"),
         Wording("Placeholder storage has not been allocated on MPS device!", _MAC,
                 "Placeholder, aten/src/ATen/native/mps/OperationUtils.mm"),
         Wording("slow_conv2d_forward_mps: input(device='cpu') and weight(device=mps:0')  must be on the same device",
                 _MAC + " (the two spaces and the lone quote are PyTorch's)",
                 "slow_conv2d_forward_mps, aten/src/ATen/mps/MPSFallback.mm"),
         Wording("Input and parameter tensors are not at the same device, found input tensor at cpu and parameter "
                 "tensor at meta", _ALL,
                 "real run: nn.LSTM on meta (2.7, 2.13); RNN.cpp's format pieces in libtorch_cpu.so 2.7 to 2.14"),
         Wording("expected self and mask to be on the same device, but got mask on cpu and self on cuda:0",
                 "`masked_fill` on CUDA, MPS or XPU with the mask on another device (a causal mask kept as a plain "
                 "attribute); 2.13 checked",
                 "masked_fill__cuda, aten/src/ATen/native/cuda/Indexing.cu (and masked_fill__mps): the format's "
                 "prefix verbatim in libtorch_cpu.so 2.13"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!",
                 "two GPUs in one element-wise operation (multi-GPU machines); the TensorIterator format above, "
                 "2.13 checked",
                 "compute_types, aten/src/ATen/TensorIterator.cpp: the first GPU met, then the odd one; prefix "
                 "verbatim in libtorch_cpu.so 2.13"),
         Wording("Tensor on device cpu is not on the expected device meta!", _ALL,
                 "real run (2.7, 2.13); torch/_prims_common/__init__.py in 2.7, 2.8, 2.14")),
        "One operation got tensors that live on different devices. " + _RULE,
        "Put everything on one device: move the model once with `model.to(device)` (in place) and each input "
        "with `x = x.to(device)` (`Tensor.to` returns a new tensor: keep the result). " + _SEE_WHERE,
        check=_devices_differ, tailor=_tailor_devices),
    Family(
        "no-kernel", "An operation with no kernel for the device it was sent to",
        (r"Could not run '(?P<op>[\w:.]+)' with arguments from the '(?P<b>CUDA|MPS|XPU|HIP|Meta|CPU)' backend",),
        (Wording("Could not run 'aten::slow_conv3d_forward' with arguments from the 'CUDA' backend. This could be "
                 "because the operator doesn't exist for this backend, or was omitted during the selective/custom "
                 "build process (if using custom build). ...",
                 "2.7 to 2.14, on CUDA: one small volume (no batch of them) through a `Conv3d` on the GPU; PyTorch "
                 "goes on with the backends the operator has and its whole dispatch table",
                 "OperatorEntry::reportError, aten/src/ATen/core/dispatch/OperatorEntry.cpp: format pieces in "
                 "libtorch_cpu.so 2.7 and 2.14; Convolution.cpp picks Slow3d for the CPU input, and "
                 "libtorch_cuda.so 2.7, 2.8 and 2.14 have no slow_conv3d_forward kernel"),),
        "PyTorch picks an operation's kernel by the devices of its tensors (a GPU tensor among CPU ones picks "
        "the GPU's) and has no kernel of this operation there. Most often the tensors are on different devices: "
        "the CPU input chose a CPU-only algorithm (a `Conv3d` given one small volume), then a weight on the GPU "
        "sent it to the GPU, which lacks it. Less often the operation does not exist for that device at all.",
        "Check each tensor in the failing line (`t.device`, or `cu.explain_devices(model, {\"x\": x})`) and put "
        "them on one device, usually `x = x.to(device)`. If they already are, the operation has no kernel for "
        "that device: run that step on the CPU (`.cpu()`, then move the result back)."),
    Family(
        "op-devices", "An operation's own device check: its inputs on different devices",
        (r"Expected query, key, and value to have the same device type, but got query\.device: (?P<q>" + _DEV
         + r"),? key\.device: (?P<k>" + _DEV + r"),? and value\.device: (?P<v>" + _DEV + r")",
         r"Expected query, key, and value to have the same device type",
         r"torch\.searchsorted\(\): boundaries and input value tensors should have same device type, but got "
         r"boundaries tensor device type (?P<b>" + _DEV + r") and input value tensor device type (?P<a>" + _DEV + r")",
         r"torch\.searchsorted\(\): (?P<sorter>sorter) and boundary tensors should have same device type, but got "
         r"sorter tensor device type (?P<a>" + _DEV + r") and input value tensor device type (?P<b>" + _DEV + r")",
         r"X1 and X2 must have the same device type\. X1: (?P<x1>\w+) X2: (?P<x2>\w+)",
         r"device of X1 \((?P<i1>-?\d+)\) must match device of X2 \((?P<i2>-?\d+)\)"),
        (Wording("Expected query, key, and value to have the same device type, but got query.device: cuda:0 "
                 "key.device: cpu and value.device: cpu instead.",
                 "`F.scaled_dot_product_attention` (2.x), also inside `nn.TransformerEncoderLayer` and "
                 "`nn.MultiheadAttention`'s fast path; 2.13 checked",
                 "validate_sdpa_input, aten/src/ATen/native/transformers/attention.cpp: prefix verbatim in "
                 "libtorch_cpu.so 2.13; real run with `meta` (2.13): \"query.device: cpu key.device: meta and "
                 "value.device: meta instead.\""),
         Wording("torch.searchsorted(): sorter and boundary tensors should have same device type, but got sorter "
                 "tensor device type cpu and input value tensor device type cuda:0",
                 "`torch.searchsorted(..., sorter=...)` with the sorter elsewhere (\"input value tensor\" there names "
                 "the boundaries: PyTorch's wording); 2.13 checked",
                 "searchsorted_pre_check, aten/src/ATen/native/BucketizationUtils.h: format pieces in libtorch_cpu.so "
                 "2.13 (the sorter is a keyword argument, so CUDA's generated per-argument check does not see it)"),
         Wording("torch.searchsorted(): boundaries and input value tensors should have same device type, but got "
                 "boundaries tensor device type cuda:0 and input value tensor device type cpu",
                 "`torch.searchsorted` / `torch.bucketize` where no generated check speaks first (on CUDA the "
                 "per-argument check names `self` instead: wrapper_CUDA_Tensor_searchsorted); 2.13 checked",
                 "searchsorted_pre_check, BucketizationUtils.h: format pieces in libtorch_cpu.so 2.13"),
         Wording("X1 and X2 must have the same device type. X1: cuda X2: cpu",
                 "`torch.cdist` with p=2 and more than 25 rows (or compute_mode=\"use_mm_for_euclid_dist\"), which "
                 "skips the per-argument check of wrapper_CUDA___cdist_forward; device types only, no index; "
                 "2.13 checked",
                 "cdist_impl, aten/src/ATen/native/Distance.cpp: prefix in libtorch_cpu.so 2.13; real run with `meta` "
                 "(2.13): \"X1: cpu X2: meta\""),
         Wording("device of X1 (0) must match device of X2 (1)",
                 "`torch.cdist` on two GPUs, the same path; 2.13 checked",
                 "cdist_impl, Distance.cpp: format pieces in libtorch_cpu.so 2.13")),
        "One operation got inputs on different devices, and it checks them itself, in words of its own.",
        "Put every input of that call on one device, usually the model's: `t = t.to(device)` for the one that is "
        "elsewhere. " + _SEE_WHERE,
        tailor=_tailor_op_devices),
    Family(
        "cpu-scalars", "Two 0-dim CPU tensors in one GPU operation",
        (r"Trying to pass too many CPU scalars to non-CPU kernel",),
        (Wording("Trying to pass too many CPU scalars to non-CPU kernel!",
                 "CUDA (any accelerator), element-wise operations; 2.13 checked (the same check in 1.x copies of the "
                 "source)",
                 "compute_types, aten/src/ATen/TensorIterator.cpp (max_cpu_scalars_on_non_cpu is 1): verbatim in "
                 "libtorch_cpu.so 2.13"),),
        "An element-wise GPU kernel reads one 0-dim CPU tensor as if it were a number, and only one: here two "
        "0-dim CPU tensors met in an operation that runs on the GPU, e.g. `torch.add(a, b, out=y)` with `a` and `b` "
        "0-dim CPU tensors and `y` on the GPU.",
        "Make them numbers, `a.item()`, or create them on the GPU: `torch.tensor(2.0, device=device)` (or "
        "`a = a.to(device)`). A number in Python (`x * 2.0`) never needs a device."),
    Family(
        "addcmul-scalar", "A 0-dim CPU tensor in `addcmul` where its GPU kernel refuses one",
        (r"CPU Scalar support for (?P<arg>self|tensor1) argument is not supported when calling addcmul on CUDA "
         r"tensors",),
        (Wording("CPU Scalar support for tensor1 argument is not supported when calling addcmul on CUDA tensors. "
                 "However, CPU Scalar support for tensor2 is supported, please swap your tensor1 and tensor2 terms.",
                 "CUDA, `torch.addcmul`/`addcmul_` with a 0-dim CPU `tensor1`; 2.7 and 2.15 checked, and a real run "
                 "on 2.11 (H100)",
                 "addcmul_cuda_kernel, aten/src/ATen/native/cuda/PointwiseOpsKernel.cu: verbatim in libtorch_cuda.so "
                 "2.7 and 2.15"),
         Wording("CPU Scalar support for self argument is not supported when calling addcmul on CUDA tensors.",
                 "CUDA, `torch.addcmul` with a 0-dim CPU `input`; 2.7 and 2.15 checked",
                 "the same kernel: verbatim in libtorch_cuda.so 2.7 and 2.15")),
        "`addcmul(input, tensor1, tensor2)` on the GPU lets one 0-dim CPU tensor in, and reads it as a number only "
        "as `tensor2`, its last factor; as `input` or `tensor1` its kernel refuses it in words of its own.",
        "Pass the CPU value as `tensor2` (the product is the same: `torch.addcmul(x, a, s)` for `torch.addcmul(x, "
        "s, a)`), or make it a number (`s.item()`) or put it on the GPU: `s.to(device)`."),
    Family(
        "data-parallel", "DataParallel with its model off `device_ids[0]`",
        (r"module must have its parameters and buffers on device (?P<b>" + _DEV + r") \(device_ids\[0\]\) but found "
         r"one of them on device: (?P<a>" + _DEV + r")",),
        (Wording("module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them "
                 "on device: cpu", "CUDA GPUs only; " + _ALL,
                 "torch/nn/parallel/data_parallel.py in 2.7, 2.8, 2.13, 2.14"),),
        "`nn.DataParallel` copies the model from `device_ids[0]` to every GPU on each call, so it first checks "
        "that every parameter and buffer is already on that GPU. One is not: the model was never moved (with one "
        "GPU the wrapper moves it when it is made, with several it does not), it was moved away again, or a "
        "layer was added after moving it.",
        _data_parallel_fix("cuda:0"), tailor=_tailor_data_parallel),
    Family(
        "optimizer-state", "Optimizer state on another device than its parameters",
        (r"Tensors of the same index must be on the same device and the same dtype",),
        (Wording("Tensors of the same index must be on the same device and the same dtype except `step` tensors that "
                 "can be CPU and float32/64 notwithstanding",
                 "2.7 and 2.8 (checked; earlier 2.x not checked); foreach and fused optimizer "
                 "steps, the default on CUDA",
                 "_group_tensors_by_device_and_dtype: verbatim in libtorch_python.so 2.7 and 2.8"),
         Wording("Tensors of the same index must be on the same device and the same dtype except `step` tensors that "
                 "can be CPU and float32/64, and optimizer states that can be bfloat16 for mixed-precision training",
                 "2.13 and 2.14 (checked; 2.9 to 2.12 not checked)",
                 "verbatim in libtorch_python.so 2.13 (CPU build) and 2.14")),
        "An optimizer step that updates all parameters at once (foreach or fused, the default on CUDA) groups "
        "each parameter with its gradient and its state (`exp_avg`, `momentum_buffer`...), and one of them is on "
        "another device (or has another dtype). Usually the state was created or loaded while the model was "
        "elsewhere, or the model was moved after the optimizer had state.",
        "Move the model first, then create the optimizer. To resume training, `model.to(device)` and then "
        "`optimizer.load_state_dict(torch.load(path, map_location=device))`: it casts the state to each "
        "parameter's device. `cu.explain_devices(model, optimizer=optimizer)` shows which state is where."),
    Family(
        "cuda-oom", "CUDA out of memory",
        (r"CUDA out of memory\. Tried to allocate", r"torch\.(?:cuda\.)?OutOfMemoryError",
         r"CUDA error: out of memory"),
        (Wording("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                 "of 14.74 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 13.61 GiB "
                 "memory in use. Of the allocated memory 13.20 GiB is allocated by PyTorch, and 287.42 MiB is "
                 "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                 "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
                 "2.7 as quoted (sizes are your GPU's; newer versions end with another link); the class is "
                 "torch.OutOfMemoryError from 2.5",
                 "c10/cuda/CUDACachingAllocator.cpp; \"CUDA out of memory. Tried to allocate \" in libc10_cuda.so "
                 "2.7, 2.8, 2.14"),
         Wording("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total "
                 "capacity; 6.51 GiB already allocated; 5.06 MiB free; 6.62 GiB reserved in total by PyTorch) If "
                 "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
                 "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                 "1.x and early 2.x (learner reports; not checked in a build)",
                 "the older CUDACachingAllocator.cpp wording, as most answers online quote it"),
         Wording("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
                 "the start of every CUDA out-of-memory message since 2.5", "torch.OutOfMemoryError")),
        "The GPU has no room for a new tensor: the model, the activations kept for backward, the optimizer "
        "state and whatever you still hold a reference to (an old model, a loss with its graph) fill its memory.",
        "Make the batch smaller; run evaluation under `torch.no_grad()`; accumulate `loss.item()` or "
        "`loss.detach()`, not `loss`; `del` what you no longer need; consider `torch.autocast`. To retry with "
        "a smaller batch, catch the error and recover after the `except` block, not inside it: the exception "
        "keeps the failed step's tensors alive until the block ends (PyTorch FAQ). `torch.cuda.empty_cache()` "
        "does not help: the caching allocator already frees its cached blocks and retries before it raises. "
        "`torch.cuda.memory_summary()` shows what is using the memory."),
    Family(
        "mps-oom", "MPS out of memory",
        (r"MPS backend out of memory",),
        (Wording("MPS backend out of memory (MPS allocated: 17.92 GB, other allocations: 384.00 KB, max allowed: "
                 "18.13 GB). Tried to allocate 256.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to "
                 "disable upper limit for memory allocations (may cause system failure).",
                 _MAC + " (sizes illustrative)",
                 "aten/src/ATen/mps/MPSAllocator.mm, with the default high watermark"),),
        "Your Mac's GPU shares memory with the rest of the system, and PyTorch stops an MPS allocation that "
        "would pass its limit (the high watermark).",
        "Make the batch smaller, evaluate under `torch.no_grad()`, `del` what you no longer need. "
        "`torch.mps.empty_cache()` does not help here: the allocator already releases its cached buffers and "
        "retries before it raises. `PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0` (set before Python starts) lifts the "
        "limit, at the risk of slowing or freezing the whole machine."),
    Family(
        "numpy", "`.numpy()` on a tensor that is not on the CPU",
        (r"can't convert (?P<a>" + _DEV + r")(?: device type)? tensor to numpy" + _TO_HOST + "?",
         r"to numpy" + _TO_HOST),
        (Wording("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                 "memory first.", "CUDA; " + _ALL,
                 "torch/csrc/utils/tensor_numpy.cpp: format in libtorch_python.so 2.7, 2.8, 2.14; the device as the "
                 "meta run shows it"),
         Wording("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
                 "first.", _ALL, "real run (2.7, 2.13)"),
         Wording("can't convert CUDA tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
                 "1.x (before the device-type wording)", "tensor_numpy.cpp in an old copy of PyTorch's source")),
        "NumPy arrays live in CPU memory. A tensor on a GPU (or on `meta`) has no CPU memory NumPy could "
        "share, so `.numpy()` refuses it.",
        "Copy it to the CPU first: `t.detach().cpu().numpy()` (`detach` too when it requires grad). Do this "
        "once, at the end: each copy waits for the GPU.",
        tailor=_tailor_numpy),
    Family(
        "numpy-grad", "`.numpy()` on a tensor that requires grad",
        (r"Can't call numpy\(\) on (?:Tensor|Variable) that requires grad",),
        (Wording("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.", _ALL,
                 "verbatim in libtorch_python.so 2.7, 2.8, 2.14; real run (2.13)"),
         Wording("Can't call numpy() on Variable that requires grad. Use var.detach().numpy() instead.",
                 "1.x", "tensor_numpy.cpp in an old copy of PyTorch's source")),
        "NumPy knows nothing of autograd, so PyTorch will not hand it a tensor that is part of the graph "
        "without being told to leave the graph.",
        "Leave the graph first, and copy to the CPU if needed: `t.detach().cpu().numpy()` works for any tensor "
        "on any real device.",
        device_problem=False),
    Family(
        "no-to", "`.to` on something that is not a tensor or a module",
        (r"'(?P<type>[\w.]+)' object has no attribute '(?P<attr>to|cuda)'",),
        (Wording("'dict' object has no attribute 'to'", "every Python and PyTorch version",
                 "Python's own AttributeError (real run, 2.13)"),
         Wording("'collections.OrderedDict' object has no attribute 'to'",
                 "every version: `torch.load(path).to(device)` on a state dict", "Python's own AttributeError"),
         Wording("'numpy.ndarray' object has no attribute 'to'", "every version", "real run (2.13)")),
        "Only tensors and modules have `.to` and `.cuda`. A dict or list of tensors (a batch, a state dict) is "
        "a container: it has no device of its own.",
        "Move each tensor in it: `batch = {k: v.to(device) for k, v in batch.items()}` (for a list, "
        "`[t.to(device) for t in batch]`). A state dict needs no moving: `model.load_state_dict(state)` copies "
        "each tensor onto its parameter's device (or load it with `torch.load(path, map_location=device)`).",
        check=_not_none, tailor=_tailor_no_to),
    Family(
        "no-device", "A module (or a container) has no `.device`",
        (r"'(?P<type>[\w.]+)' object has no attribute 'device'",),
        (Wording("'Linear' object has no attribute 'device'", _ALL,
                 "nn.Module.__getattr__, torch/nn/modules/module.py 2.7, 2.8, 2.14; real run (2.13)"),),
        "`.device` belongs to tensors (and so to parameters and buffers). A module has none: its tensors may "
        "be on several devices, or it may have none at all.",
        "Ask one of its tensors, `next(model.parameters()).device` (a module without parameters raises "
        "StopIteration), or better, keep the `device` you moved the model to and use it.",
        check=_not_none, tailor=_tailor_no_device),
    Family(
        "module-init", "A module used before `super().__init__()`",
        (r"cannot assign (?:module|parameters?|buffer) before Module\.__init__\(\) call",),
        (Wording("cannot assign module before Module.__init__() call", _ALL,
                 "torch/nn/modules/module.py in 2.7, 2.8, 2.14; real run (2.13)"),
         Wording("cannot assign parameter before Module.__init__() call", _ALL, "torch/nn/modules/module.py")),
        "`nn.Module.__init__` creates the registries that hold parameters, buffers and submodules (the ones "
        "`Module.to` moves). A subclass whose `__init__` does not call it first cannot hold a layer.",
        "Make `super().__init__()` the first line of your model's `__init__`.",
        device_problem=False),
    Family(
        "device-assert", "Device-side assert triggered",
        (r"device-side assert triggered",),
        (Wording("CUDA error: device-side assert triggered", "CUDA; every version",
                 "CUDA runtime (libcudart.so.12) and libc10_cuda.so"),
         Wording("CUDA error: device-side assert triggered\nCUDA kernel errors might be asynchronously reported at "
                 "some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
                 "CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                 "2.7 as quoted; 2.8 and newer raise it as torch.AcceleratorError",
                 "c10/cuda/CUDAException.cpp: lines verbatim in libc10_cuda.so 2.7 and 2.8; AcceleratorError in "
                 "libtorch_python.so 2.8 and 2.14, not 2.7")),
        "A check inside a GPU kernel failed, most often an index out of range: a class label >= the number "
        "of classes (or negative, other than the loss's `ignore_index`) given to a loss, or a token id >= the "
        "embedding size. GPU errors are reported late, so the line in the traceback may not be the one at "
        "fault, and the CUDA context is now broken.",
        "Restart the kernel (the GPU cannot recover in this process). Then find the bad value: run the same "
        "step on the CPU, which names it (`Target 5 is out of bounds.`), or check that "
        "`y[(y != -100) & ((y < 0) | (y >= num_classes))]` is empty (-100 is the default `ignore_index` of "
        "`CrossEntropyLoss` and `NLLLoss`: the kernels skip it, so it is allowed). `CUDA_LAUNCH_BLOCKING=1` "
        "makes the traceback point at the right line."),
    Family(
        "label-range", "A label or index out of range (the CPU's version of a device-side assert)",
        (r"Target -?\d+ is out of bounds", r"index out of range in self"),
        (Wording("Target 5 is out of bounds.", _ALL,
                 "aten/src/ATen/native/LossNLL.cpp: \" is out of bounds.\" in libtorch_cpu.so 2.7, 2.8, 2.14; real "
                 "run (2.13)"),
         Wording("index out of range in self", _ALL,
                 "an nn.Embedding given an id >= its size: verbatim in libtorch_cpu.so 2.7, 2.8, 2.14; real "
                 "run (2.13)")),
        "A value used as an index is outside its range: a class label outside `0 .. num_classes - 1` given to "
        "a loss (the loss's `ignore_index`, -100 by default, is skipped and allowed), or a token id at least "
        "as large as an `nn.Embedding`. The CPU names the bad value; on a GPU the same mistake is a "
        "device-side assert.",
        "Find the bad values and fix the data (or the number of classes, or `num_embeddings`): "
        "`y[(y != -100) & ((y < 0) | (y >= num_classes))]` for labels, `ids[ids >= emb.num_embeddings]` for "
        "an embedding.",
        device_problem=False),
    Family(
        "module-prefix", "`module.` prefix in a state_dict",
        (r'Unexpected key\(s\) in state_dict: "module\.', r'Missing key\(s\) in state_dict: "module\.',
         r"""unexpected key "module\.[\w.]*" in state_dict"""),
        (Wording('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "weight", "bias". \n\t'
                 'Unexpected key(s) in state_dict: "module.weight", "module.bias". ', _ALL,
                 "real run (2.7, 2.13); torch/nn/modules/module.py in 2.7, 2.8, 2.14"),
         Wording('Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: "module.weight", '
                 '"module.bias". \n\tUnexpected key(s) in state_dict: "weight", "bias". ', _ALL,
                 "real run: nn.DataParallel on a CPU (2.7, 2.13)"),
         Wording("""unexpected key "module.conv1.weight" in state_dict""",
                 "0.x (a KeyError, before the Error(s) wording; learner reports)", "learner reports")),
        "`nn.DataParallel` and `DistributedDataParallel` keep your model as `.module`, so a checkpoint saved "
        "from the wrapper has every key starting with `module.`, and a plain model does not know those names "
        "(or the other way round).",
        "Save `model.module.state_dict()` from a wrapped model. To load an old checkpoint into a plain model, "
        "strip the prefix: `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, \"module.\")`, "
        "then `model.load_state_dict(state)`; to load a plain one into a wrapper, use "
        "`wrapped.module.load_state_dict(state)`.",
        tailor=_tailor_module_prefix),
    Family(
        "fork", "CUDA in a forked subprocess",
        (r"Cannot re-initialize CUDA in forked subprocess",),
        (Wording("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the "
                 "'spawn' start method", "CUDA; " + _ALL, _TORCH_CUDA + " in 2.7, 2.8, 2.14"),),
        "CUDA was started in the main process, then a worker was made with `fork` (the default start method "
        "on Linux up to Python 3.13; Python 3.14 uses `forkserver` there), as `DataLoader(num_workers>0)` does; "
        "a forked child cannot use its parent's CUDA context. Usually a `Dataset` moves samples to the GPU in "
        "`__getitem__`.",
        "Keep `Dataset` and `collate_fn` on the CPU and move each batch to the GPU in the training loop "
        "(`x = x.to(device, non_blocking=True)` with `pin_memory=True`). If the workers truly need CUDA, "
        "use `DataLoader(..., multiprocessing_context=\"spawn\")`."),
    Family(
        "kernel-image", "No kernel image for this GPU",
        (r"no kernel image is available for execution on the device",),
        (Wording("CUDA error: no kernel image is available for execution on the device", "CUDA; every version",
                 "CUDA runtime (libcudart.so.12)"),
         Wording("CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be "
                 "asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
                 "2.7 as quoted; 2.8 and newer raise it as torch.AcceleratorError",
                 "c10/cuda/CUDAException.cpp (libc10_cuda.so 2.7)")),
        "Your PyTorch build has no compiled code for this GPU's architecture: the GPU is too old or too new "
        "for that build.",
        "Compare `torch.cuda.get_device_capability()` with `torch.cuda.get_arch_list()`, then install a "
        "PyTorch build for your GPU and CUDA version (pytorch.org lists the commands)."),
    Family(
        "mps-op", "An operator MPS does not implement",
        (r"The operator '(?P<op>[\w:.]+)' is not current(?:ly)? implemented for the MPS device",),
        (Wording("The operator 'aten::_linalg_solve_ex.result' is not currently implemented for the MPS device. If "
                 "you want this op to be considered for addition please comment on "
                 "https://github.com/pytorch/pytorch/issues/141287 and mention use-case, that resulted in missing op "
                 "as well as commit hash <the build's commit hash>. As a temporary fix, you can set the environment "
                 "variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this "
                 "will be slower than running natively on MPS.",
                 _MAC + " (the current wording; it names the build's commit)",
                 "mps_error_fallback, aten/src/ATen/mps/MPSFallback.mm"),
         Wording("The operator 'aten::nonzero' is not currently implemented for the MPS device. If you want this op "
                 "to be added in priority during the prototype phase of this feature, please comment on "
                 "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment "
                 "variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this "
                 "will be slower than running natively on MPS.", "Mac builds of 1.13 to about 2.5 (learner reports)",
                 "MPSFallback.mm before the issue link changed"),
         Wording("The operator 'aten::index.Tensor' is not current implemented for the MPS device. If you want this "
                 "op to be added in priority during the prototype phase of this feature, please comment on "
                 "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment "
                 "variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this "
                 "will be slower than running natively on MPS.",
                 "Mac builds of 1.12 (\"current\" for \"currently\" is PyTorch's; learner reports)",
                 "learner reports of 1.12, the first release with MPS")),
        "Apple's MPS backend does not have every PyTorch operator yet, and this one is missing.",
        "Set `PYTORCH_ENABLE_MPS_FALLBACK=1` before Python starts (or before `import torch`): that operator "
        "then runs on the CPU, slower, and the rest stays on MPS. Or run the whole step on the CPU. A newer "
        "PyTorch may have it.",
        tailor=_tailor_mps_op),
    Family(
        "index-device", "Index tensor on another device",
        (r"indices should be either on (?P<c>\w+) or on the same device as the indexed tensor(?: \((?P<b>" + _DEV
         + r")\))?",),
        (Wording("indices should be either on cpu or on the same device as the indexed tensor (cuda:1)",
                 "CUDA: an index on one GPU for a tensor on another; " + _ALL,
                 "aten/src/ATen/native/TensorAdvancedIndexing.cpp: prefix in libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("indices should be either on cpu or on the same device as the indexed tensor (cpu)",
                 "CUDA: a GPU index for a CPU tensor; " + _ALL, "the same check (meta lets it pass)")),
        "You indexed a tensor (`x[idx]`) with an index tensor on a different device. Advanced indexing moves a "
        "CPU index to the indexed tensor's device, but not an index on another accelerator, nor a GPU index "
        "into a CPU tensor.",
        "Make the index where the data is: `x[idx.to(x.device)]`, or create it there with "
        "`torch.arange(n, device=x.device)`."),
    Family(
        "mps-float64", "float64 on MPS",
        (r"Cannot convert a MPS Tensor to float64 dtype", r"MPS framework doesn't support float64"),
        (Wording("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please "
                 "use float32 instead.",
                 _MAC + " (a TypeError, for `.to(\"mps\")` of a float64 tensor and for a float64 tensor made on MPS "
                 "alike)",
                 "empty_mps and empty_strided_mps, aten/src/ATen/mps/EmptyTensor.cpp: every MPS tensor is allocated "
                 "there, before any other dtype check"),),
        "Apple's GPU has no float64. NumPy arrays are float64 by default, so `torch.from_numpy(a).to(\"mps\")` "
        "is the usual way in.",
        "Convert and move in one call: `t.to(device, torch.float32)`, or make the array float32 first "
        "(`a.astype(np.float32)`)."),
    Family(
        "lengths", "Sequence lengths not on the CPU",
        (r"'lengths' argument should be a 1D CPU int64 tensor, but got (?P<shape>\w+) (?P<a>" + _DEV
         + r") (?P<dtype>\w+) tensor",
         r"'lengths' argument should be a 1D CPU int64 tensor"),
        (Wording("'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor", "CUDA; " + _ALL,
                 "aten/src/ATen/native/PackedSequence.cpp: prefix in libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("'lengths' argument should be a 1D CPU int64 tensor, but got 1D meta Long tensor", _ALL,
                 "real run (2.7, 2.13)")),
        "`pack_padded_sequence` reads the lengths on the CPU to plan the packing, so `lengths` must be a CPU "
        "int64 tensor (or a list), even when the sequences are on the GPU. Moving every tensor of a batch to "
        "the GPU moves the lengths too.",
        "Keep `lengths` on the CPU: `pack_padded_sequence(x, lengths.cpu(), batch_first=True, "
        "enforce_sorted=False)`. Only the padded sequences go to the GPU.",
        tailor=_tailor_lengths),
    Family(
        "no-cuda", "No CUDA in this PyTorch or on this machine",
        (r"Torch not compiled with CUDA enabled", r"Found no NVIDIA driver", r"No CUDA GPUs are available",
         r"The NVIDIA driver on your system is too old"),
        (Wording("Torch not compiled with CUDA enabled", "builds without CUDA (an AssertionError); " + _ALL,
                 _TORCH_CUDA + " in 2.7, 2.8, 2.14; real run (2.13 CPU build)"),
         Wording("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
                 "driver from http://www.nvidia.com/Download/index.aspx", "CUDA builds on a machine without a driver",
                 "real run (2.7 CUDA build without a GPU); in libc10_cuda.so 2.7, 2.8, 2.14"),
         Wording("The NVIDIA driver on your system is too old (found version 12080). Please update your GPU driver by "
                 "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
                 "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with "
                 "your version of the CUDA driver.",
                 "CUDA builds whose CUDA is newer than the driver (the found version is the driver's CUDA, 12080 = "
                 "12.8); 2.x CUDA builds (not in the CPU wheel checked here: read in PyTorch's source, and quoted "
                 "verbatim in learner reports from 2.7 and 2.11)",
                 "device_count_impl, c10/cuda/CUDAFunctions.cpp (the same text since 1.x); torch.cuda.is_available() "
                 "turns it into a warning, `CUDA initialization: The NVIDIA driver ...`, and returns False"),
         Wording("No CUDA GPUs are available", "CUDA builds with a driver but no usable GPU "
                 "(e.g. CUDA_VISIBLE_DEVICES names none)", "in libc10_cuda.so 2.7, 2.8, 2.14")),
        "The code asks for CUDA (`.cuda()`, `device=\"cuda\"`, `torch.cuda` calls; on a CUDA build also "
        "`pin_memory()`), but this PyTorch was built without CUDA, or this machine has no NVIDIA GPU or driver: "
        "`torch.cuda.is_available()` is False.",
        "Write device-agnostic code: `device = torch.accelerator.current_accelerator() if "
        "torch.accelerator.is_available() else torch.device(\"cpu\")` (or `cu.best_device()`), then "
        "`.to(device)`. For a GPU: on Colab, Runtime -> Change runtime type; on your machine, install a CUDA "
        "build of PyTorch.",
        tailor=_tailor_no_cuda),
    Family(
        "no-accelerator", "No accelerator for pinned memory or `torch.accelerator`",
        (r"Cannot access accelerator device when none is available",
         r"pin_memory=True requires a CUDA or other accelerator backend",
         r"Need to provide pin_memory allocator to use pin memory",
         r"'pin_memory' argument is set as true but no accelerator is found"),
        (Wording("Cannot access accelerator device when none is available.",
                 "builds with no accelerator (CPU-only builds): `t.pin_memory()`, `untyped_storage().pin_memory()` and "
                 "the `torch.accelerator` calls that act on the current device (`current_device_index()`, "
                 "`set_device_index()`, `synchronize()`, `current_stream()`, `memory_allocated()`, `empty_cache()`); "
                 "never `.cuda()` or `device=\"cuda\"`; " + _ALL,
                 "getAccelerator(checked=true), aten/src/ATen/DeviceAccelerator.cpp; real run of each call named "
                 "(2.13 CPU build); libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator is "
                 "available on this system.",
                 "CPU-only builds: a factory with `pin_memory=True` (`torch.empty`, `torch.zeros`, `torch.tensor`...); "
                 "2.13 checked (which release replaced the wording below was not checked)",
                 "GetCPUAllocatorMaybePinned, aten/src/ATen/EmptyTensor.cpp: verbatim in libtorch_cpu.so 2.13; real "
                 "run: torch.empty(3, pin_memory=True) (2.13 CPU build)"),
         Wording("Need to provide pin_memory allocator to use pin memory.",
                 "the same call in 2.7 (checked) and earlier 2.x and 1.x (the wording before)",
                 "GetCPUAllocatorMaybePinned, EmptyTensor.cpp, in older copies of PyTorch's source; in "
                 "libtorch_cpu.so 2.7, absent from libtorch_cpu.so 2.13"),
         Wording("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory won't "
                 "be used.",
                 "`DataLoader(..., pin_memory=True)` without an accelerator: a UserWarning, and the batches come "
                 "unpinned; 2.13 checked",
                 "_BaseDataLoaderIter.__init__, torch/utils/data/dataloader.py (2.13); real run (2.13 CPU build)")),
        "Pinned (page-locked) memory exists for fast copies to an accelerator, and some `torch.accelerator` calls "
        "act on the current accelerator; this PyTorch has none to use (a CPU-only build; a CUDA build without a GPU "
        "usually passes on the driver's message instead). `.cuda()` and `device=\"cuda\"` never print this: on a "
        "CPU-only build they say `Torch not compiled with CUDA enabled`.",
        "Pin and ask only where there is an accelerator: `if torch.accelerator.is_available(): x = x.pin_memory()`, "
        "and `pin_memory=torch.accelerator.is_available()` for a factory or a `DataLoader`. "
        "`torch.accelerator.is_available()`, `device_count()` and `current_accelerator()` are safe everywhere "
        "(False, 0, None). For a GPU, install a PyTorch build for it (Colab: Runtime -> Change runtime type)."),
    Family(
        "ordinal", "Invalid device ordinal",
        (r"invalid device ordinal",),
        (Wording("CUDA error: invalid device ordinal", "CUDA; every version", "CUDA runtime (libcudart.so.12)"),
         Wording("CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some "
                 "other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
                 "CUDA_LAUNCH_BLOCKING=1", "2.7 as quoted; 2.8 and newer raise it as torch.AcceleratorError",
                 "c10/cuda/CUDAException.cpp (lines verbatim in libc10_cuda.so 2.7)")),
        "You asked for a GPU index that does not exist here, e.g. `cuda:1` on a one-GPU machine. Indices "
        "count from 0, and `CUDA_VISIBLE_DEVICES` renumbers the GPUs a process can see.",
        "Check `torch.cuda.device_count()` and use an index below it, or plain `\"cuda\"` (the current device). "
        "Loading a checkpoint saved on another GPU? `torch.load(path, map_location=\"cuda:0\")`."),
    Family(
        "map-location", "Loading a GPU checkpoint without a GPU",
        (r"Attempting to deserialize object on (?:a )?(?P<b>[A-Z]+) device",),
        (Wording("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
                 "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to "
                 "map your storages to the CPU.", _ALL,
                 "real run (2.7, 2.13); torch/serialization.py in 2.7, 2.8, 2.14"),
         Wording("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1. Please use "
                 "torch.load with map_location to map your storages to an existing device.", _ALL,
                 "torch/serialization.py in 2.7, 2.8, 2.14")),
        "`torch.save` records each tensor's device, and `torch.load` puts tensors back there. This checkpoint "
        "was saved on a GPU, and this machine cannot use one.",
        "Say where the tensors should go: `torch.load(path, map_location=\"cpu\")` (or `map_location=device`), "
        "then `model.load_state_dict(state)` and `model.to(device)`.",
        tailor=_tailor_map_location),
    Family(
        "weights-only", "`torch.load` refuses to unpickle an object",
        (r"Weights only load failed", r"Unsupported global: GLOBAL [\w.]+ was not an allowed global by default"),
        (Wording("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
                 "steps only if you trust the source of the checkpoint.",
                 "2.6 and newer by default (earlier with weights_only=True); an UnpicklingError",
                 "torch/serialization.py in 2.7, 2.8, 2.14; real run (2.13); the message goes on with the "
                 "two options"),
         Wording("Unsupported global: GLOBAL torch.nn.modules.linear.Linear was not an allowed global by default.",
                 "2.6 and newer, inside the message above", "torch/_weights_only_unpickler.py in 2.7 and 2.14")),
        "Since PyTorch 2.6 `torch.load` loads with `weights_only=True`: tensors, dicts, lists and numbers, but "
        "no other Python objects, because unpickling an object can run arbitrary code. A whole model saved "
        "with `torch.save(model, path)` is such an object.",
        "Save and load the state dict instead: `torch.save(model.state_dict(), path)`, then "
        "`model.load_state_dict(torch.load(path, map_location=device))`. For a file you trust, "
        "`torch.load(path, weights_only=False)`, or allow its classes with "
        "`torch.serialization.add_safe_globals([...])`.",
        device_problem=False),
    Family(
        "pin", "Pinning a tensor that is not on the CPU",
        (r"cannot pin '(?P<type>[\w.]+)' only dense CPU tensors can be pinned", r"only dense "
                                                                                r"CPU tensors can be pinned"),
        (Wording("cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned",
                 "CUDA; " + _ALL + " (the type name as learner reports quote it)",
                 "suffix verbatim in libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("cannot pin 'MetaFloatType' only dense CPU tensors can be pinned", _ALL, "real run (2.7, 2.13)")),
        "Pinned (page-locked) memory is CPU memory that a GPU can copy from directly. A tensor already on "
        "the GPU (or a sparse one) cannot be pinned; often `pin_memory=True` meets batches a `Dataset` "
        "already moved to the GPU.",
        "Pin CPU tensors only: keep the `Dataset` on the CPU, let `DataLoader(..., pin_memory=True)` pin, "
        "and move each batch with `x.to(device, non_blocking=True)`."),
    Family(
        "leaf", "A moved tensor is not a leaf",
        (r"you can only change requires_grad flags of leaf variables", r"can't optimize a non-leaf Tensor"),
        (Wording("you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
                 "in a subgraph that doesn't require differentiation use var_no_grad = var.detach().", _ALL,
                 "real run (2.7, 2.13); libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("can't optimize a non-leaf Tensor", _ALL,
                 "real run: torch.optim.SGD (2.7, 2.13); torch/optim/optimizer.py")),
        "`t.to(device)` and `t.cuda()` on a tensor that requires grad return the *result* of a move, with a "
        "`grad_fn`: not a leaf. You cannot switch its `requires_grad`, and an optimizer refuses it.",
        "Create the tensor on the device: `torch.randn(3, device=device, requires_grad=True)`, or move "
        "first and ask for grad after: `w = torch.randn(3).to(device).requires_grad_()`. For a model, "
        "`model.to(device)` keeps its parameters leaves."),
    Family(
        "sync-debug", "A synchronising CUDA call, reported by the sync debug mode",
        (r"called a synchronizing CUDA operation",),
        (Wording("called a synchronizing CUDA operation",
                 "CUDA, with `torch.cuda.set_sync_debug_mode(\"warn\")` (a UserWarning) or `\"error\"` (a "
                 "RuntimeError); 2.x CUDA builds (not in the CPU wheel checked here)",
                 "warn_or_error_on_sync, c10/cuda/CUDAFunctions.cpp (read in PyTorch's source)"),
         Wording("called a synchronizing CUDA operation (Triggered internally at "
                 "/pytorch/c10/cuda/CUDAFunctions.cpp:NNN.)",
                 "the warning's form (\"warn\" mode): TORCH_WARN adds where it was raised; 2.x CUDA builds",
                 "TORCH_WARN in warn_or_error_on_sync, c10/cuda/CUDAFunctions.cpp; the suffix as other TORCH_WARN "
                 "messages of this file show it (`CUDA initialization: ...`)")),
        "You turned on `torch.cuda.set_sync_debug_mode`, and a call made the CPU wait for the GPU: `.item()`, "
        "`.cpu()`, `print(t)`, a device-to-host copy, `torch.cuda.synchronize()`, a boolean mask's `nonzero`...",
        "Keep the synchronisations you need (a loss printed every 100 steps) and move the others out of the loop: "
        "accumulate on the device (`total += loss.detach()`) and read once at the end. Set the mode back with "
        "`torch.cuda.set_sync_debug_mode(0)`."),
    Family(
        "generator", "Generator on the wrong device (often a default device and a DataLoader)",
        (r"Expected a '(?P<b>\w+)' device type for generator but found '(?P<a>\w+)'",
         r"(?P<meta>META) device type not an accelerator"),
        (Wording("Expected a 'cuda' device type for generator but found 'cpu'", "CUDA; " + _ALL,
                 "check_generator: format in libtorch_cpu.so and libtorch_cuda.so 2.7, 2.8, 2.14"),
         Wording("Expected a 'cpu' device type for generator but found 'cuda'",
                 "CUDA: a CUDA generator for a draw on the CPU; " + _ALL, "the same check, the other way round"),
         Wording("Expected a 'mps' device type for generator but found 'cpu'", _MAC, "the same check"),
         Wording("META device type not an accelerator.", _ALL,
                 "real run: torch.Generator(device=\"meta\") (2.13); format in libtorch_cpu.so 2.7, 2.8, 2.14")),
        "A random-number generator on one device type drew numbers for another. " + _GENERATOR_RULE,
        "Don't set a default device for the whole program: restore it with `torch.set_default_device(None)` "
        "before making and iterating the DataLoader, and move each batch with `.to(device)`. A generator you "
        "pass yourself must be on the device that draws: `torch.Generator(device=device)`.",
        tailor=_tailor_generator),
    Family(
        "meta-data", "A meta tensor has no data",
        (r"Tensor\.item\(\) cannot be called on meta tensors", r"Cannot copy out of meta tensor; no data!"),
        (Wording("Tensor.item() cannot be called on meta tensors", _ALL,
                 "real run (2.7, 2.13); torch/_meta_registrations.py in 2.7, 2.8, 2.14"),
         Wording("Cannot copy out of meta tensor; no data!", _ALL,
                 "real run: `.cpu()` / `.tolist()` (2.7, 2.13); libtorch_cpu.so 2.7, 2.8, 2.14")),
        "Tensors on `meta` have a shape, a dtype and a device but no values, so nothing can read them "
        "(`.item()`, `print`, `.cpu()`). If a `DataLoader` raised it, `torch.set_default_device(\"meta\")` "
        "made its sampler draw on `meta`.",
        "Make the tensor on a real device. For a model built on meta, `model.to_empty(device=device)` then "
        "`model.load_state_dict(...)`. Reset a default device with `torch.set_default_device(None)`.",
        tailor=_tailor_meta_data),
)


def family(key: str) -> Family:
    """The :class:`Family` with this key (``KeyError`` if there is none)."""
    for f in FAMILIES:
        if f.key == key:
            return f
    raise KeyError(key)


@dataclass
class Explanation:
    """What :func:`explain_error` found. Display it in a notebook, print it in a terminal.

    Attributes:
        known: True when the message is one the course explains.
        key: the family's key (``""`` when unknown).
        title: the family's title.
        cause: why it happened, with what your message says.
        fix: what to do.
        lesson: the lesson notebook and section that teach it.
        message: the line of your error that was recognised.
        argument: the argument the message names (``"mat1"``, ``"weight"``, ``"lengths"``...), or ``""``.
        op: the operation the message names (``"wrapper_CUDA_addmm"``...), or ``""``.
        devices: the devices the message names, odd one first when it says which.
        device_problem: False for the errors the course teaches next to device problems.
        note: what to say instead of "not an error the course knows" (``explain_error()`` with no error yet).
    """

    known: bool
    key: str = ""
    title: str = ""
    cause: str = ""
    fix: str = ""
    lesson: str = ""
    message: str = ""
    argument: str = ""
    op: str = ""
    devices: tuple[str, ...] = ()
    device_problem: bool = True
    note: str = ""

    @property
    def heading(self) -> str:
        """``Device error: <title>`` (or ``Error: <title>`` for a neighbour of the device problems)."""
        return f"{'Device error' if self.device_problem else 'Error'}: {self.title}"

    def text(self) -> str:
        """Plain text for terminals and logs."""
        if not self.known and self.note:
            return self.note
        if not self.known:
            return ("Not an error the course knows: " + (f"“{self.message}”. " if self.message else "")
                    + "This explainer recognises the device problems the course teaches (tensors on different "
                    "devices, GPU memory, moving data between devices) and a few errors met beside them; dtype "
                    "and shape errors are not among them, so it has nothing to say rather than a guess.")
        return "\n".join([self.heading, f"  You got: {self.message}", f"Cause: {self.cause}", f"Fix: {self.fix}"]
                         + ([f"Learn more: {self.lesson}"] if self.lesson else []))

    __str__ = text

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        if not self.known:
            return (f"<div class='course-error-help' style='color:var(--jp-ui-font-color2, #555)'>"
                    f"{html.escape(self.text())}</div>")
        return self.page()

    def page(self, more: str = "") -> str:
        """The HTML view: the heading and the fix first; the cause, the message, the lesson (and ``more``, HTML the
        caller adds) in a note the learner opens on request."""
        rows = [("Cause", code_html(self.cause)), ("You got", f"<code>{html.escape(self.message)}</code>")]
        rows += [("Learn more", lesson_link(self.lesson))] if self.lesson else []   # none in the lesson itself
        details = "".join(f"<div><b>{k}:</b> {v}</div>" for k, v in rows) + more
        return card(f"<b>{code_html(self.heading)}</b><div><b>Fix:</b> {code_html(self.fix)}</div>"
                    f"<details><summary>Why, and where to read more</summary>{details}</details>",
                    "#1c7ed6", "course-error-help")


def lesson_link(lesson: str) -> str:
    """``"06_mismatch_errors, section 1. Meet the error"`` as a link to that heading of the lesson notebook (beside the
    lessons, where a lesson's explanation appears; JupyterLab and Notebook 7 name a heading's anchor by its text
    with ``-`` for spaces). Anything else is shown as text."""
    m = re.fullmatch(r"(\d\d_\w+)(?:, section | \(appendix\): )(.+)", lesson)
    if not m:
        return code_html(lesson)
    heading = m.group(2).split(" › ")[-1].replace("`", "")
    href = f"{m.group(1)}.ipynb#{urllib.parse.quote(heading.replace(' ', '-'), safe='.:()-_')}"
    return f"<a href='{html.escape(href, quote=True)}'>{code_html(lesson)}</a>"


# --- reading what was pasted -----------------------------------------------------------------------

_MAX_CHARS = 1_000_000      # past this only the end is read: the message that matters is last
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")   # colours in a traceback copied from a terminal or notebook


def _safe_str(value: Any) -> str:
    try:
        text = str(value)
        return text if isinstance(text, str) else ""
    except Exception:
        return ""


def _text_of(error: Any) -> str:
    """The text to read: an exception's type, message and traceback, a pasted string, or bytes."""
    if isinstance(error, str):
        return error
    if isinstance(error, (bytes, bytearray, memoryview)):
        return bytes(error[-_MAX_CHARS:]).decode("utf-8", errors="replace")
    if isinstance(error, BaseException):
        message = _safe_str(error)
        if not message:
            try:
                message = " ".join(_safe_str(a) for a in error.args[:5])
            except Exception:
                message = ""
        kind = type(error)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        text = f"{name}: {message}"
        try:  # the frames matter for a few families (a DataLoader's sampler); never fail on them
            frames = "".join(traceback.format_tb(error.__traceback__, limit=30)) if error.__traceback__ else ""
        except Exception:
            frames = ""
        return frames + text
    return _safe_str(error)


#: what ``explain_error()`` says when there is no error to explain
_NO_LAST_ERROR = ("No error to explain yet: `cu.explain_error()` with nothing in the brackets explains the last error "
                  "this session raised, and none has been raised. Run the cell that fails, then call it again, or "
                  "pass the error: `cu.explain_error(error)` (an exception, or the message you copied).")

_LAST = object()   # the default of explain_error's argument: "the last error"


def last_error() -> Optional[BaseException]:
    """The error :func:`explain_error` explains when called with no argument, or ``None``.

    In order: the exception being handled (a call inside an ``except`` block), then the last one that went
    uncaught, which IPython and Jupyter record after the failing cell (``sys.last_exc`` from Python 3.12,
    ``sys.last_value`` before and beside it), as the plain Python prompt does.
    """
    for candidate in (sys.exc_info()[1], getattr(sys, "last_exc", None), getattr(sys, "last_value", None)):
        if isinstance(candidate, BaseException):
            return candidate
    return None


def explain_error(error: Any = _LAST) -> Explanation:
    """Explain an error the course teaches: its cause, its fix and the lesson that teaches it.

    ::

        cu.explain_error()          # the last error: the one the cell above raised (or the one being handled)
        cu.explain_error(error)     # this one

    Args:
        error: an exception, or the text you copied: a bare message, a part of one, or a whole
            traceback, from any PyTorch version, any device. Bytes and other objects are read as text.
            Left out: the last error (see :func:`last_error`): in a notebook, the one the last failing
            cell raised. When there is none yet, the explanation says so (``.known`` is False).

    Returns:
        An :class:`Explanation`. ``.known`` is False for anything the course does not explain (dtype
        and shape errors included): it says so instead of guessing. It never raises.
    """
    if error is _LAST:
        try:
            error = last_error()
        except Exception:
            error = None
        if error is None:
            return Explanation(known=False, note=_NO_LAST_ERROR)
    try:
        text = _text_of(error)
        if len(text) > _MAX_CHARS:
            text = text[-_MAX_CHARS:]
        found = _explain(_ANSI.sub("", text) if "\x1b" in text else text)
        if found.key in ("devices", "no-kernel") and isinstance(error, BaseException):
            found = _tailor_plain_list(found, error)
        return found
    except Exception:  # the explainer must never be the thing that fails
        return Explanation(known=False)


def _is_module(value: Any) -> bool:
    """Whether ``value`` is an ``nn.Module`` (read without importing torch: this module imports none of it)."""
    return any(c.__name__ == "Module" and c.__module__ == "torch.nn.modules.module" for c in type(value).__mro__)


def _plain_layers(error: BaseException) -> list[tuple[str, str, str]]:
    """(owner class, attribute, container type) of each plain list/tuple/dict of layers held by a module whose
    ``forward`` (or a method) is in the traceback, when those layers are not registered in that module."""
    out: list[tuple[str, str, str]] = []
    tb = error.__traceback__
    seen: set[int] = set()
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        tb = tb.tb_next
        if owner is None or id(owner) in seen or not _is_module(owner):
            continue
        seen.add(id(owner))
        try:
            registered = {id(m) for m in owner.modules()}
            for attr, value in vars(owner).items():
                items = list(value.values()) if isinstance(value, dict) else value
                if isinstance(value, (list, tuple, dict)) and any(
                        _is_module(v) and id(v) not in registered for v in items):
                    out.append((type(owner).__name__, attr, type(value).__name__))
        except Exception:
            continue
    return out


def _tailor_plain_list(found: Explanation, error: BaseException) -> Explanation:
    """A mismatch raised in a model that keeps layers in a plain list: the culprit, and the fix, are those layers."""
    layers = _plain_layers(error)
    if not layers:
        return found
    owner, attr, kind = layers[0]
    wrapper = "nn.ModuleDict" if kind == "dict" else "nn.ModuleList"
    cause = (f"`{owner}.{attr}` is a plain Python {kind} of layers. `Module.to` moves only registered parameters, "
             f"buffers and submodules and does not look inside a {kind}, so `model.to(device)` left those layers "
             "where they were made (the CPU) while the rest moved, and `model.parameters()` misses them too. In "
             "`forward` their weights meet tensors on the other device.")
    fix = (f"Register them: in `__init__`, `self.{attr} = {wrapper}(...)` around the same layers, then "
           "`model.to(device)` again, and create the optimizer after that (it never saw these parameters). "
           "`cu.explain_devices(model, {\"x\": x})` lists each layer in a plain container.")
    return replace(found, cause=cause, fix=fix)


def _explain(text: str) -> Explanation:
    best = None  # (end, -start, -rank), family, groups, match
    for rank, fam in enumerate(FAMILIES):
        for pattern in fam.compiled:
            for m in pattern.finditer(text):
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                if fam.check is not None and not fam.check(groups):
                    continue
                # the match that ends last wins (a traceback ends with its error); of overlapping ones, the
                # fullest (it starts first), then the family listed first
                key = (m.end(), -m.start(), -rank)
                if best is None or key > best[0]:
                    best = (key, fam, groups, m)
    if best is None:
        return Explanation(known=False, message=_last_line(text))
    _, fam, groups, m = best
    return _explained(fam, groups, _line_around(text, m), text)


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return _short(line.strip())
    return ""


def _line_around(text: str, m: re.Match) -> str:
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    line = text[start:end if end >= 0 else len(text)].strip()
    return _short(line)


def _short(line: str, limit: int = 600) -> str:
    return shorten(line, limit)


# --- what the message tells: argument, devices, direction ------------------------------------------

def _host(device: str) -> bool:
    return device.split(":")[0] == "cpu"


def _code(device: str) -> str:
    """A device as code: ``"cuda:0"``, or the variable ``device`` when the message does not name one."""
    return f'"{device}"' if device else "device"


def _explained(fam: Family, g: dict, line: str, text: str) -> Explanation:
    """The family's explanation of ``line``, fitted to the message by the family's tailor, if it has one."""
    reading = Reading(g, line, text, g.get("arg", ""), g.get("op", ""), (g.get("a") or "").lower(),
                      (g.get("b") or "").lower(), fam.cause, fam.fix)
    if fam.tailor is not None:
        reading = fam.tailor(reading)
    devices = tuple(d for d in (reading.a, reading.b) if d)
    return Explanation(True, fam.key, fam.title, reading.cause, reading.fix, fam.lesson, line, reading.arg,
                       reading.op, devices, fam.device_problem)


# What an argument named in a device-mismatch message is: the same name means different things in
# different operations (a loss's `weight` is not a layer's weight; `mat2` is a layer's weight inside
# `nn.Linear`; `self` of `addmm` is its bias). Read it by its role in that operation.
_LOSS_OP = re.compile(r"loss|cross_entropy")
_INDEXING_OPS = ("index_select", "embedding", "gather", "take", "index")
_BIAS_FIRST_OPS = ("addmm", "addmv", "baddbmm", "addbmm")
_INPUT_ARGS = ("mat1", "input", "x", "batch1", "query", "key", "value")


def _op_base(op: str) -> str:
    """``wrapper_CUDA__nll_loss2d_forward`` -> ``nll_loss2d``; ``_th_addmm`` -> ``addmm``."""
    base = re.sub(r"^(?:wrapper_|_th_|_thnn_)", "", op)
    base = re.sub(r"^(?:(?:CPU|CUDA|MPS|XPU|HIP|Meta|Sparse\w*|Quantized\w*|Composite\w*)_)+", "", base).strip("_")
    return re.sub(r"_(?:forward|out|functional)$", "", base)


def _role(arg: str, op: str) -> str:
    """The part ``arg`` plays in ``op``: input, layer, loss weight, labels, index... (``""`` when unknown)."""
    base = _op_base(op)
    if arg in ("weight", "pos_weight") and _LOSS_OP.search(base):
        return "loss weight"
    if arg in ("target", "labels"):
        return "labels"
    if arg in ("index", "indices"):
        return "index"
    if arg == "mask":
        return "mask"
    if arg == "self" and base in _INDEXING_OPS:
        return "indexed"
    if arg == "self" and base in _BIAS_FIRST_OPS:
        return "bias"
    if arg in ("mat2", "batch2"):
        return "second"
    if arg in ("weight", "bias"):
        return "layer"
    if arg in _INPUT_ARGS:
        return "input"
    return ""


#: role -> (what the message says; the fix; the fix when the others are on the CPU and the odd one on an
#: accelerator). Filled in with the argument, the operation and the devices.
_ROLE_TEXT = {
    "loss weight": (
        "The loss's class weights (`{arg}` of `{base}`) are on {a}, the model's output and the labels on {B}.",
        "Move the loss, not the model: `loss_fn.to({b_code})` (a loss's `weight` is a buffer, so `Module.to` moves "
        "it), or create the weights there: `nn.CrossEntropyLoss(weight=w.to({b_code}))`.",
        "The loss was moved to {a} but the model's output and labels are on the CPU: move the model and the data to "
        "{a} as well (`model.to(\"{a}\")`, `x = x.to(\"{a}\")`, `y = y.to(\"{a}\")`), or keep everything on the CPU "
        "with `loss_fn.to(\"cpu\")`."),
    "labels": (
        "Your labels (`{arg}`) are on {a}, the model's output{where} on {B}.",
        "Move the labels to where the output is: `y = y.to({b_code})` (keep the result).",
        "The model's output is on the CPU: the model (or its input) was never moved to {a}. `model.to(\"{a}\")` and "
        "`x = x.to(\"{a}\")`; to stay on the CPU instead, `y = y.cpu()`."),
    "index": (
        "The index tensor (`{arg}`) is on {a}, the tensor it indexes on {B}{where}.",
        "Make the index where the data is: `idx = idx.to({b_code})`, or create it with `device=`.",
        "The tensor it indexes is on the CPU (for an `nn.Embedding`, the model was never moved): "
        "`model.to(\"{a}\")`, or index on the CPU with `idx = idx.cpu()`."),
    "mask": (
        "The mask (`{arg}`) is on {a}, the tensor it fills on {B}.",
        "Make the mask where that tensor is: `mask = mask.to({b_code})`, or create it there (`device=scores.device`). "
        "A mask that a module keeps belongs in a buffer, `self.register_buffer(\"mask\", mask)`: `Module.to` moves "
        "buffers.",
        "The tensor it fills is on the CPU: move it (or the model that made it) to {a}, or fill on the CPU with "
        "`mask = mask.cpu()`."),
}
_INDEX_EDGE = " `x[idx]` moves a CPU index for you; `index_select`, `nn.Embedding`, `gather` and `scatter` do not."


def _devices_detail(arg: str, op: str, a: str, b: str, fix: str, ordered: bool) -> tuple[str, str]:
    """(what the message says, the fix for that direction) for a device mismatch.

    ``a`` is the device of the tensor the message singles out (``arg``), ``b`` the device of the others;
    either may be ``""`` when the message does not name it.
    """
    base = _op_base(op)
    where = f" in `{base}`" if base else ""   # the operation, not its kernel's name (wrapper_CUDA_addmm)
    B = b or "a GPU"
    role = _role(arg, op)
    if ordered:
        said = f"Your message names two devices, {b} and {a}, but not which tensor is where." if a and b else ""
        return said, fix
    if not arg:
        if a and b:   # the odd one is known, which of them is the model is not
            return (f"A tensor on {a} met tensors on {b} in one operation, which expected {b}.",
                    "Put the model and its inputs on one device: `model.to(device)` (in place) and "
                    "`x = x.to(device)` (keep the result). `cu.explain_devices(model, {\"x\": x})` shows which "
                    f"tensor is on {a} and which on {b}.")
        if b:
            return (f"A tensor that should be on {b} is not (usually the input is still on the CPU).",
                    f"Move the input to {b} with the model: `x = x.to(\"{b}\")`; if the model is the one on the "
                    "CPU, `model.to(device)`. " + _SEE_WHERE)
        return "", fix
    if role in _ROLE_TEXT:
        fields = dict(arg=arg, base=base, where=where, a=a, B=B, b_code=_code(b))
        said, forward, reverse = (t.format(**fields) for t in _ROLE_TEXT[role])
        if b and _host(b) and not _host(a):   # the odd tensor is the one on the accelerator
            return said, reverse
        return said, forward + (_INDEX_EDGE if role == "index" and _host(a) else "")
    if role == "input":
        said = f"Your input (`{arg}`) is on {a}, the model's tensors{where} on {B}."
        return said, _move_fix(model=b, data=a, role=role)
    if role in ("layer", "bias", "second", "indexed"):
        what = {"layer": f"The layer's `{arg}` (a parameter: part of your model){where} is on {a}, the input on {B}.",
                "bias": f"`self` of `{base}` (in `nn.Linear`, the layer's bias) is on {a}, the input on {B}.",
                "second": f"`{arg}` is the second matrix of `{base}`: in `nn.Linear` the layer's weight, in your own "
                          f"`a @ b` the `b`. It is on {a}, the first one (the input) on {B}.",
                "indexed": f"`self` of `{base}` is the tensor being indexed (in `nn.Embedding`, the layer's weight): "
                           f"it is on {a}, the index on {B}."}[role]
        return what, _move_fix(model=a, data=b, role=role)
    return (f"Argument `{arg}` is on {a}, the other tensors{where} on {B}.",
            f"Move what `{arg}` is to {B}, or the rest to {a}: every tensor of one call on one device. " + fix)


def _move_fix(model: str, data: str, role: str) -> str:
    """The fix when the model's tensors are on ``model`` and the data on ``data`` (``""``: a GPU, not named)."""
    if model and _host(model) and data != model:
        own = {"second": "; for your own `a @ b`, `b = b.to(...)`",
               "indexed": "; for your own tensor, `x = x.to(...)`"}.get(role, "")
        return (f"Move the model to where the data is: `model.to({_code(data)})` (in place{own}). Keeping "
                "everything on the CPU works too, only slower; moving the data to the CPU is rarely what you want.")
    return (f"Move the input to the model's device: `x = x.to({_code(model)})` (`Tensor.to` returns a new tensor: "
            "keep the result), and every other input too.")
