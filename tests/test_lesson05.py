"""Lesson 05 checks catch the realistic mistakes and say which one it was; the lesson's facts still hold."""
from __future__ import annotations

import itertools
import re
from types import SimpleNamespace

import pytest
import torch
from torch import nn

import course_utils as cu


def _dev(x):
    return x.device if isinstance(x, torch.Tensor) else x


# --- 05.is_on ----------------------------------------------------------------------------------

@pytest.mark.parametrize("answer, says, code", [
    (lambda x, w: _dev(x) == w, "never equals a string", "05.compared-device-with-string"),
    (lambda x, w: _dev(x) == torch.device(w), "has index None", "05.index-less-equals-indexed"),
    (lambda x, w: str(_dev(x)) == str(w), "has index None", "05.index-less-equals-indexed"),
    (lambda x, w: _dev(x).type == torch.device(w).type, "Comparing only `.type` is not enough",
     "05.ignored-device-index"),
    (lambda x, w: str(w) in str(_dev(x)), "`in` or `startswith`", "05.compared-device-text"),
    (lambda x, w: str(_dev(x)).startswith(str(w)), "`in` or `startswith`", "05.compared-device-text"),
    (lambda x, w: _dev(x).type == w, "compare a string", "05.compared-device-with-string"),
    (lambda x, w: (_dev(x).type == torch.device(w).type
                   and _dev(x).index == torch.device(w).index), "has index None", "05.index-less-equals-indexed"),
    (lambda x, w: x.device.type == torch.device(w).type, "a device has no `.device`", "05.device-of-a-device"),
    (lambda x, w: torch.tensor(_dev(x).type == torch.device(w).type), "Python bool", "any.returned-tensor"),
    (lambda x, w: int(_dev(x).type == torch.device(w).type), "return True or False", "any.wrong-type"),
])
def test_is_on_mistakes(answer, says, code):
    result = cu.check("05.is_on", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


@pytest.mark.parametrize("answer", [
    # symmetric reading: a missing index on either side matches any index
    lambda x, w: (_dev(x).type == torch.device(w).type
                  and None in (_dev(x).index, torch.device(w).index)
                  or _dev(x) == torch.device(w)),
    # through strings, carefully
    lambda x, w: (str(_dev(x)).split(":")[0] == str(torch.device(w)).split(":")[0]
                  and (":" not in str(torch.device(w)) or str(_dev(x)) == str(torch.device(w)))),
    # torch.device(x) accepts a device, so a tensor's device can be passed through it
    lambda x, w: (lambda a, b: a.type == b.type and b.index in (None, a.index))(
        torch.device(_dev(x)), torch.device(w)),
])
def test_is_on_accepts_valid_alternatives(answer):
    result = cu.check("05.is_on", answer)
    assert result.passed and result.code == "", result.feedback


# --- 05.model_device ----------------------------------------------------------------------------

def _all(m):
    return itertools.chain(m.parameters(), m.buffers())


def _unique(devices, raise_as=ValueError, message="spread over {}"):
    if not devices:
        return None
    if len(devices) > 1:
        raise raise_as(message.format(devices))
    return next(iter(devices))


def first_parameter(m):
    return next(m.parameters()).device


def first_parameter_or_none(m):
    p = next(m.parameters(), None)
    return None if p is None else p.device


def parameters_only(m):
    return _unique({p.device for p in m.parameters()})


def parameters_else_buffers(m):
    return _unique({p.device for p in m.parameters()} or {b.device for b in m.buffers()})


def buffers_only(m):
    return _unique({b.device for b in m.buffers()})


def own_tensors_only(m):
    return _unique({t.device for t in itertools.chain(m.parameters(recurse=False), m.buffers(recurse=False))})


def as_string(m):
    return _unique({str(t.device) for t in _all(m)})


def never_raises(m):
    devices = {t.device for t in _all(m)}
    return devices.pop() if devices else None


def first_tensor(m):
    for t in _all(m):
        return t.device
    return None


def raises_runtime_error(m):
    return _unique({t.device for t in _all(m)}, raise_as=RuntimeError)


def asserts(m):
    devices = {t.device for t in _all(m)}
    assert len(devices) <= 1, "model on several devices"
    return devices.pop() if devices else None


def vague_message(m):
    return _unique({t.device for t in _all(m)}, message="the model is on more than one device")


def cpu_when_empty(m):
    return _unique({t.device for t in _all(m)}) or torch.device("cpu")


def raises_when_empty(m):
    devices = {t.device for t in _all(m)}
    if len(devices) != 1:
        raise ValueError(f"expected one device, found {devices}")
    return devices.pop()


def returns_the_set(m):
    devices = {t.device for t in _all(m)}
    if len(devices) > 1:
        raise ValueError(f"spread over {devices}")
    return devices or None


def from_state_dict(m):
    return _unique({t.device for t in m.state_dict().values()})


@pytest.mark.parametrize("answer, says, code", [
    (first_parameter, "StopIteration", "05.first-parameter-only"),
    (first_parameter_or_none, "Buffers live on a device too", "05.ignored-buffers"),
    (parameters_only, "Buffers live on a device too", "05.ignored-buffers"),
    (parameters_else_buffers, "you ignored (some of) the buffers", "05.ignored-buffers"),
    (buffers_only, "Look at the parameters too", "05.ignored-parameters"),
    (own_tensors_only, "belong to its submodules", "05.own-tensors-only"),
    (as_string, "returned the string 'cpu'", "02.returned-device-string"),
    (never_raises, "instead of raising ValueError", "05.split-model-has-one-device"),
    (first_tensor, "the device of the first parameter", "05.first-parameter-only"),
    (raises_runtime_error, "you raised RuntimeError", "05.split-model-not-value-error"),
    (asserts, "you raised AssertionError", "05.split-model-not-value-error"),
    (vague_message, "does not name the devices", "05.split-model-message-vague"),
    (cpu_when_empty, "return None. You returned `cpu`", "05.empty-module-has-device"),
    (raises_when_empty, "is not an error: return None", "05.empty-module-raises"),
    (returns_the_set, "Return a single `torch.device`", "any.wrong-type"),
    (from_state_dict, "non-persistent buffer", "05.state-dict-has-all-tensors"),
])
def test_model_device_mistakes(answer, says, code):
    result = cu.check("05.model_device", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


def test_ignoring_buffers_is_caught_on_the_spread_module_from_the_task():
    """Parameters on cpu, a buffer on meta: an answer blind to buffers returns cpu and is told so."""
    from course_utils.lessons.l05_device_attribute import _Scaled, _check_spread
    from course_utils.grading import Wrong
    module = _Scaled("meta")
    with pytest.raises(Wrong, match="ignored") as raised:
        _check_spread(parameters_else_buffers, module, "the module", {torch.device("cpu")},
                      {torch.device("meta")})
    assert raised.value.code == "05.ignored-buffers"


@pytest.mark.parametrize("answer", [
    lambda m: _unique({t.device for t in _all(m)}),
    lambda m: _unique({t.device for _, t in itertools.chain(m.named_parameters(), m.named_buffers())},
                      message="parameters/buffers on: {}"),
    lambda m: _unique(set(t.device for t in list(m.parameters()) + list(m.buffers())),
                      message="found " + "{}"),
])
def test_model_device_accepts_valid_alternatives(answer):
    result = cu.check("05.model_device", answer)
    assert result.passed and result.code == "", result.feedback


class _FakeSpread:
    """Stands in for a model with a parameter on cuda:0 and a buffer on the CPU, so that the message
    check meets indexed devices on a machine without a GPU (answers only read ``.device``)."""

    def parameters(self):
        return iter([SimpleNamespace(device=torch.device("cuda", 0))])

    def buffers(self):
        return iter([SimpleNamespace(device=torch.device("cpu"))])


def _check_fake_spread(answer):
    from course_utils.lessons.l05_device_attribute import _check_spread
    _check_spread(answer, _FakeSpread(), "a model on cuda:0 and cpu", {torch.device("cuda", 0)},
                  {torch.device("cpu")})


def _from_hint_3():
    """``model_device`` assembled from the code in hint 3, statement by statement, as a learner would."""
    from course_utils.exercises import get_exercise
    statements = re.findall(r"`([^`]+)`", get_exercise("05.model_device").hints[2])
    source = "def model_device(module):\n" + "".join(f"    {line}\n" for line in statements)
    namespace = {}
    exec(source, namespace)
    return namespace["model_device"]


def test_a_set_of_devices_in_the_message_names_them():
    """`f'spread over {devices}'` shows `device(type='cuda', index=0)`, not `cuda:0`: still a correct answer."""
    def set_in_message(m):
        devices = {t.device for t in _all(m)}
        if len(devices) > 1:
            raise ValueError(f"spread over {devices}")
        return devices.pop() if devices else None
    _check_fake_spread(set_in_message)
    result = cu.check("05.model_device", set_in_message)
    assert result.passed and result.code == "", result.feedback


def test_hint_3_followed_literally_passes_and_reads_well():
    answer = _from_hint_3()
    result = cu.check("05.model_device", answer)
    assert result.passed and result.code == "", result.feedback
    _check_fake_spread(answer)
    with pytest.raises(ValueError) as raised:
        answer(_FakeSpread())
    assert "cpu" in str(raised.value) and "cuda:0" in str(raised.value) and "device(" not in str(raised.value)


@pytest.mark.parametrize("message", [
    "spread over cuda:0",
    f"spread over {torch.device('cuda', 0)!r}",
    "spread over cpu",
    "spread over cuda and cpu",                     # `cuda` is not `cuda:0`
])
def test_a_message_naming_one_device_still_fails(message):
    from course_utils.grading import Wrong

    def one_named(m):
        raise ValueError(message)
    with pytest.raises(Wrong, match="does not name the devices") as raised:
        _check_fake_spread(one_named)
    assert raised.value.code == "05.split-model-message-vague"


@pytest.mark.gpu
def test_model_device_rejects_an_index_less_device_on_the_accelerator():
    def rebuilt(m):
        devices = {t.device for t in _all(m)}
        if len(devices) > 1:
            raise ValueError(f"spread over {devices}")
        return torch.device(devices.pop().type) if devices else None
    result = cu.check("05.model_device", rebuilt)
    assert not result.passed and "has index None" in result.feedback, result.feedback
    assert result.code == "05.index-less-equals-indexed"


@pytest.mark.gpu
def test_is_on_is_checked_on_accelerator_tensors():
    seen = []

    def spy(x, wanted):
        if isinstance(x, torch.Tensor):             # built devices such as cuda:1 do not count
            seen.append(x.device.type)
        from course_utils.lessons.l05_device_attribute import is_on
        return is_on(x, wanted)
    result = cu.check("05.is_on", spy)
    assert result.passed and result.code == "", result.feedback
    assert cu.accelerator().type in seen


# --- facts the notebook states ----------------------------------------------------------------

def test_fact_cuda_without_index_is_not_cuda0():
    assert torch.device("cuda") != torch.device("cuda:0")
    assert torch.device("cuda").index is None and torch.device("cuda:0").index == 0
    assert torch.device("cuda", 1) == torch.device("cuda:1") and str(torch.device("cuda", 0)) == "cuda:0"


def test_fact_a_device_never_equals_a_string():
    assert (torch.device("cpu") == "cpu") is False
    assert (torch.ones(1).device == "cpu") is False
    assert ("cpu" == torch.device("cpu")) is False
    assert torch.ones(1).device == torch.device("cpu") and torch.ones(1).device.type == "cpu"


def test_fact_cpu_and_meta_tensors_report_no_index():
    assert torch.ones(1).device.index is None
    assert torch.ones(1, device="meta").device.index is None
    assert isinstance(torch.ones(1).device, torch.device)


def test_fact_text_comparison_trap():
    assert "cuda:1" in str(torch.device("cuda", 10))


def test_fact_module_has_no_device_attribute():
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'device'"):
        nn.Linear(4, 2).device  # noqa: B018
    assert hasattr(torch.ones(1), "device")


def test_fact_next_parameters_of_parameter_free_module():
    with pytest.raises(StopIteration):
        next(nn.ReLU().parameters())


def test_fact_batchnorm_without_affine_has_buffers_only():
    stats = nn.BatchNorm1d(8, affine=False)
    assert list(stats.parameters()) == []
    assert [n for n, _ in stats.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    assert all(b.device.type == "cpu" for b in stats.buffers())


def test_fact_module_to_moves_parameters_and_buffers_in_place():
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))
    assert model.to("meta") is model
    assert {t.device.type for t in itertools.chain(model.parameters(), model.buffers())} == {"meta"}


def test_fact_split_model_first_parameter():
    """The notebook's split model: its first parameter answers `cpu` although the last layer moved (the model raises
    on the lesson's GPU in the notebook's run, and on a real one in the `gpu` test below)."""
    half = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    half[2].to("meta")                          # any device but the CPU
    assert next(half.parameters()).device.type == "cpu" and half[2].weight.device.type == "meta"


def test_fact_state_dict_leaves_out_non_persistent_buffers():
    m = nn.Module()
    m.register_buffer("mask", torch.ones(3, device="meta"), persistent=False)
    assert "mask" not in m.state_dict() and [n for n, _ in m.named_buffers()] == ["mask"]


@pytest.mark.gpu
def test_fact_an_accelerator_tensor_reports_its_index():
    acc = cu.accelerator()
    t = torch.ones(2, device=acc.type)
    assert t.device.index == torch.accelerator.current_device_index()
    assert t.device != torch.device(acc.type)


def _quotes_before(code_start):
    """The `quoted` texts of the Markdown cell right before notebook 05's code cell that starts with
    ``code_start``, with line breaks turned into spaces (as Markdown shows them)."""
    from nbtools import NOTEBOOK_DIR, load, source
    cells = load(NOTEBOOK_DIR / "05_device_attribute.ipynb")["cells"]
    at = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and source(c).startswith(code_start))
    return re.findall(r"`([^`]+)`", " ".join(source(cells[at - 1]).split()))


