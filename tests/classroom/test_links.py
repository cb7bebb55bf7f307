"""python -m course_utils links: one nbgitpuller link per lesson, built from pyproject.toml's address."""
from __future__ import annotations

import io
import os
import subprocess
import sys
from urllib.parse import parse_qs, urlparse

import pytest

from course_utils.__main__ import main
from course_utils.classroom import links
from course_utils.syllabus import LESSONS
from nbtools import ROOT, notebook_paths


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    from contextlib import redirect_stderr, redirect_stdout
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["links", *args])
    return code, out.getvalue(), err.getvalue()


def test_the_exact_link():
    assert links.nbgitpuller_link("https://hub.example.edu/", "https://github.com/org/course", "main",
                                  "01_tensors.ipynb") == (
        "https://hub.example.edu/hub/user-redirect/git-pull?repo=https%3A%2F%2Fgithub.com%2Forg%2Fcourse"
        "&branch=main&urlpath=lab%2Ftree%2Fcourse%2Fnotebooks%2F01_tensors.ipynb")


def test_a_link_per_lesson_opening_it_in_jupyterlab_from_the_cloned_folder():
    code, out, err = run("--hub", "https://hub.example.edu")
    assert code == 0 and err == ""
    repo, branch = links.course_address()
    urls = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    assert len(urls) == len(notebook_paths())
    for url, path in zip(urls, notebook_paths()):
        parsed = urlparse(url)
        assert (parsed.scheme, parsed.netloc, parsed.path) == ("https", "hub.example.edu",
                                                               "/hub/user-redirect/git-pull")
        query = parse_qs(parsed.query)
        folder = repo.rsplit("/", 1)[-1]
        assert query == {"repo": [repo], "branch": [branch], "urlpath": [f"lab/tree/{folder}/notebooks/{path.name}"]}


def test_notebook7_links_open_the_notebook():
    code, out, _ = run("--hub", "https://hub.example.edu", "--app", "notebook")
    first = next(line.strip() for line in out.splitlines() if line.startswith("  "))
    assert code == 0 and parse_qs(urlparse(first).query)["urlpath"][0].startswith("notebooks/")


def test_odd_characters_in_the_address_are_encoded():
    url = links.nbgitpuller_link("https://hub.example.edu", "https://git.example.edu/a b/c&d.git", "feature/x y",
                                 "01_tensors.ipynb")
    query = parse_qs(urlparse(url).query)
    assert query["repo"] == ["https://git.example.edu/a b/c&d.git"] and query["branch"] == ["feature/x y"]
    assert query["urlpath"] == ["lab/tree/c&d/notebooks/01_tensors.ipynb"]


@pytest.mark.parametrize("hub", ["hub.example.edu", "ftp://hub.example.edu", "https://", "https://hub?x=1", ""])
def test_a_bad_hub_exits_2_with_a_message(hub):
    code, out, err = run("--hub", hub)
    assert code == 2 and out == "" and "--hub must be the hub's address" in err


def test_the_address_is_read_the_same_without_tomllib(tmp_path, monkeypatch):
    expected = links.course_address()
    monkeypatch.setitem(sys.modules, "tomllib", None)   # as on Python 3.9 and 3.10
    assert links.course_address() == expected
    bad = tmp_path / "pyproject.toml"
    bad.write_text("[project]\nname = 'x'\n")
    with pytest.raises(KeyError):
        links.course_address(bad)


def test_the_lessons_are_the_notebooks():
    assert [lesson.notebook for lesson in LESSONS.values()] == [p.name for p in notebook_paths()]


def test_the_command_line_runs_as_instructors_run_it():
    proc = subprocess.run([sys.executable, "-m", "course_utils", "links", "--hub", "https://hub.example.edu"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.count("/hub/user-redirect/git-pull?") == len(notebook_paths())


def test_output_into_a_closed_pipe_ends_quietly():
    """`python -m course_utils links ... | head -1`: the reader stops early; no traceback follows."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "course_utils", "links", "--hub", "https://hub.example.org"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()   # closed before the command writes anything: every write meets a broken pipe
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1 and "Traceback" not in err and "BrokenPipeError" not in err, err
