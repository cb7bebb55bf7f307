"""`python -m course_utils grade` as a batch you can trust (issue 12).

Every submission gets its rows, whatever is in it; nothing a submission does stops the batch, outlives
it, or uses more memory than the limit by forking; rows are never lost or mixed up; options are checked
before anything is graded; the CSV is safe to open in a spreadsheet. Submissions are small notebooks
built in temporary folders. There are no timing asserts: the tests that need a process to hold memory
or to stay alive let it sleep, and wait for events, not for durations.
"""
from __future__ import annotations

import contextlib
import copy
import csv
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

import pytest

from course_utils import classroom
from course_utils.classroom import cli, grader, runs, submissions
from course_utils.__main__ import main
from course_utils.exercises import exercise_ids, get_exercise
from course_utils.notebook import exercise_cells, with_solutions
from nbtools import NOTEBOOK_DIR, ROOT, load

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux (/proc, prctl)")

NB01 = load(NOTEBOOK_DIR / "01_tensors.ipynb")
L01 = [e for e in exercise_ids() if get_exercise(e).lesson == "01"]
SOL = {ex_id: get_exercise(ex_id).solution_source for ex_id in L01}
NBYTES, OTHER = "01.nbytes", next(e for e in L01 if e != "01.nbytes")
LIMITS = ["--timeout", "20", "--cell-timeout", "10", "--check-timeout", "5", "--memory-mb", "640"]
SMALL = classroom.Limits(timeout=20, cell_timeout=10, check_timeout=5, memory_mb=640)

# Learner code that finds the grading processes above it, as a determined learner would.
FIND = ("import os, signal\n"
        "def ancestors():\n"
        "    pid = os.getpid()\n"
        "    while pid > 1:\n"
        "        with open(f'/proc/{pid}/status') as f:\n"
        "            pid = int(next(l for l in f if l.startswith('PPid:')).split()[1])\n"
        "        yield pid\n"
        "def cmdline(pid):\n"
        "    with open(f'/proc/{pid}/cmdline', 'rb') as f:\n"
        "        return f.read()\n"
        "def server():  # the topmost process running the fork server's code\n"
        "    return [p for p in ancestors() if b'classroom.worker import serve' in cmdline(p)][-1]\n"
        "def grader():\n"
        "    return next(p for p in ancestors() if b'-m\\x00course_utils\\x00grade' in cmdline(p))\n")


def lesson01(answers: dict[str, str]) -> dict:
    """Notebook 01 with these answer-cell sources (others keep their stubs)."""
    nb = copy.deepcopy(NB01)
    for ex_id, cell in exercise_cells(nb).items():
        if ex_id in answers:
            cell["source"] = answers[ex_id]
    return nb


def solved(first: str = "") -> dict:
    """Notebook 01, solved, with ``first`` run at the start of the 01.nbytes answer cell."""
    return lesson01({**SOL, NBYTES: first + SOL[NBYTES]})


