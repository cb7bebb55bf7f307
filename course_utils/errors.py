"""The error catalogue: paste an error, get its cause, its fix and the lesson that teaches it.

::

    import course_utils as cu
    cu.explain_error(error)          # an exception, or the text you copied: one line or a whole traceback
    cu.explain_error(text).known     # False for anything that is not a device problem; it never guesses

:data:`FAMILIES` is the one source for everything the course says about these errors: the
explainer reads it, ``scripts/error_index.py`` turns it into ``docs/errors.md``, the tests check
every wording in it. :data:`LESSONS` says which lesson section teaches each family; families no
lesson teaches yet point to the appendix :data:`FIELD_GUIDE`.

Every ``wordings`` entry is a message exactly as PyTorch prints it (checked by a real run or
against PyTorch's source). This module imports nothing from the rest of the package, so any part
of it (``setup`` included) may use it.
"""
from __future__ import annotations

import html
import re
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = ["explain_error", "Explanation", "Family", "FAMILIES", "LESSONS", "FIELD_GUIDE", "family"]

#: The appendix for problems no lesson teaches yet.
FIELD_GUIDE = "08_field_guide"

#: Family key -> (notebook, section) that teaches it. Update here when a lesson starts teaching one.
LESSONS: dict[str, tuple[str, str]] = {
    "devices": ("06_mismatch_errors", "1. Meet the error"),
    "cuda-oom": ("05_device_attribute", "5. Device memory › Reading an out-of-memory error"),
    "mps-oom": (FIELD_GUIDE, "MPS out of memory"),
    "numpy": ("03_to_device", "8. NumPy lives on the CPU"),
    "device-assert": (FIELD_GUIDE, "Device-side asserts"),
    "module-prefix": (FIELD_GUIDE, "Checkpoints from DataParallel / DDP"),
    "fork": (FIELD_GUIDE, "CUDA in DataLoader workers"),
    "kernel-image": (FIELD_GUIDE, "A PyTorch built for other GPUs"),
    "mps-op": (FIELD_GUIDE, "Operators MPS lacks"),
    "index-device": ("06_mismatch_errors", "8. Where PyTorch does move a tensor for you"),
    "mps-float64": ("04_cuda", "8. Apple's GPU (MPS) is not CUDA"),
    "lengths": (FIELD_GUIDE, "Sequence lengths stay on the CPU"),
    "no-cuda": ("04_cuda", "1. `.cuda()`: a shortcut that only knows CUDA"),
    "ordinal": ("04_cuda", "4. `CUDA_VISIBLE_DEVICES`: GPUs renumbered"),
    "map-location": ("06_mismatch_errors", "7. Loading a GPU checkpoint on a machine without one"),
    "pin": ("07_transfer_cost", "4. Pinned memory and `non_blocking`"),
    "leaf": ("03_to_device", "Pitfalls"),
    "generator": (FIELD_GUIDE, "Default devices, samplers and generators"),
    "meta-data": ("06_mismatch_errors", "9. Checkpoints: safe loading, and big models without memory"),
}

_DEV = r"[A-Za-z_]+(?::\d+)?"          # cpu, cuda:0, mps, meta, xpu:1 ...
_WORD = r"[A-Za-z_][\w.]*"


@dataclass(frozen=True)
class Family:
    """One kind of error: how to recognise it, and what the course says about it.

    Attributes:
        key: short id, e.g. ``"devices"``.
        title: a few words for headings.
        patterns: regular expressions; any match recognises the family. Named groups ``arg``,
            ``op``, ``a`` (the odd tensor's device) and ``b`` (the device expected) are read.
        wordings: real messages, verbatim, each with where it was checked (docs and tests use them).
        cause: why it happens, in the course's words.
        fix: what to do.
        check: optional test of a match; a match it rejects is not this family (e.g. a dtype look-alike).
    """

    key: str
    title: str
    patterns: tuple[str, ...]
    wordings: tuple[tuple[str, str], ...]
    cause: str
    fix: str
    check: Optional[Callable[[dict], bool]] = None
    compiled: tuple = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", tuple(re.compile(p) for p in self.patterns))

    @property
    def lesson(self) -> str:
        """The lesson notebook and section that teach this family."""
        notebook, section = LESSONS.get(self.key, (FIELD_GUIDE, self.title))
        return f"{notebook}, section {section}" if notebook != FIELD_GUIDE else f"{notebook} (appendix): {section}"


def _type_device(text: str) -> str:
    """The device type inside a legacy type name: ``torch.cuda.FloatTensor`` -> ``cuda``."""
    low = text.lower()
    for name in ("cuda", "mps", "xpu", "meta", "mkldnn"):
        if name in low:
            return name
    return "cpu"


