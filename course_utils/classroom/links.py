"""Launch links, one per lesson: nbgitpuller links that clone (or update) the course in a student's JupyterHub
home and open that lesson, and the lesson's Colab and Binder links; for the course's branch or a release.

    python -m course_utils links --hub https://hub.example.edu
    python -m course_utils links --colab --binder --ref v0.3.0"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Optional, TextIO
from urllib.parse import quote, urlparse

from ..syllabus import LESSONS


#: The checkout's pyproject.toml, whose ``[tool.course]`` table holds the repository address and branch.
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
#: The course's version, read as pyproject.toml reads it (the package's ``__init__`` is above this floor).
__version__ = re.search(r'^__version__ = "([^"]+)"', (Path(__file__).resolve().parents[1] / "__init__.py").read_text(
    encoding="utf-8"), re.MULTILINE)[1]
APPS = {"lab": "lab/tree", "notebook": "notebooks"}   # where each interface opens a notebook
KINDS = ("hub", "colab", "binder")                     # the kinds of link, in the order they are printed
LABELS = {"hub": "JupyterHub", "colab": "Colab", "binder": "Binder"}
#: A release's tag: v and the version (v0.3.0).
RELEASE_TAG = re.compile(r"v\d+(\.\d+)+")

DESCRIPTION = (
    "Print each lesson's launch links: --hub URL gives nbgitpuller links that put the course in a JupyterHub "
    "home, --colab and --binder give Colab's and Binder's; any together. With one kind each lesson's link stands "
    "alone on its line; with several each is labelled. --ref picks the branch or release tag they open "
    "(default: the branch in pyproject.toml's [tool.course]), so a class can stay on one release all semester.")


def course_address(pyproject: Path = PYPROJECT) -> tuple[str, str]:
    """(repository URL, branch) from ``[tool.course]`` in ``pyproject``: the one place they are set.
    FileNotFoundError without pyproject.toml (an installed copy, not a checkout); KeyError when a key is missing."""
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


def nbgitpuller_link(hub: str, repo: str, branch: str, notebook: str, app: str = "lab") -> str:
    """The link that pulls ``repo`` at ``branch`` into the user's home, then opens ``notebooks/<notebook>`` (in the
    folder nbgitpuller clones into, named after the repository)."""
    folder = repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    path = f"{APPS[app]}/{folder}/notebooks/{notebook}"
    return (f"{hub.rstrip('/')}/hub/user-redirect/git-pull?repo={quote(repo, safe='')}"
            f"&branch={quote(branch, safe='')}&urlpath={quote(path, safe='')}")


def github_slug(repo: str) -> str:
    """``OWNER/NAME`` of a GitHub repository URL (Colab and Binder open GitHub repositories by it); ValueError for
    a ``repo`` that is not on github.com."""

    parsed = urlparse(repo)
    parts = parsed.path.strip("/").removesuffix(".git").split("/")
    if parsed.netloc.lower() not in ("github.com", "www.github.com") or len(parts) != 2 or not all(parts):
        raise ValueError(f"Colab and Binder links need a repository on GitHub, such as "
                         f"https://github.com/OWNER/NAME (got {repo!r}).")
    return "/".join(parts)


def colab_link(repo: str, ref: str, notebook: str) -> str:
    """Colab's link that opens ``notebooks/<notebook>`` of ``repo`` at ``ref`` (a branch or tag)."""
    return (f"https://colab.research.google.com/github/{github_slug(repo)}/blob/{quote(ref, safe='/')}"
            f"/notebooks/{notebook}")


def binder_link(repo: str, ref: str, notebook: str, app: str = "lab") -> str:
    """Binder's link that builds ``repo`` at ``ref`` (a branch or tag) and opens ``notebooks/<notebook>``."""
    return (f"https://mybinder.org/v2/gh/{github_slug(repo)}/{quote(ref, safe='')}"
            f"?urlpath={APPS[app]}/notebooks/{notebook}")


