"""Returned values that lie about themselves, shared by the lesson tests."""
from __future__ import annotations


def always_equal(base: type) -> type:
    """A subclass of ``base`` whose ``==`` and ``!=`` say whatever makes a check pass."""
    return type(f"AlwaysEqual{base.__name__.capitalize()}", (base,), {
        "__eq__": lambda self, other: True, "__ne__": lambda self, other: False,
        "__hash__": None if base is list else base.__hash__})


AlwaysEqualInt, AlwaysEqualFloat = always_equal(int), always_equal(float)
AlwaysEqualStr, AlwaysEqualList = always_equal(str), always_equal(list)
