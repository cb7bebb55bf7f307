"""The student release of an assessed class (``python -m course_utils release``): what students get holds no
reference solution, no withheld hint and no feedback text of the full checks, in any form (source, bytecode,
strings, data); it installs on any Python the course supports; its Check runs public checks that never say
"passed"; and its notebooks open the class's package, not the public course."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from course_utils import exercises, misconceptions, modes, quizzes
from course_utils.classroom import release
from nbtools import NOTEBOOK_DIR, ROOT, load, source

REPO = "https://github.com/a-school/tensors-2026"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A release, written once for the module."""
    return release.release(tmp_path_factory.mktemp("class") / "release", NOTEBOOK_DIR, repo=REPO, branch="spring")


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> Path:
    """The release's wheel installed into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                    str(built / "wheels" / release.WHEEL)], check=True, capture_output=True, text=True)
    return target


#: Run first in every students' process: an editable install of the full package (this checkout, as the README's
#: set-up makes it) puts a finder on ``sys.meta_path`` that would answer for its modules the students' package
#: lacks (``course_utils.classroom``); a student's machine has no such finder.
ALONE = ("import sys\nsys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in "
         "getattr(f, '__module__', '')]\n")


def _student(site: Path, script: str, stdin: str = "", **env: str) -> dict:
    """Run ``script`` with the students' installation first on the path; its last line of output is JSON."""
    import os
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", modes.MODE_ENV)}
    done = subprocess.run([sys.executable, "-c", ALONE + script], input=stdin, capture_output=True, text=True,
                          cwd=site.parent, env={**environ, "PYTHONPATH": str(site), **env}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- nothing to find ---------------------------------------------------------------------------------------

def _lesson_sources() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "course_utils" / "lessons").glob("l*.py")}


def _public_texts(built: Path) -> set[str]:
    """The texts the students may read: the quizzes, each exercise's title and every hint but the last, the
    descriptions of the public checks' inputs, the notebooks, and the modules of the package that are not lessons."""
    import io

    import torch
    texts = set()
    for quiz_id in quizzes.quiz_ids():
        q = quizzes.get_quiz(quiz_id)
        texts |= {q.question, q.explanation, *q.options}
    for ex_id in exercises.exercise_ids():
        ex = exercises.get_exercise(ex_id)
        texts |= {ex.title, *ex.hints[:-1]}
    with zipfile.ZipFile(built / "wheels" / release.WHEEL) as whl:
        public = torch.load(io.BytesIO(whl.read(f"course_utils/{release.EXAMPLES}")), weights_only=False)
    texts |= {example.what for exercise in public for example in exercise.examples}
    texts |= {p.read_text(encoding="utf-8") for p in NOTEBOOK_DIR.glob("*.ipynb")}
    texts |= {p.read_text(encoding="utf-8") for p in (ROOT / "course_utils").rglob("*.py") if "lessons" not in p.parts}
    return texts


