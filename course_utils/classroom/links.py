"""nbgitpuller links: one per lesson, that clone (or update) the course in a student's JupyterHub home
and open that lesson. ``python -m course_utils links --hub https://hub.example.edu``."""
from __future__ import annotations

import argparse
import pkgutil
import re
import sys
from pathlib import Path
from typing import Optional, TextIO
from urllib.parse import quote, urlparse

from .. import lessons

#: The checkout's pyproject.toml, whose ``[tool.course]`` table holds the repository address and branch.
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
APPS = {"lab": "lab/tree", "notebook": "notebooks"}   # where each interface opens a notebook


def course_address(pyproject: Path = PYPROJECT) -> tuple[str, str]:
    """(repository URL, branch) from ``[tool.course]`` in ``pyproject``: the one place they are set.

    Raises:
        FileNotFoundError: no pyproject.toml (an installed copy of the package, not a checkout).
        KeyError: the table or a key is missing.
    """
    text = pyproject.read_text(encoding="utf-8")
    try:
        import tomllib   # Python 3.11+
        conf = tomllib.loads(text)["tool"]["course"]
    except ImportError:  # Python 3.9/3.10: the two plain string keys, read from the table's lines
        table = re.search(r"^\[tool\.course\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
        if table is None:
            raise KeyError("tool.course") from None
        conf = dict(re.findall(r'^(\w+)\s*=\s*"([^"]*)"', table.group(1), re.M))
    return conf["repository"].rstrip("/"), conf["branch"]


def lesson_notebooks() -> list[tuple[str, str]]:
    """(lesson number, notebook file name) in course order, from the lesson modules (``l01_tensors``)."""
    names = sorted(m.name for m in pkgutil.iter_modules(lessons.__path__) if re.fullmatch(r"l\d\d_\w+", m.name))
    return [(name[1:3], f"{name[1:]}.ipynb") for name in names]


def nbgitpuller_link(hub: str, repo: str, branch: str, notebook: str, app: str = "lab") -> str:
    """The link that pulls ``repo`` at ``branch`` into the user's home, then opens ``notebooks/<notebook>``.

    nbgitpuller clones into a folder named after the repository, so the path to open starts with it.
    """
    folder = repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    path = f"{APPS[app]}/{folder}/notebooks/{notebook}"
    return (f"{hub.rstrip('/')}/hub/user-redirect/git-pull?repo={quote(repo, safe='')}"
            f"&branch={quote(branch, safe='')}&urlpath={quote(path, safe='')}")


def hub_problem(hub: str) -> Optional[str]:
    """Why ``hub`` is not a hub address (``https://hub.example.edu``), or ``None``."""
    parsed = urlparse(hub)
    if parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.query or parsed.fragment:
        return f"--hub must be the hub's address, such as https://hub.example.edu (got {hub!r})."
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``links`` subcommand's arguments to ``parser``."""
    parser.add_argument("--hub", required=True, help="the JupyterHub's address, e.g. https://hub.example.edu")
    parser.add_argument("--app", choices=sorted(APPS), default="lab",
                        help="open the notebooks in JupyterLab (default) or Notebook 7")
    parser.add_argument("--repo", help="the course repository to pull (default: [tool.course] in pyproject.toml)")
    parser.add_argument("--branch", help="its branch (default: [tool.course] in pyproject.toml)")


def run(args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Print one nbgitpuller link per lesson. Returns 0, or 2 for a bad option."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    problem = hub_problem(args.hub)
    if problem:
        print(problem, file=stderr)
        return 2
    repo, branch = args.repo, args.branch
    if not (repo and branch):
        try:
            default_repo, default_branch = course_address()
        except (OSError, KeyError) as e:
            print(f"Cannot read the course's address from {PYPROJECT} ({type(e).__name__}): run this in a "
                  "checkout of the course, or give --repo and --branch.", file=stderr)
            return 2
        repo, branch = repo or default_repo, branch or default_branch
    for number, notebook in lesson_notebooks():
        title = lessons.LESSONS.get(number, notebook)
        print(f"{number} {title}\n  {nbgitpuller_link(args.hub, repo, branch, notebook, args.app)}", file=stdout)
    return 0
