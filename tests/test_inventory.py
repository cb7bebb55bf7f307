"""The collector of what lives where (course_utils.inventory): what a module, an optimizer, a container and
a tensor hold, named as code, with their roles; limits, cycles, odd objects; and that it stays on the
bottom floor (torch and the standard library only)."""
from __future__ import annotations

import ast
import warnings
from collections import UserDict

import pytest
import torch
from torch import nn

from course_utils import inventory
from course_utils.inventory import (BATCH, BUFFER, GRADIENT, MORE, OPTIMIZED, OTHER, PARAMETER, PLAIN, STATE,
                                    TENSOR, TENSOR_ROLES, UNREGISTERED, Inventory, initialised, key_text,
                                    by_variable, moves_itself, walk)
from nbtools import ROOT


def roles(found) -> dict[str, str]:
    return {f.name: f.role for f in found}


class Standardize(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = torch.zeros(4)               # plain attributes: Module.to skips them
        self.consts = {"a": torch.ones(1)}
        self.layers = [nn.Linear(2, 2)]           # a module in a plain list: Module.to never sees it


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = Standardize()
        self.body = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))


def test_a_module_gives_parameters_gradients_buffers_and_plain_attributes_of_every_submodule():
    model = Model()
    model.body(torch.randn(2, 4)).sum().backward()
    found = list(walk(model, "model"))
    got = roles(found)
    assert got["model.body.0.weight"] == PARAMETER and got["model.body.0.weight.grad"] == GRADIENT
    assert got["model.body.1.running_mean"] == BUFFER
    assert got["model.norm.mean"] == PLAIN and got["model.norm.consts['a']"] == PLAIN
    assert got["model.norm.layers[0]"] == UNREGISTERED
    weight = next(f for f in found if f.name == "model.body.0.weight")
    assert weight.owner == "body.0" and weight.key == "weight" and weight.value is model.body[0].weight
    assert next(f for f in found if f.name == "model.norm.mean").owner == "norm"
    names = [f.name for f in found]
    assert names.index("model.body.0.weight") < names.index("model.body.0.weight.grad") < names.index(
        "model.body.1.running_mean") < names.index("model.norm.mean")     # parameters, buffers, attributes


def test_an_unnamed_module_uses_its_own_names():
    assert [f.name for f in walk(nn.Linear(2, 2))] == ["weight", "bias"]


def test_an_uninitialised_module_still_shows_its_plain_attributes():
    class Broken(nn.Module):
        def __init__(self):  # super().__init__() forgotten on purpose
            self.scale = torch.ones(2)
    broken = Broken()
    assert not initialised(broken) and initialised(nn.ReLU())
    assert roles(walk(broken, "b")) == {"b.scale": PLAIN}


def test_an_optimizer_gives_each_parameter_then_its_state_named_after_the_parameter():
    model = nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 2)).sum().backward()
    opt.step()
    walker = Inventory()
    list(walker.walk(model, "model"))
    found = list(walker.walk(opt, "opt"))
    assert [f.role for f in found[:4]] == [OPTIMIZED, STATE, STATE, STATE]
    assert found[0].owner == "model.weight" and found[0].key == 0 and found[0].value is model.weight
    exp_avg = next(f for f in found if f.name == "opt.state[0].exp_avg")
    assert exp_avg.role == STATE and exp_avg.owner == "model.weight" and exp_avg.key == "exp_avg"
    assert {f.owner for f in Inventory().walk(opt, "opt")} == {""}   # parameters it never met: no name


def test_an_optimizer_like_object_is_read_and_anything_else_raises():
    class Like:
        param_groups = [{"params": [torch.ones(1), "not a tensor", torch.zeros(1)]}]
        state: dict = {}
    found = list(Inventory().optimizer(Like(), "o"))
    assert [(f.role, f.key) for f in found] == [(OPTIMIZED, 0), (OPTIMIZED, 2)]
    with pytest.raises(AttributeError):
        list(Inventory().optimizer(3))


def test_containers_are_followed_with_names_you_can_paste():
    class Encoding(UserDict):                      # the shape of a Hugging Face BatchEncoding
        def to(self, device):
            return self
    batch = {"x": torch.ones(1), "ys": [torch.ones(1), (torch.ones(1), 3)], "enc": Encoding(ids=torch.ones(1))}
    found = list(walk(batch, "batch"))
    assert roles(found) == {"batch['x']": TENSOR, "batch['ys'][0]": TENSOR, "batch['ys'][1][0]": TENSOR,
                            "batch['ys'][1][1]": OTHER, "batch['enc']": BATCH, "batch['enc']['ids']": TENSOR}
    assert moves_itself(Encoding()) and not moves_itself({}) and not moves_itself(torch.ones(1))


