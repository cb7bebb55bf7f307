#!/usr/bin/env python3
"""Keep every notebook's launch parts in sync with the repository address in pyproject.toml.

For each ``notebooks/NN_*.ipynb`` this writes the Colab/Binder badge line in the first cell,
the Colab-only install cell right after it, and the Colab GPU-runtime metadata; it also
strips outputs, execution counts and widget state. Safe to re-run: a notebook that is already
in sync is left byte-for-byte unchanged.

    python scripts/sync_notebooks.py          # rewrite notebooks that are out of sync
    python scripts/sync_notebooks.py --check  # exit 1 and list them instead (used by the tests)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from course_utils.classroom.links import binder_link, colab_link, course_address  # noqa: E402  (one reader of
# the address; the badges' links are the ones `python -m course_utils links --colab --binder` prints)
BADGE_MARK = "colab-badge.svg"
COLAB_ROLE = "colab-setup"


def settings() -> tuple[str, str]:
    """(repository URL, branch) from pyproject.toml's [tool.course] table."""
    return course_address(ROOT / "pyproject.toml")


def badge_line(name: str, repo: str, branch: str) -> str:
    colab, binder = colab_link(repo, branch, name), binder_link(repo, branch, name)
    return (f"[![Open In Colab](https://colab.research.google.com/assets/{BADGE_MARK})]({colab}) "
            f"[![Launch on Binder](https://mybinder.org/badge_logo.svg)]({binder})")


def colab_source(repo: str, branch: str) -> str:
    return (
        "# Colab only: install the course helpers (Colab already has torch and ipywidgets).\n"
        "import sys\n"
        "if \"google.colab\" in sys.modules:\n"
        f"    %pip install -q \"course_utils @ git+{repo}@{branch}\"")


def sync(nb: dict, name: str, repo: str, branch: str) -> dict:
    """Return the notebook with badges, Colab cell and metadata in place, outputs stripped."""
    cells = nb["cells"]
    first = cells[0]
    lines = [l for l in _source(first).split("\n") if BADGE_MARK not in l]
    # badges go after the promise: the first non-empty, non-heading line after the title
    at = next((i + 1 for i, l in enumerate(lines) if i and l.strip() and not l.startswith("#")), len(lines))
    lines[at:at] = ["", badge_line(name, repo, branch)] if lines[at - 1].strip() else [badge_line(name, repo, branch)]
    first["source"] = "\n".join(_squeeze(lines))

    colab = {"cell_type": "code", "id": COLAB_ROLE, "metadata": {"course": {"role": COLAB_ROLE}},
             "execution_count": None, "outputs": [], "source": colab_source(repo, branch)}
    cells[:] = [c for c in cells if c.get("metadata", {}).get("course", {}).get("role") != COLAB_ROLE]
    cells.insert(1, colab)

    for cell in cells:
        cell["source"] = _source(cell)
        for key in ("execution", "lines_to_next_cell", "collapsed", "scrolled"):  # editor leftovers
            cell.get("metadata", {}).pop(key, None)
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    meta = nb.setdefault("metadata", {})
    for key in ("widgets", "jupytext"):
        meta.pop(key, None)
    meta["accelerator"] = "GPU"
    meta["colab"] = {"gpuType": "T4", "provenance": []}
    meta["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    meta["language_info"] = {"name": "python"}
    return nb


def dumps(nb: dict) -> str:
    """Jupyter's own on-disk format, so saving in JupyterLab makes no spurious diff."""
    import nbformat
    return nbformat.writes(nbformat.from_dict(nb), version=4) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="list out-of-sync notebooks, change nothing")
    args = parser.parse_args(argv)
    repo, branch = settings()
    stale = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        old = path.read_text(encoding="utf-8")
        new = dumps(sync(json.loads(old), path.name, repo, branch))
        if new != old:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(new, encoding="utf-8")
    verb = "out of sync" if args.check else "updated"
    for p in stale:
        print(f"{verb}: {p}")
    if args.check and stale:
        print("Run: python scripts/sync_notebooks.py")
        return 1
    return 0


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _squeeze(lines: list[str]) -> list[str]:
    """Drop runs of blank lines left behind by removing an old badge line."""
    out: list[str] = []
    for line in lines:
        if line.strip() or (out and out[-1].strip()):
            out.append(line)
    return out


if __name__ == "__main__":
    sys.exit(main())
