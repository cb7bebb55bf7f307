"""The plain learner API (course_utils.learner): quizzes, hints, solutions and checks without widgets."""
from __future__ import annotations

import course_utils as cu
from course_utils import learner, store


def test_the_package_offers_the_plain_api():
    assert (cu.answer, cu.hint, cu.solution) == (learner.answer, learner.hint, learner.solution)


def test_answer_hint_solution_and_check_record_progress(progress_file):
    out = learner.answer("01.default_device", "a")
    assert out.correct and store.load(progress_file)["quizzes"]["01.default_device"]["correct"]
    assert "Hint 1/" in learner.hint("01.nbytes", 1) and "Hint 3/3" in learner.hint("01.nbytes", 99)
    assert "Have a go first" in learner.solution("01.nbytes")
    assert "def nbytes" in learner.solution("01.nbytes", force=True)
    result = learner.run_check("01.nbytes", lambda t: t.numel())
    assert result.status == "failed"
    assert "def nbytes" in learner.solution("01.nbytes")        # after an attempt it is shown


def test_a_bad_choice_is_not_recorded(progress_file):
    out = learner.answer("01.default_device", "z")
    assert out.chosen is None and "not one of the options" in out.text()
    assert "01.default_device" not in store.load(progress_file)["quizzes"]


def test_run_check_looks_the_answer_up_by_name(progress_file):
    result = learner.run_check("01.nbytes", namespace={"nbytes": lambda t: t.numel() * t.element_size()})
    assert result.passed
    missing = learner.run_check("01.nbytes", namespace={"other": 1})
    assert missing.status == "not attempted" and "not defined yet" in missing.feedback
    assert store.load(progress_file)["exercises"]["01.nbytes"]["passed"]


def test_without_ipython_the_callers_globals_are_the_namespace():
    assert learner.user_namespace() is globals()
