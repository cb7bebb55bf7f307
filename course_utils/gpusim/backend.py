"""The simulated GPU: a device of the course's own, ``simgpu``, whose tensors hold real values in host memory.

On a machine without an accelerator, :func:`enable` registers it through PyTorch's Python backend (the renamed
``PrivateUse1`` key and ``torch.utils.backend_registration._setup_privateuseone_for_python_backend``, from PyTorch
2.10; this module owns every use of that experimental API). Its tensors print, train, save and load as a GPU's do,
``.item()`` and ``.tolist()`` read them, ``.numpy()`` is refused as on CUDA, and an operation that mixes them with
CPU tensors (or ``simgpu:0`` with ``simgpu:1``) raises what a CUDA build of the installed PyTorch raises for that
operation (:mod:`course_utils.gpusim.rules`), with ``simgpu:0`` where the GPU says ``cuda:0``.

What it simulates: two devices (``simgpu:0`` and ``simgpu:1``), the values, the device rules and their errors,
``torch.accelerator``'s answers. What it does not: speed (its work is the CPU's, plus a little bookkeeping: the
course times the host tensors instead), memory limits, asynchronous execution, pinned memory, and CUDA's own API
(``.cuda()``, ``torch.cuda.*``, ``CUDA_VISIBLE_DEVICES``). Autograd runs on ``simgpu:0`` only: PyTorch's engine keeps
one queue for a Python backend. Random generators of its own (``torch.Generator(device="simgpu")``) do not exist:
it draws with the CPU's generator, and takes a CPU generator where a GPU would refuse one. ``torch.autocast`` casts
what CUDA's autocast casts among the operations a course model uses (matrix products and convolutions to the lower
precision; softmax, losses and reductions to float32), not its whole list.

What PyTorch cannot do for a Python backend, :func:`enable` supplies by wrapping three functions: ``torch.load``
(``map_location="simgpu"``), ``Tensor.pin_memory`` (an ordinary copy: no pinned memory), ``torch.accelerator.
synchronize`` (nothing to wait for). ``Module.to`` keeps each parameter's identity on the way to the simulated GPU,
as on a GPU; on the way back to the CPU PyTorch gives the module new parameters (a GPU would keep them).

Registration is once per process and cannot be undone: with it, ``torch.accelerator.is_available()`` is True and
``current_accelerator()`` is ``simgpu``, so device-agnostic code picks it, as it would pick a GPU.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch.utils._pytree import tree_flatten, tree_map

from ..device import SIMULATED
from .rules import Refusal, elementwise_message, judge, op_key, scalar_type

#: The device type's name: nobody mistakes it for hardware.
NAME = SIMULATED
#: How many simulated devices there are.
COUNT = 2
#: Said under the first device error of a session.
NOTE = (f"(This error comes from the course's simulated GPU: the message is the one a CUDA GPU gives, with "
        f"{NAME}:0 where the GPU says cuda:0.)")

_STATE = {"enabled": False, "libraries": []}
_current = 0          # the current simulated device (torch.simgpu.set_device, torch.simgpu.device(i))
_note_pending = True
#: Globals this module rebinds in normal use (the grader's tamper check allows it).
REBOUND = ("_current", "_note_pending")

#: Whether :func:`wanted` may say yes in this process (a test suite's own process sets it False: the registration
#: could not be undone for the tests after it).
ALLOWED = True


def wanted(this_process: bool = True) -> bool:
    """Whether ``cu.setup()`` should hand out the simulated GPU where there is no accelerator: it can be registered
    here and this process (:data:`ALLOWED`) did not say no. With ``this_process=False``: whether it would in a new
    Python process, such as a notebook's kernel started from here."""
    return (ALLOWED or not this_process) and available()


def available() -> bool:
    """Whether this PyTorch can register the simulated GPU (2.10 and later: its Python backend registration)."""
    import torch.utils.backend_registration as registration

    return hasattr(registration, "_setup_privateuseone_for_python_backend") and hasattr(torch._C, "_acc")


def is_enabled() -> bool:
    """Whether :func:`enable` registered the simulated GPU in this process."""
    return bool(_STATE["enabled"])


