"""The student release of an assessed class: what students get, with no reference solution in it.

    python -m course_utils release --out class-release/ [--wheel-url URL]

writes a new folder (it never writes into one that exists)::

    class-release/
      notebooks/NN_*.ipynb                     the lessons, their Colab cell installing the students' package
      wheels/course_utils-V-py3-none-any.whl   the students' package, for every Python the course supports
      requirements.txt                         pip install -r requirements.txt: PyTorch, Jupyter, that package
      README.md                                for students: how to start, on a Hub, on Colab, on a laptop
      release.json                             what was released: version, exercises, points, examples

The students' package is the course's package with three changes. Its ``data/lessons/NN.json`` hold the lessons'
quizzes alone (not the misconceptions, whose explanations hold the fixes), and its lesson modules only register the
public checks: no reference solution, no grader, no hint that answers a mistake, no feedback text.
Each exercise keeps its title, its points and all its hints but the last; Check runs the exercise's *public
checks* (:mod:`course_utils.publiccheck`): the answer is called on the inputs the full check used on the reference
and compared with the results the reference gave, recorded here. It has no ``classroom`` (grading is the
teacher's). It always runs in assessed mode. Grade with the full package: ``grade --assessed``, or the Gradescope
bundle (``autograder --assessed``), which students never install."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from ..exceptions import ReleaseError
from ..files import atomic_open, write_text_atomic
from ..loading import lesson_data
from .links import __version__

PACKAGE = Path(__file__).resolve().parent.parent
#: Parts of the full package that the students' package leaves out (grading is the teacher's).
LEFT_OUT = ("classroom",)
#: The marker that makes an installation run in assessed mode (read by course_utils.modes).
MARKER = "data/assessed-build.json"
#: The students' package's examples for the public checks (course_utils.publiccheck.EXAMPLES_FILE).
EXAMPLES = "data/public_examples.pt"
WHEEL = f"course_utils-{__version__}-py3-none-any.whl"
#: The cell role of the Colab install cell (scripts/sync_notebooks.py writes it).
COLAB_ROLE = "colab-setup"


# --- the examples: the full checks run on the references, in a process with the simulated GPU or a real one --

_RECORD = r"""
import sys, torch
import course_utils as cu
from course_utils import exercises, publiccheck
from course_utils.checking import check

device = cu.setup()
kept = []
for exercise_id, ex in sorted(exercises.registry().items()):
    with publiccheck.record(ex.reference, device) as examples:
        result = check(exercise_id, ex.reference)
    if not result.passed:
        sys.exit(f"the reference of {exercise_id} does not pass its own check: {result.feedback}")
    hints = ex.hints[:-1] + ("(Withheld in this class: the last hint is your teacher's.)",)   # assessed shows [:-1]
    kept.append(publiccheck.Exercise(exercise_id, ex.title, ex.name, ex.kind, ex.points, hints, tuple(examples)))
