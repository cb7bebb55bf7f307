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
from collections.abc import Iterator
from typing import Any, NoReturn, Optional

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .devicerules import (COMPOSITE, ELEMENTWISE, HOST_ARGUMENTS, MKLDNN_CONVOLUTION,  # noqa: F401  (re-exported)
                          SLOW_CONVOLUTION, arguments, convolution_message, elementwise_message, judge,
                          per_argument_message, tensors, writes)

#: Said under the first error the stand-in raises in a session.
NOTE = ("(This error comes from the course's stand-in for a GPU: there is no GPU here, so the meta device plays "
        "it, and the message is the one a CUDA GPU gives, with meta where the GPU says cuda:0.)")

_MODE: Optional["_StandIn"] = None
_note_pending = True
#: Globals this module rebinds in normal use (the grader's tamper check allows it).
REBOUND = ("_note_pending",)


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


class _StandIn(TorchFunctionMode):
    """Sends a torch call to :class:`_DeviceChecks` only when its arguments mix ``meta`` and CPU tensors."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _mixed(args, kwargs):
            with _DeviceChecks():
                return func(*args, **kwargs)
        return func(*args, **kwargs)


class _DeviceChecks(TorchDispatchMode):
    """Checks each ATen operation that mixes ``meta`` and CPU tensors as the CUDA kernels do
    (:func:`course_utils.devicerules.judge`)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # keep torch._dynamo unimported (it takes seconds)
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _mixed(args, kwargs):
            return func(*args, **kwargs)
        try:
            refused = judge(func, args, kwargs, _on_device)
        except LookupError:
            with self:   # a composite op seen whole (e.g. under inference_mode): check what it is made of
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
            return _run_unknown(func, args, kwargs)
        if refused is not None:
            _raise(refused.message, refused.kind)
        if func.overloadpacket.__name__ in ("masked_fill", "masked_fill_"):
            return _masked_fill(func, args, kwargs)
        return func(*args, **kwargs)


def _on_device(t: torch.Tensor) -> bool:
    return t.is_meta


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


def _masked_fill(func: Any, args: tuple, kwargs: dict) -> Any:
    """``meta`` cannot read a CPU value tensor: it is 0-dim and read as a number on a GPU, so it moves to ``meta``."""
    named = {arg.name: value for arg, value in arguments(func, args, kwargs)}
    self, mask, value = named["self"], named["mask"], named["value"]
    if isinstance(value, torch.Tensor) and value.is_cpu and self.is_meta and value.dim() == 0:
        value = value.to(self.device)
    return func(self, mask, value)


def _run_unknown(func: Any, args: tuple, kwargs: dict) -> Any:
    """An operation without a rule here: ``meta``'s own behaviour, but in the GPU's words, and never a CPU
    tensor that a ``meta`` computation left uninitialised (written into, or made new)."""
    if func.overloadpacket.__name__ != "copy_" and any(
            t.is_cpu for arg, value in arguments(func, args, kwargs) if writes(arg) for t in tensors(value)):
        _raise(elementwise_message())
    try:
        out = func(*args, **kwargs)
    except RuntimeError as error:
        if "is not on the expected device" in str(error):
            _raise(elementwise_message())
        raise
    cpu_inputs = {_memory(t) for value in (*args, *kwargs.values()) for t in tensors(value) if t.is_cpu}
    for t in tensors(out if isinstance(out, (list, tuple)) else [out]):
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
