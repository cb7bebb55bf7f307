"""The explainer: read an error (an exception or pasted text), find its family in the catalogue, fit the words.

:func:`explain_error` returns an :class:`Explanation` (plain text for terminals, HTML for notebooks); it never
raises and never guesses.
"""
from __future__ import annotations

import contextlib
import html
import re
import sys
import traceback
import urllib.parse
from dataclasses import dataclass, replace
from typing import Any, Optional

from ..text import card, code_html, shorten
from . import catalogue
from .schema import Family, Reading

__all__ = ["Explanation", "explain_error", "last_error", "lesson_link"]


@dataclass
class Explanation:
    """What :func:`explain_error` found. Display it in a notebook, print it in a terminal.

    ``known`` is True when the message is one the course explains: then ``key`` and ``title`` are its family's, the
    ``cause`` (with what your message says) and the ``fix`` its words, ``lesson`` the notebook and section that teach
    it, and ``message`` the line of your error that was recognised. The ``argument`` (``"mat1"``, ``"lengths"``...),
    ``op`` (``"wrapper_CUDA_addmm"``...) and ``devices`` (odd one first when it says which) are what the message
    names. ``device_problem`` is False for the errors the course teaches next to device problems; ``note`` is said
    instead of "not an error the course knows" (``explain_error()`` with no error yet)."""

    known: bool
    key: str = ""
    title: str = ""
    cause: str = ""
    fix: str = ""
    lesson: str = ""
    message: str = ""
    argument: str = ""
    op: str = ""
    devices: tuple[str, ...] = ()
    device_problem: bool = True
    note: str = ""

    @property
    def heading(self) -> str:
        """``Device error: <title>`` (or ``Error: <title>`` for a neighbour of the device problems)."""
        return f"{'Device error' if self.device_problem else 'Error'}: {self.title}"

    def text(self) -> str:
        """Plain text for terminals and logs."""
        if not self.known and self.note:
            return self.note
        if not self.known:
            return ("Not an error the course knows: " + (f"“{self.message}”. " if self.message else "")
                    + "This explainer recognises the device problems the course teaches (tensors on different "
                    "devices, GPU memory, moving data between devices) and a few errors met beside them; dtype "
                    "and shape errors are not among them, so it has nothing to say rather than a guess.")
        return "\n".join([self.heading, f"  You got: {self.message}", f"Cause: {self.cause}", f"Fix: {self.fix}"]
                         + ([f"Learn more: {self.lesson}"] if self.lesson else []))

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        if not self.known:
            return (f"<div class='course-error-help' style='color:var(--jp-ui-font-color2, #555)'>"
                    f"{html.escape(self.text())}</div>")
        return self.page()

    def page(self, more: str = "") -> str:
        """The HTML view: the heading and the fix first; the cause, the message, the lesson (and ``more``, HTML the
        caller adds) in a note the learner opens on request."""
        rows = [("Cause", code_html(self.cause)), ("You got", f"<code>{html.escape(self.message)}</code>")]
        rows += [("Learn more", lesson_link(self.lesson))] if self.lesson else []   # none in the lesson itself
        details = "".join(f"<div><b>{k}:</b> {v}</div>" for k, v in rows) + more
        return card(f"<b>{code_html(self.heading)}</b><div><b>Fix:</b> {code_html(self.fix)}</div>"
                    f"<details><summary>Why, and where to read more</summary>{details}</details>",
                    "#1c7ed6", "course-error-help")


def lesson_link(lesson: str) -> str:
    """``"06_mismatch_errors, section 1. Meet the error"`` as a link to that heading of the lesson notebook (beside the
    lessons, where a lesson's explanation appears; JupyterLab and Notebook 7 name a heading's anchor by its text
    with ``-`` for spaces). Anything else is shown as text."""
    m = re.fullmatch(r"(\d\d_\w+)(?:, section | \(appendix\): )(.+)", lesson)
    if not m:
        return code_html(lesson)
    heading = m.group(2).split(" › ")[-1].replace("`", "")
    href = f"{m.group(1)}.ipynb#{urllib.parse.quote(heading.replace(' ', '-'), safe='.:()-_')}"
    return f"<a href='{html.escape(href, quote=True)}'>{code_html(lesson)}</a>"


# --- reading what was pasted -----------------------------------------------------------------------

_MAX_CHARS = 1_000_000      # past this only the end is read: the message that matters is last
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")   # colours in a traceback copied from a terminal or notebook


def _safe_str(value: Any) -> str:
    try:
        text = str(value)
        return text if isinstance(text, str) else ""
    except Exception:
        return ""


