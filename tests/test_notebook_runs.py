"""Execute every notebook with nbval, as learners get it and with the reference solutions."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from nbtools import load, notebook_paths, variant



@pytest.mark.parametrize("solved", [False, True], ids=["unsolved", "solved"])
@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebook_runs_clean(path, solved, tmp_path):
    """nbval runs the notebook top to bottom without an unexpected error, and the final cell
    proves every check said "not attempted" (unsolved) or "passed" (solved)."""
    target = tmp_path / path.name
    target.write_text(json.dumps(variant(load(path), solved)), encoding="utf-8")
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
         "--nbval-current-env", "--nbval-cell-timeout=300", str(target)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - start
    print(f"{path.name} ({'solved' if solved else 'unsolved'}): {elapsed:.1f} s")  # timings: benchmarks/run.py
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]


def _nbval(target, nb: dict) -> subprocess.CompletedProcess:
    """Write ``nb`` to ``target`` and run it with nbval as the notebook runs do (for the negative controls)."""
    target.write_text(json.dumps(nb), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                           "--nbval-current-env", str(target)], cwd=target.parent, capture_output=True, text=True,
                          timeout=300)


def test_harness_catches_a_failing_check(tmp_path):
    """Negative control: a notebook whose answer is wrong must fail the solved-run assertion."""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {"course": {"exercise": "01.nbytes"}},
         "execution_count": None, "outputs": [], "source": "def nbytes(t):\n    raise NotImplementedError\n"},
        {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "import course_utils as cu\ncu.exercise('01.nbytes')"},
    ]}
    solved = variant(nb, solved=True)
    answer = next(c for c in solved["cells"] if c["id"] == "a")
    answer["source"] = "def nbytes(t):\n    return t.numel()\n"  # a wrong answer
    proc = _nbval(tmp_path / "wrong.ipynb", solved)
    assert proc.returncode != 0
    assert "expected {'01.nbytes': 'passed'}, got {'01.nbytes': 'failed'}" in proc.stdout


@pytest.mark.parametrize("source, fails", [
    ("torch.ones(2, device='meta').numpy()", False),  # raises what it declares
    ("torch.ones(2).numpy()", True),                   # stopped raising
    ("torch.ones(2, device='meta').item()", True),     # raises something else
])
def test_a_cell_that_raises_on_purpose_must_raise_what_it_declares(tmp_path, source, fails):
    """Negative controls for the checks ``variant`` adds around every ``raises-exception`` cell."""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "import torch"},
        {"cell_type": "code", "id": "b", "execution_count": None, "outputs": [], "source": source,
         "metadata": {"tags": ["raises-exception"], "course": {"raises": {
             "error": "TypeError", "message": "can't convert meta device type tensor to numpy"}}}},
    ]}
    proc = _nbval(tmp_path / "raising.ipynb", variant(nb, solved=False))
    assert (proc.returncode != 0) == fails, proc.stdout[-3000:]
    if fails:
        assert "cell b should raise TypeError with one of" in proc.stdout


@pytest.mark.parametrize("source, fails", [
    ("import warnings\nwarnings.warn('a demonstration that warns on purpose')", False),   # the lesson's own
    ("import warnings\nfrom course_utils.grading import call\ncall(warnings.warn, 'noise from the course')", True),
])
def test_a_warning_from_course_utils_fails_the_run(tmp_path, source, fails):
    """Negative control for the warning watch ``variant`` adds: course_utils must not print warnings under a
    lesson; a cell's own deliberate warning is the lesson's business."""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None, "outputs": [], "source": source}]}
    proc = _nbval(tmp_path / "warning.ipynb", variant(nb, solved=False))
    assert (proc.returncode != 0) == fails, proc.stdout[-3000:]
    if fails:
        assert "UserWarning: noise from the course" in proc.stdout
