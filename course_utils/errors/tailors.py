"""The words that depend on the message: each family's ``tailor`` and ``check``, and the texts the catalogue shares.

A tailor gets a :class:`~course_utils.errors.schema.Reading` with its family's cause and fix and returns it fitted
to what one message says (the devices, the argument, the operation, the type it names). A check rejects a match
that only looks like the family (a dtype look-alike, a missing ``return``).
"""
from __future__ import annotations

import re
from dataclasses import replace

from .schema import Reading

__all__ = ["SAME_DEVICE_RULE", "GENERATOR_RULE", "SEE_WHERE", "data_parallel_fix", "devices_differ", "not_none",
           "tailor_devices", "tailor_op_devices", "tailor_data_parallel", "tailor_numpy", "tailor_no_to",
           "tailor_no_device", "tailor_no_cuda", "tailor_lengths", "tailor_map_location", "tailor_mps_op",
           "tailor_module_prefix", "tailor_generator", "tailor_meta_data", "tailor_oom"]


def _type_device(text: str) -> str:
    """The device type inside a legacy type name: ``torch.cuda.FloatTensor`` -> ``cuda``."""
    return next((name for name in ("cuda", "mps", "xpu", "meta", "mkldnn") if name in text.lower()), "cpu")


def devices_differ(groups: dict) -> bool:
    """``Input type (X) and weight type (Y)``: a device problem only when X and Y name different devices."""
    return "ta" not in groups or _type_device(groups["ta"]) != _type_device(groups.get("tb") or "")


def not_none(groups: dict) -> bool:
    """``'NoneType' object has no attribute 'to'`` is a missing ``return``, not a device problem."""
    return groups.get("type") != "NoneType"


#: The rule every device mismatch breaks: two plain sentences, then its edges (a mismatch's cause first names the
#: tensors; without a model in sight it leaves the model's sentence out, between two GPUs the edges too).
_RULE = "PyTorch runs each operation on one device and does not move tensors for you."
_MODEL = " The model's parameters, the input and anything made inside `forward` must all be on one device."
_EDGES = (" The few exceptions: one 0-dim CPU tensor joins an element-wise operation of two tensors like a number "
          "(`x * torch.tensor(2.0)`), and so do 0-dim CPU tensors in `torch.where`, `torch.lerp`'s weight from 2.6 "
          "and `addcmul`'s last factor, but not `clamp(min=t)` or `addmm`; `x[idx]` copies a CPU index for you.")
SAME_DEVICE_RULE = _RULE + _MODEL + _EDGES

GENERATOR_RULE = ("Usually `torch.set_default_device(\"cuda\")` is at work: a shuffling `DataLoader`'s sampler "
                  "then draws its permutation on the GPU with a CPU generator. Or a `torch.Generator()` made "
                  "on the CPU is used for GPU tensors.")

#: The last sentence of the mismatch fix: how to see which tensor is where.
SEE_WHERE = "To see which tensor is where, run `cu.explain_devices(model, {\"x\": x})`."


def data_parallel_fix(device: str) -> str:
    """The fix for a DataParallel whose model is not on ``device``, its ``device_ids[0]``."""
    return (f"Move the model to `device_ids[0]` (by default `cuda:0`) before wrapping it: `model.to(\"{device}\")`, "
            f"then `nn.DataParallel(model)` (or move the wrapper, `dp_model.to(\"{device}\")`). The inputs may stay "
            "on the CPU: DataParallel scatters them to the GPUs itself. Moving the inputs to the CPU does not help.")


# --- tailors: what one message adds to its family's text (a family's ``tailor``) ------------------------

def tailor_devices(r: Reading) -> Reading:
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
    rule = _RULE + _EDGES if _no_model_in_sight(r) else SAME_DEVICE_RULE
    if _two_gpus(a, b):
        said, fix = _two_gpus_detail(arg, a, b)
        rule = _RULE
    return replace(r, arg=arg, a=a, b=b, fix=fix, cause=f"{said} {rule}" if said else r.cause)


