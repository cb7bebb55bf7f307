"""The Gradescope autograder bundle, run as Gradescope runs it: unpacked into a root laid out like
/autograder (source/, submission/, results/), run_autograder per submission, results.json checked
against Gradescope's specification."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from course_utils.__main__ import main
from course_utils.exercises import exercise_ids, get_exercise
from nbtools import NOTEBOOK_DIR, load, with_solutions

L01 = [e for e in exercise_ids() if get_exercise(e).lesson == "01"]
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "autograder_01.zip"
    assert main(["autograder", "--lesson", "01", "--out", str(out)]) == 0
    return out


def test_the_bundle_has_gradescopes_layout(bundle):
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        setup = z.read("setup.sh").decode()
        run = z.read("run_autograder").decode()
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
    assert {"setup.sh", "run_autograder", "course_utils/__init__.py", "course_utils/classroom/sandbox/worker.py",
            "course_utils/lessons/l01_tensors.py"} <= names
    assert not any("__pycache__" in n for n in names)
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert f'"torch=={torch.__version__.split("+")[0]}"' in setup and "download.pytorch.org/whl/cpu" in setup
    assert "--lesson 01" in run and "AUTOGRADER_ROOT:-/autograder" in run


def solved(lesson: str) -> dict:
    return with_solutions(load(next(NOTEBOOK_DIR.glob(f"{lesson}_*.ipynb"))))


def unsolved(lesson: str) -> dict:
    return load(next(NOTEBOOK_DIR.glob(f"{lesson}_*.ipynb")))


def tampered() -> dict:
    nb = solved("01")
    cell = next(c for c in nb["cells"] if (c.get("metadata", {}).get("course") or {}).get("exercise") == "01.nbytes")
    cell["source"] = "import course_utils\ncourse_utils.check = lambda *a, **k: None\n" + "".join(cell["source"])
    return nb


def grade(bundle: Path, root: Path, files: dict[str, dict], **env_vars: str) -> dict:
    """Lay out a Gradescope root, run run_autograder, return results.json."""
    with zipfile.ZipFile(bundle) as z:
        z.extractall(root / "source")
    (root / "submission").mkdir(parents=True)
    for name, nb in files.items():
        (root / "submission" / name).write_text(json.dumps(nb), encoding="utf-8")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "COURSE_PYTHON": sys.executable, **env_vars}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


def valid(results: dict, ids: list[str]) -> None:
    """Gradescope's specification: types, one test per exercise, the score is the tests' sum."""
    assert isinstance(results["score"], (int, float)) and isinstance(results["output"], str) and results["output"]
    assert isinstance(results["execution_time"], int) and results["execution_time"] >= 0
    assert [t["number"] for t in results["tests"]] == sorted(ids) or [t["number"] for t in results["tests"]] == ids
    for t in results["tests"]:
        assert set(t) >= {"name", "score", "max_score", "output", "visibility"}
        assert isinstance(t["score"], (int, float)) and isinstance(t["max_score"], (int, float))
        assert 0 <= t["score"] <= t["max_score"] and t["visibility"] in VISIBILITY
    assert results["score"] == sum(t["score"] for t in results["tests"])


@pytest.mark.parametrize("kind", ["solved", "unsolved", "wrong lesson", "tampered", "no notebook", "two notebooks",
                                  "name not UTF-8", "renamed"])
def test_run_autograder(bundle, tmp_path, kind):
    files = {"solved": {"01_tensors.ipynb": solved("01")},
             "unsolved": {"01_tensors.ipynb": unsolved("01")},
             "wrong lesson": {"02_cpu_vs_gpu.ipynb": solved("02")},
             "tampered": {"01_tensors.ipynb": tampered()},
             "no notebook": {},
             "two notebooks": {"01_tensors.ipynb": solved("01"), "copy.ipynb": solved("01")},
             "name not UTF-8": {os.fsdecode(b"caf\xe9_01.ipynb"): solved("01")},
             "renamed": {"04_team_tensors.ipynb": solved("01")}}[kind]
    results = grade(bundle, tmp_path / "autograder", files)
    valid(results, L01)
    full = sum(get_exercise(e).points for e in L01)
    expected_score = full if kind in ("solved", "name not UTF-8", "renamed") else 0
    assert results["score"] == expected_score, results["output"]
    says = {"solved": f"{len(L01)} of {len(L01)} exercises passed", "unsolved": "0 of",
            "wrong lesson": "is lesson 02's notebook", "tampered": "changes course_utils.check",
            "no notebook": "No notebook", "two notebooks": "holds 2 notebooks",
            "name not UTF-8": f"{len(L01)} of {len(L01)} exercises passed",
            "renamed": f"{len(L01)} of {len(L01)} exercises passed"}[kind]
    assert says in results["output"], results["output"]
    if kind == "name not UTF-8":
        assert results["extra_data"]["submission"] == "caf\ufffd_01.ipynb"


def test_an_unknown_lesson_is_refused(tmp_path, capsys):
    assert main(["autograder", "--lesson", "42", "--out", str(tmp_path / "x.zip")]) == 2
    assert "no lesson with exercises" in capsys.readouterr().err and not (tmp_path / "x.zip").exists()


def test_the_bundle_never_overwrites_a_file_that_is_not_a_zip(tmp_path, capsys):
    notebook = tmp_path / "01_tensors.ipynb"
    notebook.write_text("a learner's work")
    assert main(["autograder", "--lesson", "01", "--out", str(notebook)]) == 2
    assert "ending in .zip" in capsys.readouterr().err and notebook.read_text() == "a learner's work"
    not_a_zip = tmp_path / "work.zip"
    not_a_zip.write_text("a learner's work, misnamed")
    assert main(["autograder", "--lesson", "01", "--out", str(not_a_zip)]) == 2
    assert "is not a zip archive" in capsys.readouterr().err and not_a_zip.read_text() == "a learner's work, misnamed"
    old = tmp_path / "autograder_01.zip"
    with zipfile.ZipFile(old, "w") as z:
        z.writestr("old.txt", "last term's bundle")
    assert main(["autograder", "--lesson", "01", "--out", str(old)]) == 0   # an older bundle is replaced
    assert "run_autograder" in zipfile.ZipFile(old).namelist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["01_tensors.ipynb", "autograder_01.zip", "work.zip"]


FORGER = """import json, os, signal
forged = {"score": 999, "output": "forged", "tests": []}
try:
    with open(os.path.join(os.environ["AUTOGRADER_ROOT"], "results", "results.json"), "w") as f:
        json.dump(forged, f)