def _secret_strings(built: Path) -> set[str]:
    """Every string of 30 characters or more that is nowhere else, of the full lesson modules (feedback, fix
    sentences, last hints, the checks' own texts) and of the lessons' misconceptions (data/lessons/NN.json: names,
    explanations, questions)."""
    public = _public_texts(built)
    strings = {node.value for source in _lesson_sources().values() for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    strings |= {text for m in misconceptions.registry().values() if not m.generic
                for text in (m.name, m.explanation, m.question)}
    return {text for text in strings if len(text) >= 30 and not any(text in p for p in public)}


def _wheel_texts(built: Path) -> dict[str, str]:
    with zipfile.ZipFile(built / "wheels" / release.WHEEL) as whl:
        return {name: whl.read(name).decode("latin-1") for name in whl.namelist()}


def test_no_reference_no_last_hint_and_no_feedback_text_in_anything_students_get(built):
    texts = _wheel_texts(built)
    texts.update({str(p): p.read_text(encoding="latin-1") for p in built.rglob("*") if p.is_file()
                  and p.suffix != ".whl"})
    secrets = _secret_strings(built)
    assert len(secrets) > 200, "the scan must see the full checks' texts"
    leaked = [s for s in secrets if any(s in text for text in texts.values())]
    assert leaked == []
    for ex_id in exercises.exercise_ids():
        ex = exercises.get_exercise(ex_id)
        body = [line.strip() for line in ex.solution_source.splitlines()[1:] if line.strip()
                and not line.strip().startswith(("#", '"""'))]
        assert body, ex_id
        assert not any("\n".join(body) in text for text in texts.values()), f"{ex_id}: its reference"
        if len(ex.hints) > 1:
            assert not any(ex.hints[-1] in text for text in texts.values()), f"{ex_id}: its last hint"
    names = set(texts)
    assert not any("/classroom/" in n for n in names) and "course_utils/data/assessed-build.json" in names
    data = {n: json.loads(texts[n].encode("latin-1")) for n in names if n.startswith("course_utils/data/lessons/")}
    assert len(data) == 8 and all(set(d) == {"quizzes", "order"} for d in data.values())   # no misconception, no fix
    assert sum(len(d["quizzes"]) for d in data.values()) == len(quizzes.quiz_ids())


def test_no_module_of_the_students_package_computes_what_a_reference_returns(built):
    """A reference's statements (its returns, as code) appear in no module of the students' package."""
    trees = [ast.parse(text) for name, text in _wheel_texts(built).items() if name.endswith(".py")]
    statements = {ast.dump(node) for tree in trees for node in ast.walk(tree) if isinstance(node, ast.stmt)}
    for ex_id in exercises.exercise_ids():
        reference = exercises.get_exercise(ex_id).reference
        tree = ast.parse(exercises.get_exercise(ex_id).solution_source)
        returns = [ast.dump(n) for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None
                   and sum(1 for _ in ast.walk(n)) > 8]   # not the commonplace (`return torch.device("cpu")`)
        assert not [r for r in returns if r in statements], f"{ex_id} ({reference.__name__})"


# --- the students' installation ----------------------------------------------------------------------------

def test_the_wheel_is_for_every_python_the_course_supports(built):
    with zipfile.ZipFile(built / "wheels" / release.WHEEL) as whl:
        info = {n.split("/")[-1]: whl.read(n).decode() for n in whl.namelist() if ".dist-info/" in n}
    assert "Tag: py3-none-any" in info["WHEEL"] and "Requires-Python: >=3.10" in info["METADATA"]
    assert not any(n.endswith(".pyc") for n in zipfile.ZipFile(built / "wheels" / release.WHEEL).namelist())


def test_students_find_no_solution_whatever_they_set(installed):
    seen = _student(installed, """
import inspect, json, os
os.environ["COURSE_MODE"] = "formative"
import course_utils as cu
from course_utils import exercises, modes
out = {"file": cu.__file__, "assessed": modes.assessed(), "solutions": set(), "sources": [], "checked": []}
for ex_id in exercises.exercise_ids():
    ex = exercises.get_exercise(ex_id)
    out["solutions"].add(cu.solution(ex_id, force=True))
    try:
        out["sources"].append(inspect.getsource(ex.reference))
    except (OSError, TypeError):
        pass
    out["checked"].append(cu.check(ex_id, ex.reference).status)   # the registry's "reference" as an answer
out["solutions"] = sorted(out["solutions"])
out["ids"] = exercises.exercise_ids()
print(json.dumps(out))
""")
    assert seen["file"].startswith(str(installed)) and seen["assessed"] is True
    assert seen["solutions"] == [modes.WITHHELD] and seen["ids"] == exercises.exercise_ids()
    assert all("NotImplementedError" in s or "No reference" in s for s in seen["sources"])
    assert set(seen["checked"]) == {"not attempted"}


CHECK_ALL = """
import json, math, sys
import torch
import course_utils as cu
from course_utils import exercises
device = cu.setup()
out = {}
for ex_id, sources in json.loads(sys.stdin.read()).items():
    out[ex_id] = []
    for source in sources:
        namespace = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "math": math, "cu": cu,
                     "device": device}
        exec(source, namespace)
        r = cu.check(ex_id, namespace[exercises.get_exercise(ex_id).name])
        out[ex_id].append([r.status, r.points, r.feedback])
print(json.dumps(out))
"""
STUB = {"function": "def {name}(*args, **kwargs):\n    raise NotImplementedError\n",
        "class": "class {name}:\n    def __init__(self, *args, **kwargs):\n        raise NotImplementedError\n"}
def _capstone_stub() -> str:
    """The handed-out script, its `raise` deleted."""
    cell = next(c for c in load(NOTEBOOK_DIR / "07_transfer_cost.ipynb")["cells"]
                if c.get("metadata", {}).get("course", {}).get("exercise") == "07.capstone")
    return "\n".join(line for line in source(cell).splitlines() if line.strip() != "raise NotImplementedError")


WRONG = {"01.nbytes": "def nbytes(t):\n    return t.numel()\n",
         "07.bandwidth_gbps": "def bandwidth_gbps(nbytes, seconds):\n    return nbytes / seconds\n",
         "05.is_on": "def is_on(x, wanted):\n    return True\n",
         "06.find_mismatches": "def find_mismatches(model, inputs, device):\n"
                               "    return sorted(n for n, t in model.named_parameters() if t.device != device)\n"}
#: Answers whose device bug the learner's GPU raises on, as in their own cell: (exercise, answer, what it says).
RAISES = [("06.scaler", "class Scaler(nn.Module):\n    def __init__(self, features):\n        super().__init__()\n"
                         "        self.scale = torch.full((features,), 2.0)\n\n    def forward(self, x):\n"
                         "        return x * self.scale\n", "Expected all tensors to be on the same device"),
          ("07.capstone", _capstone_stub(), "Unexpected key(s) in state_dict: \"mean\""),
          ("07.capstone", _capstone_stub().replace("self.mean = torch.zeros(features)",
                                                   'self.register_buffer("mean", torch.zeros(features))'),
           "Expected all tensors to be on the same device")]


def test_check_runs_the_public_checks_and_never_says_passed(installed):
    """The reference typed in by hand: "checked", no points, and the full checks said to come at grading; a wrong
    answer: "failed", naming the example; the stub: "not attempted"."""
    answers = {ex_id: [exercises.get_exercise(ex_id).solution_source,
                       STUB[exercises.get_exercise(ex_id).kind].format(name=exercises.get_exercise(ex_id).name)] + ([WRONG[ex_id]] if ex_id in WRONG else [])
               for ex_id in exercises.exercise_ids()}
    for ex_id, answer, _ in RAISES:
        answers[ex_id].append(answer)
    seen = _student(installed, CHECK_ALL, stdin=json.dumps(answers))
    for ex_id, results in seen.items():
        (right, right_points, said), (stub, _, _), *wrong = results
        assert right == "checked" and right_points == 0, (ex_id, said)
        assert "the full checks run when your teacher grades" in said and "expected result on all" in said, ex_id
        assert stub == "not attempted", ex_id
        says = ["the expected result is"] * (ex_id in WRONG) + [said for ex, _, said in RAISES if ex == ex_id]
        for (status, points, feedback), said in zip(wrong, says, strict=True):
            assert status == "failed" and points == 0 and said in feedback, (ex_id, feedback)


# --- the folder -------------------------------------------------------------------------------------------

def test_the_notebooks_open_the_classs_package_not_the_public_course(built):
    from course_utils.classroom.links import course_address
    public_repo = course_address(ROOT / "pyproject.toml")[0]
    names = sorted(p.name for p in built.joinpath("notebooks").glob("*.ipynb"))
    assert names == sorted(p.name for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    for name in names:
        text = built.joinpath("notebooks", name).read_text(encoding="utf-8")
        assert public_repo.split("github.com/")[1] not in text, name
        nb = json.loads(text)
        colab = next(c for c in nb["cells"] if c["metadata"].get("course", {}).get("role") == release.COLAB_ROLE)
        assert f"raw.githubusercontent.com/a-school/tensors-2026/spring/wheels/{release.WHEEL}" in colab["source"]
        assert "colab.research.google.com/github/a-school/tensors-2026/blob/spring/notebooks/" + name \
            in "".join(nb["cells"][0]["source"])
    assert f"./wheels/{release.WHEEL}" in built.joinpath("requirements.txt").read_text()
    assert json.loads(built.joinpath("release.json").read_text())["repository"] == REPO


def test_a_release_never_writes_into_a_folder_that_exists(tmp_path):
    taken = tmp_path / "release"
    taken.mkdir()
    (taken / "mine.txt").write_text("a teacher's file")
    with pytest.raises(release.ReleaseError, match="exists"):
        release.release(taken, NOTEBOOK_DIR)
    assert [p.name for p in taken.iterdir()] == ["mine.txt"]


def test_the_command_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "course_utils", "release", "--out", str(tmp_path / "r"),
                           "--notebooks", str(NOTEBOOK_DIR)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "wheels/" + release.WHEEL in done.stdout and (tmp_path / "r" / "release.json").exists()
    again = subprocess.run([sys.executable, "-m", "course_utils", "release", "--out", str(tmp_path / "r")],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert again.returncode == 2 and "exists" in again.stderr and "Traceback" not in again.stderr


def test_the_students_command_line_has_the_learners_commands_only(installed):
    import os
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = [sys.executable, "-c", ALONE + "import runpy\nsys.argv[0] = 'course_utils'\n"
                                         "runpy.run_module('course_utils', run_name='__main__', alter_sys=True)"]
    listed = subprocess.run(run + ["list"], capture_output=True, text=True, cwd=installed.parent, timeout=120,
                            env={**environ, "PYTHONPATH": str(installed)})
    assert listed.returncode == 0 and "01.nbytes" in listed.stdout and "2 points" in listed.stdout, listed.stderr
    grade = subprocess.run(run + ["grade", "x.ipynb"], capture_output=True, text=True, cwd=installed.parent,
                           timeout=120, env={**environ, "PYTHONPATH": str(installed)})
    assert grade.returncode == 2 and "invalid choice: 'grade'" in grade.stderr and "Traceback" not in grade.stderr
