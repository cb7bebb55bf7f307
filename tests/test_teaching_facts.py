"""The PyTorch facts the lessons teach, run directly against the installed PyTorch.

Each notebook proves its claims in a cell; these tests repeat the same facts outside the notebooks so that
the suite fails, with a readable name, the day a PyTorch release makes one of them false. Facts that only a
CUDA GPU can show are marked ``gpu`` (skipped visibly elsewhere) and also need CUDA itself.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import warnings

import pytest
import torch

from course_utils.gpusim.rules import release
from course_utils.checking import _restore_default_device
from torch import nn
from torch.overrides import _get_current_function_mode_stack

from course_utils.lessons.l01_tensors import nbytes

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def raised(fn, kind=RuntimeError) -> str:
    with pytest.raises(kind) as info:
        fn()
    return str(info.value)


@pytest.fixture
def restore_default_device():
    yield
    _restore_default_device(None)   # no default device


# --- item 1: a running loss total (lessons 02 and 07) ------------------------------------------------

def _loss_nodes(t: torch.Tensor) -> int:
    """How many `mean()` results the autograd graph behind ``t`` still holds."""
    seen, stack, count = set(), [t.grad_fn], 0
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        count += node.name().startswith("MeanBackward")
        stack.extend(next_fn for next_fn, _ in node.next_functions)
    return count


def test_adding_the_loss_keeps_every_steps_graph_and_detach_does_not():
    net, x = nn.Linear(8, 1), torch.randn(16, 8)
    kept, detached = torch.zeros(()), torch.zeros(())
    for _ in range(3):
        loss = net(x).square().mean()
        kept += loss
        detached += loss.detach()
    assert kept.requires_grad and kept.grad_fn is not None
    assert _loss_nodes(kept) == 3                     # all three steps' graphs are still attached
    assert not detached.requires_grad and detached.grad_fn is None
    assert torch.allclose(kept.detach(), detached)


def test_no_grad_builds_no_graph_for_an_evaluation_total():
    net, x = nn.Linear(8, 1), torch.randn(16, 8)
    with torch.no_grad():
        total = torch.zeros(())
        for _ in range(3):
            total += net(x).square().mean()
    assert not total.requires_grad


# --- item 2: torch.set_default_device (lesson 01) ----------------------------------------------------

def test_set_default_device_is_per_thread(restore_default_device):
    torch.set_default_device("meta")
    seen = []
    worker = threading.Thread(target=lambda: seen.append((torch.ones(1).device, torch.empty(0).device)))
    worker.start()
    worker.join()
    assert torch.ones(1).device.type == "meta"
    assert seen[0][0].type == "cpu" and seen[0][1].type == "cpu"


def test_restoring_cpu_leaves_a_function_mode_and_none_removes_it(restore_default_device):
    torch.set_default_device(None)
    assert len(_get_current_function_mode_stack()) == 0
    torch.set_default_device("cpu")
    assert len(_get_current_function_mode_stack()) == 1          # still installed: every call pays for it
    assert torch.empty(0).device == torch.device("cpu")
    torch.set_default_device(None)
    assert len(_get_current_function_mode_stack()) == 0
    assert torch.empty(0).device == torch.device("cpu")


def test_the_lessons_restore_pattern_leaves_no_mode(restore_default_device):
    torch.set_default_device(None)
    previous = torch.empty(0).device
    torch.set_default_device("meta")
    try:
        assert torch.ones(1).device.type == "meta"
    finally:
        torch.set_default_device(None if previous.type == "cpu" else previous)
    assert torch.ones(1).device.type == "cpu" and len(_get_current_function_mode_stack()) == 0


# --- item 3: Tensor.to returns self when nothing changes ---------------------------------------------

def test_tensor_to_returns_self_when_nothing_changes_and_a_new_tensor_otherwise():
    t = torch.randn(3)
    assert t.to("cpu") is t and t.to(torch.float32) is t and t.to(t) is t
    assert t.to("cpu", copy=True) is not t
    assert t.to(torch.float64) is not t and t.to("meta") is not t
    assert t.device.type == "cpu" and t.dtype == torch.float32     # never changed in place


# --- item 4: refilling a pinned buffer (lesson 07) ---------------------------------------------------

@pytest.mark.gpu
@cuda_only
def test_refilling_a_pinned_buffer_before_its_copy_finishes_changes_what_the_gpu_gets():
    device = torch.device("cuda")
    busy = torch.randn(4096, 4096, device=device)
    pinned = torch.empty(1_000_000, pin_memory=True)
    on_gpu = torch.empty(1_000_000, device=device)

    def send_then_refill(wait_for_copy):
        torch.cuda.synchronize()
        pinned.fill_(1.0)
        for _ in range(50):
            busy @ busy
        on_gpu.copy_(pinned, non_blocking=True)
        copied = torch.cuda.Event()
        copied.record()
        if wait_for_copy:
            copied.synchronize()
        pinned.fill_(2.0)
        torch.cuda.synchronize()
        return sorted(set(on_gpu.tolist()))

    assert send_then_refill(False) != [1.0]      # the copy read the refilled buffer
    assert send_then_refill(True) == [1.0]


# --- item 5: where PyTorch does move a tensor (lesson 06) --------------------------------------------

def test_ordinary_ops_do_not_move_a_cpu_tensor():
    message = raised(lambda: torch.ones(3, device="meta") + torch.ones(3))
    assert "cpu" in message and "meta" in message


def test_a_zero_dim_cpu_tensor_joins_elementwise_ops_and_a_one_dim_one_does_not():
    a = torch.ones(3, device="meta")
    assert (a * torch.tensor(2.0)).device.type == "meta"
    raised(lambda: a * torch.tensor([2.0]))


def test_cpu_index_and_mask_tensors_index_a_tensor_on_another_device():
    data = torch.arange(6.0, device="meta")
    index, mask = torch.tensor([0, 2, 4]), torch.tensor([True, False] * 3)
    assert data[index].device.type == "meta" and data[mask].device.type == "meta"
    data[mask] = -1.0
    assert data.device.type == "meta"
    assert torch.ones(3, device="meta")[torch.tensor([0, 1])].shape == (2,)


def test_optimizer_load_state_dict_moves_the_state_to_the_parameters_device():
    old = nn.Linear(4, 2)
    old_opt = torch.optim.Adam(old.parameters(), lr=0.01)
    old(torch.randn(8, 4)).sum().backward()
    old_opt.step()
    saved = old_opt.state_dict()
    assert saved["state"][0]["exp_avg"].device.type == "cpu"
    model = nn.Linear(4, 2).to("meta")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    opt.load_state_dict(saved)
    state = opt.state[model.weight]
    assert state["exp_avg"].device.type == "meta" and state["step"].device.type == "cpu"


def test_meta_alone_does_not_say_what_cuda_says_for_a_zero_dim_cpu_tensor_in_addmm():
    """``meta`` on its own lets a 0-dim CPU tensor into ``addmm`` up to 2.14, and refuses it in words of its own from
    2.15 (its decompositions check devices there); CUDA's per-argument check says neither. The simulated GPU follows
    CUDA's rule on every release (tests/test_simdevice.py)."""
    m = torch.ones(2, 2, device="meta")
    if release() >= (2, 15):
        assert raised(lambda: torch.addmm(torch.tensor(1.0), m, m)) == (
            "Tensor on device cpu is not on the expected device meta!")
    else:
        assert torch.addmm(torch.tensor(1.0), m, m).device.type == "meta"


