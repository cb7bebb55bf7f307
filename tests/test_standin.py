"""The stand-in GPU (``course_utils.standin``): with it on, mixing ``meta`` and CPU tensors raises what a CUDA GPU
of the installed PyTorch raises, with ``meta`` for ``cuda:0``; PyTorch's own leniencies and meta-only code stay
as they were; nothing returns uninitialised memory. Each case takes the device, so that a machine with a GPU also
compares every message with the real one."""
from __future__ import annotations

import copy
import io
import re
from importlib.util import find_spec
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import course_utils as cu
from course_utils import standin
from course_utils.standin import convolution_message, elementwise_message, per_argument_message


@pytest.fixture
def stand_in(monkeypatch):
    """The stand-in on for one test, without its once-a-session note (which has a test of its own)."""
    monkeypatch.setattr(standin, "_note_pending", False)
    standin.enable()
    yield
    standin.disable()


def cpu(*shape: int) -> torch.Tensor:
    return torch.randn(shape)


def on(device: str, *shape: int) -> torch.Tensor:
    return torch.randn(shape, device=device)


def labels(device: str) -> torch.Tensor:
    return torch.tensor([0, 1, 2, 0], device=device)


def per_arg(arg: str, arg_device: str, common: str, method: str) -> str:
    return per_argument_message(arg, arg_device, common, method)


def _inference(fn):
    with torch.inference_mode():
        return fn()


MKLDNN = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="PyTorch built without MKLDNN")
IN_CPU, IN_META = "torch.FloatTensor", "torch.meta.FloatTensor"

