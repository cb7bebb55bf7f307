"""The learner's progress: quiz and exercise outcomes, stored locally as JSON.

Writes are atomic (temporary file + ``os.replace``) and serialised with a lock file, so two
notebooks saving at once lose nothing. A missing file is an empty record; a damaged one is
kept aside under a new name and a fresh record is started, with a message saying so.
Progress problems never stop a notebook: they become a warning.
"""
from __future__ import annotations

import contextlib
import html
import json
import os
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

from .exercises import exercise_ids
from .files import atomic_open
from .lessons import LESSONS
from .quizzes import quiz_ids

#: Environment variable naming the progress file (tests and shared machines set it).
PROGRESS_ENV = "COURSE_PROGRESS_FILE"
_VERSION = 1
_SESSION: dict[str, str] = {}  # exercise id -> last status, for this Python process only


def progress_path() -> Path:
    """Where progress is stored: ``$COURSE_PROGRESS_FILE`` or ``~/.where-does-my-tensor-live/progress.json``."""
    env = os.environ.get(PROGRESS_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".where-does-my-tensor-live" / "progress.json"


def load(path: Path | None = None) -> dict[str, Any]:
    """Read the progress record; recover from a missing or damaged file (never raises)."""
    path = Path(path) if path else progress_path()
    try:
        return _read(path)
    except OSError as e:
        warnings.warn(f"Could not read progress from {path}: {e}", stacklevel=2)
        return _empty()


def record_quiz(quiz_id: str, correct: bool, chosen: int) -> None:
    """Store a committed quiz prediction (the first prediction is kept as ``first_correct``)."""
    def update(data: dict[str, Any]) -> None:
        entry = data["quizzes"].setdefault(quiz_id, {"first_correct": correct, "attempts": 0})
        entry.update(correct=correct, chosen=chosen, attempts=entry.get("attempts", 0) + 1, at=_now())
    _update(update)


def record_result(exercise_id: str, status: str, points: int, max_points: int) -> None:
    """Store an exercise check; the best status so far is kept in ``passed``."""
    _SESSION[exercise_id] = status

    def update(data: dict[str, Any]) -> None:
        entry = data["exercises"].setdefault(exercise_id, {"passed": False, "attempts": 0})
        entry.update(status=status, points=points, max_points=max_points, at=_now(),
                     passed=bool(entry.get("passed")) or status == "passed")
        if status != "not attempted":
            entry["attempts"] = entry.get("attempts", 0) + 1
    _update(update)


def session_statuses() -> dict[str, str]:
    """Exercise id -> last status checked in this Python process (used by the notebook tests)."""
    return dict(_SESSION)


class Summary:
    """Progress across the course, one row per lesson, as text and as an HTML table."""

    def __init__(self, rows: list[dict[str, Any]], path: Path):
        self.rows, self.path = rows, path

    _HEAD = ("Lesson", "Quizzes answered", "Right first time", "Exercises passed")

    def _cells(self, row: dict[str, Any]) -> tuple[str, ...]:
        return (f"{row['lesson']} {row['title']}", f"{row['answered']}/{row['quizzes']}",
                f"{row['first_right']}/{row['answered']}" if row["answered"] else "-",
                f"{row['passed']}/{row['exercises']}")

    def text(self) -> str:
        table = [self._HEAD] + [self._cells(r) for r in self.rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(self._HEAD))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in table]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines + [f"(stored in {self.path})"])

    __str__ = text
    __repr__ = text

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in self._HEAD)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in self._cells(r)) + "</tr>"
                       for r in self.rows)
        return (f"<table class='course-progress'><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
                f"</table><small>Stored in <code>{html.escape(str(self.path))}</code></small>")


def summary(path: Path | None = None) -> Summary:
    """Progress across all lessons: quizzes answered, right first time, exercises passed."""
    path = Path(path) if path else progress_path()
    data = load(path)
    rows = []
    for number, title in LESSONS.items():
        quizzes = [q for q in quiz_ids() if q.startswith(number + ".")]
        exercises = [e for e in exercise_ids() if e.startswith(number + ".")]
        answered = [data["quizzes"][q] for q in quizzes if q in data["quizzes"]]
        rows.append(dict(
            lesson=number, title=title, quizzes=len(quizzes), answered=len(answered),
            first_right=sum(bool(a.get("first_correct")) for a in answered),
            exercises=len(exercises),
            passed=sum(bool(data["exercises"].get(e, {}).get("passed")) for e in exercises)))
    return Summary(rows, path)


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
