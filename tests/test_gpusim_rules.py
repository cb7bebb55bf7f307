"""course_utils.devicerules: the CUDA device checks the simulated GPU follows, pinned against the
installed PyTorch's own list of operators (``native_functions.yaml``, shipped in the wheel with torchgen), read here
with PyYAML rather than with torchgen, as ``scripts/device_rules.py`` reads it."""
from __future__ import annotations

import json
import re
from importlib.util import find_spec
from pathlib import Path

import pytest
import torch

from course_utils.gpusim import rules as devicerules

#: Kernels the lessons and checks meet, with the names a CUDA build prints (read in PyTorch's error strings).
KNOWN = {"mm": "wrapper_CUDA_mm", "addmm": "wrapper_CUDA_addmm", "addmm.out": "wrapper_CUDA_addmm_out_out",
         "bmm": "wrapper_CUDA_bmm", "addmv_": "wrapper_CUDA_addmv_", "dot": "wrapper_CUDA__dot",
         "cat": "wrapper_CUDA_cat", "index_select": "wrapper_CUDA__index_select",
         "index_select.out": "wrapper_CUDA_out_index_select_out", "gather": "wrapper_CUDA_gather",
         "scatter.src": "wrapper_CUDA_scatter_src", "scatter_.src": "wrapper_CUDA_scatter__src",
         "index_add_": "wrapper_CUDA_index_add_", "masked_select": "wrapper_CUDA__masked_select",
         "clamp.Tensor": "wrapper_CUDA_clamp_Tensor", "nll_loss_forward": "wrapper_CUDA_nll_loss_forward",
         "native_layer_norm": "wrapper_CUDA__native_layer_norm", "_embedding_bag": "wrapper_CUDA___embedding_bag",
         "bucketize.Tensor": "wrapper_CUDA_Tensor_bucketize", "searchsorted.Tensor": "wrapper_CUDA_Tensor_searchsorted",
         "linalg_cross": "wrapper_CUDA_linalg_cross", "_cdist_forward": "wrapper_CUDA___cdist_forward",
         "native_batch_norm": "wrapper_CUDA__native_batch_norm", "grid_sampler_2d": "wrapper_CUDA__grid_sampler_2d"}


def _native_functions() -> dict[str, dict]:
    yaml = pytest.importorskip("yaml")
    spec = find_spec("torchgen")
    path = Path(spec.origin).parent / "packaged" / "ATen" / "native" / "native_functions.yaml" if spec else None
    if path is None or not path.exists():
        pytest.skip("this PyTorch does not ship native_functions.yaml")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return {entry["func"].split("(")[0]: entry for entry in yaml.load(path.read_text(), Loader=loader)}


@pytest.fixture(scope="module")
def native_functions() -> dict[str, dict]:
    return _native_functions()


def _has_cuda_kernel(entries: dict, name: str) -> bool:
    entry = entries[name]
    keys = {key.strip() for line in (entry.get("dispatch") or {}) for key in line.split(",")}
    return "CUDA" in keys or bool(entry.get("structured_delegate")
                                  and _has_cuda_kernel(entries, entry["structured_delegate"]))


def _cuda_wrapper(entries: dict, name: str) -> str:
    """The name torchgen gives the CUDA kernel's wrapper (``register_dispatch_key.py``)."""
    entry = entries[name]
    base, _, overload = name.partition(".")
    out = "_out" if re.search(r"\*,[^)]*Tensor\(\w!\)", entry["func"].split("->")[0]) else ""   # an out= form
    if entry.get("structured_delegate") or entry.get("structured"):
        return f"wrapper_CUDA_{base}{out}{'_' + overload if overload else ''}"
    return f"wrapper_CUDA_{overload}_{base}{out}"


def _checked_here() -> dict:
    return devicerules._tables(devicerules.release())[0]


def test_the_data_names_every_release_the_course_declares():
    data = json.loads(devicerules._DATA.read_text(encoding="utf-8"))
    from course_utils.runtime import MIN_TORCH
    assert data["releases"][0] == ".".join(map(str, MIN_TORCH))
    assert devicerules.release(data["releases"][-1]) >= (2, 15)


@pytest.mark.parametrize("op", sorted(KNOWN))
def test_the_kernels_the_course_meets_are_checked_by_argument(op):
    assert devicerules.checked_arguments(op)[0] == KNOWN[op]


def test_every_checked_kernel_of_this_release_is_in_the_data_and_named_as_cuda_names_it(native_functions):
    """The data, as resolved for the installed release (the newest rules for a release newer than the data), against
    this release's own YAML: the same operators, the same wrapper names."""
    checked = _checked_here()
    yaml_checked = {name for name, entry in native_functions.items()
                    if entry.get("device_check") != "NoCheck" and _has_cuda_kernel(native_functions, name)}
    plain = {name for name in yaml_checked if not name.startswith("_") and "backward" not in name}
    assert plain <= set(checked), sorted(plain - set(checked))[:20]
    wrong = {op: (wrapper, _cuda_wrapper(native_functions, op)) for op, (wrapper, _) in checked.items()
             if op in native_functions and wrapper != _cuda_wrapper(native_functions, op)}
    assert not wrong, list(wrong.items())[:10]


@pytest.mark.parametrize("op", ["_slow_conv2d_forward", "slow_conv_dilated2d", "slow_conv_dilated3d",
                                "slow_conv_transpose2d", "slow_conv_transpose3d"])
def test_the_slow_convolutions_check_each_argument(native_functions, op):
    assert native_functions[op].get("device_check") != "NoCheck" and _has_cuda_kernel(native_functions, op)
    assert _cuda_wrapper(native_functions, op) in devicerules.SLOW_CONVOLUTION.values()


@pytest.mark.parametrize("op", sorted(devicerules.COMPOSITE) + ["convolution"])
def test_the_composite_ops_have_no_cuda_kernel_of_their_own(native_functions, op):
    assert not _has_cuda_kernel(native_functions, op)


@pytest.mark.parametrize("overload", sorted(devicerules.ELEMENTWISE) + [
    "add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "pow.Tensor_Tensor", "where.self", "eq.Tensor",
    "lt.Tensor", "maximum.default", "add_.Tensor", "lerp.Tensor"])
def test_the_elementwise_ops_leave_the_device_check_to_tensoriterator(native_functions, overload):
    packet, _, name = overload.partition(".")
    yaml_name = packet if name == "default" or not name else overload
    assert native_functions[yaml_name if yaml_name in native_functions else packet].get("device_check") == "NoCheck"
    op = getattr(getattr(torch.ops.aten, packet), name or "default")
    assert devicerules.is_tensor_iterator(op)


def test_the_wordings_per_release():
    assert devicerules.per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", "2.7.0") == (
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
        "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)")
    assert devicerules.per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", "2.15.0") == (
        "Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on "
        "cuda:0 (when checking argument in method wrapper_CUDA_addmm)")
    assert devicerules.release("2.10.0a0+git12ab") == (2, 10)
