"""Device choice: the one place that decides where the course's tensors go."""
from __future__ import annotations

import os
from typing import Optional

import torch

#: Environment variable that overrides the automatic choice, e.g. ``COURSE_DEVICE=cpu``.
DEVICE_ENV = "COURSE_DEVICE"
#: Environment variable that makes a missing accelerator an error (used by the GPU CI job).
REQUIRE_ENV = "COURSE_REQUIRE_ACCELERATOR"


def accelerator() -> Optional[torch.device]:
    """Return the available accelerator (CUDA, MPS, XPU, ...) or ``None``.

    Returns:
        The accelerator's ``torch.device`` (index ``None``), or ``None`` on a CPU-only runtime.
    """
    if not torch.accelerator.is_available():
        return None
    return torch.accelerator.current_accelerator()


def accelerator_required() -> bool:
    """Whether ``COURSE_REQUIRE_ACCELERATOR`` asks for a real accelerator (e.g. on a GPU CI runner)."""
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in {"1", "true", "yes"}


def best_device() -> torch.device:
    """Pick the device the course uses: ``$COURSE_DEVICE`` if set, else an accelerator, else CPU.

    Returns:
        A ``torch.device``. With an accelerator it carries the current index (e.g. ``cuda:0``).

    Raises:
        RuntimeError: if ``COURSE_REQUIRE_ACCELERATOR`` is set and no accelerator is available,
            or ``COURSE_DEVICE`` names a device type that is not available.
    """
    override = os.environ.get(DEVICE_ENV, "").strip()
    if override:
        device = torch.device(override)
        if device.type not in ("cpu", "meta") and not _type_available(device.type):
            raise RuntimeError(
                f"{DEVICE_ENV}={override!r}, but no {device.type} device is available here. "
                f"Unset {DEVICE_ENV} or set it to 'cpu'."
            )
        return device
    acc = accelerator()
    if acc is None:
        if accelerator_required():
            raise RuntimeError(
                f"{REQUIRE_ENV} is set but PyTorch {torch.__version__} sees no accelerator "
                "(torch.accelerator.is_available() is False)."
            )
        return torch.device("cpu")
    return torch.device(acc.type, torch.accelerator.current_device_index())


def describe(device: torch.device) -> str:
    """A one-line human description of a device: its name and, for accelerators, memory."""
    device = torch.device(device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        free, total = torch.cuda.mem_get_info(device)
        return f"{props.name}, {total / 2**30:.1f} GiB total, {free / 2**30:.1f} GiB free"
    if device.type == "cpu":
        return f"CPU, {torch.get_num_threads()} threads"
    return device.type.upper()


def free_memory(device: torch.device) -> Optional[int]:
    """Bytes free on ``device`` (``None`` when PyTorch cannot tell, as for MPS).

    On the CPU this reads ``MemAvailable`` from ``/proc/meminfo`` (Linux) or uses ``os.sysconf``.
    """
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type == "cpu":
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        try:
            return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    return None


def synchronize(device: torch.device) -> None:
    """Wait for all queued work on ``device`` (a no-op on the CPU and meta devices)."""
    device = torch.device(device)
    if device.type in ("cpu", "meta"):
        return
    torch.accelerator.synchronize(device)


def _type_available(device_type: str) -> bool:
    module = getattr(torch, device_type, None)
    is_available = getattr(module, "is_available", None)
    if callable(is_available):
        try:
            return bool(is_available())
        except Exception:  # a backend that cannot even answer is not available
            return False
    acc = accelerator()
    return acc is not None and acc.type == device_type
