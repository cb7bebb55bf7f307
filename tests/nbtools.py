"""Reading the course notebooks and building the variants the tests execute."""
from __future__ import annotations

import json
from pathlib import Path

from course_utils.notebook import cell_source, exercise_cells, with_solutions  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"


def notebook_paths() -> list[Path]:
    """Every lesson notebook; a notebook added later is picked up automatically."""
    return sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


source = cell_source


def variant(nb: dict, solved: bool) -> dict:
    """A copy of ``nb`` (with reference solutions pasted in when ``solved``) that ends with a
    cell asserting every exercise check in it reported "passed" (solved) or "not attempted"."""
    nb = with_solutions(nb) if solved else json.loads(json.dumps(nb))
    cells = exercise_cells(nb)
    expected = {ex_id: "passed" if solved else "not attempted" for ex_id in sorted(cells)}
    nb["cells"].append({
        "cell_type": "code", "execution_count": None, "id": "test-final-assertion", "metadata": {},
        "outputs": [], "source": (
            "from course_utils.store import session_statuses\n"
            f"expected = {expected!r}\n"
            "seen = {k: v for k, v in session_statuses().items() if k in expected}\n"
            "assert seen == expected, f'exercise checks: expected {expected}, got {seen}'\n"),
    })
    return nb
