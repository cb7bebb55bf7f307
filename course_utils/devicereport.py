"""The device report :func:`~course_utils.mismatch.explain_devices` returns: one row per tensor with its device and
status, a headline, the fixes, and its views (plain text for terminals, a table in a card for notebooks)."""
from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional

import torch

from .devicemap.model import DeviceMap
from .text import WIDTH, card, code_html, shorten, wrapped

__all__ = ["DeviceReport", "Entry", "OK", "NOTE", "WARNING", "MISMATCH", "is_on"]

#: Entry statuses, from fine to wrong.
OK, NOTE, WARNING, MISMATCH = "ok", "note", "warning", "mismatch"
_ICON = {OK: "✔", NOTE: "•", WARNING: "!", MISMATCH: "✘"}
_COLOUR = {OK: "#2e9d4f", NOTE: "#868e96", WARNING: "#e67700", MISMATCH: "#d9480f"}


@dataclass(frozen=True)
class Entry:
    """One row of a :class:`DeviceReport`."""

    kind: str    # parameter, buffer, plain attribute, input, loss, module, optimizer state or unregistered module
    name: str    # as named_parameters() / named_buffers() give it, or the input's key
    device: str  # as text ("cuda:0"); "" for a non-tensor
    shape: str   # "(8, 4)" or ""
    dtype: str   # "float32", or a non-tensor's type name
    status: str  # OK, NOTE, WARNING or MISMATCH
    note: str = ""   # why it is flagged


