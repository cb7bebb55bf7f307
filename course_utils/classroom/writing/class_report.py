"""``python -m course_utils report``: what a class got wrong, from the grader's CSVs or Gradescope results.

It reads the rows ``grade`` writes (one per submission and exercise, with the misconception ``code`` the feedback
names), counts them (:mod:`.class_stats`: attempts, passes, scores, the misconceptions shown, the students to follow
up) and writes the report: one self-contained HTML page (:mod:`.class_page`), or the same tables as CSV files or JSON.

Whose each submission is comes from the layout the class was collected in (Canvas's bulk download, Moodle's
download, nbgrader's folders, a folder per student: :mod:`.layouts`); the report says which it read."""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Optional, Sequence

from ... import misconceptions
from ...exceptions import ReportError
from ...files import atomic_open, same_file
from . import gradebook, predictions as predicted
from .class_page import render_html
from .class_stats import MIN_SHARE, ClassReport, lesson_of_id, summarize
from .resubmissions import LATEST, POLICIES
from ..grader import TOTAL, Row
from .reports import CSV_HEADER, csv_field, csv_unescape

#: What ``--format`` may ask for.
FORMATS = ("html", "csv", "json", "gradebook")


# --- reading ------------------------------------------------------------------------------------------------------

def read_rows(paths: Sequence[str]) -> list[Row]:
    """Every exercise row in ``paths``: CSV files written by ``grade`` (with or without the ``code`` column), and
    Gradescope ``results.json`` files or folders holding them (searched recursively). ``TOTAL`` rows are left out,
    but for a submission that has no other row (a file whose lesson could not be told), so that its student is
    counted; predictions CSVs too (:func:`read_inputs`). ReportError for a path that cannot be read, or a file in
    none of these formats."""
    return read_inputs(paths)[0]


def read_inputs(paths: Sequence[str]) -> tuple[list[Row], Optional[list[predicted.Prediction]]]:
    """The exercise rows in ``paths`` (see :func:`read_rows`, also for ReportError), and the quiz predictions in the
    predictions CSVs among them (written by ``grade --predictions``; ``None`` when there is none)."""
    rows: list[Row] = []
    found: Optional[list[predicted.Prediction]] = None
    for p in input_files(paths):
        if p.name.endswith(".json"):
            rows += _read_gradescope(p)
        else:
            more, predictions = _read_csv(p)
            rows += more
            if predictions is not None:
                found = (found or []) + predictions
    return rows, found


def input_files(paths: Sequence[str]) -> list[Path]:
    """The files ``paths`` name: each file, and the ``results.json`` files in each folder; ReportError for a path
    that does not exist, or a folder without any results.json."""

    files: list[Path] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            found = sorted(p.rglob("results.json"))
            if not found:
                raise ReportError(f"{path}: a folder without any results.json in it")
            files += found
        elif not p.exists():
            raise ReportError(f"{path}: no such file")
        else:
            files.append(p)
    return files


def _open_text(path: Path):
    try:
        return open(path, encoding="utf-8", newline="", errors="strict")
    except OSError as e:
        raise ReportError(f"{path}: cannot be read ({e.strerror or e})") from None


def _read_csv(path: Path) -> tuple[list[Row], Optional[list[predicted.Prediction]]]:
    """The rows of a grades CSV (and ``None``), or the predictions of a predictions CSV."""
    with _open_text(path) as f:
        try:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is not None and predicted.is_predictions_csv(header):
                return [], predicted.read_csv(reader)
            if header is None or tuple(header[:6]) != CSV_HEADER[:6]:
                raise ReportError(f"{path}: not a grades CSV (its header should start with "
                                  f"{','.join(CSV_HEADER[:6])}; got {','.join(header or [])[:80]!r}) nor a "
                                  f"predictions CSV ({','.join(predicted.HEADER)})")
            at = {name: i for i, name in enumerate(header) if name in CSV_HEADER[6:]}   # columns added later
            rows, totals = [], []
            for number, fields in enumerate(reader, start=2):
                if not fields:
                    continue
                if len(fields) < 6:
                    raise ReportError(f"{path}, line {number}: {len(fields)} fields, expected {len(header)}")
                try:
                    points, max_points = int(fields[2]), int(fields[3])
                except ValueError:
                    raise ReportError(f"{path}, line {number}: points {fields[2]!r} / {fields[3]!r} are not "
                                      "whole numbers") from None
                extra = {name: fields[i] if i < len(fields) else "" for name, i in at.items()}
                row = Row(csv_unescape(fields[0]), csv_unescape(fields[1]), points, max_points, fields[4] == "true",
                          csv_unescape(fields[5]), " ".join(misconceptions.codes(extra.get("code", ""))),
                          extra.get("submitted", ""), extra.get("late") == "true", extra.get("answers", ""))
                (totals if row.exercise == TOTAL else rows).append(row)
            graded = {r.submission for r in rows}   # a submission with no exercise rows is counted by its TOTAL
            rows += [r for r in totals if r.submission not in graded]
            return rows, None
        except UnicodeDecodeError:
            raise ReportError(f"{path}: not UTF-8 text (is it a spreadsheet saved in another format?)") from None
        except csv.Error as e:
            raise ReportError(f"{path}: not a readable CSV ({e})") from None