except OSError:
    pass
pid = os.getpid()
while pid > 1:   # stop run_autograder, so that the forged file stands
    with open(f"/proc/{pid}/stat", "rb") as f:
        pid = int(f.read().rsplit(b")", 1)[1].split()[1])
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        if b"course_utils.classroom.autograder" in f.read():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
"""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="Gradescope runs as root; so must this test")
def test_learner_code_runs_unprivileged_and_cannot_forge_the_results(bundle, tmp_path):
    nb = solved("01")
    cell = next(c for c in nb["cells"] if (c.get("metadata", {}).get("course") or {}).get("exercise") == "01.nbytes")
    cell["source"] = FORGER + "".join(cell["source"])
    results = grade(bundle, tmp_path / "autograder", {"01_tensors.ipynb": nb}, COURSE_GRADE_USER="nobody")
    valid(results, L01)
    assert results["score"] == sum(get_exercise(e).points for e in L01), results["output"]
    assert (tmp_path / "autograder" / "results").stat().st_mode & 0o777 == 0o755


def test_setup_makes_the_unprivileged_user_and_run_autograder_uses_it(bundle):
    with zipfile.ZipFile(bundle) as z:
        setup, run = z.read("setup.sh").decode(), z.read("run_autograder").decode()
    assert "useradd --system" in setup and "course-learner" in setup
    assert 'COURSE_GRADE_USER="${COURSE_GRADE_USER:-course-learner}"' in run


def test_a_lesson_may_be_typed_without_its_leading_zero_and_the_bundle_is_a_zip(tmp_path, capsys):
    assert main(["autograder", "--lesson", "1", "--out", str(tmp_path / "b.zip")]) == 0
    assert "--lesson 01" in zipfile.ZipFile(tmp_path / "b.zip").read("run_autograder").decode()
    assert main(["autograder", "--lesson", "01", "--out", str(tmp_path / "b.txt")]) == 2
    assert "ending in .zip" in capsys.readouterr().err and not (tmp_path / "b.txt").exists()
