"""Plots that everyone can read: a matplotlib figure shown with a text alternative, in a palette that stays
apart under the common colour-vision deficiencies, each line also told by its marker.

A notebook's PNG output has no alt text (JupyterLab draws a bare ``<img>``): :func:`show` sends the picture as
HTML with the description as its ``alt`` and, for a terminal or a grading script, the description as text."""
from __future__ import annotations

import base64
import html
import io
from typing import Any

#: Okabe and Ito's palette (blue, orange, bluish green, vermillion, reddish purple, sky blue, yellow): told apart
#: with protanopia, deuteranopia and tritanopia.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442")
#: A marker per line, in the same order, so that no line is told by colour alone.
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def style(index: int) -> dict[str, str]:
    """``color`` and ``marker`` for the ``index``-th line of a plot (``ax.plot(x, y, **style(i))``)."""
    return {"color": COLOURS[index % len(COLOURS)], "marker": MARKERS[index % len(MARKERS)]}


class Figure:
    """A rendered figure and its text alternative; shows itself in a notebook (HTML) and prints as text."""

    def __init__(self, png: bytes, alt: str):
        self.png, self.alt = png, alt

    def _repr_html_(self) -> str:
        data = base64.b64encode(self.png).decode("ascii")
        return (f'<figure style="margin:0"><img src="data:image/png;base64,{data}" alt="{html.escape(self.alt)}" '
                f'style="max-width:100%;background:#fff"></figure>')

    def __repr__(self) -> str:
        return f"[figure] {self.alt}"


def show(fig: Any, alt: str) -> Figure:
    """Render a matplotlib figure with its text alternative ``alt`` (what it shows, with its key numbers: what a
    reader who cannot see it needs), and close it (so that it shows once). The last expression of a cell displays
    the :class:`Figure`."""
    if not isinstance(alt, str) or not alt.strip():
        raise ValueError("a figure needs a text alternative: say what it shows, with its key numbers")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight", facecolor="white")
    import matplotlib.pyplot as plt  # only when there is a figure: matplotlib is the notebooks' dependency
    plt.close(fig)
    return Figure(buffer.getvalue(), alt.strip())