#: How the message begins when a Linear layer on the accelerator meets a CPU input, by device type, in every
#: PyTorch the course supports. CUDA's `addmm` checks argument by argument and names `mat1`; MPS's linear kernel
#: checks its `input` itself.
LINEAR_MISMATCH = {
    "cuda": r"Expected all tensors to be on the same device, but got mat1 is on cpu, different from other "
            r"tensors on cuda:\d+",
    "mps": r"Tensor for argument input is on cpu but expected on mps",
}


def _linear_mismatch(device_type: str) -> str | None:
    """The pattern for this device type (None for one the lesson does not quote)."""
    return LINEAR_MISMATCH.get(device_type)


def test_fact_the_notebook_quotes_the_split_model_message_of_each_device():
    quotes = _quotes_before("half_moved(torch.randn(3, 4))")
    for pattern in LINEAR_MISMATCH.values():
        assert any(re.fullmatch(pattern, q) for q in quotes), (pattern, quotes)


def test_fact_the_split_model_message_is_quoted_as_the_supported_versions_print_it():
    """The older wording of PyTorch 2.7 (below the course's floor) is no longer quoted."""
    from nbtools import NOTEBOOK_DIR, load, source
    cells = load(NOTEBOOK_DIR / "05_device_attribute.ipynb")["cells"]
    at = next(i for i, c in enumerate(cells) if source(c).startswith("half_moved(torch.randn(3, 4))"))
    prose = " ".join(source(cells[at - 1]).split())
    assert "PyTorch 2.7" not in prose and "found at least two devices, cuda:0 and cpu!" not in prose


