"""course_utils.classroom.grader: every submission gets a row per exercise of its lesson, whatever is in
it; the grade belongs to the assignment the file is; the batch carries on through the grader's own
errors; every rerun of a submission shares its one time limit."""
from __future__ import annotations

import copy
import json

import pytest

from course_utils import classroom
from course_utils.classroom import grader
from course_utils.exercises import get_exercise

from .cases import (L01, L01_POINTS, L02, LESSONS, NBYTES, OTHER, SMALL, WORKER, full, linux_only, marks,
                    solved01, write)


def test_solved_notebook_gets_all_points(batch):
    assert batch.rows.points("subs/solved.ipynb") == full("01.blank_like", "01.nbytes")
    assert batch.rows["subs/solved.ipynb", "TOTAL"]["passed"] == "true"


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_lessons_reference_solutions_pass_without_false_alarms(batch, lesson):
    sub = f"lessons/{lesson}_solved.ipynb"
    total = batch.rows[sub, "TOTAL"]
    assert total["points"] == total["max_points"] != "0", [r for (s, _), r in batch.rows.items() if s == sub]


def test_unsolved_notebook_is_not_attempted(batch):
    for ex_id in ("01.nbytes", "01.blank_like"):
        r = batch.rows["subs/unsolved.ipynb", ex_id]
        assert r["points"] == "0" and r["passed"] == "false" and "Not attempted" in r["feedback"]


def test_common_mistakes_get_the_checks_feedback(batch):
    assert batch.rows.points("subs/mistakes.ipynb") == marks({"01.blank_like": False, "01.nbytes": True})
    assert "your zeros are on `cpu`" in batch.rows["subs/mistakes.ipynb", "01.blank_like"]["feedback"]
    assert "number of elements" in batch.rows["subs/mistakes2.ipynb", "01.nbytes"]["feedback"]
    assert "has dtype torch.int64" in batch.rows["subs/mistakes2.ipynb", "01.blank_like"]["feedback"]
    assert batch.rows.points("subs/mistakes2.ipynb")["TOTAL"] == 0


def test_missing_answer_cell(batch):
    assert batch.rows.points("subs/missing_cell.ipynb") == marks({"01.blank_like": False, "01.nbytes": True})
    assert "answer cell missing" in batch.rows["subs/missing_cell.ipynb", "01.blank_like"]["feedback"].lower()


# --- every submission gets its rows ------------------------------------------------------------------

def test_every_submission_gets_a_row_per_exercise_and_a_total(odd_batch):
    assert odd_batch.code == 0, odd_batch.err
    submissions = {sub for sub, _ in odd_batch.rows}
    assert len(submissions) == 12
    for sub in submissions:
        assert odd_batch.rows.has_rows_of(sub, L01), (sub, odd_batch.rows.points(sub))


def test_a_file_with_no_lesson_at_all_takes_the_batchs_lesson(odd_batch):
    rows = odd_batch.rows
    assert "not valid JSON" in rows[("no_clue.ipynb", NBYTES)]["feedback"]
    total = rows[("no_clue.ipynb", "TOTAL")]
    assert "Graded as lesson 01, the lesson of every other submission" in total["feedback"]


def test_a_link_is_its_own_submission(odd_batch):
    rows = odd_batch.rows
    assert rows.points("solved.ipynb")["TOTAL"] == rows.points("zz_link_to_solved.ipynb")["TOTAL"] == L01_POINTS
    assert "same file as solved.ipynb" in odd_batch.out  # the summary table says so


@linux_only
def test_a_grader_error_still_gives_the_lessons_rows(tmp_path, monkeypatch):
    write(tmp_path, {"01_x.ipynb": solved01()})

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(grader, "grade_notebook", broken)
    [graded] = classroom.grade_all([str(tmp_path / "01_x.ipynb")], SMALL)
    assert [r.exercise for r in graded.rows] == L01 and "internal grader error" in graded.note


