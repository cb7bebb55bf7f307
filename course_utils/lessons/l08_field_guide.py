"""Appendix 08 - field guide: the device errors you will meet outside the lessons, and their fixes."""
from __future__ import annotations

from typing import Any, Callable

import torch

from .. import misconceptions
from ..exercises import grader
from ..grading import Crashed, Wrong, a_tensor, call, describe, list_mistake, safe_repr

# --- exercise 08.strip_prefix ----------------------------------------------------------------

def strip_prefix(state_dict, prefix="module."):
    """A new dict with ``prefix`` removed from the start of every key that has it; values unchanged."""
    return {(key[len(prefix):] if key.startswith(prefix) else key): value for key, value in state_dict.items()}


def _wrapped_state(gen: torch.Generator) -> list[tuple[str, dict, str]]:
    """(description, state_dict, prefix) for each check."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    wrapped = torch.nn.DataParallel(model).state_dict()
    mixed = {"module.encoder.weight": torch.randn(2, generator=gen), "head.weight": torch.randn(2, generator=gen),
             "module.module.bias": torch.randn(1, generator=gen), "step": 7}
    return [
        ("the state_dict of `nn.DataParallel(Sequential(Linear, BatchNorm1d, Linear))`", wrapped, "module."),
        ("a plain state_dict (no key has the prefix)", model.state_dict(), "module."),
        ("a dict where some keys have the prefix and others not, one key twice prefixed, one value an int",
         mixed, "module."),
        ("keys saved by `torch.compile`, prefix=\"_orig_mod.\"",
         {"_orig_mod.weight": torch.randn(2, generator=gen), "_orig_mod.bias": torch.randn(1, generator=gen)},
         "_orig_mod."),
        ("an empty state_dict", {}, "module."),
        ("a key that contains the prefix in the middle (`encoder.module.weight`)",
         {"encoder.module.weight": torch.randn(2, generator=gen), "module.x": torch.randn(1, generator=gen)},
         "module."),
    ]


def _same(a: Any, b: Any) -> bool:
    return (a is b) if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) else (type(a) is type(b) and a == b)


STATE_DICT_CHANGED = misconceptions.code("08.state-dict-changed-in-place")
PREFIX_NOT_AT_START_ONCE = misconceptions.code("08.prefix-not-removed-once-at-start")
VALUES_COPIED = misconceptions.code("08.copied-values")


@grader("08.strip_prefix", points=2, reference=strip_prefix, title="Strip the `module.` prefix", hints=(
    "Build a new dict from `state_dict.items()`: keep each value as it is, and change only the keys that "
    "start with `prefix`.",
    "`key.startswith(prefix)` tells you whether a key has the prefix; `key[len(prefix):]` is the key without it. "
    "Remove the prefix once, at the start only: `key.replace(prefix, \"\")` would also change "
    "`encoder.module.weight`.",
    "`return {(k[len(prefix):] if k.startswith(prefix) else k): v for k, v in state_dict.items()}`",
))
def _grade_strip_prefix(fn: Callable) -> str:
    gen = torch.Generator().manual_seed(8)
    for description, state, prefix in _wrapped_state(gen):
        original, given = dict(state), dict(state)
        got = call(fn, given, prefix, context=description)
        want = strip_prefix(original, prefix)
        if dict(given) != original or list(given) != list(original):
            raise Wrong(f"For {description} your function changed the dict it was given. Return a new dict "
                        "and leave the caller's state_dict as it was (it may still be needed).", STATE_DICT_CHANGED)
        if not isinstance(got, dict):
            raise Wrong(f"For {description} you returned {safe_repr(got)} ({type(got).__name__}); return a dict "
                        "(`load_state_dict` takes any mapping, but a dict is what the check expects).",
                        misconceptions.WRONG_TYPE)
        if sorted(map(str, got)) != sorted(map(str, want)) or len(got) != len(want):
            wrong = [k for k in got if k not in want][:3] or [k for k in want if k not in got][:3]
            raise Wrong(f"For {description} the keys are {safe_repr(list(got), 160)}; expected "
                        f"{safe_repr(list(want), 160)}. Look at {safe_repr(wrong)}: remove "
                        f"`{prefix}` only where a key starts with it, and only once.", PREFIX_NOT_AT_START_ONCE)
        for key, value in want.items():
            if not _same(got[key], value):
                shown = describe(got[key]) if isinstance(got[key], torch.Tensor) else safe_repr(got[key])
                raise Wrong(f"For {description} the value under {key!r} is {shown}, not the value that was saved under "
                            "its prefixed name. Keep every value as it is: change only the keys.", VALUES_COPIED)
    return ("Right: the prefix comes off the front of each key that has it, and nothing else changes. "
            "PyTorch's own `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, \"module.\")` "
            "does the same in place.")


# --- exercise 08.bad_labels ------------------------------------------------------------------

def bad_labels(labels, num_classes, ignore_index=-100):
    """Positions (a sorted list of ints) of the labels a loss refuses: outside 0..num_classes-1, not ignore_index."""
    bad = ((labels < 0) | (labels >= num_classes)) & (labels != ignore_index)
    return bad.nonzero().flatten().tolist()


def _label_cases(gen: torch.Generator) -> list[tuple[str, torch.Tensor, int, int | None]]:
    """(description, labels, num_classes, ignore_index or None for the default) for each check."""
    ok = torch.randint(0, 10, (32,), generator=gen)
    too_big = ok.clone()
    too_big[[3, 17]] = 10
    negative = ok.clone()
    negative[0] = -1
    both = torch.randint(0, 3, (12,), generator=gen)
    both[[2, 5, 11]] = torch.tensor([3, -100, 7])
    padded = torch.randint(0, 4, (10,), generator=gen)
    padded[[1, 4, 8]] = torch.tensor([-1, -100, -1])
    return [
        ("32 labels for 10 classes, all valid", ok, 10, None),
        ("32 labels for 10 classes, two of them equal to 10", too_big, 10, None),
        ("32 labels for 10 classes, the first one -1", negative, 10, None),
        ("12 labels for 3 classes: one 3, one -100 (the default ignore_index, skipped by the loss), one 7",
         both, 3, None),
        ("labels of dtype int32", too_big.to(torch.int32), 10, None),
        ("an empty batch", torch.empty(0, dtype=torch.long), 4, None),
        ("10 labels for 4 classes padded with ignore_index=-1: two -1 (skipped) and one -100 (refused)",
         padded, 4, -1),
    ]


NO_IGNORE_INDEX = misconceptions.code("08.no-ignore-index-parameter")
LABELS_CHANGED = misconceptions.code("08.labels-changed-in-place")
IGNORE_INDEX_REPORTED = misconceptions.code("08.ignore-index-reported")
LABEL_RANGE = misconceptions.code("08.wrong-label-range")


@grader("08.bad_labels", points=2, reference=bad_labels, title="Find the labels that would trip a device-side assert", hints=(
    "A label is refused when it is outside `0 <= label < num_classes`, unless it equals `ignore_index`: the loss "
    "skips those positions (that is how padding is marked). Compare the whole tensor at once, then ask where the "
    "result is True.",
    "`((labels < 0) | (labels >= num_classes)) & (labels != ignore_index)` is a boolean tensor, True at the bad "
    "positions. `.nonzero()` gives those positions; `.flatten().tolist()` makes them a list of Python ints.",
    "`return (((labels < 0) | (labels >= num_classes)) & (labels != ignore_index)).nonzero().flatten().tolist()`",
))
def _grade_bad_labels(fn: Callable) -> str:
    gen = torch.Generator().manual_seed(80)
    for description, labels, num_classes, ignore_index in _label_cases(gen):
        given = labels.clone()
        context = f"{description} ({a_tensor(labels)})"
        extra = {} if ignore_index is None else {"ignore_index": ignore_index}
        try:
            got = call(fn, given, num_classes, context=context, **extra)
        except Crashed as e:
            if extra and isinstance(e.error, TypeError) and "ignore_index" in str(e.error):
                raise Wrong("Your function takes no `ignore_index`. Give it the parameter with the loss's own "
                            "default, `def bad_labels(labels, num_classes, ignore_index=-100):`, and skip the "
                            "labels equal to it.", NO_IGNORE_INDEX) from None
            raise
        want = bad_labels(labels, num_classes, -100 if ignore_index is None else ignore_index)
        if not torch.equal(given, labels):
            raise Wrong(f"For {description} your function changed the labels it was given. Only read them.",
                        LABELS_CHANGED)
        why = list_mistake(got, int, "positions", "`.tolist()` gives them as Python ints")
        if why:
            raise Wrong(f"For {description} {why}", misconceptions.WRONG_TYPE)
        if got != want:
            values = [labels[i].item() for i in want]
            skip = -100 if ignore_index is None else ignore_index
            flagged = [i for i in got if 0 <= i < len(labels) and labels[i].item() == skip]
            if flagged:
                raise Wrong(f"For {description} you returned {safe_repr(got)}, but position {flagged[0]} holds {skip}, "
                            "the `ignore_index`: `nn.CrossEntropyLoss` and `nn.NLLLoss` skip those labels on the CPU "
                            "and on the GPU (no assert), so they are not bad. Leave out the labels equal to "
                            f"`ignore_index`. The bad positions are {want} (labels {values}).", IGNORE_INDEX_REPORTED)
            raise Wrong(f"For {description} (num_classes={num_classes}) you returned {safe_repr(got)}; the bad "
                        f"positions are {want} (labels {values}). Valid labels run from 0 to num_classes - 1: catch "
                        "negative labels and labels equal to num_classes too (all but `ignore_index`).", LABEL_RANGE)
    return ("Right: you find every label outside 0..num_classes-1 that the loss does not skip, the ones that make "
            "a GPU stop with \"device-side assert triggered\". Check a suspicious batch like this before blaming "
            "the GPU.")
