"""Notebook front-ends for quizzes and exercises, built from core ipywidgets (7.7+ and 8.x).

The buttons call the plain learner API (:mod:`course_utils.learner`). Each displayed object carries a
text and HTML fallback, so a frontend without widgets (GitHub, nbviewer, a terminal) still shows the
question or the result and says what to do."""
from __future__ import annotations

import html
import string
from typing import Any

from . import learner, modes
from .exercises import get_exercise
from .quizzes import get_quiz, rich_html
from .results import Result

class _Display:
    """Shows a widget where widgets work, and ``text``/``html`` everywhere else."""

    def __init__(self, widget: Any, text: str, html_text: str):
        self.widget, self._text, self._html = widget, text, html_text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle: dict[str, Any] = {"text/plain": self._text, "text/html": self._html}
        if self.widget is not None:
            bundle["application/vnd.jupyter.widget-view+json"] = {
                "version_major": 2, "version_minor": 0, "model_id": self.widget.model_id}
        return bundle

    def __repr__(self) -> str:
        return self._text


def quiz(quiz_id: str) -> _Display:
    """Show a predict-then-reveal quiz: pick an option, commit, then see the explanation."""
    q = get_quiz(quiz_id)
    text, fallback = q.text(), q._repr_html_()
    w = _widgets()
    if w is None:
        return _Display(None, text, fallback)
    letters = string.ascii_lowercase
    # Each radio button carries its whole option, so that its accessible name is the answer itself (a
    # radio button shows plain text: inline code loses its backticks).
    question = w.HTML(value=f"<b>Predict:</b> {rich_html(q.question)}")
    choices = w.RadioButtons(options=[f"{letters[i]}) {o.replace('`', '')}" for i, o in enumerate(q.options)],
                             value=None, description="Your answer:", style={"description_width": "initial"},
                             layout=w.Layout(width="auto"))
    commit = w.Button(description="Commit my prediction", button_style="primary", layout=w.Layout(width="auto"))
    feedback = w.HTML(value="")

    def on_commit(_: Any) -> None:
        if choices.index is None:
            feedback.value = _announced("<i>Pick an option first, then commit.</i>")
            return
        outcome = learner.answer(quiz_id, choices.index)
        choices.disabled = commit.disabled = True
        feedback.value = _announced(outcome._repr_html_())

    commit.on_click(_guarded(on_commit, feedback))
    box = w.VBox([question, choices, commit, feedback])
    box.add_class("course-quiz")
    return _Display(box, text, fallback)


def exercise(exercise_id: str, answer: Any = learner.MISSING) -> _Display:
    """Check an exercise now and show the result with Check, Hint and Solution buttons (Check re-reads the learner's
    current definition: fixing the answer cell, re-running it and pressing Check checks the new code)."""
    ex = get_exercise(exercise_id)
    namespace = learner.user_namespace()
    result = learner.run_check(exercise_id, answer, namespace)
    text = result.text() + (f"\nNo buttons? Re-run this cell to check again; "
                            f"course_utils.hint({exercise_id!r}, 1) gives a hint.")
    w = _widgets()
    if w is None:
        return _Display(None, text, result._repr_html_())
    checks = {"count": 0}   # presses of Check (running this cell checks once more, and is said apart)

    def status_html(res: Result) -> str:
        pressed = checks["count"]
        said = ("Checked when this cell ran" if pressed == 0 else
                f"Checked with the Check button {'once' if pressed == 1 else f'{pressed} times'}")
        return (res._repr_html_() + f"<small class='course-check-count' style='opacity:.6'>"
                f"{said} (each Check runs your answer cell's current code)</small>")

    status = w.HTML(value=status_html(result))
    check_button = w.Button(description="Check", button_style="primary", icon="check")
    hint_button = w.Button(description="Hint", icon="lightbulb-o")
    solution_button = w.Button(description="Show solution", icon="eye")
    extra = w.HTML(value="")
    shown = {"hints": 0, "attempted": result.attempted}

    def on_check(_: Any) -> None:
        new = learner.run_check(exercise_id, answer, namespace)
        shown["attempted"] = shown["attempted"] or new.attempted
        checks["count"] += 1
        status.value = _announced(status_html(new))

    def on_hint(_: Any) -> None:
        fitting = learner.hints(exercise_id)   # the first answers the mistake the last check named, if it can
        shown["hints"] = min(shown["hints"] + 1, len(fitting))
        items = "".join(f"<li>{rich_html(h)}</li>" for h in fitting[: shown["hints"]])
        extra.value = _announced(f"<ol class='course-hints'>{items}</ol>")

    def on_solution(_: Any) -> None:
        if not shown["attempted"]:
            extra.value = _announced("<i>Have a go first: write your answer, run its cell and press Check. "
                                    "The hints help too.</i>")
            return
        # Only the heading is announced; the code is there to read at the learner's own pace.
        extra.value = (f"<div class='course-solution'>{_announced('Reference solution:')}"
                       f"<pre>{html.escape(ex.solution_source)}</pre></div>")

    check_button.on_click(_guarded(on_check, status))
    hint_button.on_click(_guarded(on_hint, extra))
    solution_button.on_click(_guarded(on_solution, extra))
    buttons = [check_button, hint_button] + ([] if modes.assessed() else [solution_button])   # assessed: none
    box = w.VBox([status, w.HBox(buttons), extra])
    box.add_class("course-exercise")
    return _Display(box, text, result._repr_html_())


# --- helpers ---------------------------------------------------------------------------------

def _announced(html_text: str) -> str:
    """``html_text`` in an ARIA alert, so that a screen reader reads it out when a button puts it on the page (an
    ipywidgets HTML view is replaced whole on each change, jupyter-widgets/ipywidgets#2650, and a new polite live
    region is not announced; an inserted alert is). Only what a button press shows is wrapped."""
    return f"<div role='alert' class='course-announce'>{html_text}</div>"


def _widgets() -> Any:
    """The ipywidgets module inside a Jupyter kernel; ``None`` in plain Python."""
    try:
        from IPython import get_ipython
        if not hasattr(get_ipython(), "kernel"):   # no shell, or one without a kernel (a terminal's IPython)
            return None
        import ipywidgets
    except ImportError:
        return None
    return ipywidgets


def _guarded(callback: Any, out: Any) -> Any:
    """Report an unexpected error inside the widget instead of losing it in a log."""
    def run(button: Any) -> None:
        try:
            callback(button)
        except Exception as e:  # pragma: no cover - a safety net for the learner's view
            out.value = _announced(f"<b>Something went wrong:</b> {html.escape(f'{type(e).__name__}: {e}')}")
    return run
