"""Assessed mode (``COURSE_MODE=assessed``): no solution, not the last hint, feedback without the code to write, the
capstone counting the bugs left; in a notebook, on the command line and in ``grade`` alike."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings

import course_utils as cu
from course_utils import checking, learner, modes
from course_utils.classroom import grade_all
from course_utils.classroom.autograder import build
from course_utils.classroom.sandbox.runs import Limits
from course_utils.exercises import exercise_ids, get_exercise
from test_check_properties import behaviours, make_answer


@pytest.fixture
def assessed(monkeypatch):
    monkeypatch.setenv(modes.MODE_ENV, modes.ASSESSED)


@pytest.mark.parametrize("feedback, kept, left_out", [
    ("For a float64 tensor the answer is 192 bytes, you returned 96. You assumed 4 bytes per element (float32); "
     "other dtypes differ: use `t.element_size()`.", "you returned 96. You assumed 4 bytes per element",
     "element_size"),
    ("The input was on `meta` but your zeros are on `cpu`. `torch.zeros(shape, dtype=...)` uses the default device; "
     "make the zeros on `t`'s device (e.g. `torch.zeros_like(t)`).", "your zeros are on `cpu`", "zeros_like"),
    ("Bug: an input never moved. Your weights are on `cuda:0` (`addmm` got both). Move each batch inside the loop: "
     "`inputs = inputs.to(device)`, and the labels with it.", "Bug: an input never moved.", "inputs.to"),
    ("Compare `.type` and `.index`.", "Not yet right.", ".index"),
    ("Your code ran for more than 2 s and was stopped. Look for a loop that never ends.",
     "Look for a loop that never ends.", "`"),
])
def test_what_is_wrong_stays_and_the_code_to_write_goes(feedback, kept, left_out):
    said = modes.withhold_fixes(feedback)
    assert kept in said and left_out not in said, said


def test_the_mode_is_formative_unless_the_environment_says_assessed(monkeypatch):
    monkeypatch.delenv(modes.MODE_ENV, raising=False)
    assert not modes.assessed()
    for value in ("assessed", " Assessed "):
        monkeypatch.setenv(modes.MODE_ENV, value)
        assert modes.assessed()
    monkeypatch.setenv(modes.MODE_ENV, "formative")
    assert not modes.assessed()


def test_no_solution_and_not_the_last_hint(assessed, progress_file):
    ex = get_exercise("01.nbytes")
    assert learner.solution("01.nbytes", force=True) == modes.WITHHELD
    assert ex.solution_source not in learner.solution("01.nbytes", force=True)
    # code="": as for a learner whose checks named no mistake (another test in this process may have named one)
    assert learner.hints("01.nbytes", code="") == ex.hints[:-1] and len(ex.hints) > 1
    assert "Hint 2/2" in cu.hint("01.nbytes", 9)


@pytest.mark.parametrize("mode, expected", [(modes.ASSESSED, ["Check", "Hint"]),
                                            ("", ["Check", "Hint", "Show solution"])])
def test_the_exercise_widget_has_no_show_solution_button(mode, expected, monkeypatch, progress_file):
    ipywidgets = pytest.importorskip("ipywidgets")
    from course_utils import widgets
    monkeypatch.setenv(modes.MODE_ENV, mode)
    monkeypatch.setattr(widgets, "_widgets", lambda: ipywidgets)   # as in a kernel with a widget frontend
    shown = cu.exercise("01.nbytes", lambda t: 0)
    assert [child.description for child in shown.widget.children[1].children] == expected


def _pieces(source: str) -> set[str]:
    """Each code line of ``source``, and each call in it."""
    lines = {line.split("#")[0].strip() for line in source.splitlines()}
    return lines | {m.group(0) for m in re.finditer(r"[\w.]+\([^()]*\)", source)}


def _stub(ex_id: str) -> str:
    """The exercise's answer cell as handed out (the capstone's: the script with its bugs)."""
    from nbtools import load, notebook_paths, source
    nb = load(next(p for p in notebook_paths() if p.name.startswith(get_exercise(ex_id).lesson + "_")))
    return next(source(c) for c in nb["cells"] if c.get("metadata", {}).get("course", {}).get("exercise") == ex_id)


def _solution_spans(ex_id: str) -> set[str]:
    """The pieces of the reference solution an answer is made of (a code line, a call) that the handed-out answer
    cell does not already hold; not the exercise's own name, which the feedback may say."""
    name = get_exercise(ex_id).name
    return {piece for piece in _pieces(get_exercise(ex_id).solution_source) - _pieces(_stub(ex_id))
            if len(piece) >= 12 and not piece.startswith(("def ", "class ", '"', "'", "return t", name + "("))}


def _code_spans(feedback: str) -> list[str]:
    return re.findall(r"`([^`]+)`", feedback)


