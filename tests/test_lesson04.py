"""Lesson 04 checks catch the realistic mistakes and say which one it was; the lesson's facts still hold."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import course_utils as cu
from course_utils import misconceptions
from course_utils.grading import simulated_accelerator

CUDA = torch.cuda.is_available()
CUDA_BUILT = torch.backends.cuda.is_built()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (the accelerator here, if any, is not CUDA)")
needs_two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2,
                                    reason="needs two or more CUDA GPUs; torch.cuda.device_count() < 2 here")


# --- 04.to_accelerator: wrong answers ---------------------------------------------------------
# Named functions (not lambdas), so the check can read their source like a notebook cell's.

def always_cuda(t):
    return t.cuda()


def cuda_if_any_accelerator(t):
    return t.cuda() if torch.accelerator.is_available() else t


def gpu_zero(t):
    if torch.accelerator.is_available():
        return t.to("cuda:0")
    return t


def cuda_check_only(t):
    return t.cuda() if torch.cuda.is_available() else t


def seed_style(t):
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    return t.to(device)


def try_cuda(t):
    try:
        return t.cuda()
    except (AssertionError, RuntimeError):
        return t


def clone_without(t):
    if torch.accelerator.is_available():
        return t.to(torch.accelerator.current_accelerator())
    return t.clone()


def copy_to_cpu_without(t):
    if torch.accelerator.is_available():
        return t.to(torch.accelerator.current_accelerator())
    return t.to("cpu", copy=True)


def always_copy(t):
    return t.to(cu.best_device(), copy=True)


def unguarded_type(t):
    return t.to(torch.accelerator.current_accelerator().type)


def changes_dtype(t):
    if torch.accelerator.is_available():
        return t.to(torch.accelerator.current_accelerator(), torch.float32)
    return t


def returns_device(t):
    return torch.accelerator.current_accelerator() or torch.device("cpu")


@pytest.mark.parametrize("answer, says, code", [
    (always_cuda, "only works with CUDA", "04.hard-coded-cuda"),
    (cuda_if_any_accelerator, "only works with CUDA", "04.hard-coded-cuda"),
    (gpu_zero, "`cuda:0` is GPU 0, which is not always the current device", "04.hard-coded-cuda"),
    (cuda_check_only, "Testing `torch.cuda.is_available()`", "04.only-cuda-counted"),
    (seed_style, "Testing `torch.cuda.is_available()`", "04.only-cuda-counted"),
    # CPU: "trying `.cuda()`" and falling back; CUDA machine: moved to cuda, not to the simulated accelerator
    (try_cuda, "only works with CUDA" if CUDA else "trying `.cuda()` and falling back",
     "04.hard-coded-cuda" if CUDA else "04.only-cuda-counted"),
    (clone_without, "returned a copy", "04.copy-without-accelerator"),
    (copy_to_cpu_without, "returned a copy", "04.copy-without-accelerator"),
    (always_copy, "returned a copy", "04.copy-without-accelerator"),
    (unguarded_type, "returns None when there is none", "02.accelerator-not-checked"),
    (changes_dtype, "must not change the dtype", "any.wrong-dtype"),
    (returns_device, "should be a torch.Tensor", "any.not-a-tensor"),
])
def test_to_accelerator_mistakes(answer, says, code):
    result = cu.check("04.to_accelerator", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


def cuda_with_a_comment(t):
    # was: t.to("cuda:0")
    return t.cuda() if torch.accelerator.is_available() else t


@pytest.mark.parametrize("answer", [always_cuda, cuda_with_a_comment])
def test_to_accelerator_index_note_only_when_index_zero_is_in_the_code(answer):
    result = cu.check("04.to_accelerator", answer)
    feedback = result.feedback
    assert "only works with CUDA" in feedback and "`cuda:0` is GPU 0" not in feedback
    assert result.code == "04.hard-coded-cuda"


CHOSEN_AT_IMPORT = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"


def reads_a_global(t):
    return t.to(CHOSEN_AT_IMPORT)   # `torch.accelerator` read once, when the module (the cell) ran


def test_to_accelerator_device_chosen_outside_the_function():
    """Reading `torch.accelerator` once, outside the function, is its own mistake (issue 33), not "only CUDA
    counted": the function asked no device question while it ran and reads a device from outside."""
    chosen_once = cu.best_device()   # decided before the check's accelerator could be seen

    def outside(t):
        return t.to(chosen_once)
    for answer, name in ((outside, "chosen_once"), (reads_a_global, "CHOSEN_AT_IMPORT")):
        result = cu.check("04.to_accelerator", answer)
        assert not result.passed and "outside" in result.feedback and f"`{name}`" in result.feedback, \
            result.feedback
        assert result.code == "04.device-chosen-once", (result.code, result.feedback)
    assert "04.device-chosen-once" in misconceptions.registry()


