"""Quiz predictions handed in with a notebook: ``cu.progress()`` saves them in its output, ``grade --predictions``
reads the submission's lesson's quizzes, and ``report`` counts them per quiz among the students who handed the
lesson in. Records are checked value by value, never trusted."""
from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from course_utils import store
from course_utils.results import PREDICTIONS_MIME
from course_utils.classroom.writing import class_page, class_report, class_stats, predictions
from course_utils.classroom.reading.submissions import read_notebook
from course_utils.quizzes import get_quiz
from nbtools import NOTEBOOK_DIR, with_solutions

MIME = PREDICTIONS_MIME


def _with_record(nb: dict, record: object) -> dict:
    """``nb`` with ``record`` saved in its ``cu.progress()`` cell's output, as Jupyter saves it."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "".join(cell["source"]).strip() == "cu.progress()":
            cell["outputs"] = [{"output_type": "display_data", "metadata": {},
                                "data": {"text/plain": "progress", "text/html": "<table></table>", MIME: record}}]
    return nb


def _lesson01(record: object | None) -> dict:
    nb = with_solutions(json.loads((NOTEBOOK_DIR / "01_tensors.ipynb").read_text(encoding="utf-8")))
    return _with_record(nb, record) if record is not None else nb


def test_the_store_keeps_the_first_prediction_and_progress_shows_it(tmp_path, monkeypatch):
    monkeypatch.setenv(store.PROGRESS_ENV, str(tmp_path / "progress.json"))
    store.record_quiz("01.default_device", False, 1)
    store.record_quiz("01.default_device", True, 0)
    entry = store.load()["quizzes"]["01.default_device"]
    assert (entry["first_chosen"], entry["chosen"], entry["first_correct"], entry["attempts"]) == (1, 0, False, 2)
    bundle = store.summary()._repr_mimebundle_()
    assert bundle[MIME]["quizzes"] == {"01.default_device": {"first": "b", "attempts": 2}}


def test_a_record_from_before_first_chosen_was_kept(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    path.write_text(json.dumps({"version": 1, "exercises": {}, "quizzes": {
        "01.default_device": {"first_correct": True, "chosen": 0, "attempts": 1},   # one prediction: it is the first
        "01.float16_bytes": {"first_correct": False, "chosen": 2, "attempts": 3},   # the first is not known
        "01.device_block": "hand-edited"}}), encoding="utf-8")
    monkeypatch.setenv(store.PROGRESS_ENV, str(path))
    assert store.summary().predictions == {"01.default_device": {"first": "a", "attempts": 1}}


def test_a_notebook_run_in_a_kernel_and_saved_carries_its_predictions(tmp_path, monkeypatch):
    """The whole path: predictions committed in a kernel, cu.progress() run, the notebook saved; then read."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in (
        "import course_utils as cu",
        "cu.answer('01.default_device', 'b'); cu.answer('01.default_device', 'a'); cu.answer('01.float16_bytes', 'c')",
        "cu.answer('03.same_object', 'a')",
        "cu.progress()")])
    monkeypatch.setenv(store.PROGRESS_ENV, str(tmp_path / "progress.json"))   # the kernel's progress file
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    saved = tmp_path / "01_tensors.ipynb"
    nbformat.write(nb, saved)
    found = predictions.recorded(read_notebook(str(saved)), str(saved), "01")
    assert [(p.quiz, p.first, p.first_correct, p.attempts) for p in found] == [
        ("01.default_device", "b", False, 2), ("01.float16_bytes", "c", True, 1)]   # lesson 03's quiz is not 01's


@pytest.mark.parametrize("record", [
    None, "text", [], {"quizzes": []}, {"quizzes": {"01.default_device": "b"}},
    {"quizzes": {"01.default_device": {"first": 1}}}, {"quizzes": {"01.default_device": {"first": "z"}}},
    {"quizzes": {"01.default_device": {"first": "B"}}}, {"quizzes": {"01.default_device": {"first": "ab"}}},
    {"quizzes": {"99.nothing": {"first": "a"}}}, {"quizzes": {"03.same_object": {"first": "a"}}},
])
def test_records_that_hold_nothing_usable_give_nothing(record):
    nb = _lesson01(None) if record is None else _with_record(_lesson01(None), record)
    assert predictions.recorded(nb, "s.ipynb", "01") == []


