"""course_utils.classroom.reading.submissions and .cells: which files are submissions, how they are read (whatever is in
them), which lesson each is, which cells run (answer cells, read as IPython reads them, and the
learner's own cells they need), and the static checks made before anything runs."""
from __future__ import annotations

import json
import os
import sys
import threading

import pytest

from course_utils import classroom
from course_utils.classroom.reading.cells import answer_cells, own_cells, reaches_into_course, strip_magics

from .cases import (L01_POINTS, L02, NB01, NBYTES, OTHER, WORKER, cell, linux_only, marks, notebook, solved01,
                    write)


# --- reading files --------------------------------------------------------------------------------

def test_files_that_are_not_notebooks(batch):
    corrupt = batch.rows["01_corrupt.ipynb", "TOTAL"]
    assert corrupt["points"] == "0" and corrupt["max_points"] == str(L01_POINTS) and "not valid JSON" in corrupt["feedback"]
    assert "not valid JSON" in batch.rows["01_corrupt.ipynb", "01.nbytes"]["feedback"]
    other = batch.rows["not_a_notebook.ipynb", "TOTAL"]
    assert other["max_points"] == "0" and "not a Jupyter notebook" in other["feedback"]


def test_malformed_cells_are_reported_without_running_anything(tmp_path):
    nb = {"cells": [{"cell_type": "code", "metadata": {"course": {"exercise": "01.nbytes"}}, "source": [1, 2]}]}
    (tmp_path / "01_odd.ipynb").write_text(json.dumps(nb))
    graded = classroom.grade_notebook(str(tmp_path / "01_odd.ipynb"))
    assert graded.points == 0 and graded.max_points == L01_POINTS and "cells are malformed" in graded.note


def test_a_lone_surrogate_in_a_comment_is_harmless(odd_batch):
    assert odd_batch.rows.points("surrogate.ipynb")["TOTAL"] == L01_POINTS


def test_deeply_nested_json_is_not_a_notebook_but_has_its_rows(odd_batch):
    rows = odd_batch.rows
    assert "nested too deeply" in rows[("01_deep.ipynb", NBYTES)]["feedback"]
    assert rows[("01_deep.ipynb", "TOTAL")]["max_points"] == str(L01_POINTS)


def test_outputs_do_not_count_towards_the_size_limit(odd_batch):
    assert odd_batch.rows.points("huge_output.ipynb")["TOTAL"] == L01_POINTS


@pytest.mark.parametrize("submission", ["bom.ipynb", "latin1.ipynb"])
def test_odd_encodings_are_read(odd_batch, submission):
    assert odd_batch.rows.points(submission)["TOTAL"] == L01_POINTS


@linux_only
def test_a_fifo_is_not_read(tmp_path):
    fifo = tmp_path / "01_fifo.ipynb"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            classroom.read_notebook(str(fifo))
            outcome.append(None)
        except BaseException as e:
            outcome.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # it blocked, waiting for a writer: let it go, and fail
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert isinstance(outcome[0], classroom.InvalidSubmission) and "not a regular file" in str(outcome[0])


@linux_only
def test_each_path_given_is_its_own_submission(tmp_path):
    write(tmp_path, {"subs/alice.ipynb": solved01()})
    (tmp_path / "subs" / "bob.ipynb").symlink_to(tmp_path / "subs" / "alice.ipynb")
    subs = str(tmp_path / "subs")
    found = classroom.find_submissions([subs, subs + "/alice.ipynb", subs + "/../subs/alice.ipynb"])
    assert found == sorted([subs + "/alice.ipynb", subs + "/bob.ipynb", subs + "/../subs/alice.ipynb"])


# --- the lesson -----------------------------------------------------------------------------------

def test_lesson_detection():
    cells = classroom.answer_cells(NB01)
    assert [c.exercise for c in cells] == ["01.nbytes", "01.blank_like"]
    assert classroom.lesson_of("whatever.ipynb", cells) == "01"
    assert classroom.lesson_of("03_to_device.ipynb") == "03"
    assert classroom.lesson_of("alice.ipynb") is None


@linux_only
def test_the_answer_cells_say_the_lesson_first():
    cells_02 = classroom.answer_cells(notebook(*(cell(e, "") for e in L02)))
    assert classroom.lesson_of("01_tensors.ipynb", cells_02) == "02"
    assert classroom.lesson_of("alice.ipynb", cells_02) == "02"
    mixed = classroom.answer_cells(notebook(cell("01.nbytes", ""), cell(L02[0], ""), cell(L02[1], "")))
    assert classroom.lesson_of("alice.ipynb", mixed) == "02"  # most of its answer cells
    tie = classroom.answer_cells(notebook(cell("01.nbytes", ""), cell(L02[0], "")))
    assert classroom.lesson_of("alice.ipynb", tie) is None
    assert classroom.lesson_of("03_alice.ipynb", tie) == "03"  # then the file name


