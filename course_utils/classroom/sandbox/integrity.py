"""What keeps a graded check honest, inside the worker of ``python -m course_utils grade``.

Private to :mod:`.worker` (whose learner code it watches); what tells an answer that is, or uses, a reference solution
is :mod:`.guard`.

* :class:`Snapshot` / :func:`changes`: the course package, the exercise registry and the parts of PyTorch (``torch._C``
  included) and the standard library that checks rely on must stay as they were, and so must what the course's own
  tables (dicts, lists, sets, tuples, defaults) hold. What PyTorch itself rebinds in normal use is not watched
  (``torch.Storage``, which ``torch.set_default_dtype`` rebinds), or is done before the snapshot (the
  ``nn.Module.__init__`` patch of ``torch.compile``, see :func:`prepare_pytorch`). A course module run again by
  ``importlib.reload`` is no change where it remade what it had (equal values, functions with equal code,
  :func:`_equivalent`); where it made new classes, the change is named as a reload. After each cell and check
  :meth:`Snapshot.unchanged` looks first, by identity, at the live namespaces the snapshot recorded (a few
  milliseconds); only when something is not the same object does :func:`compare` take a new snapshot and name what
  changed.
* :func:`pristine_torch`: each check runs in PyTorch's global state as the worker started (default device and dtype,
  grad and inference mode, RNG, threads, matmul precision, deterministic algorithms, anomaly mode; no torch function or
  dispatch mode active), and the learner's state is put back afterwards, so later cells run as they would in the
  notebook."""
from __future__ import annotations

import gc
import importlib.machinery
import operator
import sys
import types
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator, Optional

import torch
from torch._C import (_len_torch_dispatch_stack, _len_torch_function_stack, _pop_torch_function_stack,
                      _push_on_torch_function_stack)

from course_utils import exercises
from course_utils.exceptions import GraderLimit

#: Attributes PyTorch rebinds in normal use (``torch.set_default_dtype`` sets ``torch.Storage``), by module. What
#: course code changes when a learner legitimately calls it, each course module declares (:meth:`Snapshot.allow`).
_UNWATCHED_NAMES = {"torch": frozenset({"Storage"})}
#: Caches Python itself adds to modules and classes (warnings, pickling).
_CACHES = frozenset({"__warningregistry__", "__slotnames__"})
#: Modules whose functions, classes and submodules must not change (data attributes may): what the
#: checks and this grader call.
_WATCHED_MODULES = ("builtins", "torch", "torch._C", "torch.nn", "torch.nn.functional", "torch.accelerator",
                    "torch.cuda", "torch.testing", "torch.overrides", "torch.utils._python_dispatch",
                    "torch.utils._pytree", "torch.utils._device", "inspect", "contextlib", "io", "reprlib",
                    "signal", "json", "json.encoder", "hmac", "hashlib", "os", "math", "numbers",
                    "functools", "itertools", "operator", "types", "re", "string", "textwrap", "tokenize",
                    "time", "timeit", "statistics", "dataclasses", "traceback")
#: Classes whose attributes must not change, be added or be removed.
_WATCHED_CLASSES = {"torch.Tensor": torch.Tensor, "torch._C.TensorBase": torch._C.TensorBase,
                    "torch.nn.Module": torch.nn.Module, "torch.nn.Parameter": torch.nn.Parameter}
#: Containers whose contents are watched (see :func:`_contents`), and how deep.
_TABLES = (dict, list, set, tuple)
_TABLE_DEPTH = 4
#: Types compared by value when ``importlib.reload`` made a new one (:func:`_equivalent`), and records
#: of where a module was imported from, compared by these attributes.
_VALUES = (str, bytes, int, float, complex, bool, type(None))
_RECORDS = {importlib.machinery.ModuleSpec: ("name", "origin", "loader", "submodule_search_locations", "cached"),
            importlib.machinery.SourceFileLoader: ("name", "path"),
            importlib.machinery.SourcelessFileLoader: ("name", "path")}
_MISSING = object()
_END = object()  # ends a table in _contents


