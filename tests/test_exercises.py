"""Properties every registered exercise's check must have, whatever the learner passes."""
from __future__ import annotations

import inspect
import sys

import pytest
import torch

import course_utils as cu
from course_utils import checking, exercises
from course_utils.checking import _restore_default_device
from course_utils.exercises import exercise_ids, get_exercise

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
        monkeypatch.setattr(checking, "TIME_LIMIT", 0.5)

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


# --- values are judged by their real type, and tensors as plain tensors ----------------------------

from hostile_values import AlwaysEqualInt, ClaimsToBe, EqualsAnything  # noqa: E402

from course_utils.grading import Wrong, expect_float, expect_int, expect_like, expect_tensor  # noqa: E402

#: The exercises whose answer is a function.
FUNCTIONS = [e for e in IDS if not inspect.isclass(get_exercise(e).reference)]
#: Exercises whose answer returns a tensor.
TENSOR_RESULTS = ["01.blank_like", "04.to_accelerator", "04.mask_future", "07.sum_batches"]


@pytest.mark.parametrize("ex_id", FUNCTIONS)
def test_a_value_that_claims_the_right_type_fails(ex_id):
    """The answer returns an object that claims (through ``__class__``) the type of the right result,
    answers every attribute as the right result would, and agrees with every comparison."""
    reference = get_exercise(ex_id).reference
    result = cu.check(ex_id, lambda *args: ClaimsToBe(reference(*args)))
    assert result.status == "failed", result.feedback


@pytest.mark.parametrize("ex_id", TENSOR_RESULTS)
def test_a_tensor_class_that_answers_equal_fails(ex_id):
    """Wrong values (sevens) in a tensor class of the learner's own whose ``torch.equal`` says yes."""
    reference = get_exercise(ex_id).reference
    result = cu.check(ex_id, lambda *args: torch.full_like(reference(*args), 7).as_subclass(EqualsAnything))
    assert result.status == "failed" and "subclass of torch.Tensor" in result.feedback, result.feedback


def test_dict_keys_are_judged_by_their_real_type():
    """03.to_device: the right values, under keys that claim to equal any key."""
    class Key:
        def __init__(self, key):
            self.key = key

        def __hash__(self):
            return hash(self.key)

        def __eq__(self, other):
            return True

    reference = get_exercise("03.to_device").reference

    def to_device(obj, device):
        moved = reference(obj, device)
        return {Key(k): v for k, v in moved.items()} if type(moved) is dict else moved

    result = cu.check("03.to_device", to_device)
    assert result.status == "failed" and "has the key" in result.feedback, result.feedback


@pytest.mark.parametrize("value, says", [
    (AlwaysEqualInt(12), "not a plain Python int"), (ClaimsToBe(12), "ClaimsToBe"), (True, "a bool"),
    (12.0, "the float"), (torch.tensor(12), "a tensor"), ("12", "as an int"), (None, "as an int"),
])
def test_expect_int_takes_exactly_an_int(value, says):
    with pytest.raises(Wrong, match=says):
        expect_int(value, "For n=3")
    assert type(expect_int(12, "For n=3")) is int


@pytest.mark.parametrize("value, says", [
    (ClaimsToBe(1.5), "ClaimsToBe"), (True, "bool"), (torch.tensor(1.5), "a tensor"), ("1.5", "str"),
])
def test_expect_float_takes_exactly_a_number(value, says):
    with pytest.raises(Wrong, match=says):
        expect_float(value, "For n=3")
    np = pytest.importorskip("numpy")
    assert [expect_float(v, "") for v in (1.5, 2, np.float32(0.5), np.int64(3))] == [1.5, 2.0, 0.5, 3.0]


def test_expect_int_says_when_only_the_type_is_wrong_and_takes_the_exercises_advice():
    with pytest.raises(Wrong, match="the right number, but as the float 12.0. Return a Python int"):
        expect_int(12.0, "For n=3", want=12)
    with pytest.raises(Wrong, match=r"you returned the float 11.0. Count it"):
        expect_int(11.0, "For n=3", want=12, advice={"float": "Count it."})
    with pytest.raises(Wrong, match=r"you returned a tensor \(int64 tensor of shape \(\) on cpu\). Return a plain"):
        expect_int(torch.tensor(12), "For n=3")


def test_expect_like_compares_device_shape_and_dtype_in_that_order():
    t = torch.ones(2, 3)
    expect_like(torch.zeros(2, 3), t, "For x", device="elsewhere")
    with pytest.raises(Wrong, match="^elsewhere$"):
        expect_like(torch.zeros(3, device="meta"), t, "For x", device="elsewhere")
    expect_like(torch.zeros(2, 3, device="meta"), t, "For x")        # no device message: not compared
    with pytest.raises(Wrong, match=r"^For x your result has shape \(3,\)\. Keep it\.$"):
        expect_like(torch.zeros(3), t, "For x", shape="Keep it.")
    with pytest.raises(Wrong, match=r"^For x your result has dtype torch.float64\.$"):
        expect_like(t.double(), t, "For x")