def picks_cuda_inside(t):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")   # asked inside: CUDA only
    return t.to(device)


def test_to_accelerator_cuda_only_inside_is_still_only_cuda_counted():
    result = cu.check("04.to_accelerator", picks_cuda_inside)
    assert not result.passed and result.code == "04.only-cuda-counted", (result.code, result.feedback)


def best_device_answer(t):
    return t.to(cu.best_device())


def explicit_index(t):
    if not torch.accelerator.is_available():
        return t
    acc = torch.accelerator.current_accelerator()
    return t.to(torch.device(acc.type, torch.accelerator.current_device_index()))


def documented_walrus(t):
    if (acc := torch.accelerator.current_accelerator(check_available=True)) is not None:
        return t.to(acc)
    return t


@pytest.mark.parametrize("answer", [best_device_answer, explicit_index, documented_walrus])
def test_to_accelerator_accepts_valid_alternatives(answer):
    result = cu.check("04.to_accelerator", answer)
    assert result.passed and result.code == "", result.feedback


# --- 04.mask_future -----------------------------------------------------------------------------

INF = float("-inf")


def mask_future_cuda(scores):           # the notebook's hard-coded version
    n = scores.shape[-1]
    future = torch.triu(torch.ones(n, n), diagonal=1).bool().cuda()
    return scores.cuda().masked_fill(future, INF)


def mask_on_default_device(scores):     # `.cuda()` deleted, nothing else changed
    n = scores.shape[-1]
    return scores.masked_fill(torch.triu(torch.ones(n, n), diagonal=1).bool(), INF)


def mask_on_accelerator(scores):        # "the accelerator" instead of "where the scores are"
    n = scores.shape[-1]
    future = torch.ones(n, n, dtype=torch.bool, device=cu.best_device()).triu(1)
    return scores.masked_fill(future, INF)


def everything_to_accelerator(scores):
    d = cu.best_device()
    n = scores.shape[-1]
    return scores.to(d).masked_fill(torch.ones(n, n, dtype=torch.bool, device=d).triu(1), INF)


def via_cpu(scores):
    n = scores.shape[-1]
    return scores.cpu().masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), INF)


def _future(scores, diagonal=1, lower=False):
    n = scores.shape[-1]
    ones = torch.ones(n, n, dtype=torch.bool, device=scores.device)
    return ones.tril(-1) if lower else ones.triu(diagonal)


@pytest.mark.parametrize("answer, says, code", [
    (mask_future_cuda, "should not move them" if CUDA else "still asks for CUDA",
     "04.moved-input" if CUDA else "04.hard-coded-cuda"),
    (mask_on_default_device, "ended up on different devices", "04.new-tensor-not-on-input-device"),
    (mask_on_accelerator, "ended up on different devices", "04.new-tensor-not-on-input-device"),
    (everything_to_accelerator, "should not move them", "04.moved-input"),
    (via_cpu, "read the values of a tensor", "any.read-meta-data"),
    (lambda s: s.masked_fill(_future(s, diagonal=0), INF), "also masked the diagonal", "04.masked-diagonal"),
    (lambda s: s.masked_fill(_future(s, lower=True), INF), "masked the past", "04.masked-past"),
    (lambda s: s.masked_fill(_future(s), -1e9), "should be -inf", "04.mask-not-inf"),
    (lambda s: s.masked_fill(_future(s), 0.0), "should be -inf", "04.mask-not-inf"),
    (lambda s: s.masked_fill_(_future(s), INF), "masked_fill_", "04.masked-in-place"),
    (lambda s: s.float().masked_fill(_future(s), INF), "dtype", "any.wrong-dtype"),
    (lambda s: s.masked_fill(_future(s), INF).tolist(), "should be a torch.Tensor", "any.not-a-tensor"),
    (lambda s: s.masked_fill(_future(s)[0], INF), "entries differ", "any.wrong-value"),  # only the first row masked
])
def test_mask_future_mistakes(answer, says, code):
    result = cu.check("04.mask_future", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


@pytest.mark.parametrize("answer", [
    lambda s: s.masked_fill(torch.triu(torch.ones(s.shape[-1], s.shape[-1], device=s.device), 1).bool(), INF),
    lambda s: s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), INF),
    lambda s: s + torch.full_like(s, INF).triu(1),
    lambda s: torch.where(_future(s), INF, s),
    lambda s: s.masked_fill(torch.ones(s.shape[-1], s.shape[-1], dtype=torch.bool).triu(1).to(s.device), INF),
    lambda s: s.masked_fill(torch.arange(s.shape[-1], device=s.device)[None, :]
                            > torch.arange(s.shape[-1], device=s.device)[:, None], INF),
])
def test_mask_future_accepts_valid_alternatives(answer):
    result = cu.check("04.mask_future", answer)
    assert result.passed and result.code == "", result.feedback


