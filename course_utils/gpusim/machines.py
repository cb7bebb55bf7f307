"""Simulated machines for the checks: for the length of a ``with`` block, make an answer (and all of PyTorch) see an
accelerator that is not CUDA, or none (on a CUDA build or a CPU-only one), so that each branch of device-agnostic
code is tested on any machine. The accelerator they report is the simulated GPU (:mod:`.backend`) where it is
registered, else PyTorch's data-less ``meta`` device (a test process that never registers it)."""
from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass
from typing import Any

import torch

from .. import device as _device
from . import backend


def other_accelerator() -> torch.device:
    """The device :class:`simulated_accelerator` reports by default, an accelerator that is not CUDA: the simulated
    GPU where it is registered (its tensors hold values and refuse the CPU's, as a GPU's do), else ``meta``."""
    return torch.device(backend.NAME) if backend.is_enabled() else torch.device("meta")


_COURSE_SETTINGS = (_device.DEVICE_ENV, _device.REQUIRE_ENV)


def _namespaces(answer: Any) -> list[dict]:
    """The global namespaces ``answer``'s code looks names up in (its module, for a class)."""
    found: list[dict] = []
    try:
        if inspect.isclass(answer):
            candidates = [vars(sys.modules.get(answer.__module__, answer))] + [
                getattr(getattr(v, "__func__", v), "__globals__", None) for v in vars(answer).values()]
        else:
            answer = getattr(answer, "func", answer)                  # functools.partial
            candidates = [getattr(getattr(answer, "__func__", answer), "__globals__", None)]
        for namespace in candidates:
            if type(namespace) is dict and not any(namespace is seen for seen in found):
                found.append(namespace)
    except Exception:  # an odd answer object: patch the modules only
        return []
    return found


def _forget(answer: Any) -> None:
    """Empty the cache of an answer wrapped by ``functools.cache`` or ``lru_cache`` (a correct answer may cache:
    a machine does not change while a program runs, but a check's simulated machines do)."""
    clear = getattr(answer, "cache_clear", None)
    if callable(clear) and getattr(answer, "__wrapped__", None) is not None:
        try:
            clear()
        except Exception:  # an odd object that only looks cached: nothing to forget
            pass


class Patched:
    """Replace attributes for the length of a ``with`` block; also hide this machine's course
    settings (``COURSE_DEVICE``, ``COURSE_REQUIRE_ACCELERATOR``), which describe the real machine.

    Names the answer imported directly (``from torch.accelerator import is_available``) are bound
    to the real functions in the answer's globals; they are replaced there too, so that a correct
    answer sees the same simulated machine as one that writes ``torch.accelerator.is_available()``.
    """

    answer: Any = None

    def replacements(self) -> dict[tuple[Any, str], Any]:
        """What to replace: ``{(module, attribute name): replacement}`` (a subclass says)."""
        raise NotImplementedError

    def __enter__(self) -> Any:
        _forget(self.answer)   # a cached answer (functools.cache) is asked afresh on the simulated machine
        fakes = self.replacements()
        self._saved = [(module, name, getattr(module, name)) for (module, name) in fakes]
        originals = {id(original): (original, fakes[module, name]) for module, name, original in self._saved}
        for (module, name), replacement in fakes.items():
            setattr(module, name, replacement)
        self._rebound = []
        for namespace in _namespaces(self.answer):
            for key, value in list(namespace.items()):
                original, replacement = originals.get(id(value), (None, None))
                if original is not None and value is original:
                    self._rebound.append((namespace, key, value))
                    namespace[key] = replacement
        self._env = {name: os.environ.pop(name) for name in _COURSE_SETTINGS if name in os.environ}
        return self.entered()

    def entered(self) -> Any:
        """What ``with ... as x`` gives ``x`` (a subclass may say)."""
        return None

    def __exit__(self, *exc: Any) -> None:
        for namespace, key, original in reversed(self._rebound):
            namespace[key] = original
        for module, name, original in reversed(self._saved):
            setattr(module, name, original)
        os.environ.update(self._env)
        _forget(self.answer)   # and what it answered there is not kept for the real one


