"""Building blocks for exercise graders: calling learner code safely and describing what came back.

A grader is a function ``grade(answer) -> str`` that returns a success message, or raises
:class:`Wrong` (with feedback), :class:`NotAttempted` or :class:`Crashed`.
:func:`course_utils.check` turns these into a :class:`~course_utils.results.Result`."""
from __future__ import annotations

import inspect
import numbers
import reprlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

import torch
import torch.utils._device as _device_module
from torch._C import (_get_dispatch_stack_at, _get_function_stack_at, _len_torch_dispatch_stack,
                      _len_torch_function_stack, _pop_torch_function_stack, _push_on_torch_function_stack)
from torch.utils._python_dispatch import _pop_mode as _pop_dispatch_mode
from torch.utils._python_dispatch import _push_mode as _push_dispatch_mode
from torch.utils._pytree import tree_flatten

from . import device as _device
from . import gpusim, misconceptions
from .gpusim import (CPU_ONLY_BUILD, NO_GPU_CUDA_BUILD, OTHER_ACCELERATOR, Machine,  # noqa: F401  (the lessons'
                     Patched, simulated_accelerator, simulated_no_accelerator)  # simulated machines, named here)
from .exceptions import Crashed, NotAttempted, TimeLimit, Wrong  # noqa: F401  (the checks' outcomes)
from .text import shorten


def safe_repr(obj: Any, limit: int = 80) -> str:
    """``repr`` that never raises and stays short, even for hostile objects."""
    try:
        if isinstance(obj, torch.Tensor):
            return describe(obj)
        text = reprlib.Repr().repr(obj) if not isinstance(obj, str) else repr(obj)
    except BaseException:  # a hostile __repr__ must not break the check
        text = f"<{type(obj).__name__} object>"
    return shorten(text, limit)


def describe(t: torch.Tensor) -> str:
    """E.g. ``float32 tensor of shape (2, 3) on cpu``."""
    dtype = str(t.dtype).replace("torch.", "")
    return f"{dtype} tensor of shape {tuple(t.shape)} on {t.device}"


def a_tensor(t: torch.Tensor) -> str:
    """:func:`describe` with its article: ``a float32 tensor ...``, ``an int64 tensor ...``."""
    text = describe(t)
    return ("an " if text.startswith("int") else "a ") + text


class ModesKept:
    """``with ModesKept() as kept:``: after the block, PyTorch's torch function and dispatch modes (and the default
    device, which is one) are those active before it (``kept.changed`` says whether code in the block left one): a
    mode left active by an answer could answer the check's comparisons with anything. The functions used here were
    bound when this module was imported: patching ``torch._C`` does not change them."""

    def __enter__(self) -> "ModesKept":
        self.before, self.changed = _modes(), False
        return self

    def __exit__(self, *exc: Any) -> None:
        functions, dispatch, context, current = self.before
        now = _modes()
        if all(len(a) == len(b) and all(x is y for x, y in zip(a, b)) for a, b in zip(now, self.before)):
            return
        self.changed = True
        for _ in range(_len_torch_function_stack()):
            _pop_torch_function_stack()
        for mode in functions:
            _push_on_torch_function_stack(mode)
        for _ in range(_len_torch_dispatch_stack()):
            _pop_dispatch_mode()
        for mode in dispatch:
            _push_dispatch_mode(mode)
        holder = getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None)
        if context:
            holder.device_context = context[0]
        elif hasattr(holder, "device_context"):
            del holder.device_context
        _device_module.CURRENT_DEVICE = current[0]


def _modes() -> tuple[tuple, ...]:
    """What decides which modes see a torch call in this thread: the torch function and dispatch modes (in the order
    they go back on), and what ``torch.set_default_device`` records of its own mode (each as a tuple, empty when not
    set; PyTorch 2.7 leaves ``None`` after ``set_default_device(None)``, which counts as unset)."""
    holder = getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None)
    context = getattr(holder, "device_context", None)
    return (tuple(_get_function_stack_at(i) for i in range(_len_torch_function_stack())),
            tuple(_get_dispatch_stack_at(i) for i in range(_len_torch_dispatch_stack())),
            (context,) if context is not None else (), (_device_module.CURRENT_DEVICE,))


