"""Whose each submission is, in the layouts schools collect a class in (:mod:`course_utils.classroom.reading.layouts`), and
the class report counted per student and per lesson handed in, whatever the layout."""
from __future__ import annotations

import dataclasses

import pytest

from course_utils.classroom.writing import class_page, class_report, class_stats
from course_utils.classroom.reading import layouts
from course_utils.classroom.grader import SubmissionGrade
from .generated_class import generate


@pytest.fixture(scope="module")
def klass():
    return generate(30)


def _student_number(submission: str) -> int:
    return int(submission.split("/")[0][1:])   # generated submissions are sNNNN/<lesson>_lesson.ipynb


#: Each layout: the path a generated student's lesson submission gets in it.
LAYOUTS = {
    layouts.CANVAS: lambda n, lesson, i: f"download/s{n:04d}{'_LATE' if n % 5 == 0 else ''}_{1000 + n}_{7000 + i}_"
                                         f"{lesson}_lesson{'-1' if n % 4 == 0 else ''}.ipynb",
    layouts.MOODLE: lambda n, lesson, i: f"download/Student {n}_{500 + n}_assignsubmission_file_{lesson}/"
                                         f"{lesson}_lesson.ipynb",
    layouts.NBGRADER: lambda n, lesson, i: f"course/submitted/s{n:04d}/lesson{lesson}/{lesson}_lesson.ipynb",
    layouts.FOLDERS: lambda n, lesson, i: f"class/s{n:04d}/{lesson}_lesson.ipynb",
}


def _moved(klass, layout: str) -> list[SubmissionGrade]:
    out = []
    for i, grade in enumerate(klass.grades):
        path = LAYOUTS[layout](_student_number(grade.submission), grade.submission.split("/")[1][:2], i)
        out.append(SubmissionGrade(path, [dataclasses.replace(r, submission=path) for r in grade.rows]))
    return out


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_layout_gives_the_same_class(klass, layout):
    grades = _moved(klass, layout)
    rows = [r for g in grades for r in g.rows]
    report = class_stats.summarize(rows)
    assert report.students == klass.students, report.layout
    assert {m.code: m.students for m in report.misconceptions} == klass.expected_codes
    assert {s.lesson: s.all_passed for s in report.lessons} == klass.expected_all_passed
    assert report.layout.startswith(layouts.DESCRIPTIONS[layout])
    assert f"{klass.students} students, {len(grades)} submissions" in report.layout


def test_canvas_names_and_ids_are_read_from_the_file_name():
    found = layouts.students({"dl/doejane_1234_5678_01_tensors.ipynb": {"01"},
                              "dl/doejane_LATE_1234_5680_02_cpu_vs_gpu-1.ipynb": {"02"},
                              "dl/lijun_77_5679_01_tensors.ipynb": {"01"}})
    assert [(s.name, s.id, s.layout) for s in found.values()] == [
        ("doejane", "1234", layouts.CANVAS), ("doejane", "1234", layouts.CANVAS), ("lijun", "77", layouts.CANVAS)]


def test_canvas_names_in_any_script_are_read():
    found = layouts.students({"canvas/李雷_1004_5005_01_tensors.ipynb": {"01"},
                              "canvas/Ørsted_1005_5006_01_tensors.ipynb": {"01"},
                              "canvas/Иванов_LATE_1006_5007_01_tensors.ipynb": {"01"}})
    assert [(s.name, s.id, s.layout) for s in found.values()] == [
        ("李雷", "1004", layouts.CANVAS), ("Ørsted", "1005", layouts.CANVAS), ("Иванов", "1006", layouts.CANVAS)]


def test_a_folder_per_student_is_never_read_as_canvas():
    """Names that look like Canvas's (``week_5_01_...``) in a folder per student: carol and dave stay two students."""
    found = layouts.students({"class/carol/week_5_01_tensors.ipynb": {"01"},
                              "class/dave/week_5_01_tensors.ipynb": {"01"}})
    assert {p: (s.key, s.layout) for p, s in found.items()} == {
        "class/carol/week_5_01_tensors.ipynb": ("class/carol", layouts.FOLDERS),
        "class/dave/week_5_01_tensors.ipynb": ("class/dave", layouts.FOLDERS)}


@pytest.mark.parametrize("name, lesson", [("doejane_1234_5678_03_to_device.ipynb", "03"),
                                          ("doejane_LATE_1234_5678_03_to_device-1.ipynb", "03"),
                                          ("李雷_1004_5005_07_transfer_cost.ipynb", "07"),
                                          ("Jane Doe_42_assignsubmission_file_05_device_attribute.ipynb", "05"),
                                          ("04_cuda.ipynb", "04"), ("week_4_cuda.ipynb", None)])
def test_the_lesson_is_read_from_a_platforms_file_name_after_its_prefix(name, lesson):
    from course_utils.classroom.reading.submissions import file_lesson
    assert file_lesson(f"download/{name}") == lesson


def test_a_lesson_number_is_not_read_as_a_canvas_name():
    found = layouts.students({"alice/01_2_3_tensors.ipynb": {"01"}})
    assert found["alice/01_2_3_tensors.ipynb"].layout == layouts.FOLDERS