def _devices_differ(groups: dict) -> bool:
    """``Input type (X) and weight type (Y)``: a device problem only when X and Y name different devices."""
    a, b = _type_device(groups.get("ta") or ""), _type_device(groups.get("tb") or "")
    groups.update(a=a, b=b, arg="input")   # the input is on a, the layer's weight (the model) on b
    return a != b


FAMILIES: tuple[Family, ...] = (
    Family(
        "devices", "Tensors on different devices",
        (r"Expected all tensors to be on the same device, but found at least two devices, (?P<b>" + _DEV
         + r") and (?P<a>" + _DEV + r")!?(?: \(when checking argument for argument (?P<arg>\w+) in method (?P<op>\w+)\))?",
         r"Expected all tensors to be on the same device, but got (?P<arg>\w+) is on (?P<a>" + _DEV
         + r"), different from other tensors on (?P<b>" + _DEV + r")(?: \(when checking argument in method (?P<op>\w+)\))?",
         r"Expected object of device type (?P<b>\w+) but got device type (?P<a>\w+) for (?:argument #\d+|sequence "
         r"element \d+ in sequence argument at position #\d+) '(?P<arg>\w+)'(?: in call to (?P<op>\w+))?",
         r"Tensor on device (?P<a>" + _DEV + r") is not on the expected device (?P<b>" + _DEV + r")!",
         r"Input type \((?P<ta>[^()\n]{1,60})\) and (?P<param>weight|bias) type \((?P<tb>[^()\n]{1,60})\) should be the same",
         r"Tensor for argument #?\d*\s*'?(?P<arg>\w+)'? is on (?P<a>" + _DEV + r") but expected on (?P<b>" + _DEV + r")",
         r"Expected tensor for argument #\d+ '(?P<arg>\w+)' to have the same device as tensor for argument #\d+ "
         r"'(?P<arg2>\w+)'; but device (?P<a>\d+) does not equal (?P<b>\d+)(?: \(while checking arguments for (?P<op>\w+)\))?",
         r"Input and (?:parameter|hidden) tensors are not at the same device, found input tensor at (?P<a>" + _DEV
         + r") and (?P<what>parameter|hidden) tensor at (?P<b>" + _DEV + r")",
         r"Placeholder storage has not been allocated on (?P<b>MPS) device",
         r"Expected all tensors to be on the same device"),
        (("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
          "prefix verbatim in libtorch_cpu.so (PyTorch 2.7)"),
         ("Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on "
          "cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
          "aten/src/ATen/core/op_registration/adaption.cpp"),
         ("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when "
          "checking argument for argument mat1 in method wrapper_addmm)",
          "adaption.cpp before the per-argument wording (read in an older copy of the file)"),
         ("Expected object of device type cuda but got device type cpu for argument #1 'self' in call to _th_addmm",
          "checked_dense_tensor_unwrap, aten/src/ATen/Utils.h in PyTorch 1.x (read in old copies)"),
         ("Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same",
          "format fragments in libtorch_cpu.so (PyTorch 2.7); legacy type names as PyTorch 1.x prints them"),
         ("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same or input "
          "should be a MKLDNN tensor and weight is a dense tensor", "suffix verbatim in libtorch_cpu.so (PyTorch 2.7)"),
         ("Tensor for argument input is on cpu but expected on mps", "aten/src/ATen/native/mps/operations/Linear.mm"),
         ("Placeholder storage has not been allocated on MPS device!",
          "MPS backend; not in a Linux build, wording as many learner reports quote it"),
         ("Input and parameter tensors are not at the same device, found input tensor at cpu and parameter tensor "
          "at meta", "real run: nn.LSTM on meta, PyTorch 2.7 and 2.13"),
         ("Tensor on device cpu is not on the expected device meta!", "real run: PyTorch 2.7 and 2.13")),
        "One operation got tensors that live on different devices. PyTorch runs each operation on one device "
        "and never moves tensors for you (apart from a few edges: 0-dim CPU tensors, CPU index tensors), so "
        "the model's parameters, the input and anything made inside `forward` must all be on one device.",
        "Put everything on one device: move the model once with `model.to(device)` (in place) and each input "
        "with `x = x.to(device)` (`Tensor.to` returns a new tensor: keep the result). To see which tensor is "
        "where, run `cu.explain_devices(model, {\"x\": x})`.",
        check=lambda g: _devices_differ(g) if "ta" in g else True),
    Family(
        "cuda-oom", "CUDA out of memory",
        (r"CUDA out of memory\. Tried to allocate", r"torch\.(?:cuda\.)?OutOfMemoryError", r"CUDA error: out of memory"),
        (("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 14.74 GiB of which "
          "1.12 GiB is free.", "c10/cuda/CUDACachingAllocator.cpp (prefix in libc10_cuda.so, PyTorch 2.7)"),
         ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
          "torch.OutOfMemoryError, PyTorch 2.5 and newer"),
         ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
          "torch/cuda/__init__.py: OutOfMemoryError")),
        "The GPU has no room for a new tensor: the model, the activations kept for backward, the optimizer "
        "state and whatever you still hold a reference to (an old model, a loss with its graph) fill its memory.",
        "Make the batch smaller; drop what you no longer need (`del big`, then `torch.cuda.empty_cache()`); run "
        "evaluation under `torch.no_grad()`; accumulate `loss.item()` or `loss.detach()`, not `loss`; consider "
        "`torch.autocast`. `torch.cuda.memory_summary()` shows what is using the memory."),
    Family(
        "mps-oom", "MPS out of memory",
        (r"MPS backend out of memory",),
        (("MPS backend out of memory (MPS allocated: 17.92 GB, other allocations: 384.00 KB, max allowed: 18.13 GB). "
          "Tried to allocate 256.00 MB on private pool.", "aten/src/ATen/mps/MPSAllocator.mm (sizes illustrative)"),),
        "Your Mac's GPU shares memory with the rest of the system, and PyTorch stops an MPS allocation that "
        "would pass its limit (the high watermark).",
        "Make the batch smaller, free what you no longer need (`del big`, then `torch.mps.empty_cache()`), evaluate "
        "under `torch.no_grad()`. `PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0` lifts the limit, at the risk of "
        "slowing or freezing the whole machine."),
    Family(
        "numpy", "`.numpy()` on a tensor that is not on the CPU",
        (r"can't convert (?P<a>" + _DEV + r") device type tensor to numpy",),
        (("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
          "first.", "the format the meta run shows, with the device PyTorch names"),
         ("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
          "first.", "real run: PyTorch 2.7 and 2.13")),
        "NumPy arrays live in CPU memory. A tensor on a GPU (or on `meta`) has no CPU memory NumPy could "
        "share, so `.numpy()` refuses it.",
        "Copy it to the CPU first: `t.detach().cpu().numpy()` (`detach` too when it requires grad). Do this "
        "once, at the end: each copy waits for the GPU."),
    Family(
        "device-assert", "Device-side assert triggered",
        (r"device-side assert triggered",),
        (("CUDA error: device-side assert triggered", "CUDA runtime (libcudart.so.12) and libc10_cuda.so"),
         ("CUDA error: device-side assert triggered\nCUDA kernel errors might be asynchronously reported at some "
          "other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
          "CUDA_LAUNCH_BLOCKING=1", "c10/cuda/CUDAException.cpp (libc10_cuda.so, PyTorch 2.7)")),
        "A check inside a GPU kernel failed, most often an index out of range: a class label >= the number "
        "of classes (or negative) in a loss, or a token id >= the embedding size. GPU errors are reported "
        "late, so the line in the traceback may not be the one at fault, and the CUDA context is now broken.",
        "Restart the kernel (the GPU cannot recover in this process). Then check your labels and indices, "
        "e.g. `assert 0 <= y.min() and y.max() < num_classes`, or run the same step on the CPU, which names "
        "the bad index. `CUDA_LAUNCH_BLOCKING=1` makes the traceback point at the right line."),
    Family(
        "module-prefix", "`module.` prefix in a state_dict",
        (r'Unexpected key\(s\) in state_dict: "module\.', r'Missing key\(s\) in state_dict: "module\.'),
        (('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "weight", "bias". \n\t'
          'Unexpected key(s) in state_dict: "module.weight", "module.bias". ', "real run: PyTorch 2.7 and 2.13"),
         ('Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: "module.weight", '
          '"module.bias". \n\tUnexpected key(s) in state_dict: "weight", "bias". ',
          "real run: nn.DataParallel on a CPU, PyTorch 2.7 and 2.13")),
        "`nn.DataParallel` and `DistributedDataParallel` keep your model as `.module`, so a checkpoint saved "
        "from the wrapper has every key starting with `module.`, and a plain model does not know those names "
        "(or the other way round).",
        "Save `model.module.state_dict()` from a wrapped model. To load an old checkpoint into a plain model, "
        "strip the prefix: `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, \"module.\")`, "
        "then `model.load_state_dict(state)`; to load a plain one into a wrapper, use "
        "`wrapped.module.load_state_dict(state)`."),
    Family(
        "fork", "CUDA in a forked subprocess",
        (r"Cannot re-initialize CUDA in forked subprocess",),
        (("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the "
          "'spawn' start method", "torch/cuda/__init__.py"),),
        "CUDA was started in the main process, then a worker was made with `fork` (the Linux default, used "
        "by `DataLoader(num_workers>0)`); a forked child cannot use its parent's CUDA context. Usually a "
        "`Dataset` moves samples to the GPU in `__getitem__`.",
        "Keep `Dataset` and `collate_fn` on the CPU and move each batch to the GPU in the training loop "
        "(`x = x.to(device, non_blocking=True)` with `pin_memory=True`). If the workers truly need CUDA, "
        "use `DataLoader(..., multiprocessing_context=\"spawn\")`."),
    Family(
        "kernel-image", "No kernel image for this GPU",
        (r"no kernel image is available for execution on the device",),
        (("CUDA error: no kernel image is available for execution on the device", "CUDA runtime (libcudart.so.12)"),
         ("CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be "
          "asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
          "c10/cuda/CUDAException.cpp (libc10_cuda.so, PyTorch 2.7)")),
        "Your PyTorch build has no compiled code for this GPU's architecture: the GPU is too old or too new "
        "for that build.",
        "Compare `torch.cuda.get_device_capability()` with `torch.cuda.get_arch_list()`, then install a "
        "PyTorch build for your GPU and CUDA version (pytorch.org lists the commands)."),
    Family(
        "mps-op", "An operator MPS does not implement",
        (r"The operator '(?P<op>[\w:.]+)' is not currently implemented for the MPS device",),
        (("The operator 'aten::_linalg_solve_ex.result' is not currently implemented for the MPS device. If you "
          "want this op to be considered for addition please comment on https://github.com/pytorch/pytorch/issues/"
          "141287 and mention use-case, that resulted in missing op as well as commit hash "
          "<the build's commit hash>. As a temporary fix, you can set the environment variable "
          "`PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this will be slower "
          "than running natively on MPS.",
          "aten/src/ATen/mps/MPSFallback.mm (current wording; the message names the build's commit hash)"),
         ("The operator 'aten::nonzero' is not currently implemented for the MPS device. If you want this op to be "
          "added in priority during the prototype phase of this feature, please comment on "
          "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment "
          "variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this will "
          "be slower than running natively on MPS.", "MPSFallback.mm in PyTorch 1.13 to 2.5, as learners quote it")),
        "Apple's MPS backend does not have every PyTorch operator yet, and this one is missing.",
        "Set `PYTORCH_ENABLE_MPS_FALLBACK=1` before Python starts (or before `import torch`): that operator "
        "then runs on the CPU, slower, and the rest stays on MPS. Or run the whole step on the CPU. A newer "
        "PyTorch may have it."),
    Family(
        "index-device", "Index tensor on another device",
        (r"indices should be either on (?P<c>\w+) or on the same device as the indexed tensor(?: \((?P<b>" + _DEV + r")\))?",),
        (("indices should be either on cpu or on the same device as the indexed tensor (cuda:1)",
          "aten/src/ATen/native/TensorAdvancedIndexing.cpp (libtorch_cpu.so, PyTorch 2.7)"),),
        "You indexed a tensor with an index tensor on a different device. PyTorch moves a CPU index to the "
        "indexed tensor's device, but not an index that is on another accelerator, nor a GPU index into a "
        "CPU tensor.",
        "Make the index where the data is: `x[idx.to(x.device)]`, or create it there with "
        "`torch.arange(n, device=x.device)`."),
    Family(
        "mps-float64", "float64 on MPS",
        (r"Cannot convert a MPS Tensor to float64 dtype", r"MPS framework doesn't support float64",
         r"Trying to convert (?:Double|ComplexDouble) to the MPS backend"),
        (("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please use "
          "float32 instead.", "MPS backend (a TypeError); not in a Linux build, as many learner reports quote it"),
         ("Trying to convert Double to the MPS backend but it does not have support for that dtype.",
          "getMPSDataType, aten/src/ATen/native/mps/OperationUtils.mm (a TypeError: a float64 tensor made on MPS)")),
        "Apple's GPU has no float64. NumPy arrays are float64 by default, so `torch.from_numpy(a).to(\"mps\")` "
        "is the usual way in.",
        "Convert and move in one call: `t.to(device, torch.float32)`, or make the array float32 first "
        "(`a.astype(np.float32)`)."),
    Family(
        "lengths", "Sequence lengths not on the CPU",
        (r"'lengths' argument should be a 1D CPU int64 tensor, but got (?P<shape>\w+) (?P<a>" + _DEV
         + r") (?P<dtype>\w+) tensor",
         r"'lengths' argument should be a 1D CPU int64 tensor"),
        (("'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor",
          "aten/src/ATen/native/PackedSequence.cpp (libtorch_cpu.so, PyTorch 2.7)"),
         ("'lengths' argument should be a 1D CPU int64 tensor, but got 1D meta Long tensor",
          "real run: PyTorch 2.7 and 2.13")),
        "`pack_padded_sequence` reads the lengths on the CPU to plan the packing, so `lengths` must be a CPU "
        "int64 tensor (or a list), even when the sequences are on the GPU. Moving every tensor of a batch to "
        "the GPU moves the lengths too.",
        "Keep `lengths` on the CPU: `pack_padded_sequence(x, lengths.cpu(), batch_first=True, "
        "enforce_sorted=False)`. Only the padded sequences go to the GPU."),
    Family(
        "no-cuda", "No CUDA in this PyTorch or on this machine",
        (r"Torch not compiled with CUDA enabled", r"Found no NVIDIA driver on your system", r"No CUDA GPUs are available",
         r"Cannot access accelerator device when none is available"),
        (("Torch not compiled with CUDA enabled", "real run: PyTorch 2.13 CPU build (an AssertionError)"),
         ("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver "
          "from http://www.nvidia.com/Download/index.aspx", "real run: PyTorch 2.7 CUDA build without a GPU"),
         ("Cannot access accelerator device when none is available.",
          "real run: `pin_memory()`, PyTorch 2.13 CPU build")),
        "The code asks for CUDA (`.cuda()`, `device=\"cuda\"`, `pin_memory()`), but this PyTorch was built "
        "without CUDA, or this machine has no NVIDIA GPU or driver: `torch.cuda.is_available()` is False.",
        "Write device-agnostic code: `device = torch.accelerator.current_accelerator() if "
        "torch.accelerator.is_available() else torch.device(\"cpu\")` (or `cu.best_device()`), then "
        "`.to(device)`. For a GPU: on Colab, Runtime -> Change runtime type; on your machine, install a CUDA "
        "build of PyTorch."),
    Family(
        "ordinal", "Invalid device ordinal",
        (r"invalid device ordinal",),
        (("CUDA error: invalid device ordinal", "CUDA runtime (libcudart.so.12) and libc10_cuda.so"),
         ("CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other "
          "API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
          "CUDA_LAUNCH_BLOCKING=1", "c10/cuda/CUDAException.cpp (lines verbatim in libc10_cuda.so, PyTorch 2.7)")),
        "You asked for a GPU index that does not exist here, e.g. `cuda:1` on a one-GPU machine. Indices "
        "count from 0, and `CUDA_VISIBLE_DEVICES` renumbers the GPUs a process can see.",
        "Check `torch.cuda.device_count()` and use an index below it, or plain `\"cuda\"` (the current device). "
        "Loading a checkpoint saved on another GPU? `torch.load(path, map_location=\"cuda:0\")`."),
    Family(
        "map-location", "Loading a GPU checkpoint without a GPU",
        (r"Attempting to deserialize object on (?:a )?(?P<b>[A-Z]+) device",),
        (("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are "
          "running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
          "storages to the CPU.", "real run: PyTorch 2.7 and 2.13"),
         ("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1. Please use "
          "torch.load with map_location to map your storages to an existing device.", "torch/serialization.py")),
        "`torch.save` records each tensor's device, and `torch.load` puts tensors back there. This checkpoint "
        "was saved on a GPU, and this machine cannot use one.",
        "Say where the tensors should go: `torch.load(path, map_location=\"cpu\")` (or `map_location=device`), "
        "then `model.load_state_dict(state)` and `model.to(device)`."),
    Family(
        "pin", "Pinning a tensor that is not on the CPU",
        (r"cannot pin '(?P<type>[\w.]+)' only dense CPU tensors can be pinned",),
        (("cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned",
          "suffix verbatim in libtorch_cpu.so (PyTorch 2.7); legacy type name as learner reports quote it"),
         ("cannot pin 'MetaFloatType' only dense CPU tensors can be pinned", "real run: PyTorch 2.7 and 2.13")),
        "Pinned (page-locked) memory is CPU memory that a GPU can copy from directly. A tensor already on "
        "the GPU (or a sparse one) cannot be pinned; often `pin_memory=True` meets batches a `Dataset` "
        "already moved to the GPU.",
        "Pin CPU tensors only: keep the `Dataset` on the CPU, let `DataLoader(..., pin_memory=True)` pin, "
        "and move each batch with `x.to(device, non_blocking=True)`."),
    Family(
        "leaf", "A moved tensor is not a leaf",
        (r"you can only change requires_grad flags of leaf variables", r"can't optimize a non-leaf Tensor"),
        (("you can only change requires_grad flags of leaf variables. If you want to use a computed variable in "
          "a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
          "real run: PyTorch 2.7 and 2.13"),
         ("can't optimize a non-leaf Tensor", "real run: torch.optim.SGD, PyTorch 2.7 and 2.13")),
        "`t.to(device)` and `t.cuda()` on a tensor that requires grad return the *result* of a move, with a "
        "`grad_fn`: not a leaf. You cannot switch its `requires_grad`, and an optimizer refuses it.",
        "Create the tensor on the device: `torch.randn(3, device=device, requires_grad=True)`, or move "
        "first and ask for grad after: `w = torch.randn(3).to(device).requires_grad_()`. For a model, "
        "`model.to(device)` keeps its parameters leaves."),
    Family(
        "generator", "Generator on the wrong device (often a default device and a DataLoader)",
        (r"Expected a '(?P<b>\w+)' device type for generator but found '(?P<a>\w+)'",),
        (("Expected a 'cuda' device type for generator but found 'cpu'",
          "check_generator, aten/src/ATen/core (libtorch_cpu.so, PyTorch 2.7)"),
         ("Expected a 'mps' device type for generator but found 'cpu'", "the same check, on a Mac")),
        "A random-number generator on one device type drew numbers for another. Usually "
        "`torch.set_default_device(\"cuda\")` is at work: a shuffling `DataLoader`'s sampler then draws "
        "its permutation on the GPU with a CPU generator. Or a `torch.Generator()` made on the CPU is used "
        "for GPU tensors.",
        "Don't set a default device for the whole program: restore it with `torch.set_default_device(None)` "
        "before making and iterating the DataLoader, and move each batch with `.to(device)`. A generator you "
        "pass yourself must be on the device that draws: `torch.Generator(device=device)`."),
    Family(
        "meta-data", "A meta tensor has no data",
        (r"Tensor\.item\(\) cannot be called on meta tensors", r"Cannot copy out of meta tensor; no data!"),
        (("Tensor.item() cannot be called on meta tensors", "real run: PyTorch 2.7 and 2.13"),
         ("Cannot copy out of meta tensor; no data!", "real run: `.cpu()` / `.tolist()`, PyTorch 2.7 and 2.13")),
        "Tensors on `meta` have a shape, a dtype and a device but no values, so nothing can read them "
        "(`.item()`, `print`, `.cpu()`). If a `DataLoader` raised it, `torch.set_default_device(\"meta\")` "
        "made its sampler draw on `meta`.",
        "Make the tensor on a real device. For a model built on meta, `model.to_empty(device=device)` then "
        "`model.load_state_dict(...)`. Reset a default device with `torch.set_default_device(None)`."),
)