# --- the cells that run ---------------------------------------------------------------------------

@linux_only
def test_answer_cells_keep_every_marked_cell_in_order():
    nb = WORKER["split.ipynb"]
    assert [(c.index, c.exercise) for c in classroom.answer_cells(nb)] == [(0, "01.nbytes"), (2, "01.nbytes"),
                                                                         (3, "01.blank_like")]


def test_a_notebook_whose_answer_cells_lost_their_metadata_is_graded_in_full(odd_batch):
    rows = odd_batch.rows  # the lesson from its check cells, cu.exercise("01..."); the answers by name
    total = rows[("renamed.ipynb", "TOTAL")]
    assert total["max_points"] == total["points"] == str(L01_POINTS)
    assert "of the learner's own" in odd_batch.out  # the summary's Notes say which cells were run


def _code(text: str, exercise: str | None = None) -> dict:
    meta = {"course": {"exercise": exercise}} if exercise else {}
    return {"cell_type": "code", "execution_count": None, "metadata": meta, "outputs": [], "source": text}


def _nb(*cells: dict) -> dict:
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": list(cells)}


def test_only_the_cells_that_define_what_the_answers_use_run():
    nb = _nb(_code("import time\nSCALE = 1\nslow = [time.sleep(60)]"),   # defines SCALE: runs
             _code("plot_everything()"),                                  # defines nothing used: not run
             _code("def helper(t):\n    return t.numel() * size(t)\n"),   # used by the answer
             _code("def size(t):\n    return t.element_size()\n"),        # used by the helper
             _code("def nbytes(t):\n    return helper(t) * SCALE\n", "01.nbytes"),
             _code("def helper(t):\n    return 0\n"),                     # a later definition, below the answer
             _code("x = torch.ones(3)\nblank_like = lambda t: torch.zeros_like(t)"),  # 01.blank_like, unmarked
             _code('cu.exercise("01.blank_like")'))
    ran = own_cells(nb, answer_cells(nb), ["01.nbytes", "01.blank_like"])
    assert [c.index for c in ran] == [0, 2, 3, 6] and all(c.exercise == "" for c in ran)


def test_the_last_definition_above_the_use_wins_else_the_first_below():
    above = _nb(_code("def h(t):\n    return 1\n"), _code("def h(t):\n    return 2\n"),
                _code("def nbytes(t):\n    return h(t)\n", "01.nbytes"), _code("def h(t):\n    return 3\n"))
    assert [c.index for c in own_cells(above, answer_cells(above), ["01.nbytes"])] == [1]
    below = _nb(_code("def nbytes(t):\n    return h(t)\n", "01.nbytes"), _code("def h(t):\n    return 3\n"),
                _code("def h(t):\n    return 4\n"))
    assert [c.index for c in own_cells(below, answer_cells(below), ["01.nbytes"])] == [1]


@linux_only
def test_cells_are_read_as_ipython_reads_them():
    assert strip_magics("torch.accelerator.is_available?\n") == \
        "get_ipython().run_line_magic('pinfo', 'torch.accelerator.is_available')\n"
    assert "run_line_magic('timeit', '-o f()')" in strip_magics("t = %timeit -o f()\n")
    assert strip_magics("x = (1\n!= 2)\n") == "x = (1\n!= 2)\n"  # an operator, not a shell command


# --- static checks: cells that cannot run, or that read the call stack ------------------------------

@pytest.mark.parametrize("submission, reason", [
    ("deep_expression.ipynb", "nested too deeply for Python to read"),
    ("null_byte.ipynb", "null bytes"),  # a SyntaxError or a ValueError, depending on the Python version
    ("too_long.ipynb", "too long to grade"),
])
def test_an_answer_python_cannot_read_costs_only_its_exercise(odd_batch, submission, reason):
    rows = odd_batch.rows
    assert reason in rows[(submission, NBYTES)]["feedback"]
    assert rows.points(submission) == marks({NBYTES: False, OTHER: True})


@pytest.mark.parametrize("code, found", [
    # the reference solutions are recognised by what an answer is and calls (test_integrity.py)
    ("from course_utils.exercises import get_exercise\n", None),
    ("x = cu.exercises.get_exercise('01.nbytes').reference\n", None),
    ("import inspect\ndef f():\n    return inspect.stack()\n", "inspect.stack"),
    ("def nbytes(t):\n    return t.numel() * t.element_size()\n%timeit nbytes(x)\n", None),
    ("def f(x):\n    return torch.stack([x, x])\n", None),
])
def test_reaches_into_course(code, found):
    assert reaches_into_course(code) == found


