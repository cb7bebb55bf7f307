"""course_utils.classroom.sandbox.integrity: honest PyTorch is never tampering; changes to what the checks rely
on cost the whole submission, with what changed; a reference solution is recognised by what an answer
is and calls, not by the words in it; the grader's own limits are not blamed on the learner."""
from __future__ import annotations

import importlib
import textwrap

import pytest
import torch

import course_utils as cu
from course_utils.classroom.sandbox import guard as guards, integrity
from course_utils.exceptions import GraderLimit

from .cases import COPIES_BY_COMPILE, L01_POINTS, SOL, linux_only, marks, points_of


# --- honest PyTorch is never tampering ------------------------------------------------------------

def test_honest_extras_are_not_tampering(batch):
    """Seeds, default-device switches, warnings, magics, display(), nn.Module and self-checks are fine."""
    sub = "subs/honest_extras.ipynb"
    assert batch.rows.points(sub)["TOTAL"] == L01_POINTS, (batch.rows[sub, "01.nbytes"],
                                                         batch.rows[sub, "01.blank_like"])


@pytest.mark.parametrize("submission", ["dtype.ipynb", "compiled.ipynb"])
def test_pytorch_changing_itself_is_not_tampering(graded, submission):
    """``set_default_dtype`` rebinds ``torch.Storage``; the first compiled call patches ``nn.Module``."""
    assert graded.rows.full_marks(submission), graded.rows[submission, "TOTAL"]


@pytest.mark.parametrize("submission", ["reload.ipynb", "libraries.ipynb"])
def test_honest_exploration_is_not_tampering(graded, submission):
    """``importlib.reload(course_utils)`` remakes the package's functions as they were; library code
    (namedtuple, typing, logging, traceback) takes frames for itself, not for the learner."""
    assert graded.rows.full_marks(submission), graded.rows[submission, "TOTAL"]


def test_what_course_modules_let_change_is_still_there():
    """The globals and tables that course code itself changes, which the snapshot therefore does not watch, are
    declared by their modules (``REBOUND``: names; ``CHANGING``: the tables) and still exist: renamed, their changes
    would count as tampering."""
    from course_utils import exercises, mismatch, store
    from course_utils.gpusim import backend as simdevice
    from course_utils.lessons import l03_to_device

    snap = integrity.take_snapshot()
    for module in (mismatch, simdevice):
        assert module.REBOUND and all(hasattr(module, name) for name in module.REBOUND), module.__name__
        assert snap.rebound[module.__name__] == frozenset(module.REBOUND)
    for module in (exercises, l03_to_device, store):
        assert module.CHANGING and all(type(t) in integrity._TABLES for t in module.CHANGING), module.__name__
        assert all(id(t) in snap.changing for t in (module.CHANGING, *module.CHANGING))
    assert not any(name.endswith(".CHANGING") or name.endswith("._SESSION") for name in snap.contents)


def test_the_declared_tables_may_change_but_not_be_replaced():
    from course_utils import store

    snap = integrity.take_snapshot()
    store.CHANGING[0]["99.nothing"] = ("passed", "")
    try:
        assert integrity.changes(snap) == []
    finally:
        del store.CHANGING[0]["99.nothing"]
    session = store.CHANGING[0]
    store._SESSION = {"99.nothing": ("passed", "")}
    try:
        assert integrity.changes(snap) == ["course_utils.store._SESSION"]
    finally:
        store._SESSION = session


# --- changes to what the checks rely on ----------------------------------------------------------------

@pytest.mark.parametrize("submission, changed", [
    ("subs/tamper_check.ipynb", "course_utils.check (in the answer cell of 01.nbytes)"),
    ("subs/tamper_checking_check.ipynb", "course_utils.checking.check"),
    ("subs/tamper_registry.ipynb", "exercise 01.nbytes"),
    ("subs/tamper_torch_equal.ipynb", "torch.equal"),
    ("subs/tamper_during_check.ipynb", "course_utils.grading.Wrong (while 01.nbytes was being checked)"),
    ("subs/garbles_then_tampers.ipynb", "course_utils.check (while 01.nbytes was being checked)"),
])
def test_tampering_earns_nothing_and_says_what_changed(batch, submission, changed):
    assert batch.rows.points(submission) == {"01.blank_like": 0, "01.nbytes": 0, "TOTAL": 0}
    for ex_id in ("01.nbytes", "01.blank_like", "TOTAL"):
        assert f"changes {changed}" in batch.rows[submission, ex_id]["feedback"]


