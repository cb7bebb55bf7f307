"""The simulated-device tier: every check under accelerators with real devices' rules, on a CPU.

``meta`` stands in for the accelerator on a CPU-only machine but is more lenient than real
devices. ``simulated_devices`` adds MPS's "no float64" rule, CUDA's per-argument device checks
and the bookkeeping of a second GPU; here every check's reference, stub and notable correct
answers run under the first two, a few known-wrong answers must still fail, and the device
helpers are tested on the third. The last section proves the simulations themselves honest.
"""
from __future__ import annotations

import collections
import functools
import os
import sys

import pytest
import torch
import torch.utils._pytree as pytree
from torch import nn
from torch.accelerator import current_accelerator, is_available   # bound to the real functions

import course_utils as cu
import test_lesson02 as lesson02
import test_lesson03 as lesson03
import test_lesson04 as lesson04
import test_lesson05 as lesson05
import test_lesson06 as lesson06
import test_lesson07 as lesson07
from course_utils import device as course_device
from course_utils import runtime, timing, transfer
from course_utils.exercises import exercise_ids, get_exercise
from simulated_devices import (STRICT_RULES, cuda_rules, cuda_rules_fixture, mps_rules,  # noqa: F401
                               mps_rules_fixture, per_argument_message, second_gpu, second_gpu_fixture)
from test_exercises import as_kind

IDS = exercise_ids()
RULES = sorted(STRICT_RULES)
INF = float("-inf")
THIS_MODULE = sys.modules[__name__]


def check_under(rules: str, exercise_id: str, answer):
    """``cu.check`` on a simulated machine; names this module imported from ``torch.accelerator``
    report the simulated accelerator too, as they would on a real one."""
    with STRICT_RULES[rules](rebind=[THIS_MODULE]):
        return cu.check(exercise_id, answer)


# --- correct answers written with names imported from torch.accelerator ------------------------

def pick_device_by_name():
    if is_available():
        return current_accelerator()
    return torch.device("cpu")


def to_accelerator_by_name(t):
    if not is_available():
        return t
    return t.to(current_accelerator())


# --- correct answers other than the reference ----------------------------------------------------

class DiagonalScaler(nn.Module):
    """06.scaler through a matrix product: the constant is a buffer, so it follows `.to`."""

    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return x @ torch.diag(self.scale).to(x.dtype)


def consume_prefix_copy(state, prefix="module."):
    """08.strip_prefix with PyTorch's own helper, on a copy (it edits the dict it is given)."""
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
    copy = collections.OrderedDict(state)
    consume_prefix_in_state_dict_if_present(copy, prefix)
    return dict(copy)


def capstone_with(*edits: tuple[str, str]) -> type:
    """07.capstone's reference ``Classifier`` with ``(old, new)`` replacements in its source: another correct fix."""
    source = get_exercise("07.capstone").solution_source
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    namespace = {"torch": torch, "nn": nn, "F": torch.nn.functional}
    exec(source, namespace)
    return namespace["Classifier"]


