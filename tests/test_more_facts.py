"""More PyTorch facts the lessons teach (issue 11, items 17-20), run directly against the installed PyTorch.

Like ``test_teaching_facts.py``: each test repeats a fact a notebook cell demonstrates, so the suite fails by name
the day a PyTorch release changes it. Facts only an accelerator can show are marked ``gpu`` (skipped visibly
elsewhere) and also skip unless that accelerator is the one they need.
"""
from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
mps_only = pytest.mark.skipif(not torch.backends.mps.is_available(), reason="needs Apple's MPS")


def raised(fn, kind=RuntimeError) -> str:
    with pytest.raises(kind) as info:
        fn()
    return str(info.value)


# --- item 17: NumPy interop (lesson 03) ----------------------------------------------------------------

def test_numpy_refuses_a_meta_tensor_with_a_typeerror_that_names_the_device():
    message = raised(lambda: torch.ones(3, device="meta").numpy(), TypeError)
    assert message == ("can't convert meta device type tensor to numpy. "
                       "Use Tensor.cpu() to copy the tensor to host memory first.")


@pytest.mark.gpu
@cuda_only
def test_numpy_refuses_a_cuda_tensor():
    message = raised(lambda: torch.ones(3, device="cuda:0").numpy(), TypeError)
    assert message == ("can't convert cuda:0 device type tensor to numpy. "
                       "Use Tensor.cpu() to copy the tensor to host memory first.")


def test_numpy_refuses_a_tensor_that_requires_grad():
    message = raised(lambda: torch.ones(3, requires_grad=True).numpy())
    assert message == "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    assert torch.ones(3, requires_grad=True).detach().cpu().numpy().tolist() == [1.0, 1.0, 1.0]


def test_from_numpy_shares_memory_and_torch_tensor_copies():
    a = np.arange(3.0)
    shared, copied = torch.from_numpy(a), torch.tensor(a)
    a[0] = 100.0
    assert shared[0].item() == 100.0 and copied[0].item() == 0.0


@pytest.fixture
def restore_default_device():
    yield
    torch.set_default_device(None)


def test_from_numpy_ignores_the_default_device_and_torch_tensor_follows_it(restore_default_device):
    a = np.arange(3.0)
    with torch.device("meta"):
        assert torch.from_numpy(a).device.type == "cpu"
        assert torch.tensor(a).device.type == "meta"
    torch.set_default_device("meta")
    assert torch.from_numpy(a).device.type == "cpu"
    assert torch.tensor(a).device.type == "meta"


# --- item 18: random numbers per device (lesson 04) --------------------------------------------------------

def test_manual_seed_repeats_the_numbers_and_is_documented_for_all_devices():
    torch.manual_seed(0)
    first = torch.randn(3)
    torch.manual_seed(0)
    assert torch.equal(first, torch.randn(3))
    assert "on all devices" in " ".join(torch.manual_seed.__doc__.split())


def test_a_generator_on_the_cpu_reseeds_its_own_stream():
    g = torch.Generator(device="cpu").manual_seed(42)
    x = torch.randn(3, generator=g)
    g.manual_seed(42)
    assert g.device.type == "cpu" and torch.equal(x, torch.randn(3, generator=g))


@pytest.mark.gpu
@cuda_only
def test_same_seed_gives_different_numbers_on_cpu_and_cuda():
    torch.manual_seed(0)
    on_cpu = torch.randn(3)
    torch.manual_seed(0)
    on_gpu = torch.randn(3, device="cuda")
    assert not torch.equal(on_cpu, on_gpu.cpu())
    torch.manual_seed(0)                                  # manual_seed seeds CUDA too
    assert torch.equal(on_gpu, torch.randn(3, device="cuda"))


@pytest.mark.gpu
@cuda_only
def test_a_generator_must_match_the_tensors_device_type():
    message = raised(lambda: torch.randn(3, device="cuda", generator=torch.Generator()))
    assert "Expected a 'cuda' device type for generator but found 'cpu'" in message
    message = raised(lambda: torch.randn(3, generator=torch.Generator(device="cuda")))
    assert "Expected a 'cpu' device type for generator but found 'cuda'" in message
    g = torch.Generator(device="cuda").manual_seed(42)
    assert torch.randn(3, device="cuda", generator=g).device.type == "cuda"


