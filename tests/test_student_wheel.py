"""The package built for an assessed class (``scripts/student_wheel.py``): installed on its own, it holds no
reference solution's source and no last hint, always runs in assessed mode, and its Check gives the results the
full package gives, so Check and ``grade`` (the teacher's full installation) agree."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils import exercises, modes
from nbtools import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import student_wheel  # noqa: E402

STUB = "def {name}(*args, **kwargs):\n    raise NotImplementedError\n"
#: Checks each exercise's answers (sources), in the names a notebook's setup cell provides; run in the students'
#: installation and in this one.
CHECK_ALL = """
import json, math, sys
import torch
import course_utils as cu
from course_utils import exercises

def check_all(answers):
    out = {}
    for ex_id, sources in answers.items():
        out[ex_id] = []
        for source in sources:
            namespace = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "math": math, "cu": cu}
            exec(source, namespace)
            r = cu.check(ex_id, namespace[exercises.get_exercise(ex_id).name])
            out[ex_id].append([r.status, r.points, r.max_points])
    return out
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The students' wheel, built and installed into a folder of its own."""
    tmp = tmp_path_factory.mktemp("student")
    wheel = student_wheel.student_wheel(tmp / "dist")
    target = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, text=True)
    return target


def _student(site: Path, script: str, **env: str) -> dict:
    """Run ``script`` in a Python that imports the students' installation, not this checkout; its last line of
    output is JSON."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=site.parent,
                          env={**_environ(), "PYTHONPATH": str(site), **env}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _environ() -> dict:
    import os
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _code_lines(source: str) -> list[str]:
    """The stripped lines of a solution's source, without comments and blank lines."""
    return [line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#")]


def _texts(folder: Path) -> dict[Path, str]:
    """Every file under ``folder`` as text with stripped lines (binary files as Latin-1, whole)."""
    texts = {}
    for path in folder.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            data = path.read_bytes()
            try:
                texts[path] = "\n".join(line.strip() for line in data.decode().splitlines() if line.strip())
            except UnicodeDecodeError:
                texts[path] = data.decode("latin-1")
    return texts


def _found(texts: dict[Path, str], lines: list[str]) -> list[str]:
    """The pairs of consecutive lines of ``lines`` that some text holds."""
    windows = ["\n".join(pair) for pair in zip(lines, lines[1:])] or lines
    return [w for w in windows if any(w in text for text in texts.values())]


def test_no_solution_and_no_last_hint_can_be_found_in_the_installed_files(installed):
    texts = _texts(installed / "course_utils")
    assert not [p for p in texts if p.parent.name == "lessons" and p.suffix == ".py" and p.name != "__init__.py"]
    full = _texts(ROOT / "course_utils")
    for ex_id in exercises.exercise_ids():
        ex = exercises.get_exercise(ex_id)
        lines = _code_lines(ex.solution_source)
        assert _found(full, lines), f"{ex_id}: the scan must find the solution in the full package"
        assert _found(texts, lines) == [], ex_id
        if len(ex.hints) > 1:
            assert not any(ex.hints[-1] in text for text in texts.values()), f"{ex_id}: its last hint"


def test_the_students_installation_shows_no_solution_in_any_mode(installed):
    seen = _student(installed, """
import inspect, json
import course_utils as cu
from course_utils import exercises, modes
out = {"file": cu.__file__, "assessed": modes.assessed(), "solutions": [], "sources": []}
for ex_id in exercises.exercise_ids():
    out["solutions"].append(cu.solution(ex_id, force=True))
    try:
        inspect.getsource(exercises.get_exercise(ex_id).reference)
        out["sources"].append(ex_id)
    except (OSError, TypeError):
        pass
print(json.dumps(out))
""", COURSE_MODE="formative")
    assert seen["file"].startswith(str(installed)) and seen["assessed"] is True
    assert set(seen["solutions"]) == {modes.WITHHELD} and seen["sources"] == []


def test_check_in_the_students_installation_agrees_with_the_full_package(installed, monkeypatch):
    """Each exercise checked in both with its reference solution (typed in by hand, as a student could) and with
    the stub, in the names a notebook's setup cell provides: the same status and points. ``grade`` runs the full
    package's checks, whose agreement with Check is tested in tests/classroom/test_check_and_grade_agree.py."""
    monkeypatch.setenv(modes.MODE_ENV, modes.ASSESSED)
    answers = {ex_id: [exercises.get_exercise(ex_id).solution_source,
                       STUB.format(name=exercises.get_exercise(ex_id).name)] for ex_id in exercises.exercise_ids()}
    script = CHECK_ALL + "print(json.dumps(check_all(json.loads(sys.stdin.read()))))"
    done = subprocess.run([sys.executable, "-c", script],
                          input=json.dumps(answers), capture_output=True, text=True, cwd=installed.parent,
                          env={**_environ(), "PYTHONPATH": str(installed)}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    student = json.loads(done.stdout.strip().splitlines()[-1])
    here: dict = {}
    exec(CHECK_ALL, here)   # the same checking code, in this process: the full package
    for ex_id, teacher in here["check_all"](answers).items():
        assert student[ex_id] == teacher, ex_id
        assert teacher[0][0] == "passed" and teacher[1][0] != "passed", ex_id
