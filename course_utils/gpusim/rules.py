"""What a CUDA build of PyTorch does when one operation is handed tensors on different devices: the rules and the
wordings that the course's simulated GPU (:mod:`course_utils.gpusim.backend`) follows. Rules are data here; the
machinery that applies them lives there.

Three kinds of CUDA kernels, as PyTorch's code generator makes them (``data/cuda_device_checks.json``, written by
``scripts/device_rules.py`` from each release's own ``native_functions.yaml``):

* **checked argument by argument**: the generated ``wrapper_CUDA_*`` calls ``check_and_update_common_device`` on each
  tensor argument in order (``out`` first): the first sets the device, the first to differ is named (``mat1``,
  ``index``...). No CPU scalar is let through.
* **TensorIterator** kernels (element-wise math, comparisons, reductions): the first non-CPU operand sets the device;
  a 0-dim CPU tensor may take part as an input of a binary operation (in place too: ``x += torch.tensor(1.)``), of
  ``where`` (which moves it itself), as ``lerp``'s weight from 2.6, and as ``addcmul``'s ``tensor2`` (its kernel
  refuses one as ``self`` or ``tensor1`` with a message of its own).
* **their own checks** (advanced indexing, ``masked_fill``, convolution, copies): rules of their own below.

A handful of composite operations (no CUDA kernel of their own) are checked as the kernel they call on a GPU.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, Optional

import torch

_DATA = Path(__file__).resolve().parent.parent / "data" / "cuda_device_checks.json"

#: Composite operations (no CUDA kernel of their own) and the checked call they make on a GPU: overload ->
#: (that kernel, its arguments in the order checked). ``embedding`` is ``weight.index_select(0, indices)``,
#: ``stack`` a ``cat``, and ``mv`` an ``addmv_`` into a result made on the vector's device.
COMPOSITE: dict[str, tuple[str, Callable[[tuple], list[tuple[str, Any]]]]] = {
    "embedding": ("wrapper_CUDA__index_select", lambda a: [("self", a[0]), ("index", a[1])]),
    "stack": ("wrapper_CUDA_cat", lambda a: [("tensors", t) for t in a[0]]),
    "mv": ("wrapper_CUDA_addmv_", lambda a: [("self", a[1]), ("mat", a[0]), ("vec", a[1])]),
}
#: Operations that take a CPU tensor next to GPU ones by design (their GPU kernels read it on the host), and copies
#: between devices: run as they are. ``_pack_padded_sequence`` wants its ``lengths`` on the CPU; ``fill_`` reads its
#: 0-dim value as a number wherever it is (``Fill.cpp``).
HOST_ARGUMENTS = frozenset({"_pack_padded_sequence", "copy_", "_to_copy", "_copy_from", "_copy_from_and_resize",
                            "lift_fresh", "lift_fresh_copy", "_local_scalar_dense", "set_.source_Tensor",
                            "set_.source_Storage", "set_.source_Storage_storage_offset", "is_same_size",
                            "_has_compatible_shallow_copy_type", "alias", "fill_.Tensor", "fill.Tensor"})
#: Element-wise operations that run on TensorIterator's device check without being marked so in the data.
ELEMENTWISE = frozenset({"mse_loss", "smooth_l1_loss"})
#: Convolution backends chosen for a CPU input that call a kernel checking each argument.
SLOW_CONVOLUTION = {"Slow2d": "wrapper_CUDA___slow_conv2d_forward",
                    "SlowDilated2d": "wrapper_CUDA__slow_conv_dilated2d",
                    "SlowDilated3d": "wrapper_CUDA__slow_conv_dilated3d",
                    "SlowTranspose2d": "wrapper_CUDA_slow_conv_transpose2d",
                    "SlowTranspose3d": "wrapper_CUDA__slow_conv_transpose3d"}
MKLDNN_CONVOLUTION = frozenset({"Mkldnn", "MkldnnTranspose"})
#: TensorIterator operations that let a 0-dim CPU tensor in whatever their arity (``where`` moves it itself), and
#: those that let one in at a given argument from a release on (``lerp``'s weight, 2.6).
ANY_CPU_SCALARS = frozenset({"where"})
CPU_SCALAR_ARGUMENT = {"lerp": ("weight", (2, 6)), "lerp_": ("weight", (2, 6))}
#: TensorIterator operations of more than two inputs that let one 0-dim CPU tensor in (``allow_cpu_scalars``), whose
#: CUDA kernel then refuses it at some arguments with a message of its own (``PointwiseOpsKernel.cu``, 2.7 to 2.15):
#: ``addcmul`` reads a CPU scalar as ``tensor2`` only.
OWN_CPU_SCALAR_CHECKS = {"addcmul": {
    "self": "CPU Scalar support for self argument is not supported when calling addcmul on CUDA tensors.",
    "tensor1": "CPU Scalar support for tensor1 argument is not supported when calling addcmul on CUDA tensors. "
               "However, CPU Scalar support for tensor2 is supported, please swap your tensor1 and tensor2 terms."}}
#: TensorIterator's refusal of a second CPU scalar where it lets one in.
TOO_MANY_CPU_SCALARS = "Trying to pass too many CPU scalars to non-CPU kernel!"
#: ``torch.autocast``: the operations CUDA's autocast runs in the lower precision (True) or in float32 (False), from
#: ``autocast_mode.h``'s lists (the ones a course model meets), and the one it refuses (None), in PyTorch's words.
AUTOCAST = {**dict.fromkeys(["mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "einsum", "linear", "mv", "addmv",
                             "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose2d", "prelu",
                             "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "scaled_dot_product_attention"], True),
            **dict.fromkeys(["softmax", "log_softmax", "mse_loss", "l1_loss", "smooth_l1_loss", "nll_loss", "kl_div",
                             "binary_cross_entropy_with_logits", "cosine_similarity", "layer_norm", "rms_norm",
                             "group_norm", "exp", "log", "pow", "sum", "prod", "cumsum", "logsumexp"], False),
            "binary_cross_entropy": None}
AUTOCAST_REFUSED = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\nMany "
                    "models use a sigmoid layer right before the binary cross entropy layer.\nIn this case, combine "
                    "the two layers using torch.nn.functional.binary_cross_entropy_with_logits\nor "
                    "torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to "
                    "autocast.")


class Refusal(NamedTuple):
    """What a CUDA kernel raises for a mix of devices: the exception's type and message."""

    kind: type
    message: str


