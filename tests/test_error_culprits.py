"""Under each deliberate device error of the lessons, the help names first a variable the failing line uses, its
device map shows only the cell's variables, and the traceback above it leaves PyTorch's machinery out.

Each notebook runs once, in a real kernel, from its first cell to its last such cell (the cells in between run as
a learner runs them: the help reads the variables the earlier cells left behind).
"""
from __future__ import annotations

import ast
import re
import types
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

import course_utils.device as course_device
from course_utils.gpusim import backend as simdevice
from course_utils.errors import explain_error
from nbtools import RAISE_WHEN, load, notebook_paths, raises, source

#: Families whose errors name two devices: the help must list the variables on them.
MISMATCH_FAMILIES = {"devices", "index-device", "optimizer-state", "data-parallel"}
#: Never in a shortened traceback.
MACHINERY = ("torch/_prims", "torch/_refs", "torch/_decomp", "_call_impl", "course_utils/gpusim/")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _KernelDevice:
    """``course_utils.device`` as a lesson's kernel sees it: there ``cu.setup()`` registers the simulated GPU where
    there is no accelerator (not in this process: see conftest.py)."""

    @staticmethod
    def accelerator():
        real = course_device.accelerator()
        if real is None and simdevice.wanted(this_process=False):
            return types.SimpleNamespace(type=simdevice.NAME)   # torch.device cannot name it in this process
        return real


def _raises_here(declared: dict) -> bool:
    """Whether a cell raises in a lesson's kernel (``course.raises.when``), decided as the notebook run decides."""
    return bool(eval(RAISE_WHEN[declared.get("when", "always")],
                     {"_torch": torch, "_device": _KernelDevice}))


def _device_error_cells() -> list[tuple[Path, int]]:
    """(notebook, cell index) of each cell that raises a device error on purpose here."""
    found = []
    for path in notebook_paths():
        for index, cell in enumerate(load(path)["cells"]):
            declared = raises(cell) if "raises-exception" in cell.get("metadata", {}).get("tags", []) else None
            if not declared or not _raises_here(declared):
                continue
            messages = declared["message"]
            explained = [explain_error(m) for m in ([messages] if isinstance(messages, str) else messages)]
            if any(e.known and e.device_problem for e in explained):
                found.append((path, index))
    return found


CELLS = _device_error_cells()


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Notebook -> the outputs of its cells, each notebook run once, up to its last device-error cell."""
    runs: dict[Path, list] = {}

    def run(path: Path) -> list:
        if path not in runs:
            nb = nbformat.read(path, as_version=4)
            nb.cells = nb.cells[: max(i for p, i in CELLS if p == path) + 1]
            folder = tmp_path_factory.mktemp(path.stem)
            NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": str(folder)}}).execute()
            runs[path] = [getattr(cell, "outputs", []) for cell in nb.cells]
        return runs[path]
    return run


def names_read(code: str, line: int) -> set[str]:
    """The names the innermost statement on ``line`` reads."""
    statements = [s for s in ast.walk(ast.parse(code)) if isinstance(s, ast.stmt) and s.lineno <= line <= s.end_lineno]
    statement = min(statements, key=lambda s: s.end_lineno - s.lineno)
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def test_the_lessons_have_device_errors_to_check():
    assert {p.stem[:2] for p, _ in CELLS} >= {"03", "06"} and len(CELLS) >= 8, CELLS


@pytest.mark.parametrize("path, index", CELLS, ids=[f"{p.stem[:2]}-cell{i}" for p, i in CELLS])
def test_the_culprit_is_named_first(executed, path, index):
    cell = load(path)["cells"][index]
    outputs = executed(path)[index]
    errors = [o for o in outputs if o.output_type == "error"]
    assert len(errors) == 1, f"{path.stem} cell {index} did not raise: {outputs}"
    traceback = ANSI.sub("", "\n".join(errors[0].traceback))
    assert not [m for m in MACHINERY if m in traceback], traceback
    assert errors[0].evalue.splitlines()[0] in traceback                    # the message, whole
    called = re.findall(r"^File .*, in ([\w.<>]+)\(", traceback, re.MULTILINE)
    assert all(a != b for a, b in zip(called, called[1:])), called        # no function twice in a row
    line = int(re.search(r"Cell In\[\d+\], line (\d+)", traceback).group(1))
    used = names_read(source(cell), line)

    helps = [o for o in outputs
             if o.output_type == "display_data" and "course-error-help" in o.data.get("text/html", "")]
    assert len(helps) == 1, f"{path.stem} cell {index}: no help under {errors[0].evalue!r}"
    text, page = helps[0].data["text/plain"], helps[0].data["text/html"]
    assert "not shown" not in traceback or traceback.rstrip().endswith("run %tb to see them.)")
    listing = re.search(r"Your variables on these devices:\n  used in this cell: (.*)((?:\n  .*)*)", text)
    family = explain_error(errors[0].evalue).key
    if family in MISMATCH_FAMILIES:
        assert listing, f"{path.stem} cell {index}: the help lists no variables of this cell:\n{text}"
    if listing and listing.group(1).startswith("none of them"):   # the culprit is made by the line: no variable
        others = {n for row in listing.group(2).splitlines() if ": " in row
                  for n in re.findall(r"[A-Za-z_]\w*", row.split(": ", 1)[1])}
        assert not used & others, (used, text)
        assert 'data-name="' not in page                               # and no map of unrelated variables
    elif listing:
        first = re.match(r"[A-Za-z_]\w*", listing.group(1)).group(0)
        assert first in used, f"{path.stem} cell {index}: {first!r} comes first, the line reads {sorted(used)}\n{text}"
        mapped = {re.match(r"[A-Za-z_]\w*", n).group(0) for n in re.findall(r'data-name="([^"]+)"', page)}
        assert mapped <= set(_cell_names(source(cell))), (mapped, text)      # the map: the cell's variables only


def _cell_names(code: str) -> list[str]:
    return [n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)]
