"""Notebook front-ends for quizzes and exercises, built from core ipywidgets (7.7+ and 8.x).

Each displayed object carries a text and HTML fallback, so a frontend without widgets
(GitHub, nbviewer, a terminal) still shows the question or the result and says what to do.
"""
from __future__ import annotations

import html
import inspect
import string
from typing import Any

from . import store
from .exercises import check, get_exercise
from .quizzes import Outcome, code_html, get_quiz, grade_choice
from .results import NOT_ATTEMPTED, Result

_MISSING = object()


def answer(quiz_id: str, choice: Any) -> Outcome:
    """Commit a prediction without widgets: ``answer("01.default_device", "b")``.

    Args:
        quiz_id: the quiz's id, shown with the question.
        choice: a letter (``"a"``), a 0-based index, or the option's text.

    Returns:
        The :class:`~course_utils.quizzes.Outcome`: right or wrong, and the explanation.
    """
    outcome = grade_choice(get_quiz(quiz_id), choice)
    if outcome.chosen is not None:
        store.record_quiz(quiz_id, outcome.correct, outcome.chosen)
    return outcome


def hint(exercise_id: str, number: int = 1) -> str:
    """Hint ``number`` (1 = gentlest) for an exercise."""
    hints = get_exercise(exercise_id).hints
    number = max(1, min(number, len(hints)))
    return f"Hint {number}/{len(hints)}: {hints[number - 1]}"


def solution(exercise_id: str, force: bool = False) -> str:
    """The reference solution, once you have made an attempt (or with ``force=True``)."""
    ex = get_exercise(exercise_id)
    attempts = store.load()["exercises"].get(exercise_id, {}).get("attempts", 0)
    if not (attempts or force):
        return (f"Have a go first: write `{ex.name}`, check it, and read the hints "
                f"(course_utils.hint({exercise_id!r}, 1)). Then the solution is yours.")
    return ex.solution_source


def run_check(exercise_id: str, answer: Any = _MISSING, namespace: dict | None = None) -> Result:
    """Check an exercise and record the outcome in the learner's progress.

    Without ``answer``, the function or class named by the exercise is looked up in the
    notebook (or the given ``namespace``) at the moment of checking.
    """
    ex = get_exercise(exercise_id)
    if answer is _MISSING:
        answer = (namespace or _user_namespace()).get(ex.name, _MISSING)
    if answer is _MISSING:
        result = Result(ex.id, ex.title, NOT_ATTEMPTED, 0, ex.points,
                        f"`{ex.name}` is not defined yet: run the answer cell above first.")
    else:
        result = check(exercise_id, answer)
    store.record_result(result.exercise_id, result.status, result.points, result.max_points)
    return result


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
    text = q.text()
    fallback = f"<pre>{html.escape(text)}</pre>"
    w = _widgets()
    if w is None:
        return _Display(None, text, fallback)
    letters = string.ascii_lowercase
    # Options are written out in HTML (inline code shown as code); the radio buttons, which can only
    # show plain text, carry their letters.
    listed = "".join(f"<div style='margin: 2px 0 2px 1em'><b>{letters[i]})</b> {code_html(o)}</div>"
                     for i, o in enumerate(q.options))
    question = w.HTML(value=f"<b>🤔 Predict:</b> {code_html(q.question)}{listed}")
    choices = w.RadioButtons(options=[f"{letters[i]})" for i in range(len(q.options))], value=None,
                             description="Your answer:", style={"description_width": "initial"},
                             layout=w.Layout(width="auto"))
    commit = w.Button(description="Commit my prediction", button_style="primary",
                      layout=w.Layout(width="auto"))
    feedback = w.HTML(value="")

    def on_commit(_: Any) -> None:
        if choices.index is None:
            feedback.value = "<i>Pick an option first, then commit.</i>"
            return
        outcome = answer(quiz_id, choices.index)
        choices.disabled = commit.disabled = True
        feedback.value = outcome._repr_html_()

    commit.on_click(_guarded(on_commit, feedback))
    box = w.VBox([question, choices, commit, feedback])
    box.add_class("course-quiz")
    return _Display(box, text, fallback)


def exercise(exercise_id: str, answer: Any = _MISSING) -> _Display:
    """Check an exercise now and show the result with Check, Hint and Solution buttons.

    The Check button re-reads the learner's current definition, so fixing the answer cell,
    re-running it and pressing Check checks the new code.
    """
    ex = get_exercise(exercise_id)
    namespace = _user_namespace()
    result = run_check(exercise_id, answer, namespace)
    text = result.text() + (f"\nNo buttons? Re-run this cell to check again; "
                            f"course_utils.hint({exercise_id!r}, 1) gives a hint.")
    w = _widgets()
    if w is None:
        return _Display(None, text, result._repr_html_())
    checks = {"count": 1}

    def status_html(res: Result) -> str:
        return (res._repr_html_() + f"<small class='course-check-count' style='opacity:.6'>"
                f"check #{checks['count']}</small>")

    status = w.HTML(value=status_html(result))
    check_button = w.Button(description="Check", button_style="primary", icon="check")
    hint_button = w.Button(description="Hint", icon="lightbulb-o")
    solution_button = w.Button(description="Show solution", icon="eye")
    extra = w.HTML(value="")
    shown = {"hints": 0, "attempted": result.attempted}

    def on_check(_: Any) -> None:
        new = run_check(exercise_id, answer, namespace)
        shown["attempted"] = shown["attempted"] or new.attempted
        checks["count"] += 1
        status.value = status_html(new)

    def on_hint(_: Any) -> None:
        shown["hints"] = min(shown["hints"] + 1, len(ex.hints))
        items = "".join(f"<li>{code_html(h)}</li>" for h in ex.hints[: shown["hints"]])
        extra.value = f"<ol class='course-hints'>{items}</ol>"

    def on_solution(_: Any) -> None:
        if not shown["attempted"]:
            extra.value = ("<i>Have a go first: write your answer, run its cell and press Check. "
                           "The hints help too.</i>")
            return
        extra.value = (f"<div class='course-solution'>Reference solution:"
                       f"<pre>{html.escape(ex.solution_source)}</pre></div>")

    check_button.on_click(_guarded(on_check, status))
    hint_button.on_click(_guarded(on_hint, extra))
    solution_button.on_click(_guarded(on_solution, extra))
    box = w.VBox([status, w.HBox([check_button, hint_button, solution_button]), extra])
    box.add_class("course-exercise")
    return _Display(box, text, result._repr_html_())


# --- helpers ---------------------------------------------------------------------------------

def _widgets() -> Any:
    """The ipywidgets module inside a Jupyter kernel; ``None`` in plain Python."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return None
    try:
        import ipywidgets
    except ImportError:
        return None
    return ipywidgets


def _user_namespace() -> dict:
    """The notebook's namespace, or the globals of the code that called into this module."""
    try:
        from IPython import get_ipython
        shell = get_ipython()
        if shell is not None:
            return shell.user_ns
    except ImportError:
        pass
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__", "").startswith("course_utils"):
        frame = frame.f_back
    return frame.f_globals if frame is not None else {}


def _guarded(callback: Any, out: Any) -> Any:
    """Report an unexpected error inside the widget instead of losing it in a log."""
    def run(button: Any) -> None:
        try:
            callback(button)
        except Exception as e:  # pragma: no cover - a safety net for the learner's view
            out.value = f"<b>Something went wrong:</b> {html.escape(f'{type(e).__name__}: {e}')}"
    return run