class simulated_no_accelerator(Patched):
    """Pretend, for a ``with`` block, that no accelerator is usable. Lets a check test the CPU
    branch of an answer on any machine. ``build`` is the accelerator PyTorch was built for: ``"cuda"`` mimics a CUDA
    build on a machine without a GPU (``current_accelerator()`` still names ``cuda`` unless ``check_available=True``),
    ``None`` a CPU-only build (it always returns None). The names the learner's ``answer`` imported are patched too.
    """

    def __init__(self, build: str | None = "cuda", answer: Any = None):
        self.build, self.answer = build, answer

    def replacements(self) -> dict[tuple[Any, str], Any]:
        def current_accelerator(check_available: bool = False) -> torch.device | None:
            return None if check_available or self.build is None else torch.device(self.build)

        def no_device(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("Cannot access accelerator device when none is available.")

        acc, cuda = torch.accelerator, torch.cuda
        fakes = {(acc, "is_available"): lambda: False, (acc, "current_accelerator"): current_accelerator,
                 (acc, "current_device_index"): no_device, (acc, "device_count"): lambda: 0,
                 (cuda, "is_available"): lambda: False, (cuda, "device_count"): lambda: 0,
                 (torch.backends.mps, "is_available"): lambda: False}
        if hasattr(torch, "xpu"):
            fakes[torch.xpu, "is_available"] = lambda: False
        return fakes


class simulated_accelerator(Patched):
    """Pretend, for the length of a ``with`` block, that the machine has an accelerator.

    ``torch.accelerator`` reports ``device`` as available and current, and ``torch.cuda.is_available()``
    reports False, so a check can tell device-agnostic answers from ones that hard-code CUDA, even on a
    CPU-only machine. On a machine with a real accelerator, checks should use that instead. ``device`` is the one
    reported (by default :func:`other_accelerator`); the names the learner's ``answer`` imported are patched too.
    """

    def __init__(self, device: str | torch.device | None = None, answer: Any = None):
        self.device, self.answer = torch.device(device or other_accelerator()), answer

    def replacements(self) -> dict[tuple[Any, str], Any]:
        acc, cuda = torch.accelerator, torch.cuda
        return {(acc, "is_available"): lambda: True,
                (acc, "current_accelerator"): lambda check_available=False: self.device,
                (acc, "current_device_index"): lambda: 0, (acc, "device_count"): lambda: 1,
                (cuda, "is_available"): lambda: False, (cuda, "device_count"): lambda: 0}

    def entered(self) -> torch.device:
        return self.device


@dataclass(frozen=True)
class Machine:
    """A machine a check makes an answer see, to test each branch of device-agnostic code on any machine: its
    ``name`` in feedback (``"a CPU-only build of PyTorch"``), whether ``torch.accelerator`` reports a usable
    ``accelerator`` (:func:`other_accelerator`, not CUDA), and without one, the ``build`` that
    ``current_accelerator()`` names."""

    name: str
    accelerator: bool = False
    build: str | None = None

    def simulate(self, answer: Any = None) -> Patched:
        """The ``with`` block in which ``answer`` (and all of PyTorch) sees this machine; ``as`` gives the
        simulated accelerator's device, or None."""
        if self.accelerator:
            return simulated_accelerator(answer=answer)
        return simulated_no_accelerator(self.build, answer=answer)


#: An accelerator that is not CUDA (:func:`other_accelerator`): a hard-coded ``"cuda"`` fails there, as on a Mac
#: with MPS.
OTHER_ACCELERATOR = Machine("an accelerator that is not CUDA, as on a Mac", accelerator=True)
#: No accelerator, on a CUDA build of PyTorch (pip's default): ``current_accelerator()`` still says ``cuda``.
NO_GPU_CUDA_BUILD = Machine("a CUDA build of PyTorch without a GPU", build="cuda")
#: No accelerator, on a CPU-only build of PyTorch: ``current_accelerator()`` is None.
CPU_ONLY_BUILD = Machine("a CPU-only build of PyTorch")
