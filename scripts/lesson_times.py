"""How long each lesson takes: an estimate from its cells, beside the time the lesson states.

The estimate reads 150 words of Markdown a minute, gives each demonstration cell 45 s (read the code, run it,
read what it prints), each quiz 1 minute and each exercise 6 (4 to 10: read the task, write, check), or the
minutes its answer cell's metadata gives (``{"course": {"exercise": ..., "minutes": 15}}``, for a capstone). Only the
core path counts: from a level-2 heading that starts with "Going further" on, the cells are optional, and so is
the text of a collapsed note (``<details>`` ... ``</details>``); both are reported apart. The stated time is the lesson's "**Time:** about N minutes".

Usage: python scripts/lesson_times.py        (a Markdown table, for the instructor's guide)
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS_PER_MINUTE = 150
DEMO_MINUTES = 0.75
QUIZ_MINUTES = 1.0
EXERCISE_MINUTES = 6.0
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


def _minutes(cells: list[dict], notes: bool = False) -> tuple[int, int, int, int, float]:
    """Counts and minutes of some cells: the core path's, or (``notes``) only the words of collapsed notes."""
    words = demos = quizzes = exercises = 0
    exercise_minutes = 0.0
    for cell in cells:
        text = _source(cell)
        if cell["cell_type"] == "markdown":
            words += len(" ".join(_NOTE.findall(text) if notes else _NOTE.split(text)).split())
        elif notes:
            continue
        elif cell["cell_type"] == "code" and text.strip():
            if "cu.quiz(" in text:
                quizzes += 1
            elif (cell.get("metadata", {}).get("course") or {}).get("exercise"):
                exercises += 1
                exercise_minutes += float(cell["metadata"]["course"].get("minutes", EXERCISE_MINUTES))
            elif "cu.exercise(" not in text:   # an exercise's check cell belongs to the exercise
                demos += 1
    minutes = words / WORDS_PER_MINUTE + demos * DEMO_MINUTES + quizzes * QUIZ_MINUTES + exercise_minutes
    return words, demos, quizzes, exercises, minutes


def estimate(path: Path) -> Estimate:
    """The estimate for one notebook."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    stated = next((int(m.group(1)) for c in cells if c["cell_type"] == "markdown"
                   for m in [_STATED.search(_source(c))] if m), 0)
    cut = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown" and _OPTIONAL.search(_source(c))),
               len(cells))
    words, demos, quizzes, exercises, minutes = _minutes(cells[:cut])
    optional = _minutes(cells[cut:])[-1] + _minutes(cells[:cut], notes=True)[-1]
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
