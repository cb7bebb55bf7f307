"""Grading an assessed class: the mode is the grader's (an answer cannot switch it), and what an answer writes by a
relative path lands in its run's own folder, never in the folder being graded."""
from __future__ import annotations

import os

from course_utils import modes

from .cases import LIMITS, Rows, answers01, grade_in, grade_subprocess, write

#: A wrong 01.blank_like whose feedback hands over the code to write (withheld in assessed mode).
WRONG_BLANK = "def blank_like(t):\n    return torch.zeros(t.shape)\n"
#: The same answer, after a line that tries to switch the grader to the formative mode.
SWITCHING = "import os\nos.environ['COURSE_MODE'] = 'formative'\n" + WRONG_BLANK


def test_an_answer_cannot_switch_an_assessed_grading_to_formative(tmp_path, monkeypatch):
    write(tmp_path, {"plain.ipynb": answers01(blank_like=WRONG_BLANK),
                     "switching.ipynb": answers01(blank_like=SWITCHING)})
    monkeypatch.delenv(modes.MODE_ENV, raising=False)
    formative = grade_in(tmp_path, "plain.ipynb", *LIMITS, out="formative.csv").rows.feedback("plain.ipynb",
                                                                                                "01.blank_like")
    monkeypatch.setenv(modes.MODE_ENV, modes.ASSESSED)
    graded = grade_in(tmp_path, "plain.ipynb", "switching.ipynb", *LIMITS, out="assessed.csv").rows
    plain, switching = graded.feedback("plain.ipynb", "01.blank_like"), graded.feedback("switching.ipynb",
                                                                                         "01.blank_like")
    assert formative != plain, "the test needs feedback that assessed mode shortens"
    assert switching == plain == modes.withhold_fixes(formative)
    assert graded.points("switching.ipynb")["01.blank_like"] == 0


def test_files_an_answer_writes_by_a_relative_path_stay_out_of_the_graded_folder(tmp_path):
    writes = "open('left-behind.txt', 'w').write('x')\nimport os\nos.makedirs('out', exist_ok=True)\n"
    write(tmp_path, {"writer.ipynb": answers01(nbytes=writes + "def nbytes(t):\n    return t.nbytes\n")})
    done = grade_subprocess(tmp_path, "writer.ipynb", *LIMITS, "--out", "grades.csv", timeout=300)   # run from there
    assert done.returncode == 0, done.stderr
    assert Rows.read(tmp_path / "grades.csv").full_marks("writer.ipynb")
    assert sorted(os.listdir(tmp_path)) == ["grades.csv", "writer.ipynb"]


def test_an_answer_that_registers_a_kernel_below_python_is_tampering(tmp_path):
    """``torch.library`` can replace an operator's kernel for a dispatch key (here ``aten::equal``, which checks
    compare with): a wrong result would then compare equal. That is caught like a patched Python function."""
    register = ("import torch\n_lib = torch.library.Library('aten', 'IMPL')\n"
                "_lib.impl('equal', lambda a, b: True, 'CPU')\n")
    write(tmp_path, {"kernel.ipynb": answers01(nbytes=register + "def nbytes(t):\n    return 0\n")})
    rows = grade_in(tmp_path, "kernel.ipynb", *LIMITS).rows
    assert sum(rows.points("kernel.ipynb").values()) == 0
    said = rows.feedback("kernel.ipynb", "01.nbytes")
    assert "PyTorch's kernels of aten::equal" in said and "changes" in said, said
