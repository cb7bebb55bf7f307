"""Where the course runs (Colab, Binder, local) and the banner printed by every setup cell."""
from __future__ import annotations

import os
import platform
import sys

import torch

from . import device as _device
from . import gpusim
from .text import wrapped

#: The oldest PyTorch the course supports: `.ci/floor.txt` tests it, the requirements declare it.
MIN_TORCH = (2, 10)


def torch_is_supported(version: str | None = None) -> bool:
    """Whether a PyTorch version (default: the one installed) is at least :data:`MIN_TORCH`."""
    release = (version or torch.__version__).split("+")[0].split(".")
    try:
        return tuple(int(part) for part in release[:2]) >= MIN_TORCH
    except ValueError:  # an unusual version string: do not nag
        return True


def on_colab() -> bool:
    """True inside Google Colab."""
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def on_binder() -> bool:
    """True inside a Binder (repo2docker) session."""
    return "BINDER_SERVICE_HOST" in os.environ or "BINDER_REQUEST" in os.environ


def platform_name() -> str:
    """``"Colab"``, ``"Binder"`` or ``"local"``."""
    return "Colab" if on_colab() else "Binder" if on_binder() else "local"


def no_accelerator_advice() -> str:
    """How a learner without a GPU can get a real one, for the platform they are on."""
    if on_colab():
        return ("For a real GPU: Runtime -> Change runtime type -> a GPU (e.g. T4), then Runtime -> Restart "
                "session and run the notebook again.")
    if on_binder():
        return "Binder has no GPUs: for a real one, open the notebook in Colab (badge at the top)."
    return "For a real GPU, open the notebook in Colab (badge at the top) and pick a GPU runtime."


def real_gpu() -> str | None:
    """The type of a real GPU PyTorch can use here (``"cuda"``, ``"xpu"``, ``"mps"``), asked of each backend, not of
    ``torch.accelerator`` (which names the simulated GPU once it is registered); None without one."""
    for name, backend in (("cuda", torch.cuda), ("xpu", getattr(torch, "xpu", None)),
                          ("mps", getattr(torch.backends, "mps", None))):
        try:
            if backend is not None and backend.is_available():
                return name
        except Exception:  # a backend that cannot even answer has no GPU for us
            continue
    return None


def banner(device: torch.device) -> str:
    """The runtime banner: versions, platform, the chosen device and what to do without a GPU."""
    lines = [f"Python {platform.python_version()} | PyTorch {torch.__version__} | running on: {platform_name()}",
             f"Device for this lesson: {device} ({_device.describe(device)})"]
    if not torch_is_supported():
        need = ".".join(map(str, MIN_TORCH))
        lines.append(f"PyTorch {torch.__version__} is older than {need}, which this course needs: "
                     f"run `pip install -U \"torch>={need}\"`, then restart the kernel.")
    if gpusim.is_simulated(device):
        real = real_gpu()
        if real is not None:   # torch.accelerator names the simulated GPU once it is registered, even beside one
            lines.append(f"A GPU ({real}) is present but {_device.DEVICE_ENV} chose the simulated GPU.")
        else:
            lines.append("No GPU here, so the course gives you a simulated one. " + no_accelerator_advice())
        lines.append(SIMULATED_LINE)
    elif device.type == "cpu":
        lines.append("No GPU here, and this process cannot register the course's simulated GPU. "
                     + no_accelerator_advice())
    else:
        lines.append(f"Accelerator: {device.type}, {torch.accelerator.device_count()} device(s) visible.")
    return "\n".join(part for line in lines for part in wrapped(line, then="  "))


#: The banner's line when :func:`setup` hands out the simulated GPU (:mod:`course_utils.gpusim`).
SIMULATED_LINE = (f"Simulated GPU: {gpusim.NAME}:0 and {gpusim.NAME}:1 hold real values in host memory and raise "
                  "what a CUDA GPU raises; the course's timings on them are a modeled H100's, labelled so. Not "
                  "simulated: memory limits, pinned memory and CUDA's own API (.cuda(), torch.cuda).")


def setup(lesson: str | None = None) -> torch.device:
    """Print the runtime banner (its first line names the ``lesson``, ``"01"``..``"08"``) and return the device the
    lesson should use.

    In IPython it also turns on the error help (:mod:`course_utils.extension`): a device error is explained under its
    traceback. Without an accelerator it registers the simulated GPU and hands out ``simgpu:0``
    (:mod:`course_utils.gpusim`); ``COURSE_DEVICE=simgpu`` asks for it even where there is an accelerator, e.g. for a
    class that should all see the same. The device chosen by :func:`course_utils.best_device` (or ``simgpu:0``) is made
    the current device when it names an accelerator by index, so that ``.cuda()``, synchronisation and timing agree with
    it. Only a process that may not register the simulated GPU (a test suite's own) gets the CPU.
    """
    from . import extension  # imports only the error catalogue: no floor above this one
    extension.enable(lesson or "")
    if _device.simulated_by_user():   # COURSE_DEVICE=simgpu: the simulated GPU, even where a real one is
        gpusim.enable()
    device = _device.best_device()
    if device.type == "cpu" and gpusim.wanted():
        device = gpusim.enable()
    _device.make_current(device)
    if lesson:
        print(f"Lesson {lesson} of 'Where does my tensor live?'")
    print(banner(device))
    return device
