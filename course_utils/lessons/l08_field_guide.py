"""Appendix 08 - field guide: the device errors you will meet outside the lessons, and their fixes."""
from __future__ import annotations

from typing import Any, Callable

import torch

from .. import misconceptions
from ..exercises import grader
from ..grading import Crashed, Wrong, a_tensor, call, describe, safe_repr
from ..quizzes import add_quiz

# --- quizzes ---------------------------------------------------------------------------------

add_quiz(
    "08.oom_message",
    "A training step stops with `CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "14.74 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 13.61 GiB memory in use. "
    "Of the allocated memory 13.20 GiB is allocated by PyTorch, and 287.42 MiB is reserved by PyTorch but "
    "unallocated.` Which fix do these figures call for?",
    ["Hold fewer tensors: a smaller batch, `torch.no_grad()` for evaluation, `del` what you no longer need",
     "Call `torch.cuda.empty_cache()` before each step, so that PyTorch's cache gives its memory back",
     "Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`: the free memory is cut into pieces",
     "Close the other program that is using the GPU"],
    0,
    "*Allocated by PyTorch* is your live tensors: 13.20 of the GPU's 14.74 GiB, so hold fewer of them. The cache "
    "(*reserved but unallocated*) holds only 287 MiB: `empty_cache()` could hand back no more than that, and the "
    "allocator already freed it and tried again before raising; with so little cached, the memory is not cut into "
    "pieces either, so `expandable_segments` has nothing to join. And this process uses 13.61 GiB while "
    "14.74 - 1.12 = 13.62 GiB is in use in all: no other program holds any of it.",
)
add_quiz(
    "08.bad_label",
    "A classifier has 5 classes (labels 0 to 4), and one label in the batch is 5. What does "
    "`nn.CrossEntropyLoss()(logits, labels)` do on the CPU?",
    ["Returns a loss, a little too large", "Raises `IndexError: Target 5 is out of bounds.`",
     "Raises `RuntimeError: CUDA error: device-side assert triggered`", "Returns `nan`"],
    1,
    "The CPU kernel checks each label and names the bad one: `IndexError: Target 5 is out of bounds.` "
    "On a GPU the same check runs inside the kernel; all it can do is stop, and you get the vague "
    "\"device-side assert triggered\", often reported at a later line. That is why running one step on the CPU "
    "is the quickest way to read the real error.",
)
add_quiz(
    "08.module_prefix",
    "A checkpoint was saved with `torch.save(nn.DataParallel(model).state_dict(), path)`. You load it into a "
    "plain model with `model.load_state_dict(torch.load(path))`. What happens?",
    ["It loads: the wrapper does not change the names", "It loads, but silently skips every weight",
     "It raises a RuntimeError: every key is \"missing\" and every saved key \"unexpected\"",
     "It raises a KeyError for the first weight"],
    2,
    "`DataParallel` (and `DistributedDataParallel`) keep your model as their submodule `module`, so every key "
    "of the wrapper's `state_dict` starts with `module.`. `load_state_dict` is strict by default: it lists the "
    "plain names as missing and the `module.` names as unexpected, and loads nothing.",
)


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
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    return type(a) is type(b) and a == b


PREFIX_SECTION = ("08_field_guide", "Checkpoints from DataParallel / DDP")
STATE_DICT_CHANGED = misconceptions.define(
    "08.state-dict-changed-in-place", "Renamed the keys of the caller's state_dict in place",
    "Changed the dict it was given (popping and re-adding keys, as PyTorch's "
    "`consume_prefix_in_state_dict_if_present` does); the exercise asks for a new dict and leaves the caller's "
    "checkpoint as it was, since it may still be needed.",
    section=(PREFIX_SECTION[0], f"{PREFIX_SECTION[1]} › Exercise 08.strip_prefix"),
    question="After `consume_prefix_in_state_dict_if_present(state, 'module.')`, what do the keys of `state` look "
             "like? How do you keep the original?")
PREFIX_NOT_AT_START_ONCE = misconceptions.define(
    "08.prefix-not-removed-once-at-start", "Removed the prefix other than once, from the front",
    "Believes removing `module.` anywhere in a key (`key.replace`), every time it repeats, or a fixed number of "
    "characters is the same as removing the prefix; only a key that starts with it loses it, once, and "
    "`key[len(prefix):]` takes off exactly the prefix asked for (`_orig_mod.` has 10 characters).",
    section=PREFIX_SECTION,
    question="What does `'encoder.module.weight'.replace('module.', '')` give, and why is that not the fix for a "
             "DataParallel checkpoint?")
VALUES_COPIED = misconceptions.define(
    "08.copied-values", "Copied or changed the values, not only the keys",
    "Believes a new dict needs new tensors (`v.clone()`, `v.to(...)`); only the keys are wrong in a wrapper's "
    "checkpoint, so the values stay the same objects: a copy costs memory for nothing.",
    section=(PREFIX_SECTION[0], f"{PREFIX_SECTION[1]} › Exercise 08.strip_prefix"),
    question="What differs between the state_dict of `nn.DataParallel(model)` and that of `model`: the keys, the "
             "tensors, or both?")


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
        original = dict(state)
        given = dict(state)
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
                raise Wrong(f"For {description} the value under {key!r} is {shown}, not the value that was "
                            "saved under its prefixed name. Keep every value as it is: change only the keys.",
                            VALUES_COPIED)
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


