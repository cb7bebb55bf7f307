"""The stand-in GPU: make PyTorch's ``meta`` device refuse CPU tensors the way a CUDA GPU does.

Without an accelerator the course puts on ``meta`` what a GPU learner puts on ``cuda:0``. On its own,
``meta`` is a poor stand-in when mixed with CPU tensors: ``cpu_x @ meta_w`` or a convolution returns a
CPU tensor of uninitialised memory, and ``cpu_x + meta_y`` says "Tensor on device meta is not on the
expected device cpu!", which no GPU prints. While :func:`enable` is in force, an operation that mixes
``meta`` and CPU tensors raises the error a CUDA GPU of the installed PyTorch raises for that operation,
with ``meta`` where the GPU says ``cuda:0``; the first such error of the session also says where it
comes from. PyTorch's own leniencies, which a GPU shares, stay allowed: a 0-dim CPU tensor in element-wise
math, a CPU index or mask in ``x[idx]`` and ``x[mask] = v``, ``pack_padded_sequence``'s CPU lengths. Code that
uses ``meta`` alone is unchanged.

How: a function mode sees every torch call and, only when a call mixes the two devices, runs it under a
dispatch mode that checks each ATen operation as the CUDA kernels do. :func:`paused` lifts it for timed
code. The modes are per thread: enable it in the thread that runs the learner's code.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any, NoReturn, Optional

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

#: Said under the first error the stand-in raises in a session.
NOTE = ("(This error comes from the course's stand-in for a GPU: there is no GPU here, so the meta device plays "
        "it, and the message is the one a CUDA GPU gives, with meta where the GPU says cuda:0.)")

#: Operations whose CUDA kernel checks its tensor arguments one by one (the generated ``wrapper_CUDA_*``,
#: ``device_check`` left at its default in ``native_functions.yaml``): overload -> the kernel's name.
PER_ARGUMENT = {
    "mm.default": "wrapper_CUDA_mm", "mm.out": "wrapper_CUDA_mm_out_out",
    "bmm.default": "wrapper_CUDA_bmm", "bmm.out": "wrapper_CUDA_bmm_out_out",
    "addmm.default": "wrapper_CUDA_addmm", "addmm.out": "wrapper_CUDA_addmm_out_out",
    "addmv.default": "wrapper_CUDA_addmv", "addmv_.default": "wrapper_CUDA_addmv_",
    "baddbmm.default": "wrapper_CUDA_baddbmm", "addbmm.default": "wrapper_CUDA__addbmm",
    "dot.default": "wrapper_CUDA__dot", "vdot.default": "wrapper_CUDA__vdot", "equal.default": "wrapper_CUDA__equal",
    "cat.default": "wrapper_CUDA_cat", "cat.out": "wrapper_CUDA_cat_out_out",
    "index_select.default": "wrapper_CUDA__index_select", "index_select.out": "wrapper_CUDA_out_index_select_out",
    "gather.default": "wrapper_CUDA_gather", "scatter.src": "wrapper_CUDA_scatter_src",
    "index_add.default": "wrapper_CUDA_index_add", "take.default": "wrapper_CUDA__take",
    "masked_select.default": "wrapper_CUDA__masked_select", "clamp.Tensor": "wrapper_CUDA_clamp_Tensor",
    "nll_loss_forward.default": "wrapper_CUDA_nll_loss_forward",
    "nll_loss2d_forward.default": "wrapper_CUDA__nll_loss2d_forward",
    "huber_loss.default": "wrapper_CUDA__huber_loss",
    "native_layer_norm.default": "wrapper_CUDA__native_layer_norm",
    "_embedding_bag.default": "wrapper_CUDA___embedding_bag",
}
#: Composite operations (no CUDA kernel of their own) and the checked call they make on a GPU: overload ->
#: (that kernel, its arguments in the order checked). ``embedding`` is ``weight.index_select(0, indices)``,
#: ``stack`` a ``cat``, and ``mv`` an ``addmv_`` into a result made on the vector's device.
COMPOSITE = {
    "embedding.default": ("wrapper_CUDA__index_select", lambda a: [("self", a[0]), ("index", a[1])]),
    "stack.default": ("wrapper_CUDA_cat", lambda a: [("tensors", t) for t in a[0]]),
    "mv.default": ("wrapper_CUDA_addmv_", lambda a: [("self", a[1]), ("mat", a[0]), ("vec", a[1])]),
}
#: Operations that take a CPU tensor next to GPU ones by design (their GPU kernels read it on the host): run as
#: they are. ``_pack_padded_sequence`` wants its ``lengths`` on the CPU and returns ``batch_sizes`` there.
HOST_ARGUMENTS = frozenset({"_pack_padded_sequence.default"})
#: Element-wise operations without the ``pointwise`` tag that run on TensorIterator's device check.
ELEMENTWISE = frozenset({"mse_loss.default", "smooth_l1_loss.default"})
#: Convolution backends chosen for a CPU input that call a kernel checking each argument.
SLOW_CONVOLUTION = {"Slow2d": "wrapper_CUDA___slow_conv2d_forward",
                    "SlowDilated2d": "wrapper_CUDA__slow_conv_dilated2d",
                    "SlowDilated3d": "wrapper_CUDA__slow_conv_dilated3d",
                    "SlowTranspose2d": "wrapper_CUDA_slow_conv_transpose2d",
                    "SlowTranspose3d": "wrapper_CUDA__slow_conv_transpose3d"}
MKLDNN_CONVOLUTION = frozenset({"Mkldnn", "MkldnnTranspose"})

_MODE: Optional["_StandIn"] = None
_note_pending = True


def enable() -> None:
    """Make ``meta`` stand in for a CUDA GPU in this thread until :func:`disable` (calling it again does nothing)."""
    global _MODE
    if _MODE is None:
        _MODE = _StandIn()
        _MODE.__enter__()


def disable() -> None:
    """Give ``meta`` its own behaviour back (a no-op when the stand-in is off)."""
    global _MODE
    if _MODE is not None:
        _remove(_MODE)
        _MODE = None


def is_enabled() -> bool:
    """Whether the stand-in is on (:func:`paused` does not change the answer)."""
    return _MODE is not None


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Lift the stand-in for a ``with`` block, e.g. around timed code, so that it costs nothing there."""
    mode = _MODE
    if mode is None or not _remove(mode):
        yield
        return
    try:
        yield
    finally:
        if _MODE is mode:
            mode.__enter__()