def family(key: str) -> Family:
    """The :class:`Family` with this key (``KeyError`` if there is none)."""
    for f in FAMILIES:
        if f.key == key:
            return f
    raise KeyError(key)


@dataclass
class Explanation:
    """What :func:`explain_error` found. Display it in a notebook, print it in a terminal.

    Attributes:
        known: True when the message is a device problem the course explains.
        key: the family's key (``""`` when unknown).
        title: the family's title.
        cause: why it happened, with what your message says.
        fix: what to do.
        lesson: the lesson notebook and section that teach it.
        message: the line of your error that was recognised.
        argument: the argument the message names (``"mat1"``, ``"weight"``, ``"lengths"``...), or ``""``.
        op: the operation the message names (``"wrapper_CUDA_addmm"``...), or ``""``.
        devices: the devices the message names, odd one first when it says which.
    """

    known: bool
    key: str = ""
    title: str = ""
    cause: str = ""
    fix: str = ""
    lesson: str = ""
    message: str = ""
    argument: str = ""
    op: str = ""
    devices: tuple[str, ...] = ()

    def text(self) -> str:
        """Plain text for terminals and logs."""
        if not self.known:
            return ("Not a device error the course knows: " + (f"“{self.message}”. " if self.message else "")
                    + "This explainer only recognises device problems (tensors on different devices, GPU "
                    "memory, moving data between devices); dtype and shape errors are not among them, so "
                    "it has nothing to say rather than a guess.")
        return "\n".join([f"Device error: {self.title}", f"  You got: {self.message}", f"Cause: {self.cause}",
                          f"Fix: {self.fix}", f"Learn more: {self.lesson}"])

    __str__ = text

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        if not self.known:
            return f"<div class='course-error-help' style='color:#868e96'>{html.escape(self.text())}</div>"
        rows = [("You got", f"<code>{html.escape(self.message)}</code>"), ("Cause", _code_html(self.cause)),
                ("Fix", _code_html(self.fix)), ("Learn more", _code_html(self.lesson))]
        body = "".join(f"<div><b>{k}:</b> {v}</div>" for k, v in rows)
        return (f"<div class='course-error-help' style='border-left:6px solid #1c7ed6;padding:6px 10px;"
                f"background:rgba(128,128,128,.08);margin:4px 0'><b>Device error: {_code_html(self.title)}</b>"
                f"{body}</div>")


