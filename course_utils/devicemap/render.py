"""Drawing a :class:`~course_utils.devicemap.model.DeviceMap`: plain text for a terminal, and HTML with inline SVG for a
notebook (no widget, no script: it stays in a saved notebook, on GitHub, nbviewer, VS Code and Colab). Colours come from
JupyterLab's theme variables, with fallbacks, and every block also says in words what it is."""
from __future__ import annotations

import html as _html
import itertools
import math
from typing import Protocol

from ..figures import COLOURS
from ..text import shorten
from .blocks import COPIED, MOVED, NEW, ODD, STAYED, Block, Lane


class MapLike(Protocol):
    """What the renderers draw: a :class:`~course_utils.devicemap.model.DeviceMap`, known here by its shape
    (the model imports this module for its views; importing the model back would be a cycle)."""

    lanes: list[Lane]
    skipped: list[str]

#: Layout, in pixels. A block is a card: a label area of fixed width, then a bar whose length grows
#: with the bytes on a log scale (4 B and 4 GiB both readable), so a bigger storage is a wider card.
LANE_WIDTH = 760
LABEL_WIDTH = 190
BAR_MIN, BAR_MAX = 6, 250
BLOCK_HEIGHT = 58
GAP = 8
_LOG_MAX = math.log2(1 + 2**40)     # 1 TiB: the widest bar
_NAME_CHARS, _CHARS = 26, 32         # characters that fit in LABEL_WIDTH: the bold name, the other lines

# Okabe and Ito's colours (the plots' palette): apart under protanopia, deuteranopia and tritanopia; the kind is
# also written in each block, and each bar has an edge in the theme's text colour.
_KIND_COLOUR = {"parameter": COLOURS[0], "gradient": COLOURS[1], "tensor": COLOURS[2],
                "optimizer state": COLOURS[4], "buffer": COLOURS[5]}    # blue, orange, green, purple, sky blue
_STATUS_MARK = {MOVED: "→ moved", COPIED: "⧉ copied", STAYED: "⚠ stayed behind", NEW: "+ new", ODD: "✘ odd one out"}
_STATUS_COLOUR = {MOVED: "#2a7a2a", COPIED: "#8a6d00", STAYED: "#c0392b", NEW: "#2a6aa8", ODD: "#c0392b"}


def human_bytes(n: int) -> str:
    """``4 B``, ``1.5 KiB``, ``4.0 GiB``."""
    if n < 1024:
        return f"{n} B"
    exp = min(int(math.log(n, 1024)), 5)
    return f"{n / 1024 ** exp:.1f} {'KMGTP'[exp - 1]}iB"


def bar_width(nbytes: int) -> float:
    """The bar's length for a storage of ``nbytes``: strictly increasing, from BAR_MIN to BAR_MAX."""
    share = min(math.log2(1 + max(nbytes, 0)) / _LOG_MAX, 1.0)
    return BAR_MIN + (BAR_MAX - BAR_MIN) * share


def block_width(block: Block) -> float:
    """A block's width: the label area and the bar."""
    return LABEL_WIDTH + bar_width(block.nbytes)


def label_lines(block: Block) -> list[str]:
    """The lines written in a block: its name(s); shape and dtype; size and kind; its status, if any."""
    views = len(block.names) - 1
    name = block.name + (f" (+{views} view{'s' * (views > 1)})" if views else "")
    shape = "×".join(str(s) for s in block.shape) or "scalar"
    size = f"{human_bytes(block.nbytes)} · {block.kind}" + (" · pinned" if block.pinned else "")
    status = f"{_STATUS_MARK[block.status]}: {block.note}" if block.status else ""
    return [shorten(name, _NAME_CHARS)] + [shorten(line, _CHARS) for line in (f"{shape} · {block.dtype}", size, status)]