ALTERNATIVES = {
    "01.nbytes": {"t.nbytes": lambda t: t.nbytes},
    "01.blank_like": {"new_zeros": lambda t: t.new_zeros(t.shape),
                      "zeros(device=t.device)": lambda t: torch.zeros(t.shape, dtype=t.dtype, device=t.device)},
    "02.pick_device": {
        "check_available=True": lambda: torch.accelerator.current_accelerator(check_available=True)
        or torch.device("cpu"),
        "type only": lambda: torch.device(torch.accelerator.current_accelerator().type
                                          if torch.accelerator.is_available() else "cpu"),
        "with index": lambda: (torch.device(torch.accelerator.current_accelerator().type,
                                            torch.accelerator.current_device_index())
                               if torch.accelerator.is_available() else torch.device("cpu")),
        "cu.best_device": cu.best_device,
        "imported by name": pick_device_by_name,
    },
    "02.matmul_flops": {"n*n*n*2": lambda n: n * n * n * 2},
    "03.to_device": {
        "type(obj)(...)": lesson03._with_type,
        "pytree.tree_map_only": lambda obj, device: pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), obj),
    },
    "03.prepare": {
        "one line": lambda model, batch, device: (model.to(device), batch.to(device)),
        "keyword device": lambda model, batch, device: (model.to(device=device), batch.to(device=device)),
    },
    "04.to_accelerator": {
        "best_device": lesson04.best_device_answer,
        "explicit index": lesson04.explicit_index,
        "walrus": lesson04.documented_walrus,
        "imported by name": to_accelerator_by_name,
    },
    "04.mask_future": {
        "ones_like triu": lambda s: s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), INF),
        "where": lambda s: torch.where(lesson04._future(s), INF, s),
        "cpu mask moved": lambda s: s.masked_fill(
            torch.ones(s.shape[-1], s.shape[-1], dtype=torch.bool).triu(1).to(s.device), INF),
        "arange compare": lambda s: s.masked_fill(torch.arange(s.shape[-1], device=s.device)[None, :]
                                                  > torch.arange(s.shape[-1], device=s.device)[:, None], INF),
    },
    "05.is_on": {
        "symmetric": lambda x, w: (lesson05._dev(x).type == torch.device(w).type
                                   and None in (lesson05._dev(x).index, torch.device(w).index)
                                   or lesson05._dev(x) == torch.device(w)),
        "through torch.device": lambda x, w: (lambda a, b: a.type == b.type and b.index in (None, a.index))(
            torch.device(lesson05._dev(x)), torch.device(w)),
    },
    "05.model_device": {
        "set of all": lambda m: lesson05._unique({t.device for t in lesson05._all(m)}),
        "lists": lambda m: lesson05._unique({t.device for t in list(m.parameters()) + list(m.buffers())},
                                            message="found {}"),
    },
    "05.training_bytes": {
        "nelement": lambda m, o: sum(p.nelement() * p.element_size() for p in m.parameters()) * lesson05._COPIES[o],
        "per tensor": lambda m, o: sum(lesson05._COPIES[o] * p.numel() * p.element_size() for p in m.parameters()),
    },
    "06.find_mismatches": {
        "str compare": lambda model, inputs, device: sorted(
            n for n, t in lesson06._named(model, inputs) if str(t.device) != str(device)),
        "three lists": lambda model, inputs, device: sorted(
            [n for n, p in model.named_parameters() if p.device != torch.device(device)]
            + [n for n, b in model.named_buffers() if b.device != torch.device(device)]
            + [k for k in inputs if inputs[k].device != torch.device(device)]),
    },
    "06.scaler": {
        "non-persistent": lesson06.NonPersistent,
        "integer twos": lesson06.IntegerTwos,
        "nn.Buffer": lesson06.ViaBufferClass,
        "diag matmul": DiagonalScaler,
    },
    "07.bandwidth_gbps": {"n/(s*1e9)": lambda n, s: n / (s * 1e9)},
    "07.transfer_time": {"n/bw/1e9": lambda n, lat, bw: lat + n / bw / 1e9},
    "07.sum_batches": {
        "loop on device": lesson07.loop_on_device,
        "cat then view": lesson07.cat_then_view,
        "copy into buffer": lesson07.copy_into_buffer,
        "python sum": lambda batches, device: sum(torch.stack(batches).to(device)),
        "reduce add": lambda batches, device: functools.reduce(
            torch.add, torch.stack(batches).to(device).unbind(0)).clone(),
        "non_blocking": lambda batches, device: torch.stack(batches).to(device, non_blocking=True).sum(
            0, dtype=batches[0].dtype),
    },
    "07.capstone": {
        "moved with .to(x.device)": capstone_with(("torch.linspace(0.5, 1.0, x.shape[1], device=x.device)",
                                                   "torch.linspace(0.5, 1.0, x.shape[1]).to(x.device)")),
        "a Python number for the total": capstone_with(("total = torch.zeros((), device=device)", "total = 0"),
                                                       ("total += loss.detach()", "total = total + loss.detach()")),
    },
    "08.strip_prefix": {
        "removeprefix": lambda state, prefix="module.": {k.removeprefix(prefix): v for k, v in state.items()},
        "consume_prefix_in_state_dict_if_present": consume_prefix_copy,
    },
    "08.bad_labels": {
        "loop": lambda labels, n, ignore_index=-100: [
            i for i, v in enumerate(labels.tolist()) if not 0 <= v < n and v != ignore_index],
        "torch.where": lambda labels, n, ignore_index=-100: torch.where(
            ((labels < 0) | (labels >= n)) & (labels != ignore_index))[0].tolist(),
    },
}


def _alternative_cases():
    return [pytest.param(rules, ex_id, answer, id=f"{rules}-{ex_id}-{name}")
            for rules in RULES for ex_id, named in ALTERNATIVES.items() for name, answer in named.items()]