#: (case, the call with the GPU's tensors on `d`, what the stand-in says). Models and weights on the GPU, inputs
#: on the CPU, unless the case says otherwise.
MIXED = [
    ("F.linear without bias", lambda d: F.linear(cpu(4, 3), on(d, 5, 3)),
     per_arg("mat2", "meta", "cpu", "wrapper_CUDA_mm")),
    ("F.linear with bias", lambda d: F.linear(cpu(4, 3), on(d, 5, 3), on(d, 5)),
     per_arg("mat1", "cpu", "meta", "wrapper_CUDA_addmm")),
    ("nn.Linear", lambda d: nn.Linear(3, 5).to(d)(cpu(4, 3)), per_arg("mat1", "cpu", "meta", "wrapper_CUDA_addmm")),
    ("nn.Linear on a batch of sequences", lambda d: nn.Linear(3, 5).to(d)(cpu(2, 4, 3)),
     per_arg("mat1", "cpu", "meta", "wrapper_CUDA_addmm")),
    ("nn.Linear on the CPU, input on the GPU", lambda d: nn.Linear(3, 5)(on(d, 4, 3)),
     per_arg("mat1", "meta", "cpu", "wrapper_CUDA_addmm")),
    ("x @ w.T", lambda d: cpu(4, 3) @ on(d, 5, 3).T, per_arg("mat2", "meta", "cpu", "wrapper_CUDA_mm")),
    ("w @ x", lambda d: on(d, 5, 3) @ cpu(3, 4), per_arg("mat2", "cpu", "meta", "wrapper_CUDA_mm")),
    ("torch.mm", lambda d: torch.mm(cpu(4, 3), on(d, 3, 5)), per_arg("mat2", "meta", "cpu", "wrapper_CUDA_mm")),
    ("CPU data, GPU index", lambda d: cpu(6)[torch.tensor([0, 2], device=d)],
     "indices should be either on cpu or on the same device as the indexed tensor (cpu)"),
    ("masked_fill with a CPU mask", lambda d: on(d, 3, 3).masked_fill(cpu(3, 3) > 0, 0.0),
     "expected self and mask to be on the same device, but got mask on cpu and self on meta"),
    ("masked_fill_ with a CPU mask", lambda d: on(d, 3, 3).masked_fill_(cpu(3, 3) > 0, 0.0),
     "expected self and mask to be on the same device, but got mask on cpu and self on meta"),
    ("masked_fill, CPU data, GPU mask", lambda d: cpu(3, 3).masked_fill(on(d, 3, 3) > 0, 0.0),
     "expected self and mask to be on the same device, but got mask on meta and self on cpu"),
    ("torch.bmm", lambda d: torch.bmm(cpu(2, 4, 3), on(d, 2, 3, 5)),
     per_arg("mat2", "meta", "cpu", "wrapper_CUDA_bmm")),
    ("batched @ matrix", lambda d: cpu(2, 4, 3) @ on(d, 3, 5), per_arg("mat2", "meta", "cpu", "wrapper_CUDA_mm")),
    ("matrix @ vector", lambda d: on(d, 5, 3) @ cpu(3), per_arg("mat", "meta", "cpu", "wrapper_CUDA_addmv_")),
    ("torch.dot", lambda d: torch.dot(on(d, 3), cpu(3)), per_arg("tensor", "cpu", "meta", "wrapper_CUDA__dot")),
    ("F.conv1d, one sequence", lambda d: F.conv1d(cpu(1, 3, 10), on(d, 2, 3, 3)),
     per_arg("weight", "meta", "cpu", "wrapper_CUDA___slow_conv2d_forward")),
    ("nn.Conv2d, one image", lambda d: nn.Conv2d(3, 8, 3).to(d)(cpu(1, 3, 10, 10)),
     per_arg("weight", "meta", "cpu", "wrapper_CUDA___slow_conv2d_forward")),
    pytest.param("nn.Conv2d, a batch", lambda d: nn.Conv2d(3, 8, 3).to(d)(cpu(16, 3, 10, 10)),
                 convolution_message(IN_CPU, "weight", IN_META, mkldnn=True), marks=MKLDNN),
    pytest.param("nn.Conv3d, a batch", lambda d: nn.Conv3d(3, 2, 3).to(d)(cpu(16, 3, 5, 5, 5)),
                 convolution_message(IN_CPU, "weight", IN_META, mkldnn=True), marks=MKLDNN),
    pytest.param("F.conv2d, only the bias on the GPU", lambda d: F.conv2d(cpu(16, 3, 6, 6), cpu(2, 3, 3, 3), on(d, 2)),
                 convolution_message(IN_CPU, "bias", IN_META, mkldnn=True), marks=MKLDNN),
    ("nn.ConvTranspose2d, one image", lambda d: nn.ConvTranspose2d(3, 2, 3).to(d)(cpu(1, 3, 5, 5)),
     per_arg("weight", "meta", "cpu", "wrapper_CUDA_slow_conv_transpose2d")),
    ("nn.Conv2d on the CPU, input on the GPU", lambda d: nn.Conv2d(3, 8, 3)(on(d, 1, 3, 10, 10)),
     convolution_message(IN_META, "weight", IN_CPU, mkldnn=False)),
    ("F.embedding", lambda d: F.embedding(torch.tensor([1, 2]), on(d, 5, 3)),
     per_arg("index", "cpu", "meta", "wrapper_CUDA__index_select")),
    ("nn.Embedding", lambda d: nn.Embedding(5, 3).to(d)(torch.tensor([[1, 2], [0, 4]])),
     per_arg("index", "cpu", "meta", "wrapper_CUDA__index_select")),
    ("x + y", lambda d: cpu(4, 3) + on(d, 4, 3), elementwise_message()),
    ("x * y", lambda d: on(d, 4, 3) * cpu(4, 3), elementwise_message()),
    ("torch.add", lambda d: torch.add(cpu(4, 3), on(d, 4, 3)), elementwise_message()),
    ("x += y", lambda d: cpu(4, 3).add_(on(d, 4, 3)), elementwise_message()),
    ("torch.where", lambda d: torch.where(cpu(4, 3) > 0, on(d, 4, 3), on(d, 4, 3)), elementwise_message()),
    ("a 0-dim GPU tensor and a CPU tensor", lambda d: cpu(4, 3) + on(d), elementwise_message()),
    ("torch.cat", lambda d: torch.cat([cpu(4, 3), on(d, 4, 3)]),
     per_arg("tensors", "meta", "cpu", "wrapper_CUDA_cat")),
    ("torch.stack", lambda d: torch.stack([on(d, 4, 3), cpu(4, 3)]),
     per_arg("tensors", "cpu", "meta", "wrapper_CUDA_cat")),
    ("F.cross_entropy, labels on the CPU", lambda d: F.cross_entropy(on(d, 4, 3), labels("cpu")),
     per_arg("target", "cpu", "meta", "wrapper_CUDA_nll_loss_forward")),
    ("F.cross_entropy, class weights on the CPU",
     lambda d: F.cross_entropy(on(d, 4, 3), labels(d), weight=torch.ones(3)),
     per_arg("weight", "cpu", "meta", "wrapper_CUDA_nll_loss_forward")),
    ("nn.NLLLoss with class weights", lambda d: nn.NLLLoss(weight=torch.ones(3))(on(d, 4, 3), labels(d)),
     per_arg("weight", "cpu", "meta", "wrapper_CUDA_nll_loss_forward")),
    ("F.mse_loss", lambda d: F.mse_loss(on(d, 4, 3), cpu(4, 3)), elementwise_message()),
    ("index_select with a CPU index", lambda d: on(d, 4, 3).index_select(0, torch.tensor([0])),
     per_arg("index", "cpu", "meta", "wrapper_CUDA__index_select")),
    ("addmm with a 0-dim CPU tensor", lambda d: torch.addmm(torch.tensor(1.0), on(d, 2, 2), on(d, 2, 2)),
     per_arg("mat1", "meta", "cpu", "wrapper_CUDA_addmm")),
    ("nn.LayerNorm", lambda d: nn.LayerNorm(3).to(d)(cpu(4, 3)),
     per_arg("weight", "meta", "cpu", "wrapper_CUDA__native_layer_norm")),
    ("under torch.inference_mode", lambda d: _inference(lambda: F.linear(cpu(4, 3), on(d, 5, 3))),
     per_arg("mat2", "meta", "cpu", "wrapper_CUDA_mm")),
]