def release(version: Optional[str] = None) -> tuple[int, int]:
    """``(2, 8)`` for ``"2.8.0+cu128"`` or ``"2.8.0a0+git1234"`` (default: the installed PyTorch)."""
    major, minor = (version or torch.__version__).split("+")[0].split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


# --- wordings ---------------------------------------------------------------------------------------------------

def per_argument_message(arg_name: str, arg_device: Any, common: Any, method: str,
                         version: Optional[str] = None) -> str:
    """The message (without ``RuntimeError: ``) of an operation that checks each argument's device (``addmm``,
    ``index_select``, ...), as PyTorch ``version`` (default: the one installed) words it: the argument ``arg_name``
    (``mat1``, ``index``) is on ``arg_device``, those checked before it on ``common``, in the kernel ``method``
    (``wrapper_CUDA_addmm``).

    Both wordings come from ``common_device_check_failure`` in ATen's ``op_registration/adaption.cpp``: 2.7 names
    the common device first and the argument at the end; 2.8 rewrote it to name the argument first.
    """
    if release(version) >= (2, 8):
        return (f"Expected all tensors to be on the same device, but got {arg_name} is on {arg_device}, "
                f"different from other tensors on {common} (when checking argument in method {method})")
    return (f"Expected all tensors to be on the same device, but found at least two devices, {common} and "
            f"{arg_device}! (when checking argument for argument {arg_name} in method {method})")


