"""Lesson 01 checks catch the realistic mistakes and say which one it was."""
from __future__ import annotations

import sys

import pytest
import torch

import course_utils as cu


@pytest.mark.parametrize("answer, says, code", [
    (lambda t: t.numel(), "number of elements", "01.counted-elements"),
    (lambda t: t.element_size(), "size of one element", "01.bytes-of-one-element"),
    (lambda t: t.numel() * 4, "4 bytes per element", "01.assumed-4-bytes"),
    (lambda t: t.untyped_storage().nbytes(), "view", "01.counted-storage"),
    (lambda t: len(t) * t.element_size(), "TypeError", "any.raised"),            # 0-d tensors have no len()
    (lambda t: torch.tensor(t.numel() * t.element_size()), "Python int", "any.returned-tensor"),
    (lambda t: float(t.numel() * t.element_size()), "Python int", "any.wrong-type"),
    (lambda t: sys.getsizeof(t), "Bytes = number of elements", "any.wrong-value"),
])
def test_nbytes_mistakes(answer, says, code):
    result = cu.check("01.nbytes", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


def test_nbytes_accepts_the_builtin_attribute():
    result = cu.check("01.nbytes", lambda t: t.nbytes)
    assert result.passed and result.code == "", result.feedback


@pytest.mark.parametrize("answer, says, code", [
    (lambda t: torch.zeros(t.shape, dtype=t.dtype), "on `meta` but your zeros are on `cpu`",
     "01.ignored-input-device"),
    (lambda t: torch.zeros(t.shape, device=t.device), "dtype", "any.wrong-dtype"),
    (lambda t: t * 0, "dtype", "any.wrong-dtype"),                                     # bool * 0 is int64 ...
    (lambda t: (t * 0).to(t.dtype), "not all zeros", "01.multiplied-by-zero"),         # ... and inf * 0 is nan
    (lambda t: torch.ones_like(t), "not all zeros", "any.wrong-value"),
    (lambda t: t.zero_(), "input tensor itself", "01.changed-input-in-place"),
    (lambda t: torch.zeros_like(t).add_(t.zero_()) if t.dtype.is_floating_point else torch.zeros_like(t),
     "changed its input", "01.changed-input-in-place"),
    (lambda t: torch.zeros_like(t, device="cpu"), "your zeros are on `cpu`", "01.ignored-input-device"),
    (lambda t: torch.zeros_like(t).flatten(), "shape", "any.wrong-shape"),
    (lambda t: [0] * t.numel(), "should be a torch.Tensor", "any.not-a-tensor"),
])
def test_blank_like_mistakes(answer, says, code):
    result = cu.check("01.blank_like", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


def test_blank_like_accepts_new_zeros():
    result = cu.check("01.blank_like", lambda t: t.new_zeros(t.shape))
    assert result.passed and result.code == "", result.feedback


@pytest.mark.gpu
def test_blank_like_is_checked_on_the_accelerator():
    seen = []

    def spy(t):
        seen.append(t.device.type)
        return torch.zeros_like(t)
    result = cu.check("01.blank_like", spy)
    assert result.passed and result.code == "", result.feedback
    assert cu.accelerator().type in seen


# --- only plain values count ---------------------------------------------------------------------

from hostile_values import AlwaysEqualInt  # noqa: E402


def test_nbytes_refuses_an_int_subclass_whose_comparisons_lie():
    result = cu.check("01.nbytes", lambda t: AlwaysEqualInt(0))
    assert not result.passed and "not a plain Python int" in result.feedback and "`int(...)`" in result.feedback, \
        result.feedback
    assert result.code == "any.wrong-type"


def test_nbytes_tells_a_numpy_integer_to_convert():
    np = pytest.importorskip("numpy")
    result = cu.check("01.nbytes", lambda t: np.int64(t.numel() * t.element_size()))
    assert not result.passed and "`int64`" in result.feedback and "`int(...)`" in result.feedback, result.feedback
    assert result.code == "any.wrong-type"


@pytest.mark.parametrize("exercise_id, answer, says, code", [
    ("01.nbytes", lambda t: float(t.numel() * t.element_size()), "the right number, but as the float",
     "any.wrong-type"),
    ("02.matmul_flops", lambda n: 2 * n ** 3.0, "a float holds whole numbers exactly only up to 2**53",
     "any.wrong-type"),
    ("05.training_bytes", lambda m, o: float(sum(p.numel() * p.element_size() for p in m.parameters()) * 2),
     "the right number, but as the float", "any.wrong-type"),
])
def test_a_count_returned_as_a_float_is_told_so_the_same_way(exercise_id, answer, says, code):
    """Lessons 01, 02 and 05 ask for a whole number: one check (`expect_int`), the exercise's own advice."""
    result = cu.check(exercise_id, answer)
    assert not result.passed and says in result.feedback and "you returned" in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


def test_going_further_meta_has_shapes_and_no_data():
    """What *Going further* says of `meta`: a shape, a dtype and a device, no values and no memory; and that
    section 4's core path names no `meta` (it uses the lesson's GPU, `device`)."""
    from nbtools import NOTEBOOK_DIR, load, source
    plan = torch.zeros(50_000, 50_000, device="meta")
    assert plan.nbytes == 10_000_000_000 and plan.untyped_storage().data_ptr() == 0
    with pytest.raises(NotImplementedError, match="no data"):
        plan.tolist()
    cells = load(NOTEBOOK_DIR / "01_tensors.ipynb")["cells"]
    further = next(i for i, c in enumerate(cells) if source(c).startswith("## Going further"))
    text = " ".join(" ".join(source(c).split()) for c in cells[further:])
    assert "### `meta`: shapes without data" in text and 'device="meta"' in text
    core = "\n".join(source(c) for c in cells[:further])
    assert "meta" not in core.lower() and "device=device" in core and "second_device" not in core


def test_going_further_helpers_take_their_device_from_x_whatever_the_default():
    """What *Going further* shows after quiz 01.zeros_like_device: a default device (a block or
    `set_default_device`) reaches factory functions called without a device, not `*_like` or `x.new_*`."""
    x = torch.ones(2, 3, device="meta")
    with torch.device("cpu"):
        assert torch.zeros(2, 3).device.type == "cpu"
        assert torch.zeros_like(x).device == x.new_zeros(5).device == x.device
    torch.set_default_device("cpu")
    try:
        assert torch.zeros_like(x).device == x.new_zeros(5).device == x.device
    finally:
        torch.set_default_device(None)


# --- the exercises ask for reasoning: nothing above them hands over the answer ----------------------

def _before_answer_cell(exercise_id: str) -> str:
    from nbtools import NOTEBOOK_DIR, load, source
    cells = load(NOTEBOOK_DIR / "01_tensors.ipynb")["cells"]
    end = next(i for i, c in enumerate(cells) if (c.get("metadata", {}).get("course") or {}).get("exercise") == exercise_id)
    return "\n".join(source(c) for c in cells[:end])


def test_nothing_above_01_nbytes_names_the_formula_or_the_attribute():
    text = _before_answer_cell("01.nbytes").replace(" ", "")
    for given_away in ("t.nbytes", "numel()*", "*t.element_size()", "element_size()*"):
        assert given_away not in text, given_away


def test_nothing_above_01_blank_like_shows_the_like_functions():
    text = _before_answer_cell("01.blank_like")
    assert "zeros_like" not in text and "new_zeros" not in text


# --- hints that answer the mistake the last check named (issue 33) -----------------------------------

def four_bytes_each(t):
    return t.numel() * 4


def test_nbytes_first_hint_answers_the_assumed_4_bytes_mistake(progress_file):
    from course_utils import learner
    result = learner.run_check("01.nbytes", four_bytes_each)
    assert not result.passed and result.code == "01.assumed-4-bytes", result.feedback
    first = learner.hint("01.nbytes", 1)
    assert first.startswith("Hint 1/3") and "4 bytes" in first and "element_size()" in first
    assert "view" not in first and "storage" not in first
    assert learner.hint("01.nbytes", 3) == "Hint 3/3: " + cu.exercises.get_exercise("01.nbytes").hints[2]


@pytest.mark.parametrize("code, says", [
    ("01.assumed-4-bytes", "4 bytes"), ("01.counted-elements", "counts elements"),
    ("01.bytes-of-one-element", "ONE element"), ("01.counted-storage", "view"),
])
def test_each_nbytes_mistake_has_its_first_hint_and_the_default_fits_any_state(code, says):
    from course_utils import learner
    hints = learner.hints("01.nbytes", code)
    assert says in hints[0] and hints[1:] == cu.exercises.get_exercise("01.nbytes").hints[1:]
    default = learner.hints("01.nbytes", "")
    assert default == cu.exercises.get_exercise("01.nbytes").hints
    assert "view" not in default[0] and "storage" not in default[0]   # right whatever the learner did
    assert learner.hints("01.nbytes", "any.wrong-value") == default


def test_a_pass_brings_back_the_hints_as_written(progress_file):
    from course_utils import learner
    learner.run_check("01.nbytes", four_bytes_each)
    learner.run_check("01.nbytes", lambda t: t.numel() * t.element_size())
    assert learner.hints("01.nbytes") == cu.exercises.get_exercise("01.nbytes").hints
