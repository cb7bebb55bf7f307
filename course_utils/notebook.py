"""Reading course notebooks (plain JSON, no Jupyter needed): their cells and answer cells."""
from __future__ import annotations

from typing import Any


def cell_source(cell: dict[str, Any]) -> str:
    """A cell's source as one string (notebooks store it as a string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def exercise_cells(nb: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Exercise id -> its answer cell, in notebook order: the code cell with metadata ``{"course": {"exercise": id}}``
    of ``nb``, a notebook as parsed JSON."""
    cells = {}
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
        course = meta.get("course") if isinstance(meta, dict) else None
        if isinstance(course, dict) and isinstance(course.get("exercise"), str) and cell.get("cell_type") == "code":
            cells[course["exercise"]] = cell
    return cells