@linux_only
def test_the_time_limit_bounds_the_whole_submission(tmp_path, monkeypatch):
    """Cells that outlast the run's time limit (here longer than --cell-timeout allows it to stop them) are
    left out one rerun at a time, but all the reruns together get --timeout, not --timeout each."""
    hang = "import time\ntime.sleep(60)\n"
    nb = solved01()
    answer = next(c for c in nb["cells"] if c.get("metadata", {}).get("course", {}).get("exercise") == NBYTES)
    at = nb["cells"].index(answer)
    nb["cells"][at:at] = [dict(copy.deepcopy(answer), source=hang) for _ in range(10)]  # ten hanging answer cells
    write(tmp_path, {"01_hangs.ipynb": nb})
    runs_made = []
    real = grader.run_worker
    monkeypatch.setattr(grader, "run_worker", lambda *a, **k: runs_made.append(1) or real(*a, **k))
    [graded] = classroom.grade_all([str(tmp_path / "01_hangs.ipynb")], classroom.Limits(3, 30, 5, 640))
    assert len(runs_made) <= 2, len(runs_made)   # one rerun per hanging cell would be 10
    rows = {r.exercise: r for r in graded.rows}
    assert rows[NBYTES].points == rows[OTHER].points == 0
    assert "3 s for the whole submission" in rows[NBYTES].feedback + rows[OTHER].feedback


# --- the grade belongs to the assignment --------------------------------------------------------------

def test_a_notebook_is_graded_as_the_lesson_of_its_answer_cells_whatever_its_name(graded):
    assert graded.rows.points("04_team_tensors.ipynb") == full("01.nbytes", "01.blank_like")
    l02 = graded.rows.points("01_tensors.ipynb")
    assert sorted(l02) == sorted(L02 + ["TOTAL"]) and l02["TOTAL"] == sum(get_exercise(e).points for e in L02)
    assert "graded as lesson 01, the lesson of its answer cells (its name says 04)" in graded.out


@linux_only
def test_forced_to_another_lesson_a_notebook_scores_nothing_and_says_why(tmp_path):
    path = tmp_path / "01_tensors.ipynb"
    path.write_text(json.dumps(WORKER["01_tensors.ipynb"]), encoding="utf-8")
    grade = classroom.grade_notebook(str(path), classroom.Limits(), lesson="01")
    assert grade.points == 0 and [r.exercise for r in grade.rows] == ["01.blank_like", "01.nbytes"]
    text = next(r.feedback for r in grade.rows if r.exercise == "01.nbytes")
    assert "Answer cell missing" in text and all(e in text for e in L02) and "right notebook" in text


def test_answer_cells_of_other_lessons_are_not_run(graded):
    assert graded.rows.points("01_stray.ipynb") == full("01.nbytes", "01.blank_like")


# --- every failed row names its mistake ---------------------------------------------------------------

@pytest.mark.parametrize("sub, exercise, code", [
    ("subs/solved.ipynb", "01.nbytes", ""),
    ("subs/unsolved.ipynb", "01.nbytes", "any.not-attempted"),
    ("subs/mistakes.ipynb", "01.blank_like", "01.ignored-input-device"),
    ("subs/mistakes2.ipynb", "01.nbytes", "01.counted-elements"),
    ("subs/missing_cell.ipynb", "01.blank_like", "grade.missing-answer"),
    ("subs/tamper_check.ipynb", "01.nbytes", "grade.tampering"),
    ("subs/tamper_check.ipynb", "TOTAL", "grade.tampering"),
    ("subs/silences_then_tampers.ipynb", "TOTAL", "grade.tampering"),
    ("subs/uses_reference.ipynb", "01.nbytes", "grade.reference"),
    ("subs/reads_frames.ipynb", "01.nbytes", "grade.call-stack"),
    ("subs/late/hang_cell.ipynb", "01.nbytes", "any.timeout"),
])
def test_each_row_carries_the_code_of_its_mistake(batch, sub, exercise, code):
    """The CSV's ``code`` column: the check's misconception, or the grader's own reason (tampering, a missing cell,
    a cell past its limit); ``""`` for a passed exercise and a submission graded as usual."""
    assert batch.rows[sub, exercise]["code"] == code, batch.rows[sub, exercise]
    assert all(r["code"] == "" for (s, e), r in batch.rows.items() if r["passed"] == "true")