def call(fn: Callable, *args: Any, context: str = "", **kwargs: Any) -> Any:
    """Call learner code, translating its exceptions for the grader: :class:`NotAttempted` for the unsolved stub's
    ``NotImplementedError``, :class:`Crashed` for anything else (``SystemExit`` included). Modes it leaves active are
    taken off again (:class:`ModesKept`), so that what the check does next runs as it chose."""
    try:
        with ModesKept():
            result = fn(*args, **kwargs)
    except NotImplementedError as e:
        raise (read_no_data(e, context) or NotAttempted()) from None
    except (KeyboardInterrupt, TimeLimit):
        raise
    except BaseException as e:  # SystemExit, assertion errors, torch errors, ...
        raise Crashed(e, context) from None
    for observe in OBSERVERS:
        observe(fn, args, kwargs, result, context)
    return result


#: Told of each call :func:`call` made and its result, ``observe(fn, args, kwargs, result, context)``: the student
#: release keeps the checks' calls of the references as public examples (:func:`course_utils.publiccheck.record`).
OBSERVERS: list[Callable[..., None]] = []


def read_no_data(error: BaseException, context: str = "") -> Wrong | None:
    """:class:`Wrong` for code that read the values of a tensor that has none (on ``meta``, which checks use for
    sizes beyond memory, or where no accelerator is registered), or None for any other error. PyTorch's message names
    that device, which the learner never chose, so the feedback leaves it out."""
    if not isinstance(error, (NotImplementedError, RuntimeError)) or "meta" not in text_of(error).lower():
        return None
    where = f" with {context}" if context else ""
    return Wrong(f"Your code read the values of a tensor{where}, but the check gave it a tensor that has none: "
                 "only a shape, a dtype and a device (the check can make tensors larger than any memory that way). "
                 "Work from `.shape`, `.dtype`, `.device`, `numel()` and `element_size()`, and keep the work in "
                 "tensor operations: don't read values (`.item()`, `.tolist()`) or copy tensors to the CPU.",
                 misconceptions.READ_META)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Exact equality that treats NaN as equal to NaN (for "did the learner change my input?"), compared on the CPU
    whatever the devices; a tensor without data (on ``meta``) matches by shape and dtype."""
    if a.device.type == "meta" or b.device.type == "meta":
        return a.shape == b.shape and a.dtype == b.dtype
    a, b = a.cpu(), b.cpu()
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return a.shape == b.shape and bool(torch.equal(a.isnan(), b.isnan())) and bool(
            torch.equal(a.nan_to_num(), b.nan_to_num()))
    return bool(torch.equal(a, b))


def expect_callable(answer: Any, name: str, *, kind: str = "function") -> Callable:
    """Return ``answer`` if it is callable (a class counts when ``kind="class"``)."""
    if answer is None or answer is Ellipsis:
        raise NotAttempted()
    if kind == "class":
        if not inspect.isclass(answer):
            raise Wrong(f"Expected the class `{name}` itself, but got {safe_repr(answer)} "
                        f"({type(answer).__name__}). Pass the class, not an instance.", misconceptions.NOT_CALLABLE)
    elif not callable(answer):
        raise Wrong(f"Expected the function `{name}`, but got {safe_repr(answer)} ({type(answer).__name__}). Pass the "
                    "function itself, without calling it.", misconceptions.NOT_CALLABLE)
    return answer


def expect_tensor(value: Any, what: str) -> torch.Tensor:
    """``value`` as a plain ``torch.Tensor``; fail kindly unless it is a tensor. An ``nn.Parameter`` gives a plain
    view of itself, a tensor on the simulated GPU (:func:`course_utils.gpusim.is_sim_tensor`) is taken as it is; another
    subclass fails, as its ``__torch_function__`` could answer the check's own questions with anything. The type is
    read with ``type()``, which an object cannot fake (``__class__`` can)."""
    kind = type(value)
    if kind is torch.Tensor or gpusim.is_sim_tensor(value):   # a tensor on the course's simulated GPU
        return value
    if kind is torch.nn.Parameter:
        return _as_subclass(value, torch.Tensor)
    if issubclass(kind, torch.Tensor):
        raise Wrong(f"{what} is a `{kind.__name__}`, a subclass of torch.Tensor of your own. Return an ordinary "
                    "tensor, as PyTorch's operations make it: the check compares plain tensors.",
                    misconceptions.NOT_A_TENSOR)
    raise Wrong(f"{what} should be a torch.Tensor, but it is {safe_repr(value)} ({kind.__name__}).",
                misconceptions.NOT_A_TENSOR)


_as_subclass = torch._C.TensorBase.as_subclass  # reads nothing of the tensor's class (no __torch_function__)


def expect_like(got: torch.Tensor, want: torch.Tensor, what: str, *, device: str | None = None, shape: str = "",
                dtype: str = "", device_code: str = misconceptions.WRONG_DEVICE) -> None:
    """Raise :class:`Wrong` unless ``got`` (a plain tensor: :func:`expect_tensor`) has the device, shape and dtype of
    ``want`` (compared in that order). ``what`` starts the shape and dtype messages (``"For a float32 tensor of shape
    (3,) on cpu"``); ``device`` is the whole message for a result on another device (``None``: the device is not
    compared), with the misconception ``device_code``; ``shape`` and ``dtype`` are advice after those messages."""
    if device is not None and got.device != want.device:
        raise Wrong(device, device_code)
    if got.shape != want.shape:
        raise Wrong(f"{what} your result has shape {tuple(got.shape)}." + (f" {shape}" if shape else ""),
                    misconceptions.WRONG_SHAPE)
    if got.dtype != want.dtype:
        raise Wrong(f"{what} your result has dtype {got.dtype}." + (f" {dtype}" if dtype else ""),
                    misconceptions.WRONG_DTYPE)


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a tensor, by its real type (``isinstance`` would ask its ``__class__``)."""
    return issubclass(type(value), torch.Tensor)


