"""Property-based robustness: thousands of generated learner answers, for every registered check.

Whatever the answer does (wrong types, None, huge or empty tensors, tensors on the wrong device,
hostile __eq__/__bool__/__repr__, any exception, mutating its input, printing, sys.exit), the
check returns a Result with feedback, never raises, stays within its time limit, and leaves the
caller's state alone.
"""
from __future__ import annotations

import inspect
import sys
import time

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import course_utils as cu
from course_utils import checking
from course_utils.exercises import exercise_ids, get_exercise
from course_utils.results import FAILED, NOT_ATTEMPTED, PASSED

EXAMPLES = 200  # per exercise; the suite reports the total in its summary line
GENERATED = {"count": 0}


class Hostile:
    """Every dunder the checks might touch raises."""

    def __init__(self, *args, **kwargs):
        pass

    def _boom(self, *args, **kwargs):
        raise RuntimeError("hostile object")

    __eq__ = __ne__ = __lt__ = __bool__ = __len__ = __iter__ = __index__ = __int__ = __float__ = _boom
    __repr__ = __str__ = __getitem__ = __call__ = __format__ = _boom
    __hash__ = object.__hash__

    def __getattr__(self, name):
        raise RuntimeError(f"hostile attribute {name}")


def tensors():
    dtypes = st.sampled_from([torch.float32, torch.float64, torch.float16, torch.int64, torch.int8,
                              torch.bool, torch.complex64])
    shapes = st.lists(st.integers(0, 4), max_size=3).map(tuple)
    small = st.builds(lambda s, d, dev: torch.zeros(s, dtype=d, device=dev), shapes, dtypes,
                      st.sampled_from(["cpu", "meta"]))
    huge = st.builds(lambda n: torch.empty(n, n, n, device="meta"), st.integers(10**3, 10**5))
    expanded = st.builds(lambda n: torch.zeros(1).expand(n), st.integers(10**6, 10**9))  # no memory
    return st.one_of(small, huge, expanded)


RETURNED = st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5), st.booleans(),
    st.lists(st.integers(), max_size=3), st.tuples(st.integers()), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    tensors(), st.just(Hostile()), st.just(torch.device("meta")), st.just("cpu"), st.just(float("inf")),
)
EXCEPTIONS = st.sampled_from([ValueError, TypeError, RuntimeError, AssertionError, KeyError, IndexError,
                              ZeroDivisionError, AttributeError, StopIteration, RecursionError, MemoryError,
                              NotImplementedError, ArithmeticError, OSError, UnicodeError])


@st.composite
def behaviours(draw):
    """A learner function body: a list of things it does, then what it returns."""
    steps = draw(st.lists(st.sampled_from(["print", "mutate", "set_default", "raise", "exit", "spin"]),
                          max_size=2, unique=True))
    value = draw(RETURNED)
    exc = draw(EXCEPTIONS)
    return_input = draw(st.booleans())
    return steps, value, exc, return_input


def make_answer(ex, behaviour):
    steps, value, exc, return_input = behaviour

    def body(*args, **kwargs):
        for step in steps:
            if step == "print":
                print("learner says hi", args[:1])
            elif step == "mutate":
                for a in args:
                    if isinstance(a, torch.Tensor) and a.device.type != "meta" and a.numel():
                        a.fill_(1) if a.dtype != torch.bool else a.fill_(True)
                    elif isinstance(a, (list, dict)):
                        a.clear()
            elif step == "set_default":
                torch.set_default_dtype(torch.float64)
            elif step == "raise":
                raise exc("learner error")
            elif step == "exit":
                sys.exit(3)
            elif step == "spin":
                end = time.perf_counter() + 0.002
                while time.perf_counter() < end:
                    pass
        return args[0] if (return_input and args) else value

    if inspect.isclass(ex.reference):
        class Answer(torch.nn.Module):
            def __init__(self, *args, **kwargs):
                super().__init__()
                self.out = body(*args, **kwargs)

            def forward(self, *args, **kwargs):
                return body(*args, **kwargs)
        return Answer
    return body


@pytest.mark.parametrize("ex_id", exercise_ids())
def test_checks_survive_generated_answers(ex_id, monkeypatch):
    ex = get_exercise(ex_id)
    monkeypatch.setattr(checking, "TIME_LIMIT", 5.0)

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(behaviours())
    def run(behaviour):
        GENERATED["count"] += 1
        answer = make_answer(ex, behaviour)
        state = (torch.get_default_dtype(), torch.get_default_device(), torch.is_grad_enabled())
        rng = torch.get_rng_state()
        result = cu.check(ex_id, answer)               # must not raise
        assert isinstance(result, cu.Result) and result.exercise_id == ex_id
        assert result.status in (PASSED, FAILED, NOT_ATTEMPTED)
        assert isinstance(result.feedback, str) and result.feedback.strip()
        assert result.points in (0, result.max_points)
        assert (torch.get_default_dtype(), torch.get_default_device(), torch.is_grad_enabled()) == state
        assert torch.equal(torch.get_rng_state(), rng)
        text, html = result.text(), result._repr_html_()
        assert "Traceback" not in text and "<script" not in html

    run()


def test_report_generated_count(capsys):
    """Runs last in this file: prints how many learner answers were generated."""
    with capsys.disabled():
        print(f"\n[hypothesis] generated learner answers checked: {GENERATED['count']}")