def test_a_reload_that_makes_new_classes_says_so(graded):
    """``importlib.reload(cu.grading)`` makes a new ``Wrong``, which the checks would not catch."""
    assert graded.rows.points("reload_grading.ipynb")["TOTAL"] == 0
    assert ("changes course_utils.grading, run again by importlib.reload, which made new classes"
            in graded.rows.feedback("reload_grading.ipynb", "TOTAL"))


def test_patching_math_isclose_is_tampering(graded):
    assert graded.rows.points("07_isclose.ipynb")["TOTAL"] == 0
    assert "changes math.isclose" in graded.rows.feedback("07_isclose.ipynb", "TOTAL")


@pytest.mark.parametrize("submission, changed", [
    ("04_hides_mode.ipynb", "torch._C._len_torch_function_stack"),
    ("empties_device_table.ipynb", "course_utils.device.NO_FLOAT64"),
])
def test_hiding_a_mode_or_emptying_a_table_is_tampering(graded, submission, changed):
    """Patching ``torch._C`` (to hide a mode from the grader) and changing what a course table holds,
    in place, are changes to what the checks rely on."""
    assert graded.rows.points(submission)["TOTAL"] == 0
    assert f"changes {changed}" in graded.rows.feedback(submission, "TOTAL")


@linux_only
def test_changes_sees_what_a_table_holds_and_forgives_a_reload():
    snap = integrity.take_snapshot()
    importlib.reload(cu)  # runs the package again: the same functions and records, remade
    assert integrity.changes(snap) == []
    table = cu.device.NO_FLOAT64
    saved = set(table)
    table.clear()
    try:
        assert integrity.changes(snap) == ["course_utils.device.NO_FLOAT64"]
    finally:
        table.update(saved)
    assert integrity.changes(snap) == []


# --- the reference solution, by what it is -----------------------------------------------------------

def test_the_reference_solution_is_not_an_answer(batch):
    sub = "subs/uses_reference.ipynb"  # imported by name, and by a name the source does not show
    assert batch.rows.points(sub)["TOTAL"] == 0
    assert "is a course reference solution" in batch.rows[sub, "01.nbytes"]["feedback"]
    assert "is a course reference solution" in batch.rows[sub, "01.blank_like"]["feedback"]
    assert "uses `sys._getframe(2).f_locals`" in batch.rows["subs/reads_frames.ipynb", "01.nbytes"]["feedback"]


def test_words_are_not_the_reference(graded):
    """A local named ``reference``, the string, and notebook 04's import of a grading helper are fine."""
    assert graded.rows.full_marks("05_names.ipynb"), [r for k, r in graded.rows.items() if k[0] == "05_names.ipynb"]


@pytest.mark.parametrize("submission", ["ref_call.ipynb", "ref_lambda.ipynb", "ref_partial.ipynb", "ref_alias.ipynb",
                                        "ref_solution.ipynb", "ref_getsource.ipynb", "ref_exec_inside.ipynb"])
def test_an_answer_that_is_or_calls_the_reference_earns_nothing(graded, submission):
    assert graded.rows.points(submission) == marks({"01.nbytes": False, "01.blank_like": True})
    assert "course reference solution" in graded.rows.feedback(submission, "01.nbytes")


def test_a_class_that_builds_the_reference_earns_nothing(graded):
    assert graded.rows.points("06_scaler_new.ipynb")["06.scaler"] == 0
    assert "course reference solution" in graded.rows.feedback("06_scaler_new.ipynb", "06.scaler")
    assert graded.rows.points("06_scaler_new.ipynb")["06.find_mismatches"] == points_of("06.find_mismatches")


@pytest.mark.parametrize("how, used", [("sys", "sys._getframe"), ("inspect", "inspect.stack"),
                                       ("traceback", "tb_frame"), ("logging", "logging.currentframe")])
def test_taking_a_frame_by_a_computed_name_earns_nothing(graded, how, used):
    submission = f"frames_{how}.ipynb"
    assert graded.rows.points(submission) == marks({"01.nbytes": False, "01.blank_like": True})
    assert (f"took a frame of the call stack while it ran (`{used}`)"
            in graded.rows.feedback(submission, "01.nbytes"))


@pytest.mark.parametrize("how", sorted(COPIES_BY_COMPILE))
def test_a_copy_of_the_reference_made_without_exec_earns_nothing(graded, how):
    """``compile(cu.solution(...))``, then ``types.FunctionType`` or ``f.__code__ = ...``."""
    submission = f"copy_{how}.ipynb"
    assert graded.rows.points(submission) == marks({"01.nbytes": False, "01.blank_like": True})
    assert "course reference solution" in graded.rows.feedback(submission, "01.nbytes")