def _code_html(text: str) -> str:
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


# --- reading what was pasted -----------------------------------------------------------------------

_MAX_CHARS = 1_000_000      # past this only the end is read: the message that matters is last
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")   # colours in a traceback copied from a terminal or notebook


def _safe_str(value: Any) -> str:
    try:
        text = str(value)
        return text if isinstance(text, str) else ""
    except Exception:
        return ""


def _text_of(error: Any) -> str:
    """The text to read: an exception's type, message and traceback, a pasted string, or bytes."""
    if isinstance(error, str):
        return error
    if isinstance(error, (bytes, bytearray, memoryview)):
        return bytes(error[-_MAX_CHARS:]).decode("utf-8", errors="replace")
    if isinstance(error, BaseException):
        message = _safe_str(error)
        if not message:
            try:
                message = " ".join(_safe_str(a) for a in error.args[:5])
            except Exception:
                message = ""
        kind = type(error)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        text = f"{name}: {message}"
        try:  # the frames matter for a few families (a DataLoader's sampler); never fail on them
            frames = "".join(traceback.format_tb(error.__traceback__, limit=30)) if error.__traceback__ else ""
        except Exception:
            frames = ""
        return frames + text
    return _safe_str(error)


def explain_error(error: Any) -> Explanation:
    """Explain a device error: its cause, its fix and the lesson that teaches it.

    Args:
        error: an exception, or the text you copied: a bare message or a whole traceback, from any
            PyTorch version, any device. Bytes and other objects are read as text.

    Returns:
        An :class:`Explanation`. ``.known`` is False for anything that is not a device problem the
        course explains (dtype and shape errors included): it says so instead of guessing. It never raises.
    """
    try:
        text = _text_of(error)
        if len(text) > _MAX_CHARS:
            text = text[-_MAX_CHARS:]
        return _explain(_ANSI.sub("", text) if "\x1b" in text else text)
    except Exception:  # the explainer must never be the thing that fails
        return Explanation(known=False)


