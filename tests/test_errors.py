"""cu.explain_error: each device error's family, what the message says, the look-alikes refused, never raises."""
from __future__ import annotations

import importlib.util
import io
import json
import re

import pytest
import torch
from torch import nn

import course_utils as cu
from course_utils import errors
from course_utils.gpusim import backend as simdevice
from course_utils.__main__ import main
from course_utils.errors import FAMILIES, LESSONS, Explanation, explain_error, family
from course_utils.mismatch import save_as_gpu_checkpoint
from nbtools import NOTEBOOK_DIR, ROOT, load

#: Families whose message has had a single wording in every PyTorch checked (they are still tested as a
#: bare message, a traceback, and with other numbers).
ONE_WORDING = {"mps-oom", "fork", "mps-float64", "data-parallel", "no-device", "no-kernel", "cpu-scalars"}

ALL_WORDINGS = [(f.key, w.text) for f in FAMILIES for w in f.wordings]


def traceback_of(message: str, kind: str = "RuntimeError") -> str:
    """What a learner pastes: a whole traceback, ending with the message."""
    return ("Traceback (most recent call last):\n"
            '  File "/home/learner/train.py", line 42, in <module>\n'
            "    loss = criterion(model(x.to(device)), y)\n"
            '  File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1751, in _wrapped_call_impl\n'
            "    return self._call_impl(*args, **kwargs)\n"
            f"{kind}: {message}\n")


def test_the_catalogue_is_sound():
    keys = [f.key for f in FAMILIES]
    assert len(keys) == len(set(keys)) == len(LESSONS)
    for fam in FAMILIES:
        assert fam.wordings and fam.cause and fam.fix and fam.title
        assert len(fam.wordings) >= 2 or fam.key in ONE_WORDING, fam.key
        assert all(w.source and w.versions for w in fam.wordings)
    assert family("devices").title == "Tensors on different devices"
    with pytest.raises(KeyError):
        family("nope")


@pytest.mark.parametrize("key, message", ALL_WORDINGS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(ALL_WORDINGS)])
def test_every_wording_is_recognised_bare_and_in_a_traceback(key, message):
    for text in (message, traceback_of(message), "\x1b[0;31mRuntimeError\x1b[0m: " + message):
        e = explain_error(text)
        assert e.known and e.key == key, (text, e.key)
        assert e.cause and e.fix and e.lesson == family(key).lesson
        assert e.message and e.message.rstrip("…") in text.replace("\x1b[0;31m", "").replace("\x1b[0m", "")


@pytest.mark.parametrize("key, message", ALL_WORDINGS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(ALL_WORDINGS)])
def test_other_devices_and_numbers_change_nothing(key, message):
    varied = (message.replace("cuda:0", "cuda:3").replace("cuda:1", "cuda:2").replace("20.00 MiB", "1.50 GiB")
              .replace("aten::nonzero", "aten::upsample_bicubic2d.out"))
    assert explain_error(varied).key == key


def test_one_family_one_cause_one_fix():
    """Specific, not a list of everything: the answer is one family's, with one Fix line."""
    for key, message in ALL_WORDINGS:
        text = explain_error(message).text()
        assert text.count("\nFix: ") == 1 and text.count("\nCause: ") == 1
        others = [f.fix for f in FAMILIES if f.key != key]
        assert not any(fix in text for fix in others), key


# --- what the message tells --------------------------------------------------------------------------

def test_per_argument_wording_names_argument_op_devices_and_direction():
    e = explain_error("RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, "
                      "different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)")
    assert (e.argument, e.op, e.devices) == ("mat1", "wrapper_CUDA_addmm", ("cpu", "cuda:0"))
    assert e.cause.startswith("Your input (`mat1`) is on cpu, the model's tensors in `addmm` on cuda:0.")
    assert 'x = x.to("cuda:0")' in e.fix and "model.to" not in e.fix


def test_the_reverse_direction_moves_the_model():
    e = explain_error("Expected all tensors to be on the same device, but got mat1 is on cuda:0, different from "
                      "other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)")
    assert "input (`mat1`) is on cuda:0" in e.cause and 'model.to("cuda:0")' in e.fix
    weight = explain_error("Expected all tensors to be on the same device, but got weight is on cpu, different "
                           "from other tensors on mps:0 (when checking argument in method wrapper_MPS_mm)")
    assert weight.argument == "weight" and "layer's `weight`" in weight.cause and 'model.to("mps:0")' in weight.fix


# --- each argument read by its role in its operation ----------------------------------------------------

LOSS_WEIGHT = [
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking "
    "argument for argument weight in method wrapper_CUDA_nll_loss_forward)",                        # up to 2.7
    "Expected all tensors to be on the same device, but got weight is on cpu, different from other tensors on "
    "cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)",                      # 2.8 and newer
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking "
    "argument for argument weight in method wrapper_nll_loss_forward)",                             # late 1.x
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking "
    "arugment for argument weight in method wrapper_nll_loss2d_forward)",                           # around 1.9
    "Expected object of device type cuda but got device type cpu for argument #3 'weight' in call to "
    "_thnn_nll_loss_forward",                                                                        # 1.x
]


@pytest.mark.parametrize("message", LOSS_WEIGHT)
def test_a_loss_weight_moves_the_loss_not_the_model(message):
    e = explain_error(message)
    assert e.key == "devices" and e.argument == "weight" and e.devices[0] == "cpu"
    assert "loss's class weights" in e.cause and "loss_fn.to(" in e.fix
    assert "model.to(" not in e.fix and "x = x.to(" not in e.fix


def test_a_loss_weight_on_the_gpu_with_outputs_on_the_cpu_never_sends_the_loss_alone():
    e = explain_error("Expected all tensors to be on the same device, but got weight is on cuda:0, different from "
                      "other tensors on cpu (when checking argument in method wrapper_CUDA_nll_loss_forward)")
    assert 'model.to("cuda:0")' in e.fix and 'loss_fn.to("cpu")' in e.fix


def test_a_layer_weight_is_the_model():
    e = explain_error("Tensor for argument weight is on cpu but expected on mps")
    assert "layer's `weight`" in e.cause and 'model.to("mps")' in e.fix and "loss" not in e.fix


@pytest.mark.parametrize("message, odd", [
    ("Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0! (when checking "
     "argument for argument mat2 in method wrapper_CUDA_mm)", "cuda:0"),
    ("Expected all tensors to be on the same device, but got mat2 is on cuda:0, different from other tensors on cpu "
     "(when checking argument in method wrapper_CUDA_mm)", "cuda:0"),
])
def test_mat2_is_the_second_matrix_not_your_input(message, odd):
    """In nn.Linear, mm's mat2 is the layer's weight: on the GPU, with the input (mat1) left on the CPU."""
    e = explain_error(message)
    assert e.argument == "mat2" and e.devices[0] == odd
    assert "your input (`mat2`)" not in e.cause.lower() and "second matrix" in e.cause and "layer's weight" in e.cause
    assert 'x = x.to("cuda:0")' in e.fix