def _text_of(error: Any) -> str:
    """The text to read: an exception's type, message and traceback, a pasted string, or bytes."""
    if isinstance(error, str):
        return error
    if isinstance(error, (bytes, bytearray, memoryview)):
        return bytes(error[-_MAX_CHARS:]).decode("utf-8", errors="replace")
    if isinstance(error, BaseException):
        message = _safe_str(error)
        if not message:
            try:
                message = " ".join(_safe_str(a) for a in error.args[:5])
            except Exception:
                message = ""
        kind = type(error)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        try:  # the innermost frames matter for a few families (a sampler, torch.load); never fail on them
            frames = "".join(traceback.format_tb(error.__traceback__, limit=-30)) if error.__traceback__ else ""
        except Exception:
            frames = ""
        return f"{frames}{name}: {message}"
    return _safe_str(error)


#: what ``explain_error()`` says when there is no error to explain
_NO_LAST_ERROR = ("No error to explain yet: `cu.explain_error()` with nothing in the brackets explains the last error "
                  "this session raised, and none has been raised. Run the cell that fails, then call it again, or "
                  "pass the error: `cu.explain_error(error)` (an exception, or the message you copied).")

_LAST = object()   # the default of explain_error's argument: "the last error"


def last_error() -> Optional[BaseException]:
    """The error :func:`explain_error` explains when called with no argument, or ``None``.

    In order: the exception being handled (a call inside an ``except`` block), then the last one that went
    uncaught, which IPython and Jupyter record after the failing cell (``sys.last_exc`` from Python 3.12,
    ``sys.last_value`` before and beside it), as the plain Python prompt does."""
    candidates = (sys.exc_info()[1], getattr(sys, "last_exc", None), getattr(sys, "last_value", None))
    return next((candidate for candidate in candidates if isinstance(candidate, BaseException)), None)


def explain_error(error: Any = _LAST) -> Explanation:
    """Explain an error the course teaches: its cause, its fix and the lesson that teaches it.

    ::

        cu.explain_error()          # the last error: the one the cell above raised (or the one being handled)
        cu.explain_error(error)     # this one

    ``error`` is an exception, or the text you copied: a bare message, a part of one, or a whole traceback, from any
    PyTorch version, any device (bytes and other objects are read as text). Left out: the last error (see
    :func:`last_error`): in a notebook, the one the last failing cell raised; when there is none yet, the explanation
    says so. ``.known`` is False for anything the course does not explain (dtype and shape errors included): it says
    so instead of guessing. It never raises."""
    if error is _LAST:
        try:
            error = last_error()
        except Exception:
            error = None
        if error is None:
            return Explanation(known=False, note=_NO_LAST_ERROR)
    try:
        text = _text_of(error)[-_MAX_CHARS:]
        found = _explain(_ANSI.sub("", text) if "\x1b" in text else text)
        if found.key in ("devices", "no-kernel", "op-devices") and isinstance(error, BaseException):
            with contextlib.suppress(Exception):   # the frames are the learner's: read them, never fail on them
                found = _tailor_culprit(found, error)
        return found
    except Exception:  # the explainer must never be the thing that fails
        return Explanation(known=False)


def _is_module(value: Any) -> bool:
    """Whether ``value`` is an ``nn.Module`` (read without importing torch: this module imports none of it)."""
    return any(c.__name__ == "Module" and c.__module__ == "torch.nn.modules.module" for c in type(value).__mro__)


def _device_of(value: Any) -> str:
    """A tensor's device as text (``"cpu"``, ``"cuda:0"``), or "" for anything else and for a 0-dim CPU tensor, which
    mixes with any device like a number (read without torch)."""
    if any(c.__name__ == "Tensor" and c.__module__ == "torch" for c in type(value).__mro__):
        return "" if value.ndim == 0 and value.device.type == "cpu" else str(value.device)
    return ""


def _culprit(owner: Any, frame: Any) -> Optional[tuple[str, str, str]]:
    """(kind, name, extra) of what puts a tensor on the CPU while ``owner``'s parameters moved, seen from one of its
    own methods in the traceback whose tensor arguments are on the parameters' device: a plain list/tuple/dict of
    layers (extra: the container), or the one CPU tensor in sight, a plain tensor attribute (extra: the parameters'
    device) or a tensor made in the method (extra: the parameters' device and the first tensor argument). Several
    CPU tensors in sight: no culprit (it could be any of them, and a CPU tensor may be meant: ``lengths``)."""
    registered = {id(m) for m in owner.modules()}
    for attr, value in vars(owner).items():
        items = list(value.values()) if isinstance(value, dict) else value
        if isinstance(value, (list, tuple, dict)) and any(_is_module(v) and id(v) not in registered for v in items):
            return "layers", attr, type(value).__name__
    home = next((str(p.device) for p in owner.parameters()), "cpu")
    code = frame.f_code
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    args = [name for name in params if _device_of(frame.f_locals.get(name))]
    if home == "cpu" or not args or any(_device_of(frame.f_locals[name]) != home for name in args):
        return None
    found = [("attribute", attr, home) for attr, value in vars(owner).items() if _device_of(value) == "cpu"]
    found += [("made", name, f"{home} {args[0]}") for name, value in frame.f_locals.items()
              if name not in params and _device_of(value) == "cpu"]
    return found[0] if len(found) == 1 else None