def test_a_grader_is_given_the_kind_of_callable_its_exercise_asks_for():
    assert get_exercise("06.scaler").kind == "class" and get_exercise("01.nbytes").kind == "function"
    result = cu.check("06.scaler", lambda features: None)
    assert result.status == "failed" and "Expected the class `Scaler` itself" in result.feedback


def test_expect_tensor_gives_a_plain_tensor():
    t, param = torch.ones(2), torch.nn.Parameter(torch.ones(2))
    assert expect_tensor(t, "x") is t
    plain = expect_tensor(param, "x")
    assert type(plain) is torch.Tensor and plain.data_ptr() == param.data_ptr() and plain.requires_grad
    for liar, says in ((t.as_subclass(EqualsAnything), "`EqualsAnything`, a subclass of torch.Tensor"),
                       (ClaimsToBe(t), "should be a torch.Tensor")):
        with pytest.raises(Wrong, match=says):
            expect_tensor(liar, "Your result")


# --- modes an answer leaves active do not judge it ----------------------------------------------------

from hostile_values import LenientDispatchMode, LenientMode  # noqa: E402

from course_utils.grading import call  # noqa: E402


def _leaves_modes(mode: type):
    def mask_future(scores):  # wrong: nothing is masked; the mode it leaves active would say it is right
        mode().__enter__()
        return scores.clone()
    return mask_future


@pytest.mark.parametrize("mode", [LenientMode, LenientDispatchMode])
def test_a_lenient_mode_left_active_by_the_answer_does_not_judge_it(mode):
    result = cu.check("04.mask_future", _leaves_modes(mode))
    assert result.status == "failed" and "-inf" in result.feedback, result.feedback
    assert torch._C._len_torch_function_stack() == torch._C._len_torch_dispatch_stack() == 0


def test_call_takes_off_the_modes_and_default_device_learner_code_leaves():
    def leaves_all():
        LenientMode().__enter__()
        LenientDispatchMode().__enter__()
        torch.set_default_device("meta")
        return "done"

    torch.set_default_device("meta")  # the learner's own, from an earlier cell: it stays
    try:
        assert call(leaves_all) == "done"
        assert torch._C._len_torch_function_stack() == 1 and torch._C._len_torch_dispatch_stack() == 0
        assert torch.get_default_device().type == "meta"
    finally:
        _restore_default_device(None)
    assert call(leaves_all) == "done" and torch._C._len_torch_function_stack() == 0
    assert torch.get_default_device() == torch.device("cpu") and not torch.equal(torch.ones(1), torch.zeros(1))


def test_a_mode_left_by_learner_code_the_check_did_not_call_fails(monkeypatch):
    """Learner code can run where the check does not call it through ``grading.call`` (a method of an
    object the answer returns): a mode it leaves active fails the exercise."""
    def grade(answer):
        answer()  # not through grading.call
        return "looks right"

    demo = exercises.Exercise("99.demo", "Demo", get_exercise("01.nbytes").reference, grade, ("a", "b"))
    monkeypatch.setitem(exercises._REGISTRY, "99.demo", demo)
    result = cu.check("99.demo", lambda: LenientMode().__enter__())
    assert result.status == "failed" and "left a torch function mode or dispatch mode active" in result.feedback
    assert torch._C._len_torch_function_stack() == 0
    assert cu.check("99.demo", lambda: None).passed


# --- part marks: an exercise of independent parts (the capstone's bugs) earns points for the parts that are right

@pytest.mark.parametrize("earned, points", [(2, 2), (0, 0), (-3, 0), (5, 4), (9, 4), (2.5, 0), ("3", 0), (True, 0),
                                            (None, 0)])
def test_a_wrong_answer_earns_the_part_marks_its_check_gives_below_full(monkeypatch, earned, points):
    def reference():
        return 1

    def grade(answer):
        answer()
        raise Wrong("two of five parts are right", "any.wrong-value", earned=earned)

    monkeypatch.setitem(exercises._REGISTRY, "99.parts", exercises.Exercise(
        "99.parts", "Parts", reference, grade, ("a hint",), points=5))
    result = cu.check("99.parts", lambda: 2)
    assert (result.status, result.points, result.max_points) == ("failed", points, 5)
    assert result.feedback == "two of five parts are right"


def test_every_exercise_is_worth_at_least_a_point_and_a_pass_earns_all():
    for ex_id in exercise_ids():
        ex = get_exercise(ex_id)
        assert type(ex.points) is int and ex.points >= 1, ex_id


# --- hints that fit the mistake (issue 33): one mechanism, a lesson's HINT_FOR beside its checks ------------

from course_utils import learner, misconceptions  # noqa: E402
from course_utils.lessons import l01_tensors, l07_capstone  # noqa: E402


