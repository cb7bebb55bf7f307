"""The reference guard of ``python -m course_utils grade``'s worker (:class:`ReferenceGuard`).

Private to :mod:`.worker`, beside :mod:`.integrity` (what learner code must not change). An answer must not be, or use,
a course's reference solution. Detected by what the answer is and does, not by the words in it:

- the answer object, or what it wraps (``functools.partial``, ``__wrapped__``, bound methods, a class's methods and
  bases), *is* a reference function or class, or has its code object;
- the answer's code is a copy of a reference's code (same bytecode, constants and names) that was not compiled from the
  submission's answer cells: ``exec(cu.solution(...))``, ``exec(inspect.getsource(ref))`` (typing the solution into the
  answer cell is the learner's own code);
- a reference function (or a reference class's method) is called, while the answer is checked, from anything but the
  course's own code: ``return cu.lessons.l01_tensors.nbytes(t)``, a lambda, a class whose ``__new__`` builds the
  reference's instance. Each reference function's ``__code__`` is swapped for a tripwire that looks at its caller, then
  runs the original;
- code with a reference's fingerprint is run by an answer cell or while the answer is checked, under any name, from a
  string (``exec``), or made into a function (``types.FunctionType``, ``f.__code__ = ...``), all seen by an audit hook:
  ``exec(cu.solution(...))`` inside the answer's function,
  ``types.FunctionType(compile(cu.solution(...), ...).co_consts[0], {})``.

Not detected: a reference's code rewritten (renamed variables, other constants) before use, and what the learner can do
with the objects themselves (e.g. restoring a reference's original code object found with ``gc``): this is not a sandbox
(see :mod:`course_utils.classroom`).

The same audit hook notes learner code that takes a frame of the call stack (where the checker keeps its expected
values), whatever name it used: ``sys._getframe``, ``sys._current_frames``, a traceback's ``tb_frame``, a generator's
``gi_frame``, ``gc.get_referrers``/``get_referents``/``get_objects``, ``sys.settrace``/``setprofile``, and the
``inspect`` and ``traceback`` functions that call these for it (:meth:`ReferenceGuard.note_frame_access`). Not seen:
frames that other code hands to the learner's (a signal handler's argument, a library's callback), and frames taken
through ``ctypes``."""
from __future__ import annotations

import dis
import functools
import inspect
import os
import sys
import sysconfig
import types
from contextlib import contextmanager, suppress
from typing import Any, Iterator, Optional

from course_utils import exercises

#: The code a reference function runs instead of its own (see :meth:`ReferenceGuard._trip`): it has the reference's free
#: variables (``__class__`` for ``super()``), reads no globals, and hands its frame to :func:`_reference_called`.
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
    """Tells an answer that is, or uses, a course reference solution (see the module's docstring); ``namespace`` is
    the namespace the answer cells run in (its frames are the learner's)."""

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
        """Inside: learner code of exercise ``ex_id`` runs: its answer cell, or (``checking``) its check. What it does
        with the references is then noted in :attr:`flagged` (the checker's own calls of a reference do not count)."""
        self.stage, self.checking = ex_id, checking
        try:
            yield
        finally:
            self.stage, self.checking = None, False

    def copies_reference(self, code: Any) -> bool:
        """Whether ``code`` (run by ``exec``), or code compiled inside it, is a copy of a reference's
        code that was not compiled from an answer cell."""
        return (type(code) is types.CodeType and id(code) not in self.answer_codes
                and any(self._copy(c) for c in _nested_codes(code)))

    def _copy(self, code: types.CodeType) -> bool:
        """Whether ``code`` itself has a reference's fingerprint and was not compiled from an answer cell."""
        return (id(code) not in self.answer_codes and _shape(code) in self.shapes
                and _fingerprint(code) in self.fingerprints)

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
                if type(part) is types.FunctionType and (id(part.__code__) in self.code_ids
                                                         or self._copy(part.__code__)):
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
