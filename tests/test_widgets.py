"""Quiz and exercise widgets: buttons work, fallbacks read well, progress is recorded."""
from __future__ import annotations

import html

import ipywidgets
import pytest
import torch

from course_utils import learner, store, widgets


@pytest.fixture
def with_widgets(monkeypatch, progress_file):
    """Pretend we are in a kernel with a widget frontend; give the notebook a namespace."""
    namespace: dict = {}
    monkeypatch.setattr(widgets, "_widgets", lambda: ipywidgets)
    monkeypatch.setattr(learner, "user_namespace", lambda: namespace)
    return namespace


def children(box):
    out = []
    for child in box.children:
        out.append(child)
        if hasattr(child, "children"):
            out += children(child)
    return out


def find(box, kind, description=None):
    return next(w for w in children(box) if isinstance(w, kind)
                and (description is None or w.description == description))


def test_quiz_commit_reveals_only_after_commit(with_widgets, progress_file):
    shown = widgets.quiz("01.default_device")
    box = shown.widget
    radio, button = find(box, ipywidgets.RadioButtons), find(box, ipywidgets.Button)
    feedback = [w for w in children(box) if isinstance(w, ipywidgets.HTML)][-1]
    assert radio.value is None and feedback.value == ""            # nothing revealed yet
    button.click()
    assert "Pick an option first" in feedback.value and not radio.disabled
    radio.index = 1                                                 # a wrong prediction
    button.click()
    assert "Not quite" in feedback.value and "default device" in feedback.value
    assert radio.disabled and button.disabled
    assert store.load(progress_file)["quizzes"]["01.default_device"]["first_correct"] is False


def test_quiz_right_answer(with_widgets, progress_file):
    box = widgets.quiz("01.default_device").widget
    find(box, ipywidgets.RadioButtons).index = 0
    find(box, ipywidgets.Button).click()
    assert "Correct!" in [w for w in children(box) if isinstance(w, ipywidgets.HTML)][-1].value


def test_display_bundle_has_widget_and_fallbacks(with_widgets):
    shown = widgets.quiz("01.default_device")
    bundle = shown._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == shown.widget.model_id
    assert "course_utils.answer('01.default_device'" in bundle["text/plain"]
    assert "<ol type='a'>" in bundle["text/html"]


def test_check_button_rereads_the_learners_definition(with_widgets, progress_file):
    def nbytes(t):
        raise NotImplementedError
    with_widgets["nbytes"] = nbytes
    shown = widgets.exercise("01.nbytes")
    status = children(shown.widget)[0]
    assert "not attempted" in status.value and "Checked when this cell ran" in status.value
    with_widgets["nbytes"] = lambda t: t.numel() * t.element_size()   # the learner fixes the cell
    find(shown.widget, ipywidgets.Button, "Check").click()
    assert "passed" in status.value and "Checked with the Check button once" in status.value   # the first press
    entry = store.load(progress_file)["exercises"]["01.nbytes"]
    assert entry["passed"] and entry["attempts"] == 1


def test_solution_needs_an_attempt_and_hints_come_one_by_one(with_widgets):
    with_widgets["blank_like"] = lambda t: torch.zeros(t.shape)        # a wrong attempt
    shown = widgets.exercise("01.blank_like")
    extra = children(shown.widget)[-1]
    find(shown.widget, ipywidgets.Button, "Hint").click()
    assert extra.value.count("<li>") == 1
    find(shown.widget, ipywidgets.Button, "Hint").click()
    assert extra.value.count("<li>") == 2
    find(shown.widget, ipywidgets.Button, "Show solution").click()
    assert "zeros_like" in extra.value


def test_solution_is_withheld_before_an_attempt(with_widgets):
    def blank_like(t):
        raise NotImplementedError
    with_widgets["blank_like"] = blank_like
    shown = widgets.exercise("01.blank_like")
    find(shown.widget, ipywidgets.Button, "Show solution").click()
    assert "Have a go first" in children(shown.widget)[-1].value


def test_missing_definition_says_run_the_cell(with_widgets):
    shown = widgets.exercise("01.nbytes")
    assert "not defined yet" in repr(shown)


def test_plain_python_fallbacks(monkeypatch, progress_file):
    monkeypatch.setattr(widgets, "_widgets", lambda: None)
    shown = widgets.quiz("01.default_device")
    assert shown.widget is None and "course_utils.answer('01.default_device'" in repr(shown)
    shown = widgets.exercise("01.nbytes", lambda t: t.numel())
    assert shown.widget is None and "failed" in repr(shown) and "course_utils.hint('01.nbytes', 1)" in repr(shown)


