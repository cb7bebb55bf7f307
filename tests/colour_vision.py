"""Colour-vision deficiency simulation for tests: Machado, Oliveira and Fernandes (2009), severity 1.

The matrices act on linear RGB; :func:`distance` is how far apart two colours look under one of them.
"""
from __future__ import annotations

#: Linear-RGB matrices simulating each deficiency (and ``normal`` vision, the identity).
SIMULATIONS = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}
NORMAL = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def linear(hex_colour: str) -> tuple[float, ...]:
    """``#rrggbb`` as linear RGB in [0, 1]."""
    c = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    return tuple(v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in c)


def seen(rgb: tuple[float, ...], matrix) -> tuple[float, ...]:
    """Linear RGB as seen under ``matrix``."""
    return tuple(min(1.0, max(0.0, sum(m * v for m, v in zip(row, rgb)))) for row in matrix)


def distance(a: str, b: str, matrix) -> float:
    """Euclidean distance in linear RGB between two ``#rrggbb`` colours as seen under ``matrix``."""
    return sum((x - y) ** 2 for x, y in zip(seen(linear(a), matrix), seen(linear(b), matrix))) ** 0.5


def svg_filters() -> str:
    """An inline SVG defining one ``feColorMatrix`` filter per deficiency (``#sim-protanopia`` …); SVG filters
    work in linear RGB by default, as the matrices expect."""
    def values(m) -> str:
        return " ".join(" ".join(f"{v:.6f}" for v in row) + " 0 0" for row in m) + " 0 0 0 1 0"
    filters = "".join(f'<filter id="sim-{name}"><feColorMatrix type="matrix" values="{values(m)}"/></filter>'
                      for name, m in SIMULATIONS.items())
    return f'<svg width="0" height="0" style="position:absolute" aria-hidden="true">{filters}</svg>'