# --- facts the notebook states (CPU-provable) ----------------------------------------------------

@pytest.mark.skipif(CUDA_BUILT, reason="this PyTorch has CUDA; the message is for builds without it")
def test_cpu_build_cuda_errors():
    for call in (lambda: torch.ones(1).cuda(), torch.cuda.current_device):
        with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
            call()
    with pytest.raises(RuntimeError):
        with torch.cuda.device(0):
            pass
    assert torch.version.cuda is None


@pytest.mark.skipif(CUDA, reason="on a CUDA GPU `.cuda()` works")
def test_no_gpu_cuda_raises_never_falls_back():
    with pytest.raises((AssertionError, RuntimeError)):
        torch.ones(1).cuda()
    with pytest.raises((AssertionError, RuntimeError)):
        torch.cuda.current_device()


def test_safe_queries_answer_everywhere():
    assert isinstance(torch.cuda.is_available(), bool)
    assert isinstance(torch.cuda.device_count(), int)
    assert isinstance(torch.accelerator.is_available(), bool)
    assert torch.accelerator.is_available() or not torch.cuda.is_available()


@pytest.mark.skipif(cu.accelerator() is not None, reason="there is an accelerator here")
def test_no_accelerator_means_none():
    assert torch.accelerator.current_accelerator(check_available=True) is None


def test_cuda_docstring_and_index_free_device():
    assert "Defaults to the current CUDA device" in " ".join(torch.Tensor.cuda.__doc__.split())
    assert torch.device("cuda").index is None    # comparing it with cuda:0 is lesson 05's


def test_default_device_is_cpu_and_meta_block_changes_it():
    # where new tensors go, asked as the lessons ask it
    assert torch.empty(0).device.type == "cpu"
    with torch.device("meta"):
        assert torch.randn(2).device.type == "meta"
    assert torch.randn(2).device.type == "cpu"


def test_simulation_as_shown_in_the_notebook():
    def cuda_or_cpu():
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def accelerator_or_cpu():
        if torch.accelerator.is_available():
            return torch.accelerator.current_accelerator()
        return torch.device("cpu")
    before = (torch.cuda.is_available(), accelerator_or_cpu())
    with simulated_accelerator():
        assert cuda_or_cpu().type == "cpu" and accelerator_or_cpu().type == "meta"
    assert (torch.cuda.is_available(), accelerator_or_cpu()) == before


#: What CUDA says when section 6's CPU mask meets scores on the GPU: it names the mask.
CPU_MASK_ON_CUDA = "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0"


def test_the_notebook_quotes_what_cuda_says_for_a_cpu_mask():
    """Section 6's CPU mask meets the scores on the lesson's GPU (the simulated GPU raises it in the notebook's run,
    with `simgpu:0`); the prose quotes CUDA's message (checked on CUDA by the `gpu` test below)."""
    text = " ".join(_markdown_after("mask_future_cpu(torch.zeros(3, 3, device=").split())
    assert CPU_MASK_ON_CUDA in text


def _markdown_after(code_contains: str) -> str:
    from nbtools import NOTEBOOK_DIR, load, source
    cells = load(NOTEBOOK_DIR / "04_cuda.ipynb")["cells"]
    at = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and code_contains in source(c))
    return source(cells[at + 1])
    assert torch.equal(mask_on_default_device(torch.zeros(3, 3)),
                       torch.tensor([[0, INF, INF], [0, 0, INF], [0, 0, 0]]))


@pytest.mark.skipif(CUDA, reason="on a CUDA GPU the hard-coded version runs")
def test_hard_coded_mask_fails_without_cuda():
    with pytest.raises((AssertionError, RuntimeError)):
        mask_future_cuda(torch.zeros(3, 3))


# --- facts that need a GPU (they run on the GPU runner) -----------------------------------------

@pytest.mark.gpu
@needs_cuda
def test_a_cpu_mask_for_scores_on_cuda_raises_what_the_notebook_quotes():
    with pytest.raises(RuntimeError) as info:
        mask_on_default_device(torch.zeros(3, 3, device="cuda:0"))
    assert str(info.value) == CPU_MASK_ON_CUDA


@pytest.mark.gpu
@needs_cuda
def test_cuda_is_to_cuda_and_returns_self_when_there():
    t = torch.arange(3.0)
    g = t.cuda()
    assert t.device.type == "cpu" and g.device == torch.device("cuda", torch.cuda.current_device())
    assert g.cuda() is g and g.to("cuda") is g


