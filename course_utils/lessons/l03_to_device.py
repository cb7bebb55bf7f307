"""Lesson 03 - `.to(device)`: moving tensors and models, and what `.to` returns."""
from __future__ import annotations

import re
from typing import Any, Callable

import torch
from torch import nn

from .. import device as _device
from .. import misconceptions
from ..exercises import grader
from ..grading import (Crashed, Wrong, call, describe, devices_to_test, expect_tensor, is_tensor, random_tensor,
                       safe_repr, same_values)
from ..quizzes import add_quiz
from ..text import shorten

# --- quizzes ---------------------------------------------------------------------------------

add_quiz(
    "03.original_after_to",
    "`x` is a tensor on the CPU and `other` is a second device (your GPU, or the simulated one). You run "
    "`y = x.to(other)`. Where is `x` now?",
    ["On `other`: `x` and `y` are the same tensor", "Still on the CPU", "Nowhere: `.to` moved its data away",
     "It depends on the size of `x`"],
    1,
    "`Tensor.to` never changes the tensor you call it on. It returns a tensor on the target device "
    "(here a new one, `y`) and leaves `x` exactly where it was.",
)
add_quiz(
    "03.same_object",
    "`t` is a `float32` tensor on the CPU. What does `t.to('cpu') is t` give?",
    ["`False`: `.to` always returns a copy",
     "It raises an error: `t` is already on the CPU",
     "`False`, but the two share memory because they are views",
     "`True`: there is nothing to change, so `.to` returns `t` itself"],
    3,
    "When the device and dtype already match, `.to` does no work and returns the very same tensor "
    "object. Only `copy=True` forces a copy. So a write into the result is a write into `t`.",
)
add_quiz(
    "03.device_vs_string",
    "What does `torch.device('cpu') == 'cpu'` evaluate to?",
    ["`False`", "`True`", "It raises a `TypeError`", "`True` only on a machine without a GPU"],
    0,
    "A `torch.device` is not a string, and comparing it with one gives `False`, silently, with no error. "
    "Compare `t.device.type == 'cpu'`, or compare with a `torch.device` on both sides.",
)
add_quiz(
    "03.module_in_place",
    "`model = nn.Linear(4, 3)` on the CPU, then `model.to(device)` on a line of its own, result not kept "
    "(`device` is a GPU). Where are the model's parameters?",
    ["Still on the CPU: the result was thrown away, as with tensors",
     "Half on each: only the weight moved",
     "On the GPU: `Module.to` moves the model in place",
     "It raises: a model must be reassigned"],
    2,
    "`Module.to` changes the module itself and returns that same module, so `model.to(device)` on its own "
    "line works. `model = model.to(device)` works too (it reassigns the same object) and reads like the "
    "tensor version, which is why many people write it that way.",
)
add_quiz(
    "03.dict_to",
    "A batch is a dict: `batch = {'x': x, 'y': y}`, both tensors on the CPU. What does `batch.to(device)` do?",
    ["Moves both tensors and returns a new dict", "Moves both tensors in place",
     "Raises `AttributeError`: a dict has no `.to`", "Moves only the first tensor"],
    2,
    "`.to` is a method of tensors and modules. A plain dict (or list, or tuple) has no `.to`: you move "
    "each tensor inside it yourself, and build a new container for the results.",
)
add_quiz(
    "03.from_numpy_device",
    "`a = np.arange(3.0)` and `device` is a GPU. Inside `with torch.device(device):`, where are "
    "`torch.from_numpy(a)` and `torch.tensor(a)`?",
    ["Both on the GPU", "Both on the CPU", "`from_numpy` on the GPU, `torch.tensor` on the CPU",
     "`from_numpy` on the CPU, `torch.tensor` on the GPU"],
    3,
    "`torch.from_numpy` wraps the array's own CPU memory without copying (change `a`, the tensor changes), "
    "so it is always on the CPU, whatever the default device. `torch.tensor` copies, and like other "
    "factory functions it follows the default device.",
)


# --- exercise 03.to_device -------------------------------------------------------------------

TO_NOT_ASSIGNED = misconceptions.define(
    "03.to-not-assigned", "`.to` without keeping the result",
    "Believes `t.to(device)` moves `t` itself; it returns a moved copy (or `t` itself when nothing changes), so "
    "the result must be kept: `t = t.to(device)`. `Module.to` is the exception: it moves in place.",
    section=("03_to_device", "1. Moving a tensor with `.to`"),
    question="After `x.to(device)` on a line of its own, where does `x` live? When does `.to` return `x` itself?")
