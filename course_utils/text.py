"""Small pieces of text and HTML that every view of the course shares: shortened and wrapped text,
`inline code` in HTML, and the card with a coloured edge that results, quiz outcomes and reports are shown in.

The bottom floor of the package: it imports nothing of the course."""
from __future__ import annotations

import html
import re
import textwrap

#: The width plain-text output wraps at, at spaces: JupyterLab breaks a longer output line anywhere, even
#: inside a word (a notebook's output area is about this wide).
WIDTH = 100

#: The frame of a card: a coloured edge, and a light grey behind that reads on light and dark themes.
_CARD_STYLE = "border-left:6px solid {colour};padding:6px 10px;background:rgba(128,128,128,.08);margin:4px 0"


def shorten(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` (at least 1) characters, else its first ``limit - 1`` and "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clean(text: str, limit: int = 600) -> str:
    """One line, no memory addresses, at most ``limit`` characters: the same answer gives the same feedback."""
    text = re.sub(r"0x[0-9a-fA-F]{6,}", "0x…", re.sub(r" at 0x[0-9a-fA-F]+", "", str(text)))
    return shorten(" ".join(text.split()), limit)


def wrapped(text: str, first: str = "", then: str = "") -> list[str]:
    """``text``, one paragraph, in lines of at most :data:`WIDTH` characters, broken at spaces only (a longer word
    stays whole); the first line starts with ``first`` (a label, an indent), every further one with ``then``."""
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=then, break_long_words=False,
                         break_on_hyphens=False) or [first.rstrip()]


def code_html(text: str) -> str:
    """``text`` as HTML: escaped, `backticks` shown as inline code, line breaks kept."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)).replace("\n", "<br>")


def card(body: str, colour: str, css_class: str) -> str:
    """A block with a coloured edge (a CSS ``colour``) on the left around ``body`` (HTML), the frame of every result
    the course shows; ``css_class`` is for styles and tests (``"course-result"``)."""
    return f"<div class='{css_class}' style='{_CARD_STYLE.format(colour=colour)}'>{body}</div>"