#: What :func:`expect_int` tells a learner to do instead, by mistake, when the exercise says nothing else.
_INT_ADVICE = {
    "tensor": "Return a plain Python int: `.item()` converts a one-element tensor.",
    "float": "Return a Python int: `*` and `+` on ints keep them ints, `/` makes a float.",
    "integral": "Return a plain int: `int(...)` converts it.",
}


def expect_int(value: Any, what: str, *, want: int | None = None, advice: Mapping[str, str] | None = None) -> int:
    """``value`` if it is exactly a Python ``int`` (not ``bool``, not a subclass, whose ``==`` could say anything, not
    a NumPy integer); else :class:`Wrong`, saying what to return instead. ``what`` starts the message
    (``"For n=3"`` gives ``"For n=3 you returned ..."``); a float equal to ``want`` is told it is the right number in
    the wrong type; ``advice`` replaces the general advice by mistake (``"tensor"``, ``"float"``, ``"integral"``)."""
    kind, advice = type(value), {**_INT_ADVICE, **(advice or {})}
    if kind is int:
        return value
    if issubclass(kind, torch.Tensor):
        raise Wrong(f"{what} you returned a tensor ({safe_repr(value)}). {advice['tensor']}",
                    misconceptions.RETURNED_TENSOR)
    if kind is bool:
        raise Wrong(f"{what} you returned {value}, a bool. Return the number itself, as an int.",
                    misconceptions.WRONG_TYPE)
    if kind is float:
        right = "the right number, but as " if want is not None and value == want else ""
        raise Wrong(f"{what} you returned {right}the float {value!r}. {advice['float']}", misconceptions.WRONG_TYPE)
    if issubclass(kind, numbers.Integral):
        raise Wrong(f"{what} you returned {safe_repr(value)} of type `{kind.__name__}`, not a plain Python int. "
                    f"{advice['integral']}", misconceptions.WRONG_TYPE)
    raise Wrong(f"{what} you returned {safe_repr(value)} ({kind.__name__}); return the number as an int, a plain "
                "Python int.", misconceptions.WRONG_TYPE)