def _id(case) -> str:
    return (case.values if hasattr(case, "values") else case)[0]


@pytest.mark.parametrize("case, call, message", MIXED, ids=[_id(c) for c in MIXED])
def test_mixing_meta_and_cpu_raises_what_a_gpu_raises(stand_in, case, call, message):
    with pytest.raises(RuntimeError) as info:
        call("meta")
    assert str(info.value) == message


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("case, call, message", MIXED, ids=[_id(c) for c in MIXED])
def test_a_real_gpu_says_the_same_with_cuda_for_meta(case, call, message):
    with pytest.raises(RuntimeError) as info:
        call("cuda:0")
    assert str(info.value).replace("cuda:0", "meta").replace("torch.cuda.", "torch.meta.") == message


@pytest.mark.parametrize("version, expected", [
    ("2.7.0", "Expected all tensors to be on the same device, but found at least two devices, meta and cpu! "
              "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)"),
    ("2.14.1", "Expected all tensors to be on the same device, but got mat1 is on cpu, different from other "
               "tensors on meta (when checking argument in method wrapper_CUDA_addmm)"),
])
def test_the_per_argument_wording_follows_the_version(version, expected):
    assert per_argument_message("mat1", "cpu", "meta", "wrapper_CUDA_addmm", version) == expected


def test_the_other_wordings():
    assert elementwise_message() == ("Expected all tensors to be on the same device, but found at least two devices, "
                                     "meta and cpu!")
    assert convolution_message(IN_CPU, "weight", IN_META, mkldnn=True) == (
        "Input type (torch.FloatTensor) and weight type (torch.meta.FloatTensor) should be the same or input should "
        "be a MKLDNN tensor and weight is a dense tensor")
    assert convolution_message(IN_META, "bias", IN_CPU, mkldnn=False) == (
        "Input type (torch.meta.FloatTensor) and bias type (torch.FloatTensor) should be the same")