def per_argument_message(arg_name: str, arg_device: Any, common: Any, method: str,
                         version: str | None = None) -> str:
    """The message of an operation that checks each argument's device (``addmm``, ``index_select``, ...),
    as PyTorch ``version`` (default: the one installed) words it.

    Both wordings come from ``common_device_check_failure`` in ATen's ``op_registration/adaption.cpp``: 2.7
    names the common device first and the argument at the end; 2.8 rewrote it to name the argument first.

    Args:
        arg_name: the argument whose device differs (``mat1``, ``index``).
        arg_device: that argument's device.
        common: the device of the arguments checked before it.
        method: the kernel, e.g. ``wrapper_CUDA_addmm``.
        version: a PyTorch version string; ``torch.__version__`` when None.

    Returns:
        The message, without the ``RuntimeError: `` prefix.
    """
    if _major_minor(version or torch.__version__) >= (2, 8):
        return (f"Expected all tensors to be on the same device, but got {arg_name} is on {arg_device}, "
                f"different from other tensors on {common} (when checking argument in method {method})")
    return (f"Expected all tensors to be on the same device, but found at least two devices, {common} and "
            f"{arg_device}! (when checking argument for argument {arg_name} in method {method})")


def elementwise_message(common: Any = "meta", other: Any = "cpu") -> str:
    """TensorIterator's message (element-wise ops, every version): the first non-CPU device, then the odd one."""
    return f"Expected all tensors to be on the same device, but found at least two devices, {common} and {other}!"


def convolution_message(input_type: str, param: str, param_type: str, mkldnn: bool) -> str:
    """``check_input_same_type_as_parameters`` in ATen's ``Convolution.cpp``: input vs ``weight`` or ``bias``.

    Args:
        input_type, param_type: legacy type names (``torch.FloatTensor``, ``torch.cuda.FloatTensor``).
        param: ``"weight"`` or ``"bias"``.
        mkldnn: whether PyTorch chose its MKLDNN backend (only ever for a CPU input), which adds a clause.
    """
    clause = f" or input should be a MKLDNN tensor and {param} is a dense tensor" if mkldnn else ""
    return f"Input type ({input_type}) and {param} type ({param_type}) should be the same{clause}"


def _major_minor(version: str) -> tuple[int, int]:
    """``(2, 8)`` for ``"2.8.0+cu128"`` or ``"2.8.0a0+git1234"``."""
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


