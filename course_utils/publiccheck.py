"""Public checks: what Check runs in the students' package of an assessed class, where no reference solution is.

The teacher's release (``python -m course_utils release``) runs each exercise's full check on its reference and
keeps, as *examples*, the calls that check made on plain inputs (tensors, numbers, strings, devices, PyTorch's own
layers, and lists, tuples and dicts of them) with the results the reference gave (:func:`record`). In the students'
package, Check calls the learner's answer on those same inputs, on the learner's own device, and compares
(:func:`run`). Nothing in it says how a result is computed: only what it is, for a few fixed inputs.

An answer that gives every example's result is not thereby right: the full checks (random inputs, every device,
input changes, copies counted, the mistakes named) run when the teacher grades. So a public check never says
"passed" and gives no points: it says how many examples matched, shows the first that did not, and says that the
full checks run at grading."""
from __future__ import annotations

import contextlib
import copy
import dis
import functools
import inspect
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import torch

from . import grading, misconceptions
from .grading import call, safe_repr

#: Where the students' package keeps its examples (written by the release, read by :func:`load`).
EXAMPLES_FILE = Path(__file__).with_name("data") / "public_examples.pt"
#: Examples kept per exercise, at most.
MOST = 12
#: How close a floating-point result must be to the example's.
RTOL, ATOL = 1e-5, 1e-6


@dataclass(frozen=True)
class OnDevice:
    """A tensor that lived on the accelerator when it was recorded: it goes to the learner's device when run."""

    tensor: torch.Tensor


@dataclass(frozen=True)
class DeviceName:
    """The accelerator as a ``torch.device`` (``as_string=False``) or as its name (``"cuda"``, ``"cuda:0"``)."""

    as_string: bool
    indexed: bool


@dataclass(frozen=True)
class Example:
    """One call of the answer and the result the reference gave; ``what`` describes the input in the check's words."""

    what: str
    args: tuple
    kwargs: dict
    expected: Any
    #: For a class answer: how the object was made (its arguments), what was done to it before (``(method, args)``
    #: calls such as ``.to``), and the method called (``__call__`` for the object itself); None for a function.
    made: Optional[tuple] = None
    before: tuple = ()
    method: str = "__call__"


@dataclass(frozen=True)
class Kind:
    """A result compared by its type's name only (an optimizer the answer returns)."""

    name: str


@dataclass(frozen=True)
class Exercise:
    """What the students' package knows of an exercise: no reference and no grader, only its examples."""

    id: str
    title: str
    name: str
    kind: str
    points: int
    hints: tuple[str, ...]
    examples: tuple[Example, ...]


# --- portable values: the accelerator of the recording becomes the learner's -----------------------------------

class _NotPlain(Exception):  # noqa: N818  (private: never leaves this module)
    """A value an example cannot keep (a class of the course's own, a function, a tensor on ``meta``...)."""


_PLAIN = (bool, int, float, str, type(None))


def portable(value: Any, device: torch.device) -> Any:
    """``value`` with the accelerator ``device`` replaced by markers, so that it can run on another one
    (:class:`_NotPlain` for anything an example cannot keep)."""
    if isinstance(value, torch.Tensor):
        if (type(value) is not torch.Tensor and value.device.type == "cpu") or value.device.type == "meta":
            raise _NotPlain(type(value).__name__)
        if value.device.type == "cpu":
            return value.detach().clone()
        if value.device.type != device.type or value.device.index:   # a second GPU: the learner may have one
            raise _NotPlain(str(value.device))
        return OnDevice(torch.Tensor.cpu(value).detach().clone())
    if isinstance(value, torch.device):
        if value.type == "cpu":
            return value
        if value.type != device.type or value.index:
            raise _NotPlain(str(value))
        return DeviceName(False, value.index is not None)
    if isinstance(value, str) and value.split(":")[0] == device.type:
        return DeviceName(True, ":" in value)
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(portable(v, device) for v in value)
    if type(value) is dict and all(type(k) in (str, int) for k in value):
        return {k: portable(v, device) for k, v in value.items()}
    if isinstance(value, torch.nn.Module) and type(value).__module__.startswith("torch.nn"):
        return _module_on_cpu(value, device)
    if isinstance(value, torch.optim.Optimizer):
        return Kind(type(value).__name__)
    raise _NotPlain(type(value).__name__)


def _module_on_cpu(module: torch.nn.Module, device: torch.device) -> Any:
    """One of PyTorch's own layers, kept on the CPU with a note of which of its tensors were on the accelerator."""
    held = [*module.named_parameters(), *module.named_buffers()]   # non-persistent buffers too
    on_device = [name for name, t in held if t.device.type == device.type]
    if any(t.device.type not in ("cpu", device.type) or t.device.index for _, t in held):
        raise _NotPlain("a layer on another device")
    on_cpu = torch.nn.Module.to(copy.deepcopy(module), "cpu")
    return ("__module__", on_cpu, tuple(on_device))


