"""``python -m course_utils report``: what a class got wrong, from the grader's CSVs or Gradescope results.

It reads the rows ``grade`` writes (one per submission and exercise, with the misconception ``code`` the feedback
names) and counts, per lesson and exercise, how many students attempted and passed, how their scores spread, and
which misconceptions they showed, ranked by how many students showed each, with the explanation, the section that
teaches it and a question for class (:mod:`course_utils.misconceptions`). It lists the students to follow up (a
whole lesson at zero, tampering, time limits) and where the class stands across the course. The output is one
self-contained HTML page (no script, no network: it opens from disk and in a JupyterLab tab), or the same tables as
CSV files or JSON.

Whose each submission is comes from the layout the class was collected in (Canvas's bulk download, Moodle's
download, nbgrader's folders, a folder per student: :mod:`.layouts`); the report says which it read.
"""
from __future__ import annotations

import argparse
import csv
import html
import json
import os
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from .. import misconceptions
from ..exceptions import CourseError
from ..files import atomic_open, same_file
from . import gradebook, layouts, predictions as predicted
from .grader import TOTAL, Row
from .reports import CSV_HEADER, csv_field, csv_unescape

#: Codes that mean the exercise was not tried (the stub, or no answer at all).
NOT_TRIED = frozenset({misconceptions.NOT_ATTEMPTED, misconceptions.MISSING, misconceptions.NOT_A_NOTEBOOK})
#: Codes a teacher follows up on, with how the report names them.
FOLLOW_UP = {misconceptions.TAMPERING: "tampering", misconceptions.OUT_OF_TIME: "time limit",
             misconceptions.TIMEOUT: "time limit", misconceptions.CALL_STACK: "read the checker's stack",
             misconceptions.REFERENCE: "used the reference solution",
             misconceptions.NOT_A_NOTEBOOK: "handed in a file that is not a notebook"}
FORMATS = ("html", "csv", "json", "gradebook")
#: The share of a lesson's students from which a misconception is worth class time: the first page shows it.
MIN_SHARE = 0.10
#: At most this many misconceptions per lesson on the first page.
TOP_PER_LESSON = 3


class ReportError(CourseError):
    """Bad input: the message says what and where; the command exits with status 2."""


# --- reading ------------------------------------------------------------------------------------------------------

def read_rows(paths: Sequence[str]) -> list[Row]:
    """Every exercise row in ``paths``: CSV files written by ``grade`` (with or without the ``code`` column), and
    Gradescope ``results.json`` files or folders holding them (searched recursively). ``TOTAL`` rows are left out;
    so are predictions CSVs (:func:`read_inputs`).

    Raises:
        ReportError: a path that does not exist or cannot be read, or a file in none of these formats.
    """
    return read_inputs(paths)[0]


def read_inputs(paths: Sequence[str]) -> tuple[list[Row], Optional[list[predicted.Prediction]]]:
    """The exercise rows in ``paths`` (see :func:`read_rows`), and the quiz predictions in the predictions CSVs
    among them (written by ``grade --predictions``; ``None`` when there is none).

    Raises:
        ReportError: a path that does not exist or cannot be read, or a file in none of these formats.
    """
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
    """The files ``paths`` name: each file, and the ``results.json`` files in each folder.

    Raises:
        ReportError: a path that does not exist, or a folder without any results.json.
    """
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
            has_code = len(header) > 6 and header[6] == "code"
            rows = []
            for number, fields in enumerate(reader, start=2):
                if not fields:
                    continue
                if len(fields) < 6:
                    raise ReportError(f"{path}, line {number}: {len(fields)} fields, expected {len(header)}")
                submission, exercise = csv_unescape(fields[0]), csv_unescape(fields[1])
                if exercise == TOTAL:
                    continue
                try:
                    points, max_points = int(fields[2]), int(fields[3])
                except ValueError:
                    raise ReportError(f"{path}, line {number}: points {fields[2]!r} / {fields[3]!r} are not "
                                      "whole numbers") from None
                code = fields[6] if has_code and len(fields) > 6 else ""
                rows.append(Row(submission, exercise, points, max_points, fields[4] == "true",
                                csv_unescape(fields[5]), code if misconceptions.CODE.match(code) else ""))
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
    rows = []
    for test in data["tests"]:
        if not isinstance(test, dict):
            raise ReportError(f"{path}: a test that is not an object")
        exercise = str(test.get("number") or str(test.get("name", "")).split(":")[0])
        tags = [t for t in test.get("tags") or [] if isinstance(t, str) and misconceptions.CODE.match(t)]
        try:
            points, max_points = int(float(test.get("score", 0))), int(float(test.get("max_score", 0)))
        except (TypeError, ValueError):
            raise ReportError(f"{path}: test {exercise!r} has a score that is not a number") from None
        passed = test.get("status") == "passed" or (max_points > 0 and points >= max_points)
        rows.append(Row(submission, exercise, points, max_points, passed, str(test.get("output", "")),
                        "" if passed else (tags[0] if tags else "")))
    return rows


