#!/usr/bin/env python3
"""Build the course's website (Jupyter Book 1) into site/_build/html.

    pip install -r requirements-site.txt && python scripts/build_site.py
    python scripts/build_site.py --hub https://hub.example.edu   # add a JupyterHub (nbgitpuller) launch button

The book's configuration is in site/ (_config.yml, _toc.yml, page stubs). The pages are copied into
site/_build/source, laid out as in the repository, and the lessons are executed there on this machine (without a
GPU: on the simulated one), so the notebooks in notebooks/ are never touched. Links from a page to a file that is
not on the site (CHANGELOG.md, CITATION.cff, ...) point at the repository instead. The build fails on any warning
and on any error a cell raises, except in cells tagged ``raises-exception``.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "site"
BUILD = SITE / "_build"
SOURCE = BUILD / "source"
HTML = BUILD / "html"
sys.path.insert(0, str(ROOT))
from course_utils.classroom.links import course_address  # noqa: E402  (the one reader of [tool.course])

#: Repository files and folders copied as they are: the pages of the book and the pictures they show.
COPIED = ["notebooks", "docs/img", "docs/instructor.md", "docs/errors.md", "docs/misconceptions.md", "LICENSE",
          "LICENSE-CONTENT.md"]
#: A Markdown link's target, ``](path)``, ``](path#anchor)`` or ``](#anchor)`` (an anchor may hold ``()``), not an
#: absolute URL.
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)([^()\s#]*)(#(?:[^()\s]|\([^()\s]*\))*)?\)")
#: Repository files with a page of their own under another name.
RENAMED = {"LICENSE": "license-code.md", "README.md": "index.md"}


def stage(repo: str, branch: str, hub: str) -> None:
    """Copy the book's configuration and pages into SOURCE, as the build reads them."""
    import yaml

    shutil.rmtree(SOURCE, ignore_errors=True)
    shutil.copytree(SITE, SOURCE, ignore=shutil.ignore_patterns("_build"))
    for name in COPIED:
        src, dst = ROOT / name, SOURCE / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        else:
            shutil.copy2(src, dst)
    shutil.copy2(ROOT / "README.md", SOURCE / "index.md")
    config = yaml.safe_load((SOURCE / "_config.yml").read_text())
    config["repository"].update(url=repo, branch=branch)
    config["launch_buttons"]["jupyterhub_url"] = hub
    (SOURCE / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    fix = functools.partial(point_out, repo=repo, branch=branch)
    for page in SOURCE.rglob("*.md"):
        page.write_text(fix(page.read_text(), page))
    for lesson in (SOURCE / "notebooks").glob("*.ipynb"):
        nb = json.loads(lesson.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                cell["source"] = fix("".join(cell["source"]), lesson)
        lesson.write_text(json.dumps(nb, indent=1, ensure_ascii=False))


def point_out(text: str, page: Path, repo: str, branch: str) -> str:
    """``text`` (a staged page) with its links fixed for the site: a link to a file that is not on the site points
    at the repository, and an anchor in JupyterLab's form (``#3.-How-many-bytes?``) takes the site's
    (``#3-how-many-bytes``)."""
    from myst_parser.mdit_to_docutils.base import default_slugify

    staged = page.relative_to(SOURCE).as_posix()
    original = ROOT / {name: file for file, name in RENAMED.items()}.get(staged, staged)   # where it is in the repo

    def fix(match: re.Match) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        anchor = anchor and "#" + default_slugify(anchor[1:])
        in_repo = (original.parent / target).resolve()
        renamed = RENAMED.get(in_repo.relative_to(ROOT).as_posix()) if in_repo.is_relative_to(ROOT) else None
        if target and renamed:
            return f"]({os.path.relpath(SOURCE / renamed, page.parent)}{anchor})"
        if not target or (page.parent / target).exists():
            return f"]({target}{anchor})"
        if not in_repo.is_relative_to(ROOT) or not in_repo.exists():
            return match.group(0)   # left for the build to report
        kind = "tree" if in_repo.is_dir() else "blob"
        return f"]({repo}/{kind}/{branch}/{in_repo.relative_to(ROOT).as_posix()}{match.group(2) or ''})"
    return LINK.sub(fix, text)


def build(source: Path = SOURCE, output: Path = SITE, strict: bool = True) -> int:
    """Run Jupyter Book on ``source`` (written to ``output``/_build/html); the lessons' kernels import this
    checkout's course_utils. Returns its exit status."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "MPLBACKEND": "agg"}
    jupyter_book = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()"]  # no __main__
    cmd = [*jupyter_book, "build", str(source), "--path-output", str(output), "--all"]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    return subprocess.run(cmd, env=env, cwd=ROOT).returncode


#: A link in a cell's output to a lesson (``05_device_attribute.ipynb#2.-Comparing-devices``), and the widgets' state
#: that an executed notebook carries (the site draws no widget: it shows their text forms).
OUTPUT_LINK = re.compile(r"""href=(["'])([^"':#]+)\.ipynb(#[^"']*)?\1""")
WIDGET_STATE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">.*?</script>', re.S)


def finish(html: Path = HTML) -> None:
    """The built pages, with each link that a cell's output makes to a lesson (``.ipynb``, JupyterLab's anchor)
    pointing at the lesson's page and the section's id there, and without the widgets' state."""
    from docutils.nodes import make_id

    pages = [page.resolve() for page in html.rglob("*.html")]
    ids = {page: set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8"))) for page in pages}
    for page in ids:
        text = page.read_text(encoding="utf-8")

        def fix(match: re.Match, page: Path = page) -> str:
            target = (page.parent / (match.group(2) + ".html")).resolve()
            if target not in ids:
                return match.group(0)
            anchor = make_id(match.group(3) or "")   # Sphinx's id of a section: "1.-Meet-the-error" -> "meet-the-error"
            return f'href="{match.group(2)}.html{"#" + anchor if anchor in ids[target] else ""}"'
        fixed = WIDGET_STATE.sub("", OUTPUT_LINK.sub(fix, text))
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", default=os.environ.get("COURSE_HUB_URL", ""),
                        help="a JupyterHub's address, for an nbgitpuller launch button (default: $COURSE_HUB_URL)")
    parser.add_argument("--lenient", action="store_true", help="do not fail on warnings")
    args = parser.parse_args(argv)
    repo, branch = course_address(ROOT / "pyproject.toml")
    start = time.perf_counter()
    stage(repo, branch, args.hub.rstrip("/"))
    status = build(strict=not args.lenient)
    if status == 0:
        finish()
    took = time.perf_counter() - start
    print(f"{'built' if status == 0 else 'FAILED'} in {took:.0f} s: {HTML / 'index.html'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