def test_mat2_on_the_cpu_moves_the_model():
    e = explain_error("Tensor for argument #2 'mat2' is on CPU, but expected it to be on GPU (while checking arguments "
                      "for mm)")
    assert e.devices == ("cpu",) and "model.to(device)" in e.fix and "b = b.to(" in e.fix


def test_index_select_says_which_index_moves_and_which_does_not():
    cpu_index = explain_error("Expected all tensors to be on the same device, but got index is on cpu, different from "
                              "other tensors on cuda:0 (when checking argument in method wrapper_CUDA__index_select)")
    assert 'idx = idx.to("cuda:0")' in cpu_index.fix
    assert "`x[idx]` moves a CPU index for you; `index_select`, `nn.Embedding`" in cpu_index.fix
    gpu_index = explain_error("Expected all tensors to be on the same device, but got index is on cuda:0, different "
                              "from other tensors on cpu (when checking argument in method wrapper_CUDA__index_select)")
    assert 'model.to("cuda:0")' in gpu_index.fix and "nn.Embedding" in gpu_index.fix
    assert "moves a CPU index for you" not in gpu_index.fix
    # the rule in the cause names its edge precisely: advanced indexing, not every use of an index
    assert "`x[idx]` copies a CPU index for you" in cpu_index.cause and "CPU index tensors)" not in cpu_index.cause


def test_the_misspelt_wording_is_read_like_the_others():
    e = explain_error("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
                      "cpu and cuda:0! (when checking arugment for argument mat1 in method wrapper_addmm)")
    assert (e.argument, e.op, e.devices) == ("mat1", "wrapper_addmm", ("cuda:0", "cpu"))
    assert 'model.to("cuda:0")' in e.fix


@pytest.mark.parametrize("message", [
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and  cpu!",
    "Expected all tensors to be on the same device,  but found at least two devices, cuda:0 and cpu!",
    "Expected all tensors to be on the same device, but found at least two\n devices, cuda:0 and cpu!",
])
def test_extra_white_space_still_names_the_devices(message):
    e = explain_error(message)
    assert e.devices == ("cuda:0", "cpu") and "" not in e.devices


def test_devices_are_never_empty_strings():
    for key, message in ALL_WORDINGS:
        assert "" not in explain_error(message).devices, message


def test_the_mps_convolution_fallback_wording():
    e = explain_error("RuntimeError: slow_conv2d_forward_mps: input(device='cpu') and weight(device=mps:0')  must be "
                      "on the same device")
    assert e.key == "devices" and e.devices == ("cpu", "mps:0") and 'x = x.to("mps:0")' in e.fix


def test_an_rnn_hidden_state_on_another_device():
    e = explain_error("Input and hidden tensors are not at the same device, found input tensor at cuda:0 and hidden "
                      "tensor at cpu")
    assert "hidden state you pass" in e.cause and "device=x.device" in e.fix


def test_the_mkldnn_clause_belongs_to_a_cpu_input_only():
    """Convolution.cpp adds the clause only for its MKLDNN backend, which it picks only for a CPU input."""
    for w in family("devices").wordings:
        if "MKLDNN" in w.text:
            assert w.text.startswith("Input type (torch.FloatTensor) and weight type (torch.cuda.")
    with_clause = explain_error("Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the "
                                "same or input should be a MKLDNN tensor and weight is a dense tensor")
    assert with_clause.devices == ("cpu", "cuda") and 'x = x.to("cuda")' in with_clause.fix


# --- the fixes the course gives must be ones that work ----------------------------------------------------

def test_out_of_memory_fixes_do_not_rely_on_empty_cache():
    for key in ("cuda-oom", "mps-oom"):
        fix = family(key).fix
        assert "empty_cache()` does not help" in fix or "empty_cache()` does not help here" in fix
        assert "then `torch.cuda.empty_cache()`" not in fix and "then `torch.mps.empty_cache()`" not in fix
        assert "already" in fix and "retries before it raises" in fix
    assert "after the `except` block, not inside it" in family("cuda-oom").fix


def test_the_device_assert_fix_leaves_ignore_index_alone():
    for key in ("device-assert", "label-range"):
        text = family(key).cause + " " + family(key).fix
        assert "ignore_index" in text and "(y != -100)" in family(key).fix
    assert "assert 0 <= y.min()" not in family("device-assert").fix


def test_fork_is_the_default_only_up_to_python_313():
    cause = family("fork").cause
    assert "up to Python 3.13" in cause and "3.14 uses `forkserver`" in cause


def test_data_parallel_moves_the_model_to_device_ids_0_never_the_inputs_to_the_cpu():
    e = explain_error("RuntimeError: module must have its parameters and buffers on device cuda:1 (device_ids[0]) "
                      "but found one of them on device: cpu")
    assert e.key == "data-parallel" and e.devices == ("cpu", "cuda:1")
    assert 'model.to("cuda:1")' in e.fix and ".cpu()" not in e.fix and 'to("cpu")' not in e.fix


def test_no_float64_wording_for_mps_that_pytorch_does_not_print():
    """EmptyTensor.cpp refuses float64 when any MPS tensor is allocated, so getMPSDataType's generic message is
    never reached for Double."""
    texts = [w.text for w in family("mps-float64").wordings]
    assert not any("Trying to convert Double" in t for t in texts)
    assert explain_error("Cannot convert a float64 Tensor to MPS as the MPS framework doesn't support float64. "
                         "Please use float32 instead.").key == "mps-float64"


@pytest.mark.parametrize("message, key", [
    ("Tensors of the same index must be on the same device and the same dtype except `step` tensors that can be CPU "
     "and float32/64 notwithstanding", "optimizer-state"),
    ("'Linear' object has no attribute 'device'", "no-device"),
    ("AttributeError: 'dict' object has no attribute 'cuda'", "no-to"),
    ("can't convert CUDA tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.", "numpy"),
    ("NotImplementedError: The operator 'aten::_index_put_impl_' is not current implemented for the MPS device.",
     "mps-op"),
    ("KeyError: 'unexpected key \"module.features.0.weight\" in state_dict'", "module-prefix"),
    ("IndexError: Target -1 is out of bounds.", "label-range"),
    ("META device type not an accelerator.", "generator"),
    ("UnpicklingError: Weights only load failed...", "weights-only"),
    ("No CUDA GPUs are available", "no-cuda"),
])
def test_wordings_the_doctor_once_missed(message, key):
    assert explain_error(message).key == key


def test_the_reverse_generator_wording_has_the_opposite_cause():
    forward = explain_error("Expected a 'cuda' device type for generator but found 'cpu'")
    reverse = explain_error("Expected a 'cpu' device type for generator but found 'cuda'")
    assert "set_default_device" in forward.cause
    assert "set_default_device" not in reverse.cause and 'generator=torch.Generator(device="cuda")' in reverse.cause
    assert "torch.Generator()" in reverse.fix and "device=g.device" in reverse.fix
    meta = explain_error("RuntimeError: META device type not an accelerator.")
    assert 'torch.Generator(device="meta")' in meta.cause


