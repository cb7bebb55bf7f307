"""`python -m course_utils grade`: real notebooks, graded in real worker processes.

One batch (built from the committed notebook 01, plus one solved notebook per lesson) is graded
once, with small limits, and the tests read its CSV. A second small batch proves --jobs 1 and
--jobs 2 write byte-identical CSVs.
"""
from __future__ import annotations

import contextlib
import copy
import csv
import io
import json
import os
from pathlib import Path

import pytest

from course_utils import classroom
from course_utils.classroom import messages, submissions
from course_utils.__main__ import main
from course_utils.exercises import exercise_ids, get_exercise
from course_utils.notebook import cell_source, exercise_cells, with_solutions
from nbtools import NOTEBOOK_DIR, load

NB01 = load(NOTEBOOK_DIR / "01_tensors.ipynb")
SOL = {ex_id: get_exercise(ex_id).solution_source for ex_id in ("01.nbytes", "01.blank_like")}
LIMITS = ["--timeout", "12", "--cell-timeout", "3", "--check-timeout", "2", "--memory-mb", "640"]

HARD_HANG = ("import time\n"
             "while True:\n"
             "    try:\n"
             "        time.sleep(100)\n"
             "    except BaseException:  # swallows the cell's time limit\n"
             "        pass\n")


def lesson01(answers: dict[str, str | None], check_cell: str | None = None) -> dict:
    """Notebook 01 with these answer-cell sources (``None`` deletes the cell; absent: the stub)."""
    nb = copy.deepcopy(NB01)
    for ex_id, cell in exercise_cells(nb).items():
        if ex_id in answers and answers[ex_id] is None:
            nb["cells"].remove(cell)
        elif ex_id in answers:
            cell["source"] = answers[ex_id]
    if check_cell is not None:  # edit every check cell, and fake its saved output
        for cell in nb["cells"]:
            if cell["cell_type"] == "code" and cell_source(cell).startswith("cu.exercise("):
                cell["source"] = check_cell
                cell["outputs"] = [{"output_type": "stream", "name": "stdout",
                                    "text": ["✔ passed (1/1 points)\n"]}]
    return nb


def solved_lesson(lesson: str) -> dict:
    """A minimal notebook whose answer cells hold the reference solutions of ``lesson``."""
    cells = [{"cell_type": "code", "execution_count": None, "id": ex_id.replace(".", "-"), "outputs": [],
              "metadata": {"course": {"exercise": ex_id}}, "source": get_exercise(ex_id).solution_source}
             for ex_id in exercise_ids() if ex_id.startswith(lesson + ".")]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


