"""Every student counted, by the policies teachers use (:mod:`course_utils.classroom.writing.resubmissions`, the
class report's follow-up list), and marks as Canvas's and Moodle's importers read them
(:mod:`course_utils.classroom.writing.gradebook`)."""
from __future__ import annotations

import csv
import io

import pytest

from course_utils import misconceptions
from course_utils.classroom.grader import TOTAL, Row
from course_utils.classroom.writing import class_stats, gradebook
from course_utils.classroom.writing.resubmissions import BEST, LATEST, choose
from course_utils.exceptions import ReportError
from course_utils.exercises import get_exercise

L03 = ("03.prepare", "03.to_device")   # 2 + 3 points


def rows(submission: str, points: dict[str, int], *, submitted: str = "2026-11-01T10:00:00+00:00", late: bool = False,
         answers: str = "", code: str = "03.to-not-assigned") -> list[Row]:
    """A submission's rows: each exercise's points (all of them: passed)."""
    out = []
    for exercise, earned in points.items():
        most = get_exercise(exercise).points
        out.append(Row(submission, exercise, earned, most, earned == most, "feedback", "" if earned == most else code,
                       submitted, late, answers))
    return out


def test_the_latest_submission_counts_whole_never_a_mix_of_versions():
    # a 2+0 version, then a 0+3 version: the best rows of each would make 5/5, which no notebook earned
    first = rows("carol/03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 0}, submitted="2026-11-01T10:00:00+00:00")
    second = rows("carol/03_to_device (1).ipynb", {"03.prepare": 0, "03.to_device": 3},
                  submitted="2026-11-02T10:00:00+00:00")
    latest = choose(first + second)
    assert latest.counted["carol", "03"] == "carol/03_to_device (1).ipynb"
    assert sum(r.points for r in latest.best.values()) == 3
    assert latest.others["carol", "03"] == ["carol/03_to_device.ipynb"]
    best = choose(first + second, BEST)
    assert best.counted["carol", "03"] == "carol/03_to_device (1).ipynb"   # 3 > 2
    assert sum(r.points for r in best.best.values()) == 3
    # Canvas's file id decides before the times a download kept, and a copy's number after them
    canvas = (rows("doejane_12_900_03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 3}, submitted="")
              + rows("doejane_12_800_03_to_device-1.ipynb", {"03.prepare": 0, "03.to_device": 0}, submitted=""))
    assert choose(canvas, LATEST).counted["doejane (12)", "03"] == "doejane_12_900_03_to_device.ipynb"
    same_time = rows("ann/03_a.ipynb", {"03.prepare": 2, "03.to_device": 3}) + rows(
        "ann/03_a (2).ipynb", {"03.prepare": 0, "03.to_device": 0})
    assert choose(same_time).counted["ann", "03"] == "ann/03_a (2).ipynb"
    assert choose(same_time, BEST).counted["ann", "03"] == "ann/03_a.ipynb"


def test_a_notebook_counts_before_a_file_that_is_not_one_and_every_file_is_listed():
    notebook = rows("dave/03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 3}, submitted="2026-11-01T10:00:00")
    pdf = rows("dave/03_to_device.pdf", {"03.prepare": 0, "03.to_device": 0}, submitted="2026-11-09T10:00:00",
               code=misconceptions.NOT_A_NOTEBOOK)
    lost = [Row("dave/notes.docx", TOTAL, 0, 0, False, "Not graded: the file is a zip archive, not a notebook.",
                misconceptions.NOT_GRADED)]
    report = class_stats.summarize(notebook + pdf + lost)
    assert report.students == 1 and report.lessons[0].mean_percent == 100
    [follow] = report.follow_up
    assert any("03_to_device.ipynb counted, not 03_to_device.pdf" in r for r in follow.reasons), follow.reasons
    assert any(r.startswith("notes.docx: Not graded") for r in follow.reasons), follow.reasons


def test_a_student_who_handed_in_only_files_that_are_not_notebooks_is_counted_everywhere():
    graded = rows("erin/03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 3})
    script = rows("frank/03_to_device.ipynb", {"03.prepare": 0, "03.to_device": 0}, code=misconceptions.NOT_A_NOTEBOOK)
    unknown = [Row("gus/essay.pdf", TOTAL, 0, 0, False, "Not graded: could not tell which lesson.",
                   misconceptions.NOT_GRADED)]
    report = class_stats.summarize(graded + script + unknown)
    assert report.students == 3
    assert {f.student for f in report.follow_up} == {"frank", "gus"}
    lines, unmatched, empty = gradebook.table(graded + script + unknown)
    assert [line[0] for line in lines[2:]] == ["erin", "frank", "gus"]
    assert [line[-1] for line in lines[2:]] == ["5", "0", ""] and empty == 1
    lines, _, _ = gradebook.table(graded + script + unknown, gradebook.Options(missing=gradebook.ZERO))
    assert [line[-1] for line in lines[2:]] == ["5", "0", "0"]


def test_every_capstone_bug_left_is_counted_not_only_the_first():
    bugs = "07.batch-not-moved 06.plain-tensor-attribute 07.value-read-every-step"
    class_rows = [Row(f"s{i}/07_capstone.ipynb", "07.capstone", 6, 12, False, "feedback",
                      bugs if i < 6 else "07.batch-not-moved") for i in range(10)]
    report = class_stats.summarize(class_rows)
    counted = {m.code: m.students for m in report.misconceptions}
    assert counted == {"07.batch-not-moved": 10, "06.plain-tensor-attribute": 6, "07.value-read-every-step": 6}
    assert report.exercises[0].codes["07.value-read-every-step"] == 6


def test_lateness_is_counted_and_named():
    on_time = rows("a/03_x.ipynb", {"03.prepare": 2, "03.to_device": 3})
    late = rows("b/03_x.ipynb", {"03.prepare": 2, "03.to_device": 3}, late=True)
    report = class_stats.summarize(on_time + late)
    assert report.lessons[0].late == 1
    assert [(f.student, f.reasons) for f in report.follow_up] == [("b", ["lesson 03: handed in late"])]


def test_identical_copies_and_wrong_lesson_uploads_are_flagged():
    same = "2:5d41402abc4b"
    class_rows = (rows("ann/03_x.ipynb", {"03.prepare": 2, "03.to_device": 0}, answers=same)
                  + rows("bob/03_x.ipynb", {"03.prepare": 2, "03.to_device": 0}, answers=same)
                  + rows("cat/03_x.ipynb", {"03.prepare": 2, "03.to_device": 3}, answers="2:aaaaaaaaaaaa")
                  + rows("dan/03_x.ipynb", {"01.nbytes": 2, "01.blank_like": 1}))
    reasons = {f.student: f.reasons for f in class_stats.summarize(class_rows).follow_up}
    assert "lesson 03: the same answers as bob (2 answer cells)" in reasons["ann"]
    assert "lesson 03: the same answers as ann (2 answer cells)" in reasons["bob"]
    assert "cat" not in reasons
    assert any("handed in lesson 01 where 3 students handed in lesson 03" in r for r in reasons["dan"]), reasons
    assert any("named for lesson 03 but holds lesson 01's answers" in r for r in reasons["dan"]), reasons
    anonymous = {f.student: f.reasons for f in class_stats.summarize(class_rows, anonymous=True).follow_up}
    assert "lesson 03: the same answers as Student 2 (2 answer cells)" in anonymous["Student 1"]


# --- Canvas ------------------------------------------------------------------------------------------------------

EXPORT = ("Student,ID,SIS User ID,SIS Login ID,Section,Lesson 3: moving tensors (4401),Quiz 1 (4402),"
          "Current Score,Final Score\n"
          "    Points Possible,,,,,10.00,5.00,(read only),(read only)\n"
          "\"Doe, Jane\",12,s12,jdoe,Lab A,,,0,0\n"
          "\"Roe, Rick\",13,s13,rroe,Lab A,,,0,0\n"
          "\"Poe, Pat\",14,s14,ppoe,Lab B,,,0,0\n")


def _read(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _written(tmp_path, class_rows, options) -> tuple[list[list[str]], str]:
    out, err = tmp_path / "gradebook.csv", io.StringIO()
    gradebook.write(class_rows, str(out), options, err)
    return _read(out.read_text(encoding="utf-8")), err.getvalue()


def test_canvas_marks_go_into_the_assignment_of_the_export_scaled_to_its_points(tmp_path):
    export = tmp_path / "export.csv"
    export.write_text(EXPORT, encoding="utf-8")
    class_rows = (rows("download/doejane_12_901_03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 3})
                  + rows("download/roerick_LATE_13_902_03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 0})
                  + rows("download/smithsam_15_903_03_to_device.ipynb", {"03.prepare": 0, "03.to_device": 0}))
    table, err = _written(tmp_path, class_rows, gradebook.Options(roster=str(export)))
    assert table[0] == [*gradebook.LEADING, "Lesson 3: moving tensors (4401)"]   # Name (id), no Total
    assert table[1] == ["Points Possible", "", "", "", "", "10.00"]
    assert table[2:] == [["Doe, Jane", "12", "s12", "jdoe", "Lab A", "10"],    # 5/5 of 10 points
                         ["Roe, Rick", "13", "s13", "rroe", "Lab A", "4"],
                         ["Poe, Pat", "14", "s14", "ppoe", "Lab B", ""]]       # nothing handed in
    assert "smithsam" in err and "--missing zero" in err
    zero, _ = _written(tmp_path, class_rows, gradebook.Options(roster=str(export), missing=gradebook.ZERO))
    assert zero[4][-1] == "0"
    by_id, _ = _written(tmp_path, class_rows, gradebook.Options(roster=str(export), assignments={"03": "4402"}))
    assert by_id[0][-1] == "Quiz 1 (4402)" and by_id[2][-1] == "5"   # its 5 points possible
    with pytest.raises(ReportError, match="--assignment 03=ID"):
        gradebook.table(class_rows, gradebook.Options(roster=str(export), assignments={"03": "999"}))


def test_the_gradebook_never_overwrites_the_roster_it_reads(tmp_path):
    from course_utils.__main__ import main

    grades, export = tmp_path / "grades.csv", tmp_path / "export.csv"
    with open(grades, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(("submission", "exercise", "points", "max_points", "passed", "feedback", "code")) + "\n")
        f.write("download/doejane_12_901_03_to_device.ipynb,03.prepare,2,2,true,ok,\n")
    export.write_text(EXPORT, encoding="utf-8")
    assert main(["report", str(grades), "--format", "gradebook", "--roster", str(export), "--out", str(export)]) == 2
    assert export.read_text(encoding="utf-8") == EXPORT


def test_canvas_without_an_export_names_each_lesson_by_its_assignment_id():
    class_rows = rows("download/doejane_12_901_03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 3})
    table, _, _ = gradebook.table(class_rows, gradebook.Options(assignments={"03": "4401"}))
    assert table[0][-1] == f"{gradebook.column('03')} (4401)"
    assert table[2] == ["doejane", "12", "", "", "", "5"]


# --- Moodle ------------------------------------------------------------------------------------------------------

MOODLE_ROWS = (rows("dl/Jane Doe_501_assignsubmission_file_/03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 3})
               + rows("dl/Rick Roe_502_assignsubmission_file_/03_to_device.ipynb", {"03.prepare": 2, "03.to_device": 0}))


def test_nbgrader_s_timestamp_is_when_a_file_was_handed_in(tmp_path):
    from course_utils.classroom.reading.submissions import find_submissions, handed_in_at

    folder = tmp_path / "submitted" / "ann" / "ps1"
    folder.mkdir(parents=True)
    (folder / "timestamp.txt").write_text("2026-11-01 10:00:00.123456 UTC", encoding="utf-8")
    (folder / "01_tensors.ipynb").write_text("{}", encoding="utf-8")
    (tmp_path / "feedback" / "ann" / "ps1").mkdir(parents=True)
    (tmp_path / "feedback" / "ann" / "ps1" / "01_tensors.html").write_text("<html>", encoding="utf-8")
    assert find_submissions([str(tmp_path)]) == [str(folder / "01_tensors.ipynb")]   # not its feedback, nor the time
    assert handed_in_at(str(folder / "01_tensors.ipynb")).isoformat() == "2026-11-01T10:00:00.123456+00:00"


def test_moodle_needs_a_roster_to_match_its_users():
    with pytest.raises(ReportError, match="participants export"):
        gradebook.table(MOODLE_ROWS)


def test_moodle_participants_are_matched_by_name_and_keep_their_email(tmp_path):
    participants = tmp_path / "participants.csv"
    participants.write_text("First name,Last name,Email address,Roles,Groups\n"
                            "Jane,Doe,jane@uni.example,Student,\nRick,Roe,rick@uni.example,Student,\n"
                            "Tess,Teacher,tess@uni.example,Teacher,\nPat,Poe,pat@uni.example,Student,\n",
                            encoding="utf-8")
    table, err = _written(tmp_path, MOODLE_ROWS, gradebook.Options(roster=str(participants)))
    assert table == [["First name", "Last name", "Email address", gradebook.column("03")],
                     ["Jane", "Doe", "jane@uni.example", "5"], ["Rick", "Roe", "rick@uni.example", "2"],
                     ["Pat", "Poe", "pat@uni.example", ""]]
    assert "Not in --roster" not in err


def test_moodle_grading_worksheet_is_filled_in_as_its_upload_reads_it(tmp_path):
    sheet = tmp_path / "worksheet.csv"
    sheet.write_text("Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
                     "Last modified (submission),Last modified (grade),Feedback comments\n"
                     "Participant 501,Jane Doe,jane@uni.example,Submitted,,100.00,Yes,\"1 Nov 2026, 10:00\",-,\n"
                     "Participant 502,Rick Roe,rick@uni.example,Submitted,,100.00,Yes,\"1 Nov 2026, 10:00\",-,\n"
                     "Participant 503,Pat Poe,pat@uni.example,No submission,,100.00,Yes,-,-,\n", encoding="utf-8")
    table, _ = _written(tmp_path, MOODLE_ROWS, gradebook.Options(roster=str(sheet)))
    header = table[0]
    assert all(name in header for name in gradebook.WORKSHEET)
    grades = [row[header.index("Grade")] for row in table[1:]]
    assert grades == ["100", "40", ""]                      # 5/5 and 2/5 of 100
    assert [row[0] for row in table[1:]] == ["Participant 501", "Participant 502", "Participant 503"]
    two_lessons = MOODLE_ROWS + rows("dl/Jane Doe_501_assignsubmission_file_/01_tensors.ipynb",
                                     {"01.nbytes": 2, "01.blank_like": 1})
    with pytest.raises(ReportError, match="one assignment"):
        gradebook.table(two_lessons, gradebook.Options(roster=str(sheet)))


# --- a whole Canvas download, from the grader to the gradebook --------------------------------------------------

def test_every_student_who_handed_in_anything_is_graded_reported_and_in_the_gradebook(tmp_path):
    import os

    from course_utils.classroom.writing import class_report
    from .cases import SHORT_LIMITS, grade_in, solved01, write

    files = {"dl/doejane_12_901_01_tensors.ipynb": solved01(),
             "dl/roerick_13_902_01_tensors.py": "x = 1\n",                       # a script
             "dl/poepat_14_903_01_tensors.ipynb": "import torch\nprint(1)\n",   # a script saved as .ipynb
             "dl/kimlee_15_904_essay.pdf": b"%PDF-1.4 ...",                      # no lesson in its name
             "dl/parkjo_LATE_16_905_01_tensors.ipynb": solved01(),
             "dl/__MACOSX/._x.ipynb": "junk", "dl/Thumbs.db": b"junk"}
    write(tmp_path, files)
    for name in files:   # all handed in on 14 November 2023, before the deadline
        os.utime(tmp_path / name, (1_700_000_000, 1_700_000_000))
    batch = grade_in(tmp_path, "dl", *SHORT_LIMITS, "--deadline", "2024-01-01T00:00+00:00")
    assert batch.code == 0, batch.err
    assert {sub for sub, _ in batch.rows} == {f"dl/{name}" for name in ("doejane_12_901_01_tensors.ipynb",
                                              "roerick_13_902_01_tensors.py", "poepat_14_903_01_tensors.ipynb",
                                              "kimlee_15_904_essay.pdf", "parkjo_LATE_16_905_01_tensors.ipynb")}
    late = {sub: row["late"] for (sub, exercise), row in batch.rows.items() if exercise == TOTAL}
    assert late["dl/parkjo_LATE_16_905_01_tensors.ipynb"] == "true"          # Canvas's marker
    assert late["dl/doejane_12_901_01_tensors.ipynb"] == "false"             # handed in before the deadline
    assert "1 handed in late." in batch.out
    rows = class_report.read_rows([str(tmp_path / "grades.csv")])
    report = class_stats.summarize(rows)
    assert report.students == 5
    reasons = {f.student: f.reasons for f in report.follow_up}
    assert set(reasons) == {"doejane (12)", "roerick (13)", "poepat (14)", "kimlee (15)", "parkjo (16)"}
    assert "lesson 01: handed in late" in reasons["parkjo (16)"]
    assert reasons["doejane (12)"] == ["lesson 01: the same answers as parkjo (16) (2 answer cells)"]   # one notebook
    for student in ("roerick (13)", "poepat (14)", "kimlee (15)"):   # the PDF: graded as the batch's one lesson
        assert "lesson 01: handed in a file that is not a notebook" in reasons[student], reasons
    lines, _, _ = gradebook.table(rows)
    assert [line[1] for line in lines[2:]] == ["12", "15", "16", "14", "13"]   # sorted by name; every student