def prepare_pytorch() -> None:
    """Do, before the snapshot, what PyTorch does to itself on first use of a feature, so that an
    answer using that feature does not look like tampering. Today: the first ``torch.compile``d call
    patches ``nn.Module.__init__`` and ``__setstate__`` (TorchDynamo's generation tagging)."""
    try:
        from torch._dynamo.mutation_guard import install_generation_tagging_init
    except Exception:  # pragma: no cover - a PyTorch without TorchDynamo
        return
    install_generation_tagging_init()


# --- the snapshot -------------------------------------------------------------------------------

class Snapshot:
    """What must not change while learner code runs: objects compared by identity (or, for what ``importlib.reload``
    remakes, by what they are: :func:`_equivalent`), key sets, and the contents of the course's own tables."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}   # dotted name -> the object (kept alive: ids never reused)
        self.keys: dict[str, frozenset] = {}  # namespaces where additions count as changes too
        self.contents: dict[str, Any] = {}  # dotted name of a course table -> what it held (_contents)
        # The same, held as the live namespaces and objects themselves, for :meth:`unchanged`: each namespace with
        # the (name, object) pairs recorded from it, its key set when strict, and the names it skips; each function
        # with its code and defaults; each table with what it held.
        self.views: list[tuple[Any, list[tuple[str, Any]], Optional[frozenset], frozenset, frozenset]] = []
        self.functions: list[tuple[types.FunctionType, Any, Any, Any]] = []
        self.tables: list[tuple[Any, list]] = []
        self.sys_modules = sys.modules
        self.kernels = kernels()   # PyTorch's kernels that the checks' comparisons run
        self.rebound = dict(_UNWATCHED_NAMES)  # module -> the globals it rebinds (not watched)
        self.changing: dict[int, Any] = {}  # id -> a table whose contents are not watched (and its declaration)

    def allow(self, name: str, module: types.ModuleType) -> None:
        """Take in what course module ``name`` declares may change in normal use (before any module is recorded):
        ``REBOUND``, the globals it rebinds, and ``CHANGING``, its tables whose contents change (not their names)."""
        declared = vars(module)
        self.rebound[name] = frozenset(declared.get("REBOUND", ()))
        if "CHANGING" in declared:   # the declaration itself too: it holds them
            self.changing.update((id(table), table) for table in (declared["CHANGING"], *declared["CHANGING"]))

    def add_namespace(self, prefix: str, namespace: Any, *, strict: bool, tables: bool = False) -> None:
        """Record ``namespace`` (a module's ``__dict__`` or a class's ``vars()``: live, read again by
        :meth:`unchanged`); ``strict`` records data too, and ``tables`` what its dicts, lists, sets and tuples hold
        (and its functions' defaults)."""
        skip = _CACHES | self.rebound.get(prefix, frozenset())
        names = [n for n in list(namespace) if n not in skip]
        keys = None
        if strict:  # a submodule imported later appears in its package: not a change
            keys = self.keys[prefix] = frozenset(n for n in names if type(namespace[n]) is not types.ModuleType)
        objects, pairs = self.objects, []
        for name in names:
            value = namespace[name]
            kind = type(value)
            if kind is types.FunctionType or (tables and kind in _TABLES):
                self.add(f"{prefix}.{name}", value, tables=tables)
            elif strict or callable(value) or issubclass(kind, types.ModuleType):
                objects[f"{prefix}.{name}"] = value
            else:
                continue
            pairs.append((name, value))
        self.views.append((namespace, pairs, keys, skip, frozenset(names)))

    def add(self, name: str, value: Any, *, tables: bool = False) -> None:
        """Record one object and, for a Python function, its code and defaults; with ``tables``, what
        a table among them holds (a tuple only when it holds tables: the rest of it cannot change)."""
        self.objects[name] = value
        kind = type(value)
        if kind is types.FunctionType:
            self.objects[f"{name}.__code__"] = value.__code__
            self.functions.append((value, value.__code__, value.__defaults__, value.__kwdefaults__))
            for attr in ("__defaults__", "__kwdefaults__"):
                self.add(f"{name}.{attr}", getattr(value, attr), tables=tables)
        elif (tables and kind in _TABLES and (kind is not tuple or any(type(v) in _TABLES for v in value))
              and id(value) not in self.changing and not name.endswith(".__builtins__")):
            self.contents[name] = _contents(value)
            self.tables.append((value, self.contents[name]))

    def unchanged(self) -> bool:
        """True when every recorded object is still where it was, with the same code, defaults and table
        contents, and no strict namespace gained or lost a name: then :func:`changes` has nothing to report.
        False means only "look closer" (:func:`changes` tells what changed, if anything did). It reads the live
        namespaces by identity, so it costs a few milliseconds where taking a snapshot costs several times that."""
        if sys.modules is not self.sys_modules or kernels() != self.kernels:
            return False
        for namespace, pairs, keys, skip, names in self.views:
            get = namespace.get
            if any(get(name, _MISSING) is not value for name, value in pairs):
                return False
            if keys is not None and namespace.keys() - skip != names and keys != frozenset(   # names: modules too
                    n for n in list(namespace) if n not in skip and type(namespace[n]) is not types.ModuleType):
                return False
        if any(f.__code__ is not code or f.__defaults__ is not defaults or f.__kwdefaults__ is not kwdefaults
               for f, code, defaults, kwdefaults in self.functions):
            return False
        return all(_same_contents(held, _contents(table)) for table, held in self.tables)


def take_snapshot() -> Snapshot:
    """Record the course package (everything), the exercise registry, and the parts of PyTorch and
    the standard library that checks rely on (functions, classes and modules)."""
    snap = Snapshot()
    modules = []   # (name, module): sys.modules's entries recorded, read again by Snapshot.unchanged
    course = [(n, m) for n, m in sorted(sys.modules.items()) if n == "course_utils" or n.startswith("course_utils.")]
    for name, module in course:
        snap.allow(name, module)
    for name, module in course:
        snap.add(f"sys.modules[{name!r}]", module)
        modules.append((name, module))
        snap.add_namespace(name, vars(module), strict=True, tables=True)
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == name:  # classes defined there
                snap.add_namespace(f"{name}.{attr}", vars(value), strict=True, tables=True)
    registry = exercises.registry()
    snap.keys["exercise registry"] = keys = frozenset(registry)
    snap.views.append((registry, sorted(registry.items()), keys, frozenset(), keys))   # the entries before their fields
    for ex_id, ex in sorted(registry.items()):
        snap.add(f"exercise {ex_id}", ex)
        fields = {field: getattr(ex, field) for field in ("grade", "reference", "points", "title", "hints")}
        for field, value in fields.items():
            snap.add(f"exercise {ex_id}.{field}", value)
        snap.views.append((_Fields(ex), list(fields.items()), None, frozenset(), frozenset()))
    for name in _WATCHED_MODULES:
        if name in sys.modules:
            snap.add(f"sys.modules[{name!r}]", sys.modules[name])
            modules.append((name, sys.modules[name]))
            snap.add_namespace(name, vars(sys.modules[name]), strict=False)
    for name, cls in _WATCHED_CLASSES.items():
        snap.add_namespace(name, vars(cls), strict=True)
    snap.views.append((sys.modules, modules, None, frozenset(), frozenset()))
    return snap


class _Fields:
    """An exercise's fields as a namespace for :meth:`Snapshot.unchanged` (``get`` reads the attribute)."""

    def __init__(self, exercise: Any) -> None:
        self.exercise = exercise

    def get(self, name: str, default: Any) -> Any:
        return getattr(self.exercise, name, default)


def changes(snap: Snapshot) -> list[str]:
    """Names of what changed since ``snap`` was taken (sorted; empty when nothing did); MemoryError when there was
    not enough memory to look (the grader's limit, not tampering)."""
    try:
        return [] if snap.unchanged() else compare(snap, take_snapshot())
    except MemoryError:
        raise
    except BaseException as e:  # e.g. a patched builtin that the snapshot itself uses
        return [f"Python's builtins or the grader itself (checking them failed with {type_name(e)})"]


#: Operators whose kernels the checks' comparisons and reads run on every device: one an answer registers anew (through
#: ``torch.library`` or below it) could make a wrong result compare equal, so it is tampering as a patched function is.
_WATCHED_OPERATORS = tuple(f"aten::{op}" for op in (
    "equal", "allclose", "isclose", "eq.Tensor", "eq.Scalar", "ne.Tensor", "ne.Scalar", "lt.Tensor", "le.Tensor",
    "gt.Tensor", "ge.Tensor", "all", "any", "_local_scalar_dense", "sub.Tensor", "abs", "isnan", "nan_to_num",
    "where.self", "masked_fill.Scalar", "_to_copy", "copy_", "clone", "sum", "max", "min", "sort", "argmax",
    "_copy_from", "empty_strided", "empty.memory_format", "cat", "stack"))


def kernels() -> tuple[str, ...]:
    """Every kernel PyTorch's dispatcher holds for :data:`_WATCHED_OPERATORS`, however it was registered (its dump
    names where each came from), in a few hundred microseconds."""
    return tuple(torch._C._dispatch_dump(op) for op in _WATCHED_OPERATORS)


def compare(snap: Snapshot, now: Snapshot) -> list[str]:
    """What :func:`changes` reports: the names of what differs between ``snap`` and ``now``, a later snapshot."""
    changed = {name for name, obj in snap.objects.items()
               if (new := now.objects.get(name, _MISSING)) is not obj and not _equivalent(obj, new)}
    changed.update(f"PyTorch's kernels of {op}" for op, old, new in zip(_WATCHED_OPERATORS, snap.kernels, now.kernels)
                   if old != new)
    changed.update(name for name, held in snap.contents.items() if not _same_contents(held, now.contents.get(name)))
    for prefix, keys in snap.keys.items():
        changed.update(f"{prefix}.{n}" if prefix != "exercise registry" else f"exercise {n}"
                       for n in now.keys.get(prefix, frozenset()) ^ keys)
    # "course_utils.check.__code__" is reported as "course_utils.check"; a replaced class or
    # registry entry is reported once, not with each of its attributes
    names = {n.rsplit(".", 1)[0] if n.endswith(("__code__", "__defaults__", "__kwdefaults__")) else n for n in changed}
    names = sorted(n for n in names if not any(n.startswith(other + ".") for other in names))
    if not names:
        return []
    # a module run again by importlib.reload has a new __spec__: what it remade differently is told as one
    modules = {n[:-len(".__spec__")]: now.objects.get(n) is not spec
               for n, spec in snap.objects.items() if n.endswith(".__spec__")}
    owners = {n: max((m for m in modules if n.startswith(m + ".")), key=len, default=None) for n in names}
    reloaded = sorted({m for m in owners.values() if m is not None and modules[m]})
    return ([f"{module}, run again by importlib.reload, which made new classes and objects that the checks do "
             "not know" for module in reloaded] + [n for n in names if owners[n] not in reloaded])


def _contents(table: Any, depth: int = 0, into: Optional[list] = None) -> list:
    """What a table (:data:`_TABLES`) holds, flat: its type, its items (dict keys and values; the
    tables inside it taken apart the same way, down to :data:`_TABLE_DEPTH`), then :data:`_END`. The
    items are kept alive, so that comparing them by identity is sound."""
    into = [] if into is None else into
    into.append(type(table))
    for item in (table.items() if type(table) is dict else table):
        for part in (item if type(table) is dict else (item,)):
            if type(part) in _TABLES and depth < _TABLE_DEPTH:
                _contents(part, depth + 1, into)
            else:
                into.append(part)
    into.append(_END)
    return into


def _same_contents(held: list, now: Optional[list]) -> bool:
    """Whether a table holds what it held (:func:`_contents`): the same items, or equivalent ones."""
    return now is not None and len(held) == len(now) and (
        all(map(operator.is_, held, now)) or all(map(_equivalent, held, now)))


def _equivalent(old: Any, new: Any, depth: int = 0) -> bool:
    """Whether ``new`` is ``old``, or a remake of it that does exactly the same, as ``importlib.reload``
    makes when it runs a course module again: plain values that are equal, tables that hold equivalent
    items, import records with equivalent attributes, and functions of the same module with equal code,
    defaults and attributes. Only exact types are compared, so no code of ``new``'s own runs."""
    if old is new:
        return True
    kind = type(old)
    if kind is not type(new) or depth > 2 * _TABLE_DEPTH:
        return False
    if kind in _VALUES:
        return old == new
    if kind in _TABLES:
        old_items, new_items = (old.items(), new.items()) if kind is dict else (old, new)
        return len(old) == len(new) and all(_equivalent(a, b, depth + 1) for a, b in zip(old_items, new_items))
    if kind in _RECORDS:
        return all(_equivalent(getattr(old, a), getattr(new, a), depth + 1) for a in _RECORDS[kind])
    if kind is types.CodeType:
        return old == new and old.co_filename == new.co_filename
    if kind is types.FunctionType:
        return (old.__globals__ is new.__globals__ and old.__closure__ is None and new.__closure__ is None
                and old.__qualname__ == new.__qualname__
                and all(_equivalent(getattr(old, a), getattr(new, a), depth + 1)
                        for a in ("__code__", "__defaults__", "__kwdefaults__", "__dict__")))
    return False


def verify(snap: Snapshot, free: Callable[[], Any]) -> list[str]:
    """:func:`changes` since ``snap``; when there is not enough memory to look, ``free()`` (what the last learner code
    left) and look again: GraderLimit when there is still not enough (its message says so, for the learner)."""
    try:
        return changes(snap)
    except MemoryError:
        pass
    try:
        free()
        gc.collect()
        return changes(snap)
    except MemoryError:
        raise GraderLimit("the grader ran out of memory while checking that course_utils and PyTorch were left "
                          "unchanged; free what you no longer need (del big tensors)") from None


def type_name(e: BaseException) -> str:
    """The name of ``e``'s class, read without running any of its code (a metaclass may lie)."""
    try:
        return type.__dict__["__name__"].__get__(type(e))
    except BaseException:  # pragma: no cover - type's own descriptor does not fail
        return "an exception"


# --- PyTorch's global state for checks ------------------------------------------------------------

def _deterministic() -> tuple[bool, bool]:
    return torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()


def _set_deterministic(value: tuple[bool, bool]) -> None:
    torch.use_deterministic_algorithms(value[0], warn_only=value[1])


#: (read, write) for each global setting a check must not inherit from the learner's code.
_SETTINGS: tuple[tuple[Callable[[], Any], Callable[[Any], Any]], ...] = (
    (torch.get_default_dtype, torch.set_default_dtype),
    (torch.is_grad_enabled, torch.set_grad_enabled),
    (torch.get_rng_state, torch.set_rng_state),
    (torch.get_num_threads, torch.set_num_threads),
    (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    (_deterministic, _set_deterministic),
    (torch.is_anomaly_enabled, torch.set_anomaly_enabled),
)


def torch_settings() -> list[Any]:
    """The current values of PyTorch's global settings (:data:`_SETTINGS`), to give to :func:`pristine_torch`."""
    return [read() for read, _ in _SETTINGS]


def _apply(values: list[Any]) -> None:
    for (_, write), value in zip(_SETTINGS, values):
        write(value)


@contextmanager
def _default_device_unset() -> Iterator[None]:
    """No default device (``torch.set_default_device`` never called) inside; the learner's after."""
    import torch.utils._device as device_module

    holder = getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None)
    context = getattr(holder, "device_context", _MISSING)
    current = getattr(device_module, "CURRENT_DEVICE", None)
    if context is not _MISSING:
        del holder.device_context
    device_module.CURRENT_DEVICE = None
    try:
        yield
    finally:
        if context is not _MISSING:
            holder.device_context = context
        elif hasattr(holder, "device_context"):  # pragma: no cover - the check restores its own
            del holder.device_context
        device_module.CURRENT_DEVICE = current


@contextmanager
def pristine_torch(start: list[Any]) -> Iterator[None]:
    """Inside: PyTorch's global state as it was when ``start`` was read (:func:`torch_settings`), with
    no default device, no torch function or dispatch mode active and inference mode off, whatever the
    learner's code left behind. After: the learner's state again, as the notebook would have it."""
    learner = torch_settings()
    # Every torch function mode off this thread's stack (top first), default device included; put back in the same
    # order after. (The torch._C functions here were bound when this module was imported, before any learner code.)
    modes = [_pop_torch_function_stack() for _ in range(_len_torch_function_stack())]
    try:
        with ExitStack() as stack:
            stack.enter_context(_default_device_unset())
            if _len_torch_dispatch_stack():
                from torch.utils._python_dispatch import _disable_current_modes

                stack.enter_context(_disable_current_modes())
            if torch.is_inference_mode_enabled():
                stack.enter_context(torch.inference_mode(False))
            _apply(start)
            try:
                yield
            finally:
                _apply(learner)
    finally:
        for mode in reversed(modes):
            _push_on_torch_function_stack(mode)
