"""What keeps a graded check honest, inside the worker of ``python -m course_utils grade``.

Private to :mod:`course_utils.classroom.worker` (whose learner code it watches):

* :class:`Snapshot` / :func:`changes`: the course package, the exercise registry and the parts of
  PyTorch and the standard library that checks rely on must stay as they were. What PyTorch itself
  rebinds in normal use is not watched (``torch.Storage``, which ``torch.set_default_dtype`` rebinds),
  or is done before the snapshot (the ``nn.Module.__init__`` patch of ``torch.compile``, see
  :func:`prepare_pytorch`).
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
  - code with a reference's fingerprint is run from a string (``exec``, seen by an audit hook) by an
    answer cell or while the answer is checked, under any name: ``exec(cu.solution(...))`` inside the
    answer's function, or renamed to a helper.

  Not detected: a reference's code rewritten (renamed variables, other constants) before use, and
  what the learner can do with the objects themselves (e.g. restoring a reference's original code
  object found with ``gc``): this is not a sandbox (see :mod:`course_utils.classroom`).
"""
from __future__ import annotations

import dis
import functools
import gc
import inspect
import sys
import types
from contextlib import ExitStack, contextmanager, suppress
from typing import Any, Callable, Iterator, Optional

import torch

from course_utils import exercises

#: Module globals that course code itself rebinds when a learner legitimately calls it, and
#: attributes PyTorch rebinds in normal use (``torch.set_default_dtype`` sets ``torch.Storage``).
_UNWATCHED = frozenset({"course_utils.mismatch._REGISTERED", "torch.Storage"})
#: Caches Python itself adds to modules and classes (warnings, pickling).
_CACHES = frozenset({"__warningregistry__", "__slotnames__"})
#: Modules whose functions, classes and submodules must not change (data attributes may): what the
#: checks and this grader call.
_WATCHED_MODULES = ("builtins", "torch", "torch.nn", "torch.nn.functional", "torch.accelerator",
                    "torch.cuda", "torch.testing", "torch.overrides", "torch.utils._python_dispatch",
                    "torch.utils._pytree", "torch.utils._device", "inspect", "contextlib", "io", "reprlib",
                    "signal", "json", "json.encoder", "hmac", "hashlib", "os", "math", "numbers",
                    "functools", "itertools", "operator", "types", "re", "string", "textwrap", "tokenize",
                    "time", "timeit", "statistics", "dataclasses", "traceback")
#: Classes whose attributes must not change, be added or be removed.
_WATCHED_CLASSES = {"torch.Tensor": torch.Tensor, "torch._C.TensorBase": torch._C.TensorBase,
                    "torch.nn.Module": torch.nn.Module, "torch.nn.Parameter": torch.nn.Parameter}
