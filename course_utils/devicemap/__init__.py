"""The device map: ``cu.show_devices(...)`` draws where every tensor lives.

::

    cu.show_devices(model, batch)              # named by your variables
    cu.show_devices(model=model, opt=opt)      # or name them yourself
    cu.show_devices()                          # in a notebook: all your variables
    before = cu.show_devices(model, x)
    model.to(device)
    cu.show_devices(model, x, compare=before)  # what moved, was copied, or stayed behind

One lane per memory (host memory, each accelerator, ``meta``), one block per storage: a tensor, a parameter, a buffer, a
gradient or an optimizer state; views of one storage are one block. What each object holds is read by
:mod:`course_utils.inventory`; the model (:mod:`.model`, built of the pieces in :mod:`.blocks`) is kept apart from the
drawing (:mod:`.render`): text in a terminal, HTML with inline SVG in a notebook."""
from __future__ import annotations

import sys
from typing import Any, Optional

from .model import Block, DeviceMap, Lane, collect, learner_namespace, named_from_caller
from .model import compare as _compare

__all__ = ["show_devices", "DeviceMap", "Lane", "Block"]


def show_devices(*objects: Any, compare: Optional[DeviceMap] = None, **named: Any) -> DeviceMap:
    """Map where tensors, modules (by submodule), optimizers, and dicts/lists/tuples of them live.

    ``objects`` are named after the variables you passed (``show_devices(model, x)``), ``named`` ones under the names
    given (``show_devices(batch=b)``); with none at all, it maps your notebook's variables. Against ``compare``, a map
    made earlier, blocks are marked moved, copied, stayed behind or new. The :class:`DeviceMap` shows itself in a
    notebook (HTML) and prints as text; objects without tensors are listed as such (it never raises)."""
    frame = sys._getframe(1)
    pairs = named_from_caller(objects, frame) + list(named.items())
    if not pairs:
        pairs = learner_namespace(_notebook_namespace() or {**frame.f_globals, **frame.f_locals})
    device_map = collect(pairs)
    if isinstance(compare, DeviceMap):
        _compare(compare, device_map)
    return device_map



def _notebook_namespace() -> Optional[dict]:
    try:
        from IPython import get_ipython
        return getattr(get_ipython(), "user_ns", None)
    except Exception:
        return None