def stub(*args, **kwargs):
    raise NotImplementedError


# --- every check, under each set of rules ----------------------------------------------------------

def test_every_exercise_has_alternatives_here():
    assert sorted(ALTERNATIVES) == IDS


@pytest.mark.parametrize("ex_id", IDS)
@pytest.mark.parametrize("rules", RULES)
def test_reference_passes(rules, ex_id):
    result = check_under(rules, ex_id, get_exercise(ex_id).reference)
    assert result.passed, result.text()


@pytest.mark.parametrize("ex_id", IDS)
@pytest.mark.parametrize("rules", RULES)
def test_stub_is_not_attempted(rules, ex_id):
    result = check_under(rules, ex_id, as_kind(get_exercise(ex_id), stub))
    assert result.status == "not attempted", result.text()


@pytest.mark.parametrize("rules, ex_id, answer", _alternative_cases())
def test_correct_alternative_passes(rules, ex_id, answer):
    result = check_under(rules, ex_id, answer)
    assert result.passed, result.text()


class MadeInForwardMatmul(nn.Module):
    """06.scaler, wrong: the matrix is made in forward, on the CPU, and meets `x` in a matmul."""

    def __init__(self, features):
        super().__init__()
        self.register_buffer("scale", torch.full((features,), 2.0))

    def forward(self, x):
        return x @ torch.diag(torch.full((x.shape[-1],), 2.0, dtype=x.dtype))


def hard_coded_cuda():
    return torch.device("cuda")


WRONG = [  # (exercise, answer, what the feedback says, the rules it runs under)
    ("04.to_accelerator", lesson04.always_cuda, "only works with CUDA", RULES),
    ("04.to_accelerator", lesson04.cuda_check_only, "Testing `torch.cuda.is_available()`", RULES),
    ("02.pick_device", hard_coded_cuda, "but your function returned `cuda`", RULES),
    ("02.pick_device", lesson02.cuda_only, "but your function returned `cpu`", RULES),
    ("03.prepare", lesson03.moved_model_not_batch, "moved the model but not the batch", RULES),
    ("04.mask_future", lesson04.mask_on_default_device, "ended up on different devices", RULES),
    ("06.find_mismatches", lesson06.compares_type_only, "ignores the device index", RULES),
    # meta's own `mm` accepts a CPU operand; the check compares devices itself, so all rules catch it
    ("06.scaler", MadeInForwardMatmul, "a tensor created there with no device", RULES),
    ("07.sum_batches", lesson07.per_batch, "one transfer per batch", RULES),
    ("07.sum_batches", lesson07.never_moves, "the batches were never moved to the device", RULES),
]


@pytest.mark.parametrize("rules, ex_id, answer, says", [
    pytest.param(rules, ex_id, answer, says, id=f"{rules}-{ex_id}-{getattr(answer, '__name__', 'lambda')}")
    for ex_id, answer, says, under in WRONG for rules in under])
def test_known_wrong_answer_fails(rules, ex_id, answer, says):
    result = check_under(rules, ex_id, answer)
    assert not result.passed and says in result.feedback, result.text()


@pytest.mark.parametrize("rules", RULES)
def test_sum_batches_that_never_moves_is_told_to_move_not_to_stay(rules):
    feedback = check_under(rules, "07.sum_batches", lesson07.never_moves).feedback
    assert "never moved" in feedback and ".to(device)" in feedback, feedback
    assert "do not move it back" not in feedback and ".cpu()" not in feedback, feedback


# --- a second GPU: the right device is made current and synchronised -----------------------------

def test_setup_makes_the_indexed_course_device_current(second_gpu, capsys):
    assert torch.accelerator.current_device_index() == 0
    device = runtime.setup("04")
    assert device == torch.device("cuda", 1)
    assert second_gpu.set_calls == [1] and torch.accelerator.current_device_index() == 1
    assert "cuda:1" in capsys.readouterr().out


def test_time_it_synchronises_the_device_it_is_given_not_the_current_one(second_gpu):
    gpu1 = torch.device("cuda", 1)
    timing.time_it(lambda: None, device=gpu1, min_run_time=0.01)
    assert second_gpu.synchronized and set(second_gpu.synchronized) == {gpu1}
    assert torch.accelerator.current_device_index() == 0        # timing does not change the current device


def test_seconds_per_call_synchronises_the_device_it_is_given(second_gpu):
    transfer.seconds_per_call(lambda: None, torch.device("cuda", 1), min_time=0.001)
    assert second_gpu.synchronized and set(second_gpu.synchronized) == {torch.device("cuda", 1)}