CHANGED_DTYPE = misconceptions.define(
    "03.changed-dtype", "Changed the dtype while moving",
    "Casts the data while moving it (`.float()`, or a dtype passed to `.to`), as if a move needed one; "
    "`.to(device)` keeps the dtype, converting only when given a dtype, and token ids and labels must stay "
    "integers.",
    section=("03_to_device", "3. `.to` changes the dtype too"),
    question="What dtype does `ids.to(device)` have for an `int64` `ids`, and what does `ids.to(device, "
             "torch.float32)` do to it?")
CREATED_NOT_MOVED = misconceptions.define(
    "03.created-instead-of-moved", "Made new tensors instead of moving them",
    "Believes making a tensor of the same shape on the device (`torch.zeros_like(t, device=...)`, "
    "`torch.empty(...)`) moves `t`; that allocates a new tensor without `t`'s values, while `t.to(device)` "
    "copies the values there.",
    section=("03_to_device", "1. Moving a tensor with `.to`"),
    question="After `y = x.to(other)`, what does `y` hold that `torch.zeros_like(x, device=other)` does not?")
MOVED_INPUT_IN_PLACE = misconceptions.define(
    "03.moved-input-in-place", "Moved the caller's data in place",
    "Believes moving means changing what the caller passed in (writing moved tensors back into its dict or "
    "list, or `batch.data = ...`); like `Tensor.to`, the function must leave its input as it was and return "
    "new containers and tensors, since the caller may still use the originals.",
    section=("03_to_device", "7. Batches with structure"),
    question="After `moved = to_device(batch, device)`, what should `batch` still hold, and why build a new "
             "dict instead of writing into `batch`?")
TUPLE_TO_LIST = misconceptions.define(
    "03.tuple-became-list", "Rebuilt a tuple as a list",
    "Believes any sequence may come back as a list (one list comprehension for lists and tuples); a tuple "
    "must stay a tuple (`tuple(...)`): code that compares it with a tuple, uses it as a dict key or checks "
    "`isinstance(batch, tuple)` depends on the type.",
    section=("03_to_device", "7. Batches with structure"),
    question="A batch is `(inputs, labels)`. Why must `to_device` give back a tuple, and how do you build one "
             "from moved items?")
CONTAINER_TYPE = misconceptions.define(
    "03.container-type-changed", "Returned another kind of container",
    "Returns a different container than it was given (a dict's values as a list, a generator expression "
    "`(... for v in obj)` for a tuple); a dict must come back a dict with the same keys, a list a list, a tuple "
    "a tuple.",
    section=("03_to_device", "7. Batches with structure"),
    question="What does `(to_device(v, d) for v in obj)` make: a tuple? What does a dict comprehension give "
             "that a list of the values loses?")
CHANGED_KEYS = misconceptions.define(
    "03.changed-keys", "Changed a dict's keys",
    "Believes the keys of a batch dict may be renamed, converted or added to; the moved dict must have the "
    "very same keys, since the model and the code after the move look entries up by them.",
    section=("03_to_device", "7. Batches with structure"),
    question="Code after the move reads `moved['inputs']['ids']`. What must `to_device` keep for that to "
             "work?")
DROPPED_NON_TENSORS = misconceptions.define(
    "03.dropped-non-tensors", "Dropped the items that are not tensors",
    "Believes only tensors belong in the moved batch, so it skips strings, numbers and `None`; they are part "
    "of the batch (ids, flags, metadata) and must come back unchanged, in their places.",
    section=("03_to_device", "7. Batches with structure"),
    question="The batch in section 7 has `sample_ids`, a tuple of strings. What should `to_device` do with "
             "it?")
NUMBER_TO_TENSOR = misconceptions.define(
    "03.non-tensor-made-tensor", "Turned a number into a tensor",
    "Believes everything in a batch must become a tensor on the device; only tensors move, and numbers, "
    "strings and flags come back as the very same objects (code after the move expects an `int`, not a "
    "0-d tensor).",
    section=("03_to_device", "7. Batches with structure"),
    question="A batch holds `'epoch': 3`. Why should `to_device` leave it an `int` rather than make "
             "`torch.tensor(3, device=device)`?")
NO_FALLBACK_RETURN = misconceptions.define(
    "03.no-fallback-return", "No `return obj` for other values",
    "Handles tensors, dicts, lists and tuples but has no final `return obj`, so a Python function falls off "
    "its end and returns `None` for strings, numbers and other objects; anything that is not a tensor or "
    "container must be returned as it is.",
    section=("03_to_device", "7. Batches with structure"),
    question="What does a Python function return when no `return` line runs? What should `to_device('s1', "
             "device)` return?")
