"""The learner's progress: quiz and exercise outcomes, stored locally as JSON.

Writes are atomic (temporary file + ``os.replace``) and serialised with a lock file, so two notebooks saving at once
lose nothing. A missing file is an empty record; a damaged one is kept aside under a new name and a fresh record is
started, with a message saying so. Progress problems never stop a notebook: they become a warning."""
from __future__ import annotations

import contextlib
import html
import json
import os
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

from . import misconceptions
from .exercises import exercise_ids
from .files import atomic_open
from .loading import lesson_data
from .quizzes import quiz_ids
from .results import PREDICTIONS_MIME
from .syllabus import LESSONS
from .text import code_html

#: Environment variable naming the progress file (tests and shared machines set it).
PROGRESS_ENV = "COURSE_PROGRESS_FILE"
_VERSION = 1
_SESSION: dict[str, tuple[str, str]] = {}  # exercise id -> last (status, code), for this Python process only
#: What changes while the learner works (the grader's tamper check allows it).
CHANGING = (_SESSION,)


def progress_path() -> Path:
    """Where progress is stored: ``$COURSE_PROGRESS_FILE`` or ``~/.where-does-my-tensor-live/progress.json``."""
    env = os.environ.get(PROGRESS_ENV)
    return Path(env).expanduser() if env else Path.home() / ".where-does-my-tensor-live" / "progress.json"


def load(path: Path | None = None) -> dict[str, Any]:
    """Read the progress record; recover from a missing or damaged file (never raises)."""
    path = Path(path) if path else progress_path()
    try:
        return _read(path)
    except OSError as e:
        warnings.warn(f"Could not read progress from {path}: {e}", stacklevel=2)
        return _empty()


def record_quiz(quiz_id: str, correct: bool, chosen: int) -> None:
    """Store a committed quiz prediction (the first is kept as ``first_chosen`` and ``first_correct``)."""
    def update(data: dict[str, Any]) -> None:
        entry = data["quizzes"].get(quiz_id)
        if not isinstance(entry, dict):  # new, or hand-edited into something else
            entry = data["quizzes"][quiz_id] = {"first_correct": correct, "first_chosen": chosen, "attempts": 0}
        entry.update(correct=correct, chosen=chosen, attempts=entry.get("attempts", 0) + 1, at=_now())
    _update(update)


def record_result(exercise_id: str, status: str, points: int, max_points: int, code: str = "") -> None:
    """Store an exercise check; the best status so far is kept in ``passed``. Each lesson's misconception in ``code``
    (:mod:`course_utils.misconceptions`) is kept in ``misconceptions`` as hit, and as cleared once a later check
    of the exercise passes (hit again, it is open again)."""
    _SESSION[exercise_id] = (status, code)

    def update(data: dict[str, Any]) -> None:
        entry = data["exercises"].get(exercise_id)
        if not isinstance(entry, dict):  # new, or hand-edited into something else: start it afresh
            entry = data["exercises"][exercise_id] = {"passed": False, "attempts": 0}
        entry.update(status=status, points=points, max_points=max_points, at=_now(),
                     passed=bool(entry.get("passed")) or status == "passed")
        if status != "not attempted":
            entry["attempts"] = entry.get("attempts", 0) + 1
        seen = entry.get("misconceptions")
        if not isinstance(seen, dict):
            seen = entry["misconceptions"] = {}
        if status == "passed":
            for met in list(seen):
                seen[met] = {**(seen[met] if isinstance(seen[met], dict) else {}), "cleared": True}
        for met in () if status == "passed" else misconceptions.codes(code):
            if not misconceptions.get(met).generic:
                hit = seen.get(met) if isinstance(seen.get(met), dict) else {}
                times = hit.get("times") if isinstance(hit.get("times"), int) else 0
                seen[met] = {**hit, "times": times + 1, "cleared": False}
    _update(update)


def session_statuses() -> dict[str, str]:
    """Exercise id -> last status checked in this Python process (used by the notebook tests)."""
    return {ex_id: status for ex_id, (status, _) in _SESSION.items()}