def local(value: Any, device: torch.device) -> Any:
    """A fresh copy of a :func:`portable` value on the learner's accelerator ``device``."""
    if isinstance(value, OnDevice):
        return value.tensor.clone().to(device)
    if isinstance(value, DeviceName):
        name = f"{device.type}:{device.index or 0}" if value.indexed else device.type
        return name if value.as_string else torch.device(name)
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "__module__":
        module = copy.deepcopy(value[1])
        for name in value[2]:
            owner, _, leaf = name.rpartition(".")
            holder = module.get_submodule(owner) if owner else module
            if leaf in holder._parameters:
                p = holder._parameters[leaf]
                holder._parameters[leaf] = torch.nn.Parameter(p.detach().to(device), requires_grad=p.requires_grad)
            else:
                holder._buffers[leaf] = holder._buffers[leaf].to(device)
        return module
    if isinstance(value, (list, tuple)):
        return type(value)(local(v, device) for v in value)
    if isinstance(value, dict):
        return {k: local(v, device) for k, v in value.items()}
    return value


# --- recording (the teacher's release) ----------------------------------------------------------------------

#: Stands for the recording's accelerator in an example's description (the learner's own is named when it runs).
GPU = "\x00gpu\x00"


@contextlib.contextmanager
def record(reference: Callable, device: torch.device) -> Iterator[list[Example]]:
    """Keep, as :class:`Example` s, the calls of ``reference`` that checks make through
    :func:`course_utils.grading.call` in the block, on plain inputs and outside a simulated machine (whose answers
    the learner's machine does not give)."""
    kept: list[Example] = []
    made: dict[int, tuple[Any, tuple, list]] = {}   # id -> (an object the reference class made, how, what was done)

    def seen(fn: Callable, args: tuple, kwargs: dict, result: Any, context: str) -> None:
        owner = made.get(id(getattr(fn, "__self__", fn)))
        if len(kept) >= MOST or not _real_machine() or (fn is not reference and owner is None):
            return
        try:
            call_args = (portable(args, device), portable(kwargs, device))
            if fn is reference and isinstance(reference, type):   # an object to call methods of, next
                made[id(result)] = (result, call_args, [])
            elif owner is not None and getattr(fn, "__name__", "") == "to":
                owner[2].append(("to", call_args))
            else:
                how = {} if owner is None else {"made": owner[1], "before": tuple(owner[2]),
                                                "method": getattr(fn, "__name__", "__call__")}
                kept.append(Example((context or "the check's input").replace(device.type, GPU), *call_args,
                                    portable(result, device), **how))
        except _NotPlain:
            pass

    grading.OBSERVERS.append(seen)
    try:
        yield kept
    finally:
        grading.OBSERVERS.remove(seen)


def _real_machine() -> bool:
    """False while a check makes the answer see a simulated machine (:class:`course_utils.grading.Patched`)."""
    return getattr(torch.accelerator.is_available, "__module__", "").startswith("torch")


# --- running (the students' package) ------------------------------------------------------------------------

def same(got: Any, want: Any) -> bool:
    """Whether ``got`` is the example's result ``want`` (both local): equal, or close for floating point."""
    if isinstance(want, torch.Tensor):
        if type(got) not in (torch.Tensor, type(want)) or got.device.type != want.device.type \
                or got.dtype != want.dtype or got.shape != want.shape:
            return False
        got, want = torch.Tensor.cpu(got), torch.Tensor.cpu(want)
        if want.dtype.is_floating_point or want.dtype.is_complex:
            return bool(torch.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True))
        return bool(torch.equal(got, want))
    if isinstance(want, Kind):
        return type(got).__name__ == want.name
    if isinstance(want, bool) or want is None or isinstance(want, (str, torch.device)):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)):
        return (isinstance(got, (int, float)) and not isinstance(got, bool)
                and (got == want if isinstance(want, int) and isinstance(got, int)
                     else math.isclose(float(got), float(want), rel_tol=RTOL, abs_tol=ATOL)))
    if isinstance(want, (list, tuple)):
        return type(got) is type(want) and len(got) == len(want) and all(map(same, got, want))
    if isinstance(want, dict):
        return type(got) is dict and got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    if isinstance(want, torch.nn.Module):   # one of PyTorch's layers: its kind, and its tensors where they are
        return type(got) is type(want) and same(dict(got.state_dict()), dict(want.state_dict()))
    return False


