"""Writing files without losing one: a temporary file beside the target, then an atomic rename.

A reader sees the old file or the new one, never half of either; a write that fails (a full disk,
an interrupt) leaves the old file as it was. This module imports nothing from the package."""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterator, Union

PathLike = Union[str, "os.PathLike[str]"]



def is_special(path: PathLike) -> bool:
    """Whether ``path`` is a device, pipe or socket (``/dev/stdout``, a FIFO): such a target is written
    in place, as a rename would replace the device or pipe itself."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def atomic_open(path: PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open ``path`` for writing (``mode`` ``"w"`` or ``"wb"``, ``kwargs`` for :func:`open`) so that it is replaced
    only when the ``with`` block succeeds: the data goes to a temporary file in the target's folder (the target of a
    link, so the link stays), flushed to disk and renamed over the target; an exception leaves the target untouched.
    The new file keeps the old one's permissions. A device or pipe (``/dev/stdout``) is opened directly."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes only ('w' or 'wb'), not {mode!r}")
    if is_special(path):
        with open(path, mode, **kwargs) as f:
            yield f
        return
    target = Path(os.path.realpath(path))
    try:
        keep = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:   # a new file's usual mode: 0o666 less the umask
        umask = os.umask(0)
        os.umask(umask)
        keep = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, keep)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: PathLike, text: str, encoding: str = "utf-8", errors: str = "strict") -> None:
    """Replace ``path``'s contents with ``text`` atomically (see :func:`atomic_open`)."""
    with atomic_open(path, "w", encoding=encoding, errors=errors, newline="") as f:
        f.write(text)


def is_within(path: PathLike, folder: PathLike) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it, links resolved."""
    p, d = os.path.realpath(path), os.path.realpath(folder)
    return p == d or p.startswith(d.rstrip(os.sep) + os.sep)


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether ``a`` and ``b`` name one file: the same path once links are resolved, or (both
    existing) the same inode, as hard links are."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