@linux_only
@pytest.mark.parametrize("code, found", [
    ("import sys\nf = sys._getframe(1)\n", "sys._getframe"),
    ("import sys\nname = '_get' + 'frame'\nf = getattr(sys, name)(1)\n", "getattr(sys, name)"),
    ("import sys\nf = getattr(sys, '_get' + 'frame')(1)\n", "getattr(sys, '_get' + 'frame')"),
    ("import inspect as i\ndef f():\n    return i.stack()\n", "i.stack"),
    ("from inspect import stack\n", "from inspect import stack"),
    ("from inspect import *\n", "from inspect import *"),
    ("import traceback\nx = traceback.walk_stack(None)\n", "traceback.walk_stack"),
    ("x = __import__('inspect').trace()\n", "__import__('inspect').trace"),
    ("import gc\nx = gc.get_referrers(1)\n", "gc.get_referrers"),
    ("def f(e):\n    return e.__traceback__.tb_frame\n", "e.__traceback__.tb_frame"),
    ("import sys\nd = vars(sys)\n", "vars(sys)"),
    ("x = eval('sys._getframe(1)')\n", "'sys._getframe(1)'"),
    ("ok = (1\n!= 2)\ny = (10\n% 3)\nimport sys\nz = sys._getframe\n", "sys._getframe"),
    ("%timeit f()\nimport inspect\ninspect.currentframe()\n", "inspect.currentframe"),
    # not frame access
    ("reference = torch.device('cpu')\nx = 'reference'\n", None),
    ("from course_utils.grading import simulated_accelerator\n", None),
    ("from course_utils.exercises import get_exercise\n", None),  # the reference it leads to is found at run time
    ("def f(x):\n    return torch.stack([x, x]).trace()\n", None),
    ("def nbytes(t):\n    return t.numel() * t.element_size()\n%timeit nbytes(x)\nx?\n", None),
])
def test_reaches_into_course_finds_frame_access(code, found):
    assert reaches_into_course(code) == found


def test_frame_access_is_found_after_an_operator_on_a_continuation_line(graded):
    assert graded.rows.points("frames.ipynb")["01.nbytes"] == 0
    assert "reads the call stack" in graded.rows.feedback("frames.ipynb", "01.nbytes")


@pytest.mark.parametrize("content, says, code", [
    ("def nbytes(t):\n    return t.numel() * t.element_size()\n", "a Python script, not a notebook", "not-a-notebook"),
    ("%PDF-1.7\n...", "a PDF, not a notebook", "not-a-notebook"),
    ("<!DOCTYPE html><html><body>notebook</body></html>", "an HTML page", "not-a-notebook"),
    ("", "the file is empty, not a notebook", "not-a-notebook"),
    ("my answers: 4 bytes, zeros_like", "a text file, not a notebook", "not-a-notebook"),
    ('{"cells": [{"cell_type": "code"', "the notebook is damaged: it is not valid JSON", "not-graded"),
])
def test_a_file_that_is_not_a_notebook_says_what_was_handed_in_and_counts_as_not_attempted(tmp_path, content, says,
                                                                                         code):
    """The note says what the file is (the summary shows its start); the rows' code makes the class report count
    the student as not having attempted the lesson and follow them up for it. A damaged notebook was an attempt."""
    from course_utils.classroom.writing.class_stats import NOT_TRIED
    path = tmp_path / "01_tensors.ipynb"
    path.write_text(content, encoding="utf-8")
    graded = classroom.grade_notebook(str(path))
    assert says in graded.note and graded.note.startswith("Not graded: ") and graded.points == 0
    assert {r.code for r in graded.rows if r.exercise != "TOTAL"} == {f"grade.{code}"}
    assert all((r.code in NOT_TRIED) == (code == "not-a-notebook") for r in graded.rows if r.exercise != "TOTAL")


def test_without_ipython_only_statements_that_start_with_a_magic_become_pass(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython.core.inputtransformer2", None)   # the import fails
    source = "x = (1\n!= 2)\n!ls\ny = [\n  % 3]\ns = '''\n!not a command\n'''\nif x:\n    %time f(x)\n"
    assert strip_magics(source) == (
        "x = (1\n!= 2)\npass  # !ls\ny = [\n  % 3]\ns = '''\n!not a command\n'''\nif x:\n    pass  # %time f(x)")