def write(root: Path, files: dict[str, dict | str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["grade", *argv])
    return code, out.getvalue(), err.getvalue()


def read_rows(path: Path) -> dict[tuple[str, str], dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return {(r["submission"], r["exercise"]): r for r in csv.DictReader(f)}


def points(rows: dict, submission: str) -> dict[str, int]:
    return {ex: int(r["points"]) for (sub, ex), r in rows.items() if sub == submission}


def full_rows(rows: dict, submission: str) -> bool:
    """The submission has one row per lesson-01 exercise, and its TOTAL."""
    return sorted(ex for sub, ex in rows if sub == submission) == sorted(L01 + ["TOTAL"])


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` has ended (or is a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


# --- unparseable input never loses a row -------------------------------------------------------

BIG_OUTPUT = {"output_type": "stream", "name": "stdout", "text": ["x" * (110 * 2**20)]}


@pytest.fixture(scope="module")
def odd_batch(tmp_path_factory):
    """One batch of submissions that are hard to read, graded once."""
    root = tmp_path_factory.mktemp("odd")
    renamed = with_solutions(NB01)
    for cell in renamed["cells"]:  # a notebook re-created without the answer cells' metadata
        cell.get("metadata", {}).pop("course", None)
    huge = with_solutions(NB01)
    next(c for c in huge["cells"] if c["cell_type"] == "code")["outputs"] = [BIG_OUTPUT]
    write(root, {
        "surrogate.ipynb": json.dumps(solved("# a comment with a lone surrogate: \ud800\n")),
        "deep_expression.ipynb": solved("x = " + "-" * 100_000 + "1\n"),
        "null_byte.ipynb": solved("x = 1  # \x00\n"),
        "too_long.ipynb": solved("x = 1\n" * (submissions.MAX_ANSWER_CHARS // 6 + 1)),
        "01_deep.ipynb": "[" * 100_000 + "]" * 100_000,
        "renamed.ipynb": renamed,
        "no_clue.ipynb": "this is not a notebook",
        "huge_output.ipynb": huge,
        "bom.ipynb": b"\xef\xbb\xbf" + json.dumps(solved()).encode(),
        "latin1.ipynb": json.dumps(solved("# caf\u00e9\n"), ensure_ascii=False).encode("latin-1"),
        "solved.ipynb": solved(),
        # a link to another student's file is another submission, under its own name
        "zz_link_to_solved.ipynb": "placeholder",
    })
    (root / "zz_link_to_solved.ipynb").unlink()
    (root / "zz_link_to_solved.ipynb").symlink_to(root / "solved.ipynb")
    cwd = os.getcwd()
    os.chdir(root)
    try:
        code, out, err = run_cli(".", "--out", f"../{root.name}.csv", *LIMITS)  # never inside what is graded
    finally:
        os.chdir(cwd)
    (root / "huge_output.ipynb").unlink()
    return {"code": code, "out": out, "err": err, "rows": read_rows(root.parent / f"{root.name}.csv")}


def test_every_submission_gets_a_row_per_exercise_and_a_total(odd_batch):
    assert odd_batch["code"] == 0, odd_batch["err"]
    submissions = {sub for sub, _ in odd_batch["rows"]}
    assert len(submissions) == 12
    for sub in submissions:
        assert full_rows(odd_batch["rows"], sub), (sub, points(odd_batch["rows"], sub))


def test_a_lone_surrogate_in_a_comment_is_harmless(odd_batch):
    assert points(odd_batch["rows"], "surrogate.ipynb")["TOTAL"] == len(L01)


@pytest.mark.parametrize("submission, reason", [
    ("deep_expression.ipynb", "nested too deeply for Python to read"),
    ("null_byte.ipynb", "null bytes"),  # a SyntaxError or a ValueError, depending on the Python version
    ("too_long.ipynb", "too long to grade"),
])
def test_an_answer_python_cannot_read_costs_only_its_exercise(odd_batch, submission, reason):
    rows = odd_batch["rows"]
    assert reason in rows[(submission, NBYTES)]["feedback"]
    assert points(rows, submission) == {NBYTES: 0, OTHER: 1, "TOTAL": len(L01) - 1}


def test_deeply_nested_json_is_not_a_notebook_but_has_its_rows(odd_batch):
    rows = odd_batch["rows"]
    assert "nested too deeply" in rows[("01_deep.ipynb", NBYTES)]["feedback"]
    assert rows[("01_deep.ipynb", "TOTAL")]["max_points"] == str(len(L01))


def test_a_notebook_whose_answer_cells_lost_their_metadata_is_graded_in_full(odd_batch):
    rows = odd_batch["rows"]  # the lesson from its check cells, cu.exercise("01..."); the answers by name
    assert rows[("renamed.ipynb", "TOTAL")]["max_points"] == rows[("renamed.ipynb", "TOTAL")]["points"] == str(len(L01))
    assert "of the learner's own" in odd_batch["out"]  # the summary's Notes say which cells were run


def test_a_file_with_no_lesson_at_all_takes_the_batchs_lesson(odd_batch):
    rows = odd_batch["rows"]
    assert "not valid JSON" in rows[("no_clue.ipynb", NBYTES)]["feedback"]
    total = rows[("no_clue.ipynb", "TOTAL")]
    assert "Graded as lesson 01, the lesson of every other submission" in total["feedback"]


def test_outputs_do_not_count_towards_the_size_limit(odd_batch):
    assert points(odd_batch["rows"], "huge_output.ipynb")["TOTAL"] == len(L01)


@pytest.mark.parametrize("submission", ["bom.ipynb", "latin1.ipynb"])
def test_odd_encodings_are_read(odd_batch, submission):
    assert points(odd_batch["rows"], submission)["TOTAL"] == len(L01)


def test_a_link_is_its_own_submission(odd_batch):
    rows = odd_batch["rows"]
    assert points(rows, "solved.ipynb")["TOTAL"] == points(rows, "zz_link_to_solved.ipynb")["TOTAL"] == len(L01)
    assert "same file as solved.ipynb" in odd_batch["out"]  # the summary table says so


def test_a_fifo_is_not_read(tmp_path):
    fifo = tmp_path / "01_fifo.ipynb"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            classroom.read_notebook(str(fifo))
            outcome.append(None)
        except BaseException as e:
            outcome.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # it blocked, waiting for a writer: let it go, and fail
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert isinstance(outcome[0], classroom.InvalidSubmission) and "not a regular file" in str(outcome[0])


def test_a_grader_error_still_gives_the_lessons_rows(tmp_path, monkeypatch):
    write(tmp_path, {"01_x.ipynb": solved()})

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(grader, "grade_notebook", broken)
    [graded] = classroom.grade_all([str(tmp_path / "01_x.ipynb")], SMALL)
    assert [r.exercise for r in graded.rows] == L01 and "internal grader error" in graded.note


# --- a batch nothing can stop ------------------------------------------------------------------

def test_stopping_or_killing_the_workers_parents_does_not_stop_the_batch(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "STARTUP_LIMIT", 30.0)  # before the fix, each later student waited this long
    write(tmp_path, {
        "a1_stops_its_parent.ipynb": solved("import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n"),
        "a2_stops_the_server.ipynb": solved(FIND + "os.kill(server(), signal.SIGSTOP)\n"),
        "a3_kills_the_server.ipynb": solved(FIND + "os.kill(server(), signal.SIGKILL)\n"),
        "a4_kills_its_parent.ipynb": solved("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"),
        "b_solved.ipynb": solved(),
    })
    paths = sorted(str(p) for p in tmp_path.glob("*.ipynb"))
    grades = {Path(g.submission).name: g for g in classroom.grade_all(paths, SMALL, jobs=1)}
    killer = grades.pop("a4_kills_its_parent.ipynb")  # its own run's supervisor: the whole submission scores 0
    assert killer.points == 0 and "supervises this submission's run was killed" in killer.note, killer.rows
    for name, graded in grades.items():
        assert graded.points == graded.max_points == len(L01), (name, graded.rows, graded.note)


def _cli(tmp_path: Path, *argv: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "course_utils", "grade", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_killing_the_grader_keeps_the_rows_already_graded_and_the_old_csv(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "grades.csv"
    write(subs, {"a_solved.ipynb": solved(), "b_kills_the_grader.ipynb": solved(
        FIND + "os.kill(grader(), signal.SIGKILL)\n"), "c_solved.ipynb": solved()})
    out.write_text("yesterday's grades\n")
    done = _cli(subs, ".", "--out", str(out), "--jobs", "1", *LIMITS, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert out.read_text() == "yesterday's grades\n"  # replaced only by a finished batch
    [partial] = tmp_path.glob("grades.csv.*.partial")
    rows = read_rows(partial)
    assert full_rows(rows, "a_solved.ipynb") and points(rows, "a_solved.ipynb")["TOTAL"] == len(L01)


def test_stopping_the_grader_does_not_stop_the_batch(tmp_path):
    write(tmp_path, {"a_stops_the_grader.ipynb": solved(FIND + "os.kill(grader(), signal.SIGSTOP)\n"),
                     "b_solved.ipynb": solved()})
    done = _cli(tmp_path, ".", "--out", f"../{tmp_path.name}.csv", "--jobs", "1", *LIMITS, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = read_rows(tmp_path.parent / f"{tmp_path.name}.csv")
    assert points(rows, "a_stops_the_grader.ipynb")["TOTAL"] == points(rows, "b_solved.ipynb")["TOTAL"] == len(L01)


# --- learner processes do not outlive the batch ------------------------------------------------

DAEMON = ("import os, time\n"
          "r, w = os.pipe()\n"
          "if os.fork() == 0:\n"
          "    {detach}\n"
          "    if os.fork() == 0:\n"
          "        os.write(w, str(os.getpid()).encode())\n"
          "        time.sleep(120)\n"
          "        open({pidfile!r} + '.late', 'w').write('still running')\n"
          "        os._exit(0)\n"
          "    os._exit(0)\n"
          "os.close(w)\n"
          "open({pidfile!r}, 'w').write(os.read(r, 20).decode())\n")


def test_no_learner_process_survives_its_run(tmp_path):
    def daemon(name: str, detach: bool, then: str = "") -> dict:
        code = DAEMON.format(detach="os.setsid()" if detach else "pass", pidfile=str(tmp_path / f"{name}.pid"))
        return solved(code + then)

    write(tmp_path, {
        "subs/daemon_then_done.ipynb": daemon("done", detach=True),
        "subs/child_then_exit.ipynb": daemon("exit", detach=False, then="os._exit(1)\n"),
        "subs/daemon_then_hang.ipynb": daemon("hang", detach=True, then="import time\nwhile True:\n"
                                               "    try:\n        time.sleep(1)\n    except BaseException:\n"
                                               "        pass\n"),
    })
    pids = []
    try:
        classroom.grade_all(classroom.find_submissions([str(tmp_path / "subs")]), classroom.Limits(8, 3, 5, 640), jobs=3)
        pids = [int((tmp_path / f"{name}.pid").read_text()) for name in ("done", "exit", "hang")]
        assert all(gone(pid) for pid in pids), [(pid, gone(pid, 0)) for pid in pids]
    finally:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_temporary_folders_are_removed(tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    write(tmp_path, {
        "subs/solved.ipynb": solved(),
        "subs/leaves_files.ipynb": solved("import tempfile\ntempfile.mkdtemp()\ntempfile.mkstemp()\n"),
        "subs/crashes.ipynb": solved("import os\nos._exit(1)\n"),
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


FORK_HOG = ("import os, time\n"
            "children = []\n"
            "for _ in range(3):  # each under the per-process limit, together over it\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        block = b'\\x01' * (300 << 20)\n"
            "        time.sleep(6)\n"
            "        os._exit(0)\n"
            "    children.append(pid)\n"
            "for pid in children:\n"
            "    os.waitpid(pid, 0)\n")
# mmap's shared memory is outside RLIMIT_DATA: one process mapping more than the limit is stopped too, and a
# mapping that two processes both touch counts once (counting each one's private memory would miss both).
MMAP_HOG = ("import mmap, os, time\n"
            "size = 900 << 20\n"
            "m = mmap.mmap(-1, size)  # anonymous and shared\n"
            "child = {fork}\n"
            "for i in range(0, size, 4096):  # with a child, both touch every page: each is mapped twice\n"
            "    m[i] = 1\n"
            "time.sleep(8)\n"
            "if child == 0:\n"
            "    os._exit(0)\n")


@pytest.mark.parametrize("hog", [FORK_HOG, MMAP_HOG.format(fork="1"), MMAP_HOG.format(fork="os.fork()")],
                         ids=["forked private memory", "shared memory, one process", "shared memory, two"])
def test_memory_is_limited_for_all_the_processes_of_a_submission(tmp_path, hog):
    write(tmp_path, {"01_hog.ipynb": solved(hog)})
    [graded] = classroom.grade_all([str(tmp_path / "01_hog.ipynb")], classroom.Limits(40, 20, 5, 640))
    rows = {r.exercise: r for r in graded.rows}
    assert rows[NBYTES].points == 0, rows[NBYTES].feedback
    assert "used more than 640 MB of memory together with the processes it started" in rows[NBYTES].feedback
    assert rows[OTHER].points == 1  # graded again without the culprit


def test_the_time_limit_bounds_the_whole_submission(tmp_path, monkeypatch):
    """Cells that outlast the run's time limit (here longer than --cell-timeout allows it to stop them) are
    left out one rerun at a time, but all the reruns together get --timeout, not --timeout each."""
    hang = "import time\ntime.sleep(60)\n"
    nb = solved()
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


def test_a_fork_bomb_is_stopped(tmp_path):
    bomb = ("import os, time\n"
            f"for _ in range({runs.MAX_PROCESSES + 6}):  # a slow, bounded one: enough to count\n"
            "    if os.fork() == 0:\n"
            "        time.sleep(30)\n"
            "        os._exit(0)\n"
            "time.sleep(5)\n")
    write(tmp_path, {"01_bomb.ipynb": solved(bomb)})
    [graded] = classroom.grade_all([str(tmp_path / "01_bomb.ipynb")], classroom.Limits(40, 20, 5, 640))
    rows = {r.exercise: r for r in graded.rows}
    assert rows[NBYTES].points == 0
    assert f"started more than {runs.MAX_PROCESSES} processes" in rows[NBYTES].feedback
    assert rows[OTHER].points == 1


# --- rows are never lost or mixed ----------------------------------------------------------------

def test_each_path_given_is_its_own_submission(tmp_path):
    write(tmp_path, {"subs/alice.ipynb": solved()})
    (tmp_path / "subs" / "bob.ipynb").symlink_to(tmp_path / "subs" / "alice.ipynb")
    subs = str(tmp_path / "subs")
    found = classroom.find_submissions([subs, subs + "/alice.ipynb", subs + "/../subs/alice.ipynb"])
    assert found == sorted([subs + "/alice.ipynb", subs + "/bob.ipynb", subs + "/../subs/alice.ipynb"])


def _grade_of(submission: str, score: int) -> classroom.SubmissionGrade:
    rows = [classroom.Row(submission, ex_id, score, 1, bool(score), "feedback") for ex_id in L01]
    return classroom.SubmissionGrade(submission, rows)


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


# --- options are checked before anything is graded -----------------------------------------------

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
    write(tmp_path, {"01_x.ipynb": solved(), "a_file": "not a folder"})

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


@pytest.mark.parametrize("graded, options", [
    (["subs"], ["--out", "subs/alice_01.ipynb"]),                 # the case: a submission by name
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
    write(tmp_path / "subs", {"alice_01.ipynb": solved(), "bob/bob_01.ipynb": solved(), "bob/notes.txt": "mine"})
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


def test_outputs_beside_the_inputs_are_fine_and_replace_an_old_csv_atomically(tmp_path, monkeypatch):
    write(tmp_path / "subs", {"alice_01.ipynb": solved()})
    old = tmp_path / "grades.csv"
    old.write_text("yesterday\n")
    old.chmod(0o640)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("subs", "--out", "grades.csv", "--gradescope", "gs", *LIMITS)
    assert code == 0, err
    assert points(read_rows(old), "subs/alice_01.ipynb")["TOTAL"] == len(L01)
    assert old.stat().st_mode & 0o777 == 0o640                     # the old file's permissions kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv", "gs", "subs"]  # no leftovers


def test_a_failed_batch_leaves_the_old_csv_and_no_partial_file(tmp_path, monkeypatch):
    write(tmp_path / "subs", {"alice_01.ipynb": solved()})
    (tmp_path / "grades.csv").write_text("yesterday\n")

    def fails(*args, **kwargs):
        raise MemoryError("the grader itself failed")

    monkeypatch.setattr(cli, "grade_all", fails)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MemoryError):
        run_cli("subs", "--out", "grades.csv", *LIMITS)
    assert (tmp_path / "grades.csv").read_text() == "yesterday\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv", "subs"]


def test_the_csv_can_go_to_a_pipe(tmp_path):
    write(tmp_path / "subs", {"alice_01.ipynb": solved()})
    done = subprocess.run([sys.executable, "-m", "course_utils", "grade", "subs", "--out", "/dev/stdout", *LIMITS],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])))
    assert done.returncode == 0, done.stderr
    csv_text = done.stdout[:done.stdout.index("\nSubmission")]  # the summary table follows the CSV
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert {r["exercise"] for r in rows} == set(L01) | {"TOTAL"}


# --- the CSV is safe in a spreadsheet ----------------------------------------------------------

@pytest.mark.parametrize("name", ['=HYPERLINK("http://example.com","x").ipynb', "+1.ipynb", "-1.ipynb",
                                  "@SUM(A1).ipynb", "\tx.ipynb", "\rx.ipynb"])
def test_cells_that_look_like_formulas_are_escaped(name):
    out = io.StringIO()
    classroom.write_csv([_grade_of(name, 1)], out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert {row[0] for row in rows[1:]} == {"'" + name}


def test_a_formula_in_a_file_name_is_escaped_in_a_real_batch(tmp_path):
    name = '=HYPERLINK("evil.example","click me").ipynb'  # a file name: no slashes
    write(tmp_path, {name: solved()})
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code, _, err = run_cli(name, "--out", "grades.csv", *LIMITS)
    finally:
        os.chdir(cwd)
    assert code == 0, err
    text = (tmp_path / "grades.csv").read_text(encoding="utf-8")
    assert all(line.startswith("\"'=HYPERLINK(") for line in text.splitlines()[1:])
    assert points(read_rows(tmp_path / "grades.csv"), "'" + name)["TOTAL"] == len(L01)


def test_a_semicolon_field_is_quoted_and_the_summary_is_printable():
    out = io.StringIO()
    classroom.write_csv([_grade_of("a;=1+1.ipynb", 1)], out)
    assert out.getvalue().splitlines()[1].startswith('"a;=1+1.ipynb",')
    table = classroom.summary_table([_grade_of("\x1b[2Jx\udcff.ipynb", 1)])
    assert "\x1b" not in table and "\\x1b[2Jx\\udcff.ipynb" in table