@pytest.mark.parametrize("ex_id", exercise_ids())
def test_assessed_feedback_never_quotes_the_reference_solution(ex_id, monkeypatch):
    """Wrong answers of every kind (generated, as in test_check_properties): no code span of the feedback is a line
    or a call of the reference solution."""
    monkeypatch.setenv(modes.MODE_ENV, modes.ASSESSED)
    monkeypatch.setattr(checking, "TIME_LIMIT", 5.0)
    ex, pieces = get_exercise(ex_id), _solution_spans(ex_id)

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(behaviours())
    def run(behaviour):
        result = cu.check(ex_id, make_answer(ex, behaviour))
        if result.status == "failed":
            quoted = [s for s in _code_spans(result.feedback) if s.strip() in pieces]
            assert not quoted, (quoted, result.feedback)

    run()


def _capstone_with(fixed: int):
    from test_lesson07 import _STUB_FIXES, _define, _notebook_stub
    script = "\n".join(line for line in _notebook_stub().splitlines() if line.strip() != "raise NotImplementedError")
    for old, new in _STUB_FIXES[:fixed]:
        script = script.replace(old, new)
    return script, _define(script)


@pytest.mark.parametrize("fixed", [0, 2, 4])
def test_the_capstone_names_the_bug_and_counts_the_rest_without_the_fix(assessed, fixed):
    _, answer = _capstone_with(fixed)
    result = cu.check("07.capstone", answer)
    assert result.status == "failed" and "Bug: " in result.feedback
    left = int(re.search(r"Bugs left: (\d) of 6\.", result.feedback).group(1))
    assert result.points == 2 * (6 - left) and left == 6 - fixed
    assert not any(s.strip() in _solution_spans("07.capstone") for s in _code_spans(result.feedback))
    assert "inputs.to(device)" not in result.feedback and "register_buffer(" not in result.feedback


def test_formative_feedback_still_gives_the_fix(monkeypatch):
    monkeypatch.delenv(modes.MODE_ENV, raising=False)
    _, answer = _capstone_with(0)
    result = cu.check("07.capstone", answer)
    assert "`inputs = inputs.to(device)`" in result.feedback and "Bugs left" not in result.feedback


def test_grade_in_assessed_mode_says_what_check_says(assessed, tmp_path):
    """Check and ``grade --assessed`` agree, word for word, on a partly fixed capstone and a wrong 01.nbytes."""
    script, answer = _capstone_with(3)
    code = lambda text, ex=None: {"cell_type": "code", "execution_count": None, "outputs": [],   # noqa: E731
                                  "metadata": {"course": {"exercise": ex}} if ex else {}, "source": text}
    path = tmp_path / "07_transfer_cost.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        code("import course_utils as cu\ndevice = cu.setup('07')"), code(script, "07.capstone")]}), encoding="utf-8")
    (grade,) = grade_all([str(path)], Limits(timeout=120, cell_timeout=30, check_timeout=30), jobs=1)
    row = next(r for r in grade.rows if r.exercise == "07.capstone")
    # Check as a notebook runs it: a process of its own, after the setup cell (the simulated GPU where it can be)
    code = ("import json, sys, torch, torch.nn.functional as F\nfrom torch import nn\nimport course_utils as cu\n"
            "cu.setup('07')\nnamespace = {'torch': torch, 'nn': nn, 'F': F}\nexec(sys.stdin.read(), namespace)\n"
            "r = cu.check('07.capstone', namespace['Classifier'])\nprint('RESULT ' + json.dumps([r.points, r.feedback]))")
    done = subprocess.run([sys.executable, "-c", code], input=script, capture_output=True, text=True, timeout=300)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
    assert [row.points, row.feedback] == json.loads(line[len("RESULT "):]), done.stderr[-2000:]
    assert "Bugs left: 3 of 6." in row.feedback and row.points == 6 and answer is not None


def test_the_cli_flag_grades_in_assessed_mode_and_leaves_the_environment_as_it_was(tmp_path, monkeypatch):
    from classroom.cases import grade_in, notebook01, write
    monkeypatch.delenv(modes.MODE_ENV, raising=False)
    write(tmp_path, {"subs/01_tensors.ipynb": notebook01({"01.nbytes": "def nbytes(t):\n    return t.numel() * 4\n",
                                                          "01.blank_like": None})})
    formative = grade_in(tmp_path, "subs", out="formative.csv").rows["subs/01_tensors.ipynb", "01.nbytes"]
    assessed = grade_in(tmp_path, "subs", "--assessed", out="assessed.csv").rows["subs/01_tensors.ipynb", "01.nbytes"]
    assert "element_size" in formative["feedback"] and "element_size" not in assessed["feedback"]
    assert assessed["feedback"] == modes.withhold_fixes(formative["feedback"])
    assert modes.MODE_ENV not in __import__("os").environ


def test_an_assessed_gradescope_bundle_grades_in_assessed_mode(tmp_path):
    with zipfile.ZipFile(build("01", tmp_path / "a.zip", assessed=True)) as bundle:
        assert f"export {modes.MODE_ENV}={modes.ASSESSED}" in bundle.read("run_autograder").decode()
    with zipfile.ZipFile(build("01", tmp_path / "f.zip")) as bundle:
        assert modes.MODE_ENV not in bundle.read("run_autograder").decode()
