"""Check in the notebook and ``grade`` give the same verdict on the same notebooks.

For each lesson, notebooks made of its setup cell, its answer cells and its check cells, written the
ways learners write them: as handed out, solved, solved with the code in a helper of the learner's
own (above or below the answer cell), solved in a cell that lost its answer-cell marker, every answer merged
into the first answer cell, the setup cell copied into each answer cell. The
notebook side runs every cell in a fresh IPython shell, as a kernel does, and reads what each
``cu.exercise`` check said; the grader side grades the same files. The full lesson notebooks are
covered by the nbval runs (tests/test_notebook_runs.py) and by test_grader.py.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils.classroom import grade_all
from course_utils.classroom.sandbox.runs import Limits
from course_utils.classroom.reading.cells import answer_cells
from course_utils.exercises import exercise_ids, get_exercise
from nbtools import ROOT, load, notebook_paths, source

KINDS = ("unsolved", "solved", "helper above", "helper below", "no marker", "merged", "setup copied")
LESSONS = sorted({get_exercise(e).lesson for e in exercise_ids()})


def _code(text: str, exercise: str | None = None) -> dict:
    meta = {"course": {"exercise": exercise}} if exercise else {}
    return {"cell_type": "code", "execution_count": None, "metadata": meta, "outputs": [], "source": text}


def _renamed(text: str, name: str) -> str:
    return re.sub(rf"\b{re.escape(name)}\b", f"my_{name}", text)


def lesson_notebook(lesson: str, kind: str) -> dict:
    """Lesson ``lesson``'s setup, answer and check cells, the answers written as ``kind`` says."""
    nb = load(next(p for p in notebook_paths() if p.name.startswith(lesson + "_")))
    setup = next(c for c in nb["cells"] if "cu.setup(" in source(c))
    stubs = {a.exercise: a.source for a in answer_cells(nb)}
    cells = [_code(source(setup))]
    ids = [e for e in exercise_ids() if get_exercise(e).lesson == lesson]
    for ex_id in ids:
        ex = get_exercise(ex_id)
        reference = ex.solution_source
        if kind == "merged":   # every answer in the first answer cell, which keeps its marker; the others deleted
            merged = "\n\n".join(get_exercise(e).solution_source for e in ids)
            answer = [_code(merged, ex_id)] if ex_id == ids[0] else []
        elif kind == "setup copied":
            answer = [_code(source(setup) + "\n" + reference, ex_id)]
        elif kind == "unsolved":
            answer = [_code(stubs[ex_id], ex_id)]
        elif kind == "solved":
            answer = [_code(reference, ex_id)]
        elif kind == "no marker":
            answer = [_code(reference)]
        else:  # the work in a helper of the learner's own; the answer cell only calls (or names) it
            helper = _code(_renamed(reference, ex.name))
            call = (f"{ex.name} = my_{ex.name}\n" if re.search(rf"^class {ex.name}\b", reference, re.M) else
                    f"def {ex.name}(*args, **kwargs):\n    return my_{ex.name}(*args, **kwargs)\n")
            answer = [helper, _code(call, ex_id)] if kind == "helper above" else [_code(call, ex_id), helper]
        cells += answer + [_code(f'cu.exercise("{ex_id}")')]
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}


_RUN_IN_SHELL = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
from course_utils.store import session_codes, session_statuses
shell = InteractiveShell.instance()
for cell in json.load(open(sys.argv[1], encoding="utf-8"))["cells"]:
    shell.run_cell("".join(cell["source"]), store_history=True)