# --- counting -----------------------------------------------------------------------------------------------------

@dataclass
class ExerciseStats:
    exercise: str
    lesson: str
    title: str
    students: int = 0
    attempted: int = 0
    passed: int = 0
    max_points: int = 0
    scores: dict[int, int] = field(default_factory=dict)    # points -> students
    codes: dict[str, int] = field(default_factory=dict)     # misconception -> students


@dataclass
class MisconceptionStats:
    code: str
    name: str
    lesson: str
    students: int
    of: int     # the students who handed in the lessons of its exercises
    exercises: list[str]
    explanation: str
    section: str
    link: str
    question: str
    generic: bool
    by_lesson: dict[str, tuple[int, int]] = field(default_factory=dict)   # lesson -> (students, of), its exercises'

    @property
    def share(self) -> float:
        """The share of the students who handed in its lessons that showed it."""
        return self.students / self.of if self.of else 0.0


@dataclass
class LessonStats:
    lesson: str
    students: int
    mean_percent: float
    all_passed: int
    zero: int
    scores: dict[int, int]      # points -> students
    max_points: int


@dataclass
class FollowUp:
    student: str
    lesson: str            # the lessons with a reason, "03, 05"
    reasons: list[str]     # each "lesson 03: time limit"


@dataclass
class ClassReport:
    """Everything the report shows, as plain data (``--format json`` writes it as it is)."""

    students: int
    submissions: int
    rows: int
    layout: str     # how the submissions were read (layouts.read_layout)
    lessons: list[LessonStats]
    exercises: list[ExerciseStats]
    misconceptions: list[MisconceptionStats]
    follow_up: list[FollowUp]
    quizzes: list[predicted.QuizStats] = field(default_factory=list)   # what the class predicted (if given)
    anonymous: bool = False
    min_share: float = MIN_SHARE    # a misconception below this share of its lessons' students gets no card

    def to_reteach(self) -> dict[str, list[tuple[MisconceptionStats, int, int]]]:
        """Per lesson, its misconceptions (not the generic reasons) that at least :attr:`min_share` of the students
        who handed it in showed in its exercises, most shown first, at most :data:`TOP_PER_LESSON`: each with those
        two numbers (students, of)."""
        out: dict[str, list[tuple[MisconceptionStats, int, int]]] = {}
        for s in self.lessons:
            mine = [(m, *m.by_lesson[s.lesson]) for m in self.misconceptions if not m.generic
                    and s.lesson in m.by_lesson and m.by_lesson[s.lesson][0] >= self.min_share * m.by_lesson[s.lesson][1]]
            out[s.lesson] = sorted(mine, key=lambda t: (-t[1], t[0].code))[:TOP_PER_LESSON]
        return out


def summarize(rows: Iterable[Row], anonymous: bool = False, min_share: float = MIN_SHARE,
              predictions: Optional[Iterable[predicted.Prediction]] = None) -> ClassReport:
    """Count ``rows`` (one per submission and exercise) into a :class:`ClassReport`. A student who submitted the
    same exercise more than once counts with their best row (passed first, then points). ``min_share``: see
    :attr:`ClassReport.min_share`. ``predictions`` (from predictions CSVs) are counted per quiz, among the students
    who handed in its lesson (``None``: no predictions were given)."""
    rows = list(rows)
    handed_in: dict[str, set[str]] = defaultdict(set)   # submission -> its lessons
    for row in rows:
        handed_in[row.submission].add(_lesson_of(row.exercise))
    whose = layouts.students(handed_in)
    best: dict[tuple[str, str], Row] = {}
    for row in rows:
        key = (whose[row.submission].key, row.exercise)
        old = best.get(key)
        if old is None or (row.passed, row.points) > (old.passed, old.points):
            best[key] = row
    names = _names(sorted({s for s, _ in best}), anonymous)
    exercises = _exercise_stats(best)
    return ClassReport(students=len(names), submissions=len(handed_in), rows=len(rows),
                       layout=layouts.read_layout(whose),
                       lessons=_lesson_stats(best), exercises=exercises,
                       misconceptions=_misconception_stats(best), follow_up=_follow_up(best, names),
                       quizzes=[] if predictions is None else predicted.quiz_stats(predictions, whose, handed_in),
                       anonymous=anonymous, min_share=min_share)