torch.save(kept, sys.argv[1])
"""


def record_examples(path: Path) -> None:
    """Write the public checks' examples of every exercise to ``path`` (a new process: the simulated GPU, where it
    is needed, is registered there and not in the caller's)."""
    done = subprocess.run([sys.executable, "-c", _RECORD, str(path)], capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise ReleaseError(f"recording the public checks failed: {(done.stderr or done.stdout).strip()[-2000:]}")


# --- the students' package ----------------------------------------------------------------------------------

def lesson_module(number: str) -> str:
    """The source of a students' lesson module: it registers the lesson's public checks (its quizzes are registered
    from :func:`quizzes_only`'s file by ``course_utils.lessons``, as in the full package)."""
    return (f'"""Lesson {number} in the students\' package of an assessed class: its exercises\' public checks '
            f"(course_utils.publiccheck).\nIts quizzes are data/lessons/{number}.json. The reference solutions stay "
            f'with the teacher."""\nfrom ..publiccheck import register\n\nregister({number!r})\n')


def quizzes_only(number: str) -> bytes:
    """The students' ``data/lessons/NN.json``: the lesson's quizzes and the order of its marks, none of its
    misconceptions."""
    data = lesson_data(number)
    kept = {key: data[key] for key in ("quizzes", "order") if key in data}
    return (json.dumps(kept, indent=1, ensure_ascii=False) + "\n").encode()


def package_files(examples: bytes) -> dict[str, bytes]:
    """Every file of the students' package, by its path in the wheel."""
    from ..syllabus import LESSONS

    files: dict[str, bytes] = {}
    for path in sorted(PACKAGE.rglob("*")):
        relative = path.relative_to(PACKAGE)
        if (path.is_dir() or "__pycache__" in relative.parts or path.suffix == ".pyc"
                or relative.parts[0] in LEFT_OUT or relative.as_posix() in (MARKER, EXAMPLES)
                or relative.parts[:2] == ("data", "lessons")     # written below, without the misconceptions
                or (relative.parts[0] == "lessons" and path.name.startswith("l") and path.suffix == ".py")):
            continue
        files[f"course_utils/{relative.as_posix()}"] = path.read_bytes()
    for number in LESSONS:
        files[f"course_utils/lessons/l{number}_public.py"] = lesson_module(number).encode()
        files[f"course_utils/data/lessons/{number}.json"] = quizzes_only(number)
    files[f"course_utils/{MARKER}"] = json.dumps({"assessed": True, "version": __version__}).encode()
    files[f"course_utils/{EXAMPLES}"] = examples
    return files


def write_wheel(target: Path, files: dict[str, bytes]) -> None:
    """A pure-Python wheel (``py3-none-any``: any Python the course supports) of ``files``, written atomically."""
    info = f"course_utils-{__version__}.dist-info"
    requires = "".join(f"Requires-Dist: {r}\n" for r in ("torch>=2.10", "ipywidgets>=7.7", "matplotlib>=3.7"))
    metadata = (f"Metadata-Version: 2.1\nName: course_utils\nVersion: {__version__}\nSummary: Where does my tensor "
                "live? The students' package of an assessed class (no reference solutions)\n"
                f"Requires-Python: >=3.10\n{requires}")
    files = {**files, f"{info}/METADATA": metadata.encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: course_utils release\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n",
             f"{info}/top_level.txt": b"course_utils\n"}
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
              f"{len(data)}" for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with atomic_open(target, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as whl:
        for name, data in files.items():
            whl.writestr(name, data)


# --- the notebooks and the folder ---------------------------------------------------------------------------

def wheel_address(repo: str | None, branch: str, wheel_url: str | None) -> str | None:
    """Where Colab downloads the students' package: ``wheel_url``, else the wheel in the release's own GitHub
    repository (``repo`` at ``branch``), else None (no Colab route)."""
    if wheel_url:
        return wheel_url
    if repo:
        from .links import github_slug
        return f"https://raw.githubusercontent.com/{github_slug(repo)}/{branch}/wheels/{WHEEL}"
    return None


def colab_cell(address: str | None) -> str:
    """The source of the release's Colab cell: it installs the students' package, not the full one."""
    if address is None:
        return ("# Colab: this class's release names no address for its course package (ask your teacher).\n"
                "import sys\n"
                "if \"google.colab\" in sys.modules:\n"
                "    print(\"This class's course package has no download address: ask your teacher for the notebook's "
                "Colab link.\")")
    return ("# Colab only: install this class's course package (Colab already has torch and ipywidgets).\n"
            "import sys\n"
            "if \"google.colab\" in sys.modules:\n"
            f"    %pip install -q \"course_utils @ {address}\"")


def release_notebook(nb: dict, name: str, repo: str | None, branch: str, address: str | None) -> dict:
    """A lesson notebook as the class gets it: no badge that opens the public course (which holds the
    references), badges to the release's own repository where there is one, and the students' Colab cell."""
    first = nb["cells"][0]
    source = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
    badges = ""
    if repo:
        from .links import binder_link, colab_link
        badges = (f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
                  f"({colab_link(repo, branch, name)}) [![Launch on Binder](https://mybinder.org/badge_logo.svg)]"
                  f"({binder_link(repo, branch, name)})")
    first["source"] = re.sub(r"(?m)^\[!\[Open In Colab\].*$", badges, source)
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("course", {}).get("role") == COLAB_ROLE:
            cell["source"] = colab_cell(address)
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def student_readme(address: str | None, repo: str | None) -> str:
    colab = (f"- **Colab**: open a notebook from the link your teacher gives; its first cell installs this class's "
             f"course package ({address})." if address else
             "- **Colab**: ask your teacher for the notebooks' Colab links.")
    return f"""# Where does my tensor live? (this class's release)

The course's lessons as your class runs them: the exercises' Check runs the public checks (a few examples), and your
teacher's grading runs the full checks and gives the marks. Solutions are not part of this release.

- **A JupyterHub**: open the link your teacher gives; the notebooks arrive in your home folder.
{colab}
- **Your own computer** (Python 3.10 or newer), from this folder:

  ```bash
  python3 -m venv .venv && . .venv/bin/activate
  pip install -r requirements.txt
  jupyter lab notebooks/
  ```

Hand in the notebooks as your teacher asks; run the `cu.progress()` cell at the end of each lesson first.
""" + (f"\nThis release's repository: {repo}\n" if repo else "")


def release(out: Path, notebooks: Path, *, repo: str | None = None, branch: str = "main",
            wheel_url: str | None = None) -> Path:
    """Write the student release of the course's ``notebooks/`` folder into the new folder ``out`` (made whole in a
    temporary folder beside it, then renamed); ``repo`` (at ``branch``) is the GitHub repository it will be pushed
    to, if any, ``wheel_url`` where Colab downloads the students' package, if not from ``repo``. ReleaseError when
    ``out`` exists, there are no notebooks, or the recording failed."""
    out = Path(out)
    if out.exists():
        raise ReleaseError(f"{out} exists: give a new folder (a release never writes into an existing one)")
    lessons = sorted(Path(notebooks).glob("[0-9][0-9]_*.ipynb"))
    if not lessons:
        raise ReleaseError(f"no lesson notebooks (NN_*.ipynb) in {notebooks}: run this from the course's folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    address = wheel_address(repo, branch, wheel_url)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        record_examples(staging / "examples.pt")
        examples = (staging / "examples.pt").read_bytes()
        (staging / "examples.pt").unlink()
        (staging / "wheels").mkdir()
        write_wheel(staging / "wheels" / WHEEL, package_files(examples))
        (staging / "notebooks").mkdir()
        for path in lessons:
            nb = release_notebook(json.loads(path.read_text(encoding="utf-8")), path.name, repo, branch, address)
            write_text_atomic(staging / "notebooks" / path.name, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        write_text_atomic(staging / "requirements.txt",
                          "# This class's course: pip install -r requirements.txt\ntorch>=2.10\nipywidgets>=7.7\n"
                          f"matplotlib>=3.7\njupyterlab>=4\nnotebook>=7\n./wheels/{WHEEL}\n")
        write_text_atomic(staging / "README.md", student_readme(address, repo))
        write_text_atomic(staging / "release.json", json.dumps({
            "version": __version__, "wheel": f"wheels/{WHEEL}", "colab_download": address, "repository": repo,
            "branch": branch, "notebooks": [p.name for p in lessons]}, indent=1) + "\n")
        mask = os.umask(0)
        os.umask(mask)
        staging.chmod(0o777 & ~mask)   # a folder as any other, not mkdtemp's private one
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


# --- the command line ---------------------------------------------------------------------------------------

DESCRIPTION = ("Write what the students of an assessed class get, into a new folder: the notebooks, a students' "
               "package with no reference solution (its Check runs public checks; the full checks run when you "
               "grade), requirements.txt and a README. Push the folder to a repository of the class's own for "
               "JupyterHub (nbgitpuller) and Colab; grade with this, the full package.")


def add_arguments(parser: Any) -> None:
    parser.add_argument("--out", required=True, help="the folder to create (it must not exist)")
    parser.add_argument("--notebooks", default="notebooks", help="the course's notebooks folder (default: notebooks)")
    parser.add_argument("--repo", help="the GitHub repository the release will be pushed to (for Colab and Binder)")
    parser.add_argument("--branch", default="main", help="that repository's branch or tag (default: main)")
    parser.add_argument("--wheel-url", help="where Colab downloads the students' package, if not from --repo")


def run(args: Any) -> int:
    """The ``release`` subcommand: exit status 0, or 2 with the reason (nothing written)."""
    try:
        out = release(Path(args.out), Path(args.notebooks), repo=args.repo, branch=args.branch,
                      wheel_url=args.wheel_url)
    except (ReleaseError, ValueError) as e:   # ValueError: a --repo that is not on GitHub
        print(f"release: {e}", file=sys.stderr)
        return 2
    print(f"Wrote {out}: notebooks/, wheels/{WHEEL} (the students' package: no reference solutions), "
          "requirements.txt, README.md, release.json.\nNext: push it to the class's repository; grade with "
          "`python -m course_utils grade --assessed` (this full package).")
    return 0
