"""Predict-then-reveal quizzes: the data and the plain-Python way to answer them.

A lesson's quizzes are data, the ``"quizzes"`` of ``course_utils/data/lessons/NN.json`` (the students' package of an
assessed class ships them too), registered by :func:`register_lesson` when :mod:`course_utils.lessons` is imported. The
registry never imports a lesson: every read of it loads the lessons first (:func:`course_utils.loading.load_lessons`).
"""
from __future__ import annotations

import html
import re
import string
from dataclasses import dataclass
from typing import Any

from .exceptions import UnknownId
from .grading import safe_repr
from .loading import lesson_data, load_lessons
from .text import card, code_html


@dataclass(frozen=True)
class Quiz:
    """A prediction question: the learner commits to an option before the answer is revealed."""

    id: str                   # "<lesson>.<name>", e.g. "01.default_device"
    question: str             # plain text (`code` in backticks is fine)
    options: tuple[str, ...]
    answer: int               # the index of the right option
    explanation: str          # shown only after the learner commits

    @property
    def lesson(self) -> str:
        return self.id.split(".", 1)[0]

    def text(self) -> str:
        """The question as plain text, with lettered options and how to answer without widgets."""
        lines = [f"Predict ({self.id}): {self.question}"]
        lines += [f"  {letter}) {option}" for letter, option in zip(string.ascii_lowercase, self.options)]
        lines.append(f"No widgets here? Answer with course_utils.answer({self.id!r}, 'a').")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The question as HTML (inline code and emphasis rendered), for pages without widgets (the website)."""
        options = "".join(f"<li>{rich_html(option)}</li>" for option in self.options)
        return (f"<div class='course-quiz'><p><b>Predict ({self.id}):</b> {rich_html(self.question)}</p>"
                f"<ol type='a'>{options}</ol><p><small>No widgets here? Answer with "
                f"<code>course_utils.answer({html.escape(repr(self.id))}, 'a')</code>.</small></p></div>")


@dataclass(frozen=True)
class Outcome:
    """What a committed prediction earned: right or wrong, and the explanation."""

    quiz: Quiz
    chosen: int | None
    message: str = ""

    @property
    def correct(self) -> bool:
        return self.chosen == self.quiz.answer

    def text(self) -> str:
        if self.chosen is None:
            return self.message
        right = self.quiz.options[self.quiz.answer]
        verdict = ("Correct!" if self.correct else
                   f"Not quite: you predicted “{self.quiz.options[self.chosen]}”. The answer is “{right}”.")
        return f"{verdict}\n{self.quiz.explanation}"

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        if self.chosen is None:
            return f"<div>{html.escape(self.message)}</div>"
        colour = "#2e9d4f" if self.correct else "#d9480f"
        verdict, _, explanation = self.text().partition("\n")
        return card(f"<b>{rich_html(verdict)}</b>"            # in words; the card's edge repeats it in colour
                    f"<div class='course-explanation' style='margin-top:4px'>{rich_html(explanation)}</div>",
                    colour, "course-quiz-outcome")


#: Code (kept as it is), or *emphasis* / **strong**: next to a word, not inside one (`2**30` stays as it is)
_EMPHASIS = re.compile(r"(<code>.*?</code>)|(?<![\w*])(\*\*?)(?=[^\s*])([^<]+?)(?<=[^\s*])\2(?![\w*])")


def rich_html(text: str) -> str:
    """A quiz's Markdown as HTML: :func:`~course_utils.text.code_html` (`backticks` as code), and *one* or **two**
    asterisks outside code as emphasis. The plain text keeps the marks, which read as they are."""
    return _EMPHASIS.sub(lambda m: m[1] or "<{0}>{1}</{0}>".format("strong" if len(m[2]) == 2 else "em", m[3]),
                         code_html(text))


_QUIZZES: dict[str, Quiz] = {}


def add_quiz(quiz_id: str, question: str, options: list[str] | tuple[str, ...], answer: int,
             explanation: str) -> Quiz:
    """Register a quiz."""
    if quiz_id in _QUIZZES:
        raise ValueError(f"quiz {quiz_id!r} is registered twice")
    if not 0 <= answer < len(options):
        raise ValueError(f"quiz {quiz_id!r}: answer index {answer} out of range")
    quiz = _QUIZZES[quiz_id] = Quiz(quiz_id, question, tuple(options), answer, explanation)
    return quiz


def register_lesson(number: str) -> None:
    """Register lesson ``number``'s quizzes from its data file, in the file's order (:mod:`course_utils.lessons`
    does, once)."""
    for q in lesson_data(number)["quizzes"]:
        if not q["id"].startswith(f"{number}."):
            raise ValueError(f"data/lessons/{number}.json holds quiz {q['id']!r} of another lesson")
        add_quiz(q["id"], q["question"], q["options"], q["answer"], q["explanation"])


def quiz_ids() -> list[str]:
    """All registered quiz ids."""
    load_lessons()
    return sorted(_QUIZZES)


def get_quiz(quiz_id: str) -> Quiz:
    """Look up a quiz; an unknown id raises :class:`~course_utils.exceptions.UnknownId` (a ``KeyError``) listing the
    known ones."""
    load_lessons()
    try:
        return _QUIZZES[quiz_id]
    except (KeyError, TypeError):
        raise UnknownId(f"Unknown quiz id {quiz_id!r}. Known quizzes: {', '.join(sorted(_QUIZZES))}") from None


def grade_choice(quiz: Quiz, choice: Any) -> Outcome:
    """Grade a choice given as a letter (``"b"``), a 0-based index or the option's text."""
    index = _parse_choice(quiz, choice)
    if index is None:
        letters = ", ".join(f"'{c}'" for c in string.ascii_lowercase[: len(quiz.options)])
        return Outcome(quiz, None, f"{safe_repr(choice)} is not one of the options: use {letters}.")
    return Outcome(quiz, index)


def _parse_choice(quiz: Quiz, choice: Any) -> int | None:
    n = len(quiz.options)
    if isinstance(choice, bool):
        return None
    if isinstance(choice, int):
        return choice if 0 <= choice < n else None
    if isinstance(choice, str):
        text = choice.strip()
        if len(text) == 1 and text.lower() in string.ascii_lowercase[:n]:
            return string.ascii_lowercase.index(text.lower())
        if text in quiz.options:
            return quiz.options.index(text)
    return None
