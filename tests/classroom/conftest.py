"""The batches that several test files read, each graded once per session by ``python -m course_utils grade``
with ``--jobs 2`` (see :mod:`.cases`)."""
from __future__ import annotations

import sys

import pytest

from .cases import (BATCH, BATCH_BROKEN, LIMITS, LONG_LIMITS, SHORT_LIMITS, WORKER, Batch, grade_in, odd_files,
                    write)


def _linux() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("grading needs Linux (/proc, prctl)")


@pytest.fixture(scope="session")
def batch(tmp_path_factory) -> Batch:
    """:data:`.cases.BATCH` (two folders) and two files that are not notebooks, with Gradescope results."""
    root = tmp_path_factory.mktemp("grade")
    write(root, BATCH, indent=1)
    write(root, BATCH_BROKEN)
    return grade_in(root, "subs", "lessons", *BATCH_BROKEN, "--jobs", "2", "--gradescope", "gs", *SHORT_LIMITS)


@pytest.fixture(scope="session")
def odd_batch(tmp_path_factory) -> Batch:
    """:func:`.cases.odd_files`, graded as a folder (the CSV written outside it)."""
    _linux()
    root = tmp_path_factory.mktemp("odd")
    write(root, odd_files())
    (root / "zz_link_to_solved.ipynb").unlink()
    (root / "zz_link_to_solved.ipynb").symlink_to(root / "solved.ipynb")
    graded = grade_in(root, ".", *LIMITS, out=f"../{root.name}.csv")  # never inside what is graded
    (root / "huge_output.ipynb").unlink()
    return graded


@pytest.fixture(scope="session")
def graded(tmp_path_factory) -> Batch:
    """:data:`.cases.WORKER`, each notebook given by name."""
    _linux()
    root = tmp_path_factory.mktemp("worker")
    write(root, WORKER)
    graded = grade_in(root, *WORKER, "--jobs", "2", *LONG_LIMITS)
    assert graded.code == 0, graded.err
    return graded