@pytest.mark.gpu
@cuda_only
def test_cuda_edges_of_the_same_device_rule():
    device = torch.device("cuda")
    a = torch.ones(3, device=device)
    assert (a * torch.tensor(2.0)).device.type == "cuda"
    raised(lambda: a * torch.tensor([2.0]))
    m = torch.ones(2, 2, device=device)
    message = raised(lambda: torch.addmm(torch.tensor(1.0), m, m))     # per-argument checks: no 0-dim pass
    assert "cpu" in message and "cuda" in message
    data = torch.arange(6.0, device=device)
    mask = torch.tensor([True, False] * 3)
    assert data[torch.tensor([0, 2, 4])].tolist() == data[mask].tolist() == [0.0, 2.0, 4.0]
    data[mask] = -1.0
    assert data.tolist() == [-1.0, 1.0, -1.0, 3.0, -1.0, 5.0]


@pytest.mark.gpu
@cuda_only
def test_optimizer_load_state_dict_moves_cpu_state_to_cuda():
    old = nn.Linear(4, 2)
    old_opt = torch.optim.Adam(old.parameters(), lr=0.01)
    old(torch.randn(8, 4)).sum().backward()
    old_opt.step()
    model = nn.Linear(4, 2).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    opt.load_state_dict(old_opt.state_dict())
    assert opt.state[model.weight]["exp_avg"].device.type == "cuda"
    assert torch.equal(opt.state[model.weight]["exp_avg"].cpu(), old_opt.state[old.weight]["exp_avg"])