def _read_gradescope(path: Path) -> list[Row]:
    with _open_text(path) as f:
        try:
            data = json.load(f)
        except (ValueError, UnicodeDecodeError):
            raise ReportError(f"{path}: not a JSON file") from None
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        raise ReportError(f"{path}: not a Gradescope results.json (no list of tests)")
    extra = data.get("extra_data") if isinstance(data.get("extra_data"), dict) else {}
    submission = str(extra.get("submission") or path.parent.as_posix())
    kept = {"submitted": str(extra.get("submitted") or ""), "late": extra.get("late") is True,
            "answers": str(extra.get("answers") or "")}
    rows = []
    for test in data["tests"]:
        if not isinstance(test, dict):
            raise ReportError(f"{path}: a test that is not an object")
        exercise = str(test.get("number") or str(test.get("name", "")).split(":")[0])
        tags = misconceptions.codes(" ".join(t for t in test.get("tags") or [] if isinstance(t, str)))
        try:
            points, max_points = int(float(test.get("score", 0))), int(float(test.get("max_score", 0)))
        except (TypeError, ValueError):
            raise ReportError(f"{path}: test {exercise!r} has a score that is not a number") from None
        passed = test.get("status") == "passed" or (max_points > 0 and points >= max_points)
        rows.append(Row(submission, exercise, points, max_points, passed, str(test.get("output", "")),
                        "" if passed else " ".join(tags), **kept))
    return rows


# --- writing ------------------------------------------------------------------------------------------------------

#: The tables ``--format csv`` writes, one file each.
TABLES = ("lessons", "exercises", "misconceptions", "follow_up", "quizzes")


def tables(report: ClassReport) -> dict[str, list[dict]]:
    """The report's tables as lists of flat rows (for CSV)."""
    return {
        "lessons": [{"lesson": s.lesson, "students": s.students, "mean_percent": s.mean_percent,
                     "all_passed": s.all_passed, "zero": s.zero, "late": s.late, "max_points": s.max_points,
                     "scores": " ".join(f"{p}:{n}" for p, n in s.scores.items())} for s in report.lessons],
        "exercises": [{"exercise": s.exercise, "lesson": s.lesson, "title": s.title, "students": s.students,
                       "attempted": s.attempted, "passed": s.passed, "max_points": s.max_points,
                       "scores": " ".join(f"{p}:{n}" for p, n in sorted(s.scores.items()))} for s in report.exercises],
        "misconceptions": [{**{k: v for k, v in asdict(m).items() if k not in ("exercises", "by_lesson")},
                            "exercises": " ".join(m.exercises),
                            "by_lesson": " ".join(f"{lesson}:{n}/{of}" for lesson, (n, of) in m.by_lesson.items())}
                           for m in report.misconceptions],
        "follow_up": [{"student": f.student, "lesson": f.lesson, "reasons": "; ".join(f.reasons)}
                      for f in report.follow_up],
        "quizzes": [{"quiz": q.quiz, "lesson": q.lesson, "students": q.students, "predicted": q.predicted,
                     "right_first": q.right_first, "answer": q.answer,
                     "wrong": "; ".join(f"{option}: {n}" for option, n in q.wrong)} for q in report.quizzes],
    }


def write(report: ClassReport, out: str, fmt: str) -> list[str]:
    """Write ``report`` to ``out`` (atomically): one HTML page, one JSON file, or for CSV a folder ``out`` with
    ``lessons.csv``, ``exercises.csv``, ``misconceptions.csv``, ``follow_up.csv`` and, when predictions were given,
    ``quizzes.csv``. Returns the files written."""
    if fmt == "csv":
        os.makedirs(out, exist_ok=True)
        written = []
        for name, rows in tables(report).items():
            if name == "quizzes" and not rows:   # no predictions were given
                continue
            target = os.path.join(out, f"{name}.csv")
            with atomic_open(target, "w", encoding="utf-8", newline="") as f:
                _write_csv(rows, f)
            written.append(target)
        return written
    text = json.dumps(asdict(report), indent=1, ensure_ascii=False) if fmt == "json" else render_html(report)
    with atomic_open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return [out]