def _explain(text: str) -> Explanation:
    best = None  # (start, end, -rank), family, groups, match
    for rank, fam in enumerate(FAMILIES):
        for pattern in fam.compiled:
            for m in pattern.finditer(text):
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                if fam.check is not None and not fam.check(groups):
                    continue
                # the last match wins (a traceback ends with its error); at one place, the fullest match
                key = (m.start(), m.end(), -rank)
                if best is None or key > best[0]:
                    best = (key, fam, groups, m)
    if best is None:
        return Explanation(known=False, message=_last_line(text))
    _, fam, groups, m = best
    return _tailor(fam, groups, _line_around(text, m), text)


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return _short(line.strip())
    return ""


def _line_around(text: str, m: re.Match) -> str:
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.end())
    line = text[start:end if end >= 0 else len(text)].strip()
    return _short(line)


def _short(line: str, limit: int = 600) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


# --- what the message tells: argument, devices, direction ------------------------------------------

_DATA_ARGS = {"mat1", "input", "batch1", "query", "key", "value", "x"}
_PARAM_ARGS = {"weight", "mat2", "bias", "batch2", "hx", "cx", "parameter", "hidden"}


def _host(device: str) -> bool:
    return device.split(":")[0] == "cpu"


def _tailor(fam: Family, g: dict, line: str, text: str) -> Explanation:
    arg, op = g.get("arg", ""), g.get("op", "")
    a, b = (g.get("a") or "").lower(), (g.get("b") or "").lower()
    cause, fix = fam.cause, fam.fix
    devices = tuple(d for d in (a, b) if d)
    if fam.key == "devices":
        if "arg2" in g:   # legacy cudnn wording: two GPU indices
            devices = (f"cuda:{g['a']}", f"cuda:{g['b']}")
            a, b = devices
        if g.get("what"):
            arg = "input"
        elif not arg and "found at least two devices" in line:
            devices = (b, a)  # no argument named: keep the message's order
        odd_known = bool(arg) or "found at least two devices" not in line
        said, fix = _devices_detail(arg, op, a, b, fam.fix, odd_known)
        cause = f"{said} {fam.cause.split('. ', 1)[1]}" if said else fam.cause
    elif fam.key == "numpy" and a == "meta":
        fix = ("A meta tensor has no values, so there is nothing to convert, even after `.cpu()`: make the tensor "
               "on a real device (`device=\"cpu\"`), then `t.detach().numpy()`.")
    elif fam.key == "numpy" and a:
        cause = f"Your tensor is on {a}. {fam.cause}"
    elif fam.key == "lengths" and a:
        cause = f"Your `lengths` are on {a}. {fam.cause}"
    elif fam.key == "map-location" and "device_count()" in line:
        cause = ("`torch.save` records each tensor's device, and `torch.load` puts tensors back there. This "
                 "checkpoint was saved on a GPU index this machine does not have.")
        fix = "Say where the tensors should go: `torch.load(path, map_location=\"cuda:0\")` (or `map_location=device`)."
    elif fam.key == "mps-op" and op:
        cause = (f"`{op}` is not implemented for MPS in your PyTorch. Apple's MPS backend does not have every "
                 "operator yet.")
    elif fam.key == "module-prefix":
        if 'Unexpected key(s) in state_dict: "module.' not in text:  # the model is wrapped, the checkpoint not
            fix = ("Your model is wrapped (`DataParallel` / DDP) and the checkpoint is not: load it into the "
                   "inner model, `model.module.load_state_dict(state)`.")
        else:
            fix = ("The checkpoint was saved from a `DataParallel` / DDP wrapper: strip the prefix, "
                   "`torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, \"module.\")`, then "
                   "`model.load_state_dict(state)`. Next time save `model.module.state_dict()`.")
    elif fam.key == "generator" and a and b:
        cause = f"A generator on {a} drew numbers for {b}. " + fam.cause.split(". ", 1)[1]
        if _from_dataloader(text):
            cause = (f"A shuffling `DataLoader` drew its permutation on {b} with its generator on {a}: "
                     f"`torch.set_default_device(\"{b}\")` (or a `with torch.device(...)` block) is in effect.")
    elif fam.key == "meta-data" and _from_dataloader(text):
        cause = ("A shuffling `DataLoader` drew its random seed on `meta`, where tensors have no values: "
                 "`torch.set_default_device(\"meta\")` (or a `with torch.device(\"meta\")` block) is in effect.")
        fix = ("Reset the default device before making and iterating the DataLoader: "
               "`torch.set_default_device(None)`, and create tensors on a device with `device=` instead.")
    return Explanation(True, fam.key, fam.title, cause, fix, fam.lesson, line, arg, op, devices)


