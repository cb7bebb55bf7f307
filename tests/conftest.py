"""Shared test set-up: an isolated progress file, and the `gpu` marker."""
from __future__ import annotations

import os
import tempfile

import pytest

# Every test, and every kernel a test starts, writes progress to a throw-away file.
_PROGRESS_DIR = tempfile.mkdtemp(prefix="course-progress-")
os.environ["COURSE_PROGRESS_FILE"] = os.path.join(_PROGRESS_DIR, "progress.json")

import torch  # noqa: E402

from course_utils.gpusim import backend as simdevice  # noqa: E402
from course_utils.device import REQUIRE_ENV, accelerator, accelerator_required  # noqa: E402

# The simulated GPU's registration cannot be undone: in this process it would reach every test after the first that
# calls cu.setup(). Its own tests, the notebooks' kernels and the grader's workers register it in processes of theirs.
simdevice.ALLOWED = False


def pytest_report_header(config: pytest.Config) -> str:
    acc = accelerator()
    return (f"course: torch {torch.__version__}, accelerator: {acc or 'none'}"
            f"{' (required by ' + REQUIRE_ENV + ')' if accelerator_required() else ''}")


def pytest_sessionstart(session: pytest.Session) -> None:
    if accelerator_required() and accelerator() is None:
        raise pytest.UsageError(f"{REQUIRE_ENV} is set but torch {torch.__version__} sees no accelerator: "
                                "this run would not test any GPU code.")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if accelerator() is not None:
        return
    skip = pytest.mark.skip(reason="needs an accelerator; torch.accelerator.is_available() is False here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def progress_file(tmp_path, monkeypatch):
    """A fresh, empty progress file for one test."""
    path = tmp_path / "progress.json"
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(path))
    return path
