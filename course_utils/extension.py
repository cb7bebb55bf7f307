"""The IPython extension: under the traceback of a cell that raised a device error, its explanation.

::

    %load_ext course_utils      # in any notebook or IPython session (cu.setup() turns it on too)
    %unload_ext course_utils    # and off again

After each cell that raised, :func:`course_utils.explain_error` reads the exception. When it is an error
the course knows:

* the traceback keeps your own frames and the message, and leaves out the frames inside PyTorch's own
  machinery (see :func:`is_machinery`) and the course's simulated GPU (:mod:`course_utils.gpusim`); a
  last line says how many it left out. ``%tb`` then prints the whole traceback, and with
  ``%xmode Verbose`` nothing is left out;
* under it comes the explanation, with the notebook's variables on each device the message names:
  those the failing line uses first, then the rest of the cell's, then the others (see :func:`cell_names`).

Any other error is shown exactly as IPython shows it. It needs IPython only: no widgets.
"""
from __future__ import annotations

import ast
import dataclasses
import html
import os
import types
from collections.abc import Iterable
from typing import Any, Optional

import torch

from . import gpusim, inventory
from .errors import Explanation, explain_error

__all__ = ["load", "unload", "enable", "ErrorHelp", "variables_on", "cell_names", "is_machinery", "without_machinery"]

_MAX_NAMES = 12   # variables listed per device; the rest are counted
_IPYTHON_HISTORY = ("In", "Out")   # IPython's own records of past cells, not the learner's variables
_SHOW_ALL = ("Verbose", "Minimal")   # %xmode modes in which the traceback is left whole
_CAUGHT = (Exception,)   # what the traceback handler sees: it shortens only the errors the course knows
_TORCH = os.path.dirname(torch.__file__) + os.sep
_TORCH_MACHINERY = ("overrides.py", "library.py")   # public modules of PyTorch that only pass calls on
#: The course's simulated GPU (its modules), whose frames a trimmed traceback hides as PyTorch's machinery.
_STANDINS = {os.path.splitext(path)[0]: "the course's simulated GPU"
             for path in (gpusim.__file__, gpusim.backend.__file__, gpusim.rules.__file__, gpusim.machines.__file__)}


class ErrorHelp:
    """An :class:`~course_utils.errors.Explanation` plus the variables on each device it names: ``where`` maps a
    device to the notebook's variables on it (:func:`variables_on`), ``device_map`` shows them in the HTML view, and
    those of ``where`` that the failing cell reads (``used``, :func:`cell_names`; ``None``: the code is unknown) are
    listed first."""

    def __init__(self, explanation: Explanation, where: dict[str, list[str]], device_map: Any = None,
                 used: Optional[Iterable[str]] = None):
        self.explanation, self.where, self.device_map = explanation, where, device_map
        self.cell_known = used is not None
        on = [n for names in where.values() for n in names]
        self.used = [n for n in dict.fromkeys(used or ()) if n in on]
        self.used.sort(key=lambda n: next(i for i, names in enumerate(where.values()) if n in names))

    def listing(self) -> list[tuple[str, list[tuple[str, str]], int]]:
        """The lines under the explanation, the failing cell's variables first: (label, the (name, its devices
        or ``""``) shown, how many more)."""
        if not self.cell_known:
            return [(d, [(n, "") for n in names[:_MAX_NAMES]], max(len(names) - _MAX_NAMES, 0))
                    for d, names in self.where.items()]
        def devices(name: str) -> str:
            return ", ".join(d for d, on in self.where.items() if name in on)

        rows = [("used in this cell", [(n, devices(n)) for n in self.used], 0)]
        every = dict.fromkeys(n for names in self.where.values() for n in names if n not in self.used)
        split = [n for n in every if "," in devices(n)]   # an optimizer or a model with a part on each device
        for device, names in self.where.items():
            others = [n for n in names if n not in self.used and n not in split]
            if others:
                rows.append((f"others on {device}", [(n, "") for n in others[:_MAX_NAMES]],
                             max(len(others) - _MAX_NAMES, 0)))
        if split:
            rows.append(("others split across devices (a part on each)",
                         [(n, devices(n)) for n in split[:_MAX_NAMES]], max(len(split) - _MAX_NAMES, 0)))
        return rows

    def text(self) -> str:
        """Plain text: the explanation, then the variables on each device it names."""
        lines = [self.explanation.text()]
        if self.where:
            lines.append("Your variables on these devices:")
            for label, names, more in self.listing():
                shown = ", ".join(f"{n} ({on})" if on else n for n, on in names) or _none(label)
                lines.append(f"  {label}: {shown}" + (f" and {more} more" if more else ""))
        return "\n".join(lines)

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        if not self.explanation.known:
            return self.explanation._repr_html_()
        listing = ""
        if self.where:
            items = ""
            for label, names, more in self.listing():
                shown = ", ".join(f"<code>{html.escape(n)}</code>" + (f" ({html.escape(on)})" if on else "")
                                  for n, on in names) or html.escape(_none(label))
                items += f"<li>{html.escape(label)}: {shown}" + (f" and {more} more" if more else "") + "</li>"
            listing = f"<div>Your variables on these devices:<ul style='margin:2px 0'>{items}</ul></div>"
            if self.device_map is not None:
                listing += self.device_map._repr_html_()
        return self.explanation.page(listing)


