"""Checks speak in the learner's terms: where the simulated GPU is registered (a notebook's kernel, the grader's
worker), no feedback or pass line of any check says `meta` (a device the core lessons never show) or "stand-in",
whatever the answer; the verdicts are those the lesson tests expect.

One subprocess registers the simulated GPU, as ``cu.setup()`` does in a kernel, then checks every exercise's reference
(defined from its solution's source, as a learner's cell defines it), its notebook stub, the answers of the lesson
tests that name known mistakes and accepted alternatives (each parametrised ``test_*mistake*`` / ``test_*accept*``
function that needs no fixture, called with its parameters while ``cu.check`` is recorded), and the lying answers of
the grader's tests (tests/classroom/cases.py). The main process, which never registers the simulated GPU, judges what
came back. The texts a lesson shows before any check (hints, quiz explanations) are read here.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils.gpusim import backend as simdevice
from course_utils.exercises import exercise_ids, hints
from course_utils.quizzes import get_quiz, quiz_ids
from nbtools import ROOT

pytestmark = pytest.mark.skipif(not simdevice.available(), reason="the simulated GPU needs PyTorch 2.10 or later")

TESTS = Path(__file__).parent
#: Words no learner-visible text of a check may say where the simulated GPU runs.
FORBIDDEN = re.compile(r"\bmeta\b|stand-in|standin", re.IGNORECASE)
#: Lessons that teach `meta` (01's Going further, 06's `to_empty`): their quizzes may name it.
TEACH_META = ("01", "06")

_SCRIPT = r'''
import contextlib, inspect, io, json, re, sys
tests = sys.argv[1]
sys.path[:0] = [tests, tests + "/classroom"]
import torch, torch.nn.functional as F
from torch import nn
import course_utils as cu
from course_utils import checking
from course_utils.exercises import exercise_ids, get_exercise
from course_utils.notebook import exercise_cells, cell_source
with contextlib.redirect_stdout(io.StringIO()):
    device = cu.setup()
records, errors = [], []
current = {}          # what is being checked: where the answer comes from, the verdict expected (None: any)


def text_of(answer):
    """The answer's source, and the devices and device names among the globals its code reads."""
    try:
        source = inspect.getsource(answer)
    except Exception:
        source = ""
    functions = [v for v in vars(answer).values() if inspect.isfunction(v)] if inspect.isclass(answer) else [answer]
    for fn in functions:
        names, namespace = getattr(getattr(fn, "__code__", None), "co_names", ()), getattr(fn, "__globals__", {})
        source += " ".join(str(namespace[n]) for n in names if isinstance(namespace.get(n), (torch.device, str)))
    return source


def recorded(exercise_id, answer, **kwargs):
    result = checking.check(exercise_id, answer, **kwargs)
    source = text_of(answer)
    records.append({**current, "exercise": exercise_id, "status": result.status, "code": result.code,
                    "feedback": result.feedback, "answer_says": [w for w in ("meta", "cuda") if w in source]})
    return result


cu.check = recorded


def define(source, name):
    namespace = {"torch": torch, "nn": nn, "F": F, "cu": cu, "device": device}
    exec(source, namespace)
    return namespace[name]


# 1. each exercise's solution, as a learner's cell defines it, and its notebook stub
from nbtools import load, notebook_paths
stubs = {}
for path in notebook_paths():
    stubs.update({ex_id: cell_source(cell) for ex_id, cell in exercise_cells(load(path)).items()})
for ex_id in exercise_ids():
    ex = get_exercise(ex_id)
    current.update(origin=f"{ex_id} reference", expected="pass")
    cu.check(ex_id, define(ex.solution_source, ex.name))
    current.update(origin=f"{ex_id} stub", expected="not attempted")
    try:
        cu.check(ex_id, define(stubs[ex_id], ex.name))
    except BaseException as e:
        errors.append(f"{ex_id} stub: {type(e).__name__}: {e}")


# 2. the lesson tests' known mistakes and accepted alternatives
def param_sets(fn):
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    if not marks:
        return []
    product = [{}]
    for mark in marks:
        names = mark.args[0] if not isinstance(mark.args[0], str) else [n.strip() for n in mark.args[0].split(",")]
        rows = []
        for value in mark.args[1]:
            value = getattr(value, "values", (value,) if len(names) == 1 else value)   # pytest.param(...): .values
            rows.append(dict(zip(names, value)))
        product = [{**a, **b} for a in product for b in rows]
    return product


def skipped_here(fn):
    return any(m.name == "skipif" and m.args and m.args[0] for m in getattr(fn, "pytestmark", []))


