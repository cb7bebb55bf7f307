"""Lesson 03 - `.to(device)`: moving tensors and models, and what `.to` returns: 03.to_device (a whole
batch); 03.prepare (a model and its batch) is in :mod:`course_utils.lessons.l03_prepare`, which shares the
codes and helpers of this module that are public."""
from __future__ import annotations

import re
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_leaves, tree_map_only

from .. import device as _device
from .. import misconceptions
from ..exercises import grader
from ..grading import (Crashed, Wrong, call, describe, expect_tensor, is_tensor, random_tensor, safe_repr,
                       same_values, target_device)
from ..text import shorten

# --- exercise 03.to_device -------------------------------------------------------------------

TO_NOT_ASSIGNED = misconceptions.code("03.to-not-assigned")
CHANGED_DTYPE = misconceptions.code("03.changed-dtype")
CREATED_NOT_MOVED = misconceptions.code("03.created-instead-of-moved")
MOVED_INPUT_IN_PLACE = misconceptions.code("03.moved-input-in-place")
TUPLE_TO_LIST = misconceptions.code("03.tuple-became-list")
CONTAINER_TYPE = misconceptions.code("03.container-type-changed")
CHANGED_KEYS = misconceptions.code("03.changed-keys")
DROPPED_NON_TENSORS = misconceptions.code("03.dropped-non-tensors")
NUMBER_TO_TENSOR = misconceptions.code("03.non-tensor-made-tensor")
NO_FALLBACK_RETURN = misconceptions.code("03.no-fallback-return")
CHANGED_NON_TENSOR = misconceptions.code("03.changed-non-tensor")
TOP_LEVEL_ONLY = misconceptions.code("03.top-level-only")
SKIPPED_CONTAINER = misconceptions.code("03.skipped-a-container-type")
TENSORS_NOT_MOVED = misconceptions.code("03.tensors-not-moved")


def to_device(obj, device):
    """``obj`` with every tensor in it moved to ``device``; dicts, lists and tuples keep their type."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {key: to_device(value, device) for key, value in obj.items()}
    if isinstance(obj, list):
        return [to_device(item, device) for item in obj]
    if isinstance(obj, tuple):
        return tuple(to_device(item, device) for item in obj)
    return obj


class Tag:
    """A plain Python object in a batch (e.g. where a sample came from); it must come back as itself."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"Tag({self.name!r})"


class WatchedTensor(torch.Tensor):
    """A tensor that records every call of ``Tensor.to`` on it (to tell "forgot to reassign" from
    "never called `.to`"). Used only for a second, diagnostic call of the learner's code."""

    calls: list[int] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.to and args:
            cls.calls.append(id(args[0]))
        return super().__torch_function__(func, types, args, kwargs or {})


#: What changes while the learner works (the grader's tamper check allows it).
CHANGING = (WatchedTensor.calls,)


def to_was_called(fn: Callable, watched_args: tuple, watched: list[torch.Tensor]) -> bool:
    """Call ``fn(*watched_args)`` once more; True if ``.to`` was called on any tensor in ``watched``."""
    WatchedTensor.calls.clear()
    try:
        call(fn, *watched_args)
    except Exception:  # a diagnostic run only: whatever happens, fall back to the general message
        pass
    ids = {id(t) for t in watched}
    called = any(i in ids for i in WatchedTensor.calls)
    WatchedTensor.calls.clear()
    return called


def _tensors(obj: Any) -> list[torch.Tensor]:
    """Every tensor in a structure of dicts, lists and tuples, in order."""
    return [t for t in tree_leaves(obj) if isinstance(t, torch.Tensor)]


def _show(obj: Any, depth: int = 0) -> str:
    """A short description of a structure, tensors as '<float32 (2, 3) on cpu>'; never raises."""
    try:
        if isinstance(obj, torch.Tensor):
            return f"<{str(obj.dtype).replace('torch.', '')} {tuple(obj.shape)} on {obj.device}>"
        if isinstance(obj, (dict, list, tuple)):
            left, right = ("{", "}") if isinstance(obj, dict) else ("[", "]") if isinstance(obj, list) else ("(", ")")
            if depth >= 2 and len(obj):
                return left + "…" + right
            if isinstance(obj, dict):
                inner = ", ".join(f"{safe_repr(k, 20)}: {_show(v, depth + 1)}" for k, v in obj.items())
            else:
                inner = ", ".join(_show(v, depth + 1) for v in obj) + ("," if isinstance(obj, tuple)
                                                                       and len(obj) == 1 else "")
            return shorten(left + inner + right, 300)
        return safe_repr(obj, 30)
    except Exception:
        return safe_repr(obj, 30)


