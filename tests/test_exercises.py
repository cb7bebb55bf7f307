"""Properties every registered exercise's check must have, whatever the learner passes."""
from __future__ import annotations

import inspect
import sys

import pytest
import torch

import course_utils as cu
from course_utils import exercises
from course_utils.exercises import _restore_default_device, exercise_ids, get_exercise

IDS = exercise_ids()


def as_kind(ex, body):
    """Wrap ``body(*args)`` as a function, or as a class whose constructor runs it."""
    if inspect.isclass(ex.reference):
        class Answer(torch.nn.Module):
            def __init__(self, *args, **kwargs):
                super().__init__()
                body(*args, **kwargs)
        return Answer
    return lambda *args, **kwargs: body(*args, **kwargs)


class Hostile:
    def __eq__(self, other):
        raise RuntimeError("hostile __eq__")

    def __bool__(self):
        raise RuntimeError("hostile __bool__")

    def __repr__(self):
        raise RuntimeError("hostile __repr__")

    def __getattr__(self, name):
        raise RuntimeError("hostile __getattr__")

    __hash__ = object.__hash__


def stub(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize("ex_id", IDS)
class TestEveryCheck:
    def test_reference_passes(self, ex_id):
        result = cu.check(ex_id, get_exercise(ex_id).reference)
        assert result.passed, result.text()
        assert result.points == result.max_points > 0

    def test_stub_is_not_attempted(self, ex_id):
        result = cu.check(ex_id, as_kind(get_exercise(ex_id), stub))
        assert result.status == "not attempted" and result.points == 0
        assert "NotImplementedError" in result.feedback

    @pytest.mark.parametrize("answer", [None, ...])
    def test_blank_is_not_attempted(self, ex_id, answer):
        assert cu.check(ex_id, answer).status == "not attempted"

    @pytest.mark.parametrize("answer", [42, "nbytes", [1, 2], torch.ones(2)])
    def test_wrong_type_fails_kindly(self, ex_id, answer):
        result = cu.check(ex_id, answer)
        assert result.status == "failed" and "Expected" in result.feedback

    def test_exception_in_learner_code_is_reported(self, ex_id):
        def boom(*args, **kwargs):
            raise ValueError("my own bug")
        result = cu.check(ex_id, as_kind(get_exercise(ex_id), boom))
        assert result.status == "failed"
        assert "ValueError" in result.feedback and "my own bug" in result.feedback
        assert "Traceback" not in result.feedback

    def test_sys_exit_is_reported(self, ex_id):
        result = cu.check(ex_id, as_kind(get_exercise(ex_id), lambda *a, **k: sys.exit(1)))
        assert result.status == "failed" and "sys.exit" in result.feedback

    def test_hostile_return_value(self, ex_id):
        ex = get_exercise(ex_id)
        answer = (lambda *a, **k: Hostile()) if not inspect.isclass(ex.reference) else Hostile
        result = cu.check(ex_id, answer)
        assert result.status == "failed" and result.feedback

    def test_printing_is_captured_not_shown(self, ex_id, capsys):
        ex = get_exercise(ex_id)
        if inspect.isclass(ex.reference):
            class noisy(ex.reference):
                def __init__(self, *args, **kwargs):
                    print("debugging!")
                    super().__init__(*args, **kwargs)
        else:
            def noisy(*args, **kwargs):
                print("debugging!")
                return ex.reference(*args, **kwargs)
        result = cu.check(ex_id, noisy)
        assert result.passed and "debugging!" in result.printed
        assert "debugging!" not in capsys.readouterr().out

    def test_endless_loop_is_stopped(self, ex_id, monkeypatch):
        monkeypatch.setattr(exercises, "TIME_LIMIT", 0.5)

        def forever(*args, **kwargs):
            while True:
                pass
        result = cu.check(ex_id, as_kind(get_exercise(ex_id), forever))
        assert result.status == "failed" and "stopped" in result.feedback

    def test_has_hints_and_a_solution_that_defines_the_name(self, ex_id):
        ex = get_exercise(ex_id)
        assert len(ex.hints) >= 2
        assert f"{'class' if inspect.isclass(ex.reference) else 'def'} {ex.name}" in ex.solution_source


def test_unknown_id_lists_known_ones():
    with pytest.raises(KeyError) as info:
        cu.check("99.nope", lambda: None)
    assert "99.nope" in str(info.value) and IDS[0] in str(info.value)


def test_a_check_leaves_no_default_device_mode_behind():
    """Restoring the default device with "cpu" would keep a function mode that slows every torch call."""
    from torch.overrides import _get_current_function_mode_stack
    before = len(_get_current_function_mode_stack())
    cu.check("02.pick_device", get_exercise("02.pick_device").reference)
    cu.check("01.nbytes", lambda t: torch.set_default_device("meta"))
    assert len(_get_current_function_mode_stack()) == before
    assert torch.get_default_device() == torch.device("cpu")


def test_a_check_puts_back_a_default_device_the_learner_had_set():
    torch.set_default_device("meta")
    try:
        cu.check("01.nbytes", lambda t: torch.set_default_device(None))
        assert torch.get_default_device().type == "meta"
    finally:
        _restore_default_device(None)