def run(exercise: Exercise, answer: Callable, device: Optional[torch.device]) -> str:
    """Call ``answer`` on each example, on the learner's accelerator ``device`` (examples that need one are skipped
    without), and compare: the feedback, or :class:`~course_utils.grading.Wrong` naming an example whose result
    differs (NotAttempted and Crashed come as from :func:`course_utils.grading.call`)."""
    if is_stub(answer):
        raise grading.NotAttempted()
    tried = 0   # the examples on the learner's GPU first: device bugs show there, as in the full checks
    for example in sorted(exercise.examples, key=lambda e: not _needs_device(e)):
        if device is None and _needs_device(example):
            continue
        what = example.what.replace(GPU, device.type if device is not None else "cpu")
        args, kwargs = local(example.args, device), local(example.kwargs, device)
        got = call(_callee(answer, example, device), *args, context=what, **kwargs)
        want = local(example.expected, device)
        tried += 1
        if not same(got, want):
            raise grading.Wrong(f"For {what}, your answer gave {safe_repr(got)}; the expected result is "
                                f"{safe_repr(want)}. " + GRADED_LATER, misconceptions.WRONG_VALUE)
    if not tried:
        return ("This exercise has no examples that run here: try your code in the cells above it. " + GRADED_LATER)
    return f"Your answer gave the expected result on all {tried} examples it was tried on. " + GRADED_LATER


def _callee(answer: Callable, example: Example, device: Optional[torch.device]) -> Callable:
    """What an example calls: the answer itself, or for a class answer the method of an object made as the check
    made the reference's."""
    if example.made is None:
        return answer
    args, kwargs = local(example.made, device)
    made = call(answer, *args, context=f"{getattr(answer, '__name__', 'your class')}(...)", **kwargs)
    for name, (args, kwargs) in example.before:
        made = call(getattr(made, name), *local(args, device), context=f".{name}(...)", **local(kwargs, device))
    method = made if example.method == "__call__" else getattr(made, example.method, None)
    if not callable(method):
        raise grading.Wrong(f"Your {type(made).__name__} has no method `{example.method}`: keep the names the "
                            "exercise gives. " + GRADED_LATER, misconceptions.WRONG_TYPE)
    return method


#: Said under every public check.
GRADED_LATER = ("These are the public checks of an assessed class: the full checks run when your teacher grades, "
                "and give the marks.")


def is_stub(answer: Any) -> bool:
    """Whether ``answer`` is still the notebook's stub: a function whose code only raises ``NotImplementedError``, or
    a class with such a method (the capstone's stub raises before its buggy script)."""
    if isinstance(answer, type):
        return any(is_stub(f) for f in vars(answer).values() if inspect.isfunction(f)) or not any(
            inspect.isfunction(f) for f in vars(answer).values())
    code = getattr(answer, "__code__", None)
    if code is None:
        return False
    first = next((i for i in dis.get_instructions(code) if i.opname not in _PREAMBLE), None)
    return first is not None and first.opname == "LOAD_GLOBAL" and first.argval == "NotImplementedError"


_PREAMBLE = {"RESUME", "NOP", "CACHE", "COPY_FREE_VARS", "MAKE_CELL"}


def _needs_device(example: Example) -> bool:
    return _holds_device((example.args, example.kwargs, example.expected, example.made, example.before))


def _holds_device(value: Any) -> bool:
    """Whether ``value`` (lists, tuples and dicts looked into) holds a tensor or a device of the accelerator."""
    if isinstance(value, (OnDevice, DeviceName)):
        return True
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return any(_holds_device(v) for v in items)


def placeholder(name: str, kind: str) -> Any:
    """What stands where the reference would be in the students' package: the answer's name and kind, nothing more
    (a function that is not an answer, or an empty class). It is marked, so that Check knows the exercise is public."""
    if kind == "class":
        return type(name, (), {"__doc__": "No reference here: the full checks run at grading.", PUBLIC_MARK: True})

    def function(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("no reference here: the full checks run at grading")
    function.__name__ = function.__qualname__ = name
    setattr(function, PUBLIC_MARK, True)
    return function


#: The attribute that marks :func:`placeholder` s.
PUBLIC_MARK = "__course_public__"


def register(lesson: str) -> None:
    """Register lesson ``lesson``'s exercises from the students' package's examples, each graded by :func:`run` on
    the learner's accelerator (called by that package's lesson modules)."""
    from . import device as _device
    from .exercises import grader

    for exercise in load().values():
        if exercise.id.split(".")[0] != lesson:
            continue

        def grade(answer: Callable, exercise: Exercise = exercise) -> str:
            return run(exercise, answer, _device.accelerator() and _device.best_device())

        grader(exercise.id, points=exercise.points, reference=placeholder(exercise.name, exercise.kind),
               title=exercise.title, hints=exercise.hints)(grade)


@functools.lru_cache(maxsize=4)
def load(path: Path = EXAMPLES_FILE) -> dict[str, Exercise]:
    """The public exercises of a students' package (empty where the file is absent: the full package)."""
    if not path.exists():
        return {}
    data = torch.load(path, weights_only=False)
    return {e.id: e for e in data}


__all__ = ["Example", "Exercise", "Kind", "EXAMPLES_FILE", "GRADED_LATER", "PUBLIC_MARK", "record", "run", "same",
           "load", "portable", "local", "placeholder", "register"]