def _kind(obj: Any) -> str:
    names = {dict: "a dict", list: "a list", tuple: "a tuple", str: "a string", type(None): "None"}
    if type(obj) in names:
        return names[type(obj)]
    if isinstance(obj, torch.Tensor):
        return "a tensor"
    name = type(obj).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def _snapshot(obj: Any) -> Any:
    """What the input looks like now: containers by identity and content, tensors with their device."""
    if isinstance(obj, torch.Tensor):
        return ("tensor", obj, obj.device)
    if isinstance(obj, dict):
        return ("dict", obj, [(k, _snapshot(v)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple)):
        return ("seq", obj, [(i, _snapshot(v)) for i, v in enumerate(obj)])
    return ("leaf", obj, None)


def _changed(snap: Any, path: str) -> str | None:
    """The path of the first change to the input since ``snap`` was taken, or None."""
    kind, obj, content = snap
    if kind == "tensor":
        return path if obj.device != content else None
    if kind == "leaf":
        return None
    items = list(obj.items()) if kind == "dict" else list(enumerate(obj))
    if [k for k, _ in items] != [k for k, _ in content]:
        return path
    for (key, value), (_, child) in zip(items, content):
        if value is not child[1]:
            return f"{path}[{key!r}]"
        deeper = _changed(child, f"{path}[{key!r}]")
        if deeper:
            return deeper
    return None


def _walk(orig: Any, got: Any, path: str, depth: int, target: torch.device,
          tensors: list[tuple[str, int, type | None, torch.Tensor, Any]], untouched: list[tuple[str, type]],
          parent: type | None = None) -> None:
    """Compare the learner's result with the input, raising on structure errors and collecting
    (path, depth, parent container type, input tensor, returned tensor) for every tensor."""
    if isinstance(orig, torch.Tensor):
        tensors.append((path, depth, parent, orig, _same_kind_of_tensor(orig, got, path)))
        return
    if isinstance(orig, (dict, list, tuple)):
        want = type(orig)
        if got is orig and _tensors(orig):
            untouched.append((path, want))
        _check_container_kind(orig, got, path)
        if want is dict:
            _check_same_keys(orig, got, path)
            for key, value in orig.items():
                _walk(value, got[key], f"{path}[{key!r}]", depth + 1, target, tensors, untouched, dict)
            return
        if len(got) != len(orig):
            raise Wrong(f"`{path}` had {len(orig)} item(s); yours has {len(got)}. Keep every item: "
                        "items that are not tensors come back unchanged.", DROPPED_NON_TENSORS)
        for i, (value, mine) in enumerate(zip(orig, got)):
            _walk(value, mine, f"{path}[{i}]", depth + 1, target, tensors, untouched, want)
        return
    _check_same_object(orig, got, path)


def _same_kind_of_tensor(orig: torch.Tensor, got: Any, path: str) -> torch.Tensor:
    """What the learner returned for the tensor ``orig``: a tensor of its dtype and shape (where it lies is
    checked later, with every tensor of the result)."""
    if not is_tensor(got):
        raise Wrong(f"`{path}` was a tensor, but you returned {safe_repr(got)} ({_kind(got)}) in its place.",
                    misconceptions.NOT_A_TENSOR)
    got = expect_tensor(got, f"What you returned for `{path}`")
    if got.dtype != orig.dtype:
        raise Wrong(f"`{path}` was {describe(orig)}; you returned {describe(got)}. Move tensors without "
                    "changing their dtype: `t.to(device)` alone.", CHANGED_DTYPE)
    if got.shape != orig.shape:
        raise Wrong(f"`{path}` was {describe(orig)}; you returned {describe(got)}. Keep the shape.",
                    misconceptions.WRONG_SHAPE)
    return got


def _check_container_kind(orig: dict | list | tuple, got: Any, path: str) -> None:
    """The container ``orig`` came back as a container of its very type (a tuple stays a tuple)."""
    want = type(orig)
    if type(got) is not want:
        if want is tuple and isinstance(got, list):
            raise Wrong(f"`{path}` was a tuple and came back as a list. A tuple must stay a tuple: "
                        "build it with `tuple(...)`. Code that compares it with a tuple, uses it as a "
                        "dict key or checks `isinstance(..., tuple)` depends on the type.", TUPLE_TO_LIST)
        raise Wrong(f"`{path}` was {_kind(orig)} and came back as {_kind(got)}: {_show(got, 1)}. "
                    f"Return the same kind of container: {_kind(orig)}.", CONTAINER_TYPE)


def _check_same_keys(orig: dict, got: dict, path: str) -> None:
    """The dict ``got`` has the keys of ``orig``: none of another type, none lost, none added."""
    keys = {type(k) for k in orig}
    odd = [k for k in got if type(k) not in keys]  # a key of its own class could claim to equal any
    if odd:
        raise Wrong(f"`{path}` has the key {safe_repr(odd[0])} of type `{type(odd[0]).__name__}`. Keep the "
                    "keys of the input, as they are.", CHANGED_KEYS)
    missing = [k for k in orig if k not in got]
    extra = [k for k in got if k not in orig]
    if missing:
        raise Wrong(f"`{path}` lost the key(s) {', '.join(map(repr, missing))}. Keep every entry: "
                    "entries that are not tensors come back unchanged.", DROPPED_NON_TENSORS)
    if extra:
        raise Wrong(f"`{path}` has new key(s) {', '.join(map(repr, extra))}. Keep the same keys.", CHANGED_KEYS)


def _check_same_object(orig: Any, got: Any, path: str) -> None:
    """Anything that is not a tensor or a container comes back as the same object."""
    if got is orig:
        return
    was = f"`{path}` was {_kind(orig)} ({safe_repr(orig)})"
    same = "Anything that is not a tensor must come back unchanged, as the same object."
    if isinstance(got, torch.Tensor):
        raise Wrong(f"{was} and you turned it into a tensor. {same}", NUMBER_TO_TENSOR)
    if got is None:
        raise Wrong(f"{was} and you returned None for it. Did your function forget to `return obj` for things that "
                    "are not tensors or containers?", NO_FALLBACK_RETURN)
    if type(got) is type(orig):
        raise Wrong(f"{was} and came back as a different {type(orig).__name__} object (a copy?). {same}",
                    CHANGED_NON_TENSOR)
    raise Wrong(f"{was} and came back as {safe_repr(got)} ({_kind(got)}). {same}", CHANGED_NON_TENSOR)


def _to_device_cases(gen: torch.Generator) -> list[Any]:
    def t(shape: tuple = (2, 3), dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return random_tensor(shape, dtype, gen)

    cases: list[Any] = [
        t((3,)),
        {"x": t((4, 3)), "y": t((4,), torch.int64)},
        (t((4, 3)), t((4,), torch.int64)),
        [t((2,)), t((), torch.float64)],
        {"inputs": {"ids": t((2, 5), torch.int64), "mask": t((2, 5), torch.bool)},
         "labels": t((2,), torch.int64),
         "pair": (t((2, 3)), t((2,), torch.float16)),
         "crops": [t((3, 4, 4)), (t((1,)), "crop-2")],
         "id": "sample-17", "epoch": 10 ** 6 + 3, "weight": 0.5, "note": None, "shuffled": True,
         "source": Tag("train")},
        (t((1, 2)), [t((2, 2), torch.bfloat16), {"deep": (t((0, 3)), None)}]),
        [], {}, (), [None, "text", 7], 1234567, "just a string", None, Tag("extra"),
    ]
    cases += [_random_structure(gen, depth=0) for _ in range(6)]
    return cases


def _random_structure(gen: torch.Generator, depth: int) -> Any:
    def pick(n: int) -> int:
        return int(torch.randint(n, (1,), generator=gen))
    choice = pick(6) if depth < 3 else 3 + pick(3)
    if choice < 3:
        items = [_random_structure(gen, depth + 1) for _ in range(1 + pick(3))]
        return [dict(zip([f"k{i}" for i in range(len(items))], items)), items, tuple(items)][choice]
    if choice == 3:
        return [None, "label", 42, 2.5, False][pick(5)]
    shape = ((), (3,), (2, 3), (1, 4, 2))[pick(4)]
    dtype = (torch.float32, torch.int64, torch.float16, torch.bool, torch.float64)[pick(5)]
    return random_tensor(shape, dtype, gen)


def target_devices() -> list[tuple[Any, torch.device]]:
    """(device as the learner gets it, normalised device): the check's device (:func:`target_device`) as a
    string without an index and as the torch.device the learner's `device` is, then the CPU (nothing to move)."""
    target = target_device()
    return [(target.type, torch.device(target.type)), (target, target), (torch.device("cpu"), torch.device("cpu"))]


def on_target(t: torch.Tensor, target: torch.device) -> bool:
    return t.device.type == target.type and (target.index is None or t.device.index == target.index)


@grader("03.to_device", points=3, reference=to_device, title="Move a whole batch", hints=(
    "Three kinds of input: a tensor (move it), a container (a dict, list or tuple: treat each item the "
    "same way), and anything else (give it back untouched).",
    "Let the function call itself on every item of a container and build a NEW container of the same "
    "type: a dict comprehension for a dict, a list comprehension for a list, `tuple(...)` for a tuple. "
    "Remember that `t.to(device)` returns the moved tensor; it does not move `t`.",
    "`if isinstance(obj, torch.Tensor): return obj.to(device)`, then "
    "`if isinstance(obj, dict): return {k: to_device(v, device) for k, v in obj.items()}`, the same for "
    "lists and for tuples (`tuple(to_device(v, device) for v in obj)`), and finally `return obj`.",
))
def _grade_to_device(fn: Callable) -> str:
    gen = torch.Generator().manual_seed(3)
    cases = _to_device_cases(gen)
    targets, checked = target_devices(), 0
    for target, norm in targets:
        for case in cases:
            if not all(_device.supports_dtype(norm, t.dtype) for t in _tensors(case)):
                continue  # MPS has no float64
            shown, snap = _show(case), _snapshot(case)
            try:
                got = call(fn, case, target, context=f"to_device({shown}, {target!r})")
            except Crashed as e:
                wrong = _container_reached_to(fn, e, case, target, shown)
                if wrong is None:
                    raise
                raise wrong from None
            where = _changed(snap, "batch")
            if where is not None:
                raise Wrong(f"Your function changed the structure it was given (in place): after "
                            f"`to_device(batch, {target!r})` with batch = {shown}, `{where}` no longer holds "
                            "what the caller put there. Build and return new containers; leave the input "
                            "as it was.", MOVED_INPUT_IN_PLACE)
            tensors: list = []
            untouched: list = []
            _walk(case, got, "batch", 0, norm, tensors, untouched)
            _check_placement(fn, case, target, norm, tensors, untouched, shown)
            checked += 1
    return (f"Right on {len(cases)} structures (bare tensors, flat and nested dicts, lists and tuples, "
            f"non-tensors) moved to {', '.join(sorted({str(n) for _, n in targets}))}: {checked} calls, "
            "containers kept their type, non-tensors came back as the same objects, inputs untouched.")


#: AttributeError's message when `.to` (or `.cuda`) is called on a container: "'tuple' object has no attribute 'to'".
_NO_TO = re.compile(r"^'(dict|list|tuple)' object has no attribute '(to|cuda)'$")
_FLAT = {"dict": lambda t: {"x": t}, "list": lambda t: [t], "tuple": lambda t: (t,)}


def _container_reached_to(fn: Callable, e: Crashed, case: Any, target: Any, shown: str) -> Wrong | None:
    """Feedback for code that called `.to` on a container inside the batch (a flat comprehension such as
    ``{k: v.to(device) ...}`` meeting a tuple inside), or None for any other crash."""
    match = _NO_TO.match(str(e.error)) if isinstance(e.error, AttributeError) else None
    if match is None:
        return None
    kind, method = match.groups()
    said = f"Your code raised AttributeError: {str(e.error)!r} for batch = {shown} and device {target!r}."
    paths = _paths_of_kind(case, kind, "batch", top=True)
    shown_paths = ", ".join(f"`{p}`" for p in paths[:3]) + (", ..." if len(paths) > 3 else "")
    inside = None if not paths else shown_paths if len(paths) == 1 else f"one of {shown_paths}"
    try:   # does it handle a flat container of that kind? Then the nested one is what it missed
        call(fn, _FLAT[kind](torch.zeros(1)), target)
        handles_flat = True
    except Exception:
        handles_flat = False
    if inside is not None and handles_flat:
        return Wrong(f"{said} A {kind} inside the batch ({inside}) reached `.{method}`: your code calls `.{method}` on "
                     f"each item of a container, and that item is itself a container, which has no `.{method}`. Only "
                     "tensors do. Batches nest, so let `to_device` call itself on each item (`to_device(v, device)`) "
                     "instead of calling `.to` on it: then it handles any depth.", TOP_LEVEL_ONLY)
    return Wrong(f"{said} A {kind} reached `.{method}`, which only tensors have: your code does not look inside "
                 f"{kind}s. Handle them like the other containers: build a new {kind} from `to_device` of each "
                 "item.", SKIPPED_CONTAINER)


def _paths_of_kind(obj: Any, kind: str, path: str, top: bool = False) -> list[str]:
    """The paths of the containers of type ``kind`` nested inside ``obj`` (``obj`` itself excluded when ``top``)."""
    found = [path] if not top and type(obj).__name__ == kind else []
    items = list(obj.items()) if isinstance(obj, dict) else list(enumerate(obj)) if isinstance(obj, (list, tuple)) \
        else []
    for key, value in items:
        found += _paths_of_kind(value, kind, f"{path}[{key!r}]")
    return found


def _check_placement(fn: Callable, case: Any, target: Any, norm: torch.device, tensors: list,
                     untouched: list[tuple[str, type]], shown: str) -> None:
    stuck = [(path, depth, parent, orig, got) for path, depth, parent, orig, got in tensors if not on_target(got, norm)]
    if stuck:
        moved = [entry for entry in tensors if on_target(entry[4], norm)]
        path, depth, parent, orig, got = stuck[0]
        where = f"`{path}` is still on `{got.device}` (you returned {describe(got)})"
        if not moved:
            watched_case = tree_map_only(torch.Tensor, lambda t: t.as_subclass(WatchedTensor), case)
            if to_was_called(fn, (watched_case, target), _tensors(watched_case)):
                raise Wrong(f"{where}: your code calls `.to(...)` but throws the result away. "
                            "`t.to(device)` does not move `t`; it returns the moved tensor. Use (or "
                            "`return`) the result: `return obj.to(device)`.", TO_NOT_ASSIGNED)
        if all(d >= 2 for _, d, _, _, _ in stuck) and any(d == 1 for _, d, _, _, _ in moved):
            raise Wrong(f"{where}. You moved only the top level: tensors inside nested containers stayed "
                        "behind. Let `to_device` call itself on each item, so it handles any depth.", TOP_LEVEL_ONLY)
        if untouched:
            box, kind = untouched[0]
            raise Wrong(f"{where}: `{box}`, {_kind(kind())}, came back untouched (the very same object), "
                        f"with its tensors still on the CPU. Does your function look inside "
                        f"{kind.__name__}s? Build a new {kind.__name__} of moved items.", SKIPPED_CONTAINER)
        if not moved:
            raise Wrong(f"{where}: no tensor was moved to `{norm}`. Call `.to(device)` on every tensor "
                        "and put the result in what you return.", TENSORS_NOT_MOVED)
        raise Wrong(f"{where}, for batch = {shown} and device {target!r}.", misconceptions.WRONG_DEVICE)
    for path, _, _, orig, got in tensors:
        if not same_values(got, orig):
            raise Wrong(f"`{path}` has different values after the move. `.to(device)` keeps the "
                        "values; do not create new tensors (such as `torch.zeros_like`).", CREATED_NOT_MOVED)