def _names(students: list[str], anonymous: bool) -> dict[str, str]:
    return {s: (f"Student {i}" if anonymous else s) for i, s in enumerate(students, start=1)}


def _lesson_of(exercise: str) -> str:
    return exercise[:2] if exercise[:2].isdigit() else "?"


def _exercise_stats(best: dict[tuple[str, str], Row]) -> list[ExerciseStats]:
    from ..exercises import registry
    known = registry()
    stats: dict[str, ExerciseStats] = {}
    for (_, ex_id), row in best.items():
        s = stats.get(ex_id)
        if s is None:
            title = known[ex_id].title if ex_id in known else ex_id
            s = stats[ex_id] = ExerciseStats(ex_id, _lesson_of(ex_id), title)
        s.students += 1
        s.max_points = max(s.max_points, row.max_points)
        s.attempted += row.passed or row.code not in NOT_TRIED
        s.passed += row.passed
        s.scores[row.points] = s.scores.get(row.points, 0) + 1
        if not row.passed and row.code:
            s.codes[row.code] = s.codes.get(row.code, 0) + 1
    return [stats[k] for k in sorted(stats)]


def _lesson_stats(best: dict[tuple[str, str], Row]) -> list[LessonStats]:
    per_student: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for (student, ex_id), row in best.items():
        per_student[_lesson_of(ex_id)][student].append(row)
    out = []
    for lesson in sorted(per_student):
        students = per_student[lesson]
        totals = [sum(r.points for r in rows) for rows in students.values()]
        most = max(sum(r.max_points for r in rows) for rows in students.values())
        percent = [100 * sum(r.points for r in rows) / max(sum(r.max_points for r in rows), 1)
                   for rows in students.values()]
        out.append(LessonStats(lesson, len(students), round(sum(percent) / len(percent), 1),
                               sum(all(r.passed for r in rows) for rows in students.values()),
                               sum(t == 0 for t in totals), dict(sorted(Counter(totals).items())), most))
    return out


def _misconception_stats(best: dict[tuple[str, str], Row]) -> list[MisconceptionStats]:
    who: dict[str, set[str]] = defaultdict(set)
    where: dict[str, set[str]] = defaultdict(set)
    in_lesson: dict[tuple[str, str], set[str]] = defaultdict(set)   # (code, lesson) -> students
    for (student, ex_id), row in best.items():
        if not row.passed and row.code:
            who[row.code].add(student)
            where[row.code].add(ex_id)
            in_lesson[row.code, _lesson_of(ex_id)].add(student)
    handed_in: dict[str, set[str]] = defaultdict(set)   # lesson -> the students who handed it in
    for student, ex_id in best:
        handed_in[_lesson_of(ex_id)].add(student)
    out = []
    for code, students in who.items():
        m = misconceptions.get(code)
        section = f"Lesson {m.section[0][:2]}, {m.section[1]}" if m.section else ""
        of = set().union(*(handed_in[_lesson_of(e)] for e in where[code]))
        by_lesson = {lesson: (len(in_lesson[code, lesson]), len(handed_in[lesson]))
                     for lesson in sorted({_lesson_of(e) for e in where[code]})}
        out.append(MisconceptionStats(code, m.name, m.lesson, len(students), len(of), sorted(where[code]),
                                      m.explanation, section, m.link(), m.question, m.generic, by_lesson))
    return sorted(out, key=lambda m: (-m.students, m.code))


