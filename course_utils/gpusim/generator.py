"""Random numbers on the simulated GPU: ``torch.Generator(device="simgpu")`` makes a generator, each simulated device
draws from a stream of its own, and an operation on the simulated GPU refuses a CPU generator with CUDA's words.

PyTorch's Python backend cannot give a device a generator of its own (that takes C++), so :func:`install` puts
:class:`Generator` in ``torch.Generator``'s place: for the simulated GPU it is the CPU's Mersenne Twister under the
device's name, seeded with the seed plus :data:`OFFSET` (a GPU draws with Philox: the same seed gives other numbers
than the CPU's there too); for every other device it is the generator PyTorch makes. ``isinstance(g,
torch.Generator)`` still holds for every generator, and generators pickle and copy as before.

Each simulated device also has a default generator (:func:`default`), seeded by ``torch.manual_seed`` (through the
device module's ``manual_seed_all``): an operation on the device that is given no generator draws from it
(:func:`drawing`), dropout included, so the CPU's numbers are left as they were, as on a GPU.

An operation sees a generator as PyTorch passes it on, a new Python object for the same C++ one, so a generator is
known for the simulated GPU's by its state: a CPU generator in exactly the state of a simulated one is taken for it
(the offset makes that a coincidence). Not simulated: a simulated-GPU generator given to a CPU operation is taken (a
GPU's would be refused).
"""
from __future__ import annotations

import contextlib
import functools
import weakref
from typing import Any, Callable, Iterator

import torch

_PLAIN = torch._C.Generator
_MADE: weakref.WeakSet = weakref.WeakSet()   # every generator made for the simulated GPU
_DEFAULTS: list = []                          # each simulated device's default generator, by index
#: Added to every seed of a simulated-GPU generator: another stream than the CPU's for the same seed.
OFFSET = 0x5EED_0FF5E7


class _AnyGenerator(type(_PLAIN)):
    """``isinstance(g, torch.Generator)`` is True of every generator, the ones PyTorch makes in C++ too."""

    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, _PLAIN)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _PLAIN)


class Generator(_PLAIN, metaclass=_AnyGenerator):
    __doc__ = _PLAIN.__doc__
    name = ""                                  # the simulated GPU's device type (:func:`install`)
    index: Callable[[Any], int] = staticmethod(lambda device: 0)

    def __new__(cls, device: Any = None) -> Any:
        where = torch.device(cls.name, device) if isinstance(device, int) else torch.device(device or "cpu")
        if where.type != cls.name:
            return _PLAIN(device) if device is not None else _PLAIN()
        made = super().__new__(cls, "cpu")
        made.simulated_device = torch.device(cls.name, cls.index(where))
        made.manual_seed(_PLAIN().initial_seed())   # PyTorch's default seed, as a new generator has
        _MADE.add(made)
        return made

    def __init__(self, device: Any = None) -> None:
        pass

    @property
    def device(self) -> torch.device:
        return self.simulated_device

    def manual_seed(self, seed: int) -> "Generator":
        self.seeded = int(seed)
        super().manual_seed((self.seeded + OFFSET) % 2**64)
        return self

    def initial_seed(self) -> int:
        return self.seeded

    def __reduce__(self) -> tuple:
        return Generator, (self.simulated_device,), (self.seeded, super().__reduce__()[2])

    def __setstate__(self, state: tuple) -> None:
        self.seeded = state[0]
        super().__setstate__(state[1])


# pickle finds it as torch.Generator, the name PyTorch's own generators pickle under
Generator.__module__, Generator.__qualname__ = "torch", "Generator"


def install(name: str, index: Callable[[Any], int], count: int) -> None:
    """Put :class:`Generator` in ``torch.Generator``'s place for the device type ``name`` (``index(device)``: the
    index a device names, or the current one), and give each of its ``count`` devices a default generator."""
    Generator.name, Generator.index = name, staticmethod(index)
    torch.Generator = Generator
    _DEFAULTS[:] = [Generator(torch.device(name, i)) for i in range(count)]
    seed(torch.initial_seed())   # as torch.manual_seed before the device started would have


@functools.lru_cache(maxsize=None)
def seeded(func: Any) -> bool:
    """Whether the ATen operation ``func`` draws random numbers."""
    return torch.Tag.nondeterministic_seeded in func.tags


def seed(value: int, index: int | None = None) -> None:
    """``torch.manual_seed``'s part for the simulated GPU: seed one device's default generator, or all of them."""
    for i, made in enumerate(_DEFAULTS):
        if index is None or i == index:
            made.manual_seed(value)


def default(index: int) -> Any:
    """The default generator of the simulated device ``index``."""
    return _DEFAULTS[index]


@contextlib.contextmanager
def drawing(index: int) -> Iterator[None]:
    """Within the block, the CPU's default generator draws the simulated device ``index``'s stream (for an operation
    given no generator: its kernel runs on the CPU and draws from the CPU's default)."""
    cpu, own = torch.default_generator, _DEFAULTS[index]
    kept = cpu.get_state()
    cpu.set_state(own.get_state())
    try:
        yield
    finally:
        own.set_state(cpu.get_state())
        cpu.set_state(kept)


def foreign(kwargs: dict, name: str) -> str:
    """What CUDA says of an operation on the device given a generator of another device type, or ""."""
    given = kwargs.get("generator")
    if not isinstance(given, _PLAIN) or given.device.type != "cpu":
        return ""
    state = given.get_state()
    if any(torch.equal(state, made.get_state()) for made in list(_MADE)):
        return ""
    return f"Expected a '{name}' device type for generator but found 'cpu'"