def is_simulated(device: Any) -> bool:
    """Whether ``device`` (a device, its name, or a tensor) is the simulated GPU."""
    if isinstance(device, torch.Tensor):
        return isinstance(device, SimTensor)
    try:
        return torch.device(device).type == NAME and is_enabled()
    except (RuntimeError, TypeError):
        return False


def is_sim_tensor(value: Any) -> bool:
    """Whether ``value`` is a tensor on the simulated GPU, of the class only the course makes (read with ``type()``,
    which an object cannot fake)."""
    return type(value) is SimTensor


def host(value: Any) -> Any:
    """``value`` with each simulated tensor replaced by the CPU tensor that holds its values (lists, tuples and dicts
    looked into): what the course times, since the simulated GPU's work is the CPU's."""
    return tree_map(lambda x: x.elem if isinstance(x, SimTensor) else x, value)


def _index(device: Any) -> int:
    if device is None:
        return _current
    device = torch.device(device)
    index = _current if device.index is None else device.index
    if not 0 <= index < COUNT:
        raise RuntimeError(f"{NAME}:{index} does not exist: the simulated GPU has {COUNT} devices, "
                           f"{NAME}:0 to {NAME}:{COUNT - 1}")
    return index


class SimTensor(torch.Tensor):
    """A tensor on the simulated GPU: its values live in ``elem``, a CPU tensor of the same shape and strides."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor, index: int = 0) -> "SimTensor":
        made = torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            layout=elem.layout, device=torch.device(NAME, index), requires_grad=elem.requires_grad)
        made.elem = elem
        return made

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad):
            try:
                return torch._C._disabled_torch_function_impl(func, types, args, kwargs)
            except RuntimeError as error:
                if "device_ready_queues_" not in str(error):
                    raise
                raise RuntimeError(f"The course's simulated GPU computes gradients on {NAME}:0 only (PyTorch keeps "
                                   f"one autograd queue for a Python backend). Move the model and its data to "
                                   f"{NAME}:0 to train it; on a machine with two GPUs this would run.") from None
        # Results keep their own class (a CPU tensor from .cpu() stays a plain tensor), as for any wrapper tensor.
        return torch._C._disabled_torch_function_impl(func, types, args, kwargs)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        return _dispatch(func, args, kwargs)

    # What Python asks of a tensor and a wrapper subclass answers badly on its own.
    def __repr__(self, *, tensor_contents: Any = None) -> str:
        text = torch._tensor_str._str(self, tensor_contents=tensor_contents)
        parameter = isinstance(self, torch.nn.Parameter)   # a parameter moved here by Module.to keeps being one
        if parameter:
            text = text.removeprefix("Parameter(").removesuffix(")")
        name = text.split("(", 1)[0]          # PyTorch indents the rows under "<name>(": under "tensor(" here
        first, *rows = text.replace(name + "(", "tensor(", 1).split("\n")
        cut = len(name) - len("tensor")
        text = "\n".join([first, *(row[cut:] if row[:cut].isspace() else row for row in rows)])
        return "Parameter containing:\n" + text if parameter else text

    def __format__(self, spec: str) -> str:
        return self.item().__format__(spec) if self.dim() == 0 else object.__format__(self, spec)

    def tolist(self) -> Any:
        return self.elem.tolist()

    def numpy(self, *, force: bool = False) -> Any:
        if force:
            return self.elem.numpy(force=True)
        raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the "
                        "tensor to host memory first.")

    # PyTorch's protocol for a wrapper of inner tensors: with it, Module.to swaps a parameter's contents onto the
    # simulated GPU, so the parameter keeps its identity as on a GPU (it would be replaced by a new one otherwise).
    def __tensor_flatten__(self) -> tuple[list[str], int]:
        return ["elem"], self.device.index

    @staticmethod
    def __tensor_unflatten__(inner: dict, index: int, outer_size: Any, outer_stride: Any) -> "SimTensor":
        return SimTensor(inner["elem"], index)

    def __reduce_ex__(self, protocol: int) -> Any:
        # PyTorch's own rebuild for device tensors kept as CPU tensors (allowed by torch.load's weights_only mode);
        # torch.load's map_location decides where they come back.
        return (torch._utils._rebuild_device_tensor_from_cpu_tensor,
                (self.elem, self.dtype, str(self.device), self.requires_grad))


def _on_device(t: torch.Tensor) -> bool:
    return isinstance(t, SimTensor) or t.device.type == NAME


def _dispatch(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run one ATen operation that has a simulated tensor among its arguments: check the devices as CUDA does,
    run it on the CPU tensors behind them, and put the results on the device the GPU would."""
    flat, _ = tree_flatten((args, kwargs))
    if op_key(func) == "_pack_padded_sequence":
        return _pack(func, args, kwargs)
    found = {t.device for t in flat if isinstance(t, torch.Tensor)}
    if len(found) > 1:
        _check(func, args, kwargs)
    if op_key(func) == "_to_copy":
        return _to_copy(args[0], **kwargs)
    sim = next(t.device for t in flat if isinstance(t, SimTensor))
    originals: dict[int, SimTensor] = {}

    def unwrap(x: Any) -> Any:
        if isinstance(x, SimTensor):
            originals[id(x.elem)] = x
            return x.elem
        return x

    cpu_args, cpu_kwargs = tree_map(unwrap, args), tree_map(unwrap, kwargs)
    target = sim.index
    if isinstance(cpu_kwargs.get("device"), torch.device) and cpu_kwargs["device"].type == NAME:
        target = _index(cpu_kwargs["device"])
        cpu_kwargs["device"] = torch.device("cpu")
    elif "device" in cpu_kwargs and cpu_kwargs["device"] is not None:
        target = None   # made on the device it names (the CPU, meta)
    cpu_kwargs.pop("pin_memory", None)
    out = func(*cpu_args, **cpu_kwargs)

    def wrap(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or target is None or x.device.type != "cpu":
            return x
        original = originals.get(id(x))
        return original if original is not None else SimTensor(x, target)   # in place and out=: the same tensor

    return tree_map(wrap, out)


def _pack(func: Any, args: tuple, kwargs: dict) -> Any:
    """``pack_padded_sequence``: as on CUDA, the lengths must be a 1D CPU int64 tensor (the kernel reads them on the
    host), the packed data stays on the device and its batch sizes on the CPU."""
    data, lengths = args[0], args[1]
    if _on_device(lengths):
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                           f"{lengths.device} {scalar_type(lengths.dtype)} tensor")
    packed, batch_sizes = func(*host(args), **host(kwargs))
    return (SimTensor(packed, data.device.index) if _on_device(data) else packed), batch_sizes