def _follow_up(best: dict[tuple[str, str], Row], names: dict[str, str]) -> list[FollowUp]:
    """Each student to follow up, once, with every reason, each named with its lesson."""
    by: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for (student, ex_id), row in best.items():
        by[student][_lesson_of(ex_id)].append(row)
    out = []
    for student in sorted(by):
        lessons, reasons = [], []
        for lesson, rows in sorted(by[student].items()):
            why = sorted({FOLLOW_UP[r.code] for r in rows if r.code in FOLLOW_UP})
            if sum(r.max_points for r in rows) and not sum(r.points for r in rows):
                why.insert(0, "no points in the whole lesson")
            if why:
                lessons.append(lesson)
                reasons += [f"lesson {lesson}: {w}" for w in why]
        if reasons:
            out.append(FollowUp(names[student], ", ".join(lessons), reasons))
    return out


# --- writing ------------------------------------------------------------------------------------------------------

#: The tables ``--format csv`` writes, one file each.
TABLES = ("lessons", "exercises", "misconceptions", "follow_up", "quizzes")


def tables(report: ClassReport) -> dict[str, list[dict]]:
    """The report's tables as lists of flat rows (for CSV)."""
    return {
        "lessons": [{"lesson": s.lesson, "students": s.students, "mean_percent": s.mean_percent,
                     "all_passed": s.all_passed, "zero": s.zero, "max_points": s.max_points,
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


# --- the HTML page ------------------------------------------------------------------------------------------------

_CSS = """
:root { color-scheme: light dark; --fg: #1b1b1b; --fg2: #4a4a4a; --bg: #ffffff; --card: #f4f4f4; --line: #767676;
        --bar: #0072B2; --bar2: #D55E00; --link: #0b5cad; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #ededed; --fg2: #c4c4c4; --bg: #121212; --card: #1f1f1f; --line: #9a9a9a; --bar: #56B4E9;
          --bar2: #E69F00; --link: #8cc4ff; } }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0 auto;
       max-width: 62rem; padding: 1rem; overflow-wrap: anywhere; }
a { color: var(--link); text-decoration: underline; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; width: 100%; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.n { white-space: nowrap; }
.muted { color: var(--fg2); }
.card { background: var(--card); border-left: 4px solid var(--line); padding: .5rem .8rem; margin: .6rem 0; }
svg text { fill: var(--fg); font-size: 12px; }
svg .bar { fill: var(--bar); } svg .bar2 { fill: var(--bar2); } svg .axis { stroke: var(--line); }
code { font-size: 90%; }
.row { display: flex; flex-wrap: wrap; gap: 0 1.5rem; } .row figure { margin: 0 0 1rem; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _code_html(text: str) -> str:
    """Escaped text with `inline code` shown as code."""
    parts = str(text).split("`")
    return "".join(f"<code>{_e(p)}</code>" if i % 2 else _e(p) for i, p in enumerate(parts))


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "–"


def _bars(title: str, items: list[tuple[str, int, int]], total_label: str) -> str:
    """A horizontal bar chart (inline SVG) of ``(label, value, whole)``: a bar per item, its number written
    beside it; the figure's text alternative states every number."""
    height, width, left = 22 * len(items) + 10, 560, 170
    rows = []
    for i, (label, value, whole) in enumerate(items):
        y = 5 + 22 * i
        w = (width - left - 90) * value / whole if whole else 0
        rows.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">{_e(label)}</text>'
                    f'<rect class="bar" x="{left}" y="{y + 3}" width="{w:.1f}" height="14"/>'
                    f'<text x="{left + w + 6:.1f}" y="{y + 14}">{value} of {whole} ({_percent(value, whole)})</text>')
    alt = f"{title}: " + "; ".join(f"{label}, {value} of {whole} {total_label}" for label, value, whole in items)
    return (f'<svg role="img" aria-label="{_e(alt)}" viewBox="0 0 {width} {height}" width="100%" '
            f'style="max-width:{width}px"><line class="axis" x1="{left}" y1="0" x2="{left}" y2="{height}"/>'
            f'{"".join(rows)}</svg>')


def _distribution(counts: dict[int, int], most: int, what: str) -> str:
    """Students per score (0..most), as columns with their numbers written above."""
    scores = list(range(most + 1)) if most <= 20 else sorted(counts)
    peak = max(counts.values(), default=1)
    width, colw = max(40 * len(scores), 120), 40
    cols = []
    for i, s in enumerate(scores):
        n = counts.get(s, 0)
        h = 60 * n / peak
        cols.append(f'<rect class="bar2" x="{i * colw + 8}" y="{80 - h:.1f}" width="{colw - 16}" height="{h:.1f}"/>'
                    f'<text x="{i * colw + colw / 2}" y="{76 - h:.1f}" text-anchor="middle">{n}</text>'
                    f'<text x="{i * colw + colw / 2}" y="96" text-anchor="middle">{s}</text>')
    alt = f"Students by {what}: " + ", ".join(f"{counts.get(s, 0)} with {s}" for s in scores)
    return (f'<svg role="img" aria-label="{_e(alt)}" viewBox="0 -4 {width} 104" width="{width}" '
            f'style="max-width:100%">{"".join(cols)}</svg>')


def render_html(report: ClassReport) -> str:
    """The report as one self-contained, accessible HTML page (no script)."""
    parts = [f"<h1>What did the class get wrong?</h1><p class='muted'>{report.students} students, "
             f"{report.submissions} submissions, {report.rows} graded exercises. Read as "
             f"{_e(report.layout)}."
             f"{' Names hidden (--anonymous).' if report.anonymous else ''}</p>"]
    parts.append(_plan_section(report))
    parts.append(_course_section(report))
    parts.append(_misconception_section(report))
    parts.append(_prediction_section(report))
    parts.append(_follow_up_section(report))
    parts.append(_exercise_section(report))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>Class report: what did the class get wrong?</title><style>{_CSS}</style></head>"
            f"<body><main>{''.join(parts)}</main></body></html>")


def _plan_section(report: ClassReport) -> str:
    """The first page, for planning the next class: per lesson, what to re-teach (the misconceptions above the
    cut-off, each with its share, where it is taught and a question to ask), and how many to follow up."""
    items, reteach = [], report.to_reteach()
    for s in report.lessons:
        top = reteach[s.lesson]
        said = "".join(f"<li>{_code_html(m.name)}: <b>{n}</b> of {of} ({_percent(n, of)})."
                       f" Ask: {_code_html(m.question)}"
                       + (f" <a href='{_e(m.link)}'>Taught in {_code_html(m.section)}</a>" if m.link else "")
                       + "</li>" for m, n, of in top)
        nothing = f"<li>No misconception shown by {report.min_share:.0%} of the class or more.</li>"
        items.append(f"<h3>Lesson {_e(s.lesson)}</h3><p>{s.students} students handed it in; mean score "
                     f"{s.mean_percent:.0f}%, {s.all_passed} passed every exercise, {s.zero} scored zero.</p>"
                     f"<ul>{said or nothing}</ul>{_mispredicted(report, s.lesson)}")
    follow = (f"<p>{len(report.follow_up)} student{'s' if len(report.follow_up) != 1 else ''} to follow up "
              "(<a href='#follow-up'>the list</a>).</p>") if report.follow_up else ""
    return (f"<h2>To plan the next class</h2><p class='muted'>Per lesson, the misconceptions shown by at least "
            f"{report.min_share:.0%} of the students who handed it in (at most {TOP_PER_LESSON}, most shown first); "
            f"the details follow below.</p>{''.join(items)}{follow}")


def _mispredicted(report: ClassReport, lesson: str) -> str:
    """For the plan: the lesson's quizzes the fewest predicted right first time (none without predictions)."""
    worst = predicted.most_mispredicted(report.quizzes, lesson)
    if not worst:
        return ""
    items = "".join(f"<li><code>{_e(q.quiz)}</code>: {q.predicted - q.right_first} of {q.predicted} predicted it "
                    f"wrong first ({_percent(q.predicted - q.right_first, q.predicted)}), most often "
                    f"“{_code_html(q.wrong[0][0])}”. The answer: “{_code_html(q.answer)}”.</li>" for q in worst)
    return f"<p>Predicted wrong most often (<a href='#predictions'>every quiz</a>):</p><ul>{items}</ul>"


def _prediction_section(report: ClassReport) -> str:
    """Per quiz: how many recorded a prediction, how many were right first time, and the wrong options chosen."""
    if not report.quizzes:
        return ""
    rows = "".join(
        f"<tr><th scope='row'><code>{_e(q.quiz)}</code> {_code_html(q.question)}</th>"
        f"<td class='n'>{q.predicted} of {q.students}</td>"
        f"<td class='n'>{f'{q.right_first} ({_percent(q.right_first, q.predicted)})' if q.predicted else '-'}</td>"
        f"<td>{_code_html('; '.join(f'{option}: {n}' for option, n in q.wrong)) or '-'}</td></tr>"
        for q in report.quizzes)
    return ("<h2 id='predictions'>What the class predicted</h2><p class='muted'>Each student's first prediction on "
            "each quiz, from the record their notebook's <code>cu.progress()</code> cell saved (a notebook saved "
            "before that cell ran has none). Predictions are what students wrote before they knew: a signal for "
            "planning, never a grade.</p><table><caption>Quizzes: predictions recorded, right first time, wrong "
            "options chosen</caption><thead><tr><th scope='col'>Quiz</th><th scope='col' class='n'>Predicted</th>"
            "<th scope='col' class='n'>Right first time</th><th scope='col'>Wrong first predictions</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>")


def _course_section(report: ClassReport) -> str:
    rows = "".join(f"<tr><th scope='row'>Lesson {_e(s.lesson)}</th><td class='n'>{s.students}</td>"
                   f"<td class='n'>{s.mean_percent:.0f}%</td><td class='n'>{s.all_passed}</td>"
                   f"<td class='n'>{s.zero}</td></tr>" for s in report.lessons)
    chart = _bars("Students who passed every exercise of a lesson",
                  [(f"Lesson {s.lesson}", s.all_passed, s.students) for s in report.lessons], "students")
    return ("<h2>Where the class stands</h2>"
            f"<figure>{chart}<figcaption>Students who passed every exercise of each lesson, of those who handed "
            "it in.</figcaption></figure>"
            "<table><caption>Each lesson</caption><thead><tr><th scope='col'>Lesson</th>"
            "<th scope='col' class='n'>Students</th><th scope='col' class='n'>Mean score</th>"
            "<th scope='col' class='n'>Passed all</th><th scope='col' class='n'>Scored zero</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            + "<div class='row'>" + "".join(
                f"<figure>{_distribution(s.scores, s.max_points, 'points')}<figcaption>Lesson {_e(s.lesson)}: "
                f"students by points</figcaption></figure>" for s in report.lessons) + "</div>")


