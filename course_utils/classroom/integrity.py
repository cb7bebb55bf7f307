"""What keeps a graded check honest, inside the worker of ``python -m course_utils grade``.

Private to :mod:`course_utils.classroom.worker` (whose learner code it watches):

* :class:`Snapshot` / :func:`changes`: the course package, the exercise registry and the parts of
  PyTorch (``torch._C`` included) and the standard library that checks rely on must stay as they
  were, and so must what the course's own tables (dicts, lists, sets, tuples, defaults) hold. What
  PyTorch itself rebinds in normal use is not watched (``torch.Storage``, which
  ``torch.set_default_dtype`` rebinds), or is done before the snapshot (the ``nn.Module.__init__``
  patch of ``torch.compile``, see :func:`prepare_pytorch`). A course module run again by
  ``importlib.reload`` is no change where it remade what it had (equal values, functions with equal
  code, :func:`_equivalent`); where it made new classes, the change is named as a reload. After each cell and
  check :meth:`Snapshot.unchanged` looks first, by identity, at the live namespaces the snapshot recorded (a
  few milliseconds); only when something is not the same object does :func:`compare` take a new snapshot and
  name what changed.
* :func:`pristine_torch`: each check runs in PyTorch's global state as the worker started
  (default device and dtype, grad and inference mode, RNG, threads, matmul precision, deterministic
  algorithms, anomaly mode; no torch function or dispatch mode active), and the learner's state is
  put back afterwards, so later cells run as they would in the notebook.
* :class:`ReferenceGuard`: an answer must not be, or use, a course's reference solution. Detected
  by what the answer is and does, not by the words in it:

  - the answer object, or what it wraps (``functools.partial``, ``__wrapped__``, bound methods, a
    class's methods and bases), *is* a reference function or class, or has its code object;
  - the answer's code is a copy of a reference's code (same bytecode, constants and names) that was
    not compiled from the submission's answer cells: ``exec(cu.solution(...))``,
    ``exec(inspect.getsource(ref))`` (typing the solution into the answer cell is the learner's own
    code);
  - a reference function (or a reference class's method) is called, while the answer is checked,
    from anything but the course's own code: ``return cu.lessons.l01_tensors.nbytes(t)``, a lambda,
    a class whose ``__new__`` builds the reference's instance. Each reference function's
    ``__code__`` is swapped for a tripwire that looks at its caller, then runs the original;
  - code with a reference's fingerprint is run by an answer cell or while the answer is checked,
    under any name, from a string (``exec``), or made into a function (``types.FunctionType``,
    ``f.__code__ = ...``), all seen by an audit hook: ``exec(cu.solution(...))`` inside the answer's
    function, ``types.FunctionType(compile(cu.solution(...), ...).co_consts[0], {})``.

  Not detected: a reference's code rewritten (renamed variables, other constants) before use, and
  what the learner can do with the objects themselves (e.g. restoring a reference's original code
  object found with ``gc``): this is not a sandbox (see :mod:`course_utils.classroom`).

  The same audit hook notes learner code that takes a frame of the call stack (where the checker
  keeps its expected values), whatever name it used: ``sys._getframe``, ``sys._current_frames``, a
  traceback's ``tb_frame``, a generator's ``gi_frame``, ``gc.get_referrers``/``get_referents``/
  ``get_objects``, ``sys.settrace``/``setprofile``, and the ``inspect`` and ``traceback`` functions
  that call these for it (:meth:`ReferenceGuard.note_frame_access`). Not seen: frames that other
  code hands to the learner's (a signal handler's argument, a library's callback), and frames taken
  through ``ctypes``.
"""
from __future__ import annotations

import dis
import functools
import gc
import importlib.machinery
import inspect
import operator
import os
import sys
import sysconfig
import types
from contextlib import ExitStack, contextmanager, suppress
from typing import Any, Callable, Iterator, Optional

import torch
from torch._C import (_len_torch_dispatch_stack, _len_torch_function_stack, _pop_torch_function_stack,
                      _push_on_torch_function_stack)

