"""Static checks on the committed notebooks: clean, same opening and ending, ids in sync."""
from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

from course_utils.exercises import exercise_ids, get_exercise
from course_utils.syllabus import LESSONS
from course_utils.quizzes import quiz_ids
from nbtools import NOTEBOOK_DIR, RAISE_WHEN, ROOT, exercise_cells, load, notebook_paths, raises, source

NOTEBOOKS = notebook_paths()
QUIZ_CALL = re.compile(r"""cu\.quiz\(["']([^"']+)["']\)""")
EXERCISE_CALL = re.compile(r"""cu\.exercise\(["']([^"']+)["']\)""")


def code(nb):
    return [source(c) for c in nb["cells"] if c["cell_type"] == "code"]


def test_there_is_a_notebook_for_every_lesson_registered():
    numbers = {p.name[:2] for p in NOTEBOOKS}
    assert "01" in numbers
    assert numbers <= set(LESSONS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
class TestNotebook:
    def test_committed_clean(self, path):
        nb = load(path)
        assert "widgets" not in nb["metadata"], "widget state is committed"
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [] and cell["execution_count"] is None, f"cell {i} has outputs"

    def test_opening(self, path):
        nb = load(path)
        first = source(nb["cells"][0])
        number = path.name[:2]
        assert first.startswith(f"# {number} · "), "first line is the title '# NN · ...'"
        for part in ("colab-badge.svg", "mybinder.org/badge", "**You will be able to**", "**Time:**"):
            assert part in first, f"opening cell lacks {part!r}"
        assert nb["cells"][1]["metadata"]["course"]["role"] == "colab-setup"
        setup = [s for s in code(nb) if "cu.setup(" in s]
        assert setup and f'cu.setup("{number}")' in setup[0], "a setup cell calls cu.setup(<lesson>)"
        assert nb["metadata"].get("accelerator") == "GPU", "Colab should offer a GPU runtime"

    def test_ending(self, path):
        nb = load(path)
        markdown = [source(c) for c in nb["cells"] if c["cell_type"] == "markdown"]
        assert any(m.startswith("## Summary") for m in markdown)
        assert "**Next:**" in markdown[-1] or "**Where next:**" in markdown[-1]
        assert any("cu.progress()" in s for s in code(nb))

    def test_links_to_other_notebooks_exist(self, path):
        text = "\n".join(source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")
        for target in re.findall(r"\]\(([^)#\s]+\.ipynb)\)", text):
            if "://" not in target:
                assert (NOTEBOOK_DIR / target).exists(), f"broken link to {target}"

    def test_exercises(self, path):
        nb = load(path)
        cells = exercise_cells(nb)
        assert len(cells) >= 2, "each lesson has at least two graded exercises"
        checks = [m for s in code(nb) for m in EXERCISE_CALL.findall(s)]
        assert sorted(checks) == sorted(cells), "every answer cell has exactly one check cell"
        for ex_id, cell in cells.items():
            ex = get_exercise(ex_id)
            assert ex.lesson == path.name[:2]
            tree = ast.parse(source(cell))
            defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
            assert ex.name in defined, f"answer cell of {ex_id} must define {ex.name}"
            assert "raise NotImplementedError" in source(cell), f"{ex_id} is committed solved"
            at = nb["cells"].index(cell)
            following = next(source(c) for c in nb["cells"][at + 1:] if c["cell_type"] == "code")
            assert f'cu.exercise("{ex_id}")' in following, "the check cell follows the answer cell"

    def test_quizzes(self, path):
        used = [m for s in code(load(path)) for m in QUIZ_CALL.findall(s)]
        assert len(used) >= 3, "each lesson has at least three predict-then-reveal quizzes"
        assert len(used) == len(set(used))
        assert all(q.startswith(path.name[:2] + ".") for q in used)


#: Code that belongs to the retired stand-in (`meta` playing the GPU, or a lesson device that is the CPU): the setup
#: cell's `device` is always a GPU, real or the simulated one, and the lessons use that one name.
STAND_IN_CODE = re.compile(r"""second_device|cu\.standin|meta_readback|uses_stand_in"""
                           r"""|(?<![\w.])device\.type\s*[!=]=\s*["'](?:cpu|meta)["']|\.type\s+in\s+\([^)]*["']meta["']""")
#: Where a lesson teaches `meta` itself (the heading its cells follow): lesson 01's Going further, lesson 06's big
#: models built on `meta` and filled with `to_empty`.
TEACHES_META = {"01": "### `meta`: shapes without data", "06": "### Checkpoints: safe loading, and big models"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_lesson_keeps_a_branch_for_the_stand_in(path):
    """No cell tests the lesson's device for the CPU or `meta`, calls the retired helpers, or says "stand-in"; a
    `meta` tensor appears only where the lesson teaches `meta`."""
    cells = load(path)["cells"]
    heading = TEACHES_META.get(path.name[:2])
    teaches = next((i for i, c in enumerate(cells) if heading and heading in source(c)), len(cells))
    for i, cell in enumerate(cells):
        text = source(cell)
        assert "stand-in" not in text.lower(), f"{path.name}, cell {cell.get('id')}: {text[:200]}"
        if cell["cell_type"] != "code":
            continue
        found = STAND_IN_CODE.search(text)
        assert not found, f"{path.name}, cell {cell.get('id')}: {found and found.group(0)}"
        if i < teaches:
            assert not re.search(r"""["']meta["']""", text), f"{path.name}, cell {cell.get('id')} uses meta: {text}"


def test_every_registered_id_is_used_and_every_used_id_registered():
    used_ex, used_quiz = set(), set()
    for path in NOTEBOOKS:
        nb = load(path)
        used_ex |= set(exercise_cells(nb))
        used_quiz |= {m for s in code(nb) for m in QUIZ_CALL.findall(s)}
    assert used_ex == set(exercise_ids())
    assert used_quiz == set(quiz_ids())


def test_launch_parts_are_in_sync_with_the_repository_address():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "sync_notebooks.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_every_cell_that_raises_on_purpose_declares_its_error(path):
    """A ``raises-exception`` cell says what it raises (``course.raises``), so the notebook runs can check
    that it still raises exactly that (``nbtools.variant``)."""
    for cell in load(path)["cells"]:
        if "raises-exception" not in cell.get("metadata", {}).get("tags", []):
            continue
        declared = raises(cell)
        where = f"{path.name}, cell {cell.get('id')}"
        assert declared and declared.get("error") and "message" in declared, f"{where}: no course.raises"
        assert declared.get("when", "always") in RAISE_WHEN, f"{where}: unknown 'when'"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_plots_have_an_opaque_white_background(path):
    """Matplotlib's inline figures are transparent by default: black text on JupyterLab's dark theme.
    Every figure a lesson draws sets a white face colour."""
    for cell in load(path)["cells"]:
        text = source(cell)
        if cell["cell_type"] == "code" and "plt.subplots(" in text:
            assert 'facecolor="white"' in text or 'set_facecolor("white")' in text, text[:200]


def _markdown_lines(nb):
    """Each Markdown line outside fenced code."""
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        fenced = False
        for line in source(cell).splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield line


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_headings_form_one_outline(path):
    """One title (a level-1 heading, first), and no level skipped on the way down (WCAG 1.3.1, 2.4.6)."""
    levels = [len(m.group(1)) for line in _markdown_lines(load(path)) for m in [re.match(r"(#{1,6})\s", line)] if m]
    assert levels[:1] == [1] and levels.count(1) == 1, levels[:3]
    skips = [(a, b) for a, b in zip(levels, levels[1:]) if b > a + 1]
    assert skips == [], skips


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_picture_and_link_says_what_it_is(path):
    """Images have a text alternative; links have text that means something out of context (WCAG 1.1.1, 2.4.4)."""
    text = "\n".join(_markdown_lines(load(path)))
    images = re.findall(r"!\[([^\]]*)\]\(", text) + re.findall(r"<img\b(?![^>]*\balt=\"[^\"]+\")[^>]*>", text)
    assert images and all(alt.strip() for alt in images if not alt.startswith("<img")), images
    assert not [i for i in images if i.startswith("<img")], "an <img> without alt text"
    vague = [t for t in re.findall(r"(?<!!)\[([^\]]+)\]\(", text) if t.strip().lower() in
             {"here", "click here", "this", "link", "more", "read more"}]
    assert vague == [], vague


#: The widest code line a lesson may have: JupyterLab shows about 100 characters of a code cell in a
#: 1280-pixel-wide window before the line runs off the right edge.
CODE_WIDTH = 100


def test_the_lessons_code_fits_the_width_of_a_notebook():
    """No code-cell line of a lesson is wider than ``CODE_WIDTH``: a learner reads it without scrolling sideways."""
    too_wide = [f"{path.name}, cell {i}, line {n} ({len(line)} characters): {line}"
                for path in NOTEBOOKS
                for i, cell in enumerate(load(path)["cells"]) if cell["cell_type"] == "code"
                for n, line in enumerate(source(cell).splitlines(), 1) if len(line) > CODE_WIDTH]
    assert too_wide == [], "code lines wider than the notebook:\n" + "\n".join(too_wide)