def _not_a_plain_list(got: Any, want: list[int]) -> str | None:
    """Why ``got`` is not a plain list of plain ints, in words; None when it is one.

    Only exact types count: a ``list`` (or ``int``) subclass could define ``==`` and ``!=`` to say anything."""
    if type(got) is list and all(type(i) is int for i in got):
        return None
    if isinstance(got, torch.Tensor):
        return (f"you returned a tensor ({describe(got)}). Return a plain list of Python ints: "
                "`.tolist()` converts.")
    if got is None:
        return "your function returned None: did you forget the `return`?"
    if isinstance(got, (set, frozenset)):
        return "you returned a set, which has no order. Return a sorted list: `sorted(...)` makes one."
    if isinstance(got, (tuple, range)):
        return f"you returned a {type(got).__name__}; return a list (`list(...)` makes one), expected {want}."
    if type(got) is not list:
        return (f"you returned {safe_repr(got)} (a `{type(got).__name__}`); return a plain `list` of ints, "
                f"expected {want}.")
    odd = next(i for i in got if type(i) is not int)
    if isinstance(odd, torch.Tensor):
        return ("your list holds tensors; return plain Python ints. `.tolist()` on the positions tensor gives "
                "them.")
    return (f"one item is {safe_repr(odd)}, a `{type(odd).__name__}`; every position should be a plain Python "
            "`int` (`.tolist()` gives them; `int(i)` converts one).")


LABELS_SECTION = ("08_field_guide", "Device-side asserts")
NO_IGNORE_INDEX = misconceptions.define(
    "08.no-ignore-index-parameter", "No `ignore_index` parameter",
    "Believes every label outside `0 .. num_classes - 1` trips the loss, or that the skipped label is always -100; "
    "the losses skip the labels equal to their `ignore_index` (-100 by default, settable), so the check needs it "
    "as a parameter with that default.",
    section=LABELS_SECTION,
    question="A batch is padded with -1 and the loss is `nn.CrossEntropyLoss(ignore_index=-1)`. Which labels does "
             "the loss skip, and what must `bad_labels` be told?")
LABELS_CHANGED = misconceptions.define(
    "08.labels-changed-in-place", "Changed the labels while checking them",
    "Fixed or clamped the labels in place (`clamp_`, assignment) while looking for bad ones; a check only reads: "
    "changing the labels hides the bad data instead of finding it.",
    section=LABELS_SECTION,
    question="Why is `labels.clamp_(0, num_classes - 1)` no fix for a label out of range?")
IGNORE_INDEX_REPORTED = misconceptions.define(
    "08.ignore-index-reported", "Reported the labels equal to `ignore_index`",
    "Believes a label equal to `ignore_index` (-100 by default) trips the assert; `nn.CrossEntropyLoss` and "
    "`nn.NLLLoss` skip those positions before the range check, on the CPU and on the GPU.",
    section=LABELS_SECTION,
    question="Does a label of -100 make `nn.CrossEntropyLoss()` raise on the CPU or trigger a device-side assert? "
             "Why not?")
LABEL_RANGE = misconceptions.define(
    "08.wrong-label-range", "Wrong range of valid labels",
    "Believes labels up to `num_classes` are valid, or forgets negative ones; valid labels run from 0 to "
    "`num_classes - 1`, and any other value except `ignore_index` trips the loss.",
    section=LABELS_SECTION,
    question="A classifier has 5 classes. Which of the labels -1, 0, 4, 5 does the loss refuse?")


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
        why = _not_a_plain_list(got, want)
        if why is not None:
            raise Wrong(f"For {description} {why}", misconceptions.WRONG_TYPE)
        if got != want:
            values = [labels[i].item() for i in want]
            skip = -100 if ignore_index is None else ignore_index
            flagged = [i for i in got if 0 <= i < len(labels) and labels[i].item() == skip]
            if flagged:
                raise Wrong(f"For {description} you returned {safe_repr(got)}, but position {flagged[0]} holds "
                            f"{skip}, the `ignore_index`: `nn.CrossEntropyLoss` and `nn.NLLLoss` skip those labels "
                            "on the CPU and on the GPU (no assert), so they are not bad. Leave out the labels equal "
                            f"to `ignore_index`. The bad positions are {want} (labels {values}).",
                            IGNORE_INDEX_REPORTED)
            raise Wrong(f"For {description} (num_classes={num_classes}) you returned {safe_repr(got)}; the bad "
                        f"positions are {want} (labels {values}). Valid labels run from 0 to num_classes - 1: "
                        "catch negative labels and labels equal to num_classes too (all but `ignore_index`).",
                        LABEL_RANGE)
    return ("Right: you find every label outside 0..num_classes-1 that the loss does not skip, the ones that make "
            "a GPU stop with \"device-side assert triggered\". Check a suspicious batch like this before blaming "
            "the GPU.")
