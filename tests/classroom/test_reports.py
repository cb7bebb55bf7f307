"""course_utils.classroom.writing.reports: the CSV is safe to open in a spreadsheet, the summary is safe to print,
and Gradescope's results.json files land in unique folders named after the submissions."""
from __future__ import annotations

import csv
import io
import json
import urllib.parse

import pytest

from course_utils import classroom

from .cases import L01, L01_POINTS, LIMITS, grade_in, linux_only, points_of, solved01, write


def _grade_of(submission: str, score: int) -> classroom.SubmissionGrade:
    rows = [classroom.Row(submission, ex_id, score, 1, bool(score), "feedback") for ex_id in L01]
    return classroom.SubmissionGrade(submission, rows)


# --- Gradescope ------------------------------------------------------------------------------------

def test_gradescope_export(batch):
    gs = batch.root / "gs"
    results = json.loads((gs / "subs%2Fmistakes.ipynb" / "results.json").read_text(encoding="utf-8"))
    assert results["score"] == points_of("01.nbytes") and results["extra_data"]["submission"] == "subs/mistakes.ipynb"
    assert results["extra_data"]["late"] is False and results["extra_data"]["answers"].startswith("2:")
    assert [(t["number"], t["score"], t["max_score"], t["status"]) for t in results["tests"]] == [
        ("01.blank_like", 0, points_of("01.blank_like"), "failed"),
        ("01.nbytes", points_of("01.nbytes"), points_of("01.nbytes"), "passed")]
    assert "your zeros are on" in results["tests"][0]["output"]
    assert [t["tags"] for t in results["tests"]] == [["01.ignored-input-device"], []]   # the mistake, as a tag
    for same_stem in ("subs%2Fsolved.ipynb", "subs%2Flate%2Fsolved.ipynb"):  # folders: the paths, encoded
        assert (gs / same_stem / "results.json").exists()


@linux_only
def test_gradescope_folders_are_unique_and_reversible(tmp_path):
    names = ["John Smith/hw.ipynb", "John__Smith/hw.ipynb", "Bob.ipynb", "bob.ipynb", "a%2Fb.ipynb",
             "a/b.ipynb", ".hidden.ipynb", "x" * 300 + ".ipynb", "caf\u00e9.ipynb", "cafe\u0301.ipynb"]
    grades = [_grade_of(name, i % 2) for i, name in enumerate(names)]
    written = classroom.write_gradescope(grades, str(tmp_path / "gs"))
    assert len({p.parent.name for p in written}) == len(names)
    assert len({p.parent.name.casefold() for p in written}) == len(names)  # safe on macOS and Windows too
    for graded, path in zip(grades, written):
        results = json.loads(path.read_text(encoding="utf-8"))
        assert results["extra_data"]["submission"] == graded.submission and results["score"] == graded.points
        if "~" not in path.parent.name:  # all but the name cut to fit: decodable
            assert urllib.parse.unquote(path.parent.name) == graded.submission
    assert classroom.gradescope_folder("subs/John Smith/hw.ipynb") == "subs%2FJohn Smith%2Fhw.ipynb"


# --- the CSV is safe in a spreadsheet ----------------------------------------------------------

@linux_only
@pytest.mark.parametrize("name", ['=HYPERLINK("http://example.com","x").ipynb', "+1.ipynb", "-1.ipynb",
                                  "@SUM(A1).ipynb", "\tx.ipynb", "\rx.ipynb"])
def test_cells_that_look_like_formulas_are_escaped(name):
    out = io.StringIO()
    classroom.write_csv([_grade_of(name, 1)], out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert {row[0] for row in rows[1:]} == {"'" + name}


@linux_only
def test_a_formula_in_a_file_name_is_escaped_in_a_real_batch(tmp_path):
    name = '=HYPERLINK("evil.example","click me").ipynb'  # a file name: no slashes
    write(tmp_path, {name: solved01()})
    graded = grade_in(tmp_path, name, *LIMITS)
    assert graded.code == 0, graded.err
    text = (tmp_path / "grades.csv").read_text(encoding="utf-8")
    assert all(line.startswith("\"'=HYPERLINK(") for line in text.splitlines()[1:])
    assert graded.rows.points("'" + name)["TOTAL"] == L01_POINTS


@linux_only
def test_a_semicolon_field_is_quoted_and_the_summary_is_printable():
    out = io.StringIO()
    classroom.write_csv([_grade_of("a;=1+1.ipynb", 1)], out)
    assert out.getvalue().splitlines()[1].startswith('"a;=1+1.ipynb",')
    table = classroom.summary_table([_grade_of("\x1b[2Jx\udcff.ipynb", 1)])
    assert "\x1b" not in table and "\\x1b[2Jx\\udcff.ipynb" in table