def session_codes() -> dict[str, str]:
    """Exercise id -> the misconception code of its last check in this Python process (``""`` when passed)."""
    return {ex_id: code for ex_id, (_, code) in _SESSION.items()}


#: A mark per state, and its word (the picture's legend; a screen reader reads the word).
MARKS = {"done": "✔", "tried": "◐", "not started": "○"}


class Summary:
    """Progress across the course, one row per lesson, as text and as HTML: a picture of every quiz and exercise
    (done, tried, not started), counts, and the misconceptions the learner's checks met, cleared or not."""

    def __init__(self, rows: list[dict[str, Any]], path: Path, hits: list[dict[str, Any]] | None = None,
                 predictions: dict[str, dict[str, Any]] | None = None):
        self.rows, self.path, self.hits = rows, path, hits or []
        self.predictions = predictions or {}   # quiz id -> {"first": letter, "attempts": n}, see _predictions

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The record of quiz predictions, beside the HTML and the text that IPython adds: saved with the output,
        it reaches the teacher with a notebook handed in."""
        return {PREDICTIONS_MIME: {"version": _VERSION, "quizzes": self.predictions}}

    _HEAD = ("Lesson", "Quizzes answered", "Right first time", "Exercises passed")

    def _cells(self, row: dict[str, Any]) -> tuple[str, ...]:
        return (f"{row['lesson']} {row['title']}", f"{row['answered']}/{row['quizzes']}",
                f"{row['first_right']}/{row['answered']}" if row["answered"] else "-",
                f"{row['passed']}/{row['exercises']}")

    @staticmethod
    def _marks(items: list[tuple[str, str]]) -> str:
        return "".join(MARKS[state] for _, state in items) or "-"

    def text(self) -> str:
        table = [self._HEAD + ("Quizzes", "Exercises")]
        table += [self._cells(r) + (self._marks(r["quiz_items"]), self._marks(r["exercise_items"])) for r in self.rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.append("  ".join(f"{m} {word}" for word, m in MARKS.items()))
        if self.hits:
            lines.append("Misconceptions your checks met:")
            lines += [f"  {'cleared' if h['cleared'] else 'open   '}  {h['code']}  {h['name']} (lesson {h['lesson']}, "
                      f"{h['section']})" for h in self.hits]
        return "\n".join(lines + [f"(stored in {self.path})"])

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        esc = html.escape
        head = "".join(f"<th scope='col'>{h}</th>" for h in self._HEAD + ("Quizzes and exercises",))

        def picture(row: dict[str, Any]) -> str:
            def mark(item_id: str, state: str, kind: str) -> str:
                return (f"<span role='img' aria-label='{esc(kind)} {esc(item_id)}: {state}' title='{esc(item_id)}: "
                        f"{state}' style='font-size:1.2em'>{MARKS[state]}</span>")
            quizzes = "".join(mark(i, s, "quiz") for i, s in row["quiz_items"])
            exercises = "".join(mark(i, s, "exercise") for i, s in row["exercise_items"])
            return f"<td>{quizzes}<span style='padding:0 .6em'>│</span>{exercises}</td>"

        body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in self._cells(r)) + picture(r) + "</tr>"
                       for r in self.rows)
        legend = " · ".join(f"{m} {word}" for word, m in MARKS.items())
        hits = ""
        if self.hits:
            items = "".join(f"<li><b>{'cleared' if h['cleared'] else 'still open'}</b>: {code_html(h['name'])} "
                            f"(<code>{esc(h['code'])}</code>, in {esc(h['exercise'])}); taught in "
                            f"<a href='{esc(h['link'])}'>lesson {esc(h['lesson'])}, {code_html(h['section'])}</a></li>"
                            for h in self.hits)
            hits = f"<p>Misconceptions your checks met:</p><ul class='course-misconceptions'>{items}</ul>"
        return (f"<table class='course-progress'><caption>Your progress (quizzes │ exercises: {legend})</caption>"
                f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{hits}"
                f"<small>Stored in <code>{esc(str(self.path))}</code></small>")


def summary(path: Path | None = None) -> Summary:
    """Progress across all lessons: quizzes answered, right first time, exercises passed, each quiz and exercise
    as done, tried or not started, and the misconceptions the checks met."""
    path = Path(path) if path else progress_path()
    data = load(path)
    rows = []
    for number, lesson in LESSONS.items():
        order = {item: i for i, item in enumerate(lesson_data(number).get("order", []))}   # as the notebook meets them
        quizzes, exercises = ([i for i in sorted(ids, key=lambda i: (order.get(i, len(order)), i))
                               if i.startswith(number + ".")] for ids in (quiz_ids(), exercise_ids()))
        answered = [a for q in quizzes if isinstance(a := data["quizzes"].get(q), dict)]
        done = {e: d if isinstance(d := data["exercises"].get(e), dict) else {} for e in exercises}
        rows.append(dict(
            lesson=number, title=lesson.title, quizzes=len(quizzes), answered=len(answered),
            first_right=sum(bool(a.get("first_correct")) for a in answered),
            exercises=len(exercises), passed=sum(bool(d.get("passed")) for d in done.values()),
            quiz_items=[(q, "done" if q in data["quizzes"] else "not started") for q in quizzes],
            exercise_items=[(e, "done" if d.get("passed") else "tried" if d.get("attempts") else "not started")
                            for e, d in done.items()]))
    return Summary(rows, path, _hits(data), _predictions(data))


def _predictions(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each answered quiz's first prediction, as a letter, and how many were committed. A record written before
    the first choice was kept has it only when there was one prediction."""
    out = {}
    for quiz_id, entry in sorted(data["quizzes"].items()):
        if not isinstance(entry, dict):
            continue
        first = entry.get("first_chosen", entry.get("chosen") if entry.get("attempts") == 1 else None)
        if isinstance(first, int) and not isinstance(first, bool) and 0 <= first < 26:
            out[quiz_id] = {"first": "abcdefghijklmnopqrstuvwxyz"[first], "attempts": entry.get("attempts", 1)}
    return out


