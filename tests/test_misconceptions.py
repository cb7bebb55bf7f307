"""Misconception codes: every wrong-answer branch names one, each lesson's code is documented, taught in a section
that exists and asserted by a test; the learner's progress lists the ones met and cleared."""
from __future__ import annotations

import ast
import importlib.util
import re

import pytest
import torch

import course_utils as cu
from course_utils import misconceptions, store
from nbtools import ROOT
from test_errors import headings

PACKAGE = ROOT / "course_utils"
LESSON_CODES = {c: m for c, m in misconceptions.registry().items() if not m.generic}


def test_every_wrong_names_its_mistake():
    """Each ``Wrong(...)`` in the package passes a code (an untested branch would otherwise fail only when hit)."""
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Wrong":
                if len(node.args) + sum(k.arg == "code" for k in node.keywords) != 2:
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert missing == [], missing


def test_every_lesson_has_codes_and_every_code_is_well_formed():
    assert {m.lesson for m in LESSON_CODES.values()} >= {"01", "02", "03", "04", "05", "06", "07", "08"}
    for code, m in misconceptions.registry().items():
        assert misconceptions.CODE.match(code) and m.name and m.explanation, code
        assert len(m.name) <= 70, code


@pytest.mark.parametrize("code", sorted(LESSON_CODES))
def test_each_lesson_code_is_taught_where_it_says_and_asserted_by_a_test(code):
    m = LESSON_CODES[code]
    notebook, section = m.section
    names = headings(notebook)
    for part in section.split(" › "):
        assert part in names, f"{code}: {notebook} has no heading {part!r}"
    assert m.question.strip().endswith("?"), code
    tests = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob(f"test_lesson{m.lesson}*.py"))
    assert f'"{code}"' in tests or m.code in tests, f"{code}: no test in tests/test_lesson{m.lesson}.py expects it"


def test_the_misconception_index_is_generated_from_the_definitions():
    spec = importlib.util.spec_from_file_location("misconception_index", ROOT / "scripts" / "misconception_index.py")
    index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(index)
    committed = (ROOT / "docs" / "misconceptions.md").read_text(encoding="utf-8")
    assert committed == index.render(), "docs/misconceptions.md is out of date: run scripts/misconception_index.py"
    assert all(f"`{code}`" in committed for code in misconceptions.registry())


@pytest.mark.parametrize("code, says", [
    ("03.Bad-Case", "malformed"), ("3.x", "malformed"), ("any.raised", "defined twice"),
    ("09.new-thing", "needs the section"),
])
def test_define_refuses_bad_codes(code, says):
    with pytest.raises(ValueError, match=says):
        misconceptions.define(code, "name", "explanation")
    assert code == "any.raised" or code not in misconceptions.registry()


def test_a_lesson_module_names_only_codes_its_data_define():
    """``misconceptions.code`` is how a lesson module names a code: one missing from the data fails at import."""
    assert misconceptions.code("01.counted-elements") == "01.counted-elements"
    with pytest.raises(LookupError, match="course_utils/data/lessons/01.json"):
        misconceptions.code("01.not-in-the-data")


def test_the_lessons_data_stay_readable_one_field_a_line():
    """``data/lessons/NN.json`` as ``json.dumps(..., indent=1, ensure_ascii=False)`` writes it, so a hand edit keeps
    the layout that reviews read."""
    import json
    files = sorted((PACKAGE / "data" / "lessons").glob("*.json"))
    assert [f.stem for f in files] == ["01", "02", "03", "04", "05", "06", "07", "08"]
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=1, ensure_ascii=False) + "\n", path.name


def test_an_unknown_code_reads_as_itself():
    m = misconceptions.get("05.from-a-newer-course")
    assert m.name == "05.from-a-newer-course" and "does not know" in m.explanation


def test_check_gives_codes_for_stubs_crashes_and_device_errors():
    def stub(t):
        raise NotImplementedError

    def crash(t):
        raise ValueError("nope")

    def mismatch(t):
        return torch.ones(2, device="meta") + torch.ones(2)

    def hangs(t):
        while True:
            pass

    assert cu.check("01.nbytes", stub).code == misconceptions.NOT_ATTEMPTED
    assert cu.check("01.nbytes", crash).code == misconceptions.RAISED
    assert cu.check("01.nbytes", mismatch).code == misconceptions.RAISED_DEVICE
    assert cu.check("01.nbytes", 42).code == misconceptions.NOT_CALLABLE
    assert cu.check("01.nbytes", hangs, timeout=0.3).code == misconceptions.TIMEOUT
    passed = cu.check("01.nbytes", lambda t: t.numel() * t.element_size())
    assert passed.passed and passed.code == ""


def test_progress_lists_misconceptions_met_and_cleared(progress_file):
    store.record_result("03.to_device", "failed", 0, 1, "03.to-not-assigned")
    store.record_result("01.nbytes", "failed", 0, 1, "01.assumed-4-bytes")
    store.record_result("01.nbytes", "failed", 0, 1, misconceptions.RAISED)     # generic: not listed
    store.record_result("01.nbytes", "passed", 1, 1, "")
    shown = cu.progress()
    text = shown.text()
    assert re.search(r"open\s+03\.to-not-assigned", text) and re.search(r"cleared\s+01\.assumed-4-bytes", text)
    assert "any.raised" not in text
    assert "✔ done  ◐ tried  ○ not started" in text
    page = shown._repr_html_()
    assert "aria-label='exercise 01.nbytes: done'" in page and "aria-label='exercise 03.to_device: tried'" in page
    assert "aria-label='quiz 01.default_device: not started'" in page
    assert "href='03_to_device.ipynb#1.-Moving-a-tensor-with-.to'" in page and "still open" in page
    store.record_result("03.to_device", "passed", 1, 1, "")
    listed = store.summary().text().split("Misconceptions")[1].rpartition("(stored in ")[0]   # not the file's path
    assert "open" not in listed


@pytest.mark.parametrize("entry", [[1, 2], "passed", {"misconceptions": [1]}, {"misconceptions": {"01.counted-elements": 3}},
                                   {"misconceptions": {"01.counted-elements": {"times": "x"}}}])
def test_a_hand_edited_progress_entry_never_stops_a_check(progress_file, entry):
    """A learner may edit the progress file: whatever an exercise's entry became, recording goes on."""
    import json
    progress_file.write_text(json.dumps({"version": 1, "quizzes": {"01.default_device": entry},
                                         "exercises": {"01.nbytes": entry}}))
    assert "01 Tensors" in cu.progress().text()                     # shown as it is, before any check
    store.record_result("01.nbytes", "failed", 0, 1, "01.counted-elements")
    store.record_result("01.nbytes", "passed", 1, 1, "")
    store.record_quiz("01.default_device", True, 0)
    assert "cleared  01.counted-elements" in cu.progress().text()