def test_a_folder_of_one_lesson_by_several_names_is_a_flat_folder_and_copies_stay_one_student():
    found = layouts.students({"lab/alice_lab1.ipynb": {"01"}, "lab/bob_lab1.ipynb": {"01"},
                              "alice/01_tensors.ipynb": {"01"}, "alice/01_tensors (1).ipynb": {"01"},
                              "alice/02_cpu_vs_gpu.ipynb": {"02"}, "01_tensors.ipynb": {"01"}})
    assert {p: (s.key, s.layout) for p, s in found.items()} == {
        "lab/alice_lab1.ipynb": ("lab/alice_lab1.ipynb", layouts.FLAT),
        "lab/bob_lab1.ipynb": ("lab/bob_lab1.ipynb", layouts.FLAT),
        "alice/01_tensors.ipynb": ("alice", layouts.FOLDERS),
        "alice/01_tensors (1).ipynb": ("alice", layouts.FOLDERS),
        "alice/02_cpu_vs_gpu.ipynb": ("alice", layouts.FOLDERS),
        "01_tensors.ipynb": ("01_tensors.ipynb", layouts.FLAT)}


def test_a_misconception_is_a_share_of_those_who_handed_in_its_lesson(klass):
    """Every student hands in lesson 01; two hand in lesson 03 (one with a mistake): its share is of 2."""
    wrong03 = next(g.submission for g in klass.grades if g.submission.endswith("/03_lesson.ipynb")
                   and any(r.code.startswith("03.") for r in g.rows))
    two = {_student_number(wrong03), _student_number(wrong03) % klass.students + 1}
    rows = [r for g in klass.grades for r in g.rows
            if r.exercise[:2] == "01" or (r.exercise[:2] == "03" and _student_number(g.submission) in two)]
    report = class_stats.summarize(rows)
    lesson03 = [m for m in report.misconceptions if all(e.startswith("03.") for e in m.exercises)]
    lesson01 = [m for m in report.misconceptions if all(e.startswith("01.") for e in m.exercises)]
    assert lesson03 and lesson01
    assert {m.of for m in lesson03} == {2} and {m.of for m in lesson01} == {klass.students}
    html = class_page.render_html(report)
    specific = next(m for m in lesson03 if not m.generic)
    assert f"<b>{specific.students}</b> of the 2 students who handed in lesson 03" in html


def test_the_gradebook_has_one_row_per_student_and_a_column_per_lesson(klass, tmp_path):
    from course_utils.classroom.writing import class_report, gradebook
    from course_utils.classroom.writing.reports import write_csv

    grades = _moved(klass, layouts.CANVAS)
    csv_path = tmp_path / "grades.csv"
    with open(csv_path, "w", encoding="utf-8", newline="") as f:
        write_csv(grades, f)
    rows = class_report.read_rows([str(csv_path)])
    table, unmatched, empty = gradebook.table(rows)
    header, possible, *students = table
    lessons = sorted({g.rows[0].exercise[:2] for g in klass.grades})
    assert header == [*gradebook.LEADING, *(gradebook.column(lesson) for lesson in lessons)]   # no Total
    assert len(students) == klass.students and len({s[1] for s in students}) == klass.students   # Canvas ids
    first = students[0]
    expected = {lesson: sum(r.points for g in klass.grades if g.submission.startswith("s0001/")
                            and g.rows[0].exercise[:2] == lesson for r in g.rows) for lesson in lessons}
    assert first[0] == "s0001" and first[1] == "1001"
    assert first[len(gradebook.LEADING):] == [str(expected[lesson]) for lesson in lessons]
    assert unmatched == [] and empty == sum(cell == "" for s in students for cell in s[len(gradebook.LEADING):])
    out = tmp_path / "gradebook.csv"
    assert class_report.run(class_report_args(str(csv_path), "--format", "gradebook", "--out", str(out))) == 0
    assert out.read_text(encoding="utf-8").splitlines()[0].startswith("Student,ID,SIS User ID,SIS Login ID,Section,")


def class_report_args(*argv: str):
    import argparse

    from course_utils.classroom.writing import class_report
    parser = argparse.ArgumentParser()
    class_report.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_a_student_is_followed_up_once_with_every_reason_a_time_limit_included():
    from course_utils import misconceptions
    from course_utils.classroom.grader import Row
    rows = [Row("alice/01_tensors.ipynb", "01.nbytes", 0, 1, False, "stopped", misconceptions.TIMEOUT),
            Row("alice/01_tensors.ipynb", "01.blank_like", 1, 1, True, "ok", ""),
            Row("alice/03_to_device.ipynb", "03.to_device", 0, 1, False, "no", misconceptions.WRONG_VALUE),
            Row("bob/01_tensors.ipynb", "01.nbytes", 1, 1, True, "ok", "")]
    follow = class_stats.summarize(rows).follow_up
    assert [(f.student, f.lesson, f.reasons) for f in follow] == [
        ("alice", "01, 03", ["lesson 01: time limit", "lesson 03: no points in the whole lesson"])]
