"""Submissions for the tests of :mod:`course_utils.classroom`: notebooks built in memory, graded by
``python -m course_utils grade`` in real worker processes, and the CSV rows read back.

The three batches that several test files read (:data:`BATCH`, the odd files of :func:`odd_files` and
:data:`WORKER`) are graded once per test session (see ``conftest.py``).
"""
from __future__ import annotations

import contextlib
import copy
import csv
import inspect
import io
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from course_utils.__main__ import main
from course_utils.classroom import Limits
from course_utils.classroom.reading.cells import MAX_ANSWER_CHARS
from course_utils.exercises import exercise_ids, get_exercise
from course_utils.notebook import cell_source, exercise_cells
from hostile_values import ClaimsToBe, EqualsAnything, LenientDispatchMode, LenientMode, always_equal
from nbtools import NOTEBOOK_DIR, ROOT, load, with_solutions

#: For tests that need Linux (``/proc``, ``prctl``), as grading a batch you can trust does.
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="grading needs Linux (/proc, prctl)")

NB01 = load(NOTEBOOK_DIR / "01_tensors.ipynb")
SOL = {ex_id: get_exercise(ex_id).solution_source for ex_id in exercise_ids()}
L01 = [e for e in exercise_ids() if get_exercise(e).lesson == "01"]
L02 = [e for e in exercise_ids() if get_exercise(e).lesson == "02"]
NBYTES, OTHER = "01.nbytes", next(e for e in L01 if e != "01.nbytes")
LESSONS = sorted({get_exercise(e).lesson for e in exercise_ids()})


def points_of(*ids: str) -> int:
    """The points of these exercises together, full marks (as :mod:`course_utils.exercises` declares them)."""
    return sum(get_exercise(e).points for e in ids)


def marks(passed: dict[str, bool]) -> dict[str, int]:
    """Exercise (and ``TOTAL``) -> points, as :meth:`Rows.points` gives them: each exercise of ``passed``
    that passed earns its full points, each that did not earns 0."""
    got = {e: points_of(e) if ok else 0 for e, ok in passed.items()}
    return {**got, "TOTAL": sum(got.values())}


def full(*ids: str) -> dict[str, int]:
    """:func:`marks` with every exercise of ``ids`` passed."""
    return marks(dict.fromkeys(ids, True))


#: Full marks for lesson 01.
L01_POINTS = points_of(*L01)

#: Limits for :data:`BATCH`: short, so that its hangs end soon.
SHORT_LIMITS = ["--timeout", "12", "--cell-timeout", "3", "--check-timeout", "2", "--memory-mb", "640"]
LIMITS = ["--timeout", "20", "--cell-timeout", "10", "--check-timeout", "5", "--memory-mb", "640"]
#: :data:`LIMITS` as :class:`course_utils.classroom.Limits`.
SMALL = Limits(timeout=20, cell_timeout=10, check_timeout=5, memory_mb=640)
#: Limits for :data:`WORKER`: roomy, for answers that do a lot while they are checked.
LONG_LIMITS = ["--timeout", "60", "--cell-timeout", "20", "--check-timeout", "10", "--memory-mb", "640"]


# --- building notebooks -------------------------------------------------------------------------

def notebook01(answers: dict[str, str | None], check_cell: str | None = None) -> dict:
    """Notebook 01 with these answer-cell sources (``None`` deletes the cell; absent: the stub); with
    ``check_cell``, every check cell edited to it, with a faked saved output."""
    nb = copy.deepcopy(NB01)
    for ex_id, cell in exercise_cells(nb).items():
        if ex_id in answers and answers[ex_id] is None:
            nb["cells"].remove(cell)
        elif ex_id in answers:
            cell["source"] = answers[ex_id]
    if check_cell is not None:
        for cell in nb["cells"]:
            if cell["cell_type"] == "code" and cell_source(cell).startswith("cu.exercise("):
                cell["source"] = check_cell
                cell["outputs"] = [{"output_type": "stream", "name": "stdout",
                                    "text": ["✔ passed (1/1 points)\n"]}]
    return nb


def solved01(first: str = "") -> dict:
    """Notebook 01, solved, with ``first`` run at the start of the 01.nbytes answer cell."""
    return notebook01({**{e: SOL[e] for e in L01}, NBYTES: first + SOL[NBYTES]})


