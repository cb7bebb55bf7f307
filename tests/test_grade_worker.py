"""Grading a class you can trust (issue 12): what the grader's worker runs, in what order, and what it
counts against an answer.

Honest PyTorch is never tampering; the reference solutions are recognised by what an answer is and
calls, not by the words in it; cells run as the notebook runs them (IPython syntax included) and
each exercise is checked right after its last answer cell, in PyTorch's pristine state; nothing an
answer raises costs more than its own exercise; the grader's own limits are not blamed on the
learner; and the grade belongs to the assignment the file is. Submissions are small notebooks built
in a temporary folder and graded once, together.
"""
from __future__ import annotations

import contextlib
import csv
import inspect
import io
import json
import os
import sys
import textwrap

import pytest
import torch

import course_utils as cu
from course_utils import classroom
from course_utils.classroom import integrity, submissions
from course_utils.__main__ import main
from course_utils.exercises import exercise_ids, get_exercise
from course_utils.notebook import with_solutions
from hostile_values import ClaimsToBe, EqualsAnything, LenientDispatchMode, LenientMode, always_equal
from nbtools import NOTEBOOK_DIR, load

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="grading needs Linux (/proc, prctl)")

SOL = {ex_id: get_exercise(ex_id).solution_source for ex_id in exercise_ids()}
LIMITS = ["--timeout", "60", "--cell-timeout", "20", "--check-timeout", "10", "--memory-mb", "640"]


def cell(ex_id: str | None, source: str) -> dict:
    """A code cell; an answer cell of ``ex_id`` unless that is ``None``."""
    return {"cell_type": "code", "execution_count": None, "outputs": [], "source": source,
            "metadata": {"course": {"exercise": ex_id}} if ex_id else {}}


def notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def lesson01(nbytes: str = SOL["01.nbytes"], blank_like: str = SOL["01.blank_like"]) -> dict:
    return notebook(cell("01.nbytes", nbytes), cell(None, "print('try it')\n"), cell("01.blank_like", blank_like))


MODES = """from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

class Broken(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise RuntimeError("a torch function mode left active")

class BrokenDispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise RuntimeError("a dispatch mode left active")

fmode, dmode = Broken(), BrokenDispatch()
dmode.__enter__()
fmode.__enter__()
"""
# The next answer cell runs with the learner's modes back in place (as in the notebook), and leaves them.
MODES_BACK = """if torch._C._len_torch_function_stack() == 1 and torch._C._len_torch_dispatch_stack() == 1:
    fmode.__exit__(None, None, None)
    dmode.__exit__(None, None, None)
"""
KEYBOARD_INTERRUPT_STR = """class Odd(Exception):
    def __str__(self):
        raise KeyboardInterrupt

def nbytes(t):
    raise Odd()
"""
SCALER_NEW = """class Scaler(nn.Module):
    def __new__(cls, features):
        return cu.lessons.l06_mismatch_errors.Scaler(features)
"""
# Fills the memory limit, leaving no room for the grader to look at what the cell changed.
HOG = """hog = []
for size in (2**20, 2**12, 64):
    try:
        while True:
            hog.append(bytearray(size))
    except MemoryError:
        pass
"""
L02 = [e for e in exercise_ids() if get_exercise(e).lesson == "02"]


def lesson04(to_accelerator: str = SOL["04.to_accelerator"], mask_future: str = SOL["04.mask_future"]) -> dict:
    return notebook(cell("04.to_accelerator", to_accelerator), cell("04.mask_future", mask_future))


def lesson05(is_on: str = SOL["05.is_on"], model_device: str = SOL["05.model_device"],
             training_bytes: str = SOL["05.training_bytes"]) -> dict:
    return notebook(cell("05.is_on", is_on), cell("05.model_device", model_device),
                    cell("05.training_bytes", training_bytes))


def defining(*objects) -> str:
    """Answer-cell source that defines these lying values and modes of hostile_values."""
    return ("from torch.overrides import TorchFunctionMode\n"
            "from torch.utils._python_dispatch import TorchDispatchMode\n\n"
            + "".join(textwrap.dedent(inspect.getsource(o)) + "\n" for o in objects))


