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


TEST_TOOLS = {"pytest", "pytest-xdist", "nbval", "nbformat", "nbconvert", "hypothesis", "playwright", "axe-playwright-python"}


def test_learners_install_only_what_the_course_needs_and_the_tests_add_their_tools():
    learner = requirement_names(ROOT / "requirements.txt")
    assert set(learner) == {"torch", "ipywidgets", "matplotlib", "jupyterlab", "notebook"}
    assert "-e ." in (ROOT / "requirements.txt").read_text()
    dev_text = (ROOT / "requirements-dev.txt").read_text()
    assert "-r requirements.txt" in dev_text.splitlines() \
        and set(requirement_names(ROOT / "requirements-dev.txt")) == TEST_TOOLS
    readme = (ROOT / "README.md").read_text()
    assert "pip install -r requirements-dev.txt" in readme and "python3 -m venv .venv" in readme
    assert ".venv\\Scripts\\Activate.ps1" in readme and "environment-cpu.yml" in readme
    ci = (ROOT / ".ci/run").read_text()
    legs = re.findall(r"^    (\w+)\)$", ci, re.M)
    assert legs == ["default", "cpu", "nightly", "floor"], legs
    assert ci.count("-r requirements-dev.txt") == len(legs), "every CI leg installs the tests' tools as the README says"


def test_binder_installs_the_packages_of_requirements_txt_on_cpu_only_torch():
    binder, learner = requirement_names(BINDER / "requirements.txt"), requirement_names(ROOT / "requirements.txt")
    assert binder == learner, "binder/requirements.txt must match requirements.txt"
    text = (BINDER / "requirements.txt").read_text()
    assert "download.pytorch.org/whl/cpu" in text, "Binder must take torch's CPU-only build"
    assert not (BINDER / "environment.yml").exists(), "environment.yml would win over requirements.txt"


def test_binder_postbuild_is_strict_and_installs_course_utils_without_deps():
    lines = [l for l in (BINDER / "postBuild").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert lines[0] == "set -e"
    assert any("pip install" in l and "--no-deps" in l and l.rstrip().endswith(" .") for l in lines)
    assert (BINDER / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"
    assert re.fullmatch(r"python-3\.\d+\s*", (BINDER / "runtime.txt").read_text())


@pytest.mark.parametrize("name, pip_lines", [
    ("environment.yml", ["-r requirements.txt"]),
    ("environment-cpu.yml", ["--extra-index-url https://download.pytorch.org/whl/cpu", "-r requirements.txt"]),
])
def test_the_conda_environments_reuse_requirements_txt(name, pip_lines):
    import yaml  # shipped with jupyter's dependencies
    env = yaml.safe_load((ROOT / name).read_text())
    pip = next(d for d in env["dependencies"] if isinstance(d, dict))["pip"]
    assert pip == pip_lines and env["name"] == "tensor-course"


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


def test_the_readmes_container_command_uses_options_jupyterlab_has():
    """Docker users run as root: the README's command passes the options JupyterLab's own help lists."""
    import subprocess
    import sys
    command = re.search(r"`(jupyter lab notebooks/ --allow-root[^`]*)`", (ROOT / "README.md").read_text("utf-8"))
    assert command, "the README's container line is missing"
    options = re.findall(r"(--[\w-]+)", command.group(1))
    helped = subprocess.run([sys.executable, "-m", "jupyterlab", "--help-all"], capture_output=True, text=True,
                            timeout=120).stdout
    assert options and all(re.search(rf"^{re.escape(o)}[=\s]", helped, re.M) for o in options), options


def test_the_readme_says_to_take_the_cpu_build_before_the_line_that_installs_pytorch():
    """A literal reader runs the set-up block top to bottom: the CPU-build step must come before
    `pip install -r requirements.txt` (pip would otherwise fetch the several-GB CUDA build first)."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Set up and start (your own machine)")[1].split("```bash")[1].split("```")[0]
    cpu = block.index("download.pytorch.org/whl/cpu torch")
    assert cpu < block.index("pip install -r requirements.txt") and "only on Linux without an NVIDIA GPU" in block
    no_gpu = readme.split("## No GPU?")[1].split("\n## ")[0]
    assert no_gpu.index("simulated GPU") < no_gpu.index("### For teachers") < no_gpu.index("COURSE_DEVICE=simgpu")