def _to_copy(source: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    """``.to(...)`` and friends: onto or off the simulated GPU, or between its devices."""
    device = kwargs.pop("device", None)
    kwargs.pop("pin_memory", None)
    elem = source.elem if isinstance(source, SimTensor) else source
    if device is not None and torch.device(device).type != NAME:
        return torch.ops.aten._to_copy.default(elem, device=device, **kwargs)
    index = source.device.index if device is None else _index(device)
    out = torch.ops.aten._to_copy.default(elem, **kwargs)
    return SimTensor(out if out is not elem else out.clone(), index)


def _check(func: Any, args: tuple, kwargs: dict) -> None:
    """Raise what CUDA raises for this mix of devices, if it does (:func:`course_utils.gpusim.rules.judge`); an
    operation no rule knows is refused as TensorIterator refuses it."""
    try:
        refused = judge(func, args, kwargs, _on_device)
    except LookupError:
        flat, _ = tree_flatten((args, kwargs))
        tensors = [t for t in flat if isinstance(t, torch.Tensor)]
        common = next((t.device for t in tensors if _on_device(t)), None)
        odd = next((t.device for t in tensors if t.device != common and not (t.dim() == 0 and not _on_device(t))), None)
        refused = Refusal(RuntimeError, elementwise_message(common, odd)) if odd is not None else None
    if refused is not None:
        _raise(refused)


def _raise(refused: Refusal) -> None:
    __tracebackhide__ = True  # noqa: F841  (IPython and pytest leave this frame out of tracebacks)
    global _note_pending
    message = refused.message
    if _note_pending:
        _note_pending = False
        message = f"{message}\n{NOTE}"
    raise refused.kind(message) from None


# --- the backend ------------------------------------------------------------------------------------------------

class _Module:
    """``torch.simgpu``: what PyTorch and device-agnostic code ask of a device module."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def is_initialized() -> bool:
        return True

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def device_count() -> int:
        return COUNT

    @staticmethod
    def current_device() -> int:
        return _current

    @staticmethod
    def set_device(device: Any) -> None:
        global _current
        _current = _index(device if not isinstance(device, int) else torch.device(NAME, device))

    class device:  # noqa: N801  (as torch.cuda.device: a context that makes a device current)
        def __init__(self, device: Any) -> None:
            self.index = _index(device if not isinstance(device, int) else torch.device(NAME, device))

        def __enter__(self) -> None:
            global _current
            self.previous, _current = _current, self.index

        def __exit__(self, *exc: Any) -> bool:
            global _current
            _current = self.previous
            return False

    @staticmethod
    def synchronize(device: Any = None) -> None:
        """Nothing to wait for: the simulated GPU's work is done by the time a call returns."""

    @staticmethod
    def manual_seed(seed: int) -> None:
        """Its random numbers come from the CPU's generator, which ``torch.manual_seed`` already seeds."""

    manual_seed_all = manual_seed

    @staticmethod
    def get_rng_state(device: Any = None) -> torch.Tensor:
        return torch.get_rng_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
        torch.set_rng_state(state)

    @staticmethod
    def get_amp_supported_dtype() -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]

    @staticmethod
    def is_bf16_supported(including_emulation: bool = True) -> bool:
        return True