#: More mixed calls a learner could make: each must raise, never hand back a tensor (with the stand-in off, some
#: of these return CPU tensors of uninitialised memory).
OTHERS = {
    "torch.outer": lambda: torch.outer(cpu(3), on("meta", 3)),
    "torch.kron": lambda: torch.kron(cpu(2, 2), on("meta", 2, 2)),
    "torch.cdist": lambda: torch.cdist(cpu(4, 3), on("meta", 4, 3)),
    "torch.tensordot": lambda: torch.tensordot(cpu(4, 3), on("meta", 3, 4), 1),
    "torch.einsum": lambda: torch.einsum("ij,kj->ik", cpu(4, 3), on("meta", 5, 3)),
    "F.bilinear": lambda: F.bilinear(cpu(4, 3), cpu(4, 3), on("meta", 2, 3, 3)),
    "torch.linalg.cross": lambda: torch.linalg.cross(cpu(4, 3), on("meta", 4, 3)),
    "torch.mm(out=)": lambda: torch.mm(cpu(4, 3), on("meta", 3, 4), out=torch.empty(4, 4)),
    "torch.add(out=)": lambda: torch.add(on("meta", 3), on("meta", 3), out=torch.empty(3)),
    "torch.gather": lambda: torch.gather(on("meta", 4, 3), 1, torch.zeros(4, 1, dtype=torch.long)),
    "Tensor.scatter": lambda: on("meta", 4, 3).scatter(1, torch.zeros(4, 1, dtype=torch.long), cpu(4, 3)),
    "torch.masked_select": lambda: torch.masked_select(on("meta", 4, 3), cpu(4, 3) > 0),
    "torch.take": lambda: torch.take(on("meta", 4, 3), torch.tensor([0])),
    "torch.clamp(min=tensor)": lambda: torch.clamp(on("meta", 4, 3), min=cpu(4, 3)),
    "torch.lerp": lambda: torch.lerp(cpu(3), on("meta", 3), 0.5),
    "torch.addcmul": lambda: torch.addcmul(cpu(3), on("meta", 3), cpu(3)),
    "torch.maximum": lambda: torch.maximum(cpu(3), on("meta", 3)),
    "x == y": lambda: cpu(3) == on("meta", 3),
    "torch.equal": lambda: torch.equal(cpu(3), on("meta", 3)),
    "F.cosine_similarity": lambda: F.cosine_similarity(cpu(4, 3), on("meta", 4, 3)),
    "F.binary_cross_entropy": lambda: F.binary_cross_entropy(torch.rand(4, device="meta"), torch.rand(4)),
    "F.binary_cross_entropy_with_logits": lambda: F.binary_cross_entropy_with_logits(on("meta", 4), torch.rand(4)),
    "F.l1_loss": lambda: F.l1_loss(on("meta", 4), cpu(4)),
    "F.huber_loss": lambda: F.huber_loss(on("meta", 4), cpu(4)),
    "F.smooth_l1_loss": lambda: F.smooth_l1_loss(on("meta", 4), cpu(4)),
    "nn.BatchNorm1d": lambda: nn.BatchNorm1d(3).to("meta")(cpu(4, 3)),
    "nn.GroupNorm": lambda: nn.GroupNorm(1, 3).to("meta")(cpu(4, 3)),
    "nn.LSTM": lambda: nn.LSTM(3, 4).to("meta")(cpu(1, 4, 3)),
    "nn.EmbeddingBag": lambda: nn.EmbeddingBag(5, 3).to("meta")(torch.tensor([[1, 2]])),
    "nn.MultiheadAttention": lambda: nn.MultiheadAttention(4, 2).to("meta")(cpu(2, 1, 4), cpu(2, 1, 4), cpu(2, 1, 4)),
    "nn.Conv2d with groups": lambda: nn.Conv2d(4, 4, 3, groups=4).to("meta")(cpu(1, 4, 8, 8)),
    "nn.Conv2d with padding='same'": lambda: nn.Conv2d(3, 4, 3, padding="same").to("meta")(cpu(1, 3, 8, 8)),
    "nn.Conv2d with dilation": lambda: nn.Conv2d(3, 4, 3, dilation=2).to("meta")(cpu(1, 3, 8, 8)),
    "nn.Conv3d, one volume": lambda: nn.Conv3d(3, 2, 3).to("meta")(cpu(1, 3, 5, 5, 5)),
    "F.pad, then +": lambda: F.pad(on("meta", 4, 3), (1, 1)) + cpu(4, 5),
}