class _StandIn(TorchFunctionMode):
    """Sends a torch call to :class:`_DeviceChecks` only when its arguments mix ``meta`` and CPU tensors."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _mixed(args, kwargs):
            with _DeviceChecks():
                return func(*args, **kwargs)
        return func(*args, **kwargs)


class _DeviceChecks(TorchDispatchMode):
    """Checks each ATen operation that mixes ``meta`` and CPU tensors as the CUDA kernels do."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # keep torch._dynamo unimported (it takes seconds)
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.__name__
        if name in HOST_ARGUMENTS or not _mixed(args, kwargs):
            return func(*args, **kwargs)
        if name == "index.Tensor" and args[0].is_cpu:
            _check_index_devices(args[0], args[1])
        if func.overloadpacket.__name__ in ("masked_fill", "masked_fill_"):
            return _masked_fill(func, args, kwargs)
        if name in PER_ARGUMENT:
            _check_in_order(_per_argument(func, args, kwargs), PER_ARGUMENT[name])
        elif name in COMPOSITE:
            method, named = COMPOSITE[name]
            _check_in_order(named(args), method)
        elif name == "convolution.default":
            _check_convolution(*args)
        elif name in ELEMENTWISE or torch.Tag.pointwise in func.tags:
            _check_elementwise(func, args, kwargs)
        else:
            with self:   # a composite op seen whole (e.g. under inference_mode): check what it is made of
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
            return _run_unknown(func, args, kwargs)
        return func(*args, **kwargs)


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for t in value if isinstance(t, torch.Tensor)]
    return []


def _mixed(args: tuple, kwargs: dict) -> bool:
    """Whether the arguments (or the lists among them) hold both a ``meta`` tensor and a CPU tensor."""
    meta = cpu = False
    for values in (args, kwargs.values()) if kwargs else (args,):
        for value in values:
            for t in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(t, torch.Tensor):
                    if t.is_meta:
                        meta = True
                    elif t.is_cpu:
                        cpu = True
    return meta and cpu


def _arguments(func: Any, args: tuple, kwargs: dict) -> list[tuple[Any, Any]]:
    return [(arg, args[i] if i < len(args) else kwargs.get(arg.name)) for i, arg in enumerate(func._schema.arguments)]


def _writes(arg: Any) -> bool:
    return arg.alias_info is not None and arg.alias_info.is_write


def _per_argument(func: Any, args: tuple, kwargs: dict) -> list[tuple[str, torch.Tensor]]:
    """The tensor arguments in the order the generated CUDA wrapper checks them: ``out`` first, then the
    positional ones (keyword-only tensors are not checked)."""
    pairs = _arguments(func, args, kwargs)
    ordered = [p for p in pairs if p[0].kwarg_only and _writes(p[0])] + [p for p in pairs if not p[0].kwarg_only]
    return [(arg.name, t) for arg, value in ordered for t in _tensors(value)]


def _check_in_order(named: Iterable[tuple[str, Optional[torch.Tensor]]], method: str) -> None:
    """``check_and_update_common_device``: the first tensor sets the device, the first to differ is named."""
    common = None
    for arg_name, t in named:
        if t is None:
            continue
        if common is None:
            common = t.device
        elif t.device != common:
            _raise(per_argument_message(arg_name, t.device, common, method))


def _check_index_devices(data: torch.Tensor, indices: Any) -> None:
    """``x[idx]`` reads with indices on the CPU or on ``x``'s device (``check_indices_on_cpu_or_selfdevice`` in
    ATen's ``TensorAdvancedIndexing.cpp``): a GPU index into CPU data is refused."""
    if any(t.device != data.device and not t.is_cpu for t in _tensors(indices)):
        _raise(f"indices should be either on cpu or on the same device as the indexed tensor ({data.device})")


def _masked_fill(func: Any, args: tuple, kwargs: dict) -> Any:
    """``masked_fill__cuda``: the mask on the tensor's device (no pass for a 0-dim mask); a value tensor is 0-dim
    and read as a number, wherever it is."""
    named = {arg.name: value for arg, value in _arguments(func, args, kwargs)}
    self, mask, value = named["self"], named["mask"], named["value"]
    if mask.device != self.device:
        _raise(f"expected self and mask to be on the same device, but got mask on {mask.device} and self on "
               f"{self.device}")
    if isinstance(value, torch.Tensor) and value.is_cpu and self.is_meta and value.dim() == 0:
        value = value.to(self.device)
    return func(self, mask, value)