NOTEBOOKS = {
    "subs/solved.ipynb": with_solutions(NB01),
    "subs/unsolved.ipynb": lesson01({}),
    "subs/mistakes.ipynb": lesson01({
        "01.nbytes": SOL["01.nbytes"],
        "01.blank_like": "def blank_like(t):\n    return torch.zeros(t.shape, dtype=t.dtype)\n"}),
    "subs/mistakes2.ipynb": lesson01({
        "01.nbytes": "def nbytes(t):\n    return t.numel()\n",
        "01.blank_like": "def blank_like(t):\n    return t * 0\n"}),
    "subs/missing_cell.ipynb": lesson01({"01.nbytes": SOL["01.nbytes"], "01.blank_like": None}),
    "subs/broken.ipynb": lesson01({
        "01.nbytes": "def nbytes(t)\n    return t.numel() * t.element_size()\n",
        "01.blank_like": SOL["01.blank_like"] + "print(blank_like(undefined_name))\n"}),
    "subs/honest_extras.ipynb": lesson01({
        "01.nbytes": ("import warnings\ntorch.manual_seed(0)\ntorch.set_default_device('meta')\n"
                      "torch.set_default_device('cpu')\nwarnings.warn('just a warning')\n"
                      + SOL["01.nbytes"] + "%timeit nbytes(torch.ones(3))\n"
                      "print(cu.check('01.nbytes', nbytes))\ndisplay(nbytes)\n"),
        "01.blank_like": ("class Tiny(nn.Module):\n    def forward(self, x):\n        return F.relu(x)\n"
                          "Tiny()(torch.ones(2))\n" + SOL["01.blank_like"])}),
    # tampering: the answers are stubs, the rest tries to make them pass anyway
    "subs/tamper_check.ipynb": lesson01({"01.nbytes": (
        "import course_utils\nfrom course_utils import Result\n"
        "course_utils.check = lambda ex_id, answer: Result(ex_id, '', 'passed', 1, 1, 'ok')\n")}),
    "subs/tamper_exercises_check.ipynb": lesson01({"01.nbytes": (
        "import course_utils.exercises\ncourse_utils.exercises.check = lambda *a, **k: None\n")}),
    "subs/tamper_registry.ipynb": lesson01({"01.nbytes": (
        "import dataclasses\nreg = course_utils.exercises._REGISTRY\n"
        "reg['01.nbytes'] = dataclasses.replace(reg['01.nbytes'], grade=lambda answer: 'ok')\n")}),
    "subs/tamper_torch_equal.ipynb": lesson01({"01.blank_like": (
        "torch.equal = lambda a, b: True\ndef blank_like(t):\n    return t\n")}),
    "subs/tamper_during_check.ipynb": lesson01({"01.nbytes": (
        "def nbytes(t):\n    cu.grading.Wrong = KeyboardInterrupt  # a wrong answer would now crash the check\n"
        "    return 0\n")}),
    "subs/edited_check_cells.ipynb": lesson01(
        {}, check_cell="print('✔ 01.nbytes How many bytes?: passed (1/1 points)')\n"),
    "subs/prints_passed.ipynb": lesson01({"01.nbytes": (
        "import sys\nprint('✔ 01.nbytes How many bytes?: passed (1/1 points)')\n"
        "print('passed (1/1 points)', file=sys.stderr)\n"
        "def nbytes(t):\n    raise NotImplementedError\n")}),
    "subs/forges_results.ipynb": lesson01({"01.nbytes": (  # unsigned "passed" lines on every descriptor
        "import json, os\n"
        "fake = '0' * 64 + ' ' + json.dumps({'t': 'result', 'exercise': '01.nbytes', 'status': 'passed'})\n"
        "for fd in range(3, 256):\n"
        "    try:\n"
        "        os.write(fd, b'garbage\\n' + fake.encode() + b'\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "def nbytes(t):\n    raise NotImplementedError\n")}),
    # garbage (no line end) on every descriptor, then tampering, during the check: the report survives
    "subs/garbles_then_tampers.ipynb": lesson01({"01.nbytes": (
        "import os\n"
        "def nbytes(t):\n"
        "    for fd in range(3, 256):\n"
        "        try:\n"
        "            os.write(fd, b'garbage without a line end')\n"
        "        except OSError:\n"
        "            pass\n"
        "    cu.check = lambda *a, **k: None\n"
        "    return t.numel() * t.element_size()\n")}),
    # every descriptor pointed at /dev/null, then tampering: no report can arrive, the exit code says it
    "subs/silences_then_tampers.ipynb": lesson01({"01.nbytes": (
        "import os\n"
        "def nbytes(t):\n"
        "    null = os.open(os.devnull, os.O_WRONLY)\n"
        "    for fd in range(3, 256):\n"
        "        if fd != null:\n"
        "            try:\n"
        "                os.dup2(null, fd)\n"
        "            except OSError:\n"
        "                pass\n"
        "    cu.check = lambda *a, **k: None\n"
        "    return t.numel() * t.element_size()\n")}),
    "subs/uses_reference.ipynb": lesson01({
        "01.nbytes": "from course_utils.lessons.l01_tensors import nbytes\n",
        "01.blank_like": ("import importlib\n"  # a module name the static scan cannot see
                          "m = importlib.import_module('course_utils.lesso' + 'ns.l01_tensors')\n"
                          "blank_like = m.blank_like\n")}),
    "subs/reads_frames.ipynb": lesson01({"01.nbytes": (
        "import sys\ndef nbytes(t):\n    return sys._getframe(2).f_locals['want']\n")}),
    # hangs, crashes and memory bombs: each costs only its own exercise
    "subs/late/hang_cell.ipynb": lesson01({"01.nbytes": SOL["01.nbytes"] + "while True:\n    pass\n",
                                           "01.blank_like": SOL["01.blank_like"]}),
    "subs/late/hang_function.ipynb": lesson01({
        "01.nbytes": SOL["01.nbytes"], "01.blank_like": "def blank_like(t):\n    while True:\n        pass\n"}),
    "subs/late/hang_hard.ipynb": lesson01({"01.nbytes": HARD_HANG, "01.blank_like": SOL["01.blank_like"]}),
    "subs/late/crash_exit.ipynb": lesson01({"01.nbytes": "import os\nos._exit(1)\n",
                                            "01.blank_like": SOL["01.blank_like"]}),
    "subs/late/crash_kill.ipynb": lesson01({
        "01.nbytes": SOL["01.nbytes"],
        "01.blank_like": "import os, signal\ndef blank_like(t):\n    os.kill(os.getpid(), signal.SIGKILL)\n"}),
    "subs/late/crash_segfault.ipynb": lesson01({"01.nbytes": SOL["01.nbytes"],
                                                "01.blank_like": "import ctypes\nctypes.string_at(0)\n"}),
    "subs/late/memory_cell.ipynb": lesson01({
        "01.nbytes": SOL["01.nbytes"] + "big = torch.empty(50 * 2**30, dtype=torch.uint8)\n",
        "01.blank_like": SOL["01.blank_like"]}),
    "subs/late/memory_growth.ipynb": lesson01({
        "01.nbytes": "def nbytes(t):\n    return torch.ones(2**31, dtype=torch.uint8).numel()  # 2 GB\n",
        "01.blank_like": "chunks = []\nwhile True:\n    chunks.append(' ' * 2**26)\n"}),
    # a checkpoint copy must be ignored; a second solved.ipynb tests Gradescope folder names
    "subs/.ipynb_checkpoints/solved-checkpoint.ipynb": lesson01({}),
    "subs/late/solved.ipynb": lesson01(SOL),
}
NOTEBOOKS.update({f"lessons/{lesson}_solved.ipynb": solved_lesson(lesson)
                  for lesson in sorted({get_exercise(e).lesson for e in exercise_ids()})})


def write(root: Path, files: dict[str, dict | str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else json.dumps(content, indent=1)
        path.write_text(text, encoding="utf-8")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["grade", *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Grade every notebook above (two folders, two files) once, with --jobs 2."""
    root = tmp_path_factory.mktemp("grade")
    write(root, NOTEBOOKS)
    write(root, {"01_corrupt.ipynb": '{"cells": [', "not_a_notebook.ipynb": json.dumps([1, 2, 3])})
    cwd = os.getcwd()
    os.chdir(root)  # submissions are named by the paths given, relative here
    try:
        code, out, err = run_cli("subs", "lessons", "01_corrupt.ipynb", "not_a_notebook.ipynb",
                                 "--out", "grades.csv", "--jobs", "2", "--gradescope", "gs", *LIMITS)
    finally:
        os.chdir(cwd)
    text = (root / "grades.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    return {"code": code, "out": out, "err": err, "root": root, "text": text,
            "rows": {(r["submission"], r["exercise"]): r for r in rows}}


def row(batch, submission: str, exercise: str) -> dict:
    return batch["rows"][(submission, exercise)]


def scores(batch, submission: str) -> dict[str, int]:
    return {ex: int(r["points"]) for (sub, ex), r in batch["rows"].items() if sub == submission}


def test_the_batch_runs_and_writes_one_row_per_exercise_plus_a_total(batch):
    assert batch["code"] == 0, batch["err"]
    lines = batch["text"].splitlines()
    assert lines[0] == ",".join(classroom.CSV_HEADER)
    submissions = {sub for sub, _ in batch["rows"]}
    assert len(submissions) == len(NOTEBOOKS) - 1 + 2  # checkpoint copy ignored; two broken files
    assert not any("ipynb_checkpoints" in s for s in submissions)
    for sub in submissions:
        rows = [r for (s, _), r in batch["rows"].items() if s == sub]
        total = row(batch, sub, "TOTAL")
        exercise_rows = [r for r in rows if r["exercise"] != "TOTAL"]
        assert int(total["points"]) == sum(int(r["points"]) for r in exercise_rows)
        assert int(total["max_points"]) == sum(int(r["max_points"]) for r in exercise_rows)
    keys = [(r.split(",")[0], r.split(",")[1]) for r in lines[1:]]
    assert keys == sorted(keys, key=lambda k: (k[0], k[1] == "TOTAL", k[1]))  # deterministic order
    assert " at 0x" not in batch["text"]


def test_summary_table_and_progress(batch):
    assert "Submission" in batch["out"] and "subs/solved.ipynb" in batch["out"]
    assert f"{len(NOTEBOOKS) + 1} submission(s) graded" in batch["out"]
    assert f"graded {len(NOTEBOOKS) + 1}/{len(NOTEBOOKS) + 1} submissions" in batch["err"]


def test_solved_notebook_gets_all_points(batch):
    assert scores(batch, "subs/solved.ipynb") == {"01.blank_like": 1, "01.nbytes": 1, "TOTAL": 2}
    assert row(batch, "subs/solved.ipynb", "TOTAL")["passed"] == "true"


@pytest.mark.parametrize("lesson", sorted({get_exercise(e).lesson for e in exercise_ids()}))
def test_every_lessons_reference_solutions_pass_without_false_alarms(batch, lesson):
    sub = f"lessons/{lesson}_solved.ipynb"
    total = row(batch, sub, "TOTAL")
    assert total["points"] == total["max_points"] != "0", [r for (s, _), r in batch["rows"].items() if s == sub]


def test_honest_extras_are_not_tampering(batch):
    """Seeds, default-device switches, warnings, magics, display(), nn.Module and self-checks are fine."""
    sub = "subs/honest_extras.ipynb"
    assert scores(batch, sub)["TOTAL"] == 2, (row(batch, sub, "01.nbytes"), row(batch, sub, "01.blank_like"))


def test_unsolved_notebook_is_not_attempted(batch):
    for ex_id in ("01.nbytes", "01.blank_like"):
        r = row(batch, "subs/unsolved.ipynb", ex_id)
        assert r["points"] == "0" and r["passed"] == "false" and "Not attempted" in r["feedback"]


def test_common_mistakes_get_the_checks_feedback(batch):
    assert scores(batch, "subs/mistakes.ipynb") == {"01.blank_like": 0, "01.nbytes": 1, "TOTAL": 1}
    assert "your zeros are on `cpu`" in row(batch, "subs/mistakes.ipynb", "01.blank_like")["feedback"]
    assert "number of elements" in row(batch, "subs/mistakes2.ipynb", "01.nbytes")["feedback"]
    assert "has dtype torch.int64" in row(batch, "subs/mistakes2.ipynb", "01.blank_like")["feedback"]
    assert scores(batch, "subs/mistakes2.ipynb")["TOTAL"] == 0


def test_missing_answer_cell(batch):
    assert scores(batch, "subs/missing_cell.ipynb") == {"01.blank_like": 0, "01.nbytes": 1, "TOTAL": 1}
    assert "answer cell missing" in row(batch, "subs/missing_cell.ipynb", "01.blank_like")["feedback"].lower()


def test_errors_in_answer_cells(batch):
    nbytes = row(batch, "subs/broken.ipynb", "01.nbytes")
    assert nbytes["points"] == "0" and "syntax error on line 1" in nbytes["feedback"]
    blank = row(batch, "subs/broken.ipynb", "01.blank_like")  # defined before the error: still checked
    assert blank["points"] == "1" and "raised NameError on line 4" in blank["feedback"]


@pytest.mark.parametrize("submission, changed", [
    ("subs/tamper_check.ipynb", "course_utils.check (in the answer cell of 01.nbytes)"),
    ("subs/tamper_exercises_check.ipynb", "course_utils.exercises.check"),
    ("subs/tamper_registry.ipynb", "exercise 01.nbytes"),
    ("subs/tamper_torch_equal.ipynb", "torch.equal"),
    ("subs/tamper_during_check.ipynb", "course_utils.grading.Wrong (while 01.nbytes was being checked)"),
    ("subs/garbles_then_tampers.ipynb", "course_utils.check (while 01.nbytes was being checked)"),
])
def test_tampering_earns_nothing_and_says_what_changed(batch, submission, changed):
    assert scores(batch, submission) == {"01.blank_like": 0, "01.nbytes": 0, "TOTAL": 0}
    for ex_id in ("01.nbytes", "01.blank_like", "TOTAL"):
        assert f"changes {changed}" in row(batch, submission, ex_id)["feedback"]


def test_tampering_whose_report_cannot_arrive_still_costs_the_whole_submission(batch):
    sub = "subs/silences_then_tampers.ipynb"
    assert scores(batch, sub) == {"01.blank_like": 0, "01.nbytes": 0, "TOTAL": 0}
    assert "changes what the grader relies on" in row(batch, sub, "TOTAL")["feedback"]


@pytest.mark.parametrize("submission", ["subs/edited_check_cells.ipynb", "subs/prints_passed.ipynb",
                                        "subs/forges_results.ipynb"])
def test_claims_of_passing_are_ignored(batch, submission):
    assert scores(batch, submission)["TOTAL"] == 0
    assert "Not attempted" in row(batch, submission, "01.nbytes")["feedback"]


def test_the_reference_solution_is_not_an_answer(batch):
    sub = "subs/uses_reference.ipynb"  # imported by name, and by a name the source does not show
    assert scores(batch, sub)["TOTAL"] == 0
    assert "is a course reference solution" in row(batch, sub, "01.nbytes")["feedback"]
    assert "is a course reference solution" in row(batch, sub, "01.blank_like")["feedback"]
    assert "uses `sys._getframe(2).f_locals`" in row(batch, "subs/reads_frames.ipynb", "01.nbytes")["feedback"]


def test_hangs_score_zero_with_a_timeout_reason(batch):
    cell, function = "subs/late/hang_cell.ipynb", "subs/late/hang_function.ipynb"
    assert "did not finish within 3 s" in row(batch, cell, "01.nbytes")["feedback"]
    assert "ran for more than 2 s" in row(batch, function, "01.blank_like")["feedback"]
    assert scores(batch, cell)["TOTAL"] == scores(batch, function)["TOTAL"] == 1
    hard = "subs/late/hang_hard.ipynb"  # swallows the cell limit: the process is killed, the rest regraded
    assert "ran well past its own time limit (3 s for a cell" in row(batch, hard, "01.nbytes")["feedback"]
    assert scores(batch, hard) == {"01.blank_like": 1, "01.nbytes": 0, "TOTAL": 1}


def test_crashes_cost_only_their_own_exercise(batch):
    exit_ = "subs/late/crash_exit.ipynb"
    assert scores(batch, exit_) == {"01.blank_like": 1, "01.nbytes": 0, "TOTAL": 1}
    assert "ended the Python process (exit code 1)" in row(batch, exit_, "01.nbytes")["feedback"]
    kill = row(batch, "subs/late/crash_kill.ipynb", "01.blank_like")
    assert kill["points"] == "0" and "was being checked" in kill["feedback"] and "SIGKILL" in kill["feedback"]
    assert scores(batch, "subs/late/crash_kill.ipynb")["01.nbytes"] == 1
    assert "SIGSEGV" in row(batch, "subs/late/crash_segfault.ipynb", "01.blank_like")["feedback"]
    assert scores(batch, "subs/late/crash_segfault.ipynb")["01.nbytes"] == 1


def test_memory_bombs_get_a_clean_zero(batch):
    cell = "subs/late/memory_cell.ipynb"
    assert "ran out of memory (the limit is 640 MB)" in row(batch, cell, "01.nbytes")["feedback"]
    assert scores(batch, cell) == {"01.blank_like": 1, "01.nbytes": 0, "TOTAL": 1}
    growth = "subs/late/memory_growth.ipynb"
    assert "can't allocate memory" in row(batch, growth, "01.nbytes")["feedback"]  # 2 GB > the limit
    assert "ran out of memory" in row(batch, growth, "01.blank_like")["feedback"]


def test_files_that_are_not_notebooks(batch):
    corrupt = row(batch, "01_corrupt.ipynb", "TOTAL")
    assert corrupt["points"] == "0" and corrupt["max_points"] == "2" and "not valid JSON" in corrupt["feedback"]
    assert "not valid JSON" in row(batch, "01_corrupt.ipynb", "01.nbytes")["feedback"]
    other = row(batch, "not_a_notebook.ipynb", "TOTAL")
    assert other["max_points"] == "0" and "not a Jupyter notebook" in other["feedback"]


def test_gradescope_export(batch):
    gs = batch["root"] / "gs"
    results = json.loads((gs / "subs%2Fmistakes.ipynb" / "results.json").read_text(encoding="utf-8"))
    assert results["score"] == 1 and results["extra_data"] == {"submission": "subs/mistakes.ipynb"}
    assert [(t["number"], t["score"], t["max_score"], t["status"]) for t in results["tests"]] == [
        ("01.blank_like", 0, 1, "failed"), ("01.nbytes", 1, 1, "passed")]
    assert "your zeros are on" in results["tests"][0]["output"]
    for same_stem in ("subs%2Fsolved.ipynb", "subs%2Flate%2Fsolved.ipynb"):  # folders: the paths, encoded
        assert (gs / same_stem / "results.json").exists()


def test_jobs_1_and_2_write_byte_identical_csvs(tmp_path):
    write(tmp_path, {k: NOTEBOOKS[k] for k in ("subs/solved.ipynb", "subs/mistakes.ipynb",
                                               "subs/late/crash_exit.ipynb", "subs/tamper_check.ipynb")})
    write(tmp_path, {"subs/01_corrupt.ipynb": "not json"})
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"grades-{jobs}.csv"
        code, _, _ = run_cli(str(tmp_path / "subs"), "--out", str(out), "--jobs", jobs, *LIMITS)
        assert code == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\n") == 1 + 5 * 3


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["grade", str(tmp_path / "nope.ipynb")]) == 2
    assert main(["grade", str(tmp_path)]) == 2  # a folder without notebooks
    assert "No notebooks" in capsys.readouterr().err
    (tmp_path / "a.ipynb").write_text("{}")
    assert main(["grade", str(tmp_path), "--lesson", "99"]) == 2
    assert main(["grade", str(tmp_path), "--jobs", "0"]) == 2


def test_other_subcommands_still_work(capsys):
    assert main(["list"]) == 0
    assert "01.nbytes" in capsys.readouterr().out
    assert main(["hint", "01.nbytes"]) == 0


def test_forged_messages_are_rejected():
    key = b"k" * 32
    message = {"t": "result", "exercise": "01.nbytes", "status": "passed", "feedback": ""}
    assert messages.unsign(key, messages.sign(key, message)) == message
    assert messages.unsign(key, messages.sign(b"x" * 32, message)) is None
    assert messages.unsign(key, b"0" * 64 + b" " + json.dumps(message).encode()) is None


@pytest.mark.parametrize("code, found", [
    # the reference solutions are recognised by what an answer is and calls (tests/test_grade_worker.py)
    ("from course_utils.exercises import get_exercise\n", None),
    ("x = cu.exercises.get_exercise('01.nbytes').reference\n", None),
    ("import inspect\ndef f():\n    return inspect.stack()\n", "inspect.stack"),
    ("def nbytes(t):\n    return t.numel() * t.element_size()\n%timeit nbytes(x)\n", None),
    ("def f(x):\n    return torch.stack([x, x])\n", None),
])
def test_reaches_into_course(code, found):
    assert submissions.reaches_into_course(code) == found


def test_malformed_cells_are_reported_without_running_anything(tmp_path):
    nb = {"cells": [{"cell_type": "code", "metadata": {"course": {"exercise": "01.nbytes"}}, "source": [1, 2]}]}
    (tmp_path / "01_odd.ipynb").write_text(json.dumps(nb))
    graded = classroom.grade_notebook(str(tmp_path / "01_odd.ipynb"))
    assert graded.points == 0 and graded.max_points == 2 and "cells are malformed" in graded.note


def test_lesson_detection():
    cells = classroom.answer_cells(NB01)
    assert [c[1] for c in cells] == ["01.nbytes", "01.blank_like"]
    assert classroom.lesson_of("whatever.ipynb", cells) == "01"
    assert classroom.lesson_of("03_to_device.ipynb") == "03"
    assert classroom.lesson_of("alice.ipynb") is None