def _hint_tables():
    from course_utils import lessons
    return {name: module.HINT_FOR for name, module in sorted(sys.modules.items())
            if name.startswith(lessons.__name__ + ".") and isinstance(getattr(module, "HINT_FOR", None), dict)}


def test_every_fitting_hint_belongs_to_an_exercise_of_its_lesson_and_a_known_code():
    tables = _hint_tables()
    assert {"course_utils.lessons.l01_tensors", "course_utils.lessons.l07_capstone"} <= set(tables)
    for module, table in tables.items():
        for ex_id, by_code in table.items():
            ex = get_exercise(ex_id)
            assert ex.reference.__module__ == module, ex_id      # the table sits beside the exercise's check
            for code, text in by_code.items():
                assert code in misconceptions.registry(), (ex_id, code)
                assert misconceptions.get(code).generic or code[:2] == ex.lesson, (ex_id, code)
                assert text.strip() and text not in ex.hints, (ex_id, code)


def test_hint_fits_the_last_check_of_that_exercise_only(progress_file):
    learner.run_check("01.nbytes", lambda t: t.numel() * 4)
    assert learner.hints("01.nbytes")[0] == l01_tensors.HINT_FOR["01.nbytes"]["01.assumed-4-bytes"]
    assert learner.hints("01.blank_like") == get_exercise("01.blank_like").hints   # another exercise: as written
    assert len(learner.hints("01.nbytes")) == len(get_exercise("01.nbytes").hints)   # replaces hint 1, adds none


def test_the_hint_button_shows_the_hint_that_fits(monkeypatch, progress_file):
    ipywidgets = pytest.importorskip("ipywidgets")
    from course_utils import widgets
    namespace = {"nbytes": lambda t: t.numel() * 4}
    monkeypatch.setattr(widgets, "_widgets", lambda: ipywidgets)
    monkeypatch.setattr(learner, "user_namespace", lambda: namespace)
    shown = widgets.exercise("01.nbytes")
    buttons = [w for w in shown.widget.children[1].children if isinstance(w, ipywidgets.Button)]
    next(b for b in buttons if b.description == "Hint").click()
    extra = shown.widget.children[-1].value
    assert extra.count("<li>") == 1 and "4 bytes" in extra and "view" not in extra


def test_capstone_hint_for_a_stub_and_after_it(progress_file):
    table = l07_capstone.HINT_FOR["07.capstone"]
    assert learner.hints("07.capstone", misconceptions.NOT_ATTEMPTED)[0] == table[misconceptions.NOT_ATTEMPTED]
    for code in ("07.batch-not-moved", "", "any.raised"):
        first = learner.hints("07.capstone", code)[0]
        assert "Delete" not in first and "raise NotImplementedError" in first


def test_an_unknown_id_is_a_course_error_and_still_a_key_error():
    from course_utils.exceptions import CourseError, UnknownId
    from course_utils.quizzes import get_quiz
    for lookup in (get_exercise, get_quiz):
        with pytest.raises(UnknownId) as info:
            lookup("99.nope")
        assert isinstance(info.value, (CourseError, KeyError)) and str(info.value).startswith("Unknown ")


def test_the_command_line_says_what_it_refuses_and_lets_a_bug_show(monkeypatch, capsys, progress_file):
    from course_utils import learner
    from course_utils.__main__ import main
    assert main(["hint", "99.nope"]) == 2 and "Unknown exercise id '99.nope'" in capsys.readouterr().out
    monkeypatch.setattr(learner, "hint", lambda *a: {}["a bug"])   # a KeyError of the course's own making
    with pytest.raises(KeyError):
        main(["hint", "01.nbytes"])


def test_the_guides_rubric_is_the_checks_own_points():
    """The instructor's guide lists every exercise with its points, and each lesson's total, as the checks declare."""
    import re
    from pathlib import Path
    guide = (Path(__file__).resolve().parent.parent / "docs" / "instructor.md").read_text(encoding="utf-8")
    listed = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\| \d\d \| `(\S+)` [^|]+ \| (\d+) \|$", guide, re.M)}
    assert listed == {ex_id: get_exercise(ex_id).points for ex_id in exercise_ids()}
    lessons = re.search(r"^\| Lesson \| ((?:\d\d \| )+)All \|\n\|[-|]+\|\n\| Points \| ([\d | ]+) \|$", guide, re.M)
    assert lessons, "the guide's table of lesson totals"
    totals = [int(n) for n in lessons.group(2).split(" | ")]
    names = lessons.group(1).split(" | ")[:-1]
    want = {lesson: sum(get_exercise(e).points for e in exercise_ids() if e[:2] == lesson) for lesson in names}
    assert dict(zip(names, totals)) == want and totals[-1] == sum(want.values())
    assert set(names) == {e[:2] for e in exercise_ids()}