def test_containers_and_arrays_get_their_own_fix():
    array = explain_error("'numpy.ndarray' object has no attribute 'to'")
    assert "torch.from_numpy(a).to(device)" in array.fix
    state = explain_error("AttributeError: 'collections.OrderedDict' object has no attribute 'to'")
    assert "load_state_dict" in state.fix and "v.to(device)" in state.fix
    batch = explain_error("'list' object has no attribute 'device'")
    assert "t.device for t in batch" in batch.fix
    assert explain_error("'Linear' object has no attribute 'device'").fix == family("no-device").fix


def test_neighbours_of_device_errors_say_so():
    e = explain_error("cannot assign module before Module.__init__() call")
    assert e.known and not e.device_problem and e.text().startswith("Error: A module used before")
    assert explain_error("Tensor on device cpu is not on the expected device meta!").heading.startswith("Device error:")


def test_conv_type_names_give_the_direction():
    gpu_model = explain_error("Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same")
    assert gpu_model.devices == ("cpu", "cuda") and 'x = x.to("cuda")' in gpu_model.fix
    cpu_model = explain_error("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the "
                              "same or input should be a MKLDNN tensor and weight is a dense tensor")
    assert cpu_model.devices == ("cuda", "cpu") and 'model.to("cuda")' in cpu_model.fix
    type_names = explain_error("Input type (CPUFloatType) and weight type (CUDAFloatType) should be the same")
    assert type_names.devices == ("cpu", "cuda")          # the names `Tensor::toString()` gives


@pytest.mark.parametrize("message, arg, fix", [
    ("Expected all tensors to be on the same device, but got target is on cpu, different from other tensors on "
     "cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)", "target", 'y = y.to("cuda:0")'),
    ("Expected all tensors to be on the same device, but got index is on cpu, different from other tensors on "
     "cuda:0 (when checking argument in method wrapper_CUDA__index_select)", "index", 'idx = idx.to("cuda:0")'),
    ("Tensor for argument input is on cpu but expected on mps", "input", 'x = x.to("mps")'),
    ("Expected object of device type cuda but got device type cpu for argument #1 'self' in call to _th_addmm",
     "self", 'model.to("cuda")'),                      # `self` of addmm is nn.Linear's bias
    ("Expected object of device type cuda but got device type cpu for argument #2 'mat1' in call to _th_addmm",
     "mat1", 'x = x.to("cuda")'),
    ("Expected all tensors to be on the same device, but got foo is on cpu, different from other tensors on "
     "cuda:0 (when checking argument in method wrapper_CUDA_bar)", "foo", "Move what `foo` is to cuda:0"),
])
def test_the_argument_decides_the_fix(message, arg, fix):
    e = explain_error(message)
    assert e.argument == arg and fix in e.fix