def hub_problem(hub: str) -> Optional[str]:
    """Why ``hub`` is not a hub address (``https://hub.example.edu``), or ``None``."""
    parsed = urlparse(hub)
    if parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.query or parsed.fragment:
        return f"--hub must be the hub's address, such as https://hub.example.edu (got {hub!r})."
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``links`` subcommand's arguments to ``parser``."""
    parser.add_argument("--hub", help="nbgitpuller links for this JupyterHub, e.g. https://hub.example.edu")
    parser.add_argument("--colab", action="store_true", help="Colab links")
    parser.add_argument("--binder", action="store_true", help="Binder links")
    parser.add_argument("--ref", "--branch", dest="ref", metavar="REF",
                        help="the branch or release tag (v0.3.0) the links open (default: the branch in "
                             "[tool.course] in pyproject.toml). nbgitpuller follows a branch: for a hub, pin a "
                             "release with a branch made from its tag")
    parser.add_argument("--app", choices=sorted(APPS), default="lab",
                        help="open the notebooks in JupyterLab (default) or Notebook 7 (hub and Binder links)")
    parser.add_argument("--repo", help="the course repository (default: [tool.course] in pyproject.toml)")


def lesson_links(kinds: list[str], repo: str, ref: str, notebook: str, hub: str = "", app: str = "lab") -> list[str]:
    """The links of one lesson's notebook, one per kind (``hub``, ``colab``, ``binder``), in ``KINDS`` order."""
    make = {"hub": lambda: nbgitpuller_link(hub, repo, ref, notebook, app),
            "colab": lambda: colab_link(repo, ref, notebook),
            "binder": lambda: binder_link(repo, ref, notebook, app)}
    return [make[kind]() for kind in KINDS if kind in kinds]


def run(args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Print each lesson's links. Returns 0, or 2 for a bad option."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    kinds = [kind for kind, wanted in (("hub", args.hub is not None), ("colab", getattr(args, "colab", False)),
                                       ("binder", getattr(args, "binder", False))) if wanted]
    if not kinds:
        print("Say which links: --hub URL (nbgitpuller, for a JupyterHub), --colab, --binder, or several.",
              file=stderr)
        return 2
    problem = hub_problem(args.hub) if args.hub is not None else None
    if problem:
        print(problem, file=stderr)
        return 2
    repo, ref = args.repo, args.ref
    if not (repo and ref):
        try:
            default_repo, default_branch = course_address()
        except (OSError, KeyError) as e:
            print(f"Cannot read the course's address from {PYPROJECT} ({type(e).__name__}): run this in a "
                  "checkout of the course, or give --repo and --ref.", file=stderr)
            return 2
        repo, ref = repo or default_repo, ref or default_branch
    if "colab" in kinds or "binder" in kinds:
        try:
            github_slug(repo)
        except ValueError as e:
            print(e, file=stderr)
            return 2
    if "hub" in kinds and RELEASE_TAG.fullmatch(ref):
        print(f"Note: nbgitpuller clones the tag {ref} on a student's first click, but a later click merges "
              f"origin/{ref}, which a tag does not have; to keep a hub on a release, push a branch made from "
              f"the tag (git push origin {ref}:refs/heads/BRANCH) and give --ref BRANCH.", file=stderr)
    if RELEASE_TAG.fullmatch(ref) and ref != f"v{__version__}":
        print(f"Note: the links open the release {ref}, but the course_utils installed here is {__version__}: "
              f"check out {ref} (git checkout {ref}) before you grade or release, so that the checks are that "
              "release's.", file=stderr)
    for lesson in LESSONS.values():   # course order
        urls = lesson_links(kinds, repo, ref, lesson.notebook, args.hub or "", args.app)
        lines = ([f"  {url}" for url in urls] if len(kinds) == 1
                 else [f"  {LABELS[kind] + ':':11} {url}" for kind, url in zip((k for k in KINDS if k in kinds), urls)])
        print("\n".join([f"{lesson.number} {lesson.title}", *lines]), file=stdout)
    return 0
