"""Lesson 06 checks catch the realistic mistakes and say which one it was; the lesson's facts still hold."""
from __future__ import annotations

import io

import pytest
import torch
from torch import nn

import course_utils as cu
from course_utils.gpusim.rules import elementwise_message
from course_utils.mismatch import explain_devices, save_as_gpu_checkpoint


# --- 06.find_mismatches ------------------------------------------------------------------------

def _named(model, inputs):
    return [*model.named_parameters(), *model.named_buffers(), *inputs.items()]


def ignores_buffers(model, inputs, device):
    d = torch.device(device)
    return sorted(n for n, t in [*model.named_parameters(), *inputs.items()] if t.device != d)


def ignores_inputs(model, inputs, device):
    d = torch.device(device)
    return sorted(n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.device != d)


def ignores_parameters(model, inputs, device):
    d = torch.device(device)
    return sorted(n for n, t in [*model.named_buffers(), *inputs.items()] if t.device != d)


def unsorted(model, inputs, device):
    d = torch.device(device)
    return [n for n, t in _named(model, inputs) if t.device != d]


def compares_with_string(model, inputs, device):
    return sorted(n for n, t in _named(model, inputs) if t.device != device)


def compares_str_of_device(model, inputs, device):
    return sorted(n for n, t in _named(model, inputs) if str(t.device) != device)


def compares_type_only(model, inputs, device):
    d = torch.device(device)
    return sorted(n for n, t in _named(model, inputs) if t.device.type != d.type)


def uses_state_dict(model, inputs, device):
    d = torch.device(device)
    return sorted(n for n, t in [*model.state_dict().items(), *inputs.items()] if t.device != d)


def inverted(model, inputs, device):
    d = torch.device(device)
    return sorted(n for n, t in _named(model, inputs) if t.device == d)


def returns_a_set(model, inputs, device):
    d = torch.device(device)
    return {n for n, t in _named(model, inputs) if t.device != d}


def returns_tensors(model, inputs, device):
    d = torch.device(device)
    return [t for n, t in sorted(_named(model, inputs), key=lambda p: p[0]) if t.device != d]


def returns_pairs(model, inputs, device):
    d = torch.device(device)
    return sorted(((n, t) for n, t in _named(model, inputs) if t.device != d), key=lambda p: p[0])


def short_names(model, inputs, device):
    d = torch.device(device)
    return sorted(n.split(".")[-1] for n, t in _named(model, inputs) if t.device != d)


def moves_the_model(model, inputs, device):
    model.to(torch.device(device) if torch.device(device).type in ("cpu", "meta") else "cpu")
    return sorted(n for n, t in inputs.items() if t.device != torch.device(device))


def forgets_return(model, inputs, device):
    sorted(n for n, t in _named(model, inputs) if t.device != torch.device(device))


def moves_to_compare(model, inputs, device):
    return sorted(n for n, t in _named(model, inputs) if t.to(device) is not t)


def duplicates(model, inputs, device):
    d = torch.device(device)
    return sorted(n for n, t in [*_named(model, inputs), *model.state_dict().items()] if t.device != d)


def probes_the_device(model, inputs, device):   # makes a tensor on `device`: fails where the device is not real
    d = torch.empty(0, device=device).device
    return sorted(n for n, t in _named(model, inputs) if t.device != d)


