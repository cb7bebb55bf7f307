"""The simulated GPU: a device of the course's own, ``simgpu``, whose tensors hold real values in host memory.

On a machine without an accelerator, :func:`enable` registers it through PyTorch's Python backend (the renamed
``PrivateUse1`` key and ``torch.utils.backend_registration._setup_privateuseone_for_python_backend``, from PyTorch
2.10; this module owns every use of that experimental API). Its tensors print, train, save and load as a GPU's do,
``.item()`` and ``.tolist()`` read them, ``.numpy()`` is refused as on CUDA, and an operation that mixes them with
CPU tensors (or ``simgpu:0`` with ``simgpu:1``) raises what a CUDA build of the installed PyTorch raises for that
operation (:mod:`course_utils.gpusim.rules`), with ``simgpu:0`` where the GPU says ``cuda:0``.

What it simulates: two devices (``simgpu:0`` and ``simgpu:1``), the values, the device rules and their errors,
``torch.accelerator``'s answers and current device, random generators (:mod:`.generator`: a CPU generator is
refused as a GPU refuses one), the CUDA-only kernels ``nn.LSTM`` and ``nn.GRU`` call; time, on a modeled GPU's clock
(:mod:`.clock`: its work is the CPU's, so a stopwatch would time the CPU). What it does not: memory (its questions
raise a ``RuntimeError`` that says so), asynchronous execution, pinned memory, and CUDA's own API (``.cuda()``,
``torch.cuda.*``, ``CUDA_VISIBLE_DEVICES``). ``torch.autocast`` casts what CUDA's autocast casts among the operations a course model uses
(matrix products, convolutions, recurrent cells, attention to the lower precision; softmax, losses, norms and
reductions to float32), and refuses what it refuses, not its whole list.

What PyTorch cannot do for a Python backend, :func:`enable` supplies by wrapping functions: ``torch.load`` (a
``map_location`` that names it: a string, a dict, a function), ``Tensor.to``, ``torch.tensor`` and
``torch.as_tensor`` (``"simgpu"`` is the current device), ``torch.Generator``, ``Tensor.pin_memory`` (an ordinary
copy: no pinned memory), ``torch.accelerator``'s ``synchronize``, device switches and memory questions.
``Module.to`` keeps each parameter's identity on the way to the simulated GPU, as on a GPU; on the way back to the
CPU PyTorch gives the module new parameters (a GPU would keep them).

Registration is once per process and cannot be undone: with it, ``torch.accelerator.is_available()`` is True and
``current_accelerator()`` is ``simgpu``, so device-agnostic code picks it, as it would pick a GPU.
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Any, Iterator

import torch
from torch.utils._pytree import tree_map

from ..device import SIMULATED
from . import clock
from . import generator
from .kernels import KERNELS
from .rules import AUTOCAST, AUTOCAST_REFUSED, Refusal, elementwise_message, judge, op_key, scalar_type

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
_moving: dict[int, int] = {}   # torch.load's storages for the simulated GPU (:func:`_restore`): id -> device index
#: Globals this module rebinds in normal use (the grader's tamper check allows it).
REBOUND = ("_current", "_note_pending", "_moving")

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
    device = torch.device(NAME, device) if isinstance(device, int) else torch.device(device)
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

    # Results keep their own class (a CPU tensor from .cpu() stays a plain tensor), as for any wrapper tensor; and
    # no Python step before the dispatch, whose cost every operation pays.
    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})

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
        clock.clock().to_host(self.elem.nbytes)
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
        # As a GPU's: its storage, once for the tensors sharing it, tagged ``simgpu:0`` (for the tagger enable() adds).
        storage = torch.TypedStorage(wrap_storage=self.elem.untyped_storage(), dtype=self.dtype, _internal=True)
        storage._untyped_storage.simgpu_location = str(self.device)
        return torch._utils._rebuild_tensor_v2, (storage, self.storage_offset(), self.size(), self.stride(),
                                                 self.requires_grad, {})


_CONTAINERS = (list, tuple, dict)


def _leaves(value: Any, out: list) -> list:
    """The leaves of the lists, tuples and dicts an ATen operation takes and gives (PyTorch's pytree, slower)."""
    if type(value) not in _CONTAINERS:
        out.append(value)
        return out
    for item in value.values() if type(value) is dict else value:
        if type(item) in _CONTAINERS:
            _leaves(item, out)
        else:
            out.append(item)
    return out


def _mapped(fn: Any, value: Any) -> Any:
    """``value`` with ``fn`` applied to each leaf (:func:`_leaves`)."""
    kind = type(value)
    if kind is dict:
        return {key: _mapped(fn, item) if type(item) in _CONTAINERS else fn(item) for key, item in value.items()}
    if kind in (list, tuple):
        return kind([_mapped(fn, item) if type(item) in _CONTAINERS else fn(item) for item in value])
    return fn(value)


def _on_device(t: torch.Tensor) -> bool:
    return isinstance(t, SimTensor) or t.device.type == NAME


def _dispatch(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run one ATen operation that has a simulated tensor among its arguments: check the devices as CUDA does,
    run it on the CPU tensors behind them, and put the results on the device the GPU would."""
    flat, key = _leaves((args, kwargs), []), op_key(func)
    if kwargs.get("generator") is not None and generator.foreign(kwargs, NAME):
        _raise(Refusal(RuntimeError, generator.foreign(kwargs, NAME)))
    if key == "_pack_padded_sequence":
        return _pack(func, args, kwargs)
    if len({t.device for t in flat if isinstance(t, torch.Tensor)}) > 1:
        _check(func, args, kwargs)
    if key == "_to_copy":
        return _to_copy(args[0], **kwargs)
    sim = next(t.device for t in flat if isinstance(t, SimTensor))
    originals: dict[int, SimTensor] = {}
    tensors: list[torch.Tensor] = []   # the CPU tensors the operation runs on
    given = {id(x) for x in flat}

    def unwrap(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            if isinstance(x, SimTensor):
                originals[id(x.elem)] = x
                x = x.elem
            tensors.append(x)
        return x

    cpu_args, cpu_kwargs = _mapped(unwrap, args), _mapped(unwrap, kwargs)
    target = sim.index
    if isinstance(cpu_kwargs.get("device"), torch.device) and cpu_kwargs["device"].type == NAME:
        target = _index(cpu_kwargs["device"])
        cpu_kwargs["device"] = torch.device("cpu")
    elif "device" in cpu_kwargs and cpu_kwargs["device"] is not None:
        target = None   # made on the device it names (the CPU, meta)
    cpu_kwargs.pop("pin_memory", None)
    own_stream = kwargs.get("generator") is None and generator.seeded(func)   # draws: from the device's stream
    with generator.drawing(sim.index) if own_stream else contextlib.nullcontext():
        out = KERNELS.get(key, func)(*cpu_args, **cpu_kwargs)
    _timed(func, key, args, kwargs, tensors, out)

    def wrap(x: Any) -> Any:   # a CPU tensor given stays one (in place on the CPU: fill_ with a 0-dim value)
        if not isinstance(x, torch.Tensor) or target is None or x.device.type != "cpu" or id(x) in given:
            return x
        original = originals.get(id(x))
        if original is None:
            return SimTensor(x, target)
        if (original.shape, original.stride(), original.storage_offset()) != (x.shape, x.stride(), x.storage_offset()):
            meta = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)   # set_'s meta kernel: a wrapper holds no data
            torch.ops.aten.set_.source_Storage_storage_offset.redispatch(meta, original, original.untyped_storage(),
                                                                         x.storage_offset(), x.shape, x.stride())
        return original   # in place and out=: the same tensor, resized as its values were (arange, unsqueeze_)

    return _mapped(wrap, out)


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
    non_blocking = kwargs.get("non_blocking", False)
    elem = source.elem if isinstance(source, SimTensor) else source
    if device is not None and torch.device(device).type != NAME:
        clock.clock().to_host(elem.nbytes)
        return torch.ops.aten._to_copy.default(elem, device=device, **kwargs)
    index = source.device.index if device is None else _index(device)
    out = torch.ops.aten._to_copy.default(elem, **kwargs)
    _timed_copy(source, elem.nbytes + out.nbytes, non_blocking)
    return SimTensor(out if out is not elem else out.clone(), index)


def _timed(func: Any, key: str, args: tuple, kwargs: dict, tensors: list[torch.Tensor], out: Any) -> None:
    """An operation's time on the modeled clock: a value read waits for the device, a copy between the host and
    the device crosses the link, anything else is a kernel (:meth:`.clock.Clock.operation`)."""
    timer = clock.clock()
    if key == "_local_scalar_dense":
        timer.to_host(tensors[0].element_size())
    elif key == "copy_" and _on_device(args[0]) != _on_device(args[1]):
        if _on_device(args[0]):
            _timed_copy(args[1], 2 * args[1].nbytes, bool(args[2:3] and args[2]) or bool(kwargs.get("non_blocking")))
        else:
            timer.to_host(args[1].nbytes)
    else:
        timer.operation(key, func.is_view, tensors, [x for x in _leaves(out, []) if isinstance(x, torch.Tensor)])


def _timed_copy(source: torch.Tensor, nbytes: int, non_blocking: bool) -> None:
    """The modeled time of a copy onto the simulated GPU: over the host link from the CPU, a kernel on the device
    from the device (``nbytes``: read and written)."""
    if isinstance(source, SimTensor):
        clock.clock().kernel("copy", 0.0, nbytes)
    else:
        clock.clock().to_device(source.nbytes, source, non_blocking)


def _check(func: Any, args: tuple, kwargs: dict) -> None:
    """Raise what CUDA raises for this mix of devices, if it does (:func:`course_utils.gpusim.rules.judge`); an
    operation no rule knows is refused as TensorIterator refuses it."""
    try:
        refused = judge(func, args, kwargs, _on_device)
    except LookupError:
        flat = _leaves((args, kwargs), [])
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

    is_available = is_initialized = staticmethod(lambda: True)
    _is_in_bad_fork = staticmethod(lambda: False)
    device_count = staticmethod(lambda: COUNT)
    current_device = staticmethod(lambda: _current)

    @staticmethod
    def set_device(device: Any) -> None:
        _exchange(_index(device))

    device = staticmethod(lambda device: current(device))   # as torch.cuda.device(i): a block on device i

    @staticmethod
    def synchronize(device: Any = None) -> None:
        """Wait, on the modeled clock, until the device has finished its queue (:mod:`.clock`)."""
        clock.clock().wait()

    @staticmethod
    def manual_seed(seed: int) -> None:
        """Seed the current simulated device's own generator (:mod:`.generator`)."""
        generator.seed(seed, _current)

    manual_seed_all = staticmethod(generator.seed)

    @staticmethod
    def get_rng_state(device: Any = None) -> torch.Tensor:
        return generator.default(_index(device)).get_state()

    @staticmethod
    def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
        generator.default(_index(device)).set_state(state)

    get_amp_supported_dtype = staticmethod(lambda: [torch.float16, torch.bfloat16])
    is_bf16_supported = staticmethod(lambda including_emulation=True: True)


def _exchange(index: int) -> int:
    """Make ``simgpu:index`` current (not if negative), return the one before: ``torch.accelerator``'s device switch."""
    global _current
    previous = _current
    if index >= 0:
        _current = _index(index)
    return previous


MEMORY = ("memory_stats memory_allocated max_memory_allocated memory_reserved max_memory_reserved get_memory_info "
          "reset_accumulated_memory_stats reset_peak_memory_stats").split()


def _no_memory(name: str) -> None:
    """The answer to ``torch.accelerator``'s and ``torch.simgpu``'s :data:`MEMORY` questions (PyTorch's: an assert)."""
    raise RuntimeError(f"{name}() has no answer on the course's simulated GPU: it does not model memory. Count the "
                       "bytes your tensors hold instead: t.nbytes, or sum(p.nbytes for p in model.parameters()).")


def _factory(op: Any, *args: Any, **kwargs: Any) -> torch.Tensor:
    """A factory given ``device="simgpu"`` (``torch.empty``, ``tril_indices``...): made on the CPU, then put there."""
    index = _index(kwargs.pop("device"))
    return tree_map(lambda x: SimTensor(x, index) if isinstance(x, torch.Tensor) else x, op(*args, **kwargs))


def _copy_from(source: torch.Tensor, destination: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    values = source.elem if isinstance(source, SimTensor) else source
    if isinstance(destination, SimTensor):
        _timed_copy(source, 2 * values.nbytes, non_blocking)
    else:
        clock.clock().to_host(values.nbytes)
    (destination.elem if isinstance(destination, SimTensor) else destination).copy_(values)
    return destination


def _restore(storage: Any, location: str) -> Any:
    """``torch.load``: a storage restored to ``simgpu:N`` stays a CPU one, noted for :func:`_load` to put there."""
    if location == NAME or location.startswith(NAME + ":"):
        _moving[storage._cdata] = _index(location)
        return storage
    return None


def _autocast_kernel(func: Any, to_lower: Any) -> Any:
    """The kernel of ``func`` for the simulated GPU's autocast key: cast its floating-point tensors on the simulated
    GPU to the autocast dtype (or float32), then run it with autocast off, as CUDA's wrappers do (None: refuse it)."""
    def kernel(*args: Any, **kwargs: Any) -> Any:
        if to_lower is None:
            raise RuntimeError(AUTOCAST_REFUSED)
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
            copy = self.clone()
            clock.clock().pin(copy)   # the modeled clock copies it as pinned memory
            return copy

    pin_memory.__doc__ = pin.__doc__
    return pin_memory


def _to(to: Any) -> Any:
    """``Tensor.to``, ``torch.tensor``, ``torch.as_tensor``: ``"simgpu"`` is the current device, as ``"cuda"`` is
    (PyTorch's guard for it always says 0)."""
    def to_current(*args: Any, **kwargs: Any) -> Any:
        if _current:   # another device was made current: "simgpu" goes there, not to simgpu:0
            here, plain = torch.device(NAME, _current), (NAME, torch.device(NAME))   # "simgpu" with no index
            args = tuple(here if type(value) in (str, torch.device) and value in plain else value for value in args)
            kwargs = {key: here if key == "device" and value in plain else value for key, value in kwargs.items()}
        return to(*args, **kwargs)

    to_current.__doc__ = to.__doc__
    with contextlib.suppress(AttributeError):   # TorchScript compiles the wrapper as PyTorch's own function
        torch.jit._builtins._register_builtin(to_current, f"aten::{to.__name__}")
    return to_current


def _load(load: Any) -> Any:
    """``torch.load``: tensors whose storages ``map_location`` (``"simgpu:1"``, ``{"cuda:0": "simgpu:0"}``, a function)
    or their saved place puts on the simulated GPU come back there, sharing storages as saved (PyTorch: on the CPU)."""

    def load_to(f: Any, map_location: Any = None, *args: Any, **kwargs: Any) -> Any:
        global _moving
        moving = _moving = {}
        loaded = load(f, map_location, *args, **kwargs)

        def place(x: Any) -> Any:   # the loaded CPU tensor holds the simulated one's values: views stay views
            tensors = list(x.state_dict().values()) if isinstance(x, torch.nn.Module) else [x]
            index = next((moving[key] for t in tensors if isinstance(t, torch.Tensor)
                          and (key := t.untyped_storage()._cdata) in moving), None)
            if index is None or isinstance(x, torch.nn.Module):
                return x if index is None else x.to(torch.device(NAME, index))
            return SimTensor(x.detach(), index).requires_grad_(x.requires_grad)

        return tree_map(place, loaded) if moving else loaded

    load_to.__doc__ = load.__doc__
    return load_to


def _one_thread(run: Any) -> Any:
    """``torch.autograd.backward``, ``grad``: on the calling thread, not PyTorch's one device thread for a Python
    backend (simgpu:0's), so every simulated device has gradients, at less cost."""
    def on_this_thread(*args: Any, **kwargs: Any) -> Any:
        with torch.autograd.set_multithreading_enabled(False):
            return run(*args, **kwargs)

    on_this_thread.__doc__ = run.__doc__
    return on_this_thread


def _synchronize(synchronize: Any) -> Any:
    """``torch.accelerator.synchronize`` with the simulated GPU registered: its values are ready when a call returns,
    and its modeled clock waits for the modeled GPU; PyTorch alone would say a Python backend cannot synchronise."""

    def wait(device: Any = None) -> None:
        target = device if device is not None else torch.accelerator.current_accelerator()
        if isinstance(target, int) or torch.device(target).type == NAME:
            return clock.clock().wait()
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
    aten.impl("_copy_from", _copy_from, "PrivateUse1")
    for op in (torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default,
               torch.ops.aten.tril_indices.default, torch.ops.aten.triu_indices.default):
        aten.impl(op, lambda *args, op=op, **kwargs: _factory(op, *args, **kwargs), "PrivateUse1")
    every = torch.library.Library("_", "IMPL")  # noqa: TOR901
    every.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")   # autocast: most ops run as they are
    for name, to_lower in AUTOCAST.items():
        packet = getattr(torch.ops.aten, name)
        for overload in [o for o in packet.overloads() if "out" not in o]:
            aten.impl(f"{name}.{overload}" if overload != "default" else name,
                      _autocast_kernel(getattr(packet, overload), to_lower), "AutocastPrivateUse1")
    _STATE["libraries"] = [aten, every]
    torch.serialization.register_package(1, lambda storage: getattr(storage, "simgpu_location", None), _restore)
    torch.Tensor.pin_memory = _pin_memory(torch.Tensor.pin_memory)
    torch.load = _load(torch.load)
    importlib.import_module("torch.utils._device")._device_constructors()   # cached: PyTorch's own factories
    torch.Tensor.to, torch.tensor, torch.as_tensor = (_to(f) for f in (torch.Tensor.to, torch.tensor, torch.as_tensor))
    generator.install(NAME, _index, COUNT)
    torch.accelerator.synchronize = _synchronize(torch.accelerator.synchronize)
    for name in ("_accelerator_setDeviceIndex", "_accelerator_exchangeDevice", "_accelerator_maybeExchangeDevice"):
        setattr(torch._C, name, _exchange)
    torch._C._accelerator_getDeviceIndex = _Module.current_device
    for name in MEMORY:
        for module in (torch.accelerator, _Module):
            setattr(module, name, lambda *args, _name=name, **kwargs: _no_memory(_name))
    torch.accelerator.empty_cache = torch.accelerator.empty_host_cache = _Module.empty_cache = lambda *args: None
    for module in ("torch.optim.optimizer", "torch.utils._foreach_utils"):   # multi-tensor steps, CUDA's default
        importlib.import_module(module)._foreach_supported_types.append(SimTensor)
    torch.autograd.backward, torch.autograd.grad = _one_thread(torch.autograd.backward), _one_thread(torch.autograd.grad)
    _STATE["enabled"] = True
    _keep_freed_buffers()
    return torch.device(NAME, 0)


def _keep_freed_buffers() -> None:
    """Let glibc's malloc keep freed buffers of up to 256 MiB for reuse, as a GPU's caching allocator keeps its
    blocks: the simulated GPU makes and frees a buffer per operation, and returning each to the system (then faulting
    its pages in again) costs more than the operation itself. Nothing happens where malloc is not glibc's."""
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError, TypeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if libc.gnu_get_libc_version:
            libc.mallopt(-3, 256 << 20)   # M_MMAP_THRESHOLD: larger blocks only from mmap
            libc.mallopt(-1, 512 << 20)   # M_TRIM_THRESHOLD: keep up to this much free at the heap's top


@contextlib.contextmanager
def current(index: Any) -> Iterator[None]:
    """Make ``simgpu:index`` the current simulated device inside the block (as ``torch.cuda.device(index)``)."""
    previous = _exchange(_index(index))
    try:
        yield
    finally:
        _exchange(previous)


__all__ = ["NAME", "COUNT", "available", "enable", "is_enabled", "is_simulated", "host", "SimTensor", "current"]