def layout(lane: Lane) -> list[tuple[Block, float, float]]:
    """(block, x, y) for each block of a lane, in rows that wrap at :data:`LANE_WIDTH`."""
    placed, x, y = [], 0.0, 0.0
    for block in lane.blocks:
        w = block_width(block)
        if x > 0 and x + w > LANE_WIDTH:
            x, y = 0.0, y + BLOCK_HEIGHT + GAP
        placed.append((block, x, y))
        x += w + GAP
    return placed


# --- text --------------------------------------------------------------------------------------------

def text(device_map: MapLike) -> str:
    """The map as text: a section per lane, a line per block."""
    if not device_map.lanes:
        return "Device map: no tensors found" + _skipped_text(device_map)
    lines = [f"Device map: {len(device_map.lanes)} memor{'y' if len(device_map.lanes) == 1 else 'ies'}"]
    for lane in device_map.lanes:
        lines.append(f"{lane.title}: {len(lane.blocks)} block(s), {human_bytes(lane.used)}{_memory_text(lane)}")
        for b in lane.blocks:
            status = f"   [{_STATUS_MARK[b.status]}: {b.note}]" if b.status else ""
            names = ", ".join(b.names)
            shape = "×".join(str(s) for s in b.shape) or "scalar"
            lines.append(f"  {b.kind:16} {names:28} {shape:>12} {b.dtype:9} {human_bytes(b.nbytes):>10}"
                         f"{' pinned' if b.pinned else ''}{status}")
    return "\n".join(lines) + _skipped_text(device_map)


def _memory_text(lane: Lane) -> str:
    return f" (device: {human_bytes(lane.free or 0)} free of {human_bytes(lane.total)})" if lane.total else ""


def _skipped_text(device_map: MapLike) -> str:
    if not device_map.skipped:
        return ""
    return "\nNo tensors in: " + ", ".join(device_map.skipped[:12]) + (" …" if len(device_map.skipped) > 12 else "")


# --- HTML + SVG ----------------------------------------------------------------------------------------

_FG = "var(--jp-ui-font-color1, #1f1f1f)"
_FG2 = "var(--jp-ui-font-color2, #555)"
_BG = "var(--jp-layout-color1, #ffffff)"
_BG2 = "var(--jp-layout-color2, #f3f3f3)"
_LINE = "var(--jp-border-color1, #9e9e9e)"

_IDS = itertools.count()


def describe(block: Block) -> str:
    """One block in words: what the SVG shows of it, for its title and the map's table."""
    return (f"{', '.join(block.names)}: {block.kind}, shape {tuple(block.shape)}, {block.dtype}, "
            f"{human_bytes(block.nbytes)} on {block.device}" + ("" if not block.pinned else ", pinned")
            + (f"; {block.status}: {block.note}" if block.status else ""))


def html(device_map: MapLike) -> str:
    """The map as HTML: one inline SVG per lane (with a title and a description a screen reader reads), then the
    same facts as a table in a collapsed note."""
    esc = _html.escape
    map_id = f"course-map-{next(_IDS)}"
    parts = [f'<div class="course-device-map" style="font-family: var(--jp-ui-font-family, sans-serif); '
             f'color: {_FG}; max-width: {LANE_WIDTH + 20}px">']
    parts.append(f'<div style="font-weight: bold; margin: 2px 0 6px">{esc(text(device_map).splitlines()[0])}</div>')
    for lane in device_map.lanes:
        placed = layout(lane)
        height = (max(y for _, _, y in placed) + BLOCK_HEIGHT) if placed else BLOCK_HEIGHT
        parts.append(f'<div class="course-lane" data-device="{esc(lane.device)}" style="border: 1px solid {_LINE}; '
                     f'border-radius: 6px; padding: 6px 8px; margin: 0 0 8px; background: {_BG2}">')
        parts.append(f'<div style="margin-bottom: 4px"><b>{esc(lane.title)}</b> · {len(lane.blocks)} block(s), '
                     f'{esc(human_bytes(lane.used))}{esc(_memory_text(lane))}</div>')
        lane_id = f"{map_id}-{esc(lane.device)}"
        contents = "; ".join(describe(block) for block in lane.blocks) or "empty"
        parts.append(f'<svg role="img" aria-labelledby="{lane_id}-t {lane_id}-d" width="{LANE_WIDTH}" '
                     f'height="{height:.0f}" viewBox="0 0 {LANE_WIDTH} {height:.0f}" '
                     f'xmlns="http://www.w3.org/2000/svg" style="max-width: 100%; height: auto; display: block">'
                     f'<title id="{lane_id}-t">{esc(lane.title)}</title><desc id="{lane_id}-d">{esc(contents)}</desc>')
        for block, x, y in placed:
            parts.append(_svg_block(block, x, y))
        parts.append("</svg></div>")
    skipped = _skipped_text(device_map).strip()
    if skipped:
        parts.append(f'<div style="color: {_FG2}; font-size: 90%">{esc(skipped)}</div>')
    parts += [_table(device_map), "</div>"]
    return "".join(parts)


