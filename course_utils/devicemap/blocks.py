"""The pieces of a device map: a block per storage, a lane per memory, and what a block can be marked.
Plain data, read by the renderers and built by :mod:`.model`; a leaf that imports nothing of the course."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

#: Block statuses, set by :func:`~course_utils.devicemap.model.compare` and by the explainer: moved to
#: another device, a copy of a tensor still where it was, left on a device that others left, not there
#: before, and (the explainer's) not on the target device.
MOVED, COPIED, STAYED, NEW, ODD = "moved", "copied", "stayed behind", "new", "odd one out"


@dataclass
class Block:
    """One storage in memory: a tensor, or several views of one storage drawn together."""

    names: list[str]      # the names that reach it (x, x_view); the first is the label
    kind: str             # tensor, parameter, buffer, gradient or optimizer state
    device: str           # "cpu", "cuda:0", "meta"
    shape: tuple          # the first name's
    dtype: str
    nbytes: int           # the storage's (views share it, so it is counted once)
    pinned: bool = False  # page-locked host memory: fast, asynchronous copies to a GPU
    group: str = ""       # the submodule ("encoder"), or ""
    status: str = ""      # "", MOVED, COPIED, STAYED, NEW or ODD
    note: str = ""        # "was on cpu", "copy of x"
    key: Any = None       # the storage's identity, for sharing and comparing

    @property
    def name(self) -> str:
        """The label: the first name."""
        return self.names[0]


@dataclass
class Lane:
    """One memory and what is in it."""

    device: str
    blocks: list[Block] = field(default_factory=list)
    free: Optional[int] = None    # bytes, when the device reports it
    total: Optional[int] = None

    @property
    def used(self) -> int:
        """Bytes held by the blocks drawn here."""
        return sum(b.nbytes for b in self.blocks)

    @property
    def title(self) -> str:
        """``"cpu (host memory)"``, ``"cuda:0"``, ``"meta (no memory: shapes only)"``."""
        kind = self.device.split(":")[0]
        return {"cpu": "cpu (host memory)", "meta": "meta (no data: shapes only)"}.get(kind, self.device)