@pytest.fixture
def guard():
    namespace: dict = {"torch": torch, "cu": cu}
    g = guards.ReferenceGuard(namespace)
    g.install()
    try:
        yield g
    finally:
        g.remove()


@linux_only
def test_the_guard_tells_references_from_answers(guard):
    import functools
    import inspect

    ref = cu.lessons.l01_tensors.nbytes
    scope: dict = {}
    exec(cu.exercises.get_exercise("01.nbytes").solution_source, scope)  # a copy, not from an answer cell
    assert guard.is_reference(ref) and guard.is_reference(functools.partial(ref))
    assert guard.is_reference(scope["nbytes"])
    assert guard.is_reference(type("Sub", (cu.lessons.l06_mismatch_errors.Scaler,), {}))
    pasted = compile(SOL["01.nbytes"], "<answer cell 01.nbytes>", "exec")  # typed into the answer cell
    guard.answer_code(pasted)
    exec(pasted, guard.namespace)
    assert not guard.is_reference(guard.namespace["nbytes"])
    assert not guard.is_reference(lambda t: t.element_size() * t.numel())
    assert guard.is_reference(lambda t: t.numel() * t.element_size())  # the same code, not from an answer cell
    assert textwrap.dedent(inspect.getsource(ref)).strip() + "\n" == SOL["01.nbytes"]  # still its own source
    assert str(inspect.signature(ref)) == "(t)"


@linux_only
def test_the_guard_sees_who_calls_a_reference(guard):
    pasted = compile(SOL["01.nbytes"], "<answer cell 01.nbytes>", "exec")
    guard.answer_code(pasted)
    exec(pasted, guard.namespace)
    with guard.running("01.nbytes", checking=True):
        cu.check("01.nbytes", guard.namespace["nbytes"])  # the checker calls the reference itself
    assert not guard.flagged
    exec("def nbytes(t):\n    return cu.lessons.l01_tensors.nbytes(t)\n", guard.namespace)
    with guard.running("01.nbytes", checking=True):
        result = cu.check("01.nbytes", guard.namespace["nbytes"])
    assert result.status == "passed" and guard.flagged == {"01.nbytes"}  # passed the check, but called it


@linux_only
def test_the_guard_sees_reference_code_run_from_a_string(guard):
    renamed = SOL["01.blank_like"].replace("def blank_like", "def helper")
    with guard.running("01.blank_like", checking=False):
        exec("x = 1\n", {})
    assert not guard.flagged
    with guard.running("01.blank_like", checking=False):
        exec(renamed, {"torch": torch})
    assert guard.flagged == {"01.blank_like"}


@linux_only
def test_the_guard_sees_reference_code_made_into_a_function(guard):
    """Compiled from the reference's source, then made into a function without ``exec``."""
    import types

    code = compile(SOL["01.nbytes"], "mine", "exec").co_consts[0]
    with guard.running("01.blank_like", checking=True):
        types.FunctionType(compile("def f(t):\n    return t\n", "mine", "exec").co_consts[0], {})
    assert not guard.flagged
    with guard.running("01.nbytes", checking=True):
        types.FunctionType(code, {})
    with guard.running("01.blank_like", checking=False):
        def mine(t):
            return 0
        mine.__code__ = code
    assert guard.flagged == {"01.nbytes", "01.blank_like"}


@linux_only
def test_the_guard_notes_frames_taken_by_learner_code_only(guard):
    answers = ("import sys\ndef f():\n    return getattr(sys, '_get' + 'frame')(0)\n"
               "import collections, typing\ndef g():\n    typing.TypeVar('T')\n"
               "    return collections.namedtuple('P', 'a')\n")
    exec(compile(answers, "<answer cell 01.nbytes>", "exec"), guard.namespace)
    with guard.running("01.blank_like", checking=True):
        guard.namespace["g"]()  # library code that takes a frame for itself
    assert guard.frames_read == {}
    with guard.running("01.nbytes", checking=True):
        guard.namespace["f"]()
    assert guard.frames_read == {"01.nbytes": "sys._getframe"}


# --- PyTorch's pristine state for checks -----------------------------------------------------------

