"""Returned values that lie about themselves, and modes that lie to the checks, shared by the tests."""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


def always_equal(base: type) -> type:
    """A subclass of ``base`` whose ``==`` and ``!=`` say whatever makes a check pass."""
    return type(f"AlwaysEqual{base.__name__.capitalize()}", (base,), {
        "__eq__": lambda self, other: True, "__ne__": lambda self, other: False,
        "__hash__": None if base is list else base.__hash__})


AlwaysEqualInt, AlwaysEqualFloat = always_equal(int), always_equal(float)
AlwaysEqualStr, AlwaysEqualList = always_equal(str), always_equal(list)


class ClaimsToBe:
    """Claims to be of ``value``'s type (its ``__class__``, which ``isinstance`` asks), answers every
    attribute as ``value`` would, and agrees with every comparison."""

    def __init__(self, value):
        self.value = value

    @property
    def __class__(self):
        return type(self.value)

    def __getattr__(self, name):
        return getattr(self.value, name)

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __bool__(self):
        return True

    __hash__ = object.__hash__

    def __repr__(self):   # stable, so test ids agree across processes (pytest-xdist on a GPU machine)
        return f"ClaimsToBe({self.value!r})"


class EqualsAnything(torch.Tensor):
    """A tensor class whose ``__torch_function__`` says it equals whatever it is compared with."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.allclose):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


class LenientMode(TorchFunctionMode):
    """A torch function mode that answers ``torch.equal`` and ``torch.allclose`` with True."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.allclose):
            return True
        return func(*args, **(kwargs or {}))


class LenientDispatchMode(TorchDispatchMode):
    """A dispatch mode that answers ``aten.equal`` with True."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ == "equal":
            return True
        return func(*args, **(kwargs or {}))