def _lessons_named(exercises: list[str]) -> str:
    """``lesson 03`` or ``lessons 03 and 06`` for the lessons of ``exercises``."""
    lessons = sorted({_lesson_of(e) for e in exercises})
    return (f"lesson {lessons[0]}" if len(lessons) == 1
            else f"lessons {', '.join(lessons[:-1])} and {lessons[-1]}")


def _misconception_section(report: ClassReport) -> str:
    specific = [m for m in report.misconceptions if not m.generic and m.share >= report.min_share]
    rare = [m for m in report.misconceptions if not m.generic and m.share < report.min_share]
    generic = [m for m in report.misconceptions if m.generic]
    cards = []
    for rank, m in enumerate(specific, start=1):
        section = (f"<a href='{_e(m.link)}'>{_code_html(m.section)}</a>" if m.link else _code_html(m.section))
        cards.append(f"<div class='card'><h3>{rank}. {_code_html(m.name)}</h3>"
                     f"<p><b>{m.students}</b> of the {m.of} students who handed in "
                     f"{_e(_lessons_named(m.exercises))} ({_percent(m.students, m.of)}), in "
                     f"{_e(', '.join(m.exercises))} · "
                     f"code <code>{_e(m.code)}</code></p><p>{_code_html(m.explanation)}</p>"
                     f"<p>Taught in: {section}</p><p>Ask the class: {_code_html(m.question)}</p></div>")
    none = "<p>No misconception the checks name was shown that often.</p>" if not specific else ""
    other = "".join(f"<tr><th scope='row'>{_code_html(m.name)} <code>{_e(m.code)}</code></th>"
                    f"<td class='n'>{m.students}</td><td>{_e(', '.join(m.exercises))}</td></tr>" for m in generic)
    other_table = ("<table><caption>Other reasons answers failed (no particular misconception)</caption><thead><tr>"
                   "<th scope='col'>Reason</th><th scope='col' class='n'>Students</th><th scope='col'>Exercises"
                   f"</th></tr></thead><tbody>{other}</tbody></table>") if generic else ""
    few = "".join(f"<tr><th scope='row'>{_code_html(m.name)} <code>{_e(m.code)}</code></th>"
                  f"<td class='n'>{m.students} of {m.of}</td><td>{_e(', '.join(m.exercises))}</td></tr>" for m in rare)
    few_table = (f"<table><caption>Shown by fewer than {report.min_share:.0%} of the students who handed the lesson "
                 "in</caption><thead><tr><th scope='col'>Misconception</th><th scope='col' class='n'>Students</th>"
                 f"<th scope='col'>Exercises</th></tr></thead><tbody>{few}</tbody></table>") if rare else ""
    return ("<h2>Misconceptions to re-teach</h2><p class='muted'>Ranked by how many students showed each (a "
            f"student counts once per misconception); a card for each shown by {report.min_share:.0%} of the "
            f"students or more.</p>{none}{''.join(cards)}{few_table}{other_table}")


