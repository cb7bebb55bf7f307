"""The IPython extension: under the traceback of a cell that raised a device error, its explanation.

::

    %load_ext course_utils      # in any notebook or IPython session (cu.setup() turns it on too)
    %unload_ext course_utils    # and off again

After each cell that raised, :func:`course_utils.explain_error` reads the exception. When it is a
device problem the course knows, the explanation appears under the traceback (which is left exactly
as it was), with the variables of the notebook that live on each device the message names. Any
other error is left alone. It needs IPython only: no widgets.
"""
from __future__ import annotations

import html
from itertools import islice
from typing import Any

from . import inventory
from .errors import Explanation, explain_error

__all__ = ["load", "unload", "enable", "ErrorHelp"]

_MAX_NAMES = 12   # variables listed per device
_MAX_FOUND = 1000  # tensors looked at in one variable
_IPYTHON_HISTORY = ("In", "Out")   # IPython's own records of past cells, not the learner's variables


class ErrorHelp:
    """An :class:`~course_utils.errors.Explanation` plus the variables on each device it names."""

    def __init__(self, explanation: Explanation, where: dict[str, list[str]], device_map: Any = None):
        """Args:
            explanation: what :func:`~course_utils.errors.explain_error` said about the cell's error.
            where: device -> names of the notebook's variables on it (see :func:`variables_on`).
            device_map: those variables on a device map, shown in the HTML view only.
        """
        self.explanation = explanation
        self.where = where
        self.device_map = device_map   # those variables on a device map (HTML only)

    def text(self) -> str:
        """Plain text: the explanation, then the variables on each device it names."""
        lines = [self.explanation.text()]
        if self.where:
            lines.append("Your variables on these devices:")
            lines += [f"  {device}: {', '.join(names) or '(none)'}" for device, names in self.where.items()]
        return "\n".join(lines)

    __str__ = __repr__ = text

    def _repr_html_(self) -> str:
        page = self.explanation._repr_html_()
        if self.where:
            items = "".join(f"<li><code>{html.escape(d)}</code>: "
                            + (", ".join(f"<code>{html.escape(n)}</code>" for n in names) or "(none)") + "</li>"
                            for d, names in self.where.items())
            listing = f"<div>Your variables on these devices:<ul style='margin:2px 0'>{items}</ul></div>"
            if self.device_map is not None:
                listing += self.device_map._repr_html_()
            page = page[: -len("</div>")] + listing + "</div>"
        return page


def variables_on(namespace: dict, devices: tuple[str, ...]) -> dict[str, list[str]]:
    """For each device, the names of tensors, modules, optimizers and batches in ``namespace`` that live on it.

    ``"cuda"`` (no index) matches any CUDA device; a module, an optimizer or a batch (a dict, list or
    other mapping of tensors, such as a ``BatchEncoding``) counts on every device its tensors use, as
    :mod:`course_utils.inventory` finds them. Names starting with ``_`` are skipped.

    Args:
        namespace: the variables to look at, e.g. a notebook's ``user_ns``.
        devices: the devices an error message names.

    Returns:
        Device -> names, in the order of ``namespace``, at most a dozen per device.
    """
    wanted = list(dict.fromkeys(d for d in devices if d))
    found: dict[str, list[str]] = {d: [] for d in wanted}
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in _IPYTHON_HISTORY or not wanted:
            continue
        try:
            here = _devices_of(value)
        except Exception:
            continue
        for d in wanted:
            if any(_same(d, h) for h in here) and len(found[d]) < _MAX_NAMES:
                found[d].append(name)
    return found


def _devices_of(value: Any) -> set[str]:
    """The devices of the tensors a variable holds (the first thousand found)."""
    found = islice(inventory.walk(value), _MAX_FOUND)
    return {str(f.value.device) for f in found if f.role in inventory.TENSOR_ROLES}


def _same(named: str, actual: str) -> bool:
    """``cuda`` matches ``cuda:0``; ``cuda:0`` matches only ``cuda:0``."""
    n, a = named.lower(), actual.lower()
    return n == a or (":" not in n and a.split(":")[0] == n)


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
        namespace = getattr(shell, "user_ns", {}) or {}
        where = variables_on(namespace, explanation.devices)
        names = list(dict.fromkeys(n for found in where.values() for n in found))
        display(ErrorHelp(explanation, where if names else {}, _device_map(namespace, names)))
    except Exception:  # help must never add an error of its own
        pass


def load(ipython: Any) -> None:
    """Register the hook on an IPython shell (twice is the same as once)."""
    callbacks = ipython.events.callbacks.get("post_run_cell", [])
    if _after_cell not in callbacks:
        ipython.events.register("post_run_cell", _after_cell)


def unload(ipython: Any) -> None:
    """Remove the hook."""
    if _after_cell in ipython.events.callbacks.get("post_run_cell", []):
        ipython.events.unregister("post_run_cell", _after_cell)


def enable() -> bool:
    """Turn the hook on in the running IPython, if any. Returns True when it is on."""
    try:
        from IPython import get_ipython
        shell = get_ipython()
        if shell is None:
            return False
        load(shell)
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