def _from_dataloader(text: str) -> bool:
    low = text.lower()
    return "sampler" in low or "dataloader" in low or "utils/data" in low or "utils\\data" in low


def _devices_detail(arg: str, op: str, a: str, b: str, fix: str, odd_known: bool) -> tuple[str, str]:
    """(what the message says, the fix for that direction) for a device mismatch."""
    where = f" in `{op}`" if op else ""
    if not (a and b):
        if b:
            return (f"A tensor that should be on {b} is not (usually the input is still on the CPU).",
                    f"Move the input to {b} with the model: `x = x.to(\"{b}\")`; if the model is the one on the "
                    "CPU, `model.to(device)`. " + fix.split(". ", 1)[1])
        return "", fix
    if arg in _DATA_ARGS:
        data, model = a, b
    elif arg in _PARAM_ARGS:
        data, model = b, a
    elif arg in ("target", "labels"):
        return (f"Your labels (`{arg}`) are on {a}, the model's output on {b}{where}.",
                f"Move the labels to where the output is: `y = y.to(\"{b}\")` (keep the result). " + fix)
    elif arg in ("index", "indices"):
        return (f"The index tensor (`{arg}`) is on {a}, the tensor it indexes on {b}{where}.",
                f"Make the index where the data is: `idx = idx.to(\"{b}\")`, or create it with `device=`.")
    elif arg:
        return (f"Argument `{arg}` is on {a}, the other tensors on {b}{where}.",
                f"Move what `{arg}` is to {b}, or the rest to {a}: every tensor of one call on one device. " + fix)
    elif odd_known:   # which of the two is the model, the message does not say
        return (f"A tensor on {a} met tensors on {b} in one operation, which expected {b}.",
                "Put the model and its inputs on one device: `model.to(device)` (in place) and "
                "`x = x.to(device)` (keep the result). `cu.explain_devices(model, {\"x\": x})` shows which "
                f"tensor is on {a} and which on {b}.")
    else:
        return (f"Your message names two devices, {b} and {a}, but not which tensor is where.", fix)
    said = f"Your model is on {model}, your input{f' (`{arg}`)' if arg else ''} on {data}{where}."
    if not _host(model) and model != data:
        return said, (f"Move the input to the model's device: `x = x.to(\"{model}\")` (`Tensor.to` returns a new "
                      "tensor: keep the result), and every other input too.")
    return said, (f"Move the model to where the data is, `model.to(\"{data}\")` (in place), or the data to the "
                  f"CPU; usually you want both on the accelerator.")
