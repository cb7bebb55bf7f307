"""The channel between a grading worker and the grader (one signed JSON message per line: each run
has its own HMAC key, so a line the learner's code writes into the pipe is ignored), the names of
what it carries and of how a run ends, and the feedback text made from them.

A run's messages, in order (the ``t`` of each is a :class:`Kind`): ``ready``; per cell ``stage``
(``stage`` :attr:`Stage.CELL`, ``index``, ``exercise``) then ``cell`` (``index``, ``exercise``, ``error``:
``None`` or ``{"kind": CellError, "message": ...}``); after an exercise's last cell ``stage``
(:attr:`Stage.CHECK`, ``exercise``) then ``result`` (``exercise``, ``status``, ``feedback``); ``done``.
``tampered`` (``changed``: what changed) ends a run early, as does ``error`` (``message``).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from enum import Enum
from typing import Optional

from ..text import shorten

_FEEDBACK_LIMIT = 600
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


def sign(key: bytes, message: dict) -> bytes:
    """Encode a worker message as ``<hex HMAC-SHA256> <JSON>``."""
    data = json.dumps(message, sort_keys=True).encode()
    return hmac.new(key, data, hashlib.sha256).hexdigest().encode() + b" " + data


def unsign(key: bytes, raw: bytes) -> Optional[dict]:
    """The message in ``raw`` if its signature is right, else ``None`` (forgeries are ignored)."""
    mac, _, data = raw.partition(b" ")
    if not hmac.compare_digest(mac, hmac.new(key, data, hashlib.sha256).hexdigest().encode()):
        return None
    try:
        message = json.loads(data)
    except ValueError:
        return None
    return message if isinstance(message, dict) and "t" in message else None


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


def clean(text: str) -> str:
    """One line, no memory addresses, bounded length: the same answer gives the same feedback."""
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", str(text))
    text = re.sub(r"0x[0-9a-fA-F]{6,}", "0x…", text)
    text = " ".join(text.split())
    return shorten(text, _FEEDBACK_LIMIT)