def _two_gpus(a: str, b: str) -> bool:
    """Whether a mismatch is between two GPUs of one kind (``cuda:1`` and ``cuda:0``), not a GPU and the CPU."""
    kinds = {d.split(":")[0] for d in (a, b)}
    return bool(a and b) and a != b and len(kinds) == 1 and not kinds & {"cpu", "meta"}


def _two_gpus_detail(arg: str, a: str, b: str) -> tuple[str, str]:
    """(what the message says, the fix) for tensors on two GPUs: the CPU advice would not help."""
    what = f"`{arg}` is on {a}, the other tensors on {b}" if arg else f"Your message names two GPUs, {a} and {b}"
    said = (f"{what}: one operation got tensors on two GPUs of this machine. Usually a tensor was made or moved "
            "with plain `\"cuda\"`, which means the current GPU (`torch.cuda.current_device()`, changed by "
            "`torch.cuda.set_device`), and the others are on another GPU; or a module keeps a tensor as a plain "
            "attribute, which `nn.DataParallel` does not copy to each GPU (it copies parameters and buffers); or a "
            "checkpoint saved on another GPU was loaded without `map_location`.")
    fix = ("Put the tensors of the failing line on one GPU: `x = x.to(y.device)` moves `x` to the GPU `y` is on "
           "(`model.to(y.device)` for a model). Then name one device once, `device = torch.device(\"cuda:0\")`, "
           "and use it everywhere (plain `\"cuda\"` follows `torch.cuda.set_device`; `CUDA_VISIBLE_DEVICES` "
           "renumbers the GPUs), and keep a module's tensors in buffers (`self.register_buffer(...)`). " + SEE_WHERE)
    return said, fix


_MODULE_FRAME = re.compile(r"torch[/\\]nn[/\\]modules[/\\]")


def _no_model_in_sight(r: Reading) -> bool:
    """Whether a traceback came with the message and no layer is in it (``a + b`` in a cell): no model to move."""
    return 'File "' in r.text and not _MODULE_FRAME.search(r.text)


def _fix_in_sight(r: Reading) -> str:
    """The family's fix, or the fix for plain tensors when no model is in sight."""
    return r.fix if not _no_model_in_sight(r) else (
        "Put the tensors of the failing line on one device: move the one that is elsewhere with `t = t.to(device)` "
        "(`Tensor.to` returns a new tensor: keep the result), or create it there with `device=`. To see which is "
        "where, print each one's `.device`.")


def tailor_data_parallel(r: Reading) -> Reading:
    return replace(r, fix=data_parallel_fix(r.b)) if r.b else r


def tailor_numpy(r: Reading) -> Reading:
    if r.a == "meta":
        return replace(r, fix="A meta tensor has no values, so there is nothing to convert, even after `.cpu()`: "
                              "make the tensor on a real device (`device=\"cpu\"`), then `t.detach().numpy()`.")
    return replace(r, cause=f"Your tensor is on {r.a}. {r.cause}") if r.a else r


_CONTAINERS = ("dict", "collections.OrderedDict", "OrderedDict", "collections.defaultdict", "defaultdict",
               "list", "tuple")


def tailor_no_to(r: Reading) -> Reading:
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


def tailor_no_device(r: Reading) -> Reading:
    kind = r.groups.get("type", "")
    return r if kind not in _CONTAINERS + ("numpy.ndarray",) else replace(
        r, cause=f"A `{kind}` has no `.device`: only tensors (and parameters and buffers) have one.",
        fix="Look at the tensors inside: `{k: v.device for k, v in batch.items()}` for a dict, "
            "`[t.device for t in batch]` for a list. A NumPy array always lives on the CPU.")