def test_without_course_device_the_current_gpu_is_chosen(second_gpu, monkeypatch):
    monkeypatch.delenv(course_device.DEVICE_ENV)
    assert course_device.best_device() == torch.device("cuda", 0)
    torch.accelerator.set_device_index(1)       # device_index(), the context manager, is 2.8+
    assert course_device.best_device() == torch.device("cuda", 1)


def test_course_device_beyond_the_device_count_is_refused():
    with second_gpu(course_device_index=3):
        with pytest.raises(RuntimeError, match=r"has 2 cuda device\(s\), numbered 0 to 1"):
            course_device.best_device()
        with pytest.raises(RuntimeError, match="COURSE_DEVICE='cuda:3'"):
            runtime.setup()


# --- the simulations are honest ------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: torch.zeros(2, dtype=torch.float64, device="meta"),
    lambda: torch.ones(2, dtype=torch.float64).to("meta"),
    lambda: torch.ones(2, device="meta").to(torch.float64),
    lambda: torch.ones(2, device="meta").double(),
    lambda: torch.randn(2, 2, dtype=torch.complex128, device="meta"),
], ids=["factory", "move", "cast", "double", "complex128"])
def test_mps_rules_refuse_float64_on_the_accelerator(mps_rules, make):
    with pytest.raises(TypeError, match="MPS framework doesn't support float64"):
        make()


def test_mps_rules_allow_everything_else(mps_rules):
    assert torch.zeros(2, dtype=torch.float32, device="meta").dtype == torch.float32
    assert torch.ones(2, dtype=torch.float16).to("meta").device.type == "meta"
    assert torch.ones(2, dtype=torch.float64).sum().dtype == torch.float64     # float64 on the CPU is fine
    assert not course_device.supports_dtype("meta", torch.float64)
    assert course_device.supports_dtype("meta", torch.float32) and course_device.supports_dtype("cpu", torch.float64)


#: What CUDA's per-argument check says for a Linear layer on cuda:0 and a CPU batch, by version (2.7 is the floor).
LINEAR_ON_CUDA = {
    "2.7": "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when "
           "checking argument for argument mat1 in method wrapper_CUDA_addmm)",
    "2.8": "Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on "
           "cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
}


@pytest.mark.parametrize("version, expected", [
    ("2.7.0", "2.7"), ("2.7.1+cu126", "2.7"), ("2.8.0", "2.8"), ("2.8.0a0+git5e2ef2a", "2.8"), ("2.13.0+cpu", "2.8"),
    ("2.14.1", "2.8"), ("3.0.0", "2.8")])
def test_per_argument_message_has_each_versions_wording(version, expected):
    assert per_argument_message("mat1", "cpu", "cuda:0", "wrapper_CUDA_addmm", version) == LINEAR_ON_CUDA[expected]


def test_the_installed_pytorch_builds_the_per_argument_wording_the_simulation_raises():
    """The fixed parts of that wording are string constants in ``libtorch_cpu`` (ATen's ``adaption.cpp``), in
    every build, CPU-only ones included: the simulation's wording must be the one this PyTorch has."""
    from pathlib import Path
    library = next((Path(torch.__file__).parent / "lib").glob("libtorch_cpu.*"), None)
    if library is None:
        pytest.skip("no libtorch_cpu in this PyTorch")
    data = library.read_bytes()
    message = per_argument_message("ARG", "DEV", "COMMON", "METHOD")
    parts = [part for part in message.replace("ARG", "|").replace("DEV", "|").replace("COMMON", "|")
             .replace("METHOD", "|").split("|") if len(part) >= 8]
    assert len(parts) >= 2
    for part in parts:
        assert part.encode() in data, part
    newer = "but got" in message                   # the other wording's own part is not in this build
    assert ("! (when checking argument for argument " if newer else ", different from other tensors on ").encode() \
        not in data