def _table(device_map: MapLike) -> str:
    """Every block as a table row (names, kind, shape, dtype, bytes, device, status), in a collapsed note."""
    esc = _html.escape
    rows = "".join(f"<tr><td>{esc(', '.join(b.names))}</td><td>{esc(b.kind)}</td><td>{esc(str(tuple(b.shape)))}</td>"
                   f"<td>{esc(b.dtype)}</td><td>{esc(human_bytes(b.nbytes))}</td><td>{esc(b.device)}</td>"
                   f"<td>{esc(f'{b.status}: {b.note}' if b.status else '')}</td></tr>"
                   for lane in device_map.lanes for b in lane.blocks)
    cell = "padding: 1px 8px; text-align: left"
    head = "".join(f'<th scope="col" style="{cell}">{h}</th>' for h in
                   ("name", "kind", "shape", "dtype", "size", "device", "status"))
    return (f'<details style="margin-top: 4px"><summary>The same map as a table</summary>'
            f'<table style="border-collapse: collapse; font-size: 90%"><thead><tr>{head}</tr></thead>'
            f'<tbody>{rows}</tbody></table></details>')


def _svg_block(block: Block, x: float, y: float) -> str:
    esc = _html.escape
    w, bar = block_width(block), bar_width(block.nbytes)
    colour = _KIND_COLOUR.get(block.kind, "#888888")
    edge = _STATUS_COLOUR.get(block.status, colour)
    dash = ' stroke-dasharray="5 3"' if block.status in (STAYED, ODD) else ""
    first, second, third, fourth = label_lines(block)
    # the status in words, in the theme's text colour (readable on light and dark); the edge carries its colour
    status = f'<text x="{x + 6:.1f}" y="{y + 52:.1f}" font-size="9.5" font-weight="bold" style="fill: {_FG}">' \
             f'{esc(fourth)}</text>' if fourth else ""
    return (f'<g class="course-block" data-name="{esc(block.name)}" data-bytes="{block.nbytes}" '
            f'data-status="{esc(block.status)}" data-kind="{esc(block.kind)}"><title>{esc(describe(block))}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{BLOCK_HEIGHT}" rx="4" '
            f'style="fill: {_BG}; stroke: {edge}; stroke-width: {2.5 if block.status else 1.2}"{dash}/>'
            f'<rect x="{x + LABEL_WIDTH:.1f}" y="{y + 4:.1f}" width="{bar - 4:.1f}" height="{BLOCK_HEIGHT - 8}" '
            f'rx="2" style="fill: {colour}; fill-opacity: 0.85; stroke: {_FG}; stroke-width: 0.75"/>'
            f'<text x="{x + 6:.1f}" y="{y + 15:.1f}" font-size="11" font-weight="bold" '
            f'style="fill: {_FG}">{esc(first)}</text>'
            f'<text x="{x + 6:.1f}" y="{y + 27:.1f}" font-size="9.5" style="fill: {_FG2}">{esc(second)}</text>'
            f'<text x="{x + 6:.1f}" y="{y + 39.5:.1f}" font-size="9.5" style="fill: {_FG2}">{esc(third)}</text>'
            f'{status}</g>')