# --- item 19: checkpoints (lesson 06) -------------------------------------------------------------------

def test_torch_load_defaults_to_weights_only_and_loads_a_state_dict(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save(nn.Linear(4, 2).state_dict(), path)
    assert list(torch.load(path)) == ["weight", "bias"]
    # None in the signature means "weights_only=True unless TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD says otherwise"
    assert inspect.signature(torch.load).parameters["weights_only"].default is None


def test_torch_load_refuses_a_pickled_module_by_default(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", raising=False)
    path = tmp_path / "model.pt"
    torch.save(nn.Linear(4, 2), path)
    message = raised(lambda: torch.load(path), pickle.UnpicklingError)
    assert "Weights only load failed" in message and "weights_only" in message
    assert "torch.nn.modules.linear.Linear" in message
    assert isinstance(torch.load(path, weights_only=False), nn.Linear)     # trusted file only


def test_meta_model_then_to_empty_then_load_state_dict():
    checkpoint = nn.Linear(64, 64).state_dict()
    with torch.device("meta"):
        model = nn.Linear(64, 64)
    assert model.weight.device.type == "meta"
    assert model.to_empty(device="cpu") is model                  # in place, like Module.to
    model.load_state_dict(checkpoint)
    assert model.weight.device.type == "cpu" and torch.equal(model.weight, checkpoint["weight"])


def test_load_state_dict_into_meta_without_to_empty_is_a_warned_no_op():
    with torch.device("meta"):
        model = nn.Linear(4, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.load_state_dict(nn.Linear(4, 2).state_dict())
    assert model.weight.device.type == "meta"
    assert any("no-op" in str(w.message) and "assign=True" in str(w.message) for w in caught)


def test_load_state_dict_assign_takes_the_tensors_themselves():
    state = nn.Linear(4, 2).state_dict()
    with torch.device("meta"):
        model = nn.Linear(4, 2)
    model.load_state_dict(state, assign=True)
    assert model.weight.device.type == "cpu" and model.weight.data_ptr() == state["weight"].data_ptr()
    assert isinstance(model.weight, nn.Parameter)


# --- item 20: MPS specifics (lesson 04) -----------------------------------------------------------------

@pytest.mark.gpu
@mps_only
def test_mps_has_no_float64():
    """Moving a float64 tensor there and making one there raise the same TypeError: ATen's MPS allocation
    (``empty_mps``, ``empty_strided_mps`` in ``aten/src/ATen/mps/EmptyTensor.cpp``) refuses Double."""
    wording = ("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please "
               "use float32 instead.")
    assert raised(lambda: torch.zeros(2, dtype=torch.float64).to("mps"), TypeError) == wording
    assert raised(lambda: torch.zeros(2, dtype=torch.float64, device="mps"), TypeError) == wording


def test_mps_and_accelerator_have_a_synchronize():
    assert callable(torch.mps.synchronize) and callable(torch.accelerator.synchronize)


@pytest.mark.skipif(torch.accelerator.is_available(), reason="shows the no-accelerator path")
def test_accelerator_synchronize_raises_without_an_accelerator():
    message = raised(torch.accelerator.synchronize)
    if torch.backends.cuda.is_built():   # a CUDA build without a GPU: the driver's words
        assert message.startswith(("Found no NVIDIA driver", "No CUDA GPUs are available")), message
    else:
        assert message == "Cannot access accelerator device when none is available."


def test_dataloader_turns_pin_memory_off_on_mps():
    """Read from the source (no Mac here): the DataLoader's warning when pinning for MPS."""
    source = inspect.getsource(torch.utils.data.dataloader)
    assert "'pin_memory' argument is set as true but not supported on MPS now" in source


@pytest.mark.skipif(torch.accelerator.is_available(), reason="shows the no-accelerator path")
def test_dataloader_pin_memory_without_an_accelerator_warns_and_does_not_pin():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(DataLoader(torch.arange(4.0), batch_size=2, pin_memory=True))
    assert not batches[0].is_pinned()
    assert any("no accelerator is found" in str(w.message) for w in caught)


@pytest.mark.gpu
@cuda_only
def test_dataloader_pin_memory_pins_for_cuda():
    batches = list(DataLoader(torch.arange(4.0), batch_size=2, pin_memory=True))
    assert batches[0].is_pinned()