CHANGED_NON_TENSOR = misconceptions.define(
    "03.changed-non-tensor", "Copied or changed an item that is not a tensor",
    "Believes a moved batch needs fresh copies of everything (`copy.deepcopy`, `str(...)`); only tensors "
    "move, and anything else must come back as the very same object, which the caller may still compare or "
    "share.",
    section=("03_to_device", "7. Batches with structure"),
    question="Why should `to_device` return a string or a custom object as the same object instead of a copy?")
TOP_LEVEL_ONLY = misconceptions.define(
    "03.top-level-only", "Moved only the top level",
    "Moves the tensors directly in the batch but not those inside nested containers; batches nest (a dict "
    "of dicts, a tuple inside a list), so the function must call itself on every item to handle any depth.",
    section=("03_to_device", "7. Batches with structure"),
    question="In section 7's batch, `ids` sits inside `batch['inputs']`. Does moving each tensor found directly "
             "in `batch` move it?")
SKIPPED_CONTAINER = misconceptions.define(
    "03.skipped-a-container-type", "Did not look inside one kind of container",
    "Handles some containers (say dicts and lists) but returns another kind, often tuples, as it is, with "
    "the tensors inside left behind; every dict, list and tuple must be rebuilt from moved items.",
    section=("03_to_device", "7. Batches with structure"),
    question="A data loader hands out `(inputs, labels)`. What happens to those tensors if `to_device` handles "
             "only dicts and lists?")
TENSORS_NOT_MOVED = misconceptions.define(
    "03.tensors-not-moved", "Moved no tensor at all",
    "Returns the batch's tensors where they were (for example the input itself, or new containers around the "
    "same tensors); every tensor must go through `.to(device)`, and the results go into what is returned.",
    section=("03_to_device", "7. Batches with structure"),
    question="Does rebuilding a dict, `{k: v for k, v in batch.items()}`, move any tensor? What must happen "
             "to each `v`?")


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


class _Watched(torch.Tensor):
    """A tensor that records every call of ``Tensor.to`` on it (to tell "forgot to reassign" from
    "never called `.to`"). Used only for a second, diagnostic call of the learner's code."""

    calls: list[int] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.to and args:
            cls.calls.append(id(args[0]))
        return super().__torch_function__(func, types, args, kwargs or {})


#: What changes while the learner works (the grader's tamper check allows it).
CHANGING = (_Watched.calls,)


def _watch(obj: Any) -> Any:
    """The same structure with every tensor replaced by a :class:`_Watched` view of it."""
    if isinstance(obj, torch.Tensor):
        return obj.as_subclass(_Watched)
    if isinstance(obj, dict):
        return {k: _watch(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_watch(v) for v in obj)
    return obj


def _to_was_called(fn: Callable, watched_args: tuple, watched: list[torch.Tensor]) -> bool:
    """Call ``fn(*watched_args)`` once more; True if ``.to`` was called on any tensor in ``watched``."""
    _Watched.calls.clear()
    try:
        call(fn, *watched_args)
    except Exception:  # a diagnostic run only: whatever happens, fall back to the general message
        pass
    ids = {id(t) for t in watched}
    called = any(i in ids for i in _Watched.calls)
    _Watched.calls.clear()
    return called


def _tensors(obj: Any) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v)]
    return []


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
        raise Wrong(f"`{path}` has new key(s) {', '.join(map(repr, extra))}. Keep the same keys.",
                    CHANGED_KEYS)


def _check_same_object(orig: Any, got: Any, path: str) -> None:
    """Anything that is not a tensor or a container comes back as the same object."""
    if got is not orig:
        if isinstance(got, torch.Tensor):
            raise Wrong(f"`{path}` was {_kind(orig)} ({safe_repr(orig)}) and you turned it into a tensor. "
                        "Anything that is not a tensor must come back unchanged, as the same object.", NUMBER_TO_TENSOR)
        if got is None:
            raise Wrong(f"`{path}` was {_kind(orig)} ({safe_repr(orig)}) and you returned None for it. "
                        "Did your function forget to `return obj` for things that are not tensors or "
                        "containers?", NO_FALLBACK_RETURN)
        if type(got) is type(orig):
            raise Wrong(f"`{path}` was {_kind(orig)} ({safe_repr(orig)}) and came back as a different "
                        f"{type(orig).__name__} object (a copy?). Anything that is not a tensor must come "
                        "back unchanged, as the same object.", CHANGED_NON_TENSOR)
        raise Wrong(f"`{path}` was {_kind(orig)} ({safe_repr(orig)}) and came back as {safe_repr(got)} "
                    f"({_kind(got)}). Anything that is not a tensor must come back unchanged, as the same "
                    "object.", CHANGED_NON_TENSOR)


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