def expect_float(value: Any, what: str) -> float:
    """``value`` as a float if it is exactly a Python ``int`` or ``float`` (or a NumPy float or integer); else
    :class:`Wrong`. ``what`` starts the message, as for :func:`expect_int`."""
    kind = type(value)
    if kind is float or kind is int or kind in _NUMPY_REALS:
        return float(value)
    if issubclass(kind, torch.Tensor):
        raise Wrong(f"{what} you returned a tensor. Return a plain Python float (`float(...)` or `.item()` "
                    "converts a one-element tensor).", misconceptions.RETURNED_TENSOR)
    if kind is not bool and issubclass(kind, numbers.Real):
        raise Wrong(f"{what} you returned {safe_repr(value)} of type `{kind.__name__}`, not a plain Python "
                    "number. Return a plain float: `float(...)` converts it.", misconceptions.WRONG_TYPE)
    raise Wrong(f"{what} you returned {safe_repr(value)} ({kind.__name__}); return a Python float.",
                misconceptions.WRONG_TYPE)


def _numpy_reals() -> frozenset:
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy ships with torch wheels
        return frozenset()
    return frozenset(getattr(numpy, name) for name in (
        "float16", "float32", "float64", "longdouble", "int8", "int16", "int32", "int64", "uint8", "uint16",
        "uint32", "uint64") if isinstance(getattr(numpy, name, None), type))


_NUMPY_REALS = _numpy_reals()  # NumPy's own scalar types (a subclass of them is not one)


def text_of(error: BaseException) -> str:
    """``str(error)`` as a plain ``str`` (``""`` when it fails, or gives a ``str`` subclass whose ``in`` lies)."""
    try:
        text = str(error)
    except BaseException:  # a hostile __str__
        return ""
    return text if type(text) is str else ""


def list_mistake(got: Any, item: type, items: str, convert: str) -> str:
    """Why ``got`` is not a plain list of plain ``item``s (``items`` says what they are, e.g. ``"names"``, and
    ``convert`` how to get them, e.g. ``"`.tolist()` gives them"``), in words starting "you returned..."; ``""`` when
    it is one. Only exact types count: a ``list`` (or item) subclass could define ``==`` to say anything."""
    if type(got) is list and all(type(i) is item for i in got):
        return ""
    if got is None:
        return "your function returned None: did you forget the `return`?"
    if is_tensor(got):
        return f"you returned a tensor ({safe_repr(got)}). Return a plain list of {items}: {convert}."
    if isinstance(got, (set, frozenset)):
        return "you returned a set, and a set has no order. Return a sorted list: `sorted(...)` makes one."
    if type(got) is not list:
        return (f"you returned {safe_repr(got)} (a `{type(got).__name__}`). Return a plain `list` of {items}: "
                "`sorted(...)` makes one from any iterable.")
    odd = next(i for i in got if type(i) is not item)
    if is_tensor(odd):
        return f"your list holds tensors, not the {items} themselves: {convert}."
    if isinstance(odd, tuple):
        return f"your list holds tuples such as {safe_repr(odd)}: return just the {items}."
    return (f"one item is {safe_repr(odd)}, a `{type(odd).__name__}`; every item should be a plain "
            f"`{item.__name__}`: {convert}.")


