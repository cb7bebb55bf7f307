"""Worker side of ``python -m course_utils grade``: a fork server, and one child per submission.

Private to :mod:`course_utils.grade`, whose docstring describes the design and the threat model.
Importing this module imports PyTorch, every course module and the modules PyTorch would otherwise
import lazily during the first checks (3-5 s per process). :func:`serve` then forks a fresh child
per run from that pristine state; a child never comes from another submission's process.

Per run, the grader passes three pipes: the job (read by the child), the channel (the child's
signed messages, one JSON line each) and the status (the server writes ``pid N``, then
``exit N`` or ``signal N`` once it has reaped the child). The learner's prints go to ``/dev/null``.
"""
from __future__ import annotations

import builtins
import importlib
import json
import math
import os
import pkgutil
import resource
import select
import signal
import socket
import sys
import tempfile
import types
import warnings
from typing import Any, Callable

# Ask PyTorch to probe CUDA through NVML, which does not initialise CUDA in the fork server
# (a CUDA context does not survive a fork).
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import course_utils  # noqa: E402
from course_utils import exercises  # noqa: E402
from course_utils.grade import sign, strip_magics  # noqa: E402
from course_utils.grading import TimeLimit, safe_repr  # noqa: E402
from course_utils.results import FAILED  # noqa: E402

try:  # learners may use numpy in an answer; it is optional for the course
    import numpy  # noqa: E402
except ImportError:  # pragma: no cover - numpy ships with torch wheels
    numpy = None

exercises.exercise_ids()  # register every lesson's exercises once, in the fork server
for _module in pkgutil.walk_packages(course_utils.__path__, "course_utils."):
    if not _module.name.endswith("__main__"):  # every course module, so all of them are snapshotted
        importlib.import_module(_module.name)
for _lazy in ("torch._dynamo", "torch.fx.experimental.symbolic_shapes"):
    # Checks on `meta` tensors import these (sympy, dynamo...) on first use: 3-5 s per submission.
    try:
        __import__(_lazy)
    except Exception:  # pragma: no cover - only a speed-up
        pass

#: Module globals that course code itself rebinds when a learner legitimately calls it.
_MUTABLE_STATE = frozenset({"course_utils.mismatch._REGISTERED"})
#: Caches Python itself adds to modules and classes (warnings, pickling).
_CACHES = frozenset({"__warningregistry__", "__slotnames__"})
#: Modules whose functions, classes and submodules must not change (data attributes may).
_WATCHED_MODULES = ("builtins", "torch", "torch.nn", "torch.nn.functional", "torch.accelerator",
                    "torch.cuda", "torch.testing", "inspect", "contextlib", "io", "reprlib", "signal",
                    "json", "json.encoder", "hmac", "hashlib", "os")
#: Classes whose attributes must not change, be added or be removed.
_WATCHED_CLASSES = {"torch.Tensor": torch.Tensor, "torch._C.TensorBase": torch._C.TensorBase,
                    "torch.nn.Module": nn.Module, "torch.nn.Parameter": nn.Parameter}
_MISSING = object()