from course_utils import exercises

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
    """What must not change while learner code runs: objects compared by identity (or, for what
    ``importlib.reload`` remakes, by what they are: :func:`_equivalent`), key sets, and the contents
    of the course's own tables."""

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
        self.rebound = dict(_UNWATCHED_NAMES)  # module -> the globals it rebinds (not watched)
        self.changing: dict[int, Any] = {}  # id -> a table whose contents are not watched (and its declaration)

    def allow(self, name: str, module: types.ModuleType) -> None:
        """Take in what course module ``name`` declares may change in normal use (before any module is recorded):
        ``REBOUND``, the globals it rebinds, and ``CHANGING``, its tables whose contents change (not their names)."""
        declared = vars(module)
        self.rebound[name] = frozenset(declared.get("REBOUND", ()))
        if "CHANGING" in declared:
            for table in (declared["CHANGING"], *declared["CHANGING"]):   # the declaration holds them too
                self.changing[id(table)] = table

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
        if sys.modules is not self.sys_modules:
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
    """Names of what changed since ``snap`` was taken (sorted; empty when nothing did).

    Raises:
        MemoryError: there was not enough memory to look (the grader's limit, not tampering).
    """
    try:
        if snap.unchanged():
            return []
        return compare(snap, take_snapshot())
    except MemoryError:
        raise
    except BaseException as e:  # e.g. a patched builtin that the snapshot itself uses
        return [f"Python's builtins or the grader itself (checking them failed with {type_name(e)})"]


def compare(snap: Snapshot, now: Snapshot) -> list[str]:
    """What :func:`changes` reports: the names of what differs between ``snap`` and ``now``, a later snapshot."""
    changed = {name for name, obj in snap.objects.items()
               if (new := now.objects.get(name, _MISSING)) is not obj and not _equivalent(obj, new)}
    changed.update(name for name, held in snap.contents.items() if not _same_contents(held, now.contents.get(name)))
    for prefix, keys in snap.keys.items():
        changed.update(f"{prefix}.{n}" if prefix != "exercise registry" else f"exercise {n}"
                       for n in now.keys.get(prefix, frozenset()) ^ keys)
    # "course_utils.check.__code__" is reported as "course_utils.check"; a replaced class or
    # registry entry is reported once, not with each of its attributes
    names = {n.rsplit(".", 1)[0] if n.endswith(("__code__", "__defaults__", "__kwdefaults__")) else n
             for n in changed}
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


class GraderLimit(Exception):
    """The grader itself could not go on (out of memory while verifying): not the learner's fault."""


def verify(snap: Snapshot, free: Callable[[], Any]) -> list[str]:
    """:func:`changes` since ``snap``; when there is not enough memory to look, ``free()`` (what the
    last learner code left) and look again.

    Raises:
        GraderLimit: still not enough memory (the message says so, for the learner).
    """
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
    """The current values of PyTorch's global settings (:data:`_SETTINGS`), to give to
    :func:`pristine_torch`."""
    return [read() for read, _ in _SETTINGS]


def _apply(values: list[Any]) -> None:
    for (_, write), value in zip(_SETTINGS, values):
        write(value)


def _pop_function_modes() -> list[Any]:
    """Take every torch function mode off this thread's stack (top first), default device included.
    (The ``torch._C`` functions here and in :func:`pristine_torch` were bound when this module was
    imported, before any learner code ran.)"""
    return [_pop_torch_function_stack() for _ in range(_len_torch_function_stack())]


def _push_function_modes(modes: list[Any]) -> None:
    """Put back what :func:`_pop_function_modes` took, in the same order."""
    for mode in reversed(modes):
        _push_on_torch_function_stack(mode)


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
    modes = _pop_function_modes()
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
        _push_function_modes(modes)


# --- reference solutions --------------------------------------------------------------------------

#: The code a reference function runs instead of its own (see :meth:`ReferenceGuard._trip`): it has
#: the reference's free variables (``__class__`` for ``super()``), reads no globals, and hands its frame
#: to :func:`_reference_called`.
_TRIPWIRE = '''
def _make({freevars}):
    def tripwire(*__course_args, **__course_kwargs):
        {uses}
        import sys as __course_sys
        return __course_sys.modules[{module!r}]._reference_called(
            __course_sys._getframe(), __course_args, __course_kwargs)
    return tripwire
'''
#: Where the standard library and installed packages live (a module loaded from there is a library's).
_LIBRARY_FOLDERS = tuple(sorted({os.path.join(resolve(sysconfig.get_path(kind)), "")
                                 for kind in ("stdlib", "platstdlib", "purelib", "platlib")
                                 for resolve in (os.path.abspath, os.path.realpath)}))
