"""A Gradescope autograder for a lesson: ``python -m course_utils autograder --lesson 03 --out autograder_03.zip``.

The zip has Gradescope's layout: ``setup.sh`` (run once when Gradescope builds the image: it installs the CPU build of
PyTorch, the version this bundle was made with), ``run_autograder`` (run for each submission), and ``course_utils/``,
this very copy of the package, which ``run_autograder`` puts first on ``PYTHONPATH``: the checks are exactly this
version's. ``run_autograder`` grades the one notebook in ``submission/`` with the engine of ``grade``
(:func:`~course_utils.classroom.grader.grade_notebook`) and writes ``results/results.json`` in Gradescope's format. The
root is ``$AUTOGRADER_ROOT``, by default ``/autograder`` (``source/``, ``submission/``, ``results/``)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Optional, TextIO

from .. import modes
from ..misconceptions import NOT_GRADED
from ..files import atomic_open, write_text_atomic
from .reading.cells import answer_cells
from .grader import SubmissionGrade, grade_notebook
from .writing.reports import gradescope_results
from .sandbox.runs import Limits
from .reading.submissions import lesson_exercises, lesson_number, lesson_of, read_notebook

PACKAGE = Path(__file__).resolve().parents[1]
ALL = "all"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image.
set -euo pipefail
python3 -m pip install --upgrade pip
# The CPU build of PyTorch, the version this bundle was made with ({torch}).
python3 -m pip install --index-url https://download.pytorch.org/whl/cpu "torch=={torch}"
python3 -m pip install numpy ipython   # ipython: answer cells are read as Jupyter reads them
# Learner code runs as this unprivileged user: it cannot write results.json or stop the grader.
id -u course-learner >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin course-learner
# The checks come from the bundle's own copy of course_utils: check that it imports.
PYTHONPATH=/autograder/source python3 -c "import course_utils; print('course_utils', course_utils.__version__)"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission. AUTOGRADER_ROOT (default /autograder) holds source/,
# submission/ and results/.
set -uo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
export PYTHONPATH="$ROOT/source${{PYTHONPATH:+:$PYTHONPATH}}"
# As root (Gradescope), learner code runs as course-learner (made by setup.sh), who cannot write
# results/ nor signal this script's processes; results.json is written last, by this process.
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$ROOT/results" && chmod 755 "$ROOT/results"
  if id -u "${{COURSE_GRADE_USER:-course-learner}}" >/dev/null 2>&1; then
    export COURSE_GRADE_USER="${{COURSE_GRADE_USER:-course-learner}}"
  else
    echo "run_autograder: no user course-learner (setup.sh makes it): learner code runs as root" >&2
  fi
fi
{mode}exec "${{COURSE_PYTHON:-python3}}" -m course_utils.classroom.autograder --root "$ROOT" --lesson {lesson}
"""
#: The line of run_autograder that grades in assessed mode (:mod:`course_utils.modes`): feedback without the code
#: to write, as the students' own Check gives it there.
ASSESSED_LINE = f"export {modes.MODE_ENV}={modes.ASSESSED}   # assessed mode, as the students' Check has it\n"