# Cheats that scored before (issue 21): each answer is wrong, and lies about it.
LIES_INT = defining(always_equal) + "def training_bytes(model, optimizer):\n    return always_equal(int)(0)\n"
LIES_CLASS = defining(ClaimsToBe) + "def is_on(x, wanted):\n    return ClaimsToBe(False)\n"
LIES_DEVICE = defining(ClaimsToBe) + """def model_device(module):
    devices = {p.device for p in module.parameters()} | {b.device for b in module.buffers()}
    if len(devices) > 1:
        raise ValueError(", ".join(sorted(str(d) for d in devices)))
    return ClaimsToBe(torch.device("cpu")) if devices else None
"""
LIES_TENSOR = (defining(EqualsAnything)
               + "def mask_future(scores):\n    return scores.clone().as_subclass(EqualsAnything)\n")
LEAVES_MODE = ("def mask_future(scores):\n"
               "    {mode}().__enter__()  # left active: the check's comparisons would run under it\n"
               "    return scores.clone()\n")
LENIENT_FUNCTION_MODE = defining(LenientMode) + LEAVES_MODE.format(mode="LenientMode")
LENIENT_DISPATCH_MODE = defining(LenientDispatchMode) + LEAVES_MODE.format(mode="LenientDispatchMode")
HIDES_MODE = defining(LenientMode) + """LenientMode().__enter__()  # the cell's mode, hidden from the grader
torch._C._len_torch_function_stack = lambda: 0

def mask_future(scores):
    return scores.clone()
"""
EMPTIES_TABLE = """def training_bytes(model, optimizer):
    return 0

cu.lessons.l05_device_attribute.STATE_COPIES.clear()  # no optimizer left to check
"""
# Each takes a frame by a name its text does not show, then walks up to the checker's expected value.
WALK_TO_WANT = ("    while 'want' not in getattr(frame, 'f_loc' + 'als'):\n"
                "        frame = getattr(frame, 'f_' + 'back')\n"
                "    return getattr(frame, 'f_loc' + 'als')['want']\n")
READS_FRAMES = {
    "sys": "def nbytes(t):\n    frame = getattr(__import__('s' + 'ys'), '_get' + 'frame')(0)\n" + WALK_TO_WANT,
    "inspect": "def nbytes(t):\n    frame = getattr(__import__('insp' + 'ect'), 'sta' + 'ck')(0)[0].frame\n"
               + WALK_TO_WANT,
    "traceback": ("def nbytes(t):\n    try:\n        raise ValueError\n    except ValueError as e:\n"
                  "        frame = getattr(e.__traceback__, 'tb_' + 'frame')\n" + WALK_TO_WANT),
}
COPIES_BY_COMPILE = {
    "function": "import types\n"
                "def nbytes(t):\n"
                "    code = compile(cu.solution('01.nbytes', force=True), 'mine', 'exec')\n"
                "    return types.FunctionType(code.co_consts[0], {})(t)\n",
    "code": "def nbytes(t):\n"
            "    def mine(t):\n"
            "        return 0\n"
            "    mine.__code__ = compile(cu.solution('01.nbytes', force=True), 'mine', 'exec').co_consts[0]\n"
            "    return mine(t)\n",
}

