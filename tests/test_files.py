"""course_utils.files: atomic writes and the path relations the grader uses to protect its inputs."""
from __future__ import annotations

import os

import pytest

from course_utils.files import atomic_open, is_special, is_within, same_file, write_text_atomic


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    target = tmp_path / "grades.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write("half of the new")
            raise RuntimeError("disk full")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["grades.csv"]


def test_a_write_replaces_the_file_keeps_its_mode_and_a_link_stays_a_link(tmp_path):
    real, link = tmp_path / "real.csv", tmp_path / "link.csv"
    real.write_text("old")
    real.chmod(0o640)
    link.symlink_to(real)
    write_text_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new" and real.stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["link.csv", "real.csv"]


def test_a_device_is_written_in_place_and_only_writing_is_allowed(tmp_path):
    assert is_special(os.devnull) and not is_special(tmp_path) and not is_special(tmp_path / "missing")
    with atomic_open(os.devnull) as f:
        f.write("discarded")
    assert os.path.exists(os.devnull) and is_special(os.devnull)
    with pytest.raises(ValueError):
        with atomic_open(tmp_path / "x", "a"):
            pass


def test_paths_within_folders_and_the_same_file(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "a.ipynb").write_text("{}")
    os.link(tmp_path / "subs" / "a.ipynb", tmp_path / "hard")
    (tmp_path / "ln").symlink_to(tmp_path / "subs")
    assert is_within(tmp_path / "ln" / "new.csv", tmp_path / "subs")
    assert is_within(tmp_path / "subs", tmp_path / "subs")
    assert not is_within(tmp_path / "subs2" / "x", tmp_path / "subs")
    assert same_file(tmp_path / "hard", tmp_path / "subs" / "a.ipynb")
    assert same_file(tmp_path / "ln" / "a.ipynb", tmp_path / "subs" / "a.ipynb")
    assert not same_file(tmp_path / "other", tmp_path / "subs" / "a.ipynb")