def tailor_no_cuda(r: Reading) -> Reading:
    """A driver older than the CUDA the build needs: a GPU and a driver are there, the versions disagree."""
    return r if "driver on your system is too old" not in r.line else replace(
        r, cause="This PyTorch was built with a newer CUDA than your NVIDIA driver supports (the version in brackets "
                 "is the newest CUDA the driver knows, 12080 = 12.8; `nvidia-smi` shows it as \"CUDA Version\"). The "
                 "GPU is there, but `torch.cuda.is_available()` is False.",
        fix="Compare `nvidia-smi`'s \"CUDA Version\" with `torch.version.cuda`. Then either update the NVIDIA driver, "
            "or install a PyTorch built for an older CUDA (pytorch.org's selector, e.g. the cu126 index) that your "
            "driver supports.")


def tailor_lengths(r: Reading) -> Reading:
    return replace(r, cause=f"Your `lengths` are on {r.a}. {r.cause}") if r.a else r


def tailor_map_location(r: Reading) -> Reading:
    return r if "device_count()" not in r.line else replace(
        r, cause="`torch.save` records each tensor's device, and `torch.load` puts tensors back there. This "
                 "checkpoint was saved on a GPU index this machine does not have.",
        fix="Say where the tensors should go: `torch.load(path, map_location=\"cuda:0\")` (or `map_location=device`).")


def tailor_oom(r: Reading) -> Reading:
    """Out of memory inside ``torch.load`` (its frame in the traceback): the checkpoint goes back where it was saved."""
    return r if not re.search(r'serialization\.py", line \d+, in (?:load|_load|_legacy_load)\b', r.text) else replace(
        r, cause="`torch.load` ran out of GPU memory while loading: it puts each tensor on the device it was saved "
                 "from (GPU 0 for most checkpoints) unless `map_location` says otherwise, however full that GPU is "
                 "(on a machine with several GPUs, every process loads onto GPU 0).",
        fix="Load to the CPU or to this process's own device: `torch.load(path, map_location=\"cpu\")` (or "
            "`map_location=device`), then `model.load_state_dict(state)`.")


def tailor_mps_op(r: Reading) -> Reading:
    return replace(r, cause=f"`{r.op}` is not implemented for MPS in your PyTorch. Apple's MPS backend does not have "
                            "every operator yet.") if r.op else r


def tailor_module_prefix(r: Reading) -> Reading:
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


def tailor_generator(r: Reading) -> Reading:
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
    return replace(r, cause=f"A generator on {a} drew numbers for {b}. {GENERATOR_RULE}") if a and b else r


def tailor_meta_data(r: Reading) -> Reading:
    return r if not _from_dataloader(r.text) else replace(
        r, cause="A shuffling `DataLoader` drew its random seed on `meta`, where tensors have no values: "
                 "`torch.set_default_device(\"meta\")` (or a `with torch.device(\"meta\")` block) is in effect.",
        fix="Reset the default device before making and iterating the DataLoader: `torch.set_default_device(None)`, "
            "and create tensors on a device with `device=` instead.")


def tailor_op_devices(r: Reading) -> Reading:
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


# --- what the message tells: argument, devices, direction ------------------------------------------

def _host(device: str) -> bool:
    return device.split(":")[0] == "cpu"


def _code(device: str) -> str:
    """A device as code: ``"cuda:0"``, or the variable ``device`` when the message does not name one."""
    return f'"{device}"' if device else "device"


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


#: The part an argument plays whatever the operation (a loss's ``weight`` and ``self`` are read by the operation).
_ARG_ROLES = {"target": "labels", "labels": "labels", "index": "index", "indices": "index", "mask": "mask",
              "mat2": "second", "batch2": "second", "weight": "layer", "bias": "layer",
              **dict.fromkeys(_INPUT_ARGS, "input")}


def _role(arg: str, op: str) -> str:
    """The part ``arg`` plays in ``op``: input, layer, loss weight, labels, index... (``""`` when unknown)."""
    base = _op_base(op)
    if arg in ("weight", "pos_weight") and _LOSS_OP.search(base):
        return "loss weight"
    if arg == "self":
        return "indexed" if base in _INDEXING_OPS else "bias" if base in _BIAS_FIRST_OPS else ""
    return _ARG_ROLES.get(arg, "")


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
    either may be ``""`` when the message does not name it."""
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
                    "CPU, `model.to(device)`. " + SEE_WHERE)
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