def elementwise_message(common: Any = "cuda:0", other: Any = "cpu") -> str:
    """TensorIterator's message (element-wise ops, every version): the first non-CPU device, then the odd one."""
    return f"Expected all tensors to be on the same device, but found at least two devices, {common} and {other}!"


def convolution_message(input_type: str, param: str, param_type: str, mkldnn: bool) -> str:
    """``check_input_same_type_as_parameters`` in ATen's ``Convolution.cpp``: input vs ``param`` (``weight`` or
    ``bias``), by legacy type names (``torch.FloatTensor``, ``torch.cuda.FloatTensor``). ``mkldnn``: PyTorch chose its
    MKLDNN backend (only ever for a CPU input), which adds a clause."""
    clause = f" or input should be a MKLDNN tensor and {param} is a dense tensor" if mkldnn else ""
    return f"Input type ({input_type}) and {param} type ({param_type}) should be the same{clause}"


# --- the data ---------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _tables(version: tuple[int, int]) -> tuple[dict[str, tuple[str, tuple[str, ...]]], frozenset[str]]:
    """The per-argument and TensorIterator tables for a release. A release newer than the data takes the newest
    rules (what changed since is unknown); an older one, the oldest."""
    data = json.loads(_DATA.read_text(encoding="utf-8"))
    releases = [release(r) for r in data["releases"]]
    at = min(max(version, releases[0]), releases[-1])

    def covers(span: list) -> bool:
        return release(span[0]) <= at <= release(span[1])

    checked = {op: (value[0], tuple(value[1])) for op, spans in data["per_argument"].items()
               for first, last, value in spans if covers([first, last])}
    iterator = frozenset(op for op, spans in data["tensor_iterator"].items() if any(covers(s) for s in spans))
    return checked, iterator


@functools.lru_cache(maxsize=None)
def op_key(func: Any) -> str:
    """An ATen overload as ``native_functions.yaml`` names it: ``addmm``, ``addmm.out``, ``scatter_.src``."""
    name = func._schema.name.partition("::")[2]
    return name if func._overloadname == "default" else f"{name}.{func._overloadname}"


def checked_arguments(key: str, version: Optional[str] = None) -> Optional[tuple[str, tuple[str, ...]]]:
    """The CUDA wrapper that checks ``key``'s arguments one by one, and those arguments in order; ``None`` when
    its CUDA kernel does not (or it has none)."""
    return _tables(release(version))[0].get(key)


def is_tensor_iterator(func: Any, version: Optional[str] = None) -> bool:
    """Whether ``func``'s CUDA kernel runs on TensorIterator (its device check lets CPU scalars in)."""
    key = op_key(func)
    return (key in _tables(release(version))[1] or key in ELEMENTWISE
            or torch.Tag.pointwise in getattr(func, "tags", ()))


# --- the rules --------------------------------------------------------------------------------------------------