@pytest.mark.gpu
def test_fact_gpu_mismatch_message_is_the_one_the_notebook_quotes():
    acc = cu.accelerator()
    half = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    half[2].to(acc.type)
    with pytest.raises(RuntimeError) as raised:
        half(torch.randn(3, 4))
    message = str(raised.value)
    pattern = _linear_mismatch(acc.type)
    if pattern is not None:
        assert re.match(pattern, message), message
        assert any(message.startswith(q) for q in _quotes_before("half_moved(torch.randn(3, 4))")), message
    else:                                               # XPU and others: at least both devices are named
        assert "cpu" in message and acc.type in message, message


# --- section 5: device memory, 05.training_bytes -------------------------------------------------

from course_utils.lessons.l05_training_bytes import training_bytes as _training_bytes

_COPIES = {"sgd": 2, "momentum": 3, "adam": 4}
_STATE = {"sgd": 0, "momentum": 1, "adam": 2}


def _pbytes(m):
    return sum(p.numel() * p.element_size() for p in m.parameters())


def _bbytes(m):
    return sum(b.numel() * b.element_size() for b in m.buffers())


@pytest.mark.parametrize("answer, says, code", [
    (lambda m, o: _pbytes(m), "weights alone", "05.gradients-not-counted"),
    (lambda m, o: (1 + _STATE[o]) * _pbytes(m), "gradient", "05.gradients-not-counted"),
    (lambda m, o: {"sgd": 2, "momentum": 3, "adam": 3}[o] * _pbytes(m), "**two** moments",
     "05.adam-state-undercounted"),
    (lambda m, o: {"sgd": 2, "momentum": 3, "adam": 2}[o] * _pbytes(m), "**two** moments",
     "05.adam-state-undercounted"),
    (lambda m, o: {"sgd": 2, "momentum": 2, "adam": 4}[o] * _pbytes(m), "momentum_buffer", "05.momentum-state-missed"),
    (lambda m, o: {"sgd": 3, "momentum": 3, "adam": 4}[o] * _pbytes(m), "Plain SGD (no momentum) keeps no state",
     "05.plain-sgd-has-state"),
    (lambda m, o: _COPIES[o] * (_pbytes(m) + _bbytes(m)), "You counted the buffers", "05.counted-buffers"),
    (lambda m, o: _COPIES[o] * _pbytes(m) + _bbytes(m), "You counted the buffers", "05.counted-buffers"),
    (lambda m, o: _COPIES[o] * 4 * sum(p.numel() for p in m.parameters()), "4 bytes for every element",
     "01.assumed-4-bytes"),
    (lambda m, o: _COPIES[o] * sum(p.numel() for p in m.parameters()), "number of elements, not bytes",
     "01.counted-elements"),
    (lambda m, o: float(_COPIES[o] * _pbytes(m)), "return an int", "any.wrong-type"),
    (lambda m, o: torch.tensor(_COPIES[o] * _pbytes(m)), "plain Python int", "any.returned-tensor"),
    (lambda m, o: None, "as an int", "any.wrong-type"),
    (lambda m, o: _COPIES[o] * sum(p.sum().item() for p in m.parameters()), "not from its values", "any.wrong-type"),
    (lambda m, o: {"sgd": 2, "adam": 4}[o] * _pbytes(m), "KeyError", "any.raised"),
    (lambda m, o: _COPIES[o] * _pbytes(m) + 1, "Count weights, gradients and the optimizer's state",
     "any.wrong-value"),
])
def test_training_bytes_mistakes(answer, says, code):
    result = cu.check("05.training_bytes", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


@pytest.mark.parametrize("answer", [
    _training_bytes,
    lambda m, o: sum(p.nelement() * p.element_size() for p in m.parameters()) * _COPIES[o],
    lambda m, o: sum(p.numel() * torch.finfo(p.dtype).bits // 8 for p in m.parameters()) * _COPIES[o],
    lambda m, o: sum(_COPIES[o] * p.untyped_storage().nbytes() if p.device.type != "meta"
                     else _COPIES[o] * p.numel() * p.element_size() for p in m.parameters()),
])
def test_training_bytes_accepts_valid_alternatives(answer):
    result = cu.check("05.training_bytes", answer)
    assert result.passed and result.code == "", result.feedback


def test_training_bytes_stub_is_not_attempted():
    def training_bytes(model, optimizer):
        raise NotImplementedError
    result = cu.check("05.training_bytes", training_bytes)
    assert not result.passed and "not attempted" in result.feedback.lower(), result.feedback
    assert result.code == "any.not-attempted"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name, make, keys", [
    ("momentum", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), ("momentum_buffer",)),
    ("adam", lambda ps: torch.optim.Adam(ps), ("exp_avg", "exp_avg_sq")),
    ("sgd", lambda ps: torch.optim.SGD(ps, lr=0.1), ()),
])
def test_fact_optimizer_state_after_a_real_step_matches_the_count(dtype, name, make, keys):
    """The reference's count is what a real optimizer holds after one step: gradients and state tensors, each the
    parameter's size and dtype (Adam's 0-dim `step` counter left out, as the notebook says)."""
    model = nn.Sequential(nn.Linear(7, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 3)).to(dtype)
    opt = make(model.parameters())
    model(torch.randn(4, 7, dtype=dtype)).sum().backward()
    opt.step()
    params = list(model.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in params)
    state = sum(opt.state[p][k].numel() * opt.state[p][k].element_size() for p in params for k in keys)
    for p in params:
        for k in keys:
            assert opt.state[p][k].dtype == p.dtype and opt.state[p][k].shape == p.shape
        if name == "adam":
            assert set(opt.state[p]) == {"step", "exp_avg", "exp_avg_sq"} and opt.state[p]["step"].dim() == 0
        if name == "sgd":
            assert opt.state[p].get("momentum_buffer") is None
    assert _pbytes(model) + grads + state == _training_bytes(model, name)


