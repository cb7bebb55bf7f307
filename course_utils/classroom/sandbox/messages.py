"""The channel between a grading worker and the grader (one signed JSON message per line: each run
has its own HMAC key, so a line the learner's code writes into the pipe is ignored), the job a worker
is given, the names of what the channel carries and of how a run ends, and the feedback text made from them.

A run's messages, in order (one class each, its :class:`Kind` the ``t`` of its JSON): :class:`ReadyMessage`;
per cell a :class:`StageMessage` (:attr:`Stage.CELL`) then a :class:`CellMessage`; after an exercise's last
cell a :class:`StageMessage` (:attr:`Stage.CHECK`) then a :class:`ResultMessage`; :class:`DoneMessage`.
A :class:`TamperedMessage` (what changed) ends a run early, as does an :class:`ErrorMessage`."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Optional, Sequence, Union


#: The worker's exit status after it found tampering: the grader reads it even when the report
#: itself could not arrive (learner code pointed the channel elsewhere).
TAMPERED_EXIT = 86


class Kind(str, Enum):
    """What a worker message is: its ``t``."""

    READY = "ready"        # learner code is about to run
    STAGE = "stage"        # a cell or a check starts
    CELL = "cell"          # a cell ended
    RESULT = "result"      # an exercise's check ended
    TAMPERED = "tampered"  # what the checks rely on changed: the run ends
    ERROR = "error"        # the grader itself failed: the run ends
    DONE = "done"          # every cell ran and every exercise was checked


class Stage(str, Enum):
    """What a ``stage`` message starts."""

    CELL = "cell"
    CHECK = "check"


class CellError(str, Enum):
    """How an answer cell failed (the ``kind`` of a ``cell`` message's ``error``)."""

    SYNTAX = "syntax"
    EXCEPTION = "exception"  # its function may still be checked
    TIMEOUT = "timeout"      # the exercise scores 0, and later runs leave the cell out
    MEMORY = "memory"        # likewise


#: Cell errors after which the cell's exercise is not checked, and later runs leave the cell out.
FATAL_CELL_ERRORS = (CellError.TIMEOUT, CellError.MEMORY)


class End(str, Enum):
    """How a worker run ended."""

    DONE = "done"            # as the worker reported (:attr:`Kind.DONE`)
    TAMPERED = "tampered"    # as the worker reported, or as its exit status says (:data:`TAMPERED_EXIT`)
    ERROR = "error"          # as the worker reported
    TIMEOUT = "timeout"      # killed: the submission's time was up
    STUCK = "stuck"          # killed: a cell or check ran well past its own limit
    MEMORY = "memory"        # killed: its processes together held too much memory
    PROCESSES = "processes"  # killed: it had too many processes
    EXIT = "exit"            # it ended by itself without a last report


def frame(message: bytes) -> bytes:
    """A signed message as it goes down the channel: on a line of its own, even after bytes that
    learner code wrote into the pipe without a line end."""
    return b"\n" + message + b"\n"


@dataclass(frozen=True)
class CellFailure:
    """How an answer cell failed: the ``error`` of a :class:`CellMessage`."""

    kind: CellError
    message: str


@dataclass(frozen=True)
class ReadyMessage:
    """Learner code is about to run, in the worker ``pid`` (sent before any of it runs, so the grader can measure
    the worker's memory then, even before the supervisor's ``session`` line has arrived)."""

    kind: ClassVar[Kind] = Kind.READY
    pid: int


@dataclass(frozen=True)
class StageMessage:
    """A cell (``index``: its position in the notebook) or an exercise's check starts."""

    kind: ClassVar[Kind] = Kind.STAGE
    stage: Stage
    exercise: str
    index: Optional[int] = None  # None for a check


@dataclass(frozen=True)
class CellMessage:
    """A cell ended: ``error`` says how it failed, ``None`` when it ran to its end."""

    kind: ClassVar[Kind] = Kind.CELL
    index: int
    exercise: str
    error: Optional[CellFailure]


@dataclass(frozen=True)
class ResultMessage:
    """An exercise's check ended: its status, feedback, misconception ``code`` and the ``points`` the check
    gave an answer that did not pass (part marks; 0 when the check did not run)."""

    kind: ClassVar[Kind] = Kind.RESULT
    exercise: str
    status: str
    feedback: str
    code: str = ""
    points: int = 0


@dataclass(frozen=True)
class TamperedMessage:
    """What the checks rely on changed (``changed``: what): the run ends."""

    kind: ClassVar[Kind] = Kind.TAMPERED
    changed: Sequence[str]  # a tuple once received


@dataclass(frozen=True)
class ErrorMessage:
    """The grader itself failed: the run ends."""

    kind: ClassVar[Kind] = Kind.ERROR
    message: str


@dataclass(frozen=True)
class DoneMessage:
    """Every cell ran and every exercise was checked."""

    kind: ClassVar[Kind] = Kind.DONE


Message = Union[ReadyMessage, StageMessage, CellMessage, ResultMessage, TamperedMessage, ErrorMessage, DoneMessage]


def _parse(data: dict) -> Message:
    """The typed message a decoded JSON object is; KeyError, ValueError or TypeError when it is no message of the
    protocol."""
    kind = Kind(data["t"])
    if kind is Kind.STAGE:
        stage = Stage(data["stage"])
        return StageMessage(stage, str(data["exercise"]), None if stage is Stage.CHECK else int(data["index"]))
    if kind is Kind.CELL:
        error = data.get("error")
        failure = None if error is None else CellFailure(CellError(error["kind"]), str(error["message"]))
        return CellMessage(int(data["index"]), str(data["exercise"]), failure)
    if kind is Kind.RESULT:
        points = data.get("points", 0)
        return ResultMessage(str(data["exercise"]), str(data.get("status")), str(data.get("feedback")),
                             str(data.get("code") or ""), points if type(points) is int else 0)
    if kind is Kind.TAMPERED:
        return TamperedMessage(tuple(str(c) for c in data.get("changed", [])))
    if kind is Kind.ERROR:
        return ErrorMessage(str(data.get("message")))
    if kind is Kind.READY:
        pid = data["pid"]
        if type(pid) is not int or pid <= 0:
            raise ValueError("a worker's pid is a positive whole number")
        return ReadyMessage(pid)
    return DoneMessage()


def sign(key: bytes, message: Message) -> bytes:
    """Encode a worker message as ``<hex HMAC-SHA256> <JSON>`` (the JSON: its fields, and its kind as ``t``). Plain
    ``vars``, not ``dataclasses.asdict``: that copies values with :mod:`copy`, which the tamper check does not watch."""
    data = json.dumps({"t": message.kind, **vars(message)}, sort_keys=True, default=vars).encode()
    return hmac.new(key, data, hashlib.sha256).hexdigest().encode() + b" " + data


def unsign(key: bytes, raw: bytes) -> Optional[Message]:
    """The message in ``raw`` if its signature is right and it is a message of the protocol, else ``None``
    (forgeries, and anything malformed, are ignored)."""
    mac, _, data = raw.partition(b" ")
    if not hmac.compare_digest(mac, hmac.new(key, data, hashlib.sha256).hexdigest().encode()):
        return None
    try:
        message = json.loads(data)
        return _parse(message) if isinstance(message, dict) else None
    except (KeyError, ValueError, TypeError):
        return None


@dataclass(frozen=True)
class Job:
    """What a worker is asked to do: run ``cells``, checking each exercise of ``check`` after its last cell, within
    these limits (seconds, MB)."""

    key: bytes                                # signs its messages
    cells: tuple[tuple[int, str, str], ...]   # (index, exercise id, source) in notebook order
    check: tuple[str, ...]
    cell_timeout: float
    check_timeout: float
    memory_mb: int
    tmp: str = ""            # the run's temporary folder
    assessed: bool = False   # the grader's mode

    def to_json(self) -> bytes:
        """The job as the worker reads it from its pipe."""
        return json.dumps({**vars(self), "key": self.key.hex()}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "Job":
        """The job :meth:`to_json` wrote; KeyError, ValueError or TypeError when it is not one."""
        job = json.loads(data)
        return cls(bytes.fromhex(job["key"]), tuple((int(i), str(e), str(s)) for i, e, s in job["cells"]),
                   tuple(str(e) for e in job["check"]), job["cell_timeout"], job["check_timeout"],
                   int(job["memory_mb"]), str(job.get("tmp", "")), bool(job.get("assessed")))


# --- the status pipe: the run's supervisor says which processes are the run's, then how the worker ended

def session_line(supervisor: int, worker: int) -> bytes:
    """The supervisor's first line: its pid (the id of the run's session) and the worker's."""
    return f"session {supervisor} {worker}\n".encode()


def exit_line(status: int) -> bytes:
    """The supervisor's last line, for the worker's wait status: ``exit N`` or ``signal N``."""
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}\n".encode()
    return f"exit {os.WEXITSTATUS(status) if os.WIFEXITED(status) else 255}\n".encode()


def read_status(line: bytes) -> tuple[Optional[tuple[int, int]], Optional[int]]:
    """What a status line says: ``((supervisor, worker), None)`` for :func:`session_line`, ``(None, code)``
    for :func:`exit_line` (``-N`` for ``signal N``), ``(None, None)`` for anything else."""
    words = line.decode(errors="replace").split()
    if len(words) == 3 and words[0] == "session" and words[1].isdigit() and words[2].isdigit():
        return (int(words[1]), int(words[2])), None
    if len(words) == 2 and words[0] in ("exit", "signal") and words[1].isdigit():
        return None, int(words[1]) if words[0] == "exit" else -int(words[1])
    return None, None


