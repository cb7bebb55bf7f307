"""Figures carry a text alternative, and their lines stay apart without colour vision of every kind."""
from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_utils import figures  # noqa: E402

#: Machado, Oliveira and Fernandes (2009), severity 1: linear-RGB matrices simulating each deficiency.
SIMULATIONS = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
}


def _linear(hex_colour: str) -> tuple[float, ...]:
    c = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    return tuple(v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in c)


def _seen(hex_colour: str, matrix) -> tuple[float, ...]:
    rgb = _linear(hex_colour)
    return tuple(min(1.0, max(0.0, sum(m * v for m, v in zip(row, rgb)))) for row in matrix)


def test_show_gives_the_picture_its_text_alternative():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], **figures.style(0))
    shown = figures.show(fig, "A line from (1, 3) to (2, 4) & more")
    assert shown.png.startswith(b"\x89PNG")
    assert 'alt="A line from (1, 3) to (2, 4) &amp; more"' in shown._repr_html_()
    assert repr(shown) == "[figure] A line from (1, 3) to (2, 4) & more"
    assert not plt.fignum_exists(fig.number)            # closed: the notebook shows it once


@pytest.mark.parametrize("alt", ["", "   ", None])
def test_a_figure_without_a_description_is_refused(alt):
    fig, _ = plt.subplots()
    with pytest.raises(ValueError, match="text alternative"):
        figures.show(fig, alt)
    plt.close(fig)


def test_lines_differ_by_marker_and_stay_apart_under_colour_vision_deficiencies():
    lines = 4                                           # the most lines a lesson's plot draws
    assert len({figures.style(i)["marker"] for i in range(lines)}) == lines
    for name, matrix in SIMULATIONS.items():
        for a, b in itertools.combinations(figures.COLOURS[:lines], 2):
            distance = sum((x - y) ** 2 for x, y in zip(_seen(a, matrix), _seen(b, matrix))) ** 0.5
            assert distance > 0.1, (name, a, b, round(distance, 3))   # matplotlib's default red and green: 0.07