def _hits(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The misconceptions recorded in ``data``, open ones first."""
    hits = []
    for ex_id, entry in data["exercises"].items():
        seen = entry.get("misconceptions") if isinstance(entry, dict) else None
        for code, hit in (seen.items() if isinstance(seen, dict) else ()):
            m = misconceptions.get(str(code))
            if m.section is None:
                continue
            # the lesson whose notebook holds the section (a mistake of lesson 06 may be taught in lesson 05)
            hits.append(dict(code=m.code, name=m.name, exercise=ex_id, lesson=m.section[0][:2], section=m.section[1],
                             link=m.link(), cleared=bool(isinstance(hit, dict) and hit.get("cleared"))))
    return sorted(hits, key=lambda h: (h["cleared"], h["code"]))


# --- storage -------------------------------------------------------------------------------

def _empty() -> dict[str, Any]:
    return {"version": _VERSION, "quizzes": {}, "exercises": {}}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def _read(path: Path) -> dict[str, Any]:
    """Parse the file; a damaged file is renamed aside (nothing silently lost)."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return _empty()
    try:
        data = json.loads(raw)
        if not (isinstance(data, dict) and isinstance(data.get("quizzes"), dict)
                and isinstance(data.get("exercises"), dict)):
            raise ValueError("not a progress record")
        return data
    except ValueError:
        backup = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        os.replace(path, backup)
        warnings.warn(f"Your progress file {path} was damaged; it was kept as {backup.name} "
                      "and a fresh record was started.", stacklevel=3)
        return _empty()


def _update(change) -> None:
    path = progress_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(path):
            data = _read(path)
            change(data)
            _write_atomic(path, data)
    except OSError as e:  # read-only home, full disk, ...: keep the lesson going
        warnings.warn(f"Progress not saved ({e}). Set {PROGRESS_ENV} to a writable file.", stacklevel=3)


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    with atomic_open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: atomic replace still prevents torn files
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