_MISSING = object()


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
    """What must not change while learner code runs: objects compared by identity, and key sets."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}   # dotted name -> the object (kept alive: ids never reused)
        self.keys: dict[str, frozenset] = {}  # namespaces where additions count as changes too

    def add_namespace(self, prefix: str, namespace: dict, *, strict: bool) -> None:
        """Record ``namespace`` (a module's or class's ``__dict__``); ``strict`` records data too."""
        names = [n for n in namespace if n not in _CACHES and f"{prefix}.{n}" not in _UNWATCHED]
        if strict:  # a submodule imported later appears in its package: not a change
            self.keys[prefix] = frozenset(n for n in names if type(namespace[n]) is not types.ModuleType)
        for name in names:
            value = namespace[name]
            if strict or callable(value) or issubclass(type(value), types.ModuleType):
                self.add(f"{prefix}.{name}", value)

    def add(self, name: str, value: Any) -> None:
        """Record one object and, for a Python function, its code and defaults."""
        self.objects[name] = value
        if type(value) is types.FunctionType:
            self.objects[f"{name}.__code__"] = value.__code__
            self.objects[f"{name}.__defaults__"] = value.__defaults__
            self.objects[f"{name}.__kwdefaults__"] = value.__kwdefaults__


def take_snapshot() -> Snapshot:
    """Record the course package (everything), the exercise registry, and the parts of PyTorch and
    the standard library that checks rely on (functions, classes and modules)."""
    snap = Snapshot()
    for name, module in sorted(sys.modules.items()):
        if name != "course_utils" and not name.startswith("course_utils."):
            continue
        snap.add(f"sys.modules[{name!r}]", module)
        snap.add_namespace(name, vars(module), strict=True)
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and value.__module__ == name:  # classes defined there
                snap.add_namespace(f"{name}.{attr}", dict(vars(value)), strict=True)
    for ex_id, ex in sorted(exercises._REGISTRY.items()):
        snap.add(f"exercise {ex_id}", ex)
        for field in ("grade", "reference", "points", "title", "hints"):
            snap.add(f"exercise {ex_id}.{field}", getattr(ex, field))
    snap.keys["exercise registry"] = frozenset(exercises._REGISTRY)
    for name in _WATCHED_MODULES:
        if name in sys.modules:
            snap.add(f"sys.modules[{name!r}]", sys.modules[name])
            snap.add_namespace(name, vars(sys.modules[name]), strict=False)
    for name, cls in _WATCHED_CLASSES.items():
        snap.add_namespace(name, dict(vars(cls)), strict=True)
    return snap


def changes(snap: Snapshot) -> list[str]:
    """Names of what changed since ``snap`` was taken (sorted; empty when nothing did).

    Raises:
        MemoryError: there was not enough memory to look (the grader's limit, not tampering).
    """
    try:
        now = take_snapshot()
    except MemoryError:
        raise
    except BaseException as e:  # e.g. a patched builtin that the snapshot itself uses
        return [f"Python's builtins or the grader itself (checking them failed with {type_name(e)})"]
    changed = {name for name, obj in snap.objects.items() if now.objects.get(name, _MISSING) is not obj}
    for prefix, keys in snap.keys.items():
        changed.update(f"{prefix}.{n}" if prefix != "exercise registry" else f"exercise {n}"
                       for n in now.keys.get(prefix, frozenset()) ^ keys)
    # "course_utils.check.__code__" is reported as "course_utils.check"; a replaced class or
    # registry entry is reported once, not with each of its attributes
    names = {n.rsplit(".", 1)[0] if n.endswith(("__code__", "__defaults__", "__kwdefaults__")) else n
             for n in changed}
    return sorted(n for n in names if not any(n.startswith(other + ".") for other in names))


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
    """Take every torch function mode off this thread's stack (top first), default device included."""
    from torch.overrides import _pop_mode

    return [_pop_mode() for _ in range(torch._C._len_torch_function_stack())]


def _push_function_modes(modes: list[Any]) -> None:
    """Put back what :func:`_pop_function_modes` took, in the same order."""
    from torch.overrides import _push_mode

    for mode in reversed(modes):
        _push_mode(mode)


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
            if torch._C._len_torch_dispatch_stack():
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


def _audit(event: str, args: tuple) -> None:
    """Audit hook (``sys.addaudithook``): code run by ``exec`` while learner code runs is looked at
    (see :meth:`ReferenceGuard.copies_reference`). Never raises: that would fail the ``exec``."""
    if event != "exec":
        return
    guard = _GUARD
    try:
        if guard is not None and guard.stage is not None and args and guard.copies_reference(args[0]):
            guard.flagged.add(guard.stage)
    except Exception:  # pragma: no cover - a code object is always readable
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

    # -- setting up

    def install(self) -> None:
        """Record every registered reference and put a tripwire in each of its functions; record which
        modules are the course's and which are libraries. Call before any learner code runs."""
        global _GUARD, _HOOKED
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
        for ex_id in exercises.exercise_ids():
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
            scope = frame.f_globals
            if id(scope) in self.course:
                return True
            # code made from a string (exec, eval) is the learner's, whatever globals it was given
            if scope is self.namespace or frame.f_code.co_filename.startswith("<") or not self._library(scope):
                return False
            frame = frame.f_back
        return True

    def _library(self, scope: dict) -> bool:
        if id(scope) in self.libraries:
            return True
        name = scope.get("__name__")  # a module a library loaded later (PyTorch loads some lazily)
        module = sys.modules.get(name) if type(name) is str else None
        return (module is not None and issubclass(type(module), types.ModuleType)
                and name.partition(".")[0] in self.library_packages
                and object.__getattribute__(module, "__dict__") is scope)

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
