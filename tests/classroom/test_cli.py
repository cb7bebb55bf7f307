"""``python -m course_utils grade`` (course_utils.classroom.cli): options, inputs and outputs are checked
before anything is graded, and no output ever overwrites an input; rows are written as submissions finish
and never lost; the CSV does not depend on --jobs; a summary and a progress bar."""
from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils import classroom
from course_utils.__main__ import main
from course_utils.classroom import cli

from nbtools import ROOT

from .cases import (BATCH, FIND, L01, L01_POINTS, LIMITS, SHORT_LIMITS, Rows, grade_subprocess, linux_only, run_cli,
                    solved01, write)


def test_the_batch_runs_and_writes_one_row_per_exercise_plus_a_total(batch):
    assert batch.code == 0, batch.err
    lines = batch.text.splitlines()
    assert lines[0] == ",".join(classroom.CSV_HEADER)
    submissions = {sub for sub, _ in batch.rows}
    assert len(submissions) == len(BATCH) - 1 + 2  # checkpoint copy ignored; two broken files
    assert not any("ipynb_checkpoints" in s for s in submissions)
    for sub in submissions:
        rows = [r for (s, _), r in batch.rows.items() if s == sub]
        total = batch.rows[sub, "TOTAL"]
        exercise_rows = [r for r in rows if r["exercise"] != "TOTAL"]
        assert int(total["points"]) == sum(int(r["points"]) for r in exercise_rows)
        assert int(total["max_points"]) == sum(int(r["max_points"]) for r in exercise_rows)
    keys = [(r.split(",")[0], r.split(",")[1]) for r in lines[1:]]
    assert keys == sorted(keys, key=lambda k: (k[0], k[1] == "TOTAL", k[1]))  # deterministic order
    assert " at 0x" not in batch.text


def test_summary_table_and_progress(batch):
    assert "Submission" in batch.out and "subs/solved.ipynb" in batch.out
    assert f"{len(BATCH) + 1} submission(s) graded" in batch.out
    assert f"graded {len(BATCH) + 1}/{len(BATCH) + 1} submissions" in batch.err


def test_jobs_1_and_2_write_byte_identical_csvs(tmp_path):
    write(tmp_path, {k: BATCH[k] for k in ("subs/solved.ipynb", "subs/mistakes.ipynb",
                                           "subs/late/crash_exit.ipynb", "subs/tamper_check.ipynb")}, indent=1)
    write(tmp_path, {"subs/01_corrupt.ipynb": "not json"})
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"grades-{jobs}.csv"
        code, _, _ = run_cli(str(tmp_path / "subs"), "--out", str(out), "--jobs", jobs, *SHORT_LIMITS)
        assert code == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\n") == 1 + 5 * 3


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["grade", str(tmp_path / "nope.ipynb")]) == 2
    assert main(["grade", str(tmp_path)]) == 2  # a folder without notebooks
    assert "No files found" in capsys.readouterr().err
    (tmp_path / "a.ipynb").write_text("{}")
    assert main(["grade", str(tmp_path), "--lesson", "99"]) == 2
    assert main(["grade", str(tmp_path), "--jobs", "0"]) == 2


def test_other_subcommands_still_work(capsys):
    assert main(["list"]) == 0
    assert "01.nbytes" in capsys.readouterr().out
    assert main(["hint", "01.nbytes"]) == 0


# --- options are checked before anything is graded -----------------------------------------------

@linux_only
@pytest.mark.parametrize("options, message", [
    (["--timeout", "inf"], "--timeout must be"),
    (["--timeout", "nan"], "--timeout must be"),
    (["--check-timeout", "inf"], "--check-timeout must be"),
    (["--cell-timeout", "0"], "--cell-timeout must be"),
    (["--timeout", "-5"], "--timeout must be"),
    (["--memory-mb", "0"], "--memory-mb must be"),
    (["--jobs", "-1"], "--jobs must be"),
    (["--out", "{tmp}"], "Cannot write --out"),
    (["--out", "{tmp}/a_file/grades.csv"], "Cannot write --out"),
    (["--gradescope", "{tmp}/a_file"], "Cannot write Gradescope results"),
    (["--gradescope", "{tmp}/a_file/gs"], "Cannot write Gradescope results"),
])
def test_bad_options_exit_2_before_grading(tmp_path, monkeypatch, options, message):
    write(tmp_path, {"01_x.ipynb": solved01(), "a_file": "not a folder"})

    def must_not_run(*args, **kwargs):
        raise AssertionError("grading started")

    monkeypatch.setattr(cli, "grade_all", must_not_run)
    options = [o.format(tmp=tmp_path) for o in options]
    if "--out" not in options:
        options += ["--out", str(tmp_path / "grades.csv")]
    code, _, err = run_cli(str(tmp_path / "01_x.ipynb"), *options)
    assert code == 2 and message in err, err


# --- no output ever overwrites an input ---------------------------------------------------------