def solved_lesson(lesson: str) -> dict:
    """A minimal notebook whose answer cells hold the reference solutions of ``lesson``."""
    cells = [{"cell_type": "code", "execution_count": None, "id": ex_id.replace(".", "-"), "outputs": [],
              "metadata": {"course": {"exercise": ex_id}}, "source": get_exercise(ex_id).solution_source}
             for ex_id in exercise_ids() if ex_id.startswith(lesson + ".")]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def cell(ex_id: str | None, source: str) -> dict:
    """A code cell; an answer cell of ``ex_id`` unless that is ``None``."""
    return {"cell_type": "code", "execution_count": None, "outputs": [], "source": source,
            "metadata": {"course": {"exercise": ex_id}} if ex_id else {}}


def notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def answers01(nbytes: str = SOL["01.nbytes"], blank_like: str = SOL["01.blank_like"]) -> dict:
    """Lesson 01's answer cells (solved unless given), with a cell of the learner's own between them."""
    return notebook(cell("01.nbytes", nbytes), cell(None, "print('try it')\n"), cell("01.blank_like", blank_like))


def answers04(to_accelerator: str = SOL["04.to_accelerator"], mask_future: str = SOL["04.mask_future"]) -> dict:
    return notebook(cell("04.to_accelerator", to_accelerator), cell("04.mask_future", mask_future))


def answers05(is_on: str = SOL["05.is_on"], model_device: str = SOL["05.model_device"],
              training_bytes: str = SOL["05.training_bytes"]) -> dict:
    return notebook(cell("05.is_on", is_on), cell("05.model_device", model_device),
                    cell("05.training_bytes", training_bytes))


def write(root: Path, files: dict[str, dict | str | bytes], indent: int | None = None) -> None:
    """Write each notebook (as JSON, indented by ``indent``), text or bytes under ``root``."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else json.dumps(content, indent=indent),
                            encoding="utf-8")


# --- grading them and reading the rows -----------------------------------------------------------

class Rows(dict):
    """CSV rows by (submission, exercise)."""

    @classmethod
    def parse(cls, text: str) -> Rows:
        return cls({(r["submission"], r["exercise"]): r for r in csv.DictReader(io.StringIO(text, newline=""))})

    @classmethod
    def read(cls, path: Path) -> Rows:
        with open(path, encoding="utf-8", newline="") as f:
            return cls.parse(f.read())

    def points(self, submission: str) -> dict[str, int]:
        """Exercise (and ``TOTAL``) -> points."""
        return {ex: int(r["points"]) for (sub, ex), r in self.items() if sub == submission}

    def feedback(self, submission: str, exercise: str) -> str:
        return self[submission, exercise]["feedback"]

    def full_marks(self, submission: str) -> bool:
        total = self[submission, "TOTAL"]
        return total["points"] == total["max_points"] != "0"

    def has_rows_of(self, submission: str, exercises: list[str]) -> bool:
        """The submission has one row per exercise of ``exercises``, and its TOTAL."""
        return sorted(ex for sub, ex in self if sub == submission) == sorted(exercises + ["TOTAL"])


@dataclass
class Batch:
    """What ``grade`` did with a batch: its exit code, output and CSV."""

    code: int
    out: str
    err: str
    root: Path
    text: str
    rows: Rows


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``python -m course_utils grade ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["grade", *argv])
    return code, out.getvalue(), err.getvalue()


def grade_in(root: Path, *argv: str, out: str = "grades.csv") -> Batch:
    """:func:`run_cli` with ``--out OUT``, run in ``root`` (submissions are named by the paths given,
    relative there), and the CSV it wrote (``OUT`` is relative to ``root``)."""
    cwd = os.getcwd()
    os.chdir(root)
    try:
        code, stdout, stderr = run_cli(*argv, "--out", out)
    finally:
        os.chdir(cwd)
    path = root / out
    with open(path, encoding="utf-8", newline="") if path.exists() else io.StringIO() as f:
        text = f.read()
    return Batch(code, stdout, stderr, root, text, Rows.parse(text))


def grade_subprocess(cwd: Path, *argv: str, timeout: float) -> subprocess.CompletedProcess:
    """``python -m course_utils grade ARGV`` as a process of its own, in ``cwd``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "course_utils", "grade", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


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
        "    return [p for p in ancestors() if b'classroom.sandbox.forkserver import serve' in cmdline(p)][-1]\n"
        "def grader():\n"
        "    return next(p for p in ancestors() if b'-m\\x00course_utils\\x00grade' in cmdline(p))\n")