# --- item 6: hidden synchronisations (lessons 02 and 07) ---------------------------------------------

# `.numpy()` off the CPU raises a TypeError: tests/test_more_facts.py (item 17) checks it on meta and CUDA.


@pytest.mark.gpu
@cuda_only
def test_a_plain_copy_to_the_gpu_synchronises_and_a_pinned_non_blocking_one_does_not():
    host = torch.ones(100_000)
    pinned = host.pin_memory()

    def flagged(copy):
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                copy()
        finally:
            torch.cuda.set_sync_debug_mode("default")
        return sum("called a synchronizing" in str(c.message) for c in caught)

    assert flagged(lambda: host.to("cuda")) >= 1
    assert flagged(lambda: pinned.to("cuda", non_blocking=True)) == 0


# --- item 7: builds and CUDA_VISIBLE_DEVICES (lesson 04) ---------------------------------------------

def test_is_built_agrees_with_the_cuda_and_hip_versions():
    assert torch.backends.cuda.is_built() == (torch.version.cuda is not None or torch.version.hip is not None)


@pytest.mark.skipif(torch.backends.cuda.is_built(), reason="a CUDA or ROCm build")
def test_cuda_on_a_build_without_cuda_or_rocm_raises_assertion_error():
    assert torch.version.cuda is None and torch.version.hip is None
    assert raised(lambda: torch.ones(1).cuda(), AssertionError) == "Torch not compiled with CUDA enabled"


def test_import_torch_does_not_initialise_cuda():
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_initialized())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


@pytest.mark.gpu
@cuda_only
def test_cuda_visible_devices_counts_only_before_cuda_is_initialised():
    code = ("import os, torch; {before}os.environ['CUDA_VISIBLE_DEVICES'] = ''; "
            "print(torch.cuda.is_available())")

    def child(before):
        return subprocess.run([sys.executable, "-c", code.format(before=before)], capture_output=True,
                              text=True, check=True).stdout.strip()

    assert child("") == "False"
    assert child("torch.cuda.init(); ") == "True"


# --- item 8: views, device types, assign=True, the default device ------------------------------------

def test_a_views_elements_can_outnumber_its_storage_and_nbytes_counts_elements():
    wide = torch.zeros(1).expand(1000)
    assert wide.untyped_storage().nbytes() == 4
    assert nbytes(wide) == wide.nbytes == 4000
    every_other = torch.arange(10, dtype=torch.float32)[::2]
    assert nbytes(every_other) == 20 and every_other.untyped_storage().nbytes() == 40


def test_only_cuda_devices_have_type_cuda():
    assert [torch.device(d).type == "cuda" for d in ("cuda:1", "mps:0", "xpu:0")] == [True, False, False]


