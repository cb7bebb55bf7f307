"""The result of checking an exercise: one object, a plain text view and a notebook (HTML) view."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from .text import card, code_html

#: The MIME type of the record of quiz predictions that ``cu.progress()`` adds to its output
#: (:class:`course_utils.store.Summary`): a notebook handed in with that output carries the learner's predictions,
#: which ``python -m course_utils grade --predictions`` reads (:mod:`course_utils.classroom.writing.predictions`).
PREDICTIONS_MIME = "application/vnd.course-utils.predictions+json"

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted"
#: The students' package of an assessed class: the public checks found nothing wrong; the marks come at grading.
CHECKED = "checked"

_STYLE = {  # (colour of the edge, icon) - readable on light and dark themes
    PASSED: ("#2e9d4f", "✔"),
    FAILED: ("#d9480f", "✘"),
    NOT_ATTEMPTED: ("#868e96", "○"),
    CHECKED: ("#1971c2", "◑"),
}


@dataclass
class Result:
    """Outcome of :func:`course_utils.check`."""

    exercise_id: str   # "01.nbytes"
    title: str
    status: str        # PASSED, FAILED, NOT_ATTEMPTED, or CHECKED (only public checks ran: no points until grading)
    points: int
    max_points: int
    feedback: str      # in plain words
    printed: str = field(default="", repr=False)   # what the learner's code printed while checked (shortened)
    code: str = ""     # the misconception the feedback names ("" when passed)

    @property
    def passed(self) -> bool:
        """True when every test case passed."""
        return self.status == PASSED

    @property
    def attempted(self) -> bool:
        """False while the answer is still the unsolved stub."""
        return self.status != NOT_ATTEMPTED

    def marks(self) -> str:
        """``"2/3 points"``; where only public checks ran, the points the grading will give at most."""
        if self.status == CHECKED:
            return f"marked when your teacher grades: {self.max_points} points"
        return f"{self.points}/{self.max_points} points"

    def text(self) -> str:
        """Plain text view, for terminals, CI logs and grading scripts."""
        icon = _STYLE[self.status][1]
        lines = [f"{icon} {self.exercise_id} {self.title}: {self.status} ({self.marks()})", self.feedback]
        if self.printed:
            lines.append(f"(your code printed: {self.printed})")
        return "\n".join(lines)

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        colour, icon = _STYLE[self.status]
        feedback = code_html(self.feedback)   # `inline code` shown as code, as quizzes show it
        printed = (f"<div style='opacity:.75;margin-top:4px'>Your code printed: "
                   f"<code>{html.escape(self.printed)}</code></div>") if self.printed else ""
        # the status in words, in the theme's text colour (4.5:1 on light and dark); colour only on icon and edge
        heading = (f"<b><span style='color:{colour}'>{icon}</span> {html.escape(self.exercise_id)} "
                   f"{html.escape(self.title)}: {self.status}</b> "
                   f"<span style='opacity:.75'>({html.escape(self.marks())})</span>")
        return card(f"{heading}<div style='margin-top:4px'>{feedback}</div>{printed}", colour,
                    f"course-result course-{self.status.replace(' ', '-')}")