def _none(label: str) -> str:
    """What a line without names says."""
    return ("none of them, so the tensors at fault are made by the failing line or inside what it calls"
            if label == "used in this cell" else "(none)")


def variables_on(namespace: dict, devices: tuple[str, ...], first: Iterable[str] = ()) -> dict[str, list[str]]:
    """For each device, the names of tensors, modules, optimizers and batches in ``namespace`` that live on it.

    ``"cuda"`` (no index) matches any CUDA device; a module, an optimizer or a batch (a dict, list or
    other mapping of tensors, such as a ``BatchEncoding``) counts on every device its tensors use, as
    :func:`course_utils.inventory.by_variable` finds them. Names starting with ``_`` are skipped. ``devices`` are
    those an error message names; on each, the names in ``first`` come first (e.g. those the failing cell uses:
    :func:`cell_names`), then the others in the order of ``namespace`` (e.g. a notebook's ``user_ns``).
    """
    wanted = list(dict.fromkeys(d for d in devices if d))
    found: dict[str, list[str]] = {d: [] for d in wanted}
    if not wanted:
        return found
    variables = {k: v for k, v in list(namespace.items()) if k not in _IPYTHON_HISTORY}
    for name, here in inventory.by_variable(variables, first):
        for d in wanted:
            if any(_same(d, h) for h in here):
                found[d].append(name)
    return found


def _same(named: str, actual: str) -> bool:
    """``cuda`` matches ``cuda:0``; ``cuda:0`` matches only ``cuda:0``."""
    n, a = named.lower(), actual.lower()
    return n == a or (":" not in n and a.split(":")[0] == n)