def _check_elementwise(func: Any, args: tuple, kwargs: dict) -> None:
    """TensorIterator: outputs and inputs on the first non-CPU device, except 0-dim CPU inputs: one for a
    binary op, any number for ``where`` (which moves them itself), none otherwise."""
    pairs = _arguments(func, args, kwargs)
    outputs = [t for arg, value in pairs if _writes(arg) for t in _tensors(value)]
    inputs = [t for arg, value in pairs if not _writes(arg) for t in _tensors(value)]
    allowed = len(inputs) if func.overloadpacket.__name__ == "where" else int(len(inputs) == 2)
    cpu_inputs = [t for t in inputs if not t.is_meta]
    if (any(not t.is_meta for t in outputs) or len(cpu_inputs) > allowed
            or any(t.dim() != 0 for t in cpu_inputs)):
        _raise(elementwise_message())


def _check_convolution(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], *params: Any) -> None:
    """``_convolution``: a GPU input (here ``meta``) goes to cuDNN, whose check names the input's and the
    parameter's types; a CPU input goes to the backend PyTorch picks for it (MKLDNN adds a clause to that
    message, the slow kernels check each argument)."""
    backend = "" if input.is_meta else _convolution_backend(input, weight, bias, params)
    if backend in SLOW_CONVOLUTION:
        _check_in_order([("self", input), ("weight", weight), ("bias", bias)], SLOW_CONVOLUTION[backend])
    if backend == "Slow3d":   # its CPU-only kernel, dispatched to the GPU's key
        _raise("Could not run 'aten::slow_conv3d_forward' with arguments from the 'CUDA' backend.",
               NotImplementedError)
    for param, tensor in (("weight", weight), ("bias", bias)):
        if tensor is not None and tensor.type() != input.type():
            _raise(convolution_message(input.type(), param, tensor.type(), backend in MKLDNN_CONVOLUTION))


def _convolution_backend(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         params: tuple) -> str:
    """The backend PyTorch's ``_convolution`` picks for a CPU input (it reads the weight's shape, not its device)."""
    try:
        return torch._C._select_conv_backend(input, weight, bias, *params).name
    except Exception:  # a PyTorch without the helper, or parameters it refuses: the plain check
        return ""


def _run_unknown(func: Any, args: tuple, kwargs: dict) -> Any:
    """An operation without a rule here: ``meta``'s own behaviour, but in the GPU's words, and never a CPU
    tensor that a ``meta`` computation left uninitialised (written into, or made new)."""
    if func.overloadpacket.__name__ != "copy_" and any(
            t.is_cpu for arg, value in _arguments(func, args, kwargs) if _writes(arg) for t in _tensors(value)):
        _raise(elementwise_message())
    try:
        out = func(*args, **kwargs)
    except RuntimeError as error:
        if "is not on the expected device" in str(error):
            _raise(elementwise_message())
        raise
    cpu_inputs = {_memory(t) for value in (*args, *kwargs.values()) for t in _tensors(value) if t.is_cpu}
    for t in _tensors(out if isinstance(out, (list, tuple)) else [out]):
        if t.is_cpu and t.numel() and _memory(t) not in cpu_inputs:   # not a view of a CPU input: made up
            _raise(elementwise_message())
    return out


def _memory(t: torch.Tensor) -> Optional[int]:
    return t.untyped_storage().data_ptr() if t.layout == torch.strided else None


def _raise(message: str, kind: type[Exception] = RuntimeError) -> NoReturn:
    """Raise the GPU's error; the first one of the session says where it comes from."""
    __tracebackhide__ = True  # noqa: F841  (IPython and pytest leave this frame out of tracebacks)
    global _note_pending
    if _note_pending:
        _note_pending = False
        message = f"{message}\n{NOTE}"
    raise kind(message) from None


def _remove(mode: TorchFunctionMode) -> bool:
    """Take ``mode`` off this thread's function-mode stack, keeping the modes above it; False if absent."""
    from torch.overrides import _get_current_function_mode_stack, _pop_mode, _push_mode

    if not any(m is mode for m in _get_current_function_mode_stack()):
        return False
    above = []
    while (top := _pop_mode()) is not mode:
        above.append(top)
    for m in reversed(above):
        _push_mode(m)
    return True
