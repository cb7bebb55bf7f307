"""Binder files, and the static view of each notebook (GitHub / nbviewer, no kernel)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nbtools import NOTEBOOK_DIR, ROOT, notebook_paths

BINDER = ROOT / "binder"


def requirement_names(path: Path) -> dict[str, str]:
    """Package name -> full requirement line, ignoring comments, options and `-e .`."""
    names = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names[re.split(r"[<>=!~\[ ;]", line, 1)[0].lower()] = line
    return names


def test_binder_installs_the_learner_packages_of_requirements_txt_on_cpu_only_torch():
    binder, root = requirement_names(BINDER / "requirements.txt"), requirement_names(ROOT / "requirements.txt")
    learner = {name: line for name, line in root.items()
               if name in {"torch", "ipywidgets", "matplotlib", "jupyterlab", "notebook"}}
    assert binder == learner, "binder/requirements.txt must match the learner part of requirements.txt"
    text = (BINDER / "requirements.txt").read_text()
    assert "download.pytorch.org/whl/cpu" in text, "Binder must take torch's CPU-only build"
    assert not (BINDER / "environment.yml").exists(), "environment.yml would win over requirements.txt"


def test_binder_postbuild_is_strict_and_installs_course_utils_without_deps():
    lines = [l for l in (BINDER / "postBuild").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert lines[0] == "set -e"
    assert any("pip install" in l and "--no-deps" in l and l.rstrip().endswith(" .") for l in lines)
    assert (BINDER / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"
    assert re.fullmatch(r"python-3\.\d+\s*", (BINDER / "runtime.txt").read_text())


def test_environment_yml_reuses_requirements_txt():
    import yaml  # shipped with jupyter's dependencies
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d for d in env["dependencies"] if isinstance(d, dict))["pip"]
    assert pip == ["-r requirements.txt"]


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_static_html_view_reads_as_a_lesson(path):
    """Rendered without a kernel (as GitHub/nbviewer do), a notebook shows no raw widget JSON,
    every quiz and check cell is readable code, and links to other notebooks resolve."""
    import nbformat
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter().from_notebook_node(nbformat.read(path, as_version=4))
    assert "application/vnd.jupyter.widget" not in html and "model_id" not in html
    import html as html_lib
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", html))  # what the reader sees
    assert "cu.quiz(" in text and "cu.exercise(" in text
    assert "Commit my prediction" in text, "the prose tells the reader how quizzes work"
    for target in re.findall(r'href="([^"#:]+\.ipynb)"', html):
        assert (NOTEBOOK_DIR / target).exists(), f"broken link {target}"