def test_modules_and_optimizers_in_containers_are_opened_by_walk_and_left_whole_by_leaves():
    layer = nn.Linear(1, 1)
    assert roles(walk({"m": layer}, "d")) == {"d['m'].weight": PARAMETER, "d['m'].bias": PARAMETER}
    [leaf] = Inventory().leaves({"m": layer}, "d")
    assert leaf.role == OTHER and leaf.value is layer and leaf.name == "d['m']"


def test_named_keys_name_the_values_of_a_top_level_mapping():
    found = Inventory().leaves({"x": torch.ones(1), "my key": torch.ones(1), 2: [torch.ones(1)]}, "inputs",
                               named_keys=True)
    assert [f.name for f in found] == ["x", "inputs['my key']", "inputs[2][0]"]


def test_limits_depth_and_items():
    deep = [[[torch.ones(1)]]]
    assert roles(walk(deep, "d", max_depth=1)) == {"d[0][0]": OTHER}
    assert roles(walk(deep, "d", max_depth=2)) == {"d[0][0][0]": TENSOR}
    found = list(walk([torch.ones(1)] * 5, "xs", max_items=3))
    assert [f.role for f in found] == [TENSOR] * 3 + [MORE] and found[-1].value == 2 and found[-1].name == "xs[...]"


def test_cycles_end_and_a_module_under_two_names_is_opened_once():
    box: dict = {"t": torch.ones(1)}
    box["self"] = box
    assert roles(walk(box, "box")) == {"box['t']": TENSOR}
    layer = nn.Linear(1, 1)
    walker = Inventory()
    assert len(list(walker.walk(layer, "a"))) == 2 and list(walker.walk(layer, "b")) == []


def test_gradients_are_read_only_where_pytorch_keeps_them():
    leaf = torch.ones(2, requires_grad=True)
    (leaf * 2).sum().backward()
    assert roles(walk(leaf, "w")) == {"w": TENSOR, "w.grad": GRADIENT}
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # reading .grad of a non-leaf would warn
        assert roles(walk(leaf * 2, "y")) == {"y": TENSOR}


@pytest.mark.parametrize("odd", [None, 3, "text", b"bytes", object(), (i for i in range(2)), lambda: 1])
def test_anything_else_is_one_leaf_and_never_an_error(odd):
    found = list(walk(odd, "v"))
    assert [f.role for f in found] == [OTHER]
    assert list(walk({}, "v")) == [] and list(walk([[]], "v")) == []     # empty containers hold nothing


def test_key_text_is_short_and_never_raises():
    class Hostile:
        def __repr__(self):
            raise RuntimeError("no")
    assert key_text("x") == "'x'" and key_text(3) == "3" and key_text((1, 2)) == "(1, 2)"
    assert len(key_text("k" * 100)) == 40 and key_text("k" * 100).endswith("…")
    assert key_text(Hostile()).startswith("<Hostile")


def test_tensor_roles_are_exactly_those_with_a_tensor_value():
    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model.body(torch.randn(2, 4)).sum().backward()
    opt.step()
    walker = Inventory()
    for found in [*walker.walk(model, "m"), *walker.walk(opt, "o"), *walker.walk({"b": [3]}, "b")]:
        assert isinstance(found.value, torch.Tensor) == (found.role in TENSOR_ROLES), found


def test_by_variable_gives_the_devices_of_each_variable_the_names_asked_for_first():
    model = nn.Linear(1, 1).to("meta")
    model.scale = torch.ones(1)                      # a plain attribute, on the CPU
    namespace = {"x": torch.ones(1), "model": model, "n": 3, "_hidden": torch.ones(1), "words": ["a"],
                 "batch": {"y": torch.ones(1, device="meta")}, 7: torch.ones(1)}
    assert list(by_variable(namespace)) == [("x", {"cpu"}), ("model", {"cpu", "meta"}), ("batch", {"meta"})]
    first = [name for name, _ in by_variable(namespace, first=["batch", "gone", "n", "model"])]
    assert first == ["batch", "model", "x"]          # asked for first, in that order; absent and tensor-less left out
    big = {"many": [torch.ones(1)] * 5 + [torch.ones(1, device="meta")]}
    assert list(by_variable(big, per_variable=5)) == [("many", {"cpu"})]   # looks at the first 5 tensors only


def test_the_collector_imports_only_torch_the_standard_library_and_the_text_helpers():
    tree = ast.parse((ROOT / "course_utils" / "inventory.py").read_text(encoding="utf-8"))
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    # of the package, only its plain text helpers (the standard library alone), as every floor may
    assert {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level} <= {"text"}
    assert modules <= {"__future__", "reprlib", "collections", "itertools", "typing", "torch"}, modules
    assert set(inventory.__all__) <= set(vars(inventory))