def cell_names(source: str, line: Optional[int] = None) -> list[str]:
    """The names a cell's code (``source``, IPython's magics already turned into Python) reads: those of the
    statement on ``line`` (counted from 1: the one that failed, if known) first, then the rest of the cell's, each
    once, in the order they are written. ``[]`` when the code does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    failing: list[ast.AST] = []
    if line is not None:
        around = [s for s in ast.walk(tree) if isinstance(s, ast.stmt) and s.lineno <= line <= (s.end_lineno or 0)]
        failing = [min(around, key=lambda s: (s.end_lineno or 0) - s.lineno)] if around else []
    return list(dict.fromkeys(n for node in failing + [tree] for n in _loads(node)))


def _loads(node: ast.AST) -> list[str]:
    """The names ``node`` reads (``x`` in ``x + 1`` and in ``x.to(d)``), in the order they are written."""
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return [n.id for n in sorted(names, key=lambda n: (n.lineno, n.col_offset))]


# --- the traceback --------------------------------------------------------------------------------

def is_machinery(frame: types.FrameType) -> bool:
    """Whether a frame is PyTorch's machinery or the course's simulated GPU, not code a learner wrote or calls.

    PyTorch's machinery: its private modules (``torch/_prims``, ``torch/_refs``, ``torch/_decomp``,
    ``torch/_subclasses``, ``torch/utils/_python_dispatch.py``...), private functions of its public modules
    (``nn.Module``'s ``_call_impl``), and ``torch/overrides.py`` and ``torch/library.py``, which pass calls
    on. Public functions such as ``Linear.forward`` or ``F.linear`` stay: a GPU's traceback shows them too.
    """
    code = frame.f_code
    path = code.co_filename
    if os.path.splitext(path)[0] in _STANDINS:
        return True
    if not path.startswith(_TORCH):
        return False
    where = path[len(_TORCH):].replace(os.sep, "/")
    qualname = getattr(code, "co_qualname", code.co_name)
    parts = where.split("/") + qualname.split(".")
    return where in _TORCH_MACHINERY or any(p.startswith("_") and not p.startswith("__") for p in parts)


def without_machinery(tb: Optional[types.TracebackType]) -> tuple[Optional[types.TracebackType], list[types.FrameType]]:
    """``tb`` without the frames :func:`is_machinery` picks out (and a PyTorch function's first call when a
    torch-function mode makes it call itself again), and the frames left out."""
    kept: list[types.TracebackType] = []
    hidden: list[types.FrameType] = []
    while tb is not None:
        if is_machinery(tb.tb_frame) or _hands_on(tb):
            hidden.append(tb.tb_frame)
        else:
            kept.append(tb)
        tb = tb.tb_next
    short = None
    for entry in reversed(kept):
        short = types.TracebackType(short, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return short, hidden


def _hands_on(tb: types.TracebackType) -> bool:
    """A PyTorch function that hands the call to a torch-function mode or a tensor subclass
    (``handle_torch_function``, as ``F.cross_entropy`` does then): the same function comes again below it."""
    callee = tb.tb_next.tb_frame.f_code.co_filename if tb.tb_next is not None else ""
    return tb.tb_frame.f_code.co_filename.startswith(_TORCH) and callee == _TORCH + "overrides.py"


def _hidden_note(hidden: list[types.FrameType]) -> str:
    """The line under a shortened traceback: how many frames it leaves out, and how to see them."""
    frames = "1 frame" if len(hidden) == 1 else f"{len(hidden)} frames"
    names = {os.path.splitext(f.f_code.co_filename)[0] for f in hidden}
    course = sorted(_STANDINS[name] for name in names if name in _STANDINS)
    inside = " and ".join(["PyTorch", *course])
    return f"({frames} inside {inside} not shown: run %tb to see them.)"


def _short_traceback(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any) -> Optional[list]:
    """The structured traceback IPython shows, without PyTorch's machinery, for an error the course knows;
    ``None`` to leave the traceback as it is."""
    if (getattr(shell.InteractiveTB, "mode", "") in _SHOW_ALL or hasattr(value, "_render_traceback_")
            or not explain_error(value).known):
        return None
    short, hidden = without_machinery(tb)
    if not hidden:
        return None
    stb = shell.InteractiveTB.structured_traceback(etype, value, short, tb_offset=tb_offset)
    # PyTorch's own frames by the path a learner can look up (torch/nn/modules/linear.py), not the installation's
    installed = os.path.dirname(os.path.dirname(torch.__file__)) + os.sep
    return [line.replace(installed, "") for line in stb] + [_hidden_note(hidden)]


def _show_traceback(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> None:
    """IPython's custom exception handler (``set_custom_exc``): the traceback, shortened for a known error."""
    try:
        stb = _short_traceback(shell, etype, value, tb, tb_offset)
        # IPython's own hook for an exception that renders its traceback; showtraceback still records the
        # whole one (sys.last_traceback: what %tb and %debug read) and tells the notebook the cell failed.
        if stb is not None:
            value._render_traceback_ = lambda: stb
    except Exception:   # help must never add an error of its own
        stb = None
    if stb is None:
        shell.showtraceback(running_compiled_code=True)   # what IPython does with no handler
        return
    try:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    finally:
        del value._render_traceback_


# --- the hooks ------------------------------------------------------------------------------------

def _after_cell(result: Any) -> None:
    """post_run_cell hook: explain the cell's exception, if it is a device error the course knows."""
    try:
        error = getattr(result, "error_in_exec", None)
        if error is None:
            return
        explanation = explain_error(error)
        if not explanation.known:
            return
        from IPython import get_ipython
        from IPython.display import display
        shell = get_ipython()
        here = getattr(shell, LESSON_ATTR, "")
        if here and explanation.lesson.startswith(f"{here}_"):
            explanation = dataclasses.replace(explanation, lesson="")   # this lesson teaches it: no link to itself
        namespace = getattr(shell, "user_ns", {}) or {}
        used = cell_names(_cell_code(shell, result), _failing_line(error, namespace)) or None
        where = variables_on(namespace, explanation.devices, used or ())
        if not any(where.values()):
            where = {}
        help_ = ErrorHelp(explanation, where, used=used)
        if where:   # on the map: the cell's variables (when it has none there, those listed would mislead)
            help_.device_map = _device_map(namespace, help_.used if used else
                                           list(dict.fromkeys(n for _, names, _ in help_.listing() for n, _ in names)))
        display(help_)
    except Exception:  # help must never add an error of its own
        pass


def _cell_code(shell: Any, result: Any) -> str:
    """The cell's code as Python (IPython's magics turned into calls, lines kept)."""
    raw = getattr(getattr(result, "info", None), "raw_cell", None) or ""
    try:
        return shell.transform_cell(raw)
    except Exception:
        return raw


def _failing_line(error: BaseException, namespace: dict) -> Optional[int]:
    """The line of the cell that raised: the cell's own frame is the one run in the notebook's namespace."""
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals is namespace and tb.tb_frame.f_code.co_name == "<module>":
            return tb.tb_lineno
        tb = tb.tb_next
    return None


def load(ipython: Any) -> None:
    """Register the hooks on an IPython shell (twice is the same as once). The traceback handler goes in
    only where no other custom exception handler is set: the explanation comes either way."""
    if _after_cell not in ipython.events.callbacks.get("post_run_cell", []):
        ipython.events.register("post_run_cell", _after_cell)
    if not getattr(ipython, "custom_exceptions", ()):
        ipython.set_custom_exc(_CAUGHT, _show_traceback)


def unload(ipython: Any) -> None:
    """Remove the hooks."""
    if _after_cell in ipython.events.callbacks.get("post_run_cell", []):
        ipython.events.unregister("post_run_cell", _after_cell)
    if getattr(ipython, "custom_exceptions", ()) is _CAUGHT:
        ipython.set_custom_exc((), None)   # IPython's own default


#: The attribute of the IPython shell that holds the lesson whose setup cell ran in it (``cu.setup("06")``): its
#: own errors get no "Learn more" link. Kept on the shell, not in this module: the grader's integrity check
#: watches the package's state, and an answer cell may run a copy of the setup cell.
LESSON_ATTR = "_course_utils_lesson"


def enable(lesson: str | None = None) -> bool:
    """Turn the hooks on in the running IPython, if any, for ``lesson`` (``"06"``; ``None`` keeps the last). Returns
    True when they are on."""
    try:
        from IPython import get_ipython
        shell = get_ipython()
        if shell is None:
            return False
        if lesson is not None:
            setattr(shell, LESSON_ATTR, str(lesson))
        load(shell)
        manager = getattr(shell, "extension_manager", None)
        if manager is not None:   # as %load_ext would: %unload_ext course_utils then turns it off
            manager.loaded.add(__name__.rpartition(".")[0])
        return True
    except Exception:
        return False


def _device_map(namespace: dict, names: list[str]) -> Any:
    """The named variables on a device map, or ``None``."""
    if not names:
        return None
    try:
        from .devicemap.model import collect
        return collect([(n, namespace[n]) for n in names if n in namespace])
    except Exception:
        return None