def _target_devices() -> list[tuple[Any, torch.device]]:
    """(device as the learner gets it, normalised device): meta as a string and as a torch.device,
    the CPU (nothing to move), and the accelerator if there is one."""
    targets: list[tuple[Any, torch.device]] = [("meta", torch.device("meta")),
                                               (torch.device("meta"), torch.device("meta")),
                                               (torch.device("cpu"), torch.device("cpu"))]
    targets += [(d, d) for d in devices_to_test() if d.type not in ("cpu", "meta")]
    return targets


def _on(t: torch.Tensor, target: torch.device) -> bool:
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
    targets = _target_devices()
    checked = 0
    for target, norm in targets:
        for case in cases:
            if not all(_device.supports_dtype(norm, t.dtype) for t in _tensors(case)):
                continue  # MPS has no float64
            shown = _show(case)
            snap = _snapshot(case)
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
        return Wrong(f"{said} A {kind} inside the batch ({inside}) reached `.{method}`: your code calls "
                     f"`.{method}` on each item of a container, and that item is itself a container, which has no "
                     f"`.{method}`. Only tensors do. Batches nest, so let `to_device` call itself on each item "
                     "(`to_device(v, device)`) instead of calling `.to` on it: then it handles any depth.",
                     TOP_LEVEL_ONLY)
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
    stuck = [(path, depth, parent, orig, got) for path, depth, parent, orig, got in tensors
             if not _on(got, norm)]
    if stuck:
        moved = [entry for entry in tensors if _on(entry[4], norm)]
        path, depth, parent, orig, got = stuck[0]
        where = f"`{path}` is still on `{got.device}` (you returned {describe(got)})"
        if not moved:
            watched_case = _watch(case)
            if _to_was_called(fn, (watched_case, target), _tensors(watched_case)):
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
    if norm.type != "meta":
        for path, _, _, orig, got in tensors:
            if not same_values(got.cpu(), orig.cpu()):
                raise Wrong(f"`{path}` has different values after the move. `.to(device)` keeps the "
                            "values; do not create new tensors (such as `torch.zeros_like`).", CREATED_NOT_MOVED)


# --- exercise 03.prepare ---------------------------------------------------------------------

PARAMS_ONE_BY_ONE = misconceptions.define(
    "03.params-one-by-one", "Moved the parameters one by one",
    "Moves a model by hand, parameter by parameter (`p.data = p.data.to(device)`, new `nn.Parameter`s); that "
    "misses buffers such as BatchNorm's running statistics, and `p.data = ...` cannot move a parameter to "
    "every device (PyTorch refuses CPU to `meta`). `model.to(device)` moves every parameter and buffer.",
    section=("03_to_device", "5. Moving a model"),
    question="A model has a BatchNorm layer. What does `model.to(device)` move that a loop over "
             "`model.parameters()` does not?")
MODEL_NOT_MOVED = misconceptions.define(
    "03.model-not-moved", "Moved the batch but not the model",
    "Believes moving the data is enough, as if the model followed its inputs; a model computes on the device "
    "of its parameters, so it must be moved too: `model.to(device)`.",
    section=("03_to_device", "6. Moving data for a training step"),
    question="The batch is on the GPU and the model on the CPU. Where would `model(batch)` run, and what happens?")
BATCH_NOT_MOVED = misconceptions.define(
    "03.batch-not-moved", "Moved the model but not the batch",
    "Believes moving the model is enough, as if it pulled its inputs to its device; each batch must be moved "
    "too (`batch = batch.to(device)`), or the first layer raises a device-mismatch error.",
    section=("03_to_device", "6. Moving data for a training step"),
    question="After `model.to(device)`, where is a batch that comes from the data loader, and what does "
             "`model(batch)` do?")
COPIED_MODEL = misconceptions.define(
    "03.copied-model", "Returned a copy of the model",
    "Believes a model must be copied to be moved (`copy.deepcopy(model).to(device)`), as a tensor's `.to` "
    "returns a new tensor; `Module.to` moves the module in place and returns the same object, and a copy "
    "leaves the caller's model, and any optimizer built on it, behind.",
    section=("03_to_device", "5. Moving a model"),
    question="What does `model.to(device) is model` give? Why is a moved copy of the model a problem for the "
             "caller's optimizer?")