def gpu_refuses(func: Any, args: tuple, kwargs: dict, device_type: str) -> bool:
    """Whether a GPU refuses this operation (an ATen overload and its arguments) for the devices of its tensors, with
    ``device_type``'s tensors as the GPU's (:func:`course_utils.gpusim.judge`, the rules the simulated GPU
    follows): for a check that watches code on the data-less ``meta`` device, which lets some mixes through."""
    tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
    if len({t.device.type for t in tensors}) < 2 or not any(t.device.type == device_type for t in tensors):
        return False
    try:
        return gpusim.judge(func, args, kwargs, lambda t: t.device.type == device_type) is not None
    except LookupError:   # an operation no rule knows: refused as TensorIterator refuses it
        return any(t.device.type != device_type and t.dim() > 0 for t in tensors)


def target_device() -> torch.device:
    """The device besides the CPU that checks run the learner's code on: the accelerator (a real GPU or the simulated
    one) at its current index, as the learner's ``device`` is, so that PyTorch's errors name it; where none is
    registered (the test runner's own process), the data-less ``meta`` device, which tests placement."""
    acc = _device.accelerator()
    if acc is None or acc.type == "meta":   # also where a test simulates an accelerator with `meta`
        return torch.device("meta")
    best = _device.best_device()
    return best if best.type == acc.type else torch.device(acc.type, 0)


def devices_to_test() -> list[torch.device]:
    """The CPU and :func:`target_device`."""
    return [torch.device("cpu"), target_device()]


DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16,
          torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64)

SHAPES = ((), (0,), (1,), (7,), (3, 4), (2, 3, 5), (4, 1, 2, 3))


def random_tensor(shape: tuple, dtype: torch.dtype, gen: torch.Generator, device: Any = "cpu") -> torch.Tensor:
    """A random tensor of any dtype, made on the CPU with ``gen`` and moved to ``device`` (a device or its name)."""
    if dtype == torch.bool:
        t = torch.rand(shape, generator=gen) > 0.5
    elif dtype.is_floating_point or dtype.is_complex:
        t = torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype)
    else:
        t = torch.randint(0, 100, shape, generator=gen).to(dtype)
    return t.to(device)


def sample_tensors(seed: int, count: int = 12, devices: list[torch.device] | None = None) -> Iterator[torch.Tensor]:
    """Random tensors over many shapes, dtypes and devices, reproducible from ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    devices = devices or devices_to_test()
    for i in range(count):
        shape = SHAPES[int(torch.randint(len(SHAPES), (1,), generator=gen))]
        dtype, device = DTYPES[i % len(DTYPES)], devices[i % len(devices)]
        if not _device.supports_dtype(device, dtype):  # float64 on MPS
            dtype = torch.float32
        yield random_tensor(shape, dtype, gen, device)
    # always include the cases learners most often get wrong
    yield random_tensor((), torch.float64, gen)
    yield random_tensor((0, 3), torch.int16, gen)


class CallsNoted(Patched):
    """Note, for a ``with`` block, each call of some functions (also through the answer's own helpers), in order;
    each still does what the function did when the block began. ``as`` gives the list of the calls' labels.
    ``functions`` are ``(module, name, label)`` (a missing one is left out); the names ``answer`` imported are too."""

    def __init__(self, functions: Iterable[tuple[Any, str, Any]], answer: Any = None):
        self.functions, self.answer = tuple(functions), answer
        self.calls: list[Any] = []

    def replacements(self) -> dict[tuple[Any, str], Any]:
        fakes = {}
        for module, name, label in self.functions:
            original = getattr(module, name, None) if module is not None else None
            if callable(original) and (module, name) not in fakes:
                fakes[module, name] = self._noting(label, original)
        return fakes

    def _noting(self, label: Any, original: Callable) -> Callable:
        def noted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(label)
            return original(*args, **kwargs)
        return noted

    def entered(self) -> list[Any]:
        return self.calls