def test_map_location_cpu_with_assign_true_puts_the_model_on_the_cpu():
    path = os.path.join(tempfile.mkdtemp(), "linear.pt")
    torch.save(nn.Linear(4, 2).state_dict(), path)
    model = nn.Linear(4, 2).to("meta")
    model.load_state_dict(torch.load(path, map_location="cpu"), assign=True)
    assert model.weight.device.type == "cpu"
    model = nn.Linear(4, 2).to("meta")
    model.load_state_dict(torch.load(path, map_location="meta"), assign=True)
    assert model.weight.device.type == "meta"
    model = nn.Linear(4, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.to("meta").load_state_dict(torch.load(path, map_location="cpu"))    # no assign: copies in place
    assert model.weight.device.type == "meta"


def test_factory_functions_allocate_on_the_default_device(restore_default_device):
    with torch.device("meta"):
        assert torch.zeros(2).device.type == "meta"
    torch.set_default_device("meta")
    assert torch.randn(2).device.type == "meta"


# --- item 9: meta alone is more lenient than CUDA ------------------------------------------------------

def test_meta_accepts_cpu_indices_in_index_select_and_gather():
    index = torch.tensor([0, 2])
    assert torch.zeros(4, device="meta").index_select(0, index).device.type == "meta"
    gathered = torch.gather(torch.ones(3, 3, device="meta"), 0, torch.zeros(1, 3, dtype=torch.long))
    assert gathered.device.type == "meta"


@pytest.mark.gpu
@cuda_only
def test_cuda_refuses_cpu_indices_in_index_select_and_gather():
    index = torch.tensor([0, 2])
    message = raised(lambda: torch.zeros(4, device="cuda").index_select(0, index))
    assert "cpu" in message and "cuda" in message
    raised(lambda: torch.gather(torch.ones(3, 3, device="cuda"), 0, torch.zeros(1, 3, dtype=torch.long)))


# --- item 10: super().__init__() (lesson 03) ---------------------------------------------------------

def test_a_module_without_super_init_cannot_hold_a_layer():
    class Forgetful(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(4, 2)

    message = raised(Forgetful, AttributeError)
    assert message == "cannot assign module before Module.__init__() call"


# --- issue 20: wordings by version, and what the course lacked -----------------------------------------

from nbtools import load, notebook_paths, source  # noqa: E402

from course_utils.gpusim.rules import per_argument_message  # noqa: E402

from course_utils.runtime import MIN_TORCH  # noqa: E402


def _notebook(number: str) -> dict:
    return load(next(p for p in notebook_paths() if p.name.startswith(number)))


def _text(number: str, kind: str | None = None) -> str:
    """All of a notebook's cells of ``kind`` (every cell when None), line breaks turned into spaces, followed by
    what its ``print`` calls of plain strings print (a long message is often split over several arguments)."""
    cells = [c for c in _notebook(number)["cells"] if kind is None or c["cell_type"] == kind]
    return " ".join([" ".join(source(c).split()) for c in cells] + [_printed(c) for c in cells])


def _printed(cell: dict) -> str:
    """The string arguments of the ``print`` calls in a code cell, joined as ``print`` joins them."""
    import ast
    if cell["cell_type"] != "code":
        return ""
    try:
        tree = ast.parse(source(cell))
    except SyntaxError:                           # IPython syntax (the Colab install cell's %pip)
        return ""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id == "print"]
    return " ".join(" ".join(arg.value for arg in call.args if isinstance(arg, ast.Constant)
                             and isinstance(arg.value, str)) for call in calls)


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_every_notebook_says_which_versions_its_messages_are_quoted_from(path):
    floor = ".".join(map(str, MIN_TORCH))
    opening = " ".join(source(load(path)["cells"][0]).split())
    assert (f"Error messages are quoted as PyTorch {floor} to 2.14 print them; where the wording changed between "
            "those versions, each form is labelled with the versions that print it.") in opening


@pytest.mark.parametrize("number", ["03", "05", "06"])
def test_cudas_per_argument_wording_is_quoted_as_the_supported_versions_print_it(number):
    """`nn.Linear`'s `addmm` on CUDA: the lessons quote the wording of every PyTorch the course supports (it changed in
    2.8, below the floor), and no longer the older one of 2.7."""
    text = _text(number)
    floor = ".".join(map(str, MIN_TORCH)) + ".0"
    supported = per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", floor)
    assert supported == per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", "2.14.0")
    older = per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", "2.7.0")
    quoted = supported if number != "05" else supported.split(" (when checking")[0]   # lesson 05 quotes its start
    assert quoted in text and older not in text and "PyTorch 2.7" not in text


def test_lessons_01_and_06_show_live_messages_where_they_quoted_cuda_for_a_cpu_only_machine():
    """On the simulated GPU a learner without a GPU sees the GPU's error itself: lesson 01's index_select and lesson
    06's 0-dim `addmm` print no quoted CUDA message for lack of a GPU."""
    assert "wrapper_CUDA__index_select" not in _text("01")
    assert "No GPU here. On a CUDA GPU it raises" not in _text("06", "code")
    assert "wrapper_CUDA_addmm" not in _text("06", "code")


@pytest.mark.gpu
@cuda_only
def test_cuda_per_argument_checks_say_what_the_installed_version_says():
    index = torch.tensor([0, 2])
    assert raised(lambda: torch.zeros(4, device="cuda:0").index_select(0, index)) == per_argument_message(
        "index", "cpu", "cuda:0", "wrapper_CUDA__index_select")
    m = torch.ones(2, 2, device="cuda:0")
    assert raised(lambda: torch.addmm(torch.tensor(1.0), m, m)) == per_argument_message(
        "mat1", "cuda:0", "cpu", "wrapper_CUDA_addmm")


def test_a_copy_made_by_to_is_not_a_leaf_and_its_grad_stays_none():
    w = torch.randn(3, requires_grad=True)
    copy = w.to(torch.float64)
    copy.sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert copy.grad is None
    assert any("not a leaf Tensor is being accessed" in str(c.message) for c in caught)
    assert not copy.is_leaf and torch.equal(w.grad, torch.ones(3))
    assert "its `.grad` stays `None`" in _text("03", "markdown")


@pytest.mark.gpu
@cuda_only
def test_a_copy_moved_to_the_gpu_leaves_the_gradient_on_the_cpu_leaf():
    w = torch.randn(3, requires_grad=True)
    on_gpu = w.to("cuda")
    on_gpu.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert on_gpu.grad is None
    assert w.grad.device.type == "cpu" and torch.equal(w.grad, torch.ones(3))


def test_a_layer_built_inside_forward_is_never_moved():
    class BuiltInForward(nn.Module):
        def forward(self, x):
            return nn.Linear(4, 2)(x)

    late = BuiltInForward().to("meta")
    assert list(late.parameters()) == []
    assert "cpu" in raised(lambda: late(torch.randn(8, 4, device="meta")))
    assert "**A layer built inside `forward`**" in _text("06", "markdown")


def test_a_dict_of_tensors_moves_with_a_comprehension_and_has_no_to_of_its_own():
    encoded = {"input_ids": torch.tensor([[101, 7592, 102]]), "attention_mask": torch.ones(1, 3, dtype=torch.long)}
    moved = {name: t.to("meta") for name, t in encoded.items()}
    assert all(t.device.type == "meta" for t in moved.values())
    assert all(t.device.type == "cpu" for t in encoded.values())
    assert not hasattr(encoded, "to") and "`BatchEncoding`" in _text("03", "markdown")


def test_a_hugging_face_batch_encoding_moves_its_tensors_and_returns_itself():
    tokenization = pytest.importorskip("transformers.tokenization_utils_base")
    encoding = tokenization.BatchEncoding({"input_ids": torch.tensor([[1, 2]]), "note": "text"})
    assert encoding.to("meta") is encoding
    assert encoding["input_ids"].device.type == "meta" and encoding["note"] == "text"


def test_no_lesson_says_non_blocking_overlaps_a_copy_with_compute():
    """On one stream a copy and the kernels run in order: `non_blocking` frees the CPU; overlap with GPU compute
    needs a second stream (lessons 07 and 08 say so)."""
    for number in ("07", "08"):
        text = _text(number, "markdown")
        for wrong in ("lets the copy overlap with compute", "lets it overlap with compute",
                      "lets the copy overlap with the GPU's work", "lets it run while the GPU computes",
                      "`non_blocking=True` overlaps a copy only"):
            assert wrong not in text, (number, wrong)
    assert "second CUDA stream" in _text("08", "markdown") and "second stream" in _text("07", "markdown")
    assert "torch.cuda.Stream()" in _text("07", "code") and "wait_stream(side)" in _text("07", "code")


@pytest.mark.gpu
@cuda_only
def test_a_copy_on_a_side_stream_arrives_once_the_default_stream_waits_for_it():
    host = torch.arange(2**20, dtype=torch.float32).pin_memory()
    on_gpu = torch.zeros(2**20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        on_gpu.copy_(host, non_blocking=True)
    torch.cuda.current_stream().wait_stream(side)
    doubled = on_gpu * 2                          # queued on the default stream, after the copy
    assert torch.equal(doubled.cpu(), host * 2)


def test_lesson_04_has_one_mps_float64_wording_and_quotes_each_builds_synchronize_message():
    """The synchronize cell runs on the lesson's GPU (real or simulated); what a machine without any accelerator
    raises is quoted in the prose, in each build's words (tests/test_more_facts.py checks it on this build)."""
    text = _text("04")
    assert "Trying to convert Double" not in text
    assert "making one there both raise" in text and "for a copy and for a new tensor alike" in text
    code = next(source(c) for c in _notebook("04")["cells"] if "torch.accelerator.synchronize()" in source(c)
                and c["cell_type"] == "code")
    assert code.startswith("torch.accelerator.synchronize()")
    prose = _text("04", "markdown")
    assert "Cannot access accelerator device when none is available." in prose and "Found no NVIDIA driver" in prose


def test_the_instructors_guide_quotes_the_supported_per_argument_wording_only():
    """The guide quotes `addmm`'s per-argument message as the supported releases (2.10 and later) word it, and not
    PyTorch 2.7's older form, which no supported release prints."""
    from nbtools import ROOT
    guide = " ".join((ROOT / "docs" / "instructor.md").read_text(encoding="utf-8").split())
    assert per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", "2.10.0") in guide
    assert per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", "2.7.0") not in guide
