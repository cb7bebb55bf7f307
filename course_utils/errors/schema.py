"""What one entry of the error catalogue is, and which lesson teaches each family.

:class:`Wording` is one message as PyTorch prints it, :class:`Family` one kind of error (its patterns, wordings,
cause, fix and ``tailor``), :class:`Reading` what a family's ``tailor`` gets and returns. :data:`LESSONS` maps a
family to the lesson section that teaches it; families no lesson teaches yet point to the appendix
:data:`FIELD_GUIDE`. Notebooks are named by their lesson's record (:data:`course_utils.syllabus.LESSONS`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..syllabus import LESSONS as SYLLABUS

__all__ = ["Wording", "Family", "Reading", "LESSONS", "FIELD_GUIDE", "DEV", "ALL_CHECKED", "MAC_SOURCE"]

#: A device in a message's pattern: cpu, cuda:0, mps, meta, xpu:1 ...
DEV = r"[A-Za-z_]+(?::\d+)?"
# How the versions were checked, in the words the catalogue's wordings use (see docs/errors.md):
#: a format string or source file found in the CUDA wheels of 2.7, 2.8 and 2.14 and the CPU build of 2.13
ALL_CHECKED = "2.7, 2.8, 2.13 and 2.14 (all checked)"
#: what a Mac's build prints, read in PyTorch's source: the Linux wheels checked here do not contain it
MAC_SOURCE = "Mac (MPS) builds; read in PyTorch's source, not run on a Mac here"

#: The appendix for problems no lesson teaches yet (its notebook's stem).
FIELD_GUIDE = SYLLABUS["08"].stem


def _taught(lesson: str, section: str) -> tuple[str, str]:
    """(the notebook of ``lesson``, by its stem; ``section``): where a family is taught."""
    return SYLLABUS[lesson].stem, section


_CHECKPOINTS = _taught("06", "Going further (optional) › Checkpoints: safe loading, and big models without memory")
#: Family key -> (notebook stem, section) that teaches it. Update here when a lesson starts teaching one.
LESSONS: dict[str, tuple[str, str]] = {
    "devices": _taught("06", "1. Meet the error"),
    "no-kernel": _taught("06", "1. Meet the error"),
    "data-parallel": _taught("08", "Going further (optional) › DataParallel wants the model on `cuda:0` first"),
    "optimizer-state": _taught("06", "6. Optimizer state"),
    "cuda-oom": _taught("08", "CUDA out of memory"),
    "mps-oom": _taught("08", "Going further (optional) › MPS out of memory"),
    "numpy": _taught("03", "8. NumPy lives on the CPU"),
    "numpy-grad": _taught("03", "8. NumPy lives on the CPU"),
    "no-to": _taught("03", "7. Batches with structure"),
    "no-device": _taught("05", "4. A model has no `.device`"),
    "module-init": _taught("03", "Pitfalls"),
    "device-assert": _taught("08", "Device-side asserts"),
    "label-range": _taught("08", "Device-side asserts"),
    "module-prefix": _taught("08", "Checkpoints from DataParallel / DDP"),
    "fork": _taught("08", "CUDA in DataLoader workers"),
    "kernel-image": _taught("08", "A PyTorch built for other GPUs"),
    "mps-op": _taught("08", "Operators MPS lacks"),
    "index-device": _taught("06", "Going further (optional) › Indexing with an index on another device"),
    "mps-float64": _taught("04", "Going further (optional) › Apple's GPU (MPS) is not CUDA"),
    "lengths": _taught("08", "Going further (optional) › Sequence lengths stay on the CPU"),
    "no-cuda": _taught("04", "1. `.cuda()`: a shortcut that only knows CUDA"),
    "ordinal": _taught("04", "Going further (optional) › `CUDA_VISIBLE_DEVICES`: GPUs renumbered"),
    "map-location": _taught("08", "Loading a GPU checkpoint without a GPU"),
    "mps-unavailable": _taught("08", "Going further (optional) › MPS built but not available"),
    "weights-only": _CHECKPOINTS,
    "pin": _taught("07", "4. Pinned memory and `non_blocking`"),
    "no-accelerator": _taught("07", "4. Pinned memory and `non_blocking`"),
    "op-devices": _taught("06", "1. Meet the error"),
    "cpu-scalars": _taught("06", "7. Where PyTorch does move a tensor for you"),
    "addcmul-scalar": _taught("06", "Going further (optional) › Operations that refuse the 0-dim pass"),
    "leaf": _taught("03", "Going further (optional) › Training a tensor you moved"),
    "sync-debug": _taught("07", "Going further (optional) › Let PyTorch point at every synchronisation"),
    "generator": _taught("08", "Going further (optional) › Default devices, samplers and generators"),
    "meta-data": _CHECKPOINTS,
}


@dataclass(frozen=True)
class Wording:
    """One message exactly as PyTorch prints it: the ``text`` verbatim (sizes, device indices, operator names and
    hashes vary), the PyTorch ``versions`` (and builds or devices) that print it as far as checked, and the
    ``source`` where it was checked (a build's string table, a file of PyTorch's source, a real run)."""

    text: str
    versions: str
    source: str


@dataclass(frozen=True)
class Family:
    """One kind of error: how to recognise it, and what the course says about it.

    A short ``key`` (``"devices"``) and a ``title`` for headings. Any match of one of its ``patterns`` recognises the
    family; a space in a pattern matches any run of white space (a message pasted from a wrapped terminal line still
    matches), and the named groups ``arg``, ``op``, ``a`` (the odd tensor's device) and ``b`` (the device expected)
    are read. Its ``wordings`` are real messages with the versions that print them (docs and tests use them); the
    ``cause`` and the ``fix`` are in the course's words. A match the optional ``check`` of its groups rejects is not
    this family (a dtype look-alike); the optional ``tailor`` fits the cause and the fix to what one message says (the
    devices, the argument, the type...): it gets a :class:`Reading` with the family's text and returns it changed.
    ``device_problem`` is False for the few errors the course teaches next to device problems (a forgotten
    ``super().__init__()``, a checkpoint ``torch.load`` refuses...)."""

    key: str
    title: str
    patterns: tuple[str, ...]
    wordings: tuple[Wording, ...]
    cause: str
    fix: str
    check: Optional[Callable[[dict], bool]] = None
    tailor: Optional[Callable[[Reading], Reading]] = None
    device_problem: bool = True
    compiled: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", tuple(re.compile(p.replace(" ", r"\s+")) for p in self.patterns))

    @property
    def lesson(self) -> str:
        """The lesson notebook and section that teach this family."""
        notebook, section = LESSONS.get(self.key, (FIELD_GUIDE, self.title))
        return f"{notebook}, section {section}" if notebook != FIELD_GUIDE else f"{notebook} (appendix): {section}"


@dataclass(frozen=True)
class Reading:
    """What one message says, as its family's pattern read it: what a family's ``tailor`` gets and returns. The
    pattern's named ``groups``; the ``line`` recognised and the whole ``text`` given (a traceback's frames too); the
    ``arg`` and ``op`` the message names, the odd tensor's device ``a`` and the device expected ``b`` (lower case),
    each ``""`` when not named; the family's ``cause`` and ``fix``, until its tailor fits them to the message."""

    groups: dict
    line: str
    text: str
    arg: str
    op: str
    a: str
    b: str
    cause: str
    fix: str