@linux_only
def test_pristine_torch_inside_and_the_learners_state_after():
    start = integrity.torch_settings()
    torch.set_default_device("meta")
    torch.set_default_dtype(torch.float64)
    try:
        with integrity.pristine_torch(start):
            assert torch.get_default_device() == torch.device("cpu")
            assert torch.get_default_dtype() == torch.float32
            assert torch._C._len_torch_function_stack() == 0
        assert torch.get_default_device() == torch.device("meta")
        assert torch.get_default_dtype() == torch.float64
        assert torch._C._len_torch_function_stack() == 1
    finally:
        torch.set_default_dtype(torch.float32)
        cu.checking._restore_default_device(None)
    assert torch._C._len_torch_function_stack() == 0


# --- the grader's own limits ---------------------------------------------------------------------------

def test_running_out_of_memory_while_verifying_is_not_tampering(graded):
    """An answer cell that leaves no memory for the integrity check loses its own exercise, with the
    reason; the rest is graded."""
    assert graded.rows.points("memory_hog.ipynb") == marks({"01.nbytes": False, "01.blank_like": True})
    assert "memory" in graded.rows.feedback("memory_hog.ipynb", "01.nbytes")
    assert "changes" not in graded.rows.feedback("memory_hog.ipynb", "TOTAL")


@linux_only
def test_verify_frees_memory_then_says_the_grader_ran_out(monkeypatch):
    snap = integrity.take_snapshot()
    failures = iter([MemoryError()])

    def changes_once(s):
        error = next(failures, None)
        if error:
            raise error
        return []

    freed = []
    monkeypatch.setattr(integrity, "changes", changes_once)
    assert integrity.verify(snap, lambda: freed.append(True)) == [] and freed == [True]

    def never(s):
        raise MemoryError()

    monkeypatch.setattr(integrity, "changes", never)
    with pytest.raises(GraderLimit, match="the grader ran out of memory"):
        integrity.verify(snap, lambda: None)


# --- the quick look: Snapshot.unchanged says "nothing changed" only when the full comparison finds nothing ---------

def _tamperings():
    """(what, do, undo): changes the full comparison reports, each undone after."""
    from course_utils import errors, exercises, grading
    ex = exercises.get_exercise("01.nbytes")
    check, points, kind = grading.expect_int, ex.points, exercises.Exercise.__dict__["kind"]
    code, defaults = check.__code__, check.__defaults__

    yield "a function replaced", lambda: setattr(grading, "expect_int", len), lambda: setattr(grading, "expect_int", check)
    yield "a name added to a course module", lambda: setattr(grading, "extra", 1), lambda: delattr(grading, "extra")
    yield "a function's code swapped", lambda: setattr(check, "__code__", (lambda *a, **k: 0).__code__), \
        lambda: setattr(check, "__code__", code)
    yield "a function's defaults changed", lambda: setattr(check, "__defaults__", (None,) * len(defaults or (0,))), \
        lambda: setattr(check, "__defaults__", defaults)
    yield "an exercise's field", lambda: object.__setattr__(ex, "points", 99), \
        lambda: object.__setattr__(ex, "points", points)
    yield "a registry entry removed", lambda: exercises._REGISTRY.pop("01.nbytes"), \
        lambda: exercises._REGISTRY.__setitem__("01.nbytes", ex)
    yield "a course table's contents", lambda: errors.LESSONS.__setitem__("devices", ("08_field_guide", "x")), \
        lambda: errors.LESSONS.__setitem__("devices", ("06_mismatch_errors", "1. Meet the error"))
    yield "a class attribute", lambda: setattr(exercises.Exercise, "kind", property(lambda self: "function")), \
        lambda: setattr(exercises.Exercise, "kind", kind)
    yield "a Tensor method", lambda: setattr(torch.Tensor, "equal", lambda *a: True), \
        lambda: delattr(torch.Tensor, "equal")
    yield "torch.allclose", lambda: setattr(torch, "allclose", lambda *a, **k: True), \
        lambda: setattr(torch, "allclose", torch._C._VariableFunctions.allclose)
    yield "a module in sys.modules", lambda: sys.modules.__setitem__("course_utils.grading", textwrap), \
        lambda: sys.modules.__setitem__("course_utils.grading", grading)


import sys  # noqa: E402


@pytest.mark.parametrize("what", [t[0] for t in _tamperings()])
def test_the_quick_look_never_misses_what_the_full_comparison_reports(what):
    do, undo = next((d, u) for w, d, u in _tamperings() if w == what)
    snap = integrity.take_snapshot()
    assert snap.unchanged() and integrity.changes(snap) == []
    do()
    try:
        reported = integrity.compare(snap, integrity.take_snapshot())
        looked = snap.unchanged()
    finally:
        undo()
    assert reported and not looked, (what, reported)
    assert snap.unchanged() and integrity.changes(snap) == []
