"""Lesson 03 checks catch the realistic mistakes and say which one it was; the lesson's facts hold."""
from __future__ import annotations

import copy
import re

import pytest
import torch
import torch.utils._pytree as pytree
from torch import nn

import course_utils as cu
from course_utils.lessons.l03_prepare import prepare
from course_utils.lessons.l03_to_device import to_device
from simulated_devices import per_argument_message


def _fails_with(exercise_id, answer, says, code):
    result = cu.check(exercise_id, answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)
    return result


# --- 03.to_device: wrong answers -------------------------------------------------------------

def forgot_to_reassign(obj, device):
    if isinstance(obj, torch.Tensor):
        obj.to(device)                      # result thrown away
        return obj
    if isinstance(obj, dict):
        return {k: forgot_to_reassign(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [forgot_to_reassign(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(forgot_to_reassign(v, device) for v in obj)
    return obj


def top_level_only(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(v.to(device) if isinstance(v, torch.Tensor) else v for v in obj)
    return obj


def tuple_becomes_list(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: tuple_becomes_list(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [tuple_becomes_list(v, device) for v in obj]
    return obj


def dict_becomes_list(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return [dict_becomes_list(v, device) for v in obj.values()]
    if isinstance(obj, list):
        return [dict_becomes_list(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(dict_becomes_list(v, device) for v in obj)
    return obj


def ignores_tuples(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: ignores_tuples(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [ignores_tuples(v, device) for v in obj]
    return obj


def numbers_to_tensors(obj, device):
    if isinstance(obj, dict):
        return {k: numbers_to_tensors(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [numbers_to_tensors(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(numbers_to_tensors(v, device) for v in obj)
    if isinstance(obj, (int, float)):
        return torch.as_tensor(obj, device=device)
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    return obj


def forgets_the_else(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: forgets_the_else(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [forgets_the_else(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(forgets_the_else(v, device) for v in obj)


def copies_non_tensors(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: copies_non_tensors(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [copies_non_tensors(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(copies_non_tensors(v, device) for v in obj)
    return copy.deepcopy(obj)


def mutates_input(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        for k in obj:
            obj[k] = mutates_input(obj[k], device)
        return obj
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = mutates_input(v, device)
        return obj
    if isinstance(obj, tuple):
        return tuple(mutates_input(v, device) for v in obj)
    return obj


def drops_non_tensors(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: drops_non_tensors(v, device) for k, v in obj.items()
                if isinstance(v, (torch.Tensor, dict, list, tuple))}
    if isinstance(obj, list):
        return [drops_non_tensors(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(drops_non_tensors(v, device) for v in obj)
    return obj


def casts_to_float(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device, torch.float32)
    if isinstance(obj, dict):
        return {k: casts_to_float(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [casts_to_float(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(casts_to_float(v, device) for v in obj)
    return obj


def new_zeros_instead(obj, device):
    if isinstance(obj, torch.Tensor):
        return torch.zeros_like(obj, device=device)
    if isinstance(obj, dict):
        return {k: new_zeros_instead(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [new_zeros_instead(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(new_zeros_instead(v, device) for v in obj)
    return obj


def tuple_to_generator(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: tuple_to_generator(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [tuple_to_generator(v, device) for v in obj]
    if isinstance(obj, tuple):
        return (tuple_to_generator(v, device) for v in obj)   # forgot tuple(...)
    return obj


def adds_a_device_key(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {**{k: adds_a_device_key(v, device) for k, v in obj.items()}, "device": str(device)}
    if isinstance(obj, list):
        return [adds_a_device_key(v, device) for v in obj]
    if isinstance(obj, tuple):
        return tuple(adds_a_device_key(v, device) for v in obj)
    return obj


@pytest.mark.parametrize("answer, says, code", [
    (forgot_to_reassign, "throws the result away", "03.to-not-assigned"),
    (lambda obj, device: obj, "no tensor was moved", "03.tensors-not-moved"),
    (top_level_only, "moved only the top level", "03.top-level-only"),
    (tuple_becomes_list, "was a tuple and came back as a list", "03.tuple-became-list"),
    (dict_becomes_list, "was a dict and came back as a list", "03.container-type-changed"),
    (ignores_tuples, "look inside tuples", "03.skipped-a-container-type"),
    (numbers_to_tensors, "turned it into a tensor", "03.non-tensor-made-tensor"),
    (forgets_the_else, "returned None for it", "03.no-fallback-return"),
    (copies_non_tensors, "different Tag object", "03.changed-non-tensor"),
    (mutates_input, "changed the structure it was given", "03.moved-input-in-place"),
    (drops_non_tensors, "lost the key(s) 'id'", "03.dropped-non-tensors"),
    (adds_a_device_key, "has new key(s) 'device'", "03.changed-keys"),
    (casts_to_float, "without changing their dtype", "03.changed-dtype"),
    (new_zeros_instead, "different values", "03.created-instead-of-moved"),
    (tuple_to_generator, "came back as a generator", "03.container-type-changed"),
])
def test_to_device_mistakes(answer, says, code):
    _fails_with("03.to_device", answer, says, code)


def test_to_device_names_the_path_of_the_tensor_left_behind():
    feedback = cu.check("03.to_device", top_level_only).feedback
    assert "`batch['inputs']['ids']` is still on `cpu`" in feedback


def _with_type(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device=device)
    if isinstance(obj, dict):
        return dict((k, _with_type(v, device)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_with_type(v, device) for v in obj)
    return obj


@pytest.mark.parametrize("answer", [
    to_device,
    _with_type,
    lambda obj, device: pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), obj),
    lambda obj, device: pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, obj),
], ids=["reference", "type(obj)(...)", "pytree.tree_map_only", "pytree.tree_map"])
def test_to_device_accepts_valid_alternatives(answer):
    result = cu.check("03.to_device", answer)
    assert result.passed and result.code == "", result.feedback


# --- 03.prepare: wrong answers ---------------------------------------------------------------

def forgot_batch_reassign(model, batch, device):
    model.to(device)
    batch.to(device)            # result thrown away
    return model, batch


def moved_model_not_batch(model, batch, device):
    model = model.to(device)
    return model, batch


def moved_batch_not_model(model, batch, device):
    return model, batch.to(device)


def returns_only_model(model, batch, device):
    batch = batch.to(device)
    return model.to(device)


def returns_only_batch(model, batch, device):
    model.to(device)
    return batch.to(device)


def returns_nothing(model, batch, device):
    model.to(device)
    batch = batch.to(device)


def swapped(model, batch, device):
    return batch.to(device), model.to(device)


def copies_the_model(model, batch, device):
    return copy.deepcopy(model).to(device), batch.to(device)


def casts_batch_to_float(model, batch, device):
    return model.to(device), batch.to(device).float()


def parameters_one_by_one(model, batch, device):
    for module in model.modules():
        for name, p in list(module.named_parameters(recurse=False)):
            setattr(module, name, nn.Parameter(p.detach().to(device)))
    return model, batch.to(device)


def assigns_param_data(model, batch, device):
    for p in model.parameters():
        p.data = p.data.to(device)
    return model, batch.to(device)


@pytest.mark.parametrize("answer, says, code", [
    (forgot_batch_reassign, "threw the result away", "03.to-not-assigned"),
    (moved_model_not_batch, "moved the model but not the batch", "03.batch-not-moved"),
    (moved_batch_not_model, "moved the batch but not the model", "03.model-not-moved"),
    (returns_only_model, "returned only the model", "03.not-both-returned"),
    (returns_only_batch, "returned only the batch", "03.not-both-returned"),
    (returns_nothing, "returned None", "03.not-both-returned"),
    (swapped, "the order is `(model, batch)`", "03.pair-swapped"),
    (copies_the_model, "different model object", "03.copied-model"),
    (casts_batch_to_float, "without changing its dtype", "03.changed-dtype"),
    (parameters_one_by_one, "buffer `1.running_mean`", "03.params-one-by-one"),
    (assigns_param_data, "Use `model.to(device)`", "03.params-one-by-one"),
])
def test_prepare_mistakes(answer, says, code):
    _fails_with("03.prepare", answer, says, code)


@pytest.mark.parametrize("answer", [
    prepare,
    lambda model, batch, device: (model.to(device), batch.to(device)),
    lambda model, batch, device: [model.to(device), batch.to(device)],
    lambda model, batch, device: (model.to(device=device), batch.to(device=device)),
], ids=["reference", "one line", "a list", "keyword device"])
def test_prepare_accepts_valid_alternatives(answer):
    result = cu.check("03.prepare", answer)
    assert result.passed and result.code == "", result.feedback


# --- properties of the checks themselves ------------------------------------------------------

@pytest.mark.parametrize("ex_id", ["03.to_device", "03.prepare"])
def test_checks_leave_the_global_rng_alone(ex_id):
    state = torch.get_rng_state()
    result = cu.check(ex_id, cu.exercises.get_exercise(ex_id).reference)
    assert result.passed and result.code == "", result.feedback
    assert torch.equal(torch.get_rng_state(), state)


def test_checks_use_meta_as_the_target_device_only_where_no_accelerator_is_registered():
    seen = []

    def spy(obj, device):
        seen.append(torch.device(device).type)
        return to_device(obj, device)
    result = cu.check("03.to_device", spy)
    assert result.passed and result.code == "", result.feedback
    assert set(seen) == {"cpu", cu.accelerator().type if cu.accelerator() else "meta"}


@pytest.mark.gpu
@pytest.mark.parametrize("ex_id", ["03.to_device", "03.prepare"])
def test_checks_use_the_accelerator(ex_id):
    seen = []
    reference = cu.exercises.get_exercise(ex_id).reference

    def spy(*args):
        seen.append(torch.device(args[-1]).type)
        return reference(*args)
    result = cu.check(ex_id, spy)
    assert result.passed and result.code == "", result.feedback
    assert cu.accelerator().type in seen


# --- facts the notebook states ----------------------------------------------------------------

def test_to_returns_self_when_nothing_changes():
    t = torch.randn(3)
    assert t.to("cpu") is t and t.to(t.device) is t and t.to(torch.float32) is t
    assert t.to("cpu", torch.float32) is t and t.to(torch.device("cpu")) is t
    assert t.to("meta") is not t and t.to(torch.float64) is not t


def test_the_result_of_a_no_op_to_shares_memory_and_copy_true_does_not():
    t = torch.zeros(3)
    t.to("cpu")[0] = 100.0
    assert t[0] == 100.0
    t = torch.zeros(3)
    c = t.to("cpu", copy=True)
    c[0] = 100.0
    assert c is not t and t[0] == 0.0 and c.data_ptr() != t.data_ptr()


def test_to_never_moves_the_original():
    x = torch.arange(6.0)
    x.to("meta")
    assert x.device.type == "cpu"


def test_to_changes_dtype_and_truncates_to_integers():
    t = torch.tensor([1.7, -1.7, 2.5])
    assert t.to(torch.int64).tolist() == [1, -1, 2] and t.dtype == torch.float32
    like = torch.zeros(1, dtype=torch.bfloat16, device="meta")
    assert t.to(like).dtype == torch.bfloat16 and t.to(like).device.type == "meta"
    both = t.to("meta", torch.float16)
    assert both.dtype == torch.float16 and both.device.type == "meta"


def test_device_objects_and_strings():
    t = torch.ones(2)
    assert (torch.device("cpu") == "cpu") is False and (t.device == "cpu") is False
    assert t.device.type == "cpu" and t.device == torch.device("cpu") and str(t.device) == "cpu"
    assert repr(t.device) == "device(type='cpu')"


def test_module_to_is_in_place_and_moves_buffers():
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    assert model.to("meta") is model
    assert all(p.device.type == "meta" for p in model.parameters())
    assert all(b.device.type == "meta" for b in model.buffers())


def test_parameter_identity_survives_a_dtype_change():
    """Section 5's first half, on the CPU (its move to the GPU: the `gpu` test below, and the notebook's run)."""
    model = nn.Linear(4, 3)
    weight = model.weight
    model.to(torch.float64)
    assert weight is model.weight and weight.dtype == torch.float64


@pytest.mark.gpu
def test_parameter_identity_survives_a_move_to_the_accelerator():
    model = nn.Linear(4, 3)
    weight = model.weight
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.to(cu.accelerator().type)
    assert weight is model.weight and weight.device.type == cu.accelerator().type
    assert optimizer.param_groups[0]["params"][0] is model.weight


def source_after(code_start):
    """The Markdown cell right after notebook 03's first code cell with a line that starts with ``code_start``."""
    from nbtools import NOTEBOOK_DIR, load, source
    cells = load(NOTEBOOK_DIR / "03_to_device.ipynb")["cells"]
    at = next(i for i, c in enumerate(cells) if c["cell_type"] == "code"
              and any(line.startswith(code_start) for line in source(c).splitlines()))
    return source(cells[at + 1])


def _quotes_after(code_start):
    """The `quoted` texts of the Markdown cell right after notebook 03's code cell with a line that starts with
    ``code_start``, with line breaks turned into spaces (as Markdown shows them)."""
    return re.findall(r"`([^`]+)`", " ".join(source_after(code_start).split()))


def test_the_notebook_quotes_the_message_of_the_operation_it_runs():
    """`w * x` is element-wise: "found at least two devices". A Linear layer's `addmm` checks argument by
    argument on CUDA and names `mat1`, in the wording of every PyTorch the course supports (2.10 and later; the
    older wording of 2.7 is gone); on MPS the layer itself names its `input`."""
    elementwise, linear = _quotes_after("w * x"), _quotes_after("model(batch)")
    assert any(q.endswith("but found at least two devices, cuda:0 and cpu!") for q in elementwise), elementwise
    for version in ("2.10.0", "2.14.0"):
        assert per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", version) in linear, linear
    assert per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", "2.7.0") not in linear, linear
    assert "Tensor for argument input is on cpu but expected on mps" in linear, linear
    assert "PyTorch 2.7" not in " ".join(source_after("model(batch)").split())


@pytest.mark.gpu
def test_gpu_mismatch_messages_are_the_ones_the_notebook_quotes():
    acc = cu.accelerator()
    where = "cuda:0" if acc.type == "cuda" else acc.type
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)).to(where)   # the notebook's TinyNet
    with pytest.raises(RuntimeError) as linear:
        model(torch.randn(32, 4))                     # the model moved, the batch did not
    with pytest.raises(RuntimeError) as elementwise:
        torch.ones(6, device=where) * torch.arange(6.0)
    assert "found at least two devices" in str(elementwise.value) and "cpu" in str(elementwise.value)
    assert "cpu" in str(linear.value) and acc.type in str(linear.value)
    if acc.type == "cuda":                            # the wording of the installed version, quoted in the notebook
        expected = per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm")
        assert str(linear.value) == expected and expected in _quotes_after("model(batch)")
        assert any(q.removeprefix("RuntimeError: ") in str(elementwise.value) for q in _quotes_after("w * x"))
    elif acc.type == "mps":
        assert "Tensor for argument input is on cpu but expected on mps" in str(linear.value)


def test_a_dict_has_no_to():
    with pytest.raises(AttributeError, match="'dict' object has no attribute 'to'"):
        {"x": torch.ones(1)}.to("meta")


def test_a_moved_tensor_is_not_a_leaf_and_optimizers_refuse_it():
    moved = torch.randn(3, requires_grad=True).to("meta")
    made_there = torch.randn(3, device="meta", requires_grad=True)
    assert not moved.is_leaf and moved.grad_fn is not None and made_there.is_leaf
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        torch.optim.SGD([moved], lr=0.1)
    torch.optim.SGD([made_there], lr=0.1)


def test_autocast_keeps_weights_float32_and_half_does_not():
    layer = nn.Linear(4, 3)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        out = layer(torch.randn(2, 4))
    assert out.dtype == torch.bfloat16 and layer.weight.dtype == torch.float32
    assert nn.Linear(4, 3).half().weight.dtype == torch.float16


def test_there_is_no_automatic_memory_format():
    assert not hasattr(torch.memory_format, "AUTO")


# --- a container that reaches `.to` is named as the container mistake it is (issue 33) -----------------

def flat_sequences(obj, device):
    """Recurses into dicts, but moves the items of lists and tuples with a flat comprehension."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: flat_sequences(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(v if isinstance(v, str) else v.to(device) for v in obj)
    return obj


def flat_dict(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: v.to(device) if isinstance(v, (torch.Tensor, dict, list, tuple)) else v for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(v, device) for v in obj)
    return obj


def no_tuples(obj, device):
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: no_tuples(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [no_tuples(v, device) for v in obj]
    return obj.to(device) if not isinstance(obj, (str, int, float, type(None), Tag)) else obj


from course_utils.lessons.l03_to_device import Tag  # noqa: E402


@pytest.mark.parametrize("answer, says, code", [
    (flat_sequences, "'tuple' object has no attribute 'to'", "03.top-level-only"),
    (flat_dict, "'dict' object has no attribute 'to'", "03.top-level-only"),
    (no_tuples, "your code does not look inside tuples", "03.skipped-a-container-type"),
])
def test_to_device_container_reaching_to_is_a_container_mistake(answer, says, code):
    result = _fails_with("03.to_device", answer, says, code)
    assert "Read the message" not in result.feedback
    if code == "03.top-level-only":
        assert "inside the batch" in result.feedback and "call itself on each item" in result.feedback


def test_to_device_other_crashes_keep_the_generic_feedback():
    def crashes(obj, device):
        raise ValueError("nope")
    result = cu.check("03.to_device", crashes)
    assert result.code == "any.raised" and "Read the message" in result.feedback