def test_fact_adam_on_a_billion_float32_parameters_is_16_gb():
    billion = nn.Linear(100_000, 10_000, bias=False, device="meta")
    assert sum(p.numel() for p in billion.parameters()) == 10**9
    assert _training_bytes(billion, "adam") == 16 * 10**9
    from course_utils.quizzes import get_quiz
    quiz = get_quiz("05.adam_memory")
    assert quiz.options[quiz.answer] == "16 GB"


def test_fact_the_will_it_fit_layer_on_meta():
    huge = nn.Linear(50_000, 50_000, device="meta")
    weights = _pbytes(huge)
    assert weights == (50_000 * 50_000 + 50_000) * 4 and weights < 16e9 < 2 * weights
    assert _training_bytes(huge, "adam") == 4 * weights


def test_fact_no_grad_and_inference_mode_keep_no_graph():
    net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(3, 8)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = net(x)
        assert out.requires_grad and out.grad_fn is not None and saved
        saved.clear()
        with torch.no_grad():
            quiet = net(x)
        with torch.inference_mode():
            inferred = net(x)
    assert not saved
    for o in (quiet, inferred):
        assert not o.requires_grad and o.grad_fn is None
    assert inferred.is_inference() and not quiet.is_inference()


def test_fact_del_drops_a_name_not_the_tensor():
    import weakref
    big = torch.empty(10, 10)
    also = big
    alive = weakref.ref(big)
    del big
    assert alive() is not None
    del also
    assert alive() is None


