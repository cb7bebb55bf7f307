"""The course teaches as it says: honest times, quizzes that ask for a prediction (answers spread over the
options, none given away just above, none asked twice)."""
from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from course_utils.exercises import get_exercise
from course_utils.quizzes import get_quiz, quiz_ids
from nbtools import load, notebook_paths, source

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("lesson_times", ROOT / "scripts" / "lesson_times.py")
lesson_times = sys.modules["lesson_times"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lesson_times)

QUIZ_CALL = re.compile(r"""cu\.quiz\(\s*["']([\w.]+)["']""")


def _words(text: str) -> str:
    """Lower-case words only, one space apart (Markdown, backticks and punctuation dropped)."""
    return " ".join(re.findall(r"[a-z0-9_.]+", text.lower().replace("`", "")))


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_a_lesson_fits_the_time_it_states(path):
    e = lesson_times.estimate(path)
    assert e.stated, f"{path.name} states no '**Time:** about N minutes'"
    assert 1 / lesson_times.TOLERANCE <= e.ratio <= lesson_times.TOLERANCE, (
        f"{path.name}: estimated {e.minutes:.0f} min on its core path, states {e.stated}")


def test_the_readme_states_each_lessons_time():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for e in lesson_times.estimates():
        row = next(line for line in readme.splitlines() if line.startswith(f"| {e.lesson} |"))
        assert f"| {e.stated} min |" in row, row[:120]


def test_the_instructors_guide_states_each_lessons_time():
    """Each lesson's section of docs/instructor.md ("## Lesson NN ...", "## Appendix 08 ...") states the time its
    notebook states."""
    guide = (ROOT / "docs" / "instructor.md").read_text(encoding="utf-8")
    for e in lesson_times.estimates():
        section = re.search(rf"^## (?:Lesson|Appendix) {e.lesson} .*?(?=^## |\Z)", guide, re.MULTILINE | re.DOTALL)
        assert section, f"docs/instructor.md has no section for lesson {e.lesson}"
        stated = re.search(r"\*\*Time:\*\*\s+about\s+(\d+)\s+minutes", section.group(0))
        assert stated, f"docs/instructor.md, lesson {e.lesson}: no '**Time:** about N minutes'"
        assert int(stated.group(1)) == e.stated, (
            f"docs/instructor.md, lesson {e.lesson}: about {stated.group(1)} minutes; the notebook states {e.stated}")


def test_the_estimate_counts_what_it_says(tmp_path):
    """The model of scripts/lesson_times.py, cell by cell: words at 120 a minute (a collapsed note's at 30 %), a code
    cell 20 s + 6 s a line (at most 3 min; 30 s more when it raises on purpose), a quiz 1.5 min, an exercise 4 min +
    1 a line of its reference solution (or its metadata's minutes), the setup cell 2 min."""
    nb = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "**Time:** about 10 minutes. " + "word " * 236
         + "<details><summary>More</summary>\n\n" + "note " * 98 + "</details>"},
        {"cell_type": "code", "metadata": {}, "source": "import course_utils as cu\ndevice = cu.setup('09')"},
        {"cell_type": "code", "metadata": {}, "source": "x = 1\n# a comment\n\ny = x + 1"},
        {"cell_type": "code", "metadata": {"tags": ["raises-exception"]}, "source": "x + 'a'"},
        {"cell_type": "code", "metadata": {}, "source": "\n".join(f"z{i} = {i}" for i in range(40))},
        {"cell_type": "code", "metadata": {}, "source": 'cu.quiz("01.default_device")'},
        {"cell_type": "code", "metadata": {"course": {"exercise": "01.nbytes"}}, "source": "def f(): ..."},
        {"cell_type": "code", "metadata": {}, "source": 'cu.exercise("01.nbytes")'},
        {"cell_type": "code", "metadata": {"course": {"exercise": "07.capstone", "minutes": 25}}, "source": "..."},
        {"cell_type": "markdown", "metadata": {}, "source": "## Going further: more\n" + "word " * 116},
        {"cell_type": "code", "metadata": {}, "source": "y = 2"}]}
    path = tmp_path / "09_x.ipynb"
    path.write_text(__import__("json").dumps(nb), encoding="utf-8")
    e = lesson_times.estimate(path)
    assert (e.words, e.demos, e.quizzes, e.exercises, e.stated) == (240, 3, 1, 2, 10)
    nbytes = 4 + lesson_times.code_lines(get_exercise("01.nbytes").solution_source)
    cells = (20 + 12) / 60 + (20 + 6 + 30) / 60 + 3   # two lines; one line that raises; 40 lines, at most 3 min
    assert e.minutes == pytest.approx(240 / 120 + 0.3 * 100 / 120 + 2 + cells + 1.5 + nbytes + 25)
    assert e.optional_minutes == pytest.approx(0.7 * 100 / 120 + 120 / 120 + 26 / 60)   # a heading of 4 words


def _quiz_cells() -> list[tuple[Path, int, str]]:
    found = []
    for path in notebook_paths():
        for index, cell in enumerate(load(path)["cells"]):
            if cell["cell_type"] == "code":
                found += [(path, index, quiz_id) for quiz_id in QUIZ_CALL.findall(source(cell))]
    return found


def test_every_quiz_is_asked_once():
    asked = Counter(quiz_id for _, _, quiz_id in _quiz_cells())
    assert sorted(asked) == quiz_ids() and set(asked.values()) == {1}, asked
    questions = Counter(_words(get_quiz(q).question) for q in quiz_ids())
    assert max(questions.values()) == 1, [q for q, n in questions.items() if n > 1]


def test_no_letter_is_the_answer_to_most_quizzes():
    letters = Counter("abcdefgh"[get_quiz(q).answer] for q in quiz_ids())
    assert max(letters.values()) <= 0.4 * len(quiz_ids()), letters


@pytest.mark.parametrize("path, index, quiz_id", _quiz_cells(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_quiz_is_not_answered_just_above_it(path, index, quiz_id):
    """The Markdown between the previous code cell and the quiz does not contain the right option."""
    cells = load(path)["cells"]
    above = []
    for cell in reversed(cells[:index]):
        if cell["cell_type"] != "markdown":
            break
        above.append(_words(source(cell)))
    quiz = get_quiz(quiz_id)
    right = _words(quiz.options[quiz.answer])
    if len(right.split()) >= 3:   # a short option ("2", "cpu") may stand above for other reasons
        assert right not in " ".join(above), f"{quiz_id}: the answer {right!r} stands above the quiz"
