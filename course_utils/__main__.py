"""Command line: ``python -m course_utils progress`` | ``check ID FILE.py`` | ``hint ID [N]`` | ``solution ID``
| ``list`` | ``explain "MESSAGE"`` (or the message on standard input)
| ``grade NOTEBOOK_OR_FOLDER... --out grades.csv`` (batch grading: :mod:`course_utils.classroom`)
| ``report GRADES.csv... --out report.html`` (what a class got wrong: misconceptions, scores, follow-ups)
| ``autograder --lesson NN`` (a Gradescope bundle)
| ``links --hub URL | --colab | --binder [--ref vX.Y.Z]`` (launch links, one per lesson, for a branch or a release)
| ``--version``.
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys

from . import __version__, classroom
from .exceptions import CourseError
from .classroom import autograder, class_report, links

#: What ``--version`` prints.
VERSION_TEXT = f'course_utils {__version__} ("Where does my tensor live?")'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_utils",
                                     description="Helpers for the course 'Where does my tensor live?'.")
    parser.add_argument("--version", action="version", version=VERSION_TEXT,
                        help="print the course's version (a release's tag is v followed by it) and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("progress", help="show your progress across the lessons")
    p_check = sub.add_parser("check", help="check an exercise answer written in a .py file")
    p_check.add_argument("exercise_id")
    p_check.add_argument("file", help="a Python file that defines the exercise's function or class")
    p_hint = sub.add_parser("hint", help="show a hint")
    p_hint.add_argument("exercise_id")
    p_hint.add_argument("number", nargs="?", type=int, default=1)
    p_sol = sub.add_parser("solution", help="show the reference solution (after an attempt)")
    p_sol.add_argument("exercise_id")
    sub.add_parser("list", help="list the exercises")
    p_explain = sub.add_parser("explain", help="explain a device error: its cause, fix and lesson "
                                               "(exit status 1: not one the course knows)")
    p_explain.add_argument("message", nargs="?",
                           help="the error message or traceback; read from standard input when omitted or '-'")
    p_grade = sub.add_parser("grade", help="grade submitted notebooks in isolated processes, into a CSV",
                             description="Grade each notebook's answer cells in a fresh, time- and "
                                         "memory-limited process with the course's own checks.")
    classroom.add_arguments(p_grade)
    p_report = sub.add_parser("report", help="what a class got wrong: misconceptions, scores and follow-ups, "
                                             "from grades CSVs or Gradescope results (HTML, CSV or JSON)")
    class_report.add_arguments(p_report)
    p_bundle = sub.add_parser("autograder", help="write a Gradescope autograder zip for a lesson")
    autograder.add_arguments(p_bundle)
    p_links = sub.add_parser("links", help="print each lesson's launch links: nbgitpuller for a JupyterHub, "
                                           "Colab, Binder; for a branch or a release tag (--ref)",
                             description=links.DESCRIPTION)
    links.add_arguments(p_links)
    args = parser.parse_args(argv)

    from . import learner, store
    from .exercises import exercise_ids, get_exercise

    try:
        if args.command == "progress":
            print(store.summary().text())
        elif args.command == "list":
            for ex_id in exercise_ids():
                ex = get_exercise(ex_id)
                print(f"{ex_id:22} {ex.name:18} {ex.title}")
        elif args.command == "explain":
            from .errors import explain_error
            if args.message in (None, "-") and sys.stdin.isatty():  # say what it waits for
                print("Paste the error message or traceback, then press Ctrl-D (on Windows: Ctrl-Z, then Enter).",
                      file=sys.stderr)
            text = sys.stdin.read() if args.message in (None, "-") else args.message
            explanation = explain_error(text)
            print(explanation.text())
            return 0 if explanation.known else 1
        elif args.command == "hint":
            print(learner.hint(args.exercise_id, args.number))
        elif args.command == "solution":
            print(learner.solution(args.exercise_id))
        elif args.command == "grade":
            return classroom.run(args)
        elif args.command == "report":
            return class_report.run(args)
        elif args.command == "links":
            return links.run(args)
        elif args.command == "autograder":
            return autograder.run(args)
        elif args.command == "check":
            ex = get_exercise(args.exercise_id)
            try:
                namespace = runpy.run_path(args.file)
            except BaseException as e:  # the learner's file itself is broken
                print(f"Could not run {args.file}: {type(e).__name__}: {e}")
                return 1
            result = learner.run_check(args.exercise_id, namespace=namespace)
            print(result.text())
            return 0 if result.passed else 1
    except CourseError as e:   # an unknown id, a bad option: said, exit status 2 (a bug still shows as one)
        print(e)
        return 2
    return 0


def _run() -> int:
    """:func:`main`, for the command line: output piped into a program that stops reading early
    (``links ... | head``) ends quietly, as other command-line tools do."""
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 1


if __name__ == "__main__":
    sys.exit(_run())
