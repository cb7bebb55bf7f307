"""The channel between a grading worker and the grader (one signed JSON message per line: each run
has its own HMAC key, so a line the learner's code writes into the pipe is ignored), and the
feedback text made from what it carries."""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Optional

_FEEDBACK_LIMIT = 600
#: The worker's exit status after it found tampering: the grader reads it even when the report
#: itself could not arrive (learner code pointed the channel elsewhere).
TAMPERED_EXIT = 86


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


def clean(text: str) -> str:
    """One line, no memory addresses, bounded length: the same answer gives the same feedback."""
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", str(text))
    text = re.sub(r"0x[0-9a-fA-F]{6,}", "0x…", text)
    text = " ".join(text.split())
    return text if len(text) <= _FEEDBACK_LIMIT else text[: _FEEDBACK_LIMIT - 1] + "…"