def _culprits(error: BaseException) -> list[tuple[str, str, str, str]]:
    """(owner class, method, kind, name, extra) of each module of the learner's (not PyTorch's) whose method is in
    the traceback and shows a culprit (see :func:`_culprit`), outermost first."""
    out, seen = [], set()
    for frame, _ in traceback.walk_tb(error.__traceback__):
        code = frame.f_code   # a method's first argument is its module, whatever its name
        owner = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
        if owner is None or (id(owner), code) in seen or not _is_module(owner):
            continue
        seen.add((id(owner), code))
        try:
            method = getattr(type(owner), code.co_name, None)
            if getattr(method, "__code__", None) is not code or type(owner).__module__.startswith("torch."):
                continue
            found = _culprit(owner, frame)
        except Exception:
            continue
        if found and found[:2] not in [c[2:4] for c in out]:
            out.append((type(owner).__name__, code.co_name) + found)
    return out


def _tailor_culprit(found: Explanation, error: BaseException) -> Explanation:
    """A mismatch whose culprit the traceback shows (a plain list of layers, a plain tensor attribute, a tensor
    made in ``forward``): the cause and the fix name it instead of the general rule."""
    culprits = _culprits(error)
    if not culprits:
        return found
    owner, method, kind, name, extra = culprits[-1]   # the innermost: nearest the line that raised
    if kind == "layers":
        wrapper = "nn.ModuleDict" if extra == "dict" else "nn.ModuleList"
        cause = (f"`{owner}.{name}` is a plain Python {extra} of layers. `Module.to` moves only registered "
                 f"parameters, buffers and submodules and does not look inside a {extra}, so `model.to(device)` "
                 "left those layers where they were made (the CPU) while the rest moved, and `model.parameters()` "
                 "misses them too. In `forward` their weights meet tensors on the other device.")
        fix = (f"Register them: in `__init__`, `self.{name} = {wrapper}(...)` around the same layers, then "
               "`model.to(device)` again, and create the optimizer after that (it never saw these parameters). "
               "`cu.explain_devices(model, {\"x\": x})` lists each layer in a plain container.")
    elif kind == "attribute":
        cause = (f"`{owner}.{name}` is a plain tensor attribute (`self.{name} = ...`): it is on cpu, the "
                 f"parameters on {extra}. `model.to(device)` moves parameters, buffers and submodules, not plain "
                 "attributes, so it stayed where it was made while the parameters moved.")
        fix = (f"Register it as a buffer in `__init__`: `self.register_buffer(\"{name}\", ...)` with the same "
               "tensor, then `model.to(device)` again. A buffer moves with the model and is saved in `state_dict()`.")
    else:
        home, arg = extra.split()
        cause = (f"`{name}` is made inside `{owner}.{method}` and is on cpu, while the parameters and `{arg}` "
                 f"are on {home}. A factory call (`torch.zeros`, `torch.randn`, `torch.arange`, "
                 "`torch.tensor`...) makes its tensor on the default device, the CPU, whatever device the input is on.")
        fix = (f"Make `{name}` where the input is: pass `device={arg}.device` to the call that makes it (or build it "
               f"once in `__init__` as a buffer).")
    return replace(found, cause=cause, fix=fix)


def _explain(text: str) -> Explanation:
    best = None  # (end, -start, -rank), family, groups, match
    for rank, fam in enumerate(catalogue.FAMILIES):   # read at each call: the catalogue may grow
        for pattern in fam.compiled:
            for m in pattern.finditer(text):
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                if fam.check is not None and not fam.check(groups):
                    continue
                # the match that ends last wins (a traceback ends with its error); of overlapping ones, the
                # fullest (it starts first), then the family listed first
                key = (m.end(), -m.start(), -rank)
                if best is None or key > best[0]:
                    best = (key, fam, groups, m)
    if best is None:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return Explanation(known=False, message=shorten(lines[-1], 600) if lines else "")
    _, fam, groups, m = best
    end = text.find("\n", m.end())   # the line the match is on
    line = text[text.rfind("\n", 0, m.start()) + 1:end if end >= 0 else len(text)].strip()
    return _explained(fam, groups, shorten(line, 600), text)


def _explained(fam: Family, g: dict, line: str, text: str) -> Explanation:
    """The family's explanation of ``line``, fitted to the message by the family's tailor, if it has one."""
    reading = Reading(g, line, text, g.get("arg", ""), g.get("op", ""), (g.get("a") or "").lower(),
                      (g.get("b") or "").lower(), fam.cause, fam.fix)
    if fam.tailor is not None:
        reading = fam.tailor(reading)
    devices = tuple(d for d in (reading.a, reading.b) if d)
    return Explanation(True, fam.key, fam.title, reading.cause, reading.fix, fam.lesson, line, reading.arg,
                       reading.op, devices, fam.device_problem)