def test_two_devices_without_an_argument_are_named_in_order_and_not_guessed():
    e = explain_error("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
    assert e.devices == ("cuda:0", "cpu") and e.argument == ""
    assert "not which tensor" in e.cause and "explain_devices" in e.fix
    pasted_without_bang = explain_error("found at least two devices ... Expected all tensors to be on the same "
                                        "device, but found at least two devices, cuda:1 and cpu")
    assert pasted_without_bang.devices == ("cuda:1", "cpu")


def test_the_meta_wording_of_the_course():
    e = explain_error("Tensor on device cpu is not on the expected device meta!")
    assert e.key == "devices" and e.devices == ("cpu", "meta")
    assert e.cause.startswith("A tensor on cpu met tensors on meta in one operation, which expected meta.")
    assert "`model.to(device)`" in e.fix and "which on meta" in e.fix


def test_placeholder_storage_names_mps():
    e = explain_error("RuntimeError: Placeholder storage has not been allocated on MPS device!")
    assert e.devices == ("mps",) and "input is still on the CPU" in e.cause


def test_other_families_read_their_details():
    assert explain_error("can't convert cuda:1 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                         "host memory first.").devices == ("cuda:1",)
    meta = explain_error("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                         "memory first.")
    assert "no values" in meta.fix
    lengths = explain_error("'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor")
    assert lengths.devices == ("cuda:0",) and "lengths.cpu()" in lengths.fix
    op = explain_error("The operator 'aten::upsample_bicubic2d.out' is not currently implemented for the MPS device.")
    assert op.op == "aten::upsample_bicubic2d.out" and "PYTORCH_ENABLE_MPS_FALLBACK=1" in op.fix
    gen = explain_error("Expected a 'cuda' device type for generator but found 'cpu'")
    assert gen.devices == ("cpu", "cuda") and "set_default_device(None)" in gen.fix
    index = explain_error("indices should be either on cpu or on the same device as the indexed tensor (cuda:1)")
    assert index.devices == ("cuda:1",)


def test_module_prefix_direction():
    saved_wrapped = explain_error('Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc.weight". '
                                  '\n\tUnexpected key(s) in state_dict: "module.fc.weight". ')
    assert "consume_prefix_in_state_dict_if_present" in saved_wrapped.fix
    wrapped_model = explain_error('Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: '
                                  '"module.fc.weight". \n\tUnexpected key(s) in state_dict: "fc.weight". ')
    assert "model.module.load_state_dict" in wrapped_model.fix
    plain = explain_error('Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc.weight". ')
    assert not plain.known   # a missing key without the prefix is not a device problem


def test_a_dataloader_traceback_says_default_device():
    text = ('  File "/usr/lib/python3/site-packages/torch/utils/data/sampler.py", line 164, in __iter__\n'
            "    yield from torch.randperm(n, generator=generator).tolist()\n"
            "RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'")
    assert "DataLoader" in explain_error(text).cause and "set_default_device" in explain_error(text).cause
    bare = explain_error("Expected a 'cuda' device type for generator but found 'cpu'")
    assert bare.cause.startswith("A generator on cpu drew numbers for cuda.")


def test_the_last_error_in_a_traceback_wins():
    chained = (traceback_of("CUDA error: device-side assert triggered")
               + "\nDuring handling of the above exception, another exception occurred:\n\n"
               + traceback_of("CUDA out of memory. Tried to allocate 20.00 MiB", "torch.OutOfMemoryError"))
    assert explain_error(chained).key == "cuda-oom"


# --- real errors, raised on this machine ---------------------------------------------------------------

def raised(f) -> BaseException:
    try:
        f()
    except BaseException as e:  # noqa: BLE001 - we want whatever PyTorch raises
        return e
    raise AssertionError("expected an error")


def test_real_meta_mismatches_are_explained():
    e = explain_error(raised(lambda: torch.ones(2, device="meta") + torch.ones(2)))
    assert e.key == "devices" and e.devices == ("cpu", "meta") and "Tensor on device cpu" in e.message
    lstm = explain_error(raised(lambda: nn.LSTM(1, 1).to("meta")(torch.ones(2, 1, 1))))
    assert lstm.key == "devices" and lstm.devices == ("cpu", "meta") and 'x = x.to("meta")' in lstm.fix
    linear = explain_error(raised(lambda: nn.Linear(2, 2).to("meta")(torch.ones(1, 2))))
    assert linear.devices == ("meta", "cpu") and "`model.to(device)`" in linear.fix


def test_real_errors_of_other_families():
    meta = torch.ones(2, device="meta")
    assert explain_error(raised(meta.numpy)).key == "numpy"
    assert explain_error(raised(meta.pin_memory)).key == "pin"
    assert explain_error(raised(torch.ones(1, device="meta").item)).key == "meta-data"
    lengths = torch.tensor([2, 1], device="meta")
    assert explain_error(raised(lambda: nn.utils.rnn.pack_padded_sequence(torch.ones(2, 2, 1), lengths))).key == "lengths"
    assert explain_error(raised(lambda: torch.randn(3, requires_grad=True).to("meta").requires_grad_(False))).key == "leaf"
    assert explain_error(raised(lambda: torch.optim.SGD([torch.randn(3, requires_grad=True).to("meta")], lr=0.1))).key == "leaf"
    model = nn.Linear(2, 2)
    state = {f"module.{k}": v for k, v in model.state_dict().items()}
    assert explain_error(raised(lambda: model.load_state_dict(state))).key == "module-prefix"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where CUDA cannot be used")
def test_real_errors_without_cuda():
    buffer = io.BytesIO()
    save_as_gpu_checkpoint({"w": torch.ones(1)}, buffer)
    assert explain_error(raised(lambda: torch.load(io.BytesIO(buffer.getvalue())))).key == "map-location"
    assert explain_error(raised(lambda: torch.ones(1).cuda())).key == "no-cuda"


def test_a_default_device_dataloader_is_explained():
    previous = torch.get_default_device() if hasattr(torch, "get_default_device") else None
    torch.set_default_device("meta")
    try:
        error = raised(lambda: list(torch.utils.data.DataLoader(range(4), shuffle=True)))
    finally:
        torch.set_default_device(None)
    assert previous is None or previous.type == "cpu"
    e = explain_error(error)
    assert e.known and "DataLoader" in e.cause and "set_default_device(None)" in e.fix


# --- look-alikes: not device problems -------------------------------------------------------------------

LOOK_ALIKES = [
    "Input type (torch.DoubleTensor) and weight type (torch.FloatTensor) should be the same",
    "Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor) should be the same",
    "Input type (torch.cuda.DoubleTensor) and weight type (torch.cuda.FloatTensor) should be the same or input "
    "should be a MKLDNN tensor and weight is a dense tensor",
    "Input type (double) and bias type (float) should be the same",
    "expected scalar type Float but found Double",
    "RuntimeError: expected scalar type Long but found Float",
    "mat1 and mat2 must have the same dtype, but got Double and Float",
    "expected m1 and m2 to have the same dtype, but got: float != double",
    "mat1 and mat2 shapes cannot be multiplied (64x10 and 20x5)",
    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0",
    "Expected input batch_size (32) to match target batch_size (16).",
    'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc.bias". ',
    "ZeroDivisionError: division by zero",
    "AttributeError: 'NoneType' object has no attribute 'to'",          # a missing `return`, not a device
    "AttributeError: 'NoneType' object has no attribute 'device'",
    traceback_of("expected scalar type Float but found Double").replace("x.to(device)", "x.to('cuda:0')"),
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_refused_plainly(text):
    e = explain_error(text)
    assert not e.known and e.key == "" and e.cause == "" and e.fix == "" and e.lesson == ""
    assert e.text().startswith("Not an error the course knows")
    assert "dtype and shape errors" in e.text()


def test_real_dtype_errors_are_refused():
    assert not explain_error(raised(lambda: nn.Linear(2, 2)(torch.ones(1, 2, dtype=torch.float64)))).known
    assert not explain_error(raised(lambda: nn.Conv2d(1, 1, 1)(torch.ones(1, 1, 2, 2, dtype=torch.float64)))).known
    assert not explain_error(raised(lambda: torch.mm(torch.ones(2, 3), torch.ones(2, 3)))).known


# --- untrusted input ---------------------------------------------------------------------------------------

class BadStr:
    def __str__(self):
        raise RuntimeError("no")

    __repr__ = __str__


class BadException(Exception):
    def __str__(self):
        raise ValueError("no")


class WeirdArgs(Exception):
    pass


@pytest.mark.parametrize("value", [
    "", "   \n\t", None, 0, 3.5, True, [], {}, (1, 2), object(), BadStr(), BadException("x"), BadException(),
    WeirdArgs(None, object(), BadStr()), WeirdArgs(), RuntimeError, RuntimeError(b"\xff"), Exception(*range(100)),
    b"", b"\xff\xfe\x00\x80", bytearray(b"CUDA error: device-side assert triggered"), memoryview(b"abc"),
    "\x00" * 1000, "x" * 2_000_000, "\ud800", "Input type (" * 10_000, "Tensor for argument " * 5_000,
    "Expected all tensors to be on the same device, but found at least two devices, " * 1_000,
], ids=lambda v: type(v).__name__)
def test_never_raises(value):
    e = explain_error(value)
    assert isinstance(e, Explanation) and isinstance(e.known, bool)
    assert isinstance(e.text(), str) and isinstance(e._repr_html_(), str) and str(e) == repr(e) == e.text()


def test_bytes_and_exceptions_are_read():
    assert explain_error(b"RuntimeError: CUDA error: device-side assert triggered\n").key == "device-assert"
    assert explain_error(WeirdArgs("Torch not compiled with CUDA enabled", 3)).key == "no-cuda"
    assert explain_error(AssertionError("Torch not compiled with CUDA enabled")).key == "no-cuda"


def test_the_end_of_a_huge_traceback_is_read():
    frame = '  File "train.py", line 1, in f\n    y = f(x)\n'
    text = frame * 200_000 + "RuntimeError: CUDA error: invalid device ordinal"
    assert len(text) > errors.explain._MAX_CHARS and explain_error(text).key == "ordinal"


# --- display -------------------------------------------------------------------------------------------------

def test_text_and_html_views():
    e = explain_error("Tensor on device cpu is not on the expected device meta!")
    text = e.text()
    for part in ("Device error: Tensors on different devices", "You got: Tensor on device cpu", "Cause:", "Fix:",
                 "Learn more: 06_mismatch_errors, section 1. Meet the error"):
        assert part in text
    page = e._repr_html_()
    assert "<code>x = x.to(device)</code>" in page and "Learn more" in page


def test_html_escapes_what_was_pasted():
    evil = "<script>alert(1)</script> Expected all tensors to be on the same device, but found at least two devices, cpu and meta!"
    page = explain_error(evil)._repr_html_()
    assert "<script" not in page and "&lt;script&gt;" in page
    unknown = explain_error("<img src=x onerror=alert(1)>")._repr_html_()
    assert "<img" not in unknown


# --- lessons, docs, command line -----------------------------------------------------------------------------

def headings(notebook: str) -> set[str]:
    nb = json.loads((NOTEBOOK_DIR / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    found = set()
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            src = "".join(cell["source"])
            found |= {m.group(1).strip() for m in re.finditer(r"^#+\s+(.*)$", src, re.MULTILINE)}
    return found


@pytest.mark.parametrize("key", list(LESSONS))
def test_lessons_point_to_sections_that_exist(key):
    notebook, section = LESSONS[key]
    names = headings(notebook)
    for part in section.split(" › "):
        assert part in names, f"{notebook} has no heading {part!r}"


def test_the_error_index_is_generated_from_the_catalogue():
    spec = importlib.util.spec_from_file_location("error_index", ROOT / "scripts" / "error_index.py")
    error_index = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(error_index)
    committed = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert committed == error_index.render(), "docs/errors.md is out of date: run python scripts/error_index.py"
    for fam in FAMILIES:
        assert fam.title in committed
        for w in fam.wordings:
            assert " ".join(w.text.split()) in committed and " ".join(w.versions.split()) in committed
    assert "(docs/errors.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_command_line(capsys, monkeypatch):
    assert main(["explain", "Tensor on device cpu is not on the expected device meta!"]) == 0
    assert "Tensors on different devices" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(traceback_of("MPS backend out of memory (MPS allocated: 1 GB)")))
    assert main(["explain"]) == 0
    assert "MPS out of memory" in capsys.readouterr().out
    assert main(["explain", "expected scalar type Float but found Double"]) == 1
    assert "Not an error the course knows" in capsys.readouterr().out


def test_exported():
    assert cu.explain_error is explain_error and "explain_error" in cu.__all__


def test_a_new_family_is_one_entry_its_tailor_fits_the_text_to_the_message(monkeypatch):
    from dataclasses import replace

    def tailor(reading: errors.Reading) -> errors.Reading:
        return replace(reading, cause=f"{reading.groups['what']} is on {reading.a}. {reading.cause}")
    new = errors.Family("demo", "A demo", (r"(?P<what>\w+) is stuck on (?P<a>\w+)",),
                        (errors.Wording("x is stuck on cpu", "none", "this test"),), "It is stuck.", "Unstick it.",
                        tailor=tailor)
    monkeypatch.setattr(errors.catalogue, "FAMILIES", errors.FAMILIES + (new,))
    e = explain_error("RuntimeError: weight is stuck on CPU")
    assert e.key == "demo" and e.cause == "weight is on cpu. It is stuck." and e.fix == "Unstick it."
    assert e.devices == ("cpu",) and "demo" not in LESSONS



_ON_THE_SIMULATED_GPU = r"""
import json, torch
from torch import nn
import course_utils as cu
from course_utils.errors import explain_error

device = cu.setup()
a, b = torch.ones(3, device=device), torch.ones(3)
layer, x = nn.Linear(3, 2).to(device), torch.ones(1, 3)
said = {}
for name, action in (("plain", lambda: a + b), ("layer", lambda: layer(x))):
    try:
        action()
    except RuntimeError as error:
        e, pasted = explain_error(error), explain_error(str(error))
        said[name] = {"cause": e.cause, "fix": e.fix, "pasted_fix": pasted.fix}
print("RESULT", json.dumps(said))
"""


@pytest.fixture(scope="module")
def explained_on_the_simulated_gpu() -> dict:
    """What explain_error says of errors raised, tracebacks and all, on the simulated GPU (in a process of its own:
    its registration cannot be undone)."""
    import subprocess
    import sys
    if not simdevice.available():
        pytest.skip("the simulated GPU needs PyTorch 2.10+")
    done = subprocess.run([sys.executable, "-c", _ON_THE_SIMULATED_GPU], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stdout + done.stderr
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_a_mix_of_plain_tensors_is_not_told_to_move_a_model(explained_on_the_simulated_gpu):
    """Under ``a + b`` in a cell (a traceback with no layer in it) the fix speaks of tensors; pasted alone, the
    message may come from anywhere, so the fix names a model and its inputs."""
    e = explained_on_the_simulated_gpu["plain"]
    assert "model" not in e["fix"] and "model" not in e["cause"] and "`t = t.to(device)`" in e["fix"]
    assert "model.to(device)" in e["pasted_fix"]


def test_a_mix_inside_a_layer_keeps_the_model_in_the_fix(explained_on_the_simulated_gpu):
    e = explained_on_the_simulated_gpu["layer"]
    assert "`mat1` of" not in e["cause"] and "`addmm`" in e["cause"] and "wrapper_" not in e["cause"]
    assert "x = x.to(" in e["fix"]


def _anchors(path) -> set[str]:
    """The anchors JupyterLab and Notebook 7 give a notebook's headings: the text, ``-`` for spaces."""
    found = set()
    for cell in load(path)["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#"):
                    found.add(line.lstrip("#").strip().replace("`", "").replace(" ", "-"))
    return found


@pytest.mark.parametrize("key", sorted(errors.LESSONS))
def test_learn_more_links_to_a_heading_of_its_lesson(key):
    """The explanation's "Learn more" is a link to the heading that teaches the error, beside the lessons."""
    import urllib.parse
    html_text = errors.lesson_link(family(key).lesson)
    m = re.search(r"href='(\d\d_\w+)\.ipynb#([^']+)'", html_text)
    assert m, html_text
    assert urllib.parse.unquote(m.group(2)) in _anchors(NOTEBOOK_DIR / f"{m.group(1)}.ipynb"), html_text


def test_the_html_view_shows_the_fix_first_and_the_rest_on_request():
    """Under a traceback a learner sees the heading and the fix; the cause, the message and the lesson (and, under a
    notebook cell, the variables and the device map) open on request, from the keyboard too (details/summary)."""
    from course_utils.extension import ErrorHelp
    e = explain_error("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
    page = ErrorHelp(e, {"cuda:0": ["model"], "cpu": ["x"]}, used=["x"])._repr_html_()
    fix, opened = page.index("<b>Fix:</b>"), page.index("<details><summary>")
    assert page.index("Device error") < fix < opened < page.index("<b>Cause:</b>") < page.index("</details>")
    assert opened < page.index("Your variables on these devices") < page.index("</details>")
    assert page.count("course-error-help") == 1


# --- issue 38: the plain-list culprit, the driver too old, every quoted wording known ------------------

def test_a_layer_in_a_plain_list_gets_a_tailored_answer():
    from torch import nn

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(4, 2)]

        def forward(self, x):
            return self.layers[0](x)

    stack = Stack().to("meta")
    try:
        stack(torch.randn(3, 4, device="meta"))
    except Exception as error:
        told = explain_error(error)
    assert told.known and "`Stack.layers` is a plain Python list" in told.cause
    assert "nn.ModuleList" in told.fix and "model.to(\"meta\")" not in told.fix
    report = cu.explain_devices(stack, device="meta")
    assert report.mismatches == ["layers[0].bias", "layers[0].weight"]
    assert "self.layers = nn.ModuleList(...)" in report.text()


def test_registered_layers_also_kept_in_a_list_are_not_blamed():
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 2)
            self.shortcut = [self.body]          # registered elsewhere: not the culprit

        def forward(self, x):
            return self.body(x)

    try:
        Net().to("meta")(torch.randn(3, 4))
    except Exception as error:
        told = explain_error(error)
    assert told.known and "plain Python list" not in told.cause


def _told(model_class, x):
    """What the explainer says of the error ``model_class()`` on meta raises for input ``x``."""
    return explain_error(raised(lambda: model_class().to("meta")(x)))


def test_a_tensor_made_in_forward_is_named_with_its_fix():
    from torch import nn

    class Noisy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)

        def forward(self, batch):
            scale = torch.tensor(2.0)             # 0-dim on the CPU: mixes like a number, never the culprit
            noise = torch.randn(batch.shape[0], 2)
            return self.lin(batch) * scale + noise

    told = _told(Noisy, torch.randn(3, 4, device="meta"))
    assert told.known and "`noise` is made inside `Noisy.forward` and is on cpu" in told.cause
    assert "`batch` are on meta" in told.cause and "scale" not in told.cause
    assert "pass `device=batch.device`" in told.fix and "model.to" not in told.fix


def test_a_plain_tensor_attribute_is_named_with_its_fix():
    from torch import nn

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)
            self.scale = torch.ones(2)

        def forward(self, x):
            return self.lin(x) * self.scale

    told = _told(Scaled, torch.randn(3, 4, device="meta"))
    assert told.known and "`Scaled.scale` is a plain tensor attribute" in told.cause and "on cpu" in told.cause
    assert 'self.register_buffer("scale", ...)' in told.fix


def test_an_input_not_moved_keeps_the_general_fix():
    from torch import nn

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)

        def forward(self, x):
            mask = x > 0                             # made from the CPU input: not the culprit
            return self.lin(x * mask)

    told = _told(Plain, torch.randn(3, 4))
    assert told.known and "is made inside" not in told.cause and "plain tensor attribute" not in told.cause
    assert "x = x.to(device)" in told.fix


def test_the_driver_too_old_message_is_in_the_catalogue():
    told = explain_error("RuntimeError: The NVIDIA driver on your system is too old (found version 12080). Please "
                         "update your GPU driver")
    assert told.known and told.key == "no-cuda" and "nvidia-smi" in told.fix and "driver" in told.cause


def _quoted_wordings():
    """Every error wording the notebooks quote: Markdown code spans and blocks that look like PyTorch errors, and
    the messages cells expect in their `course.raises` metadata."""
    import json
    import re
    from pathlib import Path

    looks_like = re.compile(r"^(?:torch\.\w+(?:\.\w+)?|RuntimeError|AssertionError|NotImplementedError|IndexError|"
                            r"TypeError|AttributeError|UnpicklingError|KeyError|ValueError|UserWarning)(?::\s)")
    quotes = []
    for path in sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("0*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                blocks = re.findall(r"```\n(.*?)```", text, re.DOTALL)
                spans = re.findall(r"(?<!`)(``?)(?!`)(.+?)(?<!`)\1(?!`)", re.sub(r"```.*?```", "", text, flags=re.DOTALL),
                                   re.DOTALL)
                for quote in blocks + [s for _, s in spans]:
                    quote = " ".join(quote.split())
                    if looks_like.match(quote):
                        quotes.append((path.name, quote))
            raises = ((cell.get("metadata") or {}).get("course") or {}).get("raises")
            if raises:
                messages = raises["message"] if isinstance(raises["message"], list) else [raises["message"]]
                quotes += [(path.name, f"{raises['error']}: {m}") for m in messages if m]   # "" is no wording
    return quotes


def test_every_wording_the_notebooks_quote_is_known():
    quotes = _quoted_wordings()
    assert len(quotes) > 40                                  # the reader found the quotes
    assert any("Input type (torch.FloatTensor) and weight type" in q for _, q in quotes)
    unknown = [(name, q[:120]) for name, q in quotes if not explain_error(q).known]
    assert unknown == []


# --- round 3: the last error, no accelerator, the 0-dim rule, wordings of operations' own checks --------------

_MISMATCH = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


def _no_last_error(monkeypatch):
    for name in ("last_exc", "last_value", "last_type", "last_traceback"):
        monkeypatch.delattr("sys." + name, raising=False)


def test_explain_error_with_no_argument_explains_the_last_error(monkeypatch):
    import sys
    _no_last_error(monkeypatch)
    monkeypatch.setattr(sys, "last_value", RuntimeError(_MISMATCH), raising=False)   # what IPython records
    e = cu.explain_error()
    assert e.known and e.key == "devices" and e.devices == ("cuda:0", "cpu")
    if sys.version_info >= (3, 12):   # Python 3.12+ records sys.last_exc too: it comes first
        monkeypatch.setattr(sys, "last_exc", RuntimeError("CUDA error: invalid device ordinal"), raising=False)
        assert cu.explain_error().key == "ordinal"
    assert "the last error" in explain_error.__doc__ and "error: Any = _LAST" not in explain_error.__doc__


def test_explain_error_with_no_last_error_says_so_kindly(monkeypatch):
    _no_last_error(monkeypatch)
    e = cu.explain_error()
    assert isinstance(e, Explanation) and not e.known
    assert e.text().startswith("No error to explain yet") and "Not an error the course knows" not in e.text()
    assert "No error to explain yet" in e._repr_html_() and str(e) == e.text()


def test_explain_error_inside_except_explains_the_error_being_handled(monkeypatch):
    _no_last_error(monkeypatch)
    try:
        torch.ones(2, device="meta") + torch.ones(2)
    except RuntimeError:
        e = cu.explain_error()
    assert e.known and e.key == "devices"


def test_explain_error_in_ipython_explains_the_last_failing_cell():
    """In IPython (the extension's traceback handler on), a cell that fails records its error for the next cell."""
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "course_utils")
        ip.run_cell("import course_utils as cu; print('BEFORE', cu.explain_error().known)")
        ip.run_cell("import torch; from torch import nn; m = nn.Linear(2, 2).to('meta'); x = torch.ones(1, 2)")
        ip.run_cell("m(x)")
        ip.run_cell("e = cu.explain_error(); print('AFTER', e.known, e.key)")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert "AFTER True devices" in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


def test_cannot_access_accelerator_is_blamed_on_pinned_memory_and_torch_accelerator_not_cuda():
    e = explain_error("RuntimeError: Cannot access accelerator device when none is available.")
    assert e.key == "no-accelerator" and e.lesson == family("pin").lesson
    assert "pin_memory()" in e.fix and "torch.accelerator.is_available()" in e.fix
    assert "never print this" in e.cause and "`.cuda()`" in e.cause
    assert "pin_memory" not in family("no-cuda").patterns
    assert explain_error("AssertionError: Torch not compiled with CUDA enabled").key == "no-cuda"


@pytest.mark.skipif(torch.accelerator.is_available() or torch.backends.cuda.is_built(),
                    reason="a CPU-only build of PyTorch says these")
def test_the_calls_that_print_cannot_access_accelerator_on_a_cpu_only_build():
    import warnings
    wording = family("no-accelerator").wordings[0].text
    for call in (lambda: torch.ones(2).pin_memory(), lambda: torch.ones(2).untyped_storage().pin_memory(),
                 torch.accelerator.current_device_index, torch.accelerator.synchronize):
        error = raised(call)
        assert str(error) == wording and explain_error(error).key == "no-accelerator"
    assert str(raised(lambda: torch.ones(1).cuda())) == "Torch not compiled with CUDA enabled"   # not this wording
    error = raised(lambda: torch.empty(3, pin_memory=True))
    assert str(error) == family("no-accelerator").wordings[1].text and explain_error(error).key == "no-accelerator"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        next(iter(torch.utils.data.DataLoader(torch.ones(4, 2), batch_size=2, pin_memory=True)))
    said = [str(w.message) for w in caught if "pin_memory" in str(w.message)]
    assert said == [family("no-accelerator").wordings[3].text]
    assert explain_error("UserWarning: " + said[0]).key == "no-accelerator"


def test_the_rule_states_the_zero_dim_edges_exactly():
    """Only binary operations (one 0-dim CPU tensor), `torch.where`, `lerp`'s weight from 2.6 and `addcmul`'s tensor2
    take one on a GPU;
    the course's data of CUDA's checks (devicerules) agrees, run with meta as the GPU."""
    from course_utils.gpusim import rules
    rule = errors.tailors.SAME_DEVICE_RULE
    assert "element-wise math" not in rule and "one 0-dim CPU tensor joins an element-wise operation of two" in rule
    assert all(s in rule for s in ("`torch.where`", "`torch.lerp`'s weight from 2.6", "`addcmul`", "`clamp(min=t)`"))
    assert family("devices").cause.endswith(rule)
    gpu, cpu0 = torch.ones(3, device="meta"), torch.tensor(2.0)
    meta = lambda t: t.device.type == "meta"   # noqa: E731
    aten = torch.ops.aten
    assert rules.judge(aten.mul.Tensor, (gpu, cpu0), {}, meta) is None                       # binary: allowed
    assert rules.judge(aten.where.self, (gpu > 0, cpu0, torch.tensor(0.0)), {}, meta) is None
    assert rules.judge(aten.addcdiv.default, (gpu, gpu, cpu0), {}, meta) is not None          # ternary: refused
    # addcmul lets one in and reads it as tensor2 only; elsewhere its kernel refuses it in its own words (as a real
    # H100 did on 2.11: "CPU Scalar support for tensor1 argument is not supported ..."); two are too many
    assert rules.judge(aten.addcmul.default, (gpu, gpu, cpu0), {}, meta) is None
    tensor1 = rules.judge(aten.addcmul.default, (gpu, cpu0, gpu), {}, meta)
    assert tensor1.message.startswith("CPU Scalar support for tensor1 argument is not supported when calling addcmul")
    assert rules.judge(aten.addcmul.default, (cpu0, gpu, gpu), {}, meta).message.startswith(
        "CPU Scalar support for self argument")
    assert rules.judge(aten.addcmul.default, (gpu, cpu0, cpu0), {}, meta).message == rules.TOO_MANY_CPU_SCALARS
    assert explain_error(RuntimeError(tensor1.message)).key == "addcmul-scalar"
    assert rules.judge(aten.clamp.Tensor, (gpu, cpu0), {}, meta) is not None
    lerp = rules.judge(aten.lerp.Tensor, (gpu, gpu, cpu0), {}, meta)
    assert (lerp is None) == (rules.release() >= (2, 6))
    assert rules.CPU_SCALAR_ARGUMENT["lerp"] == ("weight", (2, 6)) and rules.ANY_CPU_SCALARS == {"where"}


def test_two_gpus_get_advice_about_two_gpus():
    for message in ("Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!",
                    "Expected all tensors to be on the same device, but got mat1 is on cuda:1, different from other "
                    "tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
                    "Expected tensor for argument #1 'input' to have the same device as tensor for argument #2 "
                    "'weight'; but device 1 does not equal 0 (while checking arguments for cudnn_convolution)"):
        e = explain_error(message)
        assert e.key == "devices" and set(e.devices) == {"cuda:0", "cuda:1"}, message
        assert "two GPUs" in e.cause and "CPU" not in e.cause, message
        assert "x.to(y.device)" in e.fix and "torch.cuda.set_device" in e.fix and "cpu" not in e.fix.lower(), message
        # the two causes of two GPUs: plain "cuda" (the current GPU) and an attribute DataParallel does not copy
        assert 'plain `"cuda"`, which means the current GPU' in e.cause and "`nn.DataParallel` does not copy" in e.cause
        assert "model.to(device)" not in e.fix and "0-dim" not in e.cause, message
    assert explain_error(_MISMATCH).cause.count("two GPUs") == 0   # a GPU and the CPU: the usual advice


def test_the_devices_cause_says_the_rule_plainly_before_its_edges():
    """One or two plain sentences first, then the edges (lerp's weight, addcmul's last factor, clamp, addmm, a CPU
    index), never a parenthesis before the point; a traceback without a layer leaves the model's sentence out."""
    cause = family("devices").cause
    plain, _, edges = cause.partition(" The few exceptions: ")
    assert plain.count(". ") <= 2 and "(" not in plain and "0-dim" not in plain, plain
    assert all(s in edges for s in ("`torch.lerp`'s weight", "`addcmul`'s last factor", "`clamp(min=t)`", "`addmm`",
                                    "CPU index")), edges
    bare = explain_error(traceback_of(_MISMATCH).replace("torch/nn/modules/module.py", "notebook.py"))
    assert "The few exceptions" in bare.cause and "made inside `forward`" not in bare.cause


def test_found_at_least_two_devices_names_the_gpu_first_not_the_order_met():
    """TensorIterator names its common device (the first non-CPU one) first: `cpu_t + gpu_t` reads `cuda:0 and cpu`,
    so the catalogue says so, and the explainer does not guess which tensor is odd."""
    source = family("devices").wordings[0].source
    assert "order met" not in source and "`cpu_t + gpu_t` reads `cuda:0 and cpu`" in source
    e = explain_error("RuntimeError: " + family("devices").wordings[0].text)
    assert e.cause.startswith("Your message names two devices, cuda:0 and cpu, but not which tensor is where.")


def test_the_pin_wording_is_the_type_name_releases_print():
    """Releases print the type's `toString()` ('CUDAFloatType', as 'MetaFloatType' on meta); the legacy
    'torch.cuda.FloatTensor' form is marked as quoted online, not checked."""
    current, older, meta = (w for w in family("pin").wordings)
    assert current.text == "cannot pin 'CUDAFloatType' only dense CPU tensors can be pinned"
    assert "2.10" in current.versions and "toString()" in current.source
    assert "torch.cuda.FloatTensor" in older.text and "quoted online" in older.versions
    assert "not checked" in older.versions
    error = raised(torch.ones(2, device="meta").pin_memory)
    assert str(error) == meta.text and explain_error(error).key == "pin"


def test_no_accelerator_says_only_is_available_is_safe_everywhere():
    """`current_accelerator()` names the build's accelerator (`cuda` on a CUDA build without a GPU), so it is no
    test; `memory_allocated()` and `empty_cache()` are said for the releases that have them (2.10 and newer)."""
    fam = family("no-accelerator")
    assert "safe everywhere (False, 0, None)" not in fam.fix and "device_count()" not in fam.fix
    assert "`torch.accelerator.is_available()` is the question that is safe everywhere" in fam.fix
    assert "`cuda` on a CUDA build without a GPU" in fam.fix
    assert "in 2.10 and newer" in fam.wordings[0].versions
    assert "memory calls read in 2.10, 2.13, 2.14" in fam.wordings[0].source
    assert all(callable(getattr(torch.accelerator, name, None)) for name in ("memory_allocated", "empty_cache"))


def test_sdpa_wording_names_the_odd_tensor_and_moves_it_to_the_gpu():
    e = explain_error("RuntimeError: Expected query, key, and value to have the same device type, but got "
                      "query.device: cuda:0 key.device: cuda:0 and value.device: cpu instead.")
    assert e.key == "op-devices" and e.argument == "value" and e.devices == ("cpu", "cuda:0")
    assert 'value = value.to("cuda:0")' in e.fix and "scaled_dot_product_attention" in e.cause
    import torch.nn.functional as F
    error = raised(lambda: F.scaled_dot_product_attention(torch.ones(1, 2, 4, 8), torch.ones(1, 2, 4, 8, device="meta"),
                                                          torch.ones(1, 2, 4, 8, device="meta")))
    assert str(error) == ("Expected query, key, and value to have the same device type, but got query.device: cpu "
                          "key.device: meta and value.device: meta instead.")
    e = explain_error(error)
    assert e.key == "op-devices" and e.argument == "query" and 'query = query.to("meta")' in e.fix


def test_searchsorted_and_cdist_device_checks():
    sorter = explain_error("torch.searchsorted(): sorter and boundary tensors should have same device type, but got "
                           "sorter tensor device type cpu and input value tensor device type cuda:0")
    assert sorter.key == "op-devices" and sorter.argument == "sorter" and "sorter.to(boundaries.device)" in sorter.fix
    values = explain_error("torch.searchsorted(): boundaries and input value tensors should have same device type, but "
                           "got boundaries tensor device type cpu and input value tensor device type cuda:0")
    assert values.key == "op-devices" and "boundaries.to(values.device)" in values.fix
    error = raised(lambda: torch.cdist(torch.ones(30, 3), torch.ones(30, 3, device="meta")))   # > 25 rows: own check
    assert str(error) == "X1 and X2 must have the same device type. X1: cpu X2: meta"
    e = explain_error(error)
    assert e.key == "op-devices" and "x1 = x1.to(x2.device)" in e.fix
    gpus = explain_error("RuntimeError: device of X1 (0) must match device of X2 (1)")
    assert gpus.key == "op-devices" and set(gpus.devices) == {"cuda:0", "cuda:1"}


def test_too_many_cpu_scalars_is_the_zero_dim_rule():
    e = explain_error("RuntimeError: Trying to pass too many CPU scalars to non-CPU kernel!")
    assert e.key == "cpu-scalars" and e.lesson == family("cpu-scalars").lesson
    assert LESSONS["cpu-scalars"] == ("06_mismatch_errors", "7. Where PyTorch does move a tensor for you")
    assert "only one" in e.cause and ".item()" in e.fix


def test_new_wordings_are_in_the_installed_wheel():
    """The fixed parts of the wordings this round added, in the installed build's string table."""
    import mmap
    from pathlib import Path
    library = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    if not library.exists():
        pytest.skip("no libtorch_cpu.so here")
    with library.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for piece in ("Trying to pass too many CPU scalars to non-CPU kernel!",
                      "Expected query, key, and value to have the same device type, but got query.device: ",
                      "torch.searchsorted(): sorter and boundary tensors should ",
                      "have same device type, but got sorter tensor device type ",
                      "should have same device type, but got boundaries tensor device type ",
                      "X1 and X2 must have the same device type. X1: ", ") must match device of X2 (",
                      "Cannot access accelerator device when none is available."):
            assert data.find(piece.encode()) >= 0, piece
        # a factory with pin_memory=True and no accelerator: one wording or the other (2.7 the older, 2.13 the newer)
        newer = data.find(b"pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator "
                          b"is available on this system.") >= 0
        older = data.find(b"Need to provide pin_memory allocator to use pin memory.") >= 0
        assert newer != older, (newer, older)
        if torch.__version__.startswith(("2.7.", "2.13.")):
            assert newer == torch.__version__.startswith("2.13."), "the catalogue's labels say so"


# --- accuracy round 4, section 3: the problems a beginner meets that the doctor did not name ---------------------

def test_out_of_memory_names_the_usual_reasons_and_a_load_onto_gpu_0():
    told = explain_error("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total")
    assert told.key == "cuda-oom" and told.cause.startswith("The GPU has no room for one more tensor.")
    assert "without `torch.no_grad()`" in told.cause and "without `map_location`" in told.cause
    assert "map_location=device" in told.fix and "`model.eval()` alone still records the graph" in told.fix
    in_load = explain_error('  File "/env/lib/python3.11/site-packages/torch/serialization.py", line 1, in load\n'
                            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert in_load.key == "cuda-oom" and in_load.cause.startswith("`torch.load` ran out of GPU memory")
    assert 'map_location="cpu"' in in_load.fix
    warned = explain_error("/env/torch/serialization.py:1328: FutureWarning: You are using torch.load with "
                           "weights_only=False\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    assert warned.key == "cuda-oom" and warned.cause.startswith("The GPU has no room")   # a warning is no frame


def test_mps_not_in_this_pytorch_or_not_usable_is_explained():
    try:
        torch.zeros(1).to("mps")
    except Exception as error:      # a Linux or Windows build: no MPS in it
        told = explain_error(error)
    else:
        pytest.skip("MPS is usable here")
    assert told.known and told.key == "mps-unavailable" and "Going further (optional) › MPS built" in told.lesson
    assert "torch.backends.mps.is_available()" in told.fix
    mac = explain_error("RuntimeError: The MPS backend is supported on MacOS 12.3+.Current OS version can be "
                        "queried using `sw_vers`")
    assert mac.key == "mps-unavailable" and "is_built()" in mac.cause


def test_the_doctor_blames_no_tensor_it_cannot_be_sure_of():
    """Cases where a named culprit would be wrong: the general cause stays (the review's learner mistakes)."""
    from torch import nn

    class MovesItsInput(nn.Module):            # the model never moved; forward moves the input itself
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            moved = x.to("meta")
            return self.fc(moved)

    class KeepsACpuCopy(nn.Module):            # the input was not moved; a CPU attribute is kept for plotting
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)
            self.last = torch.zeros(2)

        def forward(self, x):
            return self.fc(x)

    class TwoCpuTensors(nn.Module):            # lengths kept on the CPU on purpose, and another CPU tensor
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            lengths, h0 = torch.tensor([3, 2, 1]), torch.zeros(3, 2)
            return self.fc(x) + h0 * lengths[:, None]

    told = [explain_error(raised(lambda: MovesItsInput()(torch.randn(3, 4)))),
            _told(KeepsACpuCopy, torch.randn(3, 4)), _told(TwoCpuTensors, torch.randn(3, 4, device="meta"))]
    for explanation in told:
        assert explanation.known and "is made inside" not in explanation.cause, explanation.cause
        assert "plain tensor attribute" not in explanation.cause, explanation.cause

    def train_step(model, x):                  # a function, not a method, whose first argument is the model
        noise = torch.randn(3, 2)
        return model(x) + noise

    free = explain_error(raised(lambda: train_step(nn.Linear(4, 2).to("meta"), torch.randn(3, 4, device="meta"))))
    assert free.known and "Linear.train_step" not in free.cause