@pytest.mark.parametrize("name", list(OTHERS))
def test_no_mixed_call_returns_a_tensor(stand_in, name):
    with pytest.raises((RuntimeError, NotImplementedError)) as info:
        OTHERS[name]()
    assert re.search(r"device|Input type|backend", str(info.value)), str(info.value)


def test_meta_alone_computes_garbage_that_the_stand_in_refuses():
    """PyTorch's own quirk, which the lessons teach once: a product of CPU and meta tensors lands on the CPU,
    full of uninitialised memory. If a PyTorch fixes this, the course can say so."""
    assert F.linear(cpu(4, 3), on("meta", 5, 3)).device.type == "cpu"
    assert F.conv1d(cpu(1, 3, 10), on("meta", 2, 3, 3)).device.type == "cpu"


def _set(x: torch.Tensor, index: torch.Tensor, value) -> torch.Tensor:
    x[index] = value
    return x


def _packed(padded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    packed = nn.utils.rnn.pack_padded_sequence(padded, lengths, batch_first=True)
    return packed.data, packed.batch_sizes


#: Calls a GPU accepts too, and the devices of what they return.
EDGES = {
    "0-dim CPU tensor + GPU tensor": (lambda: torch.tensor(2.0) + on("meta", 4, 3), ["meta"]),
    "GPU tensor * 0-dim CPU tensor": (lambda: on("meta", 4, 3) * torch.tensor(2.0), ["meta"]),
    "torch.where with 0-dim CPU tensors": (
        lambda: torch.where(on("meta", 4) > 0, torch.tensor(1.0), torch.tensor(0.0)), ["meta"]),
    "x[cpu_index]": (lambda: on("meta", 4, 3)[torch.tensor([0, 2])], ["meta"]),
    "x[cpu_mask]": (lambda: on("meta", 4, 3)[torch.ones(4, 3, dtype=torch.bool)], ["meta"]),
    "x[cpu_mask] = 0": (lambda: _set(on("meta", 4, 3), torch.ones(4, 3, dtype=torch.bool), 0.0), ["meta"]),
    "x[cpu_mask] = 0-dim CPU tensor": (
        lambda: _set(on("meta", 4, 3), torch.ones(4, dtype=torch.bool), torch.tensor(0.0)), ["meta"]),
    "x[cpu_index] = GPU tensor": (lambda: _set(on("meta", 4, 3), torch.tensor([1]), on("meta", 3)), ["meta"]),
    "pack_padded_sequence with CPU lengths": (lambda: _packed(on("meta", 3, 5, 2), torch.tensor([5, 3, 2])),
                                              ["meta", "cpu"]),
    "masked_fill with a 0-dim CPU value": (
        lambda: on("meta", 3).masked_fill(on("meta", 3) > 0, torch.tensor(1.0)), ["meta"]),
    "x.copy_(cpu)": (lambda: on("meta", 4, 3).copy_(cpu(4, 3)), ["meta"]),
    "torch.broadcast_tensors": (lambda: torch.broadcast_tensors(on("meta", 4, 3), cpu(3)), ["meta", "cpu"]),
}


@pytest.mark.parametrize("name", list(EDGES))
def test_pytorchs_own_leniencies_stay_allowed(stand_in, name):
    call, devices = EDGES[name]
    out = call()
    assert [t.device.type for t in (out if isinstance(out, (tuple, list)) else [out])] == devices


#: Code that does not mix devices, and a copy out of meta (PyTorch's own error, kept: meta has no data).
UNCHANGED = {
    "F.linear": lambda: F.linear(on("meta", 4, 3), on("meta", 5, 3), on("meta", 5)),
    "x @ w": lambda: on("meta", 2, 4, 3) @ on("meta", 3, 5),
    "nn.Conv2d": lambda: nn.Conv2d(3, 8, 3).to("meta")(on("meta", 1, 3, 10, 10)),
    "torch.cat": lambda: torch.cat([on("meta", 4, 3), on("meta", 2, 3)]),
    "F.cross_entropy": lambda: F.cross_entropy(on("meta", 4, 3), labels("meta")),
    "x + 1": lambda: on("meta", 4) + 1,
    "a CPU product": lambda: cpu(2, 2).fill_(1.0) @ cpu(2, 2).fill_(2.0),
    "Tensor.item on meta": lambda: on("meta", 1).item(),
    "masked_select on meta": lambda: torch.masked_select(on("meta", 4), on("meta", 4) > 0),
    "copying out of meta": lambda: cpu(3).copy_(on("meta", 3)),
}


def _outcome(call):
    try:
        out = call()
    except Exception as error:  # the same error, in the same words, is part of "unchanged"
        return type(error), str(error)
    return out.shape, out.dtype, out.device, out.tolist() if out.device.type == "cpu" else None


@pytest.mark.parametrize("name", list(UNCHANGED))
def test_code_that_does_not_mix_devices_is_unchanged(monkeypatch, name):
    monkeypatch.setattr(standin, "_note_pending", False)
    before = _outcome(UNCHANGED[name])
    standin.enable()
    try:
        assert _outcome(UNCHANGED[name]) == before
    finally:
        standin.disable()


def test_the_first_error_says_it_comes_from_the_stand_in_and_only_the_first(monkeypatch):
    monkeypatch.setattr(standin, "_note_pending", True)
    standin.enable()
    try:
        with pytest.raises(RuntimeError) as first:
            cpu(3) + on("meta", 3)
        with pytest.raises(RuntimeError) as second:
            cpu(3) + on("meta", 3)
    finally:
        standin.disable()
    assert str(first.value) == f"{elementwise_message()}\n{standin.NOTE}"
    assert str(second.value) == elementwise_message()
    assert "stand-in for a GPU" in standin.NOTE


def test_paused_lifts_it_for_a_block(stand_in):
    with standin.paused():
        assert standin.is_enabled()
        with standin.paused():   # nested: still off
            with pytest.raises(RuntimeError) as info:
                cpu(3) + on("meta", 3)
            assert str(info.value) != elementwise_message()
    with pytest.raises(RuntimeError, match="wrapper_CUDA_mm"):
        F.linear(cpu(4, 3), on("meta", 5, 3))


def test_disable_turns_it_off_and_both_switches_are_idempotent(monkeypatch):
    monkeypatch.setattr(standin, "_note_pending", False)
    standin.enable()
    standin.enable()
    assert standin.is_enabled()
    standin.disable()
    assert not standin.is_enabled()
    with pytest.raises(RuntimeError) as info:
        cpu(3) + on("meta", 3)
    assert str(info.value) != elementwise_message()
    standin.disable()
    with standin.paused():
        assert not standin.is_enabled()


def test_modes_pushed_after_it_survive_disable_and_paused(monkeypatch):
    monkeypatch.setattr(standin, "_note_pending", False)
    standin.enable()
    try:
        with torch.device("meta"):   # a function mode above the stand-in's
            with standin.paused():
                assert torch.ones(2).device.type == "meta"
            standin.disable()
            assert torch.ones(2).device.type == "meta"
        assert torch.ones(2).device.type == "cpu"
    finally:
        standin.disable()


def test_everyday_tools_still_work(stand_in):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert model.to("meta") is model and model[0].weight.device.type == "meta"
    assert copy.deepcopy(model)[2].bias.device.type == "meta"
    assert "device='meta'" in repr(on("meta", 2)) and "meta" in str(model[0].weight)
    buffer = io.BytesIO()
    torch.save({"meta": on("meta", 2, 3), "cpu": torch.arange(3)}, buffer)
    loaded = torch.load(io.BytesIO(buffer.getvalue()))
    assert loaded["meta"].device.type == "meta" and loaded["cpu"].tolist() == [0, 1, 2]
    import torch.utils.benchmark as benchmark
    x = cpu(8, 8)
    assert benchmark.Timer("x @ x", globals={"x": x}).timeit(3).mean > 0


# --- checks run as the grader runs them: with the stand-in paused -------------------------------------

def _mask_on_the_cpu(scores):              # lesson 04's bug: the mask made on the default device
    n = scores.shape[-1]
    return scores.masked_fill(torch.triu(torch.ones(n, n), diagonal=1).bool(), float("-inf"))


class _MatrixMadeInForward(nn.Module):    # a CPU matrix meets the input in `mm`: meta alone lets it through
    def __init__(self, features):
        super().__init__()

    def forward(self, x):
        return x @ torch.diag(torch.full((x.shape[-1],), 2.0, dtype=x.dtype))


class _PlainAttribute(nn.Module):         # the constant stays on the CPU: element-wise mixing
    def __init__(self, features):
        super().__init__()
        self.scale = torch.full((features,), 2.0)

    def forward(self, x):
        return x * self.scale


#: Answers that mix meta and CPU tensors (and, for contrast, references that pass).
ANSWERS = {
    "04.mask_future, mask on the CPU": ("04.mask_future", _mask_on_the_cpu),
    "06.scaler, matrix made in forward": ("06.scaler", _MatrixMadeInForward),
    "06.scaler, plain attribute": ("06.scaler", _PlainAttribute),
    "01.blank_like, plain zeros": ("01.blank_like", lambda t: torch.zeros(t.shape)),
    "04.mask_future, reference": ("04.mask_future", cu.exercises.get_exercise("04.mask_future").reference),
    "06.scaler, reference": ("06.scaler", cu.exercises.get_exercise("06.scaler").reference),
}


@pytest.mark.parametrize("name", list(ANSWERS))
def test_check_gives_the_same_verdict_with_the_stand_in_on(monkeypatch, name):
    """Check in a notebook (stand-in on, after a CPU setup) and the batch grader (never on) agree, to the word."""
    exercise_id, answer = ANSWERS[name]
    monkeypatch.setattr(standin, "_note_pending", True)
    off = cu.check(exercise_id, answer)
    standin.enable()
    try:
        on = cu.check(exercise_id, answer)
        assert standin.is_enabled()
    finally:
        standin.disable()
    assert (on.status, on.feedback, on.printed) == (off.status, off.feedback, off.printed)
    assert standin._note_pending            # the stand-in raised nothing while the answer was checked


def test_without_the_pause_those_answers_would_meet_the_stand_in(stand_in):
    """The control: unpaused, the stand-in answers the same mixes in other words than meta alone."""
    scores = torch.zeros(3, 3, device="meta")
    with pytest.raises(RuntimeError) as unpaused:
        _mask_on_the_cpu(scores)
    with standin.paused(), pytest.raises(RuntimeError) as paused:
        _mask_on_the_cpu(scores)
    assert str(unpaused.value) != str(paused.value)
    with pytest.raises(RuntimeError):
        _MatrixMadeInForward(3)(torch.ones(2, 3, device="meta"))
    with standin.paused():
        assert _MatrixMadeInForward(3)(torch.ones(2, 3, device="meta")).device.type == "meta"
