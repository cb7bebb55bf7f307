"""Simulated accelerators with real devices' rules, for testing the checks on a CPU-only machine.

On a machine without a GPU the checks use PyTorch's data-less ``meta`` device as "the
accelerator". ``meta`` is more lenient than real devices, so three simulations add the rules
that bite on real hardware (each is a context manager, and a pytest fixture of the same name):

- :func:`mps_rules`: like Apple's MPS, no float64 or complex128. Any operation that produces a
  ``meta`` tensor of those dtypes raises MPS's ``TypeError``, and
  ``course_utils.device.NO_FLOAT64`` names ``meta`` so that ``supports_dtype`` knows.
- :func:`cuda_rules`: like CUDA, operations that check each argument's device (``addmm``,
  ``mm``, ``embedding``, ...) raise CUDA's "Expected all tensors to be on the same device, ..."
  in the wording of the PyTorch that runs the tests (:func:`per_argument_message`: "but got
  mat1 is on cpu, ..." from 2.8, "but found at least two devices, ...! (when checking argument
  for argument mat1 ...)" in 2.7) instead of meta's own wording. Element-wise operations keep
  meta's behaviour, which already lets a 0-dim CPU tensor take part, as CUDA does.
- :func:`second_gpu`: the bookkeeping of a machine with two CUDA GPUs where the course device is
  ``cuda:1`` but the current device is 0. No tensor can be placed there (this PyTorch has no
  CUDA); it is for code that chooses, makes current or synchronises devices.

All three report an accelerator through ``torch.accelerator`` (and hide this machine's
``COURSE_DEVICE`` and ``COURSE_REQUIRE_ACCELERATOR``), and record the device of every
synchronisation in :attr:`Machine.synchronized`. Everything is undone on exit, also when the
block raises: patches are reverted and the dispatch modes popped.
"""
from __future__ import annotations

import contextlib
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from course_utils import device as course_device
from course_utils.gpusim.rules import convolution_message, per_argument_message  # noqa: F401  (the one source of wordings)

#: What MPS raises for a float64 (or complex128) tensor.
MPS_FLOAT64_MESSAGE = ("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support "
                       "float64. Please use float32 instead.")
NO_FLOAT64_DTYPES = (torch.float64, torch.complex128)

#: Operations whose CUDA kernels check the device of each tensor argument (no 0-dim CPU exception).
PER_ARGUMENT_OPS = frozenset({"addmm", "mm", "bmm", "addmv", "mv", "baddbmm", "index_select", "embedding",
                              "convolution"})


@dataclass
class Machine:
    """The simulated machine: what ``torch.accelerator`` reports, and what was asked of it.

    Attributes:
        accelerator: the accelerator's device, without an index (``meta``, or ``cuda`` for
            :func:`second_gpu`).
        count: how many devices it has.
        current: the current device index.
        set_calls: every index passed to ``set_device_index`` (or ``torch.cuda.set_device``).
        synchronized: the device every synchronisation waited for, with its index resolved
            (``synchronize()`` without an argument waits for the current device).
    """

    accelerator: torch.device
    count: int = 1
    current: int = 0
    set_calls: list[int] = field(default_factory=list)
    synchronized: list[torch.device] = field(default_factory=list)

    def device(self, index: int | None = None) -> torch.device:
        """The accelerator device with ``index`` (default: the current one)."""
        return torch.device(self.accelerator.type, self.current if index is None else index)

    def _index(self, device: Any) -> int:
        if device is None:
            return self.current
        if isinstance(device, int):
            return device
        index = torch.device(device).index
        return self.current if index is None else index

    def set_device_index(self, device: Any) -> None:
        index = self._index(device)
        if not 0 <= index < self.count:
            raise RuntimeError(f"Invalid device index {index}: the simulated machine has {self.count} device(s)")
        self.set_calls.append(index)
        self.current = index

    def synchronize(self, device: Any = None) -> None:
        self.synchronized.append(self.device(self._index(device)))

    def device_index(self, index: int | None) -> contextlib.AbstractContextManager:
        """Like ``torch.accelerator.device_index``: the current index, changed for a ``with`` block."""
        @contextlib.contextmanager
        def switch() -> Iterator[None]:
            previous = self.current
            if index is not None:
                self.current = index
            try:
                yield
            finally:
                self.current = previous
        return switch()