@dataclass
class DeviceReport:
    """What :func:`explain_devices` found; display it, print it, or read its attributes."""

    target: Optional[str]   # None when there was nothing to go by
    reason: str             # for the target: you asked, or most of the model's parameters are there
    entries: list[Entry] = field(default_factory=list)       # one per tensor (and non-tensor input)
    suggestions: list[str] = field(default_factory=list)     # most important first
    problems: list[str] = field(default_factory=list)        # what stopped part of the inspection (no nn.Module)
    #: the same objects on a device map, the odd ones out marked (shown under the report in a notebook)
    device_map: Optional[DeviceMap] = None

    @property
    def mismatches(self) -> list[str]:
        """Sorted names of the tensors that are not on the target device."""
        return sorted({e.name for e in self.entries if e.status == MISMATCH})

    @property
    def warnings(self) -> list[str]:
        """Sorted names of tensors that are fine now but will not follow ``Module.to``."""
        return sorted({e.name for e in self.entries if e.status == WARNING})

    @property
    def ok(self) -> bool:
        """True when nothing is on the wrong device and nothing is about to be."""
        return not (self.mismatches or self.warnings or self.problems)

    @property
    def devices(self) -> dict[str, list[str]]:
        """Device -> names of the tensors on it."""
        out: dict[str, list[str]] = {}
        for e in self.entries:
            if e.device:
                out.setdefault(e.device, []).append(e.name)
        return out

    def headline(self) -> str:
        """What the rows say: how many of the tensors listed are on the target (and which are not), where the
        optimizer's tensors are, and what to watch out for."""
        tensors = [e for e in self.entries if e.device and e.kind != _STATE]
        state = [e for e in self.entries if e.device and e.kind == _STATE]
        if self.target is None:
            return "No target device to compare with." if tensors or state else "Found no tensors to check."
        whose = f" of {_joined(dict.fromkeys(_GROUP.get(e.kind, 'the inputs') for e in tensors))}" if state else ""
        bad = sorted({e.name for e in tensors if e.status == MISMATCH})
        elsewhere = [e for e in tensors if e.status != MISMATCH and not self._on_target(e)]
        sentences = []
        if bad:
            sentences.append(f"{len(bad)} of {len(tensors)} tensors{whose} are not on {self.target}: {_names(bad)}.")
        elif elsewhere:
            sentences.append(f"{len(tensors) - len(elsewhere)} of {len(tensors)} tensors{whose} are on {self.target}.")
        elif tensors:
            sentences.append(f"All {len(tensors)} tensors{whose} are on {self.target}.")
        if elsewhere:
            names = sorted({e.name for e in elsewhere})
            sentences.append(f"{_names(names)} may stay on {_where(elsewhere)}: see the notes.")
        if state:
            sentences.append(f"The optimizer's {len(state)} tensors are on {_where(state)}.")
            stray = sorted({e.name for e in state if e.status == MISMATCH})
            if stray:
                sentences.append(f"Optimizer state not next to its parameter: {_names(stray)}.")
        if self.warnings:
            sentences.append(f"Watch out for {_names(self.warnings)}: see the notes.")
        return " ".join(sentences) or "Found no tensors to check."

    def text(self, max_rows: int = 40) -> str:
        """Plain text: a table (flagged rows always shown), the headline and the suggested fixes, wrapped at
        word boundaries to :data:`WIDTH` characters (a note too long for its row goes under it)."""
        title = "Device report" + (f": target {self.target} ({self.reason})" if self.target else "")
        lines = wrapped(title, "", "  ")
        for p in self.problems:
            lines += wrapped(p, "  problem: ", "    ")
        rows, hidden = self._rows(max_rows)
        if rows:
            width = min(max(4, *(len(e.name) for e in rows)), 48)
            lines.append(f"    {'kind':<20}{'name':<{width + 2}}{'device':<10}{'shape':<14}dtype")
            for e in rows:
                name = shorten(e.name, width)
                row = (f"  {_ICON[e.status]} {e.kind:<20}{name:<{width + 2}}{e.device or '-':<10}"
                       f"{e.shape or '-':<14}{e.dtype}")
                if e.note and len(row) + len(e.note) + 5 <= WIDTH:
                    lines.append(f"{row}  <- {e.note}")
                else:
                    lines.append(row)
                    lines += wrapped(e.note, "      <- ", "         ") if e.note else []
            if hidden:
                lines.append(f"    ... and {len(hidden)} more tensors on {_where(hidden)}, all fine")
        lines += wrapped(self.headline(), "", "")
        if self.suggestions:
            lines.append("How to fix:")
            for s in self.suggestions:
                lines += wrapped(s, "  - ", "    ")
        return "\n".join(lines)

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        title = "Device report" + (f": target <code>{html.escape(self.target)}</code> "
                                   f"({html.escape(self.reason)})" if self.target else "")
        parts = [f"<b>{title}</b>"]
        for p in self.problems:
            parts.append(f"<div><span style='color:{_COLOUR[MISMATCH]}'>{_ICON[MISMATCH]}</span> "
                         f"<b>Problem:</b> {html.escape(p)}</div>")
        rows, hidden = self._rows(40)
        if rows:
            head = "".join(f"<th style='text-align:left;padding:1px 8px'>{h}</th>"
                           for h in ("status", "kind", "name", "device", "shape", "dtype", "note"))
            body = []
            for e in rows:
                cells = [f"<span style='color:{_COLOUR[e.status]}'>{_ICON[e.status]}</span> {e.status}",
                         html.escape(e.kind), f"<code>{html.escape(e.name)}</code>",
                         f"<code>{html.escape(e.device or '-')}</code>", html.escape(e.shape or "-"),
                         html.escape(e.dtype), html.escape(e.note)]
                styles = [_WRAPS, _WRAPS, _CELL, _CELL, _CELL, _WRAPS, _NOTE]
                body.append("<tr>" + "".join(f"<td style='{st}'>{c}</td>" for st, c in zip(styles, cells)) + "</tr>")
            if hidden:
                body.append(f"<tr><td></td><td colspan='6' style='{_WRAPS}'>… and {len(hidden)} more "
                            f"tensors on {html.escape(_where(hidden))}, all fine</td></tr>")
            parts.append(f"<table style='border-collapse:collapse;margin:4px 0'><tr>{head}</tr>{''.join(body)}</table>")
        parts.append(f"<div><b>{html.escape(self.headline())}</b></div>")
        if self.suggestions:
            items = "".join(f"<li>{code_html(s)}</li>" for s in self.suggestions)
            parts.append(f"<div>How to fix:<ul style='margin:2px 0'>{items}</ul></div>")
        if self.device_map is not None and self.device_map.lanes:
            parts.append(self.device_map._repr_html_())
        colour = _COLOUR[MISMATCH if self.mismatches else WARNING if not self.ok else OK]
        return card(f"<div style='{_PROSE}'>{''.join(parts)}</div>", colour, "course-device-report")

    def _rows(self, max_rows: int) -> tuple[list[Entry], list[Entry]]:
        """The rows shown (every flagged one, then fine ones while there is room) and the fine ones left out."""
        flagged = [e for e in self.entries if e.status != OK]
        fine = [e for e in self.entries if e.status == OK]
        room = max(max_rows - len(flagged), 0)
        if len(fine) <= room:
            return list(self.entries), []
        keep = set(map(id, flagged + fine[:room]))
        return [e for e in self.entries if id(e) in keep], fine[room:]

    def _on_target(self, e: Entry) -> bool:
        try:
            return is_on(torch.device(e.device), torch.device(str(self.target)))
        except Exception:
            return e.device == self.target


#: HTML: names, devices and shapes stay on one line; the other cells and the prose wrap between words, never
#: inside one, and a table wider than the output scrolls inside the card.
_CELL = "padding:1px 8px;white-space:nowrap"
_WRAPS = "padding:1px 8px;white-space:normal;word-break:normal;overflow-wrap:normal"
_NOTE = _WRAPS + ";min-width:16em"
_PROSE = "white-space:normal;word-break:normal;overflow-wrap:break-word;overflow-x:auto"
_STATE = "optimizer state"
#: Whose tensors each kind of row is, for the headline.
_GROUP = {"parameter": "the model", "buffer": "the model", "plain attribute": "the model",
          "unregistered module": "the model", "loss": "the loss", "input": "the inputs", "module": "the inputs"}


def _where(entries: list[Entry]) -> str:
    """The devices of some rows: ``cpu``, or ``cpu (6) and meta (2)``, most first."""
    counts = Counter(e.device for e in entries if e.device)
    return next(iter(counts)) if len(counts) == 1 else _joined(f"{device} ({n})" for device, n in counts.most_common())


def _joined(words: Iterable[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    words = list(words)
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def _names(names: list[str], limit: int = 6) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def is_on(device: torch.device, target: torch.device) -> bool:
    """Whether ``device`` is ``target``; an index left out on either side (``cuda``) matches any index."""
    if device.type != target.type:
        return False
    return target.index is None or device.index is None or device.index == target.index