def build(lesson: str, out: Path, assessed: bool = False) -> Path:
    """Write the autograder zip for ``lesson`` (``"03"``, or ``"all"``: any lesson, told by the notebook); with
    ``assessed``, it grades in assessed mode (:mod:`course_utils.modes`)."""
    import torch
    version = torch.__version__.split("+")[0]
    with atomic_open(out, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as bundle:
        _add(bundle, "setup.sh", SETUP_SH.format(torch=version))
        _add(bundle, "run_autograder", RUN_AUTOGRADER.format(lesson=lesson, mode=ASSESSED_LINE if assessed else ""))
        for path in sorted(PACKAGE.rglob("*.py")):
            if "__pycache__" not in path.parts:
                bundle.write(path, f"course_utils/{path.relative_to(PACKAGE).as_posix()}")
    return out


def _add(bundle: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = 0o755 << 16   # executable, as Gradescope runs them
    info.compress_type = zipfile.ZIP_DEFLATED
    bundle.writestr(info, text)


def _zero(lesson: Optional[str], message: str) -> dict:
    """Results for a submission that cannot be graded: score 0, each exercise listed, the reason said."""
    from ..exercises import get_exercise
    ids = lesson_exercises(lesson) if lesson and lesson != ALL else []
    tests = [{"name": f"{e}: {get_exercise(e).title}", "number": e, "score": 0, "max_score": get_exercise(e).points,
              "status": "failed", "output": message, "visibility": "visible", "tags": [NOT_GRADED]} for e in ids]
    return {"score": 0, "output": message, "tests": tests}


def grade_submission(root: Path, lesson: str, limits: Limits = Limits()) -> dict:
    """Grade the notebook in ``root/submission`` as ``lesson`` (or, for ``"all"``, its own lesson) and
    return Gradescope's results; never raises for anything in the submission."""
    start = time.monotonic()
    folder = root / "submission"
    found = sorted(p for p in folder.rglob("*.ipynb")
                   if not any(part.startswith(".") for part in p.relative_to(folder).parts))
    if not found:
        results = _zero(lesson, "No notebook (.ipynb) was found in your submission. Upload the lesson's notebook, "
                                "saved from Jupyter.")
    elif len(found) > 1:
        names = ", ".join(str(p.relative_to(folder)) for p in found)
        results = _zero(lesson, f"Your submission holds {len(found)} notebooks ({names}). Upload only the lesson's "
                                "notebook.")
    else:
        results = _grade_one(found[0], root, lesson, limits)
    results["execution_time"] = max(int(round(time.monotonic() - start)), 0)
    return results


def _grade_one(path: Path, root: Path, lesson: str, limits: Limits) -> dict:
    name = str(path.relative_to(root / "submission"))
    if lesson != ALL:
        try:
            theirs = lesson_of(str(path), answer_cells(read_notebook(str(path))))
        except Exception:
            theirs = None
        if theirs and theirs != lesson:
            return _zero(lesson, f"This assignment is lesson {lesson}, but {name} is lesson {theirs}'s notebook. "
                                 f"Upload notebook {lesson} and submit again.")
    grade: SubmissionGrade = grade_notebook(str(path), limits, None if lesson == ALL else lesson)
    results = gradescope_results(grade)
    results["extra_data"] = {"submission": name}
    if not grade.rows:   # no lesson could be told (an "all" bundle): the reason is in the output
        results["score"] = 0
    return results


def main(argv: Optional[list[str]] = None) -> int:
    """``run_autograder``'s entry point: grade, write ``results/results.json``, return 0."""
    parser = argparse.ArgumentParser(prog="course_utils.classroom.autograder")
    parser.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    parser.add_argument("--lesson", required=True, type=lesson_number)
    args = parser.parse_args(argv)
    root = Path(args.root)
    try:
        results = grade_submission(root, args.lesson)
    except Exception as e:   # the grader's own failure: said so, never blamed on the student
        results = _zero(args.lesson, f"The autograder itself failed ({type(e).__name__}: {e}). "
                                     "Your instructor has been told; please tell them too.")
    (root / "results").mkdir(parents=True, exist_ok=True)
    # A file name that is not UTF-8 reaches Python as lone surrogates: U+FFFD in the results instead.
    text = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c
                   for c in json.dumps(results, indent=2, ensure_ascii=False))
    write_text_atomic(root / "results" / "results.json", text + "\n")
    return 0


# --- the command line: python -m course_utils autograder ----------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``autograder`` subcommand's arguments to ``parser``."""
    parser.add_argument("--lesson", required=True, type=lesson_number,
                        help="the lesson it grades (e.g. 03 or 3), or 'all' (the notebook's own)")
    parser.add_argument("--out", help="the zip to write (default: autograder_<lesson>.zip)")
    parser.add_argument("--assessed", action="store_true",
                        help="grade in assessed mode: feedback says what is wrong, not the code to write "
                             f"(set {modes.MODE_ENV}={modes.ASSESSED} for the students too)")


def run(args: argparse.Namespace, stdout: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> int:
    """Write the bundle. Returns 0, or 2 for an unknown lesson or an output that cannot be written."""
    from ..exercises import exercise_ids, get_exercise
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if args.lesson != ALL and not lesson_exercises(args.lesson):
        known = sorted({get_exercise(e).lesson for e in exercise_ids()})
        print(f"--lesson {args.lesson}: no lesson with exercises has that number (known: {', '.join(known)}, "
              f"or {ALL}).", file=stderr)
        return 2
    out = Path(args.out or f"autograder_{args.lesson}.zip")
    if out.suffix.lower() != ".zip":
        print(f"--out {out}: the bundle is a zip archive, and Gradescope asks for one: give a name ending in .zip.",
              file=stderr)
        return 2
    if out.exists() and not out.is_dir() and not zipfile.is_zipfile(out):
        print(f"{out} exists and is not a zip archive: it would be overwritten. Nothing was written; choose "
              "another --out.", file=stderr)
        return 2
    try:
        build(args.lesson, out, args.assessed)
    except OSError as e:
        print(f"Cannot write {out}: {e.strerror or type(e).__name__}.", file=stderr)
        return 2
    print(f"Wrote {out}: upload it as the assignment's autograder on Gradescope (Configure Autograder → "
          "Zip file upload).", file=stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