def test_exercise_in_plain_python_finds_the_callers_function(monkeypatch, progress_file):
    monkeypatch.setattr(widgets, "_widgets", lambda: None)
    globals()["nbytes"] = lambda t: t.numel() * t.element_size()
    try:
        assert "passed" in repr(widgets.exercise("01.nbytes"))
    finally:
        del globals()["nbytes"]


def test_each_radio_button_is_named_by_its_whole_option(with_widgets):
    """A screen reader reads a radio button's label: it is the option itself (letter and text), with no raw
    backtick; the question shows inline code as code."""
    from course_utils.quizzes import get_quiz, quiz_ids
    quiz_id = next(q for q in quiz_ids() if any("`" in o for o in get_quiz(q).options) and "`" in get_quiz(q).question)
    box = widgets.quiz(quiz_id).widget
    question = [w for w in children(box) if isinstance(w, ipywidgets.HTML)][0]
    radio = find(box, ipywidgets.RadioButtons)
    options = get_quiz(quiz_id).options
    assert list(radio.options) == [f"{letter}) {o.replace('`', '')}" for letter, o in zip("abcdefgh", options)]
    code = get_quiz(quiz_id).question.split("`")[1]
    assert f"<code>{html.escape(code)}</code>" in question.value and "`" not in question.value


def test_what_a_button_shows_is_announced_and_what_a_run_shows_is_not(with_widgets, progress_file):
    """Check, Commit, Hint and Show solution put their outcome in an ARIA alert (read out by a screen reader
    when it appears); the result printed when the cell runs is not one, so Run All announces nothing."""
    def nbytes(t):
        raise NotImplementedError
    with_widgets["nbytes"] = nbytes
    shown = widgets.exercise("01.nbytes")
    status, extra = children(shown.widget)[0], children(shown.widget)[-1]
    assert "role='alert'" not in status.value
    find(shown.widget, ipywidgets.Button, "Show solution").click()
    assert "role='alert'" in extra.value and "Have a go first" in extra.value
    with_widgets["nbytes"] = lambda t: t.numel() * t.element_size()
    find(shown.widget, ipywidgets.Button, "Check").click()
    assert status.value.startswith("<div role='alert'") and "passed" in status.value
    find(shown.widget, ipywidgets.Button, "Hint").click()
    assert extra.value.startswith("<div role='alert'") and "<li>" in extra.value
    find(shown.widget, ipywidgets.Button, "Show solution").click()
    announced = extra.value.split("<pre>")[0]
    assert "role='alert'" in announced and "Reference solution" in announced   # the code itself is not read out

    box = widgets.quiz("01.default_device").widget
    feedback = [w for w in children(box) if isinstance(w, ipywidgets.HTML)][-1]
    find(box, ipywidgets.Button).click()
    assert feedback.value.startswith("<div role='alert'") and "Pick an option first" in feedback.value
    find(box, ipywidgets.RadioButtons).index = 0
    find(box, ipywidgets.Button).click()
    assert feedback.value.startswith("<div role='alert'") and "Correct!" in feedback.value


def test_quiz_markdown_is_rendered_in_html_and_kept_readable_in_plain_text(with_widgets, progress_file):
    """Backticks and asterisks in a quiz's question and feedback show as code and emphasis in the widget, never as
    raw marks; `2**30` (a power, not emphasis) and the plain text keep theirs."""
    from course_utils.quizzes import get_quiz, grade_choice, rich_html
    assert rich_html("*any* `a * b` **and device** 10**9 and 2**30, a * b") == (
        "<em>any</em> <code>a * b</code> <strong>and device</strong> 10**9 and 2**30, a * b")
    box = widgets.quiz("02.which_check").widget
    question = [w for w in children(box) if isinstance(w, ipywidgets.HTML)][0]
    assert "<em>any</em>" in question.value and "*any*" not in question.value
    quiz = get_quiz("01.zeros_like_device")
    box = widgets.quiz(quiz.id).widget
    find(box, ipywidgets.RadioButtons).index = quiz.answer
    find(box, ipywidgets.Button).click()
    feedback = [w for w in children(box) if isinstance(w, ipywidgets.HTML)][-1].value
    assert "<strong>and device</strong>" in feedback and "<code>*_like</code>" in feedback and "**" not in feedback
    assert "dtype **and device**" in grade_choice(quiz, quiz.answer).text()   # plain text: the marks, readable
    page = widgets.quiz("06.to_no_assign")._repr_mimebundle_()["text/html"]   # where no widget shows (the website)
    assert "`" not in page and "<code>batches</code>" in page and page.count("<li>") == 4