@pytest.mark.gpu
@needs_cuda
def test_cuda_device_context_changes_current_not_default():
    last = torch.cuda.device_count() - 1
    before = torch.cuda.current_device()
    with torch.cuda.device(last):
        assert torch.cuda.current_device() == last
        assert torch.randn(2).device.type == "cpu"
        assert torch.randn(2).cuda().device == torch.device("cuda", last)
    assert torch.cuda.current_device() == before


@pytest.mark.gpu
@needs_cuda
def test_default_device_cuda_changes_factories():
    with torch.device("cuda"):
        assert torch.randn(2).device.type == "cuda"
    torch.set_default_device("cuda")
    try:
        assert torch.randn(2).device.type == "cuda"
    finally:
        torch.set_default_device("cpu")
    assert torch.randn(2).device.type == "cpu"


@pytest.mark.gpu
@needs_cuda
def test_hard_coded_mask_moves_cpu_scores_to_the_gpu():
    assert mask_future_cuda(torch.zeros(3, 3)).device.type == "cuda"


@pytest.mark.gpu
def test_to_accelerator_is_checked_on_the_real_accelerator():
    seen = []

    def spy(t):
        moved = t.to(torch.accelerator.current_accelerator()) if torch.accelerator.is_available() else t
        seen.append(moved.device.type)
        return moved
    result = cu.check("04.to_accelerator", spy)
    assert result.passed and result.code == "", result.feedback
    assert cu.accelerator().type in seen


@pytest.mark.gpu
def test_mask_future_is_checked_on_the_real_accelerator():
    seen = []

    def spy(scores):
        seen.append(scores.device.type)
        n = scores.shape[-1]
        return scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1), INF)
    result = cu.check("04.mask_future", spy)
    assert result.passed and result.code == "", result.feedback
    assert cu.accelerator().type in seen


@pytest.mark.gpu
@needs_two_gpus
def test_set_device_changes_where_cuda_goes():
    start = torch.cuda.current_device()
    torch.cuda.set_device(1)
    try:
        assert torch.cuda.current_device() == 1
        assert torch.ones(3).cuda().device == torch.device("cuda", 1)
        assert torch.ones(3).to("cuda").device == torch.device("cuda", 1)
        assert torch.ones(3).to(torch.accelerator.current_accelerator()).device == torch.device("cuda", 1)
        assert torch.ones(3).cuda(0).device == torch.device("cuda", 0)
    finally:
        torch.cuda.set_device(start)


@pytest.mark.gpu
@needs_two_gpus
def test_cuda_device_1_context_and_torch_device_cuda_1():
    with torch.cuda.device(1):
        assert torch.randn(2).device.type == "cpu"
        assert torch.randn(2).cuda().device == torch.device("cuda", 1)
    with torch.device("cuda:1"):
        assert torch.randn(2).device == torch.device("cuda", 1)


@pytest.mark.gpu
@needs_two_gpus
def test_to_accelerator_check_catches_gpu_zero_when_current_is_another():
    def index_zero(t):
        if not torch.accelerator.is_available():
            return t
        return t.to(torch.device(torch.accelerator.current_accelerator().type, 0))
    result = cu.check("04.to_accelerator", index_zero)
    assert not result.passed and "The current device was" in result.feedback, result.feedback
    assert result.code == "04.fixed-device-index"


@pytest.mark.gpu
@needs_cuda
def test_cuda_visible_devices_renumbers():
    last = torch.cuda.device_count() - 1
    child = "import torch; print(torch.cuda.device_count(), torch.cuda.get_device_name(0))"
    out = subprocess.run([sys.executable, "-c", child], env={**os.environ, "CUDA_VISIBLE_DEVICES": str(last)},
                         capture_output=True, text=True, check=True, timeout=120).stdout.split(maxsplit=1)
    assert out[0] == "1" and out[1].strip() == torch.cuda.get_device_name(last)
    empty = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                           env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True,
                           check=True, timeout=120).stdout.strip()
    assert empty == "0"


def test_to_accelerator_without_an_availability_check_fails(monkeypatch):
    """`t.to(current_accelerator())` crashes on a CUDA build without a GPU (pip's default on a laptop); on a machine
    with a GPU, where `.to` works, the simulated machine without one gets the GPU tensor back instead."""
    result = cu.check("04.to_accelerator", lambda t: t.to(torch.accelerator.current_accelerator()))
    expected = "return `t` itself" if torch.cuda.is_available() else "built for"
    assert not result.passed and expected in result.feedback, result.feedback
    assert result.code == "02.accelerator-not-checked"


def test_to_accelerator_with_names_imported_from_torch_accelerator_passes():
    namespace = {}
    exec("from torch.accelerator import is_available, current_accelerator\n"
         "def to_accelerator(t):\n"
         "    return t.to(current_accelerator()) if is_available() else t\n", namespace)
    result = cu.check("04.to_accelerator", namespace["to_accelerator"])
    assert result.passed and result.code == "", result.feedback