def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@linux_only
@pytest.mark.parametrize("graded, options", [
    (["subs"], ["--out", "subs/alice_01.ipynb"]),                 # a submission by name
    (["subs"], ["--out", "subs/bob/notes.txt"]),                  # any file inside a folder being graded
    (["subs"], ["--out", "subs/new_grades.csv"]),                 # ... even a new one
    (["subs"], ["--out", "subs"]),
    (["subs/alice_01.ipynb"], ["--out", "subs/alice_01.ipynb"]),  # a notebook given by name
    (["subs/alice_01.ipynb"], ["--out", "./subs/../subs/alice_01.ipynb"]),
    (["subs/alice_01.ipynb"], ["--out", "link.csv"]),             # a symbolic link to it
    (["subs/alice_01.ipynb"], ["--out", "hard.csv"]),             # a hard link to it
    (["subs/bob"], ["--out", "linked_subs/bob/notes.txt"]),       # the folder reached through a link
    (["subs"], ["--gradescope", "subs/gs"]),
    (["subs/bob"], ["--gradescope", "subs/bob"]),
])
def test_an_output_that_names_an_input_is_refused_before_anything_is_written(tmp_path, monkeypatch, graded,
                                                                            options):
    write(tmp_path / "subs", {"alice_01.ipynb": solved01(), "bob/bob_01.ipynb": solved01(), "bob/notes.txt": "mine"})
    (tmp_path / "link.csv").symlink_to(tmp_path / "subs" / "alice_01.ipynb")
    os.link(tmp_path / "subs" / "alice_01.ipynb", tmp_path / "hard.csv")
    (tmp_path / "linked_subs").symlink_to(tmp_path / "subs")
    before = _snapshot(tmp_path)

    def must_not_run(*args, **kwargs):
        raise AssertionError("grading started")

    monkeypatch.setattr(cli, "grade_all", must_not_run)
    monkeypatch.chdir(tmp_path)
    if "--out" not in options:
        options = options + ["--out", "grades.csv"]
    code, out, err = run_cli(*graded, *options)
    assert code == 2, err
    assert "Nothing was written" in err and ("being graded" in err), err
    assert _snapshot(tmp_path) == before and not list(tmp_path.glob("*.partial"))


@linux_only
def test_outputs_beside_the_inputs_are_fine_and_replace_an_old_csv_atomically(tmp_path, monkeypatch):
    write(tmp_path / "subs", {"alice_01.ipynb": solved01()})
    old = tmp_path / "grades.csv"
    old.write_text("yesterday\n")
    old.chmod(0o640)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("subs", "--out", "grades.csv", "--gradescope", "gs", *LIMITS)
    assert code == 0, err
    assert Rows.read(old).points("subs/alice_01.ipynb")["TOTAL"] == L01_POINTS
    assert old.stat().st_mode & 0o777 == 0o640                     # the old file's permissions kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv", "gs", "subs"]  # no leftovers


# --- rows are never lost ------------------------------------------------------------------------------

@linux_only
def test_killing_the_grader_keeps_the_rows_already_graded_and_the_old_csv(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "grades.csv"
    write(subs, {"a_solved.ipynb": solved01(), "b_kills_the_grader.ipynb": solved01(
        FIND + "os.kill(grader(), signal.SIGKILL)\n"), "c_solved.ipynb": solved01()})
    out.write_text("yesterday's grades\n")
    done = grade_subprocess(subs, ".", "--out", str(out), "--jobs", "1", *LIMITS, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert out.read_text() == "yesterday's grades\n"  # replaced only by a finished batch
    [partial] = tmp_path.glob("grades.csv.*.partial")
    rows = Rows.read(partial)
    assert rows.has_rows_of("a_solved.ipynb", L01) and rows.points("a_solved.ipynb")["TOTAL"] == L01_POINTS


@linux_only
def test_a_failed_batch_leaves_the_old_csv_and_no_partial_file(tmp_path, monkeypatch):
    write(tmp_path / "subs", {"alice_01.ipynb": solved01()})
    (tmp_path / "grades.csv").write_text("yesterday\n")

    def fails(*args, **kwargs):
        raise MemoryError("the grader itself failed")

    monkeypatch.setattr(cli, "grade_all", fails)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MemoryError):
        run_cli("subs", "--out", "grades.csv", *LIMITS)
    assert (tmp_path / "grades.csv").read_text() == "yesterday\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv", "subs"]


@linux_only
def test_the_csv_can_go_to_a_pipe(tmp_path):
    write(tmp_path / "subs", {"alice_01.ipynb": solved01()})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "course_utils", "grade", "subs", "--out", "/dev/stdout", *LIMITS],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    csv_text = done.stdout[:done.stdout.index("\nSubmission")]  # the summary table follows the CSV
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert {r["exercise"] for r in rows} == set(L01) | {"TOTAL"}


def test_a_lesson_may_be_typed_without_its_leading_zero():
    import argparse
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert parser.parse_args(["subs", "--lesson", "1"]).lesson == "01"
    assert parser.parse_args(["subs", "--lesson", "1,02"]).lesson == "01,02"
    assert parser.parse_args(["subs", "--lesson", "03"]).lesson == "03"
