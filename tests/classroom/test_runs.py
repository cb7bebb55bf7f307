"""course_utils.classroom.sandbox.runs: a run that hangs, crashes or uses too much is stopped and costs only the
exercise it was at; tampering costs the whole submission even when its report cannot arrive; nothing a
submission does to the grading processes (stopping or killing them) stops the batch or leaves files behind.
There are no timing asserts: tests wait for events, not for durations."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from course_utils import classroom
from course_utils.classroom.sandbox import runs

from .cases import (FIND, L01_POINTS, LIMITS, NBYTES, OTHER, SMALL, Rows, grade_subprocess, linux_only, marks,
                    points_of, solved01, write)


def test_tampering_whose_report_cannot_arrive_still_costs_the_whole_submission(batch):
    sub = "subs/silences_then_tampers.ipynb"
    assert batch.rows.points(sub) == {"01.blank_like": 0, "01.nbytes": 0, "TOTAL": 0}
    assert "changes what the grader relies on" in batch.rows[sub, "TOTAL"]["feedback"]


def test_hangs_score_zero_with_a_timeout_reason(batch):
    cell, function = "subs/late/hang_cell.ipynb", "subs/late/hang_function.ipynb"
    assert "did not finish within 3 s" in batch.rows[cell, "01.nbytes"]["feedback"]
    assert "ran for more than 2 s" in batch.rows[function, "01.blank_like"]["feedback"]
    assert batch.rows.points(cell)["TOTAL"] == points_of("01.blank_like")  # the hanging 01.nbytes earns 0
    assert batch.rows.points(function)["TOTAL"] == points_of("01.nbytes")  # the hanging 01.blank_like earns 0
    hard = "subs/late/hang_hard.ipynb"  # swallows the cell limit: the process is killed, the rest regraded
    assert "ran well past its own time limit (3 s for a cell" in batch.rows[hard, "01.nbytes"]["feedback"]
    assert batch.rows.points(hard) == marks({"01.blank_like": True, "01.nbytes": False})


def test_crashes_cost_only_their_own_exercise(batch):
    exit_ = "subs/late/crash_exit.ipynb"
    assert batch.rows.points(exit_) == marks({"01.blank_like": True, "01.nbytes": False})
    assert "ended the Python process (exit code 1)" in batch.rows[exit_, "01.nbytes"]["feedback"]
    kill = batch.rows["subs/late/crash_kill.ipynb", "01.blank_like"]
    assert kill["points"] == "0" and "was being checked" in kill["feedback"] and "SIGKILL" in kill["feedback"]
    assert batch.rows.points("subs/late/crash_kill.ipynb")["01.nbytes"] == points_of("01.nbytes")
    assert "SIGSEGV" in batch.rows["subs/late/crash_segfault.ipynb", "01.blank_like"]["feedback"]
    assert batch.rows.points("subs/late/crash_segfault.ipynb")["01.nbytes"] == points_of("01.nbytes")


def test_memory_bombs_get_a_clean_zero(batch):
    cell = "subs/late/memory_cell.ipynb"
    assert "ran out of memory (the limit is 640 MB)" in batch.rows[cell, "01.nbytes"]["feedback"]
    assert batch.rows.points(cell) == marks({"01.blank_like": True, "01.nbytes": False})
    growth = "subs/late/memory_growth.ipynb"
    assert "can't allocate memory" in batch.rows[growth, "01.nbytes"]["feedback"]  # 2 GB > the limit
    assert "ran out of memory" in batch.rows[growth, "01.blank_like"]["feedback"]


@linux_only
def test_a_fork_bomb_is_stopped(tmp_path):
    bomb = ("import os, time\n"
            f"for _ in range({runs.MAX_PROCESSES + 6}):  # a slow, bounded one: enough to count\n"
            "    if os.fork() == 0:\n"
            "        time.sleep(30)\n"
            "        os._exit(0)\n"
            "time.sleep(5)\n")
    write(tmp_path, {"01_bomb.ipynb": solved01(bomb)})
    [graded] = classroom.grade_all([str(tmp_path / "01_bomb.ipynb")], classroom.Limits(40, 20, 5, 640))
    rows = {r.exercise: r for r in graded.rows}
    assert rows[NBYTES].points == 0
    assert f"started more than {runs.MAX_PROCESSES} processes" in rows[NBYTES].feedback
    assert rows[OTHER].points == points_of(OTHER)


# --- a batch nothing can stop ------------------------------------------------------------------

@linux_only
def test_stopping_or_killing_the_workers_parents_does_not_stop_the_batch(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "STARTUP_LIMIT", 30.0)  # before the fix, each later student waited this long
    write(tmp_path, {
        "a1_stops_its_parent.ipynb": solved01("import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n"),
        "a2_stops_the_server.ipynb": solved01(FIND + "os.kill(server(), signal.SIGSTOP)\n"),
        "a3_kills_the_server.ipynb": solved01(FIND + "os.kill(server(), signal.SIGKILL)\n"),
        "a4_kills_its_parent.ipynb": solved01("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"),
        "b_solved.ipynb": solved01(),
    })
    paths = sorted(str(p) for p in tmp_path.glob("*.ipynb"))
    grades = {Path(g.submission).name: g for g in classroom.grade_all(paths, SMALL, jobs=1)}
    killer = grades.pop("a4_kills_its_parent.ipynb")  # its own run's supervisor: the whole submission scores 0
    assert killer.points == 0 and "supervises this submission's run was killed" in killer.note, killer.rows
    for name, graded in grades.items():
        assert graded.points == graded.max_points == L01_POINTS, (name, graded.rows, graded.note)


@linux_only
def test_stopping_the_grader_does_not_stop_the_batch(tmp_path):
    write(tmp_path, {"a_stops_the_grader.ipynb": solved01(FIND + "os.kill(grader(), signal.SIGSTOP)\n"),
                     "b_solved.ipynb": solved01()})
    done = grade_subprocess(tmp_path, ".", "--out", f"../{tmp_path.name}.csv", "--jobs", "1", *LIMITS, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = Rows.read(tmp_path.parent / f"{tmp_path.name}.csv")
    assert rows.points("a_stops_the_grader.ipynb")["TOTAL"] == rows.points("b_solved.ipynb")["TOTAL"] == L01_POINTS


@linux_only
def test_temporary_folders_are_removed(tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    write(tmp_path, {
        "subs/solved.ipynb": solved01(),
        "subs/leaves_files.ipynb": solved01("import tempfile\ntempfile.mkdtemp()\ntempfile.mkstemp()\n"),
        "subs/crashes.ipynb": solved01("import os\nos._exit(1)\n"),
    })
    runs.stop_server()  # a server, and its workers, that use this TMPDIR
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    try:
        # what PyTorch itself leaves when the fork server starts (a compile cache; 2.7 also a tmp dir)
        classroom.grade_all([str(tmp_path / "subs/solved.ipynb")], SMALL)
        server_start = set(os.listdir(tmp))
        grades = classroom.grade_all(classroom.find_submissions([str(tmp_path / "subs")]), SMALL, jobs=2)
        assert len(grades) == 3
        assert set(os.listdir(tmp)) == server_start
    finally:
        runs.stop_server()