NOT_BOTH_RETURNED = misconceptions.define(
    "03.not-both-returned", "Did not return both model and batch",
    "Returns only the model or only the batch, or nothing, as if moving were enough; only `Module.to` works "
    "in place: the moved batch is a new tensor, and the caller gets it only if it is returned.",
    section=("03_to_device", "6. Moving data for a training step"),
    question="`prepare` runs `batch = batch.to(device)` and returns only the model. Where is the caller's "
             "`batch` now?")
PAIR_SWAPPED = misconceptions.define(
    "03.pair-swapped", "Returned `(batch, model)`",
    "Returns the pair in the wrong order; the caller unpacks `model, batch = prepare(...)`, so the model "
    "must come first.",
    section=("03_to_device", "6. Moving data for a training step"),
    question="The caller writes `model, batch = prepare(model, batch, device)`. What do the two names hold "
             "if `prepare` returns `(batch, model)`?")


def prepare(model, batch, device):
    """Put ``model`` and the tensor ``batch`` on ``device``; return ``(model, batch)``."""
    model = model.to(device)   # in place; returns the same module
    batch = batch.to(device)   # the batch on device (a new tensor unless it was there): keep it!
    return model, batch


class _TinyText(nn.Module):
    """Token ids in, one score per sequence out (an int64 batch)."""

    def __init__(self, vocab: int = 20, dim: int = 6):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(ids).mean(dim=1))


def _prepare_cases(gen: torch.Generator) -> list[tuple[str, Callable[[], nn.Module], torch.Tensor]]:
    def mlp() -> nn.Module:
        return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    cases = []
    for n in (int(torch.randint(2, 9, (1,), generator=gen)), 1):
        cases.append(("a Linear/BatchNorm model", mlp, torch.randn(n, 4, generator=gen)))
        cases.append(("a token model", _TinyText, torch.randint(0, 20, (n, 5), generator=gen)))
    return cases


def _new_model(make: Callable[[], nn.Module]) -> nn.Module:
    with torch.random.fork_rng(devices=[]):  # model init must not touch the learner's global RNG
        torch.manual_seed(0)
        return make()


@grader("03.prepare", points=2, reference=prepare, title="Model and batch, same device", hints=(
    "Two things must end up on `device`: the model and the batch. Only one of them moves in place.",
    "`Module.to` moves the module itself and returns it. `Tensor.to` returns a tensor on `device` (a new "
    "one whenever the device or dtype changes) and leaves the old one where it was, so you must keep its "
    "result.",
    "`model = model.to(device)`, `batch = batch.to(device)`, then `return model, batch`.",
))
def _grade_prepare(fn: Callable) -> str:
    gen = torch.Generator().manual_seed(4)
    cases = _prepare_cases(gen)
    targets = _target_devices()
    for target, norm in targets:
        for what, make, batch in cases:
            model = _new_model(make)
            before = batch.clone()
            context = f"{what} on cpu, batch = {describe(batch)}, device = {target!r}"
            try:
                got = call(fn, model, batch, target, context=context)
            except Crashed as e:
                if "set_data" in str(e.error):
                    raise Wrong(f"With {context} your code raised {type(e.error).__name__}: "
                                f"{safe_repr(str(e.error), 160)}\nAssigning `p.data = ...` one parameter "
                                "at a time cannot move a parameter to every device, and it would miss "
                                "the buffers anyway. Use `model.to(device)`.", PARAMS_ONE_BY_ONE) from None
                raise
            m, b = _unpack_prepare(got, model, batch)
            if not same_values(batch, before) or batch.device.type != "cpu":
                raise Wrong("Your function changed the batch it was given. Leave the input alone and "
                            "return the moved copy.", MOVED_INPUT_IN_PLACE)
            _check_model(m, model, norm, context)
            _check_batch(fn, b, model, batch, make, target, norm, context)
    return (f"Right for {len(cases)} model/batch pairs (float and int64 batches, a model with buffers) "
            f"moved to {', '.join(sorted({str(n) for _, n in targets}))}, with the device given as a "
            "string and as a torch.device.")