class Snapshot:
    """What must not change while learner code runs: objects compared by identity, and key sets."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}   # dotted name -> the object (kept alive: ids never reused)
        self.keys: dict[str, frozenset] = {}  # namespaces where additions count as changes too

    def add_namespace(self, prefix: str, namespace: dict, *, strict: bool) -> None:
        """Record ``namespace`` (a module's or class's ``__dict__``); ``strict`` records data too."""
        names = [n for n in namespace if n not in _CACHES and f"{prefix}.{n}" not in _MUTABLE_STATE]
        if strict:  # a submodule imported later appears in its package: not a change
            self.keys[prefix] = frozenset(n for n in names if type(namespace[n]) is not types.ModuleType)
        for name in names:
            value = namespace[name]
            if strict or callable(value) or isinstance(value, types.ModuleType):
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
    """Names of what changed since ``snap`` was taken (sorted; empty when nothing did)."""
    try:
        now = take_snapshot()
    except BaseException as e:  # e.g. a patched builtin that the snapshot itself uses
        return [f"Python's builtins or the grader itself (checking them failed with {type(e).__name__})"]
    changed = {name for name, obj in snap.objects.items() if now.objects.get(name, _MISSING) is not obj}
    for prefix, keys in snap.keys.items():
        changed.update(f"{prefix}.{n}" if prefix != "exercise registry" else f"exercise {n}"
                       for n in now.keys.get(prefix, frozenset()) ^ keys)
    # "course_utils.check.__code__" is reported as "course_utils.check"; a replaced class or
    # registry entry is reported once, not with each of its attributes
    names = {n.rsplit(".", 1)[0] if n.endswith(("__code__", "__defaults__", "__kwdefaults__")) else n
             for n in changed}
    return sorted(n for n in names if not any(n.startswith(other + ".") for other in names))


def _compile(source: str, filename: str) -> types.CodeType:
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError:
        try:
            return compile(strip_magics(source), filename, "exec", dont_inherit=True)
        except SyntaxError:
            pass
        raise


def _is_memory_error(e: BaseException) -> bool:
    text = _text(e).lower()
    return isinstance(e, MemoryError) or (isinstance(e, RuntimeError) and (
        "can't allocate memory" in text or "out of memory" in text or "not enough memory" in text))


def _text(e: BaseException) -> str:
    try:
        return str(e)
    except BaseException:  # a hostile __str__
        return ""


def _line(e: BaseException, filename: str) -> str:
    """`` on line N`` of the answer cell where ``e`` was raised, or ``""``."""
    if isinstance(e, SyntaxError) and e.filename == filename and e.lineno:
        return f" on line {e.lineno}"
    tb, line = e.__traceback__, 0
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" on line {line}" if line else ""


def run_cell(source: str, filename: str, namespace: dict, seconds: float, memory_mb: int) -> dict | None:
    """Execute one answer cell in ``namespace`` within ``seconds``.

    Returns:
        ``None`` if it ran to the end, else ``{"kind": ..., "message": ...}`` with ``kind`` one of
        ``"syntax"``, ``"exception"`` (the cell's function may still be checked), ``"timeout"`` or
        ``"memory"`` (the exercise scores 0).
    """
    try:
        code = _compile(source, filename)
    except SyntaxError as e:
        return {"kind": "syntax", "message": f"Your answer cell has a syntax error{_line(e, filename)}: "
                                             f"{safe_repr(e.msg, 200)}."}
    before = set(namespace)
    try:
        with exercises._time_limit(seconds):
            exec(code, namespace)
    except TimeLimit:
        return {"kind": "timeout", "message": f"Your answer cell did not finish within {seconds:g} s and was "
                                              "stopped. Look for a loop that never ends outside your function."}
    except BaseException as e:  # anything the learner's code raises, SystemExit included
        if _is_memory_error(e):
            for name in set(namespace) - before:  # drop what the cell built, to get the memory back
                del namespace[name]
            return {"kind": "memory", "message": f"Your answer cell ran out of memory (the limit is "
                                                 f"{memory_mb} MB) and was stopped."}
        message = "called sys.exit()" if isinstance(e, SystemExit) else \
            f"raised {type(e).__name__}{_line(e, filename)}: {safe_repr(_text(e), 200)}"
        return {"kind": "exception", "message": f"Your answer cell {message}."}
    return None


def _is_reference(answer: Any, reference: Callable) -> bool:
    """True when ``answer`` is the course's reference solution itself, not the learner's code."""
    if answer is reference:
        return True
    if isinstance(reference, type):
        return isinstance(answer, type) and issubclass(answer, reference)
    return getattr(answer, "__code__", None) is getattr(reference, "__code__", _MISSING)


def check_answer(ex_id: str, namespace: dict, cell_error: dict | None) -> dict:
    """Check what the answer cells defined for ``ex_id``; returns ``{"status", "feedback"}``."""
    ex = exercises.get_exercise(ex_id)
    if cell_error and cell_error["kind"] in ("timeout", "memory"):
        return {"status": FAILED, "feedback": cell_error["message"]}
    answer = namespace.get(ex.name, _MISSING)
    if answer is _MISSING:
        prefix = cell_error["message"] + " " if cell_error else "Your answer cell does not define "
        return {"status": FAILED, "feedback": prefix + (f"`{ex.name}` is not defined." if cell_error
                                                        else f"`{ex.name}`.")}
    if _is_reference(answer, ex.reference):
        return {"status": FAILED, "feedback": f"`{ex.name}` is the course's reference solution, imported from "
                                              "course_utils, not your own code."}
    result = exercises.check(ex_id, answer)
    feedback = result.feedback
    if cell_error:
        feedback += f" (Note: {cell_error['message'][0].lower()}{cell_error['message'][1:]})"
    return {"status": result.status, "feedback": feedback}


def _isolate(memory_mb: int) -> None:
    """Own process group (the grader kills it whole), memory limit, learner output to /dev/null."""
    os.setsid()
    # RLIMIT_DATA, not RLIMIT_AS: it caps what the process can actually allocate (heap and private
    # mappings) but not reserved address space, which CUDA reserves by the tens of GB. The limit is
    # counted on top of what PyTorch already holds, which differs by build (CUDA builds hold more).
    limit, hard = _data_in_use() + (memory_mb << 20), resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    # A learner's cu.exercise()/cu.quiz() must not write the grader's own progress file.
    os.environ["COURSE_PROGRESS_FILE"] = os.path.join(tempfile.mkdtemp(prefix="course-grade-"), "progress.json")
    torch.set_num_threads(1)  # the same arithmetic whatever --jobs is: deterministic grades


def _data_in_use() -> int:
    """Bytes this process already counts against ``RLIMIT_DATA`` (``VmData``; 0 without ``/proc``)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _namespace() -> dict:
    """What a notebook's setup cell provides, for the answer cells to run in."""
    try:
        device = course_utils.best_device()
    except Exception:
        device = torch.device("cpu")
    namespace = {"__name__": "__main__", "__builtins__": builtins, "torch": torch, "nn": nn, "F": F,
                 "cu": course_utils, "course_utils": course_utils, "math": math, "device": device,
                 "display": lambda *args, **kwargs: None}
    if numpy is not None:
        namespace["np"] = numpy
    return namespace


def main(channel: int, key: bytes, job: dict) -> None:
    """Grade one submission's answer cells; the process ends here.

    Args:
        channel: file descriptor of the pipe to the grader.
        key: the HMAC key for this run.
        job: ``cells`` (``[index, exercise id, source]`` in notebook order), ``check`` (exercise ids),
            ``cell_timeout``, ``check_timeout`` (seconds) and ``memory_mb``.

    Messages, in order: ``ready``; per cell ``stage`` then ``cell``; per exercise ``stage`` then
    ``result``; ``done``. ``tampered`` (with what changed) ends the run early, as does ``error``.
    """
    write = os.write  # local references: learner code cannot rebind these (rebinding globals is detected)

    def send(data: bytes) -> None:
        data += b"\n"
        while data:
            data = data[write(channel, data):]

    verify, signed, killpg = changes, sign, os.killpg
    try:
        _isolate(job["memory_mb"])
        exercises.TIME_LIMIT = job["check_timeout"]
        namespace = _namespace()
        snap = take_snapshot()
        send(signed(key, {"t": "ready"}))
        cell_errors: dict[str, dict] = {}
        for index, ex_id, source in job["cells"]:
            send(signed(key, {"t": "stage", "stage": "cell", "index": index, "exercise": ex_id}))
            error = run_cell(source, f"<answer cell {ex_id}>", namespace, job["cell_timeout"], job["memory_mb"])
            changed = verify(snap)
            if changed:
                send(signed(key, {"t": "tampered", "changed": changed}))
                os._exit(0)
            if error and ex_id not in cell_errors:
                cell_errors[ex_id] = error
            send(signed(key, {"t": "cell", "index": index, "exercise": ex_id, "error": error}))
        for ex_id in job["check"]:
            send(signed(key, {"t": "stage", "stage": "check", "exercise": ex_id}))
            outcome = check_answer(ex_id, namespace, cell_errors.get(ex_id))
            changed = verify(snap)  # before sending: a check run under patched code proves nothing
            if changed:
                send(signed(key, {"t": "tampered", "changed": changed}))
                os._exit(0)
            send(signed(key, {"t": "result", "exercise": ex_id, **outcome}))
        send(signed(key, {"t": "done"}))
        killpg(0, signal.SIGKILL)  # end with whatever the learner's code started (own group, see _isolate)
    except BaseException as e:  # a bug here, not in the learner's code (that is caught above)
        try:
            send(signed(key, {"t": "error", "message": f"{type(e).__name__}: {safe_repr(_text(e), 200)}"}))
        except BaseException:
            pass
        os._exit(3)
    os._exit(0)  # skip interpreter shutdown: the learner's threads and atexit hooks do not run


def _child(job_fd: int, channel_fd: int) -> None:
    """In the forked child: read the job (with its key), then grade it. Never returns."""
    try:
        with os.fdopen(job_fd, "rb") as f:
            job = json.loads(f.read())
        key = bytes.fromhex(job.pop("key"))
    except BaseException:
        os._exit(4)
    main(channel_fd, key, job)


def serve(control_fd: int) -> None:
    """Fork server loop: for each request on the control socket (1 byte carrying the job, channel
    and status pipes), fork a child that grades it; report each child's pid and end on its status
    pipe. Returns, killing any child still running, when the grader closes the socket."""
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle; it then closes the socket
    warnings.filterwarnings("ignore", message=".*fork", category=DeprecationWarning)  # torch's idle thread
    children: dict[int, int] = {}  # pid -> status fd
    try:
        while True:
            readable, _, _ = select.select([control], [], [], 0.05 if children else None)
            _reap(children)
            if not readable:
                continue
            message, fds, _, _ = socket.recv_fds(control, 1, 3)
            if not message:
                return
            if len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                continue
            job_fd, channel_fd, status_fd = fds
            pid = os.fork()
            if pid == 0:
                control.close()
                for fd in [status_fd, *children.values()]:
                    os.close(fd)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                _child(job_fd, channel_fd)
            os.close(job_fd)
            os.close(channel_fd)
            _write_status(status_fd, f"pid {pid}")
            children[pid] = status_fd
    finally:
        for pid in children:
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def _reap(children: dict[int, int]) -> None:
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            end = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"exit {os.WEXITSTATUS(status)}")
            _write_status(children.pop(pid), end, close=True)


def _write_status(fd: int, line: str, close: bool = False) -> None:
    try:
        os.write(fd, line.encode() + b"\n")
    except OSError:  # the grader stopped listening
        pass
    if close:
        os.close(fd)