class _Mode(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:  # keep torch._dynamo unimported (it takes seconds)
        return False


class NoFloat64OnMeta(_Mode):
    """Raise MPS's ``TypeError`` whenever an operation produces a float64 or complex128 meta tensor."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "meta" and t.dtype in NO_FLOAT64_DTYPES:
                raise TypeError(MPS_FLOAT64_MESSAGE)
        return out


class PerArgumentDeviceChecks(_Mode):
    """Raise CUDA's error when an operation in :data:`PER_ARGUMENT_OPS` mixes meta and CPU tensors.

    CUDA names the first tensor argument whose device differs from the earlier ones', and the
    kernel (``wrapper_CUDA_<op>``); the simulation names ``meta`` where CUDA would say ``cuda:0``.
    Convolution reports mismatched input and weight its own way, as on CUDA: with the MKLDNN clause only
    for a CPU input, whose convolution PyTorch sends to its MKLDNN backend.
    """

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in PER_ARGUMENT_OPS:
            _check_devices(func, name, args, kwargs)
        return func(*args, **kwargs)


def _check_devices(func: Any, name: str, args: tuple, kwargs: dict) -> None:
    named = [(arg.name, args[i] if i < len(args) else kwargs.get(arg.name))
             for i, arg in enumerate(func._schema.arguments)]
    tensors = [(n, v) for n, v in named if isinstance(v, torch.Tensor)]
    if {v.device.type for _, v in tensors} != {"cpu", "meta"}:
        return
    if name == "convolution":
        (_, data), (_, weight), *bias = tensors
        if weight.device != data.device:   # a CPU input goes to the MKLDNN backend, whose check adds a clause
            raise RuntimeError(convolution_message(data.type(), "weight", weight.type(), data.device.type == "cpu"))
        raise RuntimeError(convolution_message(data.type(), "bias", bias[0][1].type(), mkldnn=False))
    common = tensors[0][1].device
    for arg_name, value in tensors[1:]:
        if value.device != common:
            raise RuntimeError(per_argument_message(arg_name, value.device, common, f"wrapper_CUDA_{name}"))


@contextlib.contextmanager
def simulated_machine(accelerator: str = "meta", count: int = 1, current: int = 0, *,
                      modes: Iterable[TorchDispatchMode] = (), no_float64: bool = False,
                      env: dict[str, str] | None = None,
                      rebind: Iterable[Any] = ()) -> Iterator[Machine]:
    """The common part of every simulation: ``torch.accelerator`` reports ``accelerator``.

    Args:
        accelerator: the device type reported; ``"cuda"`` also makes ``torch.cuda`` report
            ``count`` GPUs (for bookkeeping only: no tensor can go there on this machine).
        count, current: the number of devices and the current index.
        modes: dispatch modes active for the block (they impose the device's rules).
        no_float64: add ``meta`` to ``course_utils.device.NO_FLOAT64``.
        env: environment variables to set (``COURSE_DEVICE`` and ``COURSE_REQUIRE_ACCELERATOR``
            are removed first).
        rebind: modules (or their ``__dict__``) holding functions imported by name
            (``from torch.accelerator import is_available``); on a real machine those would
            report it too, so they are replaced with the simulated ones for the block.

    For a ``meta`` accelerator ``torch.get_device_module`` answers with a small stand-in for its
    module, since PyTorch's own helpers (``torch.random.fork_rng``, ``is_available``) look it up.

    Yields:
        The :class:`Machine`.
    """
    machine = Machine(torch.device(accelerator), count, current)
    acc, cuda = torch.accelerator, torch.cuda
    fakes: dict[tuple[Any, str], Any] = {
        (acc, "is_available"): lambda: True,
        (acc, "current_accelerator"): lambda check_available=False: machine.accelerator,
        (acc, "current_device_index"): lambda: machine.current,
        (acc, "device_count"): lambda: machine.count,
        (acc, "set_device_index"): machine.set_device_index,
        (acc, "synchronize"): machine.synchronize,
        (cuda, "is_available"): lambda: False,
        (cuda, "device_count"): lambda: 0,
    }
    if hasattr(acc, "current_stream"):   # optimizers ask it from 2.15 (is a CUDA graph being captured?)
        fakes[acc, "current_stream"] = lambda device=None: types.SimpleNamespace(is_capturing=lambda: False)
    if hasattr(acc, "device_index"):
        fakes[acc, "device_index"] = machine.device_index
    if machine.accelerator.type != "cuda":   # PyTorch asks the accelerator's module (torch.cuda, torch.mps)
        device_module = types.SimpleNamespace(
            is_available=lambda: True, device_count=lambda: machine.count,
            current_device=lambda: machine.current, set_device=machine.set_device_index,
            synchronize=machine.synchronize)
        real_get_device_module = torch.get_device_module

        def get_device_module(device: Any = None) -> Any:
            name = None if device is None else torch.device(device).type
            if name in (None, machine.accelerator.type):
                return device_module
            return real_get_device_module(device)
        fakes[torch, "get_device_module"] = get_device_module
    else:
        fakes.update({
            (cuda, "is_available"): lambda: True, (cuda, "device_count"): lambda: machine.count,
            (cuda, "current_device"): lambda: machine.current, (cuda, "set_device"): machine.set_device_index,
            (cuda, "synchronize"): machine.synchronize,
            (cuda, "get_device_properties"): lambda device=None: types.SimpleNamespace(
                name=f"Simulated GPU {machine._index(device)}", total_memory=16 * 2**30),
        })
    with contextlib.ExitStack() as stack:
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        originals = {id(getattr(module, name)): fake for (module, name), fake in fakes.items()}
        for namespace in rebind:
            namespace = namespace if isinstance(namespace, dict) else vars(namespace)
            for key, value in list(namespace.items()):
                if id(value) in originals:
                    patch.setitem(namespace, key, originals[id(value)])
        for (module, name), fake in fakes.items():
            patch.setattr(module, name, fake)
        for name in (course_device.DEVICE_ENV, course_device.REQUIRE_ENV):
            patch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        if no_float64:
            patch.setattr(course_device, "NO_FLOAT64", set(course_device.NO_FLOAT64) | {"meta"})
        for mode in modes:
            stack.enter_context(mode)
        yield machine


def mps_rules(**kwargs: Any) -> contextlib.AbstractContextManager[Machine]:
    """A ``meta`` accelerator without float64, like Apple's MPS."""
    return simulated_machine("meta", modes=[NoFloat64OnMeta()], no_float64=True, **kwargs)


def cuda_rules(**kwargs: Any) -> contextlib.AbstractContextManager[Machine]:
    """A ``meta`` accelerator whose matrix, index and convolution ops check devices like CUDA's."""
    return simulated_machine("meta", modes=[PerArgumentDeviceChecks()], **kwargs)


def second_gpu(course_device_index: int = 1, **kwargs: Any) -> contextlib.AbstractContextManager[Machine]:
    """Two CUDA GPUs, current device 0, ``COURSE_DEVICE=cuda:<course_device_index>`` (bookkeeping only)."""
    return simulated_machine("cuda", count=2, current=0,
                             env={course_device.DEVICE_ENV: f"cuda:{course_device_index}"}, **kwargs)


#: The simulations that run whole checks, by name.
STRICT_RULES = {"mps": mps_rules, "cuda": cuda_rules}


@pytest.fixture(name="mps_rules")
def mps_rules_fixture() -> Iterator[Machine]:
    """:func:`mps_rules` for one test."""
    with mps_rules() as machine:
        yield machine


@pytest.fixture(name="cuda_rules")
def cuda_rules_fixture() -> Iterator[Machine]:
    """:func:`cuda_rules` for one test."""
    with cuda_rules() as machine:
        yield machine


@pytest.fixture(name="second_gpu")
def second_gpu_fixture() -> Iterator[Machine]:
    """:func:`second_gpu` for one test."""
    with second_gpu() as machine:
        yield machine


@pytest.fixture(params=sorted(STRICT_RULES))
def strict_accelerator(request: pytest.FixtureRequest) -> Iterator[Machine]:
    """Each of :data:`STRICT_RULES` in turn."""
    with STRICT_RULES[request.param]() as machine:
        yield machine