def _empty(size: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
           memory_format: Any = None) -> SimTensor:
    elem = torch.empty(size, dtype=dtype, layout=layout, memory_format=memory_format or torch.contiguous_format)
    return SimTensor(elem, _index(device))


def _empty_strided(size: Any, stride: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                   pin_memory: Any = None) -> SimTensor:
    return SimTensor(torch.empty_strided(size, stride, dtype=dtype, layout=layout), _index(device))


def _copy_from(source: torch.Tensor, destination: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    values = source.elem if isinstance(source, SimTensor) else source
    (destination.elem if isinstance(destination, SimTensor) else destination).copy_(values)
    return destination


def _restore(storage: Any, location: str) -> Any:
    """``torch.load``: storages saved from the simulated GPU come back as CPU storages (the tensors that use them are
    rebuilt on the simulated GPU by ``SimTensor.__reduce_ex__``'s rebuild)."""
    return storage if location == NAME or location.startswith(NAME + ":") else None


#: ``torch.autocast(device_type="simgpu")``: the operations CUDA's autocast runs in the lower precision (True) or in
#: float32 (False), from ``autocast_mode.cpp``'s lists (the ones a course model meets).
AUTOCAST = {**dict.fromkeys(["mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv",
                             "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "prelu"], True),
            **dict.fromkeys(["softmax", "log_softmax", "mse_loss", "nll_loss", "layer_norm", "group_norm", "exp",
                             "log", "pow", "sum", "prod", "cumsum"], False)}


def _autocast_kernel(func: Any, to_lower: bool) -> Any:
    """The kernel of ``func`` for the simulated GPU's autocast key: cast its floating-point tensors on the simulated
    GPU to the autocast dtype (or to float32), then run it with autocast off, as CUDA's autocast wrappers do."""
    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.get_autocast_dtype(NAME) if to_lower else torch.float32

        def cast(x: Any) -> Any:
            if isinstance(x, torch.Tensor) and _on_device(x) and x.is_floating_point() and x.dtype != torch.float64:
                return x.to(dtype)
            return x

        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)):
            return func(*tree_map(cast, args), **tree_map(cast, kwargs))

    return kernel


def _pin_memory(pin: Any) -> Any:
    """``Tensor.pin_memory`` with the simulated GPU registered: PyTorch asks the current accelerator for pinned host
    memory, which a Python backend cannot give; the simulated GPU has none, so the copy is ordinary (pageable) memory
    (``is_pinned()`` says False) and ``DataLoader(pin_memory=True)`` runs as it does on a machine without a GPU. A
    tensor on the simulated GPU is refused, with the message a CUDA GPU gives for its tensors."""

    def pin_memory(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if isinstance(self, SimTensor):   # as on a GPU: only CPU tensors can be pinned (CUDA's type name)
            raise RuntimeError(f"cannot pin 'CUDA{scalar_type(self.dtype)}Type' only dense CPU tensors can be pinned")
        try:
            return pin(self, *args, **kwargs)
        except NotImplementedError as error:
            if "PinnedMemoryAllocator" not in str(error):
                raise
            return self.clone()

    pin_memory.__doc__ = pin.__doc__
    return pin_memory


def _load(load: Any) -> Any:
    """``torch.load`` with the simulated GPU registered: ``map_location="simgpu"`` (or ``simgpu:1``, or the
    ``torch.device``) puts every tensor of the checkpoint there, as a GPU's ``map_location`` does. PyTorch alone would
    leave a checkpoint of CPU tensors on the CPU (a Python device has no storages of its own)."""

    def load_to(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        target = None
        with contextlib.suppress(RuntimeError, TypeError):
            if isinstance(map_location, (str, torch.device)) and torch.device(map_location).type == NAME:
                target = torch.device(NAME, _index(map_location))
        if target is None:
            return load(f, map_location, *args, **kwargs)
        loaded = load(f, "cpu", *args, **kwargs)
        return tree_map(lambda x: x.to(target) if isinstance(x, (torch.Tensor, torch.nn.Module)) else x, loaded)

    load_to.__doc__ = load.__doc__
    return load_to


def _synchronize(synchronize: Any) -> Any:
    """``torch.accelerator.synchronize`` with the simulated GPU registered: nothing to wait for on it (its work is
    done when a call returns); PyTorch alone would say its Python backend cannot synchronise."""

    def wait(device: Any = None) -> None:
        target = device if device is not None else torch.accelerator.current_accelerator()
        if isinstance(target, int) or torch.device(target).type == NAME:
            return None
        return synchronize(device)

    wait.__doc__ = synchronize.__doc__
    return wait


def enable() -> torch.device:
    """Register the simulated GPU in this process (once; later calls do nothing) and return ``simgpu:0``.
    ``RuntimeError`` where this PyTorch cannot (:func:`available` is False), or another backend already took
    PyTorch's one slot for a Python device."""
    if _STATE["enabled"]:
        return torch.device(NAME, 0)
    if not available():
        raise RuntimeError(f"PyTorch {torch.__version__} cannot register the simulated GPU (it needs 2.10 or later).")
    import torch.utils.backend_registration as registration

    with contextlib.suppress(AttributeError):
        current = torch._C._get_privateuse1_backend_name()
        if current not in ("privateuseone", NAME):
            raise RuntimeError(f"PyTorch's device slot for a Python backend is taken ({current}): the simulated GPU "
                               "cannot be registered.")
    registration._setup_privateuseone_for_python_backend(NAME, backend_module=_Module())
    aten = torch.library.Library("aten", "IMPL")  # noqa: TOR901  (kernels for the renamed PrivateUse1 key)
    aten.impl("empty.memory_format", _empty, "PrivateUse1")
    aten.impl("empty_strided", _empty_strided, "PrivateUse1")
    aten.impl("_copy_from", _copy_from, "PrivateUse1")
    every = torch.library.Library("_", "IMPL")  # noqa: TOR901
    every.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")   # autocast: most ops run as they are
    for name, to_lower in AUTOCAST.items():
        packet = getattr(torch.ops.aten, name)
        for overload in [o for o in packet.overloads() if "out" not in o]:
            aten.impl(f"{name}.{overload}" if overload != "default" else name,
                      _autocast_kernel(getattr(packet, overload), to_lower), "AutocastPrivateUse1")
    _STATE["libraries"] = [aten, every]
    torch.serialization.register_package(1, lambda storage: None, _restore)
    torch.Tensor.pin_memory = _pin_memory(torch.Tensor.pin_memory)
    torch.load = _load(torch.load)
    torch.accelerator.synchronize = _synchronize(torch.accelerator.synchronize)
    _STATE["enabled"] = True
    return torch.device(NAME, 0)


@contextlib.contextmanager
def current(index: int) -> Iterator[None]:
    """Make ``simgpu:index`` the current simulated device inside the block (as ``torch.cuda.device(index)``)."""
    with _Module.device(index):
        yield


__all__ = ["NAME", "COUNT", "available", "enable", "is_enabled", "is_simulated", "host", "SimTensor", "current"]