# --- BATCH: lesson 01 solved, wrong, missing, tampered, hanging, crashing; every lesson solved -----

HARD_HANG = ("import time\n"
             "while True:\n"
             "    try:\n"
             "        time.sleep(100)\n"
             "    except BaseException:  # swallows the cell's time limit\n"
             "        pass\n")

BATCH = {
    "subs/solved.ipynb": with_solutions(NB01),
    "subs/unsolved.ipynb": notebook01({}),
    "subs/mistakes.ipynb": notebook01({
        "01.nbytes": SOL["01.nbytes"],
        "01.blank_like": "def blank_like(t):\n    return torch.zeros(t.shape, dtype=t.dtype)\n"}),
    "subs/mistakes2.ipynb": notebook01({
        "01.nbytes": "def nbytes(t):\n    return t.numel()\n",
        "01.blank_like": "def blank_like(t):\n    return t * 0\n"}),
    "subs/missing_cell.ipynb": notebook01({"01.nbytes": SOL["01.nbytes"], "01.blank_like": None}),
    "subs/broken.ipynb": notebook01({
        "01.nbytes": "def nbytes(t)\n    return t.numel() * t.element_size()\n",
        "01.blank_like": SOL["01.blank_like"] + "print(blank_like(undefined_name))\n"}),
    "subs/honest_extras.ipynb": notebook01({
        "01.nbytes": ("import warnings\ntorch.manual_seed(0)\ntorch.set_default_device('meta')\n"
                      "torch.set_default_device('cpu')\nwarnings.warn('just a warning')\n"
                      + SOL["01.nbytes"] + "%timeit nbytes(torch.ones(3))\n"
                      "print(cu.check('01.nbytes', nbytes))\ndisplay(nbytes)\n"),
        "01.blank_like": ("class Tiny(nn.Module):\n    def forward(self, x):\n        return F.relu(x)\n"
                          "Tiny()(torch.ones(2))\n" + SOL["01.blank_like"])}),
    # tampering: the answers are stubs, the rest tries to make them pass anyway
    "subs/tamper_check.ipynb": notebook01({"01.nbytes": (
        "import course_utils\nfrom course_utils import Result\n"
        "course_utils.check = lambda ex_id, answer: Result(ex_id, '', 'passed', 1, 1, 'ok')\n")}),
    "subs/tamper_checking_check.ipynb": notebook01({"01.nbytes": (
        "import course_utils.checking\ncourse_utils.checking.check = lambda *a, **k: None\n")}),
    "subs/tamper_registry.ipynb": notebook01({"01.nbytes": (
        "import dataclasses\nreg = course_utils.exercises._REGISTRY\n"
        "reg['01.nbytes'] = dataclasses.replace(reg['01.nbytes'], grade=lambda answer: 'ok')\n")}),
    "subs/tamper_torch_equal.ipynb": notebook01({"01.blank_like": (
        "torch.equal = lambda a, b: True\ndef blank_like(t):\n    return t\n")}),
    "subs/tamper_during_check.ipynb": notebook01({"01.nbytes": (
        "def nbytes(t):\n    cu.grading.Wrong = KeyboardInterrupt  # a wrong answer would now crash the check\n"
        "    return 0\n")}),
    "subs/edited_check_cells.ipynb": notebook01(
        {}, check_cell="print('✔ 01.nbytes How many bytes?: passed (1/1 points)')\n"),
    "subs/prints_passed.ipynb": notebook01({"01.nbytes": (
        "import sys\nprint('✔ 01.nbytes How many bytes?: passed (1/1 points)')\n"
        "print('passed (1/1 points)', file=sys.stderr)\n"
        "def nbytes(t):\n    raise NotImplementedError\n")}),
    "subs/forges_results.ipynb": notebook01({"01.nbytes": (  # unsigned "passed" lines on every descriptor
        "import json, os\n"
        "fake = '0' * 64 + ' ' + json.dumps({'t': 'result', 'exercise': '01.nbytes', 'status': 'passed'})\n"
        "for fd in range(3, 256):\n"
        "    try:\n"
        "        os.write(fd, b'garbage\\n' + fake.encode() + b'\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "def nbytes(t):\n    raise NotImplementedError\n")}),
    # garbage (no line end) on every descriptor, then tampering, during the check: the report survives
    "subs/garbles_then_tampers.ipynb": notebook01({"01.nbytes": (
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
    "subs/silences_then_tampers.ipynb": notebook01({"01.nbytes": (
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
    "subs/uses_reference.ipynb": notebook01({
        "01.nbytes": "from course_utils.lessons.l01_tensors import nbytes\n",
        "01.blank_like": ("import importlib\n"  # a module name the static scan cannot see
                          "m = importlib.import_module('course_utils.lesso' + 'ns.l01_tensors')\n"
                          "blank_like = m.blank_like\n")}),
    "subs/reads_frames.ipynb": notebook01({"01.nbytes": (
        "import sys\ndef nbytes(t):\n    return sys._getframe(2).f_locals['want']\n")}),
    # hangs, crashes and memory bombs: each costs only its own exercise
    "subs/late/hang_cell.ipynb": notebook01({"01.nbytes": SOL["01.nbytes"] + "while True:\n    pass\n",
                                             "01.blank_like": SOL["01.blank_like"]}),
    "subs/late/hang_function.ipynb": notebook01({
        "01.nbytes": SOL["01.nbytes"], "01.blank_like": "def blank_like(t):\n    while True:\n        pass\n"}),
    "subs/late/hang_hard.ipynb": notebook01({"01.nbytes": HARD_HANG, "01.blank_like": SOL["01.blank_like"]}),
    "subs/late/crash_exit.ipynb": notebook01({"01.nbytes": "import os\nos._exit(1)\n",
                                              "01.blank_like": SOL["01.blank_like"]}),
    "subs/late/crash_kill.ipynb": notebook01({
        "01.nbytes": SOL["01.nbytes"],
        "01.blank_like": "import os, signal\ndef blank_like(t):\n    os.kill(os.getpid(), signal.SIGKILL)\n"}),
    "subs/late/crash_segfault.ipynb": notebook01({"01.nbytes": SOL["01.nbytes"],
                                                  "01.blank_like": "import ctypes\nctypes.string_at(0)\n"}),
    "subs/late/memory_cell.ipynb": notebook01({
        "01.nbytes": SOL["01.nbytes"] + "big = torch.empty(50 * 2**30, dtype=torch.uint8)\n",
        "01.blank_like": SOL["01.blank_like"]}),
    "subs/late/memory_growth.ipynb": notebook01({
        "01.nbytes": "def nbytes(t):\n    return torch.ones(2**31, dtype=torch.uint8).numel()  # 2 GB\n",
        "01.blank_like": "chunks = []\nwhile True:\n    chunks.append(' ' * 2**26)\n"}),
    # a checkpoint copy must be ignored; a second solved.ipynb tests Gradescope folder names
    "subs/.ipynb_checkpoints/solved-checkpoint.ipynb": notebook01({}),
    "subs/late/solved.ipynb": notebook01({e: SOL[e] for e in ("01.nbytes", "01.blank_like")}),
    **{f"lessons/{lesson}_solved.ipynb": solved_lesson(lesson) for lesson in LESSONS},
}
#: Files of :data:`BATCH`'s run that are not notebooks.
BATCH_BROKEN = {"01_corrupt.ipynb": '{"cells": [', "not_a_notebook.ipynb": json.dumps([1, 2, 3])}


# --- odd files: hard to read, but each gets its rows ------------------------------------------------

BIG_OUTPUT = {"output_type": "stream", "name": "stdout", "text": ["x" * (110 * 2**20)]}


def odd_files() -> dict[str, dict | str | bytes]:
    """Submissions that are hard to read (``zz_link_to_solved.ipynb`` is to become a link to
    ``solved.ipynb``)."""
    renamed = with_solutions(NB01)
    for c in renamed["cells"]:  # a notebook re-created without the answer cells' metadata
        c.get("metadata", {}).pop("course", None)
    huge = with_solutions(NB01)
    next(c for c in huge["cells"] if c["cell_type"] == "code")["outputs"] = [BIG_OUTPUT]
    return {
        "surrogate.ipynb": json.dumps(solved01("# a comment with a lone surrogate: \ud800\n")),
        "deep_expression.ipynb": solved01("x = " + "-" * 100_000 + "1\n"),
        "null_byte.ipynb": solved01("x = 1  # \x00\n"),
        "too_long.ipynb": solved01("x = 1\n" * (MAX_ANSWER_CHARS // 6 + 1)),
        "01_deep.ipynb": "[" * 100_000 + "]" * 100_000,
        "renamed.ipynb": renamed,
        "no_clue.ipynb": "this is not a notebook",
        "huge_output.ipynb": huge,
        "bom.ipynb": b"\xef\xbb\xbf" + json.dumps(solved01()).encode(),
        "latin1.ipynb": json.dumps(solved01("# caf\u00e9\n"), ensure_ascii=False).encode("latin-1"),
        "solved.ipynb": solved01(),
        # a link to another student's file is another submission, under its own name
        "zz_link_to_solved.ipynb": "placeholder",
    }


# --- WORKER: what the worker runs, in what order, and what it counts against an answer --------------

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


def defining(*objects) -> str:
    """Answer-cell source that defines these lying values and modes of hostile_values."""
    return ("from torch.overrides import TorchFunctionMode\n"
            "from torch.utils._python_dispatch import TorchDispatchMode\n\n"
            + "".join(textwrap.dedent(inspect.getsource(o)) + "\n" for o in objects))


# Cheats that scored before: each answer is wrong, and lies about it.
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
    "logging": "def nbytes(t):\n    frame = getattr(__import__('logg' + 'ing'), 'current' + 'frame')()\n" + WALK_TO_WANT,
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

WORKER = {
    # 1. honest PyTorch is never tampering
    "dtype.ipynb": answers01(nbytes=SOL["01.nbytes"] + "torch.set_default_dtype(torch.float64)\n"),
    "compiled.ipynb": answers01(nbytes=("@torch.compile(backend='eager')\ndef double(x):\n    return 2 * x\n"
                                        "double(torch.ones(3))\n" + SOL["01.nbytes"])),
    "reload.ipynb": answers01(nbytes="import importlib\nimportlib.reload(course_utils)\n" + SOL["01.nbytes"]),
    "reload_grading.ipynb": answers01(nbytes="import importlib\nimportlib.reload(cu.grading)\n" + SOL["01.nbytes"]),
    "libraries.ipynb": answers01(blank_like=(  # library code that takes frames for itself is not the learner's
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
    "ref_call.ipynb": answers01(nbytes="def nbytes(t):\n    return cu.lessons.l01_tensors.nbytes(t)\n"),
    "ref_lambda.ipynb": answers01(nbytes="import importlib\nm = importlib.import_module('course_utils.lesso' + "
                                        "'ns.l01_tensors')\nnbytes = lambda t: m.nbytes(t)\n"),
    "ref_partial.ipynb": answers01(nbytes="import functools\n"
                                          "nbytes = functools.partial(cu.lessons.l01_tensors.nbytes)\n"),
    "ref_alias.ipynb": answers01(nbytes="from course_utils.lessons.l01_tensors import nbytes\n"),
    "ref_solution.ipynb": answers01(nbytes="exec(cu.solution('01.nbytes', force=True))\n"),
    "ref_getsource.ipynb": answers01(nbytes="import inspect\n"
                                            "exec(inspect.getsource(cu.lessons.l01_tensors.nbytes))\n"),
    "ref_exec_inside.ipynb": answers01(nbytes="def nbytes(t):\n    scope = {}\n"
                                              "    exec(cu.solution('01.nbytes', force=True), scope)\n"
                                              "    return scope['nbytes'](t)\n"),
    "06_scaler_new.ipynb": notebook(cell("06.scaler", SCALER_NEW),
                                    cell("06.find_mismatches", SOL["06.find_mismatches"])),
    # 3. cells run in notebook order, each exercise checked after its last cell, in a pristine PyTorch
    "07_later_cells.ipynb": notebook(
        cell("07.bandwidth_gbps", SOL["07.bandwidth_gbps"]),
        cell("07.transfer_time", SOL["07.transfer_time"] + "bandwidth_gbps = bandwidth_gbps(12e9, 1.0)\n"),
        cell("07.sum_batches", SOL["07.sum_batches"] + "torch.set_default_device('meta')\n"),
        cell("07.capstone", SOL["07.capstone"])),
    "modes_last.ipynb": answers01(blank_like=SOL["01.blank_like"] + MODES),
    "modes_back.ipynb": answers01(nbytes=SOL["01.nbytes"] + MODES, blank_like=MODES_BACK + SOL["01.blank_like"]),
    "split.ipynb": notebook(cell("01.nbytes", "def element_bytes(t):\n    return t.element_size()\n"),
                            cell(None, "x = 1\n"),
                            cell("01.nbytes", "def nbytes(t):\n    return t.numel() * element_bytes(t)\n"),
                            cell("01.blank_like", SOL["01.blank_like"])),
    "07_isclose.ipynb": notebook(
        cell("07.bandwidth_gbps", "math.isclose = lambda *args, **kwargs: True\n"
                                  "def bandwidth_gbps(nbytes, seconds):\n    return 0.0\n"),
        cell("07.transfer_time", SOL["07.transfer_time"]), cell("07.sum_batches", SOL["07.sum_batches"])),
    # 4. KeyboardInterrupt costs only its own exercise
    "ki_raised.ipynb": answers01(nbytes="def nbytes(t):\n    raise KeyboardInterrupt\n"),
    "ki_getattr.ipynb": answers01(nbytes="class Odd:\n    def __getattr__(self, name):\n"
                                         "        raise KeyboardInterrupt\nnbytes = Odd()\n"),
    "ki_str.ipynb": answers01(nbytes=KEYBOARD_INTERRUPT_STR),
    # 5. IPython syntax, as Jupyter reads it
    "ipython.ipynb": answers01(nbytes=(SOL["01.nbytes"] + "torch.accelerator.is_available?\n"
                                       "t = %timeit -o nbytes(torch.ones(3))\n!echo hello\nfiles = !ls\n"),
                               blank_like="%%time\n" + SOL["01.blank_like"]),
    "frames.ipynb": answers01(nbytes=("import sys\nok = (1\n!= 2)\n"
                                      "def nbytes(t):\n    return getattr(sys, '_get' + 'frame')(2).f_back\n")),
    "await.ipynb": answers01(nbytes=("import asyncio\nawait asyncio.sleep(0)\n"
                                     "async def element_size(t):\n    return t.element_size()\n"
                                     "size_of_one = await element_size(torch.ones(1))\n" + SOL["01.nbytes"])),
    # 5b. honest reshapes of the notebook: a copied setup cell, answer cells merged (either marker kept)
    "setup_again.ipynb": answers01(nbytes=('import torch\nimport course_utils as cu\n\ndevice = cu.setup("01")\n'
                                          + SOL["01.nbytes"])),
    "merged_first.ipynb": notebook(cell("01.nbytes", SOL["01.nbytes"] + "\n" + SOL["01.blank_like"]),
                                   cell(None, "print('try it')\n")),
    "merged_second.ipynb": notebook(cell(None, "x = 1\n"),
                                    cell("01.blank_like", SOL["01.nbytes"] + "\n" + SOL["01.blank_like"])),
    "07_merged.ipynb": notebook(cell("07.capstone", "\n".join(SOL[e] for e in sorted(SOL) if e.startswith("07.")))),
    # 6. cheats that scored before: lying values, lenient modes, hidden modes, emptied tables, frames and copies
    "05_lies.ipynb": answers05(is_on=LIES_CLASS, model_device=LIES_DEVICE, training_bytes=LIES_INT),
    "04_tensor_subclass.ipynb": answers04(mask_future=LIES_TENSOR),
    "04_function_mode.ipynb": answers04(mask_future=LENIENT_FUNCTION_MODE),
    "04_dispatch_mode.ipynb": answers04(mask_future=LENIENT_DISPATCH_MODE),
    "04_hides_mode.ipynb": answers04(mask_future=HIDES_MODE),
    "05_empties_table.ipynb": answers05(training_bytes=EMPTIES_TABLE),
    "empties_device_table.ipynb": answers01(nbytes="cu.device.NO_FLOAT64.clear()\n" + SOL["01.nbytes"]),
    **{f"frames_{how}.ipynb": answers01(nbytes=code) for how, code in READS_FRAMES.items()},
    **{f"copy_{how}.ipynb": answers01(nbytes=code) for how, code in COPIES_BY_COMPILE.items()},
    # 7. the grader's own limits are not the learner's fault
    "memory_hog.ipynb": answers01(nbytes=SOL["01.nbytes"] + HOG),
    # 8. the grade belongs to the assignment
    "01_tensors.ipynb": with_solutions(load(NOTEBOOK_DIR / "02_cpu_vs_gpu.ipynb")),
    "04_team_tensors.ipynb": answers01(),  # lesson 01's notebook under another lesson's number
    "01_stray.ipynb": notebook(*answers01()["cells"], cell("02.pick_device", "import os\nos._exit(1)\n")),
}