def test_fact_out_of_memory_error_is_a_runtime_error():
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)


def test_fact_the_notebook_quotes_the_rounded_size():
    """4,000,000 bytes in 512-byte blocks, the number the notebook prints for a GPU."""
    from nbtools import NOTEBOOK_DIR, load, source
    text = " ".join(source(c) for c in load(NOTEBOOK_DIR / "05_device_attribute.ipynb")["cells"])
    assert f"{-(-4_000_000 // 512) * 512:,}" == "4,000,256" and "4,000,256" in text


def _cuda_or_skip():
    acc = cu.accelerator()
    if acc is None or acc.type != "cuda":
        pytest.skip("the caching-allocator facts are CUDA's")
    return torch.device("cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("shape, dtype", [((1000, 1000), torch.float32), ((3,), torch.float32),
                                          ((1001, 3), torch.float16), ((2_000_001,), torch.uint8)])
def test_fact_memory_allocated_grows_by_the_rounded_size_and_drops_after_del(shape, dtype):
    dev = _cuda_or_skip()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    x = torch.empty(shape, dtype=dtype, device=dev)
    nbytes = x.numel() * x.element_size()
    assert torch.cuda.memory_allocated() - before == max(512, -(-nbytes // 512) * 512)
    held = torch.cuda.memory_reserved()
    assert held >= torch.cuda.memory_allocated()
    del x
    assert torch.cuda.memory_allocated() == before
    assert torch.cuda.memory_reserved() == held           # the block stays in PyTorch's cache


@pytest.mark.gpu
def test_fact_empty_cache_returns_unused_blocks_but_not_live_tensors():
    dev = _cuda_or_skip()
    torch.cuda.empty_cache()
    kept = torch.ones(1000, 1000, device=dev)
    base_alloc, base_reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    x = torch.empty(16_000_000, device=dev)                # 64 MB: too big for the free part of `kept`'s segment
    del x
    assert torch.cuda.memory_allocated() == base_alloc
    with_cache = torch.cuda.memory_reserved()
    assert with_cache > base_reserved
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() < with_cache
    assert torch.cuda.memory_allocated() == base_alloc and kept.sum().item() == 1_000_000


def test_fact_a_gpu_tensors_reported_device_is_not_the_index_less_request():
    """Quiz 05.gpu_tensor_device: the device a GPU tensor reports has its index, so only `.type` matches `cuda`."""
    reported = torch.device("cuda", 0)
    assert reported.type == "cuda" and reported != torch.device("cuda") and str(reported) != "cuda"
    from course_utils.quizzes import get_quiz
    quiz = get_quiz("05.gpu_tensor_device")
    assert "type" in quiz.options[quiz.answer]


def test_memory_that_nvidia_smi_shows_after_del_is_on_the_core_path():
    """One of the problems learners meet most: the section, its measuring cell and the summary's line come before
    "Going further"; without CUDA the cell shows a recorded H100 run, labelled as one."""
    from nbtools import NOTEBOOK_DIR, load, source
    cells = [source(c) for c in load(NOTEBOOK_DIR / "05_device_attribute.ipynb")["cells"]]
    further = next(i for i, s in enumerate(cells) if s.startswith("## Going further"))
    section = next(i for i, s in enumerate(cells) if s.startswith("### Memory that `nvidia-smi` still shows"))
    assert section < further and "torch.cuda.memory_reserved()" in cells[section + 1]
    assert "What the cell printed on" in cells[section + 1] and "an NVIDIA H100" in cells[section + 1] and "4,000,256" in cells[section + 1]
    assert any("empty_cache()" in s and "nvidia-smi" in s for s in cells[section:further] if s.startswith("## Summary"))