def _write_csv(rows: list[dict], f) -> None:
    if rows:
        f.write(",".join(rows[0]) + "\n")
    for row in rows:
        f.write(",".join(csv_field(str(v)) for v in row.values()) + "\n")


# --- the command --------------------------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``report`` subcommand's arguments to ``parser``."""
    parser.add_argument("grades", nargs="+", metavar="GRADES",
                        help="CSV files written by `grade` (its grades, and its --predictions), Gradescope "
                             "results.json files, or folders of them")
    parser.add_argument("--out", default=None,
                        help="file to write (a folder for --format csv); default: report.html, report.json or "
                             "report-csv/")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="html (default, or as --out's suffix says), json, csv (a folder of tables), or "
                             "gradebook (one row per student, a column per lesson, as Canvas imports it)")
    parser.add_argument("--anonymous", action="store_true", help="show students as Student 1, 2... in the report")
    parser.add_argument("--lesson", action="append", default=None, metavar="NN",
                        help="only these lessons (repeat it, or 03,05); default: every lesson in the input")
    parser.add_argument("--min-share", type=float, default=100 * MIN_SHARE, metavar="PERCENT",
                        help=f"a card for each misconception shown by at least PERCENT of the students who handed "
                             f"its lesson in (default {100 * MIN_SHARE:g}); the rest are listed in one table")
    parser.add_argument("--resubmissions", choices=POLICIES, default=LATEST,
                        help="which of a student's submissions of a lesson counts: the latest (default, as Canvas "
                             "and Moodle keep it) or the best single one; never a mix")
    gradebook.add_arguments(parser)


def run(args: argparse.Namespace, stderr=sys.stderr) -> int:
    """Run ``report``; exit status 0, or 2 with a message for bad input."""
    fmt = args.format or ("json" if (args.out or "").endswith(".json") else "html")
    out = args.out or {"html": "report.html", "json": "report.json", "csv": "report-csv",
                       "gradebook": "gradebook.csv"}[fmt]
    try:
        targets = [os.path.join(out, f"{name}.csv") for name in TABLES] if fmt == "csv" else [out]
        inputs = [*input_files(args.grades), *([args.roster] if getattr(args, "roster", None) else [])]
        for target in targets:   # never write over an input (a table of --format csv, the roster included)
            if any(os.path.exists(target) and same_file(target, f) for f in inputs):
                raise ReportError(f"--out {out} would overwrite the input {target}: choose another "
                                  f"{'folder' if fmt == 'csv' else 'file'}")
        if fmt != "csv" and os.path.isdir(out):
            raise ReportError(f"--out {out} is a folder; give a file name (or use --format csv)")
        if fmt == "csv" and os.path.exists(out) and not os.path.isdir(out):
            raise ReportError(f"--out {out} is a file; --format csv writes a folder of tables")
        if not 0 <= args.min_share <= 100:
            raise ReportError(f"--min-share {args.min_share:g} is not a percentage from 0 to 100")
        rows, predictions = read_inputs(args.grades)
        if not rows:
            raise ReportError("no graded exercises in the input")
        if args.lesson:
            wanted = {part.strip().zfill(2) for given in args.lesson for part in given.split(",") if part.strip()}
            rows = [r for r in rows if lesson_of_id(r.exercise) in wanted or r.exercise == TOTAL]
            if predictions is not None:
                predictions = [p for p in predictions if lesson_of_id(p.quiz) in wanted]
            if all(r.exercise == TOTAL for r in rows):
                raise ReportError(f"no graded exercises of lesson {', '.join(sorted(wanted))} in the input")
        if fmt == "gradebook":   # names are the point of a gradebook: --anonymous does not apply
            written = gradebook.write(rows, out, gradebook.Options.of(args), stderr)
        else:
            report = summarize(rows, args.anonymous, args.min_share / 100, predictions, args.resubmissions)
            written = write(report, out, fmt)
    except ReportError as e:
        print(f"report: {e}", file=stderr)
        return 2
    except OSError as e:
        print(f"report: cannot write {out}: {e.strerror or e}", file=stderr)
        return 2
    print(f"Wrote {', '.join(written)}", file=stderr)
    return 0


__all__ = ["read_rows", "read_inputs", "input_files", "tables", "write", "add_arguments", "run", "FORMATS", "TABLES"]