for number in range(1, 9):
    try:
        module = __import__(f"test_lesson0{number}")
    except BaseException as e:
        errors.append(f"test_lesson0{number} does not import: {type(e).__name__}: {e}")
        continue
    for name, fn in sorted(vars(module).items()):
        if not (name.startswith("test_") and callable(fn) and ("mistake" in name or "accept" in name)):
            continue
        for i, params in enumerate(param_sets(fn)):
            if set(inspect.signature(fn).parameters) - set(params):
                break                                        # it needs a fixture
            expected = None if skipped_here(fn) else "pass" if "accept" in name else "fail"
            current.update(origin=f"{module.__name__}.{name}[{i}]", expected=expected)
            try:
                fn(**params)
            except BaseException:        # its own wording asserts are the test runner's; the verdict is judged below
                pass

# 3. the grader's tests' lying answers (each wrong, and it lies about it)
import cases
for label in ("LIES_INT", "LIES_CLASS", "LIES_DEVICE", "LIES_TENSOR"):
    source = getattr(cases, label)
    ex_id = next(e for e in exercise_ids() if re.search(rf"^def {get_exercise(e).name}\b", source, re.M))
    current.update(origin=f"cases.{label}", expected="fail")
    cu.check(ex_id, define(source, get_exercise(ex_id).name))
print("RECORDS " + json.dumps({"device": str(device), "records": records, "errors": errors}))
'''


@pytest.fixture(scope="module")
def checked() -> dict:
    """What the subprocess recorded: the device it ran on, every check's result, and what it could not run."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               MPLBACKEND="Agg")
    env.pop("COURSE_DEVICE", None)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(TESTS)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=900)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RECORDS ")), None)
    assert line, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(line[len("RECORDS "):])


def test_the_checks_ran_on_the_simulated_gpu_for_every_exercise(checked):
    assert checked["errors"] == []
    assert checked["device"] == "simgpu:0"
    origins = {r["origin"] for r in checked["records"]}
    assert {f"{e} {kind}" for e in exercise_ids() for kind in ("reference", "stub")} <= origins
    mistakes = {r["exercise"] for r in checked["records"] if r["expected"] == "fail"}
    assert mistakes >= {"01.nbytes", "01.blank_like", "03.to_device", "04.mask_future", "05.model_device",
                        "06.scaler", "07.sum_batches", "08.bad_labels"}, sorted(mistakes)


def test_no_feedback_or_pass_line_says_meta_or_stand_in(checked):
    """Unless the answer itself put a tensor on `meta` (the feedback then says where its tensor is)."""
    said = [(r["origin"], r["feedback"]) for r in checked["records"]
            if FORBIDDEN.search(r["feedback"]) and "meta" not in r["answer_says"]]
    assert said == [], said[:5]
    quoted = [r for r in checked["records"] if "meta" in r["answer_says"]]
    assert quoted and all("stand" not in r["feedback"].lower() for r in quoted)


def test_no_feedback_names_a_cuda_device_the_answer_never_named(checked):
    """`cuda:0` and `cuda:1` only where the learner's own code names CUDA (its `.cuda()` or `'cuda:0'` is quoted)."""
    said = [(r["origin"], r["feedback"]) for r in checked["records"]
            if re.search(r"cuda:[01]", r["feedback"]) and "cuda" not in r["answer_says"]]
    assert said == [], said[:5]


def test_the_verdicts_are_the_ones_the_tests_expect(checked):
    """The reference passes, the stub is not attempted, every known mistake fails and every accepted answer passes,
    on the simulated GPU as in the test runner's own process."""
    wrong = [(r["origin"], r["status"], r["code"], r["feedback"][:300]) for r in checked["records"]
             if r["expected"] is not None and r["status"] != {"pass": "passed", "fail": "failed"}.get(
                 r["expected"], r["expected"])]
    assert wrong == [], wrong


@pytest.mark.parametrize("ex_id", exercise_ids())
def test_hints_do_not_say_meta(ex_id):
    assert [h for h in hints(ex_id) if FORBIDDEN.search(h)] == []


def test_quiz_texts_say_meta_only_where_the_lesson_teaches_it():
    said = []
    for quiz_id in quiz_ids():
        quiz = get_quiz(quiz_id)
        text = " ".join([quiz.question, *quiz.options, quiz.explanation])
        if FORBIDDEN.search(text) and not (quiz_id[:2] in TEACH_META and "stand" not in text.lower()):
            said.append(quiz_id)
    assert said == []