print("STATUSES " + json.dumps([session_statuses(), session_codes()]))
"""


def notebook_statuses(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """What each exercise's Check said (its status, and its misconception code) when the notebook ran top to bottom
    in a fresh IPython shell."""
    env = dict(os.environ, COURSE_PROGRESS_FILE=str(path.with_suffix(".progress.json")), MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _RUN_IN_SHELL, str(path)], capture_output=True, text=True,
                          env=env, cwd=path.parent, timeout=600)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("STATUSES ")), None)
    assert line, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(line[len("STATUSES "):])


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """Each (lesson, kind): the notebook's statuses and the grader's rows."""
    root = tmp_path_factory.mktemp("agree")
    paths = {}
    for lesson in LESSONS:
        for kind in KINDS:
            path = root / f"{lesson}_{kind.replace(' ', '_')}.ipynb"
            path.write_text(json.dumps(lesson_notebook(lesson, kind)), encoding="utf-8")
            paths[lesson, kind] = path
    grades = {g.submission: g for g in grade_all([str(p) for p in paths.values()],
                                                 Limits(timeout=120, cell_timeout=30, check_timeout=30), jobs=2)}
    return {key: (notebook_statuses(path), grades[str(path)]) for key, path in paths.items()}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lesson", LESSONS)
def test_check_and_grade_agree(verdicts, lesson, kind):
    (statuses, codes), grade = verdicts[lesson, kind]
    ids = [e for e in exercise_ids() if get_exercise(e).lesson == lesson]
    assert [r.exercise for r in grade.rows] == sorted(ids) and not grade.note, grade.note
    in_notebook = {e: statuses.get(e) == "passed" for e in ids}
    by_grader = {r.exercise: r.passed for r in grade.rows}
    assert by_grader == in_notebook, (statuses, [(r.exercise, r.feedback) for r in grade.rows])
    assert {r.exercise: r.code for r in grade.rows} == {e: codes.get(e, "") for e in ids}, codes   # the same mistake
    # The harness tells the kinds apart: all pass but as handed out (and a class named at the top of its
    # answer cell before the cell that defines it runs, which fails in the notebook too).
    top_level_alias = {e for e in ids if kind == "helper below" and re.search(
        rf"^class {get_exercise(e).name}\b", get_exercise(e).solution_source, re.M)}
    assert {e for e, ok in in_notebook.items() if not ok} == (set(ids) if kind == "unsolved" else top_level_alias)
    if kind.startswith("helper") or kind == "no marker":
        assert any("of the learner's own" in e for e in grade.events), grade.events


def test_a_name_no_cell_defines_gets_feedback_that_helps(tmp_path):
    nb = lesson_notebook("01", "solved")
    answer = next(c for c in nb["cells"] if c["metadata"].get("course", {}).get("exercise") == "01.nbytes")
    answer["source"] = "def nbytes(t):\n    return deleted_helper(t)\n"  # its cell was deleted; the kernel had it
    path = tmp_path / "01_deleted.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    [grade] = grade_all([str(path)], Limits(timeout=120))
    row = next(r for r in grade.rows if r.exercise == "01.nbytes")
    assert not row.passed and "deleted_helper" in row.feedback and "Restart the kernel" in row.feedback


def test_the_capstones_part_marks_are_the_same_in_check_and_grade(tmp_path):
    """Four of the capstone's six bugs fixed: 8 of its 12 points, from Check and from ``grade`` alike."""
    import course_utils as cu
    from test_lesson07 import _STUB_FIXES, _define, _notebook_stub
    script = "\n".join(line for line in _notebook_stub().splitlines() if line.strip() != "raise NotImplementedError")
    for old, new in _STUB_FIXES[:4]:
        script = script.replace(old, new)
    checked = cu.check("07.capstone", _define(script))
    path = tmp_path / "07_transfer_cost.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        _code("import course_utils as cu\ndevice = cu.setup('07')"), _code(script, "07.capstone"),
        _code('cu.exercise("07.capstone")')]}), encoding="utf-8")
    (grade,) = grade_all([str(path)], Limits(timeout=120, cell_timeout=30, check_timeout=30), jobs=1)
    row = next(r for r in grade.rows if r.exercise == "07.capstone")
    assert (checked.points, checked.max_points) == (row.points, row.max_points) == (8, 12)
    assert not row.passed and row.code == checked.code == "07.optimizer-before-move 07.value-read-every-step"
