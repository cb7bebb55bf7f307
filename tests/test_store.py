"""The progress store: missing, damaged and concurrently written files."""
from __future__ import annotations

import json
import multiprocessing
import os
import stat

import pytest

from course_utils import store


def test_missing_file_is_an_empty_record(progress_file):
    assert store.load() == {"version": 1, "quizzes": {}, "exercises": {}}
    assert "0/4" in store.summary().text()


def test_records_and_summary(progress_file):
    store.record_quiz("01.default_device", correct=False, chosen=1)
    store.record_quiz("01.default_device", correct=True, chosen=0)
    store.record_result("01.nbytes", "not attempted", 0, 1)
    store.record_result("01.nbytes", "passed", 1, 1)
    store.record_result("01.nbytes", "failed", 0, 1)          # a later regression keeps the pass
    data = json.loads(progress_file.read_text())
    assert data["quizzes"]["01.default_device"] == {**data["quizzes"]["01.default_device"],
                                                    "first_correct": False, "correct": True, "attempts": 2}
    assert data["exercises"]["01.nbytes"]["passed"] and data["exercises"]["01.nbytes"]["attempts"] == 2
    row = store.summary().rows[0]
    assert (row["answered"], row["first_right"], row["passed"]) == (1, 0, 1)
    assert "<table" in store.summary()._repr_html_()
    assert store.session_statuses()["01.nbytes"] == "failed"


@pytest.mark.parametrize("garbage", ["{not json", "", "[1, 2]", '{"quizzes": 3}', "\x00\xff"])
def test_damaged_file_is_kept_aside_and_recovered(progress_file, garbage):
    progress_file.write_text(garbage)
    with pytest.warns(UserWarning, match="damaged"):
        store.record_quiz("01.default_device", True, 0)
    assert store.load()["quizzes"]["01.default_device"]["correct"]
    kept = [p for p in progress_file.parent.iterdir() if ".damaged-" in p.name]
    assert len(kept) == 1 and kept[0].read_text() == garbage      # nothing silently lost


def test_unwritable_location_warns_and_never_raises(tmp_path, monkeypatch):
    locked = tmp_path / "ro"
    locked.mkdir()
    os.chmod(locked, stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setenv(store.PROGRESS_ENV, str(locked / "sub" / "progress.json"))
    if os.geteuid() == 0:
        monkeypatch.setattr(store, "_write_atomic", lambda *a: (_ for _ in ()).throw(PermissionError("ro")))
    with pytest.warns(UserWarning, match="Progress not saved"):
        store.record_result("01.nbytes", "passed", 1, 1)


def test_no_temporary_files_left_behind(progress_file):
    for i in range(5):
        store.record_result("01.nbytes", "failed", 0, 1)
    assert sorted(p.name for p in progress_file.parent.iterdir()) == ["progress.json", "progress.json.lock"]


def _writer(path: str, worker: int, count: int) -> None:
    os.environ[store.PROGRESS_ENV] = path
    for i in range(count):
        store.record_quiz(f"w{worker}.q{i}", True, 0)


def test_concurrent_writers_lose_nothing(progress_file):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(progress_file), w, 25)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(json.loads(progress_file.read_text())["quizzes"]) == 100


def test_a_mistake_names_the_lesson_whose_notebook_teaches_it(progress_file):
    """06.ignored-device-index is lesson 06's mistake, taught in lesson 05's section 2: the progress says lesson 05."""
    store.record_result("06.find_mismatches", "failed", 0, 3, code="06.ignored-device-index")
    hit = store.summary().hits[0]
    assert (hit["code"], hit["lesson"], hit["section"]) == ("06.ignored-device-index", "05", "2. Comparing devices")
    assert "(lesson 05, 2. Comparing devices)" in store.summary().text()
    assert "lesson 05, 2. Comparing devices</a>" in store.summary()._repr_html_()
    assert hit["link"].startswith("05_device_attribute.ipynb#")


def test_progress_marks_follow_the_course_order(progress_file):
    """Each lesson's quizzes and exercises in the order its notebook meets them (its data's ``order``), not by name."""
    import re

    from course_utils.loading import lesson_data
    from course_utils.syllabus import LESSONS
    from nbtools import NOTEBOOK_DIR, load, source
    rows = store.summary().rows
    for row, (number, lesson) in zip(rows, LESSONS.items(), strict=True):
        calls = [m[1] for cell in load(NOTEBOOK_DIR / lesson.notebook)["cells"] if cell["cell_type"] == "code"
                 for m in re.finditer(r"cu\.(?:quiz|exercise)\(\s*[\"'](\d\d\.[\w-]+)[\"']", source(cell))]
        assert lesson_data(number)["order"] == list(dict.fromkeys(calls)), lesson.notebook
        assert [i for i, _ in row["quiz_items"]] == [c for c in calls if c in dict(row["quiz_items"])]
        assert [i for i, _ in row["exercise_items"]] == [c for c in calls if c in dict(row["exercise_items"])]
    lesson_07 = [i for i, _ in rows[6]["exercise_items"]]
    assert lesson_07 == ["07.transfer_time", "07.bandwidth_gbps", "07.sum_batches", "07.capstone"] != sorted(lesson_07)