def tensors(value: Any) -> list[torch.Tensor]:
    """The tensors of one argument: itself, or those in a list or tuple."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def arguments(func: Any, args: tuple, kwargs: dict) -> list[tuple[Any, Any]]:
    """Each schema argument of ``func`` with the value it was given."""
    return [(arg, args[i] if i < len(args) else kwargs.get(arg.name)) for i, arg in enumerate(func._schema.arguments)]


def writes(arg: Any) -> bool:
    """Whether a schema argument is written (``Tensor(a!)``: an ``out=`` or the ``self`` of an in-place op)."""
    return arg.alias_info is not None and arg.alias_info.is_write


def devices(args: Iterable[Any]) -> set[torch.device]:
    """The devices of every tensor among ``args`` (lists and tuples looked into)."""
    return {t.device for value in args for t in tensors(value)}


def judge(func: Any, args: tuple, kwargs: dict, on_device: Callable[[torch.Tensor], bool]) -> Optional[Refusal]:
    """What a CUDA build does with the ATen overload ``func`` given tensors on more than one device: ``None`` when the
    GPU lets it run, else the :class:`Refusal` it raises. ``on_device`` says whether a tensor is on "the GPU" (the
    simulated GPU's tensors), as opposed to the host. ``LookupError`` when no rule here knows ``func`` (the caller
    decides)."""
    key = op_key(func)
    packet = func.overloadpacket.__name__
    if key in HOST_ARGUMENTS or packet in HOST_ARGUMENTS:
        return None
    if key == "index.Tensor":
        return _index(args[0], args[1], on_device)
    if packet in ("index_put", "index_put_", "_index_put_impl_"):
        return _index_put(func, args, kwargs, on_device)
    if packet in ("masked_fill", "masked_fill_"):
        return _masked_fill(func, args, kwargs)
    checked = checked_arguments(key)
    if checked is not None:
        named = dict(arguments(func, args, kwargs))
        by_name = {arg.name: value for arg, value in named.items()}
        return _in_order([(name, t) for name in checked[1] for t in tensors(by_name.get(name))], checked[0])
    if packet in COMPOSITE and key == packet:
        method, named = COMPOSITE[packet]
        return _in_order(named(args), method)
    if packet == "convolution":
        return _convolution(on_device, *args)
    if is_tensor_iterator(func):
        return _tensor_iterator(func, args, kwargs, on_device)
    raise LookupError(key)


def _in_order(named: Iterable[tuple[str, Optional[torch.Tensor]]], method: str) -> Optional[Refusal]:
    """``check_and_update_common_device``: the first tensor sets the device, the first to differ is named."""
    common = None
    for arg_name, t in named:
        if t is None:
            continue
        if common is None:
            common = t.device
        elif t.device != common:
            return Refusal(RuntimeError, per_argument_message(arg_name, t.device, common, method))
    return None


def _index(data: torch.Tensor, indices: Any, on_device: Callable[[torch.Tensor], bool]) -> Optional[Refusal]:
    """``x[idx]`` reads with indices on the CPU or on ``x``'s device (``check_indices_on_cpu_or_selfdevice`` in
    ATen's ``TensorAdvancedIndexing.cpp``)."""
    if any(t.device != data.device and on_device(t) for t in tensors(indices)):
        return Refusal(RuntimeError, f"indices should be either on cpu or on the same device as the indexed tensor "
                                     f"({data.device})")
    return None


def _index_put(func: Any, args: tuple, kwargs: dict, on_device: Callable[[torch.Tensor], bool]) -> Optional[Refusal]:
    """``x[idx] = v``: indices as for reading; the value on ``x``'s device, or a 0-dim CPU tensor (read as a number)."""
    named = {arg.name: value for arg, value in arguments(func, args, kwargs)}
    self, values = named["self"], named["values"]
    refused = _index(self, named["indices"], on_device)
    if refused is None and values.device != self.device and not (values.dim() == 0 and not on_device(values)):
        refused = Refusal(RuntimeError, elementwise_message(self.device, values.device))
    return refused


def _masked_fill(func: Any, args: tuple, kwargs: dict) -> Optional[Refusal]:
    """``masked_fill__cuda``: the mask on the tensor's device (no pass for a 0-dim mask); a value tensor is 0-dim
    and read as a number, wherever it is."""
    named = {arg.name: value for arg, value in arguments(func, args, kwargs)}
    self, mask = named["self"], named["mask"]
    if mask.device != self.device:
        return Refusal(RuntimeError, f"expected self and mask to be on the same device, but got mask on "
                                     f"{mask.device} and self on {self.device}")
    return None