#: Objects looked at when taking an answer apart (a class has few methods; this bounds a hostile one).
_MAX_PARTS = 500
_GUARD: Optional["ReferenceGuard"] = None  # the installed guard (one per worker)
_HOOKED = False  # whether _audit is an audit hook of this process


#: Instructions that the same source compiles to, or not, depending on the module around it (Python
#: 3.11 calls ``torch.f(x)`` with ``LOAD_METHOD`` in a string, with ``LOAD_ATTR`` in a module that
#: imports ``torch``), or that only pad the bytecode.
_CONTEXT_OPS = frozenset({"NOP", "RESUME", "CACHE", "EXTENDED_ARG", "PUSH_NULL", "PRECALL"})
_SAME_OPS = {"LOAD_METHOD": "LOAD_ATTR"}
_JUMPS = frozenset(getattr(dis, "hasjump", ())) | frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


def _fingerprint(code: types.CodeType) -> tuple:
    """What a function's code does, wherever it was compiled: its instructions with their arguments
    (names, constants, nested code by its own fingerprint, jumps by position), and its arguments and
    local names. File, line numbers, flags and context-dependent instructions (:data:`_CONTEXT_OPS`)
    are left out, so that ``exec(cu.solution(...))`` gives the reference's fingerprint."""
    instructions = list(dis.get_instructions(code))
    kept = [ins for ins in instructions if ins.opname not in _CONTEXT_OPS]
    position, k = {}, len(kept)
    for ins in reversed(instructions):  # an instruction's offset -> the position of the next kept one
        if ins.opname not in _CONTEXT_OPS:
            k -= 1
        position[ins.offset] = k
    ops = []
    for ins in kept:
        if ins.opcode in _JUMPS:
            arg: Any = position.get(ins.argval, -1)
        elif isinstance(ins.argval, types.CodeType):
            arg = _fingerprint(ins.argval)
        else:
            arg = (type(ins.argval).__name__, repr(ins.argval))
        ops.append((_SAME_OPS.get(ins.opname, ins.opname), arg))
    return (tuple(ops), code.co_varnames, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount)


def _shape(code: types.CodeType) -> tuple:
    """A cheap first look before :func:`_fingerprint`: local names and argument count."""
    return code.co_varnames, code.co_argcount


def _nested_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and every code object compiled inside it (functions, classes, lambdas...)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _nested_codes(const)


def _reference_called(frame: types.FrameType, args: tuple, kwargs: dict) -> Any:
    """Run by a reference function's tripwire (``frame`` is the tripwire's): note who called it, then
    run the reference's original code."""
    guard = _GUARD
    original = guard.originals.get(frame.f_code) if guard is not None else None
    if original is None:  # pragma: no cover - a tripwire copied by learner code onto another function
        raise RuntimeError("this is a copy of a course reference solution, which answers cannot use")
    if guard.checking and guard.stage is not None and not guard.called_by_course(frame.f_back):
        guard.flagged.add(guard.stage)
    return original(*args, **kwargs)


#: Audit events that hand out frames of the call stack (or every object, with their frames).
_FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
                           "gc.get_referrers", "gc.get_referents", "gc.get_objects"})
#: Attributes that give a frame, audited as ``object.__getattr__`` (a traceback's, a generator's...).
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
#: Functions that read the stack for their caller: their caller is the one reading it.
_STACK_READERS = {"inspect": None, "traceback": frozenset({"walk_stack", "extract_stack", "format_stack",
                                                           "print_stack"}),
                  "logging": frozenset({"currentframe", "<lambda>"})}   # logging.currentframe (a lambda in 3.11)