@pytest.mark.parametrize("attempts, counted", [(-5, [1]), (0, [1]), (10**9, [predictions.MAX_ATTEMPTS]), (3, [3]),
                                               (4.0, [4]), (True, []), ("3", []), (2.5, []), (None, []),
                                               (float("nan"), []), ([2], [])])
def test_attempts_are_a_bounded_whole_number_and_a_record_without_one_is_left_out(attempts, counted):
    """As the guide says: a record whose attempts are not a whole number is left out (a bound keeps the rest sane)."""
    nb = _lesson01({"quizzes": {"01.default_device": {"first": "a", "attempts": attempts}}})
    assert [p.attempts for p in predictions.recorded(nb, "s.ipynb", "01")] == counted


def test_the_last_record_in_the_notebook_counts_and_damaged_cells_are_skipped():
    nb = _lesson01({"quizzes": {"01.default_device": {"first": "b"}}})
    nb["cells"].append({"cell_type": "code", "source": "cu.progress()", "metadata": {}, "outputs": [
        {"output_type": "display_data", "data": {MIME: {"quizzes": {"01.default_device": {"first": "a"}}}}}]})
    nb["cells"].insert(0, "not a cell")
    nb["cells"].insert(1, {"cell_type": "code", "outputs": "not a list"})
    [p] = predictions.recorded(nb, "s.ipynb", "01")
    assert (p.first, p.first_correct) == ("a", True)


def test_reading_a_notebook_keeps_only_the_record_of_its_outputs(tmp_path):
    path = tmp_path / "01_tensors.ipynb"
    path.write_text(json.dumps(_lesson01({"quizzes": {"01.default_device": {"first": "b"}}})), encoding="utf-8")
    nb = read_notebook(str(path))
    kept = [o for c in nb["cells"] for o in c.get("outputs", [])]
    assert kept == [{"output_type": "display_data", "data": {MIME: {"quizzes": {"01.default_device": {"first": "b"}}}}}]


def _grade(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "course_utils", "grade", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)


def test_grade_writes_the_predictions_of_each_submissions_own_lesson(tmp_path):
    for student, first in (("ann", "b"), ("=bob", "a")):   # a name a spreadsheet would read as a formula
        folder = tmp_path / "class" / student
        folder.mkdir(parents=True)
        record = {"quizzes": {"01.default_device": {"first": first, "attempts": 1}, "02.which_check": {"first": "a"}}}
        (folder / "01_tensors.ipynb").write_text(json.dumps(_lesson01(record)), encoding="utf-8")
    (tmp_path / "class" / "cy").mkdir()
    (tmp_path / "class" / "cy" / "01_tensors.ipynb").write_text(json.dumps(_lesson01(None)), encoding="utf-8")
    done = _grade(tmp_path, "class", "--out", "grades.csv", "--predictions", "predictions.csv")
    assert done.returncode == 0, done.stderr
    assert "Quiz predictions: 2 from 2 of 3 submission(s)" in done.stdout
    lines = (tmp_path / "predictions.csv").read_text(encoding="utf-8").splitlines()
    assert lines == ["submission,quiz,first,first_correct,attempts",
                     "class/=bob/01_tensors.ipynb,01.default_device,a,true,1",
                     "class/ann/01_tensors.ipynb,01.default_device,b,false,1"]
    rows, found = class_report.read_inputs([str(tmp_path / "grades.csv"), str(tmp_path / "predictions.csv")])
    assert {p.submission for p in found} == {"class/=bob/01_tensors.ipynb", "class/ann/01_tensors.ipynb"}
    report = class_stats.summarize(rows, predictions=found)
    stats = next(q for q in report.quizzes if q.quiz == "01.default_device")
    assert (stats.students, stats.predicted, stats.right_first) == (3, 2, 1)


@pytest.mark.parametrize("target, why", [("class/out.csv", "inside the folder being graded"),
                                         ("class", "it would be overwritten"),
                                         ("nowhere/p.csv", "no such folder")])