def _exercise_section(report: ClassReport) -> str:
    out = [f"<h2>Each exercise</h2><details><summary>The {len(report.exercises)} exercises: attempts, passes, "
           "points and the mistakes behind the failures</summary>"]
    for s in report.exercises:
        codes = ", ".join(f"{misconceptions.get(c).name} ({n})" for c, n in
                          sorted(s.codes.items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(f"<h3>{_e(s.exercise)} · {_code_html(s.title)}</h3>"
                   f"<p>{s.attempted} of {s.students} attempted, {s.passed} passed "
                   f"({_percent(s.passed, s.students)}).</p>"
                   f"<figure>{_distribution(s.scores, s.max_points, 'points')}<figcaption>Students by points "
                   f"(0 to {s.max_points}).</figcaption></figure>"
                   + (f"<p>Failed answers: {_code_html(codes)}.</p>" if codes else ""))
    return "".join(out) + "</details>"


def _follow_up_section(report: ClassReport) -> str:
    if not report.follow_up:
        return ("<h2 id='follow-up'>To follow up</h2><p>Nobody scored zero on a whole lesson or hit tampering or a time "
                "limit.</p>")
    rows = "".join(f"<tr><th scope='row'>{_e(f.student)}</th><td>{_e(f.lesson)}</td>"
                   f"<td>{_e('; '.join(f.reasons))}</td></tr>" for f in report.follow_up)
    return ("<h2 id='follow-up'>To follow up</h2><p class='muted'>To offer help, not to blame: a zero is often a file handed in "
            "unsaved, a time limit a loop that never ends. Each student once, with every reason.</p><table><caption>"
            "Students to follow up</caption><thead><tr><th scope='col'>Student</th><th scope='col'>Lessons</th>"
            "<th scope='col'>Why</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>")


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


def run(args: argparse.Namespace, stderr=sys.stderr) -> int:
    """Run ``report``; exit status 0, or 2 with a message for bad input."""
    fmt = args.format or ("json" if (args.out or "").endswith(".json") else "html")
    out = args.out or {"html": "report.html", "json": "report.json", "csv": "report-csv",
                       "gradebook": "gradebook.csv"}[fmt]
    try:
        targets = [os.path.join(out, f"{name}.csv") for name in TABLES] if fmt == "csv" else [out]
        for target in targets:   # never write over an input (a table of --format csv included)
            if any(os.path.exists(target) and same_file(target, f) for f in input_files(args.grades)):
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
            rows = [r for r in rows if _lesson_of(r.exercise) in wanted]
            if predictions is not None:
                predictions = [p for p in predictions if _lesson_of(p.quiz) in wanted]
            if not rows:
                raise ReportError(f"no graded exercises of lesson {', '.join(sorted(wanted))} in the input")
        if fmt == "gradebook":   # names are the point of a gradebook: --anonymous does not apply
            written = gradebook.write(rows, out)
        else:
            written = write(summarize(rows, args.anonymous, args.min_share / 100, predictions), out, fmt)
    except ReportError as e:
        print(f"report: {e}", file=stderr)
        return 2
    except OSError as e:
        print(f"report: cannot write {out}: {e.strerror or e}", file=stderr)
        return 2
    print(f"Wrote {', '.join(written)}", file=stderr)
    return 0


__all__ = ["read_rows", "read_inputs", "summarize", "ClassReport", "tables", "write", "render_html",
           "add_arguments", "run", "ReportError"]