@pytest.mark.parametrize("answer, says, code", [
    (ignores_buffers, "You missed buffers (scale)", "06.forgot-buffers"),
    (ignores_inputs, "You missed inputs (x)", "06.forgot-inputs"),
    (ignores_parameters, "You missed parameters", "06.forgot-parameters"),
    (unsorted, "wrong order", "any.wrong-value"),
    (compares_with_string, "a torch.device never equals a string", "06.device-compared-with-string"),
    (compares_str_of_device, "comparing it with a string such as `str(t.device)`", "06.device-compared-with-string"),
    (compares_type_only, "ignores the device index", "06.ignored-device-index"),
    (uses_state_dict, "persistent=False", "06.used-state-dict"),
    (inverted, "ARE on the device", "06.listed-tensors-on-device"),
    (returns_a_set, "a set has no order", "any.wrong-type"),
    (returns_tensors, "not the names themselves", "any.wrong-type"),
    (returns_pairs, "return just the names", "any.wrong-type"),
    (short_names, "full dotted names", "06.short-tensor-names"),
    (moves_the_model, "moved the model's tensors", "06.moves-tensors-to-check"),
    (forgets_return, "forget the `return`", "any.wrong-type"),
    (duplicates, "appear twice", "any.wrong-value"),
])
def test_find_mismatches_mistakes(answer, says, code):
    result = cu.check("06.find_mismatches", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device can be built here")
def test_find_mismatches_an_answer_that_puts_a_tensor_on_the_device_fails_on_the_simulated_gpus():
    result = cu.check("06.find_mismatches", probes_the_device)
    assert not result.passed and "don't move them" in result.feedback, result.feedback
    assert result.code == "06.moves-tensors-to-check", result.code


def test_find_mismatches_reading_meta_tensors_is_not_taken_for_the_stub():
    result = cu.check("06.find_mismatches", moves_to_compare)   # meta -> cpu copies raise NotImplementedError here
    assert not result.passed and "read the values of a tensor" in result.feedback, result.feedback
    assert result.code == "any.read-meta-data", result.code


def test_find_mismatches_feedback_names_the_case():
    result = cu.check("06.find_mismatches", ignores_buffers)
    assert "a buffer (`scale`) left on the CPU" in result.feedback and "'scale'" in result.feedback


def drops_the_head(model, inputs, device):   # where the head is off the device: lists a body weight instead
    want = cu.check.__globals__["get_exercise"]("06.find_mismatches").reference(model, inputs, device)
    kept = [n for n in want if not n.startswith("head.")]
    return sorted(kept + ["body.0.weight"]) if kept != want else want


def test_find_mismatches_feedback_shows_the_names_missing_and_extra_not_two_cut_lists():
    """Lists cut to their first names looked the same; the feedback names what differs, each list whole."""
    result = cu.check("06.find_mismatches", drops_the_head)
    assert not result.passed and "your list differs from the answer: it misses 'head.bias', 'head.weight'; " \
        "it has extra 'body.0.weight'." in result.feedback, result.feedback
    assert "..." not in result.feedback.splitlines()[0] and "the answer is [" not in result.feedback
    result = cu.check("06.find_mismatches", unsorted)
    assert "your list differs from the answer: the same names in another order." in result.feedback, result.feedback


def is_on(x, wanted):  # lesson 05's reference: a target without an index matches any index
    actual, wanted = x.device, torch.device(wanted)
    return actual.type == wanted.type and (wanted.index is None or actual.index == wanted.index)


@pytest.mark.parametrize("answer", [
    lambda model, inputs, device: sorted(n for n, t in _named(model, inputs) if str(t.device) != str(device)),
    lambda model, inputs, device: sorted(
        n for n, t in _named(model, inputs)
        if (t.device.type, t.device.index) != (torch.device(device).type, torch.device(device).index)),
    lambda model, inputs, device: sorted(n for n, t in _named(model, inputs) if not is_on(t, device)),
    lambda model, inputs, device: sorted(
        [n for n, p in model.named_parameters() if p.device != torch.device(device)]
        + [n for n, b in model.named_buffers() if b.device != torch.device(device)]
        + [k for k in inputs if inputs[k].device != torch.device(device)]),
])
def test_find_mismatches_accepts_valid_alternatives(answer):
    result = cu.check("06.find_mismatches", answer)
    assert result.passed and result.code == "", result.feedback


@pytest.mark.gpu
def test_find_mismatches_is_checked_on_the_accelerator():
    seen = set()

    def spy(model, inputs, device):
        seen.update(t.device.type for _, t in _named(model, inputs))
        return sorted(n for n, t in _named(model, inputs) if t.device != torch.device(device))
    assert cu.check("06.find_mismatches", spy).passed
    assert cu.accelerator().type in seen


# --- 06.scaler -----------------------------------------------------------------------------------

class PlainAttribute(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = torch.full((features,), 2.0)

    def forward(self, x):
        return x * self.scale


class PlainAttributeMovedInForward(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = torch.full((features,), 2.0)

    def forward(self, x):
        return x * self.scale.to(x.device)


class TrainableConstant(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.full((features,), 2.0))

    def forward(self, x):
        return x * self.scale


class FrozenParameter(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.full((features,), 2.0), requires_grad=False)

    def forward(self, x):
        return x * self.scale


class NoSuperInit(nn.Module):
    def __init__(self, features):  # noqa: super().__init__() forgotten on purpose
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return x * self.scale


class NoSuperInitPlain(nn.Module):
    def __init__(self, features):  # noqa: super().__init__() forgotten on purpose
        self.scale = torch.full((features,), 2.0)

    def forward(self, x):
        return x * self.scale


class Ones(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.ones(features))

    def forward(self, x):
        return x * self.scale


class MadeInForward(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return x * torch.full((x.shape[-1],), 2.0)   # a new CPU tensor every call


class NoTensorAtAll(nn.Module):
    def __init__(self, features):
        super().__init__()

    def forward(self, x):
        return x * 2


class InPlace(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return x.mul_(self.scale)


class Float64Constant(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0, dtype=torch.float64))

    def forward(self, x):
        return x * self.scale


class ScalarConstant(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return x * self.scale


class NotAModule:
    def __init__(self, features):
        self.scale = torch.full((features,), 2.0)

    def __call__(self, x):
        return x * self.scale


class ConstantInAList(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.constants = [torch.full((features,), 2.0)]

    def forward(self, x):
        return x * self.constants[0]


DEVICE = torch.device("meta")   # a notebook's global `device`, used inside the module (meta stands in for a GPU)


class ConstantOnTheGlobalDevice(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0, device=DEVICE))

    def forward(self, x):
        return x * self.scale.to(x.device)


class OutputToTheGlobalDevice(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return (x * self.scale).to(DEVICE)


class OwnToForgetsReturn(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def to(self, *args, **kwargs):   # noqa: moves, but returns None
        super().to(*args, **kwargs)

    def forward(self, x):
        return x * self.scale


@pytest.mark.parametrize("answer, says, code", [
    (PlainAttribute, "plain tensor attribute. After `Scaler(3).to(\"meta\")` it is still on cpu",
     "06.plain-tensor-attribute"),
    (PlainAttributeMovedInForward, "plain tensor attribute", "06.plain-tensor-attribute"),
    (TrainableConstant, "`nn.Parameter` is trainable", "06.constant-as-parameter"),
    (FrozenParameter, "Even with requires_grad=False it is still a parameter", "06.frozen-parameter-as-constant"),
    (NoSuperInit, "must call `super().__init__()`", "06.no-super-init"),
    (NoSuperInitPlain, "never calls `super().__init__()`", "06.no-super-init"),
    (Ones, "not twos", "any.wrong-value"),
    (MadeInForward, "a tensor created there with no device", "06.tensor-made-in-forward"),
    (NoTensorAtAll, "holds no tensor", "06.plain-number-for-constant"),
    (InPlace, "changed its input in place", "any.wrong-value"),
    (Float64Constant, "Keep the input's dtype", "any.wrong-dtype"),
    (ScalarConstant, "vector of 3 twos", "any.wrong-shape"),
    (NotAModule, "subclass `nn.Module`", "any.wrong-type"),
    (ConstantInAList, "`constants[0]` is a plain tensor attribute", "06.plain-tensor-attribute"),
    (ConstantOnTheGlobalDevice, "already holds tensors off the CPU", "06.constant-placed-in-init"),
    (OutputToTheGlobalDevice, "compute where the input is", "06.output-off-input-device"),
    (OwnToForgetsReturn, "don't override `to`", "06.overrode-module-to"),
])
def test_scaler_mistakes(answer, says, code):
    result = cu.check("06.scaler", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


class NonPersistent(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0), persistent=False)

    def forward(self, x):
        return x * self.scale


class IntegerTwos(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.register_buffer("twos", 2 * torch.ones(features, dtype=torch.int64))

    def forward(self, x):
        return self.twos * x


class ViaBufferClass(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Buffer(torch.tensor([2.0] * features))   # PyTorch >= 2.5

    def forward(self, x):
        return torch.mul(x, self.scale)


@pytest.mark.parametrize("answer", [NonPersistent, IntegerTwos, ViaBufferClass])
def test_scaler_accepts_valid_alternatives(answer):
    result = cu.check("06.scaler", answer)
    assert result.passed and result.code == "", result.feedback


@pytest.mark.gpu
def test_scaler_is_checked_on_the_accelerator():
    result = cu.check("06.scaler", cu.exercises.get_exercise("06.scaler").reference)
    assert result.passed and result.code == "" and cu.accelerator().type in result.feedback


# --- facts the notebook states ------------------------------------------------------------------

def _message(fn):
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


def _notebook_text() -> str:
    from nbtools import NOTEBOOK_DIR, load, source
    return " ".join(" ".join(source(c).split()) for c in load(NOTEBOOK_DIR / "06_mismatch_errors.ipynb")["cells"])


def test_the_lesson_quotes_what_a_gpu_says():
    """The lesson's deliberate errors raise on its GPU, real or simulated (the notebook's run checks each cell); the
    prose quotes CUDA's wordings: section 1's element-wise one and the index one of *Going further*."""
    text = _notebook_text()
    assert f"`RuntimeError: {elementwise_message('cuda:0', 'cpu')}`" in text
    assert ("`RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)`"
            in text)


def test_tensor_to_without_assignment_leaves_the_tensor_alone():
    x = torch.randn(2)
    x.to("meta")
    assert x.device.type == "cpu"
    layer = nn.Linear(2, 2)
    assert layer.to("meta") is layer and layer.weight.device.type == "meta"   # Module.to: in place


def test_factory_functions_inside_forward_use_the_default_device():
    x = torch.ones(3, device="meta")
    assert torch.randn(x.shape).device.type == "cpu" and torch.randn_like(x).device.type == "meta"


def test_plain_attributes_do_not_follow_module_to_but_buffers_do():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.plain = torch.zeros(2)
            self.register_buffer("kept", torch.zeros(2))
            self.register_buffer("transient", torch.zeros(2), persistent=False)
    m = M().to("meta")
    assert m.plain.device.type == "cpu"
    assert m.kept.device.type == m.transient.device.type == "meta"
    assert list(m.state_dict()) == ["kept"] and list(m.parameters()) == []


def test_optimizer_state_stays_where_it_was_made():
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
    tracked = opt.param_groups[0]["params"][0]
    model.to("meta")
    state = opt.state[tracked]
    assert {k: v.device.type for k, v in state.items()} == {"step": "cpu", "exp_avg": "cpu", "exp_avg_sq": "cpu"}


def test_foreach_optimizers_refuse_state_on_another_device_in_the_words_section_6_quotes():
    """Section 6: on a CUDA GPU, Adam's default multi-tensor (foreach) path groups each parameter with its state and
    refuses a state on another device. The wording grew a clause after 2.7 (", and optimizer states that can be
    bfloat16 ..."); the lesson quotes the part every version prints."""
    from torch.utils._foreach_utils import _group_tensors_by_device_and_dtype
    params, state = [torch.ones(2, device="meta")], [torch.ones(2)]   # a parameter elsewhere, its state on the CPU
    message = _message(lambda: _group_tensors_by_device_and_dtype([state, params], False))
    quoted = ("Tensors of the same index must be on the same device and the same dtype except `step` tensors "
              "that can be CPU")
    assert message.startswith(quoted)
    assert quoted in _notebook_text()
    from nbtools import NOTEBOOK_DIR, load, raises
    cell = next(c for c in load(NOTEBOOK_DIR / "06_mismatch_errors.ipynb")["cells"] if c.get("id") == "abb9c2b3")
    assert quoted.startswith(raises(cell)["message"][0])


def test_optimizer_load_state_dict_casts_state_to_the_parameter_device():
    old = nn.Linear(4, 2)
    old_opt = torch.optim.Adam(old.parameters(), lr=0.01)
    old(torch.randn(8, 4)).sum().backward()
    old_opt.step()
    model = nn.Linear(4, 2).to("meta")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    opt.load_state_dict(old_opt.state_dict())
    state = opt.state[model.weight]
    assert state["exp_avg"].device.type == "meta" and state["step"].device.type == "cpu"


def test_optimizer_made_after_moving_keeps_state_on_the_device():
    model = nn.Linear(4, 2).to("meta")
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(8, 4, device="meta")).sum().backward()
    opt.step()
    assert opt.state[model.weight]["exp_avg"].device.type == "meta"


def test_loading_a_gpu_checkpoint_without_cuda_raises_and_map_location_fixes_it():
    if torch.cuda.is_available():
        pytest.skip("with CUDA the checkpoint loads without map_location")
    weights = nn.Linear(4, 2).state_dict()
    buffer = io.BytesIO()
    save_as_gpu_checkpoint(weights, buffer)
    data = buffer.getvalue()
    message = _message(lambda: torch.load(io.BytesIO(data)))
    assert message.startswith("Attempting to deserialize object on a CUDA device but "
                              "torch.cuda.is_available() is False. If you are running on a CPU-only machine, "
                              "please use torch.load with map_location=torch.device('cpu') to map your "
                              "storages to the CPU.")
    tags = []
    torch.load(io.BytesIO(data), map_location=lambda storage, location: tags.append(location) or storage)
    assert tags == ["cuda:0", "cuda:0"]
    state = torch.load(io.BytesIO(data), map_location="cpu")
    assert all(torch.equal(state[k], weights[k]) and state[k].device.type == "cpu" for k in weights)
    renamed = torch.load(io.BytesIO(data), map_location={"cuda:0": "cpu"})
    assert renamed["weight"].device.type == "cpu"


def test_save_as_gpu_checkpoint_leaves_other_saves_alone():
    buffer = io.BytesIO()
    save_as_gpu_checkpoint({"w": torch.ones(2)}, buffer)
    plain = io.BytesIO()
    torch.save({"w": torch.ones(2)}, plain)
    tags = []
    torch.load(io.BytesIO(plain.getvalue()), map_location=lambda s, loc: tags.append(loc) or s)
    assert tags == ["cpu"]


def test_zero_dim_cpu_tensors_may_join_ops_on_another_device_one_element_tensors_may_not():
    meta = torch.ones(3, device="meta")
    assert (meta * torch.tensor(2.0)).device.type == "meta"
    assert (torch.tensor(2.0) + meta).device.type == "meta"
    _message(lambda: meta * torch.tensor([2.0]))
    _message(lambda: torch.tensor(2.0, device="meta") + torch.ones(3))  # only CPU 0-dim tensors get the pass


def test_device_comparisons_the_exercise_relies_on():
    t = torch.ones(1)
    assert t.device == torch.device("cpu") and t.device != "cpu"
    assert torch.device("cuda:0") != torch.device("cuda:1") and torch.device("cpu", 0) != torch.device("cpu")


def test_modules_in_plain_lists_are_invisible_to_module_to():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(2, 2)]
    stack = Stack().to("meta")
    assert stack.layers[0].weight.device.type == "cpu" and list(stack.parameters()) == []
    assert any(e.kind == "unregistered module" for e in explain_devices(stack).entries)


# --- the real thing on a GPU ------------------------------------------------------------------------

@pytest.mark.gpu
def test_cuda_mismatch_messages():
    if not torch.cuda.is_available():
        pytest.skip("CUDA messages need CUDA")
    gpu = torch.ones(3, device="cuda")
    assert _message(lambda: gpu + torch.ones(3)).startswith(
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
    layer = nn.Linear(4, 2).cuda()
    message = _message(lambda: layer(torch.randn(8, 4)))
    assert message.startswith("Expected all tensors to be on the same device") and "mat1" in message
    assert "addmm" in message


@pytest.mark.gpu
def test_cuda_module_to_keeps_parameters_and_the_next_step_fails():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(8, 4)).sum().backward()
    opt.step()
    weight = model.weight
    model.to("cuda")
    assert model.weight is weight and opt.state[weight]["exp_avg"].device.type == "cpu"
    model(torch.randn(8, 4, device="cuda")).sum().backward()
    with pytest.raises(RuntimeError):
        opt.step()


@pytest.mark.gpu
def test_cuda_zero_dim_exception():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    gpu = torch.ones(3, device="cuda")
    assert (gpu * torch.tensor(2.0)).device.type == "cuda"
    _message(lambda: gpu * torch.tensor([2.0]))


# --- only plain values count; 0-dim CPU tensors; constants made in forward ------------------------

from hostile_values import AlwaysEqualList, AlwaysEqualStr  # noqa: E402


def test_find_mismatches_refuses_a_list_whose_comparisons_lie():
    result = cu.check("06.find_mismatches", lambda model, inputs, device: AlwaysEqualList())
    assert not result.passed and "plain `list`" in result.feedback, result.feedback
    assert result.code == "any.wrong-type", result.code


def test_find_mismatches_refuses_names_whose_comparisons_lie():
    result = cu.check("06.find_mismatches", lambda model, inputs, device: [
        AlwaysEqualStr("?") for _, t in _named(model, inputs) if t.device != torch.device(device)])
    assert not result.passed and "a plain `str`" in result.feedback, result.feedback
    assert result.code == "any.wrong-type", result.code


def skips_zero_dim_cpu(model, inputs, device):  # section 7's pass, as `cu.explain_devices` notes it
    device = torch.device(device)
    return sorted(n for n, t in _named(model, inputs)
                  if t.device != device and not (t.dim() == 0 and t.device.type == "cpu"))


def test_find_mismatches_names_the_zero_dim_tensor_an_answer_skipped():
    result = cu.check("06.find_mismatches", skips_zero_dim_cpu)
    assert not result.passed, result.feedback
    assert "`body.1.num_batches_tracked`, a 0-dim tensor on the CPU" in result.feedback, result.feedback
    assert "Add `model.named_buffers()`" not in result.feedback and "You missed buffers" not in result.feedback
    assert result.code == "06.zero-dim-exempted", result.code


class TwosMadeInForward(nn.Module):
    """Correct device handling without a buffer: the twos are made on the input's device each call."""

    def __init__(self, features):
        super().__init__()
        self.features = features

    def forward(self, x):
        return x * torch.full((self.features,), 2.0, dtype=x.dtype, device=x.device)


class TwosLikeInput(nn.Module):
    def __init__(self, features):
        super().__init__()

    def forward(self, x):
        return x * torch.full_like(x, 2.0)


class TwosFromNewFull(nn.Module):
    def __init__(self, features):
        super().__init__()

    def forward(self, x):
        return x * x.new_full((x.shape[-1],), 2.0)


@pytest.mark.parametrize("answer", [TwosMadeInForward, TwosLikeInput, TwosFromNewFull])
def test_scaler_accepts_twos_made_in_forward_on_the_inputs_device(answer):
    result = cu.check("06.scaler", answer)
    assert result.passed and result.code == "" and "makes its twos in `forward`" in result.feedback, result.feedback


class ScalarMadeInForward(nn.Module):
    def __init__(self, features):
        super().__init__()

    def forward(self, x):
        return x * torch.tensor(2.0)      # 0-dim: allowed on any device, but not a vector of twos


def test_scaler_made_in_forward_must_still_be_a_vector_of_twos():
    result = cu.check("06.scaler", ScalarMadeInForward)
    assert not result.passed and "vector of 3 twos" in result.feedback and "shape ()" in result.feedback, \
        result.feedback
    assert result.code == "any.wrong-shape", result.code


class MatrixMadeInForward(nn.Module):
    """Wrong: the matrix is made in forward, on the CPU, and meets `x` in a matmul, which meta's own
    `mm` lets through (a GPU refuses it)."""

    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return x @ torch.diag(torch.full((x.shape[-1],), 2.0, dtype=x.dtype))


class MatrixMadeInForwardNoBuffer(nn.Module):
    def __init__(self, features):
        super().__init__()

    def forward(self, x):
        return x @ torch.diag(torch.full((x.shape[-1],), 2.0, dtype=x.dtype))


def test_meta_lets_a_cpu_operand_into_mm():  # why the check compares devices itself
    assert (torch.randn(2, 4, device="meta") @ torch.ones(4, 4)).device.type == "meta"


@pytest.mark.parametrize("answer", [MatrixMadeInForward, MatrixMadeInForwardNoBuffer])
def test_scaler_catches_a_cpu_tensor_made_in_forward_even_where_meta_lets_it_through(answer):
    result = cu.check("06.scaler", answer)
    assert not result.passed and "a tensor created there with no device" in result.feedback, result.feedback
    assert result.code == "06.tensor-made-in-forward", result.code
    if cu.accelerator() is None:
        assert "sent `mm` a float32 tensor of shape (4, 4) on cpu" in result.feedback, result.feedback


def test_a_loop_that_rebinds_its_name_moves_nothing_and_a_new_list_does():
    """Section 2's quiz: `b = b.to(...)` in a loop over a list leaves the list's tensors where they were."""
    batches = [torch.randn(2, 2) for _ in range(3)]
    for b in batches:
        b = b.to("meta")
    assert all(t.device.type == "cpu" for t in batches)
    batches = [b.to("meta") for b in batches]
    assert all(t.device.type == "meta" for t in batches)

