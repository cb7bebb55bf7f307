"""Command line: ``python -m course_utils progress`` | ``check ID FILE.py`` | ``hint ID [N]`` | ``solution ID`` |
``list`` | ``explain "MESSAGE"`` | ``grade NOTEBOOK_OR_FOLDER...`` | ``report GRADES.csv...`` | ``autograder --lesson
NN`` | ``links --hub URL`` | ``release --out FOLDER`` | ``--version``: what each does is in :data:`COMMANDS`.

Each subcommand is a small handler (:data:`COMMANDS`) that imports what it needs when it runs, so ``--help``,
``--version`` and usage errors answer at once, without importing PyTorch."""
from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import Callable, NamedTuple, Optional

from . import __version__
from .exceptions import CourseError

try:
    from .classroom import autograder, cli as grade_cli, links, release
    from .classroom.writing import class_report
except ImportError:   # the students' package of an assessed class has no classroom: grading is the teacher's
    autograder = class_report = grade_cli = links = release = None

#: What ``--version`` prints.
VERSION_TEXT = f'course_utils {__version__} ("Where does my tensor live?")'
PROG = "python -m course_utils"


def _progress(args: argparse.Namespace) -> int:
    from .store import summary
    print(summary().text())
    return 0


def _list(args: argparse.Namespace) -> int:
    from .exercises import exercise_ids, get_exercise
    for ex_id in exercise_ids():
        ex = get_exercise(ex_id)
        print(f"{ex_id:22} {ex.name:18} {ex.points:>2} point{'s' if ex.points != 1 else ' '}  {ex.title}")
    return 0


def _explain(args: argparse.Namespace) -> int:
    from .errors import explain_error
    if args.message in (None, "-") and sys.stdin.isatty():  # say what it waits for
        print("Paste the error message or traceback, then press Ctrl-D (on Windows: Ctrl-Z, then Enter).",
              file=sys.stderr)
    text = sys.stdin.read() if args.message in (None, "-") else args.message
    explanation = explain_error(text)
    print(explanation.text())
    return 0 if explanation.known else 1


def _hint(args: argparse.Namespace) -> int:
    from .learner import hint
    print(hint(args.exercise_id, args.number))
    return 0


def _solution(args: argparse.Namespace) -> int:
    from .learner import solution
    print(solution(args.exercise_id))
    return 0


def _check(args: argparse.Namespace) -> int:
    import runpy

    from .exercises import get_exercise
    from .learner import run_check
    get_exercise(args.exercise_id)   # an unknown id is said before the file runs
    try:
        namespace = runpy.run_path(args.file)
    except BaseException as e:  # the learner's file itself is broken
        print(f"Could not run {args.file}: {type(e).__name__}: {e}")
        return 1
    result = run_check(args.exercise_id, namespace=namespace)
    print(result.text())
    return 0 if result.passed else 1


def _exercise_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("exercise_id", help="the exercise, e.g. 01.nbytes (the list subcommand lists them)")


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    _exercise_argument(parser)
    parser.add_argument("file", help="a Python file that defines the exercise's function or class")


def _hint_arguments(parser: argparse.ArgumentParser) -> None:
    _exercise_argument(parser)
    parser.add_argument("number", nargs="?", type=int, default=1, help="which hint, gentlest first (default: 1)")


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message", nargs="?",
                        help="the error message or traceback; read from standard input when omitted or '-'")


class Command(NamedTuple):
    """A subcommand: its handler, its line in the list of subcommands, what it does, an example, its arguments."""

    run: Callable[[argparse.Namespace], int]
    help: str
    description: str
    example: str
    arguments: Optional[Callable[[argparse.ArgumentParser], None]] = None


#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: dict[str, Command] = {
    "progress": Command(_progress, "show your progress across the lessons",
                        "Show which exercises you passed and which quizzes you answered, lesson by lesson.",
                        f"{PROG} progress"),
    "check": Command(_check, "check an exercise answer written in a .py file",
                     "Run a Python file and check the function or class it defines against the exercise's "
                     "reference, as the Check button does (exit status 0 when it passes, 1 when not).",
                     f"{PROG} check 01.nbytes answer.py", _check_arguments),
    "hint": Command(_hint, "show a hint", "Show one of an exercise's hints, from the gentlest (1) to nearly the "
                    "answer.", f"{PROG} hint 01.nbytes 2", _hint_arguments),
    "solution": Command(_solution, "show the reference solution (after an attempt)",
                        "Show an exercise's reference solution, once you have attempted it.",
                        f"{PROG} solution 01.nbytes", _exercise_argument),
    "list": Command(_list, "list the exercises", "List every exercise: its id, the name to define, its points and "
                    "its title.", f"{PROG} list"),
    "explain": Command(_explain, "explain a device error: its cause, fix and lesson "
                                 "(exit status 1: not one the course knows)",
                       "Explain a device error: its cause, its fix and the lesson that teaches it (exit status 1: "
                       "not one the course knows).",
                       f'{PROG} explain "Expected all tensors to be on the same device"\n  {PROG} explain < '
                       "traceback.txt", _explain_arguments),
}
#: The teacher's subcommands (absent from the students' package of an assessed class).
TEACHER_COMMANDS: dict[str, Command] = {} if grade_cli is None else {
    "grade": Command(grade_cli.run, "grade submitted notebooks in isolated processes, into a CSV",
                     "Grade each notebook's answer cells in a fresh, time- and memory-limited process with the "
                     "course's own checks.",
                     f"{PROG} grade submissions/ --out grades.csv --jobs 2", grade_cli.add_arguments),
    "report": Command(class_report.run, "what a class got wrong: misconceptions, scores and follow-ups, from grades "
                      "CSVs or Gradescope results (HTML, CSV or JSON)",
                      "What a class got wrong: the misconceptions to reteach, scores per lesson and exercise, and "
                      "the students to follow up, from grades CSVs or Gradescope results.",
                      f"{PROG} report grades.csv --out report.html", class_report.add_arguments),
    "autograder": Command(autograder.run, "write a Gradescope autograder zip for a lesson",
                          "Write a Gradescope autograder bundle (a zip) that grades a lesson's notebook with the "
                          "engine of the grade subcommand.",
                          f"{PROG} autograder --lesson 03", autograder.add_arguments),
    "links": Command(links.run, "print each lesson's launch links: nbgitpuller for a JupyterHub, Colab, Binder; "
                     "for a branch or a release tag (--ref)", links.DESCRIPTION,
                     f"{PROG} links --hub https://hub.example.edu --ref v{__version__}", links.add_arguments),
    "release": Command(release.run, "write the student release of an assessed class (no reference solutions)",
                       release.DESCRIPTION, f"{PROG} release --out class-release --repo "
                       "https://github.com/SCHOOL/CLASS", release.add_arguments),
}
COMMANDS.update(TEACHER_COMMANDS)


def parser() -> argparse.ArgumentParser:
    """The command line's parser: every subcommand with its description and an example."""
    top = argparse.ArgumentParser(prog=PROG, description="Helpers for the course 'Where does my tensor live?'.")
    top.add_argument("--version", action="version", version=VERSION_TEXT,
                     help="print the course's version (a release's tag is v followed by it) and exit")
    sub = top.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        each = sub.add_parser(name, help=command.help, description=textwrap.fill(command.description, 100),
                              epilog=f"example:\n  {command.example}",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
        if command.arguments:
            command.arguments(each)
    return top


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``) and return its exit status."""
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command].run(args)
    except CourseError as e:   # an unknown id, a bad option: said, exit status 2 (a bug still shows as one)
        print(e)
        return 2


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