SUBMISSIONS = {
    # 1. honest PyTorch is never tampering
    "dtype.ipynb": lesson01(nbytes=SOL["01.nbytes"] + "torch.set_default_dtype(torch.float64)\n"),
    "compiled.ipynb": lesson01(nbytes=("@torch.compile(backend='eager')\ndef double(x):\n    return 2 * x\n"
                                       "double(torch.ones(3))\n" + SOL["01.nbytes"])),
    "reload.ipynb": lesson01(nbytes="import importlib\nimportlib.reload(course_utils)\n" + SOL["01.nbytes"]),
    "reload_grading.ipynb": lesson01(nbytes="import importlib\nimportlib.reload(cu.grading)\n" + SOL["01.nbytes"]),
    "libraries.ipynb": lesson01(blank_like=(  # library code that takes frames for itself is not the learner's
        "import collections, dataclasses, logging, traceback, typing\n"
        "def blank_like(t):\n"
        "    Pair = collections.namedtuple('Pair', 'a b')\n"
        "    T = typing.TypeVar('T')\n"
        "    logging.getLogger('mine').warning('hello')\n"
        "    try:\n"
        "        1 / 0\n"
        "    except ZeroDivisionError:\n"
        "        text = traceback.format_exc()\n"
        "    return torch.zeros_like(t)\n")),
    # 2. the reference is recognised by what it is, not by words
    "05_names.ipynb": notebook(
        cell("05.is_on", "from course_utils.grading import simulated_accelerator\n"
                         "note = 'compare with the reference device'\n"
                         "def is_on(x, wanted):\n"
                         "    reference = torch.device(wanted)\n"
                         "    actual = x.device if isinstance(x, torch.Tensor) else torch.device(x)\n"
                         "    return actual.type == reference.type and (reference.index is None\n"
                         "                                              or actual.index == reference.index)\n"),
        cell("05.model_device", SOL["05.model_device"]), cell("05.training_bytes", SOL["05.training_bytes"])),
    "ref_call.ipynb": lesson01(nbytes="def nbytes(t):\n    return cu.lessons.l01_tensors.nbytes(t)\n"),
    "ref_lambda.ipynb": lesson01(nbytes="import importlib\nm = importlib.import_module('course_utils.lesso' + "
                                       "'ns.l01_tensors')\nnbytes = lambda t: m.nbytes(t)\n"),
    "ref_partial.ipynb": lesson01(nbytes="import functools\n"
                                         "nbytes = functools.partial(cu.lessons.l01_tensors.nbytes)\n"),
    "ref_alias.ipynb": lesson01(nbytes="from course_utils.lessons.l01_tensors import nbytes\n"),
    "ref_solution.ipynb": lesson01(nbytes="exec(cu.solution('01.nbytes', force=True))\n"),
    "ref_getsource.ipynb": lesson01(nbytes="import inspect\n"
                                           "exec(inspect.getsource(cu.lessons.l01_tensors.nbytes))\n"),
    "ref_exec_inside.ipynb": lesson01(nbytes="def nbytes(t):\n    scope = {}\n"
                                             "    exec(cu.solution('01.nbytes', force=True), scope)\n"
                                             "    return scope['nbytes'](t)\n"),
    "06_scaler_new.ipynb": notebook(cell("06.scaler", SCALER_NEW),
                                    cell("06.find_mismatches", SOL["06.find_mismatches"])),
    # 3. cells run in notebook order, each exercise checked after its last cell, in a pristine PyTorch
    "07_later_cells.ipynb": notebook(
        cell("07.bandwidth_gbps", SOL["07.bandwidth_gbps"]),
        cell("07.transfer_time", SOL["07.transfer_time"] + "bandwidth_gbps = bandwidth_gbps(12e9, 1.0)\n"),
        cell("07.sum_batches", SOL["07.sum_batches"] + "torch.set_default_device('meta')\n")),
    "modes_last.ipynb": lesson01(blank_like=SOL["01.blank_like"] + MODES),
    "modes_back.ipynb": lesson01(nbytes=SOL["01.nbytes"] + MODES, blank_like=MODES_BACK + SOL["01.blank_like"]),
    "split.ipynb": notebook(cell("01.nbytes", "def element_bytes(t):\n    return t.element_size()\n"),
                            cell(None, "x = 1\n"),
                            cell("01.nbytes", "def nbytes(t):\n    return t.numel() * element_bytes(t)\n"),
                            cell("01.blank_like", SOL["01.blank_like"])),
    "07_isclose.ipynb": notebook(
        cell("07.bandwidth_gbps", "math.isclose = lambda *args, **kwargs: True\n"
                                  "def bandwidth_gbps(nbytes, seconds):\n    return 0.0\n"),
        cell("07.transfer_time", SOL["07.transfer_time"]), cell("07.sum_batches", SOL["07.sum_batches"])),
    # 4. KeyboardInterrupt costs only its own exercise
    "ki_raised.ipynb": lesson01(nbytes="def nbytes(t):\n    raise KeyboardInterrupt\n"),
    "ki_getattr.ipynb": lesson01(nbytes="class Odd:\n    def __getattr__(self, name):\n"
                                        "        raise KeyboardInterrupt\nnbytes = Odd()\n"),
    "ki_str.ipynb": lesson01(nbytes=KEYBOARD_INTERRUPT_STR),
    # 5. IPython syntax, as Jupyter reads it
    "ipython.ipynb": lesson01(nbytes=(SOL["01.nbytes"] + "torch.accelerator.is_available?\n"
                                      "t = %timeit -o nbytes(torch.ones(3))\n!echo hello\nfiles = !ls\n"),
                              blank_like="%%time\n" + SOL["01.blank_like"]),
    "frames.ipynb": lesson01(nbytes=("import sys\nok = (1\n!= 2)\n"
                                     "def nbytes(t):\n    return getattr(sys, '_get' + 'frame')(2).f_back\n")),
    # 6. cheats that scored before: lying values, lenient modes, hidden modes, emptied tables, frames and copies
    "05_lies.ipynb": lesson05(is_on=LIES_CLASS, model_device=LIES_DEVICE, training_bytes=LIES_INT),
    "04_tensor_subclass.ipynb": lesson04(mask_future=LIES_TENSOR),
    "04_function_mode.ipynb": lesson04(mask_future=LENIENT_FUNCTION_MODE),
    "04_dispatch_mode.ipynb": lesson04(mask_future=LENIENT_DISPATCH_MODE),
    "04_hides_mode.ipynb": lesson04(mask_future=HIDES_MODE),
    "05_empties_table.ipynb": lesson05(training_bytes=EMPTIES_TABLE),
    "empties_device_table.ipynb": lesson01(nbytes="cu.device.NO_FLOAT64.clear()\n" + SOL["01.nbytes"]),
    **{f"frames_{how}.ipynb": lesson01(nbytes=code) for how, code in READS_FRAMES.items()},
    **{f"copy_{how}.ipynb": lesson01(nbytes=code) for how, code in COPIES_BY_COMPILE.items()},
    # 7. the grader's own limits are not the learner's fault
    "memory_hog.ipynb": lesson01(nbytes=SOL["01.nbytes"] + HOG),
    # 8. the grade belongs to the assignment
    "01_tensors.ipynb": with_solutions(load(NOTEBOOK_DIR / "02_cpu_vs_gpu.ipynb")),
    "04_team_tensors.ipynb": lesson01(),  # lesson 01's notebook under another lesson's number
    "01_stray.ipynb": notebook(*lesson01()["cells"], cell("02.pick_device", "import os\nos._exit(1)\n")),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """Grade every submission above once, with --jobs 2; the CSV rows by (submission, exercise)."""
    root = tmp_path_factory.mktemp("worker")
    for name, nb in SUBMISSIONS.items():
        (root / name).write_text(json.dumps(nb), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["grade", *SUBMISSIONS, "--out", "grades.csv", "--jobs", "2", *LIMITS])
    finally:
        os.chdir(cwd)
    assert code == 0, err.getvalue()
    with open(root / "grades.csv", encoding="utf-8", newline="") as f:
        rows = {(r["submission"], r["exercise"]): r for r in csv.DictReader(f)}
    return {"rows": rows, "out": out.getvalue()}


def points(graded: dict, submission: str) -> dict[str, int]:
    return {ex: int(r["points"]) for (sub, ex), r in graded["rows"].items() if sub == submission}


def feedback(graded: dict, submission: str, exercise: str) -> str:
    return graded["rows"][(submission, exercise)]["feedback"]


def full_marks(graded: dict, submission: str) -> bool:
    total = graded["rows"][(submission, "TOTAL")]
    return total["points"] == total["max_points"] != "0"


# --- 1. honest PyTorch is never tampering -------------------------------------------------------

@pytest.mark.parametrize("submission", ["dtype.ipynb", "compiled.ipynb"])
def test_pytorch_changing_itself_is_not_tampering(graded, submission):
    """``set_default_dtype`` rebinds ``torch.Storage``; the first compiled call patches ``nn.Module``."""
    assert full_marks(graded, submission), graded["rows"][(submission, "TOTAL")]


@pytest.mark.parametrize("submission", ["reload.ipynb", "libraries.ipynb"])
def test_honest_exploration_is_not_tampering(graded, submission):
    """``importlib.reload(course_utils)`` remakes the package's functions as they were; library code
    (namedtuple, typing, logging, traceback) takes frames for itself, not for the learner."""
    assert full_marks(graded, submission), graded["rows"][(submission, "TOTAL")]


def test_a_reload_that_makes_new_classes_says_so(graded):
    """``importlib.reload(cu.grading)`` makes a new ``Wrong``, which the checks would not catch."""
    assert points(graded, "reload_grading.ipynb")["TOTAL"] == 0
    assert ("changes course_utils.grading, run again by importlib.reload, which made new classes"
            in feedback(graded, "reload_grading.ipynb", "TOTAL"))


# --- 2. the reference solution, by what it is ----------------------------------------------------

def test_words_are_not_the_reference(graded):
    """A local named ``reference``, the string, and notebook 04's import of a grading helper are fine."""
    assert full_marks(graded, "05_names.ipynb"), [r for k, r in graded["rows"].items() if k[0] == "05_names.ipynb"]


@pytest.mark.parametrize("submission", ["ref_call.ipynb", "ref_lambda.ipynb", "ref_partial.ipynb", "ref_alias.ipynb",
                                        "ref_solution.ipynb", "ref_getsource.ipynb", "ref_exec_inside.ipynb"])
def test_an_answer_that_is_or_calls_the_reference_earns_nothing(graded, submission):
    assert points(graded, submission) == {"01.nbytes": 0, "01.blank_like": 1, "TOTAL": 1}
    assert "course reference solution" in feedback(graded, submission, "01.nbytes")


def test_a_class_that_builds_the_reference_earns_nothing(graded):
    assert points(graded, "06_scaler_new.ipynb")["06.scaler"] == 0
    assert "course reference solution" in feedback(graded, "06_scaler_new.ipynb", "06.scaler")
    assert points(graded, "06_scaler_new.ipynb")["06.find_mismatches"] == 1


# --- 3. graded the way the notebook runs ---------------------------------------------------------

def test_later_cells_cannot_change_an_earlier_grade(graded):
    """Try-it code that rebinds an answer's name or sets a default device after the answer."""
    assert full_marks(graded, "07_later_cells.ipynb"), points(graded, "07_later_cells.ipynb")


@pytest.mark.parametrize("submission", ["modes_last.ipynb", "modes_back.ipynb"])
def test_modes_left_active_do_not_reach_the_checks_and_come_back_after(graded, submission):
    """A torch function mode and a dispatch mode that break every call, entered and left active by an
    answer cell, are not active during the checks; the next answer cell finds them again."""
    assert full_marks(graded, submission), (feedback(graded, submission, "01.nbytes"),
                                            feedback(graded, submission, "01.blank_like"))


def test_a_split_answer_cell_keeps_both_halves(graded):
    assert points(graded, "split.ipynb") == {"01.nbytes": 1, "01.blank_like": 1, "TOTAL": 2}


def test_patching_math_isclose_is_tampering(graded):
    assert points(graded, "07_isclose.ipynb")["TOTAL"] == 0
    assert "changes math.isclose" in feedback(graded, "07_isclose.ipynb", "TOTAL")


# --- 4. KeyboardInterrupt costs only its own exercise --------------------------------------------

@pytest.mark.parametrize("submission", ["ki_raised.ipynb", "ki_getattr.ipynb", "ki_str.ipynb"])
def test_keyboard_interrupt_costs_only_its_exercise(graded, submission):
    assert points(graded, submission) == {"01.nbytes": 0, "01.blank_like": 1, "TOTAL": 1}
    assert "grader" not in feedback(graded, submission, "01.nbytes").lower()


# --- 5. IPython syntax ----------------------------------------------------------------------------

def test_magics_help_and_shell_commands_run_as_in_jupyter(graded):
    assert points(graded, "ipython.ipynb") == {"01.nbytes": 1, "01.blank_like": 1, "TOTAL": 2}


def test_frame_access_is_found_after_an_operator_on_a_continuation_line(graded):
    assert points(graded, "frames.ipynb")["01.nbytes"] == 0
    assert "reads the call stack" in feedback(graded, "frames.ipynb", "01.nbytes")


@pytest.mark.parametrize("code, found", [
    ("import sys\nf = sys._getframe(1)\n", "sys._getframe"),
    ("import sys\nname = '_get' + 'frame'\nf = getattr(sys, name)(1)\n", "getattr(sys, name)"),
    ("import sys\nf = getattr(sys, '_get' + 'frame')(1)\n", "getattr(sys, '_get' + 'frame')"),
    ("import inspect as i\ndef f():\n    return i.stack()\n", "i.stack"),
    ("from inspect import stack\n", "from inspect import stack"),
    ("from inspect import *\n", "from inspect import *"),
    ("import traceback\nx = traceback.walk_stack(None)\n", "traceback.walk_stack"),
    ("x = __import__('inspect').trace()\n", "__import__('inspect').trace"),
    ("import gc\nx = gc.get_referrers(1)\n", "gc.get_referrers"),
    ("def f(e):\n    return e.__traceback__.tb_frame\n", "e.__traceback__.tb_frame"),
    ("import sys\nd = vars(sys)\n", "vars(sys)"),
    ("x = eval('sys._getframe(1)')\n", "'sys._getframe(1)'"),
    ("ok = (1\n!= 2)\ny = (10\n% 3)\nimport sys\nz = sys._getframe\n", "sys._getframe"),
    ("%timeit f()\nimport inspect\ninspect.currentframe()\n", "inspect.currentframe"),
    # not frame access
    ("reference = torch.device('cpu')\nx = 'reference'\n", None),
    ("from course_utils.grading import simulated_accelerator\n", None),
    ("from course_utils.exercises import get_exercise\n", None),  # the reference it leads to is found at run time
    ("def f(x):\n    return torch.stack([x, x]).trace()\n", None),
    ("def nbytes(t):\n    return t.numel() * t.element_size()\n%timeit nbytes(x)\nx?\n", None),
])
def test_reaches_into_course_finds_frame_access(code, found):
    assert submissions.reaches_into_course(code) == found


def test_cells_are_read_as_ipython_reads_them():
    assert submissions.strip_magics("torch.accelerator.is_available?\n") == \
        "get_ipython().run_line_magic('pinfo', 'torch.accelerator.is_available')\n"
    assert "run_line_magic('timeit', '-o f()')" in submissions.strip_magics("t = %timeit -o f()\n")
    assert submissions.strip_magics("x = (1\n!= 2)\n") == "x = (1\n!= 2)\n"  # an operator, not a shell command


# --- 6. cheats that scored before ------------------------------------------------------------------

@pytest.mark.parametrize("submission, cheats, says", [
    ("05_lies.ipynb", {"05.is_on": "return True or False", "05.model_device": "Return a single `torch.device`",
                       "05.training_bytes": "not a plain Python int"}, None),
    ("04_tensor_subclass.ipynb", {"04.mask_future": "a subclass of torch.Tensor of your own"}, None),
    ("04_function_mode.ipynb", {"04.mask_future": "should be -inf"}, None),
    ("04_dispatch_mode.ipynb", {"04.mask_future": "should be -inf"}, None),
    ("05_empties_table.ipynb", {"05.training_bytes": "you returned 0"}, "has no attribute 'clear'"),
])
def test_answers_that_lie_earn_nothing(graded, submission, cheats, says):
    """A value whose ``==`` or ``__class__`` lies, a tensor class that answers ``torch.equal``, a lenient
    mode left active by the answer, and a check's table emptied by the answer cell: each exercise is
    judged on plain values, and the others are graded as usual."""
    got = points(graded, submission)
    assert {e: got[e] for e in cheats} == dict.fromkeys(cheats, 0)
    assert got["TOTAL"] == len(got) - 1 - len(cheats), got
    for ex_id, text in cheats.items():
        assert text in feedback(graded, submission, ex_id) and (says or "") in feedback(graded, submission, ex_id)


@pytest.mark.parametrize("submission, changed", [
    ("04_hides_mode.ipynb", "torch._C._len_torch_function_stack"),
    ("empties_device_table.ipynb", "course_utils.device.NO_FLOAT64"),
])
def test_hiding_a_mode_or_emptying_a_table_is_tampering(graded, submission, changed):
    """Patching ``torch._C`` (to hide a mode from the grader) and changing what a course table holds,
    in place, are changes to what the checks rely on."""
    assert points(graded, submission)["TOTAL"] == 0
    assert f"changes {changed}" in feedback(graded, submission, "TOTAL")


@pytest.mark.parametrize("how, used", [("sys", "sys._getframe"), ("inspect", "inspect.stack"),
                                       ("traceback", "tb_frame")])
def test_taking_a_frame_by_a_computed_name_earns_nothing(graded, how, used):
    submission = f"frames_{how}.ipynb"
    assert points(graded, submission) == {"01.nbytes": 0, "01.blank_like": 1, "TOTAL": 1}
    assert f"took a frame of the call stack while it ran (`{used}`)" in feedback(graded, submission, "01.nbytes")


@pytest.mark.parametrize("how", sorted(COPIES_BY_COMPILE))
def test_a_copy_of_the_reference_made_without_exec_earns_nothing(graded, how):
    """``compile(cu.solution(...))``, then ``types.FunctionType`` or ``f.__code__ = ...``."""
    submission = f"copy_{how}.ipynb"
    assert points(graded, submission) == {"01.nbytes": 0, "01.blank_like": 1, "TOTAL": 1}
    assert "course reference solution" in feedback(graded, submission, "01.nbytes")


# --- 7. the grader's own limits --------------------------------------------------------------------

def test_running_out_of_memory_while_verifying_is_not_tampering(graded):
    """An answer cell that leaves no memory for the integrity check loses its own exercise, with the
    reason; the rest is graded."""
    assert points(graded, "memory_hog.ipynb") == {"01.nbytes": 0, "01.blank_like": 1, "TOTAL": 1}
    assert "memory" in feedback(graded, "memory_hog.ipynb", "01.nbytes")
    assert "changes" not in feedback(graded, "memory_hog.ipynb", "TOTAL")


def test_verify_frees_memory_then_says_the_grader_ran_out(monkeypatch):
    snap = integrity.take_snapshot()
    failures = iter([MemoryError()])

    def changes_once(s):
        error = next(failures, None)
        if error:
            raise error
        return []

    freed = []
    monkeypatch.setattr(integrity, "changes", changes_once)
    assert integrity.verify(snap, lambda: freed.append(True)) == [] and freed == [True]

    def never(s):
        raise MemoryError()

    monkeypatch.setattr(integrity, "changes", never)
    with pytest.raises(integrity.GraderLimit, match="the grader ran out of memory"):
        integrity.verify(snap, lambda: None)


# --- 8. the grade belongs to the assignment --------------------------------------------------------

def test_a_notebook_is_graded_as_the_lesson_of_its_answer_cells_whatever_its_name(graded):
    assert points(graded, "04_team_tensors.ipynb") == {"01.nbytes": 1, "01.blank_like": 1, "TOTAL": 2}
    l02 = points(graded, "01_tensors.ipynb")
    assert sorted(l02) == sorted(L02 + ["TOTAL"]) and l02["TOTAL"] == sum(get_exercise(e).points for e in L02)
    assert "graded as lesson 01, the lesson of its answer cells (its name says 04)" in graded["out"]


def test_forced_to_another_lesson_a_notebook_scores_nothing_and_says_why(tmp_path):
    path = tmp_path / "01_tensors.ipynb"
    path.write_text(json.dumps(SUBMISSIONS["01_tensors.ipynb"]), encoding="utf-8")
    grade = classroom.grade_notebook(str(path), classroom.Limits(), lesson="01")
    assert grade.points == 0 and [r.exercise for r in grade.rows] == ["01.blank_like", "01.nbytes"]
    text = next(r.feedback for r in grade.rows if r.exercise == "01.nbytes")
    assert "Answer cell missing" in text and all(e in text for e in L02) and "right notebook" in text


def test_answer_cells_of_other_lessons_are_not_run(graded):
    assert points(graded, "01_stray.ipynb") == {"01.nbytes": 1, "01.blank_like": 1, "TOTAL": 2}


def test_the_answer_cells_say_the_lesson_first():
    cells_02 = classroom.answer_cells(notebook(*(cell(e, "") for e in L02)))
    assert classroom.lesson_of("01_tensors.ipynb", cells_02) == "02"
    assert classroom.lesson_of("alice.ipynb", cells_02) == "02"
    mixed = classroom.answer_cells(notebook(cell("01.nbytes", ""), cell(L02[0], ""), cell(L02[1], "")))
    assert classroom.lesson_of("alice.ipynb", mixed) == "02"  # most of its answer cells
    tie = classroom.answer_cells(notebook(cell("01.nbytes", ""), cell(L02[0], "")))
    assert classroom.lesson_of("alice.ipynb", tie) is None
    assert classroom.lesson_of("03_alice.ipynb", tie) == "03"  # then the file name


def test_answer_cells_keep_every_marked_cell_in_order():
    nb = SUBMISSIONS["split.ipynb"]
    assert [(i, e) for i, e, _ in classroom.answer_cells(nb)] == [(0, "01.nbytes"), (2, "01.nbytes"),
                                                             (3, "01.blank_like")]


# --- the pieces, in this process ---------------------------------------------------------------------

@pytest.fixture
def guard():
    namespace: dict = {"torch": torch, "cu": cu}
    g = integrity.ReferenceGuard(namespace)
    g.install()
    try:
        yield g
    finally:
        g.remove()


def test_the_guard_tells_references_from_answers(guard):
    import functools
    import inspect

    ref = cu.lessons.l01_tensors.nbytes
    scope: dict = {}
    exec(cu.exercises.get_exercise("01.nbytes").solution_source, scope)  # a copy, not from an answer cell
    assert guard.is_reference(ref) and guard.is_reference(functools.partial(ref))
    assert guard.is_reference(scope["nbytes"])
    assert guard.is_reference(type("Sub", (cu.lessons.l06_mismatch_errors.Scaler,), {}))
    pasted = compile(SOL["01.nbytes"], "<answer cell 01.nbytes>", "exec")  # typed into the answer cell
    guard.answer_code(pasted)
    exec(pasted, guard.namespace)
    assert not guard.is_reference(guard.namespace["nbytes"])
    assert not guard.is_reference(lambda t: t.element_size() * t.numel())
    assert guard.is_reference(lambda t: t.numel() * t.element_size())  # the same code, not from an answer cell
    assert textwrap.dedent(inspect.getsource(ref)).strip() + "\n" == SOL["01.nbytes"]  # still its own source
    assert str(inspect.signature(ref)) == "(t)"


def test_the_guard_sees_who_calls_a_reference(guard):
    pasted = compile(SOL["01.nbytes"], "<answer cell 01.nbytes>", "exec")
    guard.answer_code(pasted)
    exec(pasted, guard.namespace)
    with guard.running("01.nbytes", checking=True):
        cu.check("01.nbytes", guard.namespace["nbytes"])  # the checker calls the reference itself
    assert not guard.flagged
    exec("def nbytes(t):\n    return cu.lessons.l01_tensors.nbytes(t)\n", guard.namespace)
    with guard.running("01.nbytes", checking=True):
        result = cu.check("01.nbytes", guard.namespace["nbytes"])
    assert result.status == "passed" and guard.flagged == {"01.nbytes"}  # passed the check, but called it


def test_the_guard_sees_reference_code_run_from_a_string(guard):
    renamed = SOL["01.blank_like"].replace("def blank_like", "def helper")
    with guard.running("01.blank_like", checking=False):
        exec("x = 1\n", {})
    assert not guard.flagged
    with guard.running("01.blank_like", checking=False):
        exec(renamed, {"torch": torch})
    assert guard.flagged == {"01.blank_like"}


def test_the_guard_sees_reference_code_made_into_a_function(guard):
    """Compiled from the reference's source, then made into a function without ``exec``."""
    import types

    code = compile(SOL["01.nbytes"], "mine", "exec").co_consts[0]
    with guard.running("01.blank_like", checking=True):
        types.FunctionType(compile("def f(t):\n    return t\n", "mine", "exec").co_consts[0], {})
    assert not guard.flagged
    with guard.running("01.nbytes", checking=True):
        types.FunctionType(code, {})
    with guard.running("01.blank_like", checking=False):
        def mine(t):
            return 0
        mine.__code__ = code
    assert guard.flagged == {"01.nbytes", "01.blank_like"}


def test_the_guard_notes_frames_taken_by_learner_code_only(guard):
    answers = ("import sys\ndef f():\n    return getattr(sys, '_get' + 'frame')(0)\n"
               "import collections, typing\ndef g():\n    typing.TypeVar('T')\n"
               "    return collections.namedtuple('P', 'a')\n")
    exec(compile(answers, "<answer cell 01.nbytes>", "exec"), guard.namespace)
    with guard.running("01.blank_like", checking=True):
        guard.namespace["g"]()  # library code that takes a frame for itself
    assert guard.frames_read == {}
    with guard.running("01.nbytes", checking=True):
        guard.namespace["f"]()
    assert guard.frames_read == {"01.nbytes": "sys._getframe"}


def test_changes_sees_what_a_table_holds_and_forgives_a_reload():
    import importlib

    snap = integrity.take_snapshot()
    importlib.reload(cu)  # runs the package again: the same functions and records, remade
    assert integrity.changes(snap) == []
    table = cu.device.NO_FLOAT64
    saved = set(table)
    table.clear()
    try:
        assert integrity.changes(snap) == ["course_utils.device.NO_FLOAT64"]
    finally:
        table.update(saved)
    assert integrity.changes(snap) == []


def test_pristine_torch_inside_and_the_learners_state_after():
    start = integrity.torch_settings()
    torch.set_default_device("meta")
    torch.set_default_dtype(torch.float64)
    try:
        with integrity.pristine_torch(start):
            assert torch.get_default_device() == torch.device("cpu")
            assert torch.get_default_dtype() == torch.float32
            assert torch._C._len_torch_function_stack() == 0
        assert torch.get_default_device() == torch.device("meta")
        assert torch.get_default_dtype() == torch.float64
        assert torch._C._len_torch_function_stack() == 1
    finally:
        torch.set_default_dtype(torch.float32)
        cu.exercises._restore_default_device(None)
    assert torch._C._len_torch_function_stack() == 0