def _audit(event: str, args: tuple) -> None:
    """Audit hook (``sys.addaudithook``), while learner code runs: code that is run by ``exec``, made
    into a function (``types.FunctionType``) or put into one (``f.__code__ = ...``) is looked at (see
    :meth:`ReferenceGuard.copies_reference`), and learner code that takes a frame of the call stack
    is noted (:meth:`ReferenceGuard.note_frame_access`). Never raises: that would fail the event."""
    guard = _GUARD
    if guard is None or guard.stage is None or guard.looking:
        return
    try:
        if event == "exec" or event == "function.__new__":
            code = args[0]
        elif event == "object.__setattr__" and len(args) == 3 and type(args[1]) is str and args[1] == "__code__":
            code = args[2]
        elif event in _FRAME_EVENTS or (event == "object.__getattr__" and len(args) == 2
                                        and type(args[1]) is str and args[1] in _FRAME_ATTRIBUTES):
            guard.note_frame_access(event if event != "object.__getattr__" else args[1])
            return
        else:
            return
        if guard.copies_reference(code):
            guard.flagged.add(guard.stage)
    except Exception:  # pragma: no cover - a code object and a frame are always readable
        pass


class ReferenceGuard:
    """Tells an answer that is, or uses, a course reference solution (see the module's docstring).

    Args:
        namespace: the namespace the answer cells run in (its frames are the learner's).
    """

    def __init__(self, namespace: dict) -> None:
        self.namespace = namespace
        self.originals: dict[types.CodeType, types.FunctionType] = {}  # tripwire code -> original function
        self.swapped: list[tuple[types.FunctionType, types.CodeType]] = []  # (reference function, its code)
        self.reference_ids: set[int] = set()   # reference functions and classes
        self.reference_classes: list[type] = []
        self.code_ids: set[int] = set()        # their code objects, original and tripwire
        self.fingerprints: set[tuple] = set()  # of their original code
        self.answer_codes: dict[int, types.CodeType] = {}  # compiled from answer cells (kept alive)
        self.keep: list[Any] = []              # objects whose ids are recorded, kept alive
        self.course: set[int] = set()          # ids of the course modules' globals
        self.libraries: set[int] = set()       # ids of other modules' globals, loaded before learner code
        self.library_packages: set[str] = set()
        self.shapes: set[tuple] = set()        # their _shape (a quick first test)
        self.stage: Optional[str] = None       # the exercise whose learner code runs (cell or check)
        self.checking = False                  # True while that exercise is being checked
        self.flagged: set[str] = set()         # exercises whose code used a reference
        self.frames_read: dict[str, str] = {}  # exercise -> what its code used to take a frame
        self.looking = False                   # True while the audit hook reads the stack itself

    # -- setting up

    def install(self) -> None:
        """Record every registered reference and put a tripwire in each of its functions; record which
        modules are the course's and which are libraries. Call before any learner code runs."""
        global _GUARD, _HOOKED
        ids = exercises.exercise_ids()  # imports every lesson module first: they are the course's
        for name, module in list(sys.modules.items()):
            if not issubclass(type(module), types.ModuleType):
                continue
            package = name.partition(".")[0]
            if package == "course_utils":
                self.course.add(id(vars(module)))
            elif name != "__main__":
                self.libraries.add(id(vars(module)))
                self.library_packages.add(package)
            self.keep.append(module)
        for ex_id in ids:
            reference = exercises.get_exercise(ex_id).reference
            self.reference_ids.add(id(reference))
            self.keep.append(reference)
            if isinstance(reference, type):  # its own methods, not those it inherits (nn.Module's)
                self.reference_classes.append(reference)
                members = [v.__func__ if type(v) in (staticmethod, classmethod) else v
                           for v in vars(reference).values()]
                functions = [f for f in members if type(f) is types.FunctionType]
            else:
                functions = [reference] if type(reference) is types.FunctionType else []
            for function in functions:
                self._trip(function)
        _GUARD = self
        if not _HOOKED:  # an audit hook cannot be removed: it does nothing while no guard is installed
            sys.addaudithook(_audit)
            _HOOKED = True

    def _trip(self, function: types.FunctionType) -> None:
        """Swap ``function``'s code for a tripwire that reports its caller, then runs the original."""
        code = function.__code__
        self.reference_ids.add(id(function))
        self.fingerprints.add(_fingerprint(code))
        self.shapes.add(_shape(code))
        self.code_ids.add(id(code))
        self.keep.extend((function, code))
        source = _TRIPWIRE.format(freevars=", ".join(code.co_freevars), module=__name__,
                                  uses=f"({', '.join(code.co_freevars)},)" if code.co_freevars else "pass")
        maker = compile(source, code.co_filename, "exec", dont_inherit=True)
        tripwire = next(c for c in _nested_codes(maker) if c.co_name == "tripwire")
        if tripwire.co_freevars != code.co_freevars:  # pragma: no cover - never seen; it stays unguarded
            return
        # Its name, file and first line are the reference's: inspect.getsource() still shows the reference.
        where = {"co_name": code.co_name, "co_filename": code.co_filename, "co_firstlineno": code.co_firstlineno}
        if hasattr(code, "co_qualname"):  # Python 3.11+
            where["co_qualname"] = code.co_qualname
        tripwire = tripwire.replace(**where)
        original = types.FunctionType(code, function.__globals__, function.__name__, function.__defaults__,
                                      function.__closure__)
        original.__kwdefaults__ = function.__kwdefaults__
        original.__qualname__ = function.__qualname__
        with suppress(TypeError, ValueError):  # the tripwire takes (*args, **kwargs): keep the real signature
            function.__signature__ = inspect.signature(function)
        function.__code__ = tripwire
        self.originals[tripwire] = original
        self.code_ids.add(id(tripwire))
        self.keep.append(tripwire)
        self.swapped.append((function, code))

    def remove(self) -> None:
        """Give every reference function its own code back (the worker never needs to; tests do)."""
        global _GUARD
        for function, code in self.swapped:
            function.__code__ = code
            vars(function).pop("__signature__", None)
        self.swapped.clear()
        if _GUARD is self:
            _GUARD = None

    def answer_code(self, code: types.CodeType) -> None:
        """Record a code object compiled from an answer cell (with everything compiled inside it):
        functions made from it are the learner's own code, even when they read like a reference."""
        for nested in _nested_codes(code):
            self.answer_codes[id(nested)] = nested

    # -- judging

    @contextmanager
    def running(self, ex_id: str, checking: bool) -> Iterator[None]:
        """Inside: learner code of exercise ``ex_id`` runs: its answer cell, or (``checking``) its check.
        What it does with the references is then noted in :attr:`flagged` (the checker's own calls of a
        reference do not count)."""
        self.stage, self.checking = ex_id, checking
        try:
            yield
        finally:
            self.stage, self.checking = None, False

    def copies_reference(self, code: Any) -> bool:
        """Whether ``code`` (run by ``exec``), or code compiled inside it, is a copy of a reference's
        code that was not compiled from an answer cell."""
        if type(code) is not types.CodeType or id(code) in self.answer_codes:
            return False
        return any(id(c) not in self.answer_codes and _shape(c) in self.shapes
                   and _fingerprint(c) in self.fingerprints for c in _nested_codes(code))

    def called_by_course(self, frame: Optional[types.FrameType]) -> bool:
        """Whether the code that called a reference (``frame``) is the course's: the first frame up
        the stack that is not a library's (PyTorch, the standard library...) belongs to a course
        module, not to the answer cells or to code they made."""
        while frame is not None:
            whose = self._whose(frame)
            if whose != "library":
                return whose == "course"
            frame = frame.f_back
        return True

    def _whose(self, frame: types.FrameType) -> str:
        """Whose code ``frame`` runs: ``"course"``, ``"library"`` or ``"learner"``."""
        scope = frame.f_globals
        if id(scope) in self.course:
            return "course"
        # code made from a string (exec, eval) is the learner's, whatever globals it was given
        if scope is self.namespace or frame.f_code.co_filename.startswith("<") or not self._library(scope):
            return "learner"
        return "library"

    def _library(self, scope: dict) -> bool:
        """Whether ``scope`` is the namespace of a library's module: one loaded before learner code, or
        loaded later (PyTorch loads some lazily; an answer may import a package) from a package loaded
        before or from the installation's library folders."""
        if id(scope) in self.libraries:
            return True
        name = dict.get(scope, "__name__")
        module = sys.modules.get(name) if type(name) is str else None
        if (module is None or not issubclass(type(module), types.ModuleType)
                or object.__getattribute__(module, "__dict__") is not scope):
            return False
        path = dict.get(scope, "__file__")
        return name.partition(".")[0] in self.library_packages or (type(path) is str
                                                                   and path.startswith(_LIBRARY_FOLDERS))

    def note_frame_access(self, what: str) -> None:
        """Called by the audit hook when code takes a frame of the call stack (``what``: the audit
        event, or the attribute read). When that code is the learner's own (:meth:`_whose`; the
        functions of ``inspect`` and ``traceback`` that read the stack for their caller count as their
        caller; a library's code that takes a frame for itself, such as ``namedtuple``, does not), note
        it for the exercise whose code runs, with the name of what it used."""
        self.looking = True  # sys._getframe and f_code below are audited too
        try:
            frame = sys._getframe(2)  # 0: here, 1: the audit hook, 2: the code that took a frame
            while frame is not None and self._reads_stack(frame):
                module = dict.get(frame.f_globals, "__name__")
                what = f"{module}.{'currentframe' if module == 'logging' else frame.f_code.co_name}"
                frame = frame.f_back
            if frame is not None and self._whose(frame) == "learner":
                self.frames_read.setdefault(self.stage, what)
        finally:
            self.looking = False

    @staticmethod
    def _reads_stack(frame: types.FrameType) -> bool:
        module = dict.get(frame.f_globals, "__name__")
        if type(module) is not str or module not in _STACK_READERS:
            return False
        names = _STACK_READERS[module]
        return names is None or frame.f_code.co_name in names

    def is_reference(self, answer: Any) -> bool:
        """Whether ``answer`` is a reference solution: the object itself or what it wraps, a subclass,
        a function with a reference's code, or a copy of that code not compiled from an answer cell."""
        try:
            for part in self._parts(answer):
                if id(part) in self.reference_ids:
                    return True
                if issubclass(type(part), type) and any(issubclass(part, cls) for cls in self.reference_classes):
                    return True
                if type(part) is types.FunctionType:
                    code = part.__code__
                    if id(code) in self.code_ids:
                        return True
                    if (id(code) not in self.answer_codes and _shape(code) in self.shapes
                            and _fingerprint(code) in self.fingerprints):
                        return True
        except BaseException:  # a hostile object: the check itself says what is wrong with it
            return False
        return False

    def _parts(self, answer: Any) -> list[Any]:
        """``answer`` and what it is made of: wrapped functions (``functools.partial``,
        ``__wrapped__``, methods), and for a class (or a callable instance's class) its bases and the
        functions in them, libraries' classes left out. Read without running the learner's code."""
        parts: list[Any] = []
        todo, seen = [answer], set()
        while todo and len(parts) < _MAX_PARTS:
            obj = todo.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            parts.append(obj)
            kind = type(obj)
            if kind is types.FunctionType:
                wrapped = vars(obj).get("__wrapped__")
                if wrapped is not None:
                    todo.append(wrapped)
            elif issubclass(kind, functools.partial):
                todo.append(functools.partial.__dict__["func"].__get__(obj))
            elif kind in (types.MethodType, staticmethod, classmethod):
                todo.append(obj.__func__)
            elif kind is property:
                todo.extend(f for f in (obj.fget, obj.fset, obj.fdel) if f is not None)
            elif issubclass(kind, type):
                for cls in type.__dict__["__mro__"].__get__(obj):
                    module = type.__dict__["__module__"].__get__(cls)
                    if type(module) is str and (module.partition(".")[0] in self.library_packages
                                                or module == "builtins"):
                        continue
                    todo.append(cls)
                    todo.extend(v for v in type.__dict__["__dict__"].__get__(cls).values()
                                 if type(v) in (types.FunctionType, staticmethod, classmethod, property)
                                 or issubclass(type(v), functools.partial))
            elif kind not in (types.BuiltinFunctionType, types.ModuleType):
                todo.append(kind)  # a callable instance: its class's methods
        return parts