def test_cuda_rules_report_mixed_arguments_as_cuda_does(cuda_rules):
    layer = nn.Linear(3, 2).to("meta")
    with pytest.raises(RuntimeError) as info:
        layer(torch.ones(1, 3))
    assert str(info.value) == per_argument_message("mat1", "cpu", "meta", "wrapper_CUDA_addmm")
    assert str(info.value) in (LINEAR_ON_CUDA["2.7"].replace("cuda:0", "meta"),
                               LINEAR_ON_CUDA["2.8"].replace("cuda:0", "meta"))
    with pytest.raises(RuntimeError) as info:
        nn.Embedding(5, 2).to("meta")(torch.tensor([1, 2]))
    assert str(info.value) == per_argument_message("indices", "cpu", "meta", "wrapper_CUDA_embedding")
    with pytest.raises(RuntimeError, match=r"mat2.*wrapper_CUDA_mm") as info:
        torch.ones(2, 2, device="meta") @ torch.ones(2, 2)
    assert str(info.value) == per_argument_message("mat2", "cpu", "meta", "wrapper_CUDA_mm")
    with pytest.raises(RuntimeError, match=r"mat2.*wrapper_CUDA_mm"):
        torch.ones(2, 2, device="meta") @ torch.tensor(2.0).expand(2, 2)
    with pytest.raises(RuntimeError) as info:
        nn.Conv1d(1, 1, 2).to("meta")(torch.ones(1, 1, 4))
    assert str(info.value).startswith("Input type (torch.FloatTensor) and weight type (") and str(info.value) \
        .endswith(") should be the same or input should be a MKLDNN tensor and weight is a dense tensor")
    with pytest.raises(RuntimeError) as info:                    # an input on the "GPU": no MKLDNN clause
        nn.Conv1d(1, 1, 2)(torch.ones(1, 1, 4, device="meta"))
    assert str(info.value).endswith("and weight type (torch.FloatTensor) should be the same"), str(info.value)


def test_cuda_rules_leave_element_wise_ops_to_meta(cuda_rules):
    assert (torch.ones(3, device="meta") + torch.tensor(2.0)).device.type == "meta"   # 0-dim CPU: allowed
    with pytest.raises(RuntimeError, match="not on the expected device"):            # meta's own message
        torch.ones(3, device="meta") + torch.ones(3)
    assert (nn.Linear(3, 2).to("meta")(torch.ones(1, 3, device="meta"))).shape == (1, 2)
    assert (nn.Linear(3, 2)(torch.ones(1, 3))).shape == (1, 2)


@pytest.mark.parametrize("rules", RULES)
def test_the_course_sees_the_simulated_accelerator(rules):
    with STRICT_RULES[rules]() as machine:
        assert cu.accelerator() == torch.device("meta") == machine.accelerator
        assert cu.best_device() == torch.device("meta", 0)
        assert torch.accelerator.device_count() == 1 and not torch.cuda.is_available()
        torch.accelerator.synchronize()
        assert machine.synchronized == [torch.device("meta", 0)]


def test_names_imported_from_torch_accelerator_see_the_machine_only_when_rebound():
    with mps_rules():
        assert current_accelerator() != torch.device("meta")   # the real function names this build's
    with mps_rules(rebind=[THIS_MODULE]):
        assert is_available() and current_accelerator() == torch.device("meta")
        assert pick_device_by_name() == torch.device("meta")
    assert is_available is torch.accelerator.is_available        # the real functions are back


def _global_state():
    return ({name: getattr(torch.accelerator, name) for name in dir(torch.accelerator)},
            {name: getattr(torch.cuda, name) for name in ("is_available", "device_count", "current_device",
                                                          "set_device", "synchronize", "get_device_properties")},
            id(course_device.NO_FLOAT64), set(course_device.NO_FLOAT64),
            {k: os.environ.get(k) for k in (course_device.DEVICE_ENV, course_device.REQUIRE_ENV)},
            torch._C._len_torch_dispatch_stack(), (is_available, current_accelerator), torch.get_device_module)


@pytest.mark.parametrize("simulation", [mps_rules, cuda_rules, second_gpu])
def test_simulations_restore_everything_even_when_the_block_fails(simulation, monkeypatch):
    monkeypatch.setenv(course_device.DEVICE_ENV, "cpu")
    monkeypatch.setenv(course_device.REQUIRE_ENV, "1")
    before = _global_state()
    with pytest.raises(ZeroDivisionError), simulation(rebind=[THIS_MODULE]) as machine:
        assert torch._C._len_torch_dispatch_stack() == before[5] + (simulation is not second_gpu)
        assert course_device.DEVICE_ENV not in os.environ or simulation is second_gpu
        assert course_device.REQUIRE_ENV not in os.environ
        assert torch.accelerator.is_available() and cu.accelerator() == machine.accelerator
        raise ZeroDivisionError("the test fails inside the simulation")
    assert _global_state() == before
