"""The GPU simulations, with one public face: the simulated GPU, a device of the course's own whose tensors hold real
values and raise what a CUDA GPU raises (:mod:`.backend`); the CUDA rules it follows, per PyTorch release
(:mod:`.rules`); and the simulated machines the checks make an answer see (:mod:`.machines`). The rest of the course
uses the names below, never the simulated GPU's tensor type."""
from __future__ import annotations

from .backend import (COUNT, NAME, NOTE, available, current, enable, host, is_enabled, is_sim_tensor, is_simulated,
                      wanted)
from .machines import (CPU_ONLY_BUILD, NO_GPU_CUDA_BUILD, OTHER_ACCELERATOR, Machine, Patched, other_accelerator,
                       simulated_accelerator, simulated_no_accelerator)
from .rules import Refusal, elementwise_message, judge, op_key, per_argument_message

__all__ = ["COUNT", "NAME", "NOTE", "available", "current", "enable", "host", "is_enabled", "is_sim_tensor",
           "is_simulated", "wanted", "CPU_ONLY_BUILD", "NO_GPU_CUDA_BUILD", "OTHER_ACCELERATOR", "Machine", "Patched",
           "other_accelerator", "simulated_accelerator", "simulated_no_accelerator", "Refusal", "elementwise_message",
           "judge", "op_key", "per_argument_message"]