def test_grade_refuses_a_predictions_file_it_must_not_write(tmp_path, target, why):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "01_tensors.ipynb").write_text(json.dumps(_lesson01(None)), encoding="utf-8")
    done = _grade(tmp_path, "class", "--out", "grades.csv", "--predictions", target)
    assert done.returncode == 2
    assert "--predictions" in done.stderr and not (tmp_path / "grades.csv").exists()
    if why != "it would be overwritten":
        assert why in done.stderr


def _skewed_class(tmp_path, students: int = 20):
    """A class like a real one: most predict the popular wrong answer to 01.default_device, a few the right one,
    some saved before cu.progress() ran; one student did not hand lesson 01 in at all."""
    grades, preds = ["submission,exercise,points,max_points,passed,feedback,code"], [",".join(predictions.HEADER)]
    for i in range(students):
        sub = f"s{i:02d}/01_tensors.ipynb"
        grades.append(f"{sub},01.nbytes,2,2,true,ok,")
        if i % 5 == 4:
            continue   # no record
        first = "b" if i < 12 else ("a" if i % 2 else "d")
        preds.append(f"{sub},01.default_device,{first},{'true' if first == 'a' else 'false'},1")
    grades.append("late/03_to_device.ipynb,03.prepare,0,2,false,x,")
    (tmp_path / "grades.csv").write_text("\n".join(grades) + "\n", encoding="utf-8")
    (tmp_path / "predictions.csv").write_text("\n".join(preds) + "\n", encoding="utf-8")


def test_report_counts_a_skewed_class_per_quiz(tmp_path):
    _skewed_class(tmp_path)
    rows, found = class_report.read_inputs([str(tmp_path / "grades.csv"), str(tmp_path / "predictions.csv")])
    report = class_stats.summarize(rows, predictions=found)
    q = next(q for q in report.quizzes if q.quiz == "01.default_device")
    quiz = get_quiz("01.default_device")
    assert (q.students, q.predicted, q.right_first) == (20, 16, 3)   # 4 without a record; 3 of 16 right first
    assert q.wrong == [(f"b) {quiz.options[1]}", 10), (f"d) {quiz.options[3]}", 3)]
    assert [s.quiz for s in predictions.most_mispredicted(report.quizzes, "01")] == ["01.default_device"]
    html = class_page.render_html(report)
    assert "What the class predicted" in html and "13 of 16 predicted it wrong first" in html
    assert all(q.lesson in ("01", "03") for q in report.quizzes)


def test_report_command_takes_predictions_beside_grades_and_filters_by_lesson(tmp_path):
    _skewed_class(tmp_path)
    done = subprocess.run([sys.executable, "-m", "course_utils", "report", "grades.csv", "predictions.csv",
                           "--format", "csv", "--out", "tables", "--lesson", "03"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    quizzes = (tmp_path / "tables" / "quizzes.csv").read_text(encoding="utf-8").splitlines()
    assert quizzes[0].startswith("quiz,lesson,students,predicted,right_first")
    assert all(line.startswith("03.") for line in quizzes[1:]) and len(quizzes) > 1
    assert all(",0,0," in line for line in quizzes[1:])   # lesson 03's one student recorded nothing


def test_a_report_without_predictions_has_no_prediction_section(tmp_path):
    _skewed_class(tmp_path)
    report = class_stats.summarize(class_report.read_rows([str(tmp_path / "grades.csv")]))
    assert report.quizzes == [] and "What the class predicted" not in class_page.render_html(report)


def test_a_predictions_csv_with_rows_that_are_not_predictions(tmp_path):
    path = tmp_path / "predictions.csv"
    path.write_text(",".join(predictions.HEADER) + "\n" + "\n".join([
        "s/01.ipynb,01.default_device,a,true,1", "s/01.ipynb,99.none,a,true,1", "s/01.ipynb,01.default_device,q,x,1",
        "s/01.ipynb,01.default_device,a,true,-1", "short,row", ""]) + "\n", encoding="utf-8")
    _, found = class_report.read_inputs([str(path)])
    assert [(p.quiz, p.first) for p in found] == [("01.default_device", "a")]