def _unpack_prepare(got: Any, model: nn.Module, batch: torch.Tensor) -> tuple[Any, Any]:
    if got is None:
        raise Wrong("Your function returned None. Return both: `return model, batch`.", NOT_BOTH_RETURNED)
    if issubclass(type(got), nn.Module):
        raise Wrong("You returned only the model. The batch you moved is lost: return both, "
                    "`return model, batch`.", NOT_BOTH_RETURNED)
    if is_tensor(got):
        raise Wrong("You returned only the batch. Return both, model first: `return model, batch`.",
                    NOT_BOTH_RETURNED)
    if type(got) not in (tuple, list):
        raise Wrong(f"You returned {safe_repr(got)} ({type(got).__name__}); return a pair, "
                    "`return model, batch`.", misconceptions.WRONG_TYPE)
    if len(got) != 2:
        raise Wrong(f"You returned {len(got)} item(s); return exactly two: `return model, batch`.",
                    misconceptions.WRONG_TYPE)
    m, b = got
    if is_tensor(m) and issubclass(type(b), nn.Module):
        raise Wrong("You returned `(batch, model)`: the order is `(model, batch)`.", PAIR_SWAPPED)
    if not issubclass(type(m), nn.Module):
        raise Wrong(f"The first item should be the model, but it is {safe_repr(m)} ({type(m).__name__}).",
                    misconceptions.WRONG_TYPE)
    if not is_tensor(b):
        raise Wrong(f"The second item should be the batch tensor, but it is {safe_repr(b)} "
                    f"({type(b).__name__}).", misconceptions.NOT_A_TENSOR)
    return m, expect_tensor(b, "The second item (the batch)")


def _check_model(m: nn.Module, model: nn.Module, norm: torch.device, context: str) -> None:
    if m is not model:
        raise Wrong("You returned a different model object (a copy?). `model.to(device)` moves the "
                    "model in place and returns that same object: return it. A copy leaves the caller's "
                    "model, and any optimizer built on it, behind.", COPIED_MODEL)
    params = [(n, p) for n, p in model.named_parameters() if not _on(expect_tensor(p, f"Parameter `{n}`"), norm)]
    buffers = [(n, b) for n, b in model.named_buffers() if not _on(expect_tensor(b, f"Buffer `{n}`"), norm)]
    if params and len(params) == len(list(model.parameters())):
        name, p = params[0]
        raise Wrong(f"With {context}: your model is still on `{p.device}` (parameter `{name}`). You moved "
                    "the batch but not the model: call `model.to(device)` (it moves the model in place).",
                    MODEL_NOT_MOVED)
    if params:
        name, p = params[0]
        raise Wrong(f"With {context}: parameter `{name}` is still on `{p.device}`. "
                    "`model.to(device)` moves every parameter and buffer at once.", PARAMS_ONE_BY_ONE)
    if buffers:
        name, b = buffers[0]
        raise Wrong(f"With {context}: the parameters moved but the buffer `{name}` is still on `{b.device}`. "
                    "Moving parameters one by one misses buffers such as BatchNorm's running statistics; "
                    "`model.to(device)` moves both.", PARAMS_ONE_BY_ONE)


def _check_batch(fn: Callable, b: torch.Tensor, model: nn.Module, batch: torch.Tensor,
                 make: Callable[[], nn.Module], target: Any, norm: torch.device, context: str) -> None:
    if not _on(b, norm):
        where = f"With {context}: the batch you returned is still on `{b.device}`"
        if b is batch:
            watched = batch.as_subclass(_Watched)
            if _to_was_called(fn, (_new_model(make), watched, target), [watched]):
                raise Wrong(f"{where}. You called `batch.to(device)` but threw the result away: here "
                            "`.to` returned a new tensor and left `batch` where it was. Write "
                            "`batch = batch.to(device)`.", TO_NOT_ASSIGNED)
            raise Wrong(f"{where}. You moved the model but not the batch: the model would then meet a "
                        "batch on another device. Add `batch = batch.to(device)`.", BATCH_NOT_MOVED)
        raise Wrong(f"{where}; move it with `batch.to(device)`.", misconceptions.WRONG_DEVICE)
    if b.dtype != batch.dtype:
        raise Wrong(f"With {context}: you returned {describe(b)}. Move the batch without changing its dtype "
                    "(token ids must stay integers): `batch.to(device)`.", CHANGED_DTYPE)
    if b.shape != batch.shape:
        raise Wrong(f"With {context}: you returned {describe(b)}; keep the batch's shape.", misconceptions.WRONG_SHAPE)
    if norm.type != "meta" and not same_values(b.cpu(), batch):
        raise Wrong(f"With {context}: the batch's values changed. `.to(device)` keeps the values.", CREATED_NOT_MOVED)
