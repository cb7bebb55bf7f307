"""How long each lesson takes a novice: an estimate from its cells, beside the time the lesson states.

The model (a learner with Python basics and no PyTorch, working through the core path):

* reading: 120 words of Markdown a minute; a collapsed note (``<details>`` ... ``</details>``) counts 30 % of its
  words (some open it, most do not);
* a code cell: 20 s plus 6 s a line of code (reading it, running it, reading what it prints), at most 3 minutes;
  30 s more when it raises on purpose (tagged ``raises-exception``: the learner reads a traceback and its
  explanation);
* a quiz: 1.5 minutes (read, predict, commit, read the explanation);
* an exercise: by its size, 4 minutes plus 1 a line of its reference solution (the code to write, without its
  ``def`` line, docstring and comments), at most 15; or the minutes its answer cell's metadata gives
  (``{"course": {"exercise": ..., "minutes": 25}}``, for the capstone);
* the setup cell's first run: 2 minutes.

Only the core path counts: from a level-2 heading that starts with "Going further" on, the cells are optional, and
so is the rest of a collapsed note; both are reported apart. The stated time is the lesson's "**Time:** about N
minutes". ``tests/test_teaching.py`` keeps each estimate within 1.2x of it.

Usage: python scripts/lesson_times.py        (a Markdown table, for the instructor's guide)
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS_PER_MINUTE = 120
NOTE_SHARE = 0.3
CELL_SECONDS, LINE_SECONDS, CELL_MAX_SECONDS, RAISES_SECONDS = 20, 6, 180, 30
QUIZ_MINUTES = 1.5
EXERCISE_MINUTES, EXERCISE_LINE_MINUTES, EXERCISE_MAX_MINUTES = 4.0, 1.0, 15.0
SETUP_MINUTES = 2.0
#: How far the estimate may be from the stated time, either way.
TOLERANCE = 1.2

_STATED = re.compile(r"\*\*Time:\*\*\s+about\s+(\d+)\s+minutes")
_OPTIONAL = re.compile(r"^##\s+Going further", re.MULTILINE)
_NOTE = re.compile(r"<details>.*?</details>", re.DOTALL)


@dataclass(frozen=True)
class Estimate:
    """One lesson's counts on its core path, its estimated and stated minutes, and the optional minutes."""

    lesson: str
    words: int
    demos: int
    quizzes: int
    exercises: int
    minutes: float
    stated: int
    optional_minutes: float

    @property
    def ratio(self) -> float:
        """Estimated over stated time."""
        return self.minutes / self.stated


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def code_lines(text: str) -> int:
    """Lines of code a learner reads or writes: not blank, not a comment, not a ``def``/``class`` line or docstring."""
    text = re.sub(r'(?s)("""|\'\'\').*?\1', "", text)
    return sum(1 for line in text.splitlines()
               if line.strip() and not line.strip().startswith(("#", "def ", "class ", "@")))


def cell_minutes(cell: dict) -> float:
    """A demonstration cell's minutes: by its length, more when it raises on purpose."""
    seconds = min(CELL_SECONDS + LINE_SECONDS * code_lines(_source(cell)), CELL_MAX_SECONDS)
    if "raises-exception" in cell.get("metadata", {}).get("tags", []):
        seconds += RAISES_SECONDS
    return seconds / 60


def exercise_minutes(cell: dict) -> float:
    """An exercise's minutes: its metadata's, or by the size of its reference solution."""
    meta = cell["metadata"]["course"]
    if "minutes" in meta:
        return float(meta["minutes"])
    try:
        sys.path.insert(0, str(ROOT))
        from course_utils.exercises import get_exercise
        lines = code_lines(get_exercise(meta["exercise"]).solution_source)
    except (ImportError, KeyError):   # an exercise the package does not know (a test's)
        lines = 0
    finally:
        sys.path.remove(str(ROOT))
    return min(EXERCISE_MINUTES + EXERCISE_LINE_MINUTES * lines, EXERCISE_MAX_MINUTES)


def _minutes(cells: list[dict], notes: bool = False) -> tuple[int, int, int, int, float]:
    """Counts and minutes of some cells: the core path's, or (``notes``) only the words of collapsed notes."""
    words = demos = quizzes = exercises = 0
    minutes = 0.0
    for cell in cells:
        text = _source(cell)
        if cell["cell_type"] == "markdown":
            words += len(" ".join(_NOTE.findall(text) if notes else _NOTE.split(text)).split())
        elif notes:
            continue
        elif cell["cell_type"] == "code" and text.strip():
            if "cu.quiz(" in text:
                quizzes += 1
                minutes += QUIZ_MINUTES
            elif (cell.get("metadata", {}).get("course") or {}).get("exercise"):
                exercises += 1
                minutes += exercise_minutes(cell)
            elif "cu.setup(" in text:
                minutes += SETUP_MINUTES
            elif "cu.exercise(" not in text:   # an exercise's check cell belongs to the exercise
                demos += 1
                minutes += cell_minutes(cell)
    minutes += words / WORDS_PER_MINUTE
    return words, demos, quizzes, exercises, minutes


def estimate(path: Path) -> Estimate:
    """The estimate for one notebook."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    stated = next((int(m.group(1)) for c in cells if c["cell_type"] == "markdown"
                   for m in [_STATED.search(_source(c))] if m), 0)
    cut = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and _OPTIONAL.search(_source(c))),
               len(cells))
    words, demos, quizzes, exercises, minutes = _minutes(cells[:cut])
    notes = _minutes(cells[:cut], notes=True)[-1]   # reading every collapsed note of the core path
    minutes += NOTE_SHARE * notes
    optional = _minutes(cells[cut:])[-1] + (1 - NOTE_SHARE) * notes
    return Estimate(path.stem[:2], words, demos, quizzes, exercises, minutes, stated, optional)


def estimates() -> list[Estimate]:
    """Every lesson's estimate, in order."""
    return [estimate(p) for p in sorted((ROOT / "notebooks").glob("0*.ipynb"))]


def table(rows: list[Estimate]) -> str:
    """The estimates as a Markdown table."""
    lines = ["| lesson | words | demo cells | quizzes | exercises | estimated | stated | going further |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r.lesson} | {r.words:,} | {r.demos} | {r.quizzes} | {r.exercises} | ~{r.minutes:.0f} min | "
              f"{r.stated} min | {f'+{r.optional_minutes:.0f} min' if r.optional_minutes else '-'} |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(estimates()))
    sys.exit(0)
