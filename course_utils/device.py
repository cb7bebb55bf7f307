"""Device choice: the one place that decides where the course's tensors go."""
from __future__ import annotations

import functools
import os
from typing import Optional

import torch

#: Environment variable that overrides the automatic choice: an accelerator (``cuda:1``) or ``simgpu``.
DEVICE_ENV = "COURSE_DEVICE"
#: The name of the course's simulated GPU (:mod:`course_utils.gpusim`), which ``COURSE_DEVICE`` may name.
SIMULATED = "simgpu"
#: Environment variable that makes a missing accelerator an error (used by the GPU CI job).
REQUIRE_ENV = "COURSE_REQUIRE_ACCELERATOR"

#: Device types without 64-bit floats: Apple's MPS raises ``TypeError`` for float64 and complex128.
NO_FLOAT64 = {"mps"}


def supports_dtype(device: torch.device | str, dtype: torch.dtype) -> bool:
    """Whether tensors of ``dtype`` can live on ``device`` (a device or its name): False where PyTorch refuses the
    dtype on that device type (MPS has no float64 or complex128)."""
    return not (torch.device(device).type in NO_FLOAT64 and dtype in (torch.float64, torch.complex128))


def accelerator() -> Optional[torch.device]:
    """The available accelerator (CUDA, MPS, XPU, ...) as a ``torch.device`` (index ``None``), or ``None`` on a
    CPU-only runtime."""
    return torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None


def chosen_by_user() -> bool:
    """Whether ``COURSE_DEVICE`` chooses the device."""
    return bool(os.environ.get(DEVICE_ENV, "").strip())


def simulated_by_user() -> bool:
    """Whether ``COURSE_DEVICE`` asks for the course's simulated GPU (``simgpu`` or ``simgpu:0``)."""
    return os.environ.get(DEVICE_ENV, "").strip().split(":")[0] == SIMULATED


def accelerator_required() -> bool:
    """Whether ``COURSE_REQUIRE_ACCELERATOR`` asks for a real accelerator (e.g. on a GPU CI runner)."""
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in {"1", "true", "yes"}


def best_device() -> torch.device:
    """Pick the device the course uses: ``$COURSE_DEVICE`` if set, else an accelerator, with its current index
    (``cuda:0``), else CPU (where :func:`course_utils.setup` then hands out the simulated GPU). ``RuntimeError`` if
    ``COURSE_REQUIRE_ACCELERATOR`` is set and no accelerator is available, or ``COURSE_DEVICE`` names the CPU or a
    device type that is not available."""
    override = os.environ.get(DEVICE_ENV, "").strip()
    if override and simulated_by_user():
        if override not in (SIMULATED, f"{SIMULATED}:0"):
            raise RuntimeError(f"{DEVICE_ENV}={override!r}: a lesson runs on {SIMULATED}:0 (its second device, "
                               f"{SIMULATED}:1, is the lessons' to use). Set {DEVICE_ENV}={SIMULATED}.")
        try:
            return torch.device(SIMULATED, 0)
        except RuntimeError:
            raise RuntimeError(f"{DEVICE_ENV}={override!r}: the simulated GPU exists once cu.setup() has registered "
                               "it, on PyTorch 2.10 or later. Run the setup cell first, or unset "
                               f"{DEVICE_ENV}.") from None
    if override:
        try:
            device = torch.device(override)
        except RuntimeError:
            raise RuntimeError(f"{DEVICE_ENV}={override!r} is not a device name. Use e.g. 'cuda', "
                               f"'cuda:1' or {SIMULATED!r}, or unset {DEVICE_ENV}.") from None
        if device.type == "cpu":
            raise RuntimeError(f"{DEVICE_ENV}={override!r}: the lessons need a device besides the CPU to move "
                               f"tensors to. Unset {DEVICE_ENV} (without a GPU you get the simulated one), or set "
                               f"{DEVICE_ENV}={SIMULATED} to use the simulated GPU even where a real one is.")
        if not _type_available(device.type):
            raise RuntimeError(f"{DEVICE_ENV}={override!r}, but no {device.type} device is available here. "
                               f"Unset {DEVICE_ENV} or set it to {SIMULATED!r}.")
        count = _device_count(device.type)
        if device.index is not None and count is not None and device.index >= count:
            raise RuntimeError(f"{DEVICE_ENV}={override!r}, but this machine has {count} {device.type} device(s), "
                               f"numbered 0 to {count - 1}. Unset {DEVICE_ENV} or pick an index below {count}.")
        return device
    acc = accelerator()
    if acc is None:
        if accelerator_required():
            raise RuntimeError(f"{REQUIRE_ENV} is set but PyTorch {torch.__version__} sees no accelerator "
                               "(torch.accelerator.is_available() is False).")
        return torch.device("cpu")
    return torch.device(acc.type, torch.accelerator.current_device_index())


def warm_up() -> None:
    """Start the accelerator's runtime (CUDA's context and the like) now, once per process, so that the first
    time-limited check or timed call does not pay for it: on a busy GPU it can take seconds. Without an
    accelerator, or where it cannot start, nothing happens (the work that needs it will say why)."""
    acc = accelerator()
    if acc is not None and acc.type != SIMULATED:
        _start(str(acc))


@functools.cache
def _start(device_type: str) -> bool:
    try:
        torch.empty(1, device=device_type)
        torch.accelerator.synchronize()
    except Exception:  # a driver that cannot start: left to the code that uses it, which says so
        return False
    return True


def make_current(device: torch.device) -> None:
    """Make ``device`` the current accelerator device when it names one by index (``cuda:1``).

    Without this, ``COURSE_DEVICE=cuda:1`` would put the lesson's tensors on GPU 1 while
    ``.cuda()``, ``torch.accelerator.synchronize()``, CUDA events and ``benchmark.Timer`` still
    use GPU 0, the current device. A no-op for the CPU and devices without an index.
    """
    device = torch.device(device)
    if device.type == "cpu" or device.index is None:
        return
    acc = accelerator()
    if acc is not None and acc.type == device.type and torch.accelerator.current_device_index() != device.index:
        torch.accelerator.set_device_index(device.index)


def describe(device: torch.device) -> str:
    """A one-line human description of a device: its name and, for accelerators, memory.

    It reads only the device's properties: asking for free memory would create a CUDA context
    (hundreds of MB on the GPU) in lessons that never use the GPU.
    """
    device = torch.device(device)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return f"{props.name}, {props.total_memory / 2**30:.1f} GiB"
    if device.type == "cpu":
        return f"CPU, {torch.get_num_threads()} threads"
    if device.type == "simgpu":   # course_utils.gpusim: no floor below this one may import it
        return "the course's simulated GPU: values in host memory"
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
    if device.type in ("cpu", "meta", "simgpu"):   # simgpu: course_utils.gpusim, done when a call returns
        return
    torch.accelerator.synchronize(device)


def _device_count(device_type: str) -> Optional[int]:
    """How many devices of this type PyTorch sees (``None`` when it cannot tell)."""
    acc = accelerator()
    if acc is not None and acc.type == device_type:
        return torch.accelerator.device_count()
    count = getattr(getattr(torch, device_type, None), "device_count", None)
    try:
        return int(count()) if callable(count) else None
    except Exception:  # a backend that cannot answer
        return None


def _type_available(device_type: str) -> bool:
    is_available = getattr(getattr(torch, device_type, None), "is_available", None)
    if callable(is_available):
        try:
            return bool(is_available())
        except Exception:  # a backend that cannot even answer is not available
            return False
    acc = accelerator()
    return acc is not None and acc.type == device_type
