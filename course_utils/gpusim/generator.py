"""Random generators on the simulated GPU: ``torch.Generator(device="simgpu")`` makes one, and an operation on the
simulated GPU refuses a CPU generator with CUDA's words, as a GPU refuses one.

PyTorch's Python backend cannot give a device a generator of its own (that takes C++), so :func:`install` puts a
subclass in ``torch.Generator``'s place: for the simulated GPU it is the CPU's Mersenne Twister under the device's
name (a GPU draws with Philox: the same seed gives other numbers there), for every other device the generator PyTorch
makes. ``isinstance(g, torch.Generator)`` still holds for every generator.

Each simulated device also has a default generator of its own (:func:`default`), seeded by ``torch.manual_seed``
(through the device module's ``manual_seed_all``), so drawing on the simulated GPU leaves the CPU's numbers as they
were, and the same seed gives other numbers there than on the CPU (:data:`OFFSET`), as on a GPU.

An operation sees a generator as PyTorch passes it on, a new Python object for the same C++ one, so a generator is
known for the simulated GPU's by its state: a CPU generator in exactly the state of a simulated one (both just seeded
with the same seed) is taken for it. Not simulated either: a simulated-GPU generator given to a CPU operation is taken
(a GPU's would be refused).
"""
from __future__ import annotations

import functools
import weakref
from typing import Any

import torch

_PLAIN = torch._C.Generator
_MADE: weakref.WeakSet = weakref.WeakSet()   # every generator made for the simulated GPU
_DEFAULTS: list = []                          # each simulated device's default generator, by index
#: Added to a seed for the simulated devices' default generators: another stream than the CPU's for the same seed.
OFFSET = 0x5EED_0FF5E7


class _AnyGenerator(type(_PLAIN)):
    """``isinstance(g, torch.Generator)`` is True of every generator, the ones PyTorch makes in C++ too."""

    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, _PLAIN)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _PLAIN)


def generator_class(name: str, index: Any) -> type:
    """The class to put in ``torch.Generator``'s place, for the device type ``name`` (``index(device)`` gives the
    index a device names, or the current one)."""

    class Generator(_PLAIN, metaclass=_AnyGenerator):
        __doc__ = _PLAIN.__doc__

        def __new__(cls, device: Any = None) -> Any:
            where = torch.device(name, device) if isinstance(device, int) else torch.device(device or "cpu")
            if where.type != name:
                return _PLAIN(device) if device is not None else _PLAIN()
            made = super().__new__(cls, "cpu")
            made.simulated_device = torch.device(name, index(where))
            _MADE.add(made)
            return made

        def __init__(self, device: Any = None) -> None:
            pass

        @property
        def device(self) -> torch.device:
            return self.simulated_device

    return Generator


def foreign(kwargs: dict, name: str) -> str:
    """What CUDA says of an operation on the device given a generator of another device type, or ""."""
    given = kwargs.get("generator")
    if not isinstance(given, _PLAIN) or given.device.type != "cpu":
        return ""
    state = given.get_state()
    if any(torch.equal(state, made.get_state()) for made in list(_MADE)):
        return ""
    return f"Expected a '{name}' device type for generator but found 'cpu'"


def make_defaults(name: str, count: int) -> None:
    """Give each of the ``count`` simulated devices its default generator, seeded as PyTorch's start seeds the CPU's."""
    _DEFAULTS[:] = [torch.Generator(device=torch.device(name, i)) for i in range(count)]
    seed(torch.initial_seed())


def seed(value: int, index: int | None = None) -> None:
    """``torch.manual_seed``'s part for the simulated GPU: seed one device's default generator, or all of them."""
    for i, made in enumerate(_DEFAULTS):
        if index is None or i == index:
            made.manual_seed((int(value) + OFFSET) % 2**64)


def default(index: int) -> Any:
    """The default generator of the simulated device ``index``."""
    return _DEFAULTS[index]


@functools.lru_cache(maxsize=None)
def takes_generator(func: Any) -> bool:
    """Whether the ATen operation ``func`` draws random numbers (its schema has a ``generator``)."""
    return any(argument.name == "generator" for argument in func._schema.arguments)