def _tensor_iterator(func: Any, args: tuple, kwargs: dict,
                     on_device: Callable[[torch.Tensor], bool]) -> Optional[Refusal]:
    """TensorIterator: every operand on the first non-CPU device, but the CPU scalars it lets in (see the module)."""
    pairs = arguments(func, args, kwargs)
    outputs = [t for arg, value in pairs if writes(arg) for t in tensors(value)]
    inputs = [(arg.name, t) for arg, value in pairs for t in tensors(value)
              if not writes(arg) or (arg.name == "self" and not arg.kwarg_only)]   # an in-place self is read too
    packet = func.overloadpacket.__name__
    scalar_at = CPU_SCALAR_ARGUMENT.get(packet)
    own_checks = OWN_CPU_SCALAR_CHECKS.get(packet.rstrip("_"))
    operands = outputs + [t for _, t in inputs if not any(t is o for o in outputs)]
    common = next((t.device for t in operands if on_device(t)), None)
    if common is None:
        return None
    let_in = []   # the CPU scalars TensorIterator lets in, by argument name
    for position, (name, t) in enumerate(inputs):
        if t.device == common or any(t is o for o in outputs):
            continue
        scalar = t.dim() == 0 and not on_device(t)
        if scalar and packet in ANY_CPU_SCALARS:
            continue
        if scalar and (len(inputs) == 2 or own_checks is not None
                       or (scalar_at and name == scalar_at[0] and release() >= scalar_at[1])):
            if let_in:
                return Refusal(RuntimeError, TOO_MANY_CPU_SCALARS)
            let_in.append(name)
            continue
        return Refusal(RuntimeError, elementwise_message(common, t.device))
    for t in outputs:
        if t.device != common:
            return Refusal(RuntimeError, elementwise_message(common, t.device))
    refused = next((own_checks[name] for name in let_in if own_checks and name in own_checks), None)
    return Refusal(RuntimeError, refused) if refused else None


def _convolution(on_device: Callable[[torch.Tensor], bool], input: torch.Tensor, weight: torch.Tensor,
                 bias: Optional[torch.Tensor], *params: Any) -> Optional[Refusal]:
    """``_convolution``: a GPU input goes to cuDNN, whose check names the input's and the parameter's types; a CPU
    input goes to the backend PyTorch picks for it (MKLDNN adds a clause to that message, the slow kernels check
    each argument)."""
    backend = "" if on_device(input) else _convolution_backend(input, weight, bias, params)
    if backend in SLOW_CONVOLUTION:
        refused = _in_order([("self", input), ("weight", weight), ("bias", bias)], SLOW_CONVOLUTION[backend])
        if refused:
            return refused
    if backend == "Slow3d":   # its CPU-only kernel, dispatched to the GPU's key
        return Refusal(NotImplementedError, "Could not run 'aten::slow_conv3d_forward' with arguments from the "
                                            "'CUDA' backend.")
    for param, tensor in (("weight", weight), ("bias", bias)):
        if tensor is not None and tensor.device != input.device:
            return Refusal(RuntimeError, convolution_message(legacy_type(input), param, legacy_type(tensor),
                                                             backend in MKLDNN_CONVOLUTION))
    return None


def legacy_type(t: torch.Tensor) -> str:
    """``t.type()`` as a CUDA GPU would say it, with the GPU's tensors named ``torch.cuda.*``."""
    kind = t.device.type
    return t.type() if kind in ("cpu", "cuda", "meta") else f"torch.{kind}.{scalar_type(t.dtype)}Tensor"


def scalar_type(dtype: torch.dtype) -> str:
    """The legacy name of ``dtype`` in tensor type names: ``Float`` (``torch.FloatTensor``), ``Long``..."""
    return torch.empty(0, dtype=dtype).type().removeprefix("torch.").removesuffix("Tensor")


def _convolution_backend(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], params: tuple) -> str:
    """The backend PyTorch's ``_convolution`` picks for a CPU input (it reads the weight's shape, not its device)."""
    try:
        return torch._C._select_conv_backend(input, weight.to("meta"), None if bias is None else bias.to("meta"),
                                             *params).name
    except Exception:  # a PyTorch without the helper, or parameters it refuses: the plain check
        return ""
