"""Figures carry a text alternative, and their lines stay apart without colour vision of every kind."""
from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from colour_vision import SIMULATIONS, distance  # noqa: E402
from course_utils import figures  # noqa: E402


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
            apart = distance(a, b, matrix)
            assert apart > 0.1, (name, a, b, round(apart, 3))   # matplotlib's default red and green: 0.07
