"""Reading the course notebooks and building the variants the tests execute."""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from course_utils.exercises import get_exercise
from course_utils.notebook import cell_source, exercise_cells

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"


def notebook_paths() -> list[Path]:
    """Every lesson notebook; a notebook added later is picked up automatically."""
    return sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def with_solutions(nb: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``nb`` with every answer cell replaced by the exercise's reference solution."""
    solved = copy.deepcopy(nb)
    for ex_id, cell in exercise_cells(solved).items():
        cell["source"] = get_exercise(ex_id).solution_source
    return solved


source = cell_source


def variant(nb: dict, solved: bool) -> dict:
    """A copy of ``nb`` (with reference solutions pasted in when ``solved``) that ends with a
    cell asserting every exercise check in it reported "passed" (solved) or "not attempted"."""
    nb = with_solutions(nb) if solved else json.loads(json.dumps(nb))
    nb["cells"] = [c for cell in nb["cells"] for c in _with_raise_checks(cell)]
    cells = exercise_cells(nb)
    expected = {ex_id: "passed" if solved else "not attempted" for ex_id in sorted(cells)}
    nb["cells"].insert(0, _code_cell("test-watch-warnings", WATCH_WARNINGS))
    nb["cells"].append(_code_cell("test-final-assertion", (
        "from course_utils.store import session_statuses\n"
        f"expected = {expected!r}\n"
        "seen = {k: v for k, v in session_statuses().items() if k in expected}\n"
        "assert seen == expected, f'exercise checks: expected {expected}, got {seen}'\n"
        "assert not _course_warnings, 'warnings under the lesson from course_utils: ' + '; '.join(_course_warnings)\n")))
    return nb


#: The first cell of a test run: it records each warning shown while course_utils is on the stack (the
#: course's own code, or PyTorch called by it), so that the last cell can say the lesson showed none.
WATCH_WARNINGS = """\
import traceback as _traceback
import warnings as _warnings

_course_warnings = []
_show_warning = _warnings.showwarning


def _watch(message, category, filename, lineno, file=None, line=None):
    if any("course_utils" in frame.filename for frame in _traceback.extract_stack()):
        _course_warnings.append(f"{category.__name__}: {message} ({filename}:{lineno})")
    _show_warning(message, category, filename, lineno, file, line)


_warnings.showwarning = _watch
"""


def _code_cell(cell_id: str, code: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": cell_id, "metadata": {}, "outputs": [],
            "source": code}


#: When a cell raises on purpose only on some machines (``course.raises.when``): the condition, as code.
RAISE_WHEN = {
    "always": "True",
    "no cuda": "not _torch.cuda.is_available()",
    "no accelerator": "_device.accelerator() is None",
    "accelerator": "_device.accelerator() is not None",
    "real gpu": "getattr(_device.accelerator(), 'type', 'simgpu') != 'simgpu'",   # not the simulated GPU
    "cpu build": "not _torch.backends.cuda.is_built()",
    "no mps": "not _torch.backends.mps.is_available()",
}


def raises(cell: dict) -> dict | None:
    """What a cell tagged ``raises-exception`` declares it raises: its ``course.raises`` metadata,
    ``{"error": "RuntimeError", "message": "a part of the message", "when": "no cuda"}``. ``error``
    and ``message`` may be lists (any one of them: wordings differ between builds and devices);
    ``when``, a key of :data:`RAISE_WHEN`, defaults to ``always``."""
    return (cell.get("metadata", {}).get("course") or {}).get("raises")


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _with_raise_checks(cell: dict) -> list[dict]:
    """``cell``, and for a cell that raises on purpose a cell before it (forget the last error) and
    one after it (the error it raised is the one it declares), so a cell that stops raising, or
    raises something else, fails the notebook run."""
    declared = raises(cell)
    if not declared or "raises-exception" not in cell.get("metadata", {}).get("tags", []):
        return [cell]
    ident = cell.get("id", "cell")
    errors, messages = _listed(declared["error"]), _listed(declared["message"])
    wanted = f"cell {ident} should raise {' or '.join(errors)} with one of {messages}; it raised "
    after = ("import sys as _sys, torch as _torch, course_utils.device as _device\n"
             f"if {RAISE_WHEN[declared.get('when', 'always')]}:\n"
             "    _raised = _sys.last_value\n"
             f"    assert type(_raised).__name__ in {errors!r} and any(_m in str(_raised) for _m in {messages!r}), "
             f"{wanted!r} + repr(_raised)\n")
    return [_code(f"{ident}-forget-error", "import sys as _sys\n_sys.last_value = None\n"), cell,
            _code(f"{ident}-check-error", after)]


def _code(ident: str, source: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": ident, "metadata": {}, "outputs": [],
            "source": source}
