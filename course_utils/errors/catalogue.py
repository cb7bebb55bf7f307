"""The catalogue: every device-error family the course explains, in the order the explainer ranks them.

:data:`FAMILIES` is the one source for everything the course says about these errors: the explainer reads it,
``scripts/error_index.py`` turns it into ``docs/errors.md``, the tests check every wording in it. Every
:class:`~course_utils.errors.schema.Wording` is a message exactly as PyTorch prints it, with the PyTorch versions
that print it and where that was checked (a build's string table, PyTorch's source, a real run). What only a GPU
or a Mac prints, and was not run on one, says so. The families of tensors on different devices come first, from
:mod:`~course_utils.errors.mixed_devices`; the rest follow here.
"""
from __future__ import annotations

from .mixed_devices import MIXED_DEVICES
from .schema import ALL_CHECKED, DEV, MAC_SOURCE, Family, Wording
from .tailors import (GENERATOR_RULE, SEE_WHERE, not_none, tailor_generator, tailor_lengths, tailor_map_location,
                      tailor_meta_data, tailor_module_prefix, tailor_mps_op, tailor_no_cuda, tailor_no_device,
                      tailor_no_to, tailor_numpy, tailor_oom)

__all__ = ["FAMILIES", "family"]

_TORCH_CUDA = "torch/cuda/__init__.py"
_TO_HOST = r"(?:\. Use Tensor\.cpu\(\) to copy the tensor to host memory first)"

FAMILIES: tuple[Family, ...] = MIXED_DEVICES + (
    Family(
        "cuda-oom", "CUDA out of memory",
        (r"CUDA out of memory\. Tried to allocate", r"torch\.(?:cuda\.)?OutOfMemoryError",
         r"CUDA error: out of memory"),
        (Wording("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                 "of 14.74 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 13.61 GiB "
                 "memory in use. Of the allocated memory 13.20 GiB is allocated by PyTorch, and 287.42 MiB is "
                 "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                 "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
                 "2.7 as quoted (sizes are your GPU's; newer versions end with another link); the class is "
                 "torch.OutOfMemoryError from 2.5",
                 "c10/cuda/CUDACachingAllocator.cpp; \"CUDA out of memory. Tried to allocate \" in libc10_cuda.so "
                 "2.7, 2.8, 2.14"),
         Wording("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total "
                 "capacity; 6.51 GiB already allocated; 5.06 MiB free; 6.62 GiB reserved in total by PyTorch) If "
                 "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
                 "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                 "1.x and early 2.x (learner reports; not checked in a build)",
                 "the older CUDACachingAllocator.cpp wording, as most answers online quote it"),
         Wording("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
                 "the start of every CUDA out-of-memory message since 2.5", "torch.OutOfMemoryError")),
        "The GPU has no room for one more tensor. The usual reasons: a batch too large for the model; evaluation "
        "or inference without `torch.no_grad()`, which keeps every layer's activations for a backward that never "
        "comes; a running total of `loss` that keeps each step's graph; a checkpoint loaded without "
        "`map_location`, which puts tensors saved from GPU 0 back on GPU 0 (on a machine with several GPUs, in "
        "every process); another process on the same GPU (`nvidia-smi` lists them).",
        "Make the batch smaller; run evaluation under `torch.no_grad()` (`model.eval()` alone still records the "
        "graph); accumulate `loss.item()` or `loss.detach()`, not `loss`; load checkpoints with "
        "`torch.load(path, map_location=device)` (or `\"cpu\"`); `del` what you no longer need; consider "
        "`torch.autocast`. To retry with "
        "a smaller batch, catch the error and recover after the `except` block, not inside it: the exception "
        "keeps the failed step's tensors alive until the block ends (PyTorch FAQ). `torch.cuda.empty_cache()` "
        "does not help: the caching allocator already frees its cached blocks and retries before it raises. "
        "`torch.cuda.memory_summary()` shows what is using the memory.",
        tailor=tailor_oom),
    Family(
        "mps-oom", "MPS out of memory",
        (r"MPS backend out of memory",),
        (Wording("MPS backend out of memory (MPS allocated: 17.92 GB, other allocations: 384.00 KB, max allowed: "
                 "18.13 GB). Tried to allocate 256.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to "
                 "disable upper limit for memory allocations (may cause system failure).",
                 MAC_SOURCE + " (sizes illustrative)",
                 "aten/src/ATen/mps/MPSAllocator.mm, with the default high watermark"),),
        "Your Mac's GPU shares memory with the rest of the system, and PyTorch stops an MPS allocation that "
        "would pass its limit (the high watermark).",
        "Make the batch smaller, evaluate under `torch.no_grad()`, `del` what you no longer need. "
        "`torch.mps.empty_cache()` does not help here: the allocator already releases its cached buffers and "
        "retries before it raises. `PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0` (set before Python starts) lifts the "
        "limit, at the risk of slowing or freezing the whole machine."),
    Family(
        "numpy", "`.numpy()` on a tensor that is not on the CPU",
        (r"can't convert (?P<a>" + DEV + r")(?: device type)? tensor to numpy" + _TO_HOST + "?",
         r"to numpy" + _TO_HOST),
        (Wording("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                 "memory first.", "CUDA; " + ALL_CHECKED,
                 "torch/csrc/utils/tensor_numpy.cpp: format in libtorch_python.so 2.7, 2.8, 2.14; the device as the "
                 "meta run shows it"),
         Wording("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
                 "first.", ALL_CHECKED, "real run (2.7, 2.13)"),
         Wording("can't convert CUDA tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
                 "1.x (before the device-type wording)", "tensor_numpy.cpp in an old copy of PyTorch's source")),
        "NumPy arrays live in CPU memory. A tensor on a GPU (or on `meta`) has no CPU memory NumPy could "
        "share, so `.numpy()` refuses it.",
        "Copy it to the CPU first: `t.detach().cpu().numpy()` (`detach` too when it requires grad). Do this "
        "once, at the end: each copy waits for the GPU.",
        tailor=tailor_numpy),
    Family(
        "numpy-grad", "`.numpy()` on a tensor that requires grad",
        (r"Can't call numpy\(\) on (?:Tensor|Variable) that requires grad",),
        (Wording("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.", ALL_CHECKED,
                 "verbatim in libtorch_python.so 2.7, 2.8, 2.14; real run (2.13)"),
         Wording("Can't call numpy() on Variable that requires grad. Use var.detach().numpy() instead.",
                 "1.x", "tensor_numpy.cpp in an old copy of PyTorch's source")),
        "NumPy knows nothing of autograd, so PyTorch will not hand it a tensor that is part of the graph "
        "without being told to leave the graph.",
        "Leave the graph first, and copy to the CPU if needed: `t.detach().cpu().numpy()` works for any tensor "
        "on any real device.",
        device_problem=False),
    Family(
        "no-to", "`.to` on something that is not a tensor or a module",
        (r"'(?P<type>[\w.]+)' object has no attribute '(?P<attr>to|cuda)'",),
        (Wording("'dict' object has no attribute 'to'", "every Python and PyTorch version",
                 "Python's own AttributeError (real run, 2.13)"),
         Wording("'collections.OrderedDict' object has no attribute 'to'",
                 "every version: `torch.load(path).to(device)` on a state dict", "Python's own AttributeError"),
         Wording("'numpy.ndarray' object has no attribute 'to'", "every version", "real run (2.13)")),
        "Only tensors and modules have `.to` and `.cuda`. A dict or list of tensors (a batch, a state dict) is "
        "a container: it has no device of its own.",
        "Move each tensor in it: `batch = {k: v.to(device) for k, v in batch.items()}` (for a list, "
        "`[t.to(device) for t in batch]`). A state dict needs no moving: `model.load_state_dict(state)` copies "
        "each tensor onto its parameter's device (or load it with `torch.load(path, map_location=device)`).",
        check=not_none, tailor=tailor_no_to),
    Family(
        "no-device", "A module (or a container) has no `.device`",
        (r"'(?P<type>[\w.]+)' object has no attribute 'device'",),
        (Wording("'Linear' object has no attribute 'device'", ALL_CHECKED,
                 "nn.Module.__getattr__, torch/nn/modules/module.py 2.7, 2.8, 2.14; real run (2.13)"),),
        "`.device` belongs to tensors (and so to parameters and buffers). A module has none: its tensors may "
        "be on several devices, or it may have none at all.",
        "Ask one of its tensors, `next(model.parameters()).device` (a module without parameters raises "
        "StopIteration), or better, keep the `device` you moved the model to and use it.",
        check=not_none, tailor=tailor_no_device),
    Family(
        "module-init", "A module used before `super().__init__()`",
        (r"cannot assign (?:module|parameters?|buffer) before Module\.__init__\(\) call",),
        (Wording("cannot assign module before Module.__init__() call", ALL_CHECKED,
                 "torch/nn/modules/module.py in 2.7, 2.8, 2.14; real run (2.13)"),
         Wording("cannot assign parameter before Module.__init__() call", ALL_CHECKED, "torch/nn/modules/module.py")),
        "`nn.Module.__init__` creates the registries that hold parameters, buffers and submodules (the ones "
        "`Module.to` moves). A subclass whose `__init__` does not call it first cannot hold a layer.",
        "Make `super().__init__()` the first line of your model's `__init__`.",
        device_problem=False),
    Family(
        "device-assert", "Device-side assert triggered",
        (r"device-side assert triggered",),
        (Wording("CUDA error: device-side assert triggered", "CUDA; every version",
                 "CUDA runtime (libcudart.so.12) and libc10_cuda.so"),
         Wording("CUDA error: device-side assert triggered\nCUDA kernel errors might be asynchronously reported at "
                 "some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
                 "CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                 "2.7 as quoted; 2.8 and newer raise it as torch.AcceleratorError",
                 "c10/cuda/CUDAException.cpp: lines verbatim in libc10_cuda.so 2.7 and 2.8; AcceleratorError in "
                 "libtorch_python.so 2.8 and 2.14, not 2.7"),
         Wording("CUDA error: device-side assert triggered\nSearch for `cudaErrorAssert' in "
                 "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n"
                 "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
                 "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1",
                 "2.14 (a torch.AcceleratorError)",
                 "c10/cuda/CUDAException.cpp: \"' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__"
                 "TYPES.html for more information\" and the last two lines in libc10_cuda.so 2.14, and no "
                 "`Compile with` line there (the short `Search for` is not a string of its own)")),
        "A check inside a GPU kernel failed, most often an index out of range: a class label >= the number "
        "of classes (or negative, other than the loss's `ignore_index`) given to a loss, or a token id >= the "
        "embedding size. GPU errors are reported late, so the line in the traceback may not be the one at "
        "fault, and the CUDA context is now broken.",
        "Restart the kernel (the GPU cannot recover in this process). Then find the bad value: run the same "
        "step on the CPU, which names it (`Target 5 is out of bounds.`), or check that "
        "`y[(y != -100) & ((y < 0) | (y >= num_classes))]` is empty (-100 is the default `ignore_index` of "
        "`CrossEntropyLoss` and `NLLLoss`: the kernels skip it, so it is allowed). `CUDA_LAUNCH_BLOCKING=1` "
        "makes the traceback point at the right line."),
    Family(
        "label-range", "A label or index out of range (the CPU's version of a device-side assert)",
        (r"Target -?\d+ is out of bounds", r"index out of range in self"),
        (Wording("Target 5 is out of bounds.", ALL_CHECKED,
                 "aten/src/ATen/native/LossNLL.cpp: \" is out of bounds.\" in libtorch_cpu.so 2.7, 2.8, 2.14; real "
                 "run (2.13)"),
         Wording("index out of range in self", ALL_CHECKED,
                 "an nn.Embedding given an id >= its size: verbatim in libtorch_cpu.so 2.7, 2.8, 2.14; real "
                 "run (2.13)")),
        "A value used as an index is outside its range: a class label outside `0 .. num_classes - 1` given to a loss "
        "(the loss's `ignore_index`, -100 by default, is skipped and allowed), or a token id at least as large as an "
        "`nn.Embedding`. The CPU names the bad value; on a GPU the same mistake is a device-side assert.",
        "Find the bad values and fix the data (or the number of classes, or `num_embeddings`): "
        "`y[(y != -100) & ((y < 0) | (y >= num_classes))]` for labels, `ids[ids >= emb.num_embeddings]` for "
        "an embedding.",
        device_problem=False),
    Family(
        "module-prefix", "`module.` prefix in a state_dict",
        (r'Unexpected key\(s\) in state_dict: "module\.', r'Missing key\(s\) in state_dict: "module\.',
         r"""unexpected key "module\.[\w.]*" in state_dict"""),
        (Wording('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "weight", "bias". \n\t'
                 'Unexpected key(s) in state_dict: "module.weight", "module.bias". ', ALL_CHECKED,
                 "real run (2.7, 2.13); torch/nn/modules/module.py in 2.7, 2.8, 2.14"),
         Wording('Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: "module.weight", '
                 '"module.bias". \n\tUnexpected key(s) in state_dict: "weight", "bias". ', ALL_CHECKED,
                 "real run: nn.DataParallel on a CPU (2.7, 2.13)"),
         Wording("""unexpected key "module.conv1.weight" in state_dict""",
                 "0.x (a KeyError, before the Error(s) wording; learner reports)", "learner reports")),
        "`nn.DataParallel` and `DistributedDataParallel` keep your model as `.module`, so a checkpoint saved "
        "from the wrapper has every key starting with `module.`, and a plain model does not know those names "
        "(or the other way round).",
        "Save `model.module.state_dict()` from a wrapped model. To load an old checkpoint into a plain model, "
        "strip the prefix: `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, \"module.\")`, "
        "then `model.load_state_dict(state)`; to load a plain one into a wrapper, use "
        "`wrapped.module.load_state_dict(state)`.",
        tailor=tailor_module_prefix),
    Family(
        "fork", "CUDA in a forked subprocess",
        (r"Cannot re-initialize CUDA in forked subprocess",),
        (Wording("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the "
                 "'spawn' start method", "CUDA; " + ALL_CHECKED, _TORCH_CUDA + " in 2.7, 2.8, 2.14"),),
        "CUDA was started in the main process, then a worker was made with `fork` (the default start method "
        "on Linux up to Python 3.13; Python 3.14 uses `forkserver` there), as `DataLoader(num_workers>0)` does; "
        "a forked child cannot use its parent's CUDA context. Usually a `Dataset` moves samples to the GPU in "
        "`__getitem__`.",
        "Keep `Dataset` and `collate_fn` on the CPU and move each batch to the GPU in the training loop "
        "(`x = x.to(device, non_blocking=True)` with `pin_memory=True`). If the workers truly need CUDA, "
        "use `DataLoader(..., multiprocessing_context=\"spawn\")`."),
    Family(
        "kernel-image", "No kernel image for this GPU",
        (r"no kernel image is available for execution on the device",),
        (Wording("CUDA error: no kernel image is available for execution on the device", "CUDA; every version",
                 "CUDA runtime (libcudart.so.12)"),
         Wording("CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be "
                 "asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
                 "2.7 as quoted; 2.8 and newer raise it as torch.AcceleratorError",
                 "c10/cuda/CUDAException.cpp (libc10_cuda.so 2.7)")),
        "Your PyTorch build has no compiled code for this GPU's architecture: the GPU is too old or too new "
        "for that build.",
        "Compare `torch.cuda.get_device_capability()` with `torch.cuda.get_arch_list()`, then install a "
        "PyTorch build for your GPU and CUDA version (pytorch.org lists the commands)."),
    Family(
        "mps-op", "An operator MPS does not implement",
        (r"The operator '(?P<op>[\w:.]+)' is not current(?:ly)? implemented for the MPS device",),
        (Wording("The operator 'aten::_linalg_solve_ex.result' is not currently implemented for the MPS device. If "
                 "you want this op to be considered for addition please comment on "
                 "https://github.com/pytorch/pytorch/issues/141287 and mention use-case, that resulted in missing op "
                 "as well as commit hash <the build's commit hash>. As a temporary fix, you can set the environment "
                 "variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this "
                 "will be slower than running natively on MPS.",
                 MAC_SOURCE + " (the current wording; it names the build's commit)",
                 "mps_error_fallback, aten/src/ATen/mps/MPSFallback.mm"),
         Wording("The operator 'aten::nonzero' is not currently implemented for the MPS device. If you want this op "
                 "to be added in priority during the prototype phase of this feature, please comment on "
                 "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment "
                 "variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this "
                 "will be slower than running natively on MPS.", "Mac builds of 1.13 to about 2.5 (learner reports)",
                 "MPSFallback.mm before the issue link changed"),
         Wording("The operator 'aten::index.Tensor' is not current implemented for the MPS device. If you want this "
                 "op to be added in priority during the prototype phase of this feature, please comment on "
                 "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment "
                 "variable `PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this "
                 "will be slower than running natively on MPS.",
                 "Mac builds of 1.12 (\"current\" for \"currently\" is PyTorch's; learner reports)",
                 "learner reports of 1.12, the first release with MPS")),
        "Apple's MPS backend does not have every PyTorch operator yet, and this one is missing.",
        "Set `PYTORCH_ENABLE_MPS_FALLBACK=1` before Python starts (or before `import torch`): that operator then runs "
        "on the CPU, slower, and the rest stays on MPS. Or run the whole step on the CPU. A newer PyTorch may have it.",
        tailor=tailor_mps_op),
    Family(
        "index-device", "Index tensor on another device",
        (r"indices should be either on (?P<c>\w+) or on the same device as the indexed tensor(?: \((?P<b>" + DEV
         + r")\))?",),
        (Wording("indices should be either on cpu or on the same device as the indexed tensor (cuda:1)",
                 "CUDA: an index on one GPU for a tensor on another; " + ALL_CHECKED,
                 "aten/src/ATen/native/TensorAdvancedIndexing.cpp: prefix in libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("indices should be either on cpu or on the same device as the indexed tensor (cpu)",
                 "CUDA: a GPU index for a CPU tensor; " + ALL_CHECKED, "the same check (meta lets it pass)")),
        "You indexed a tensor (`x[idx]`) with an index tensor on a different device. Advanced indexing moves a "
        "CPU index to the indexed tensor's device, but not an index on another accelerator, nor a GPU index "
        "into a CPU tensor.",
        "Make the index where the data is: `x[idx.to(x.device)]`, or create it there with "
        "`torch.arange(n, device=x.device)`."),
    Family(
        "mps-float64", "float64 on MPS",
        (r"Cannot convert a MPS Tensor to float64 dtype", r"MPS framework doesn't support float64"),
        (Wording("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. Please "
                 "use float32 instead.",
                 MAC_SOURCE + " (a TypeError, for `.to(\"mps\")` of a float64 tensor and for a float64 tensor made "
                 "on MPS alike)",
                 "empty_mps and empty_strided_mps, aten/src/ATen/mps/EmptyTensor.cpp: every MPS tensor is allocated "
                 "there, before any other dtype check"),),
        "Apple's GPU has no float64. NumPy arrays are float64 by default, so `torch.from_numpy(a).to(\"mps\")` "
        "is the usual way in.",
        "Convert and move in one call: `t.to(device, torch.float32)`, or make the array float32 first "
        "(`a.astype(np.float32)`)."),
    Family(
        "lengths", "Sequence lengths not on the CPU",
        (r"'lengths' argument should be a 1D CPU int64 tensor, but got (?P<shape>\w+) (?P<a>" + DEV
         + r") (?P<dtype>\w+) tensor",
         r"'lengths' argument should be a 1D CPU int64 tensor"),
        (Wording("'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor",
                 "CUDA; " + ALL_CHECKED,
                 "aten/src/ATen/native/PackedSequence.cpp: prefix in libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("'lengths' argument should be a 1D CPU int64 tensor, but got 1D meta Long tensor", ALL_CHECKED,
                 "real run (2.7, 2.13)")),
        "`pack_padded_sequence` reads the lengths on the CPU to plan the packing, so `lengths` must be a CPU "
        "int64 tensor (or a list), even when the sequences are on the GPU. Moving every tensor of a batch to "
        "the GPU moves the lengths too.",
        "Keep `lengths` on the CPU: `pack_padded_sequence(x, lengths.cpu(), batch_first=True, "
        "enforce_sorted=False)`. Only the padded sequences go to the GPU.",
        tailor=tailor_lengths),
    Family(
        "no-cuda", "No CUDA in this PyTorch or on this machine",
        (r"Torch not compiled with CUDA enabled", r"Found no NVIDIA driver", r"No CUDA GPUs are available",
         r"The NVIDIA driver on your system is too old"),
        (Wording("Torch not compiled with CUDA enabled", "builds without CUDA (an AssertionError); " + ALL_CHECKED,
                 _TORCH_CUDA + " in 2.7, 2.8, 2.14; real run (2.13 CPU build)"),
         Wording("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
                 "driver from http://www.nvidia.com/Download/index.aspx", "CUDA builds on a machine without a driver",
                 "real run (2.7 CUDA build without a GPU); in libc10_cuda.so 2.7, 2.8, 2.14"),
         Wording("The NVIDIA driver on your system is too old (found version 12080). Please update your GPU driver by "
                 "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
                 "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with "
                 "your version of the CUDA driver.",
                 "CUDA builds whose CUDA is newer than the driver (the found version is the driver's CUDA, 12080 = "
                 "12.8); 2.x CUDA builds (not in the CPU wheel checked here: read in PyTorch's source, and quoted "
                 "verbatim in learner reports from 2.7 and 2.11)",
                 "device_count_impl, c10/cuda/CUDAFunctions.cpp (the same text since 1.x); torch.cuda.is_available() "
                 "turns it into a warning, `CUDA initialization: The NVIDIA driver ...`, and returns False"),
         Wording("No CUDA GPUs are available", "CUDA builds with a driver but no usable GPU "
                 "(e.g. CUDA_VISIBLE_DEVICES names none)", "in libc10_cuda.so 2.7, 2.8, 2.14")),
        "The code asks for CUDA (`.cuda()`, `device=\"cuda\"`, `torch.cuda` calls; on a CUDA build also "
        "`pin_memory()`), but this PyTorch was built without CUDA, or this machine has no NVIDIA GPU or driver: "
        "`torch.cuda.is_available()` is False.",
        "Write device-agnostic code: `device = torch.accelerator.current_accelerator() if "
        "torch.accelerator.is_available() else torch.device(\"cpu\")` (or `cu.best_device()`), then "
        "`.to(device)`. For a GPU: on Colab, Runtime -> Change runtime type; on your machine, install a CUDA "
        "build of PyTorch.",
        tailor=tailor_no_cuda),
    Family(
        "no-accelerator", "No accelerator for pinned memory or `torch.accelerator`",
        (r"Cannot access accelerator device when none is available",
         r"pin_memory=True requires a CUDA or other accelerator backend",
         r"Need to provide pin_memory allocator to use pin memory",
         r"'pin_memory' argument is set as true but no accelerator is found"),
        (Wording("Cannot access accelerator device when none is available.",
                 "builds with no accelerator (CPU-only builds): `t.pin_memory()`, `untyped_storage().pin_memory()` and "
                 "the `torch.accelerator` calls that act on the current device (`current_device_index()`, "
                 "`set_device_index()`, `synchronize()`, `current_stream()`; in 2.10 and newer, older not checked, "
                 "also `memory_allocated()` and `empty_cache()`); never `.cuda()` or `device=\"cuda\"`; " + ALL_CHECKED,
                 "getAccelerator(checked=true), aten/src/ATen/DeviceAccelerator.cpp; real run of each call named "
                 "(2.13 CPU build); libtorch_cpu.so 2.7, 2.8, 2.14; the memory calls read in 2.10, 2.13, 2.14"),
         Wording("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator is "
                 "available on this system.",
                 "CPU-only builds: a factory with `pin_memory=True` (`torch.empty`, `torch.zeros`, `torch.tensor`...); "
                 "2.13 checked (which release replaced the wording below was not checked)",
                 "GetCPUAllocatorMaybePinned, aten/src/ATen/EmptyTensor.cpp: verbatim in libtorch_cpu.so 2.13; real "
                 "run: torch.empty(3, pin_memory=True) (2.13 CPU build)"),
         Wording("Need to provide pin_memory allocator to use pin memory.",
                 "the same call in 2.7 (checked) and earlier 2.x and 1.x (the wording before)",
                 "GetCPUAllocatorMaybePinned, EmptyTensor.cpp, in older copies of PyTorch's source; in "
                 "libtorch_cpu.so 2.7, absent from libtorch_cpu.so 2.13"),
         Wording("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory won't "
                 "be used.",
                 "`DataLoader(..., pin_memory=True)` without an accelerator: a UserWarning, and the batches come "
                 "unpinned; 2.13 checked",
                 "_BaseDataLoaderIter.__init__, torch/utils/data/dataloader.py (2.13); real run (2.13 CPU build)")),
        "Pinned (page-locked) memory exists for fast copies to an accelerator, and some `torch.accelerator` calls "
        "act on the current accelerator; this PyTorch has none to use (a CPU-only build; a CUDA build without a GPU "
        "usually passes on the driver's message instead). `.cuda()` and `device=\"cuda\"` never print this: on a "
        "CPU-only build they say `Torch not compiled with CUDA enabled`.",
        "Pin and ask only where there is an accelerator: `if torch.accelerator.is_available(): x = x.pin_memory()`, "
        "and `pin_memory=torch.accelerator.is_available()` for a factory or a `DataLoader`. "
        "`torch.accelerator.is_available()` is the question that is safe everywhere: `current_accelerator()` names "
        "the accelerator PyTorch was built for (`cuda` on a CUDA build without a GPU), and the calls on the current "
        "device raise without one. For a GPU, install a PyTorch build for it (Colab: Runtime -> Change runtime type)."),
    Family(
        "mps-unavailable", "MPS built but not available, or not in this PyTorch",
        (r"The MPS backend is supported on [Mm]acOS", r"PyTorch is not linked with support for mps devices",
         r"Could not run 'aten::empty(?:\.memory_format|_strided)?' with arguments from the 'MPS' backend\. This"),
        (Wording("The MPS backend is supported on macOS 14.0+. Current OS version can be queried using `sw_vers`",
                 MAC_SOURCE + "; 2.10.0 and a 2.12 nightly as a learner's report quotes them (pytorch/pytorch#177819, "
                 "on macOS 26.3.1): said whatever the reason MPS cannot be used, and the version named is not always "
                 "the one the release needs", "MPS_ERROR_RUNTIME_TOO_LOW, aten/src/ATen/mps/EmptyTensor.cpp"),
         Wording("The MPS backend is supported on MacOS 13.0+.Current OS version can be queried using `sw_vers`",
                 MAC_SOURCE + "; a 2.10 nightly of October 2025 as reported (pytorch/pytorch#164943, on macOS 13.7.4); "
                 "2.5.1 said `MacOS 12.3+.` though it needed 13.0 (pytorch/pytorch#139425)",
                 "MPS_ERROR_RUNTIME_TOO_LOW, older copies of EmptyTensor.cpp"),
         Wording("PyTorch is not linked with support for mps devices",
                 "builds for Linux and Windows (no MPS): `.to(\"mps\")`; 2.10, 2.13 and 2.15 checked",
                 "c10/core/impl/DeviceGuardImplInterface.h: in libc10.so 2.10, 2.13, 2.15; real run (2.13 CPU build)"),
         Wording("Could not run 'aten::empty.memory_format' with arguments from the 'MPS' backend. This could be "
                 "because the operator doesn't exist for this backend, or was omitted during the selective/custom "
                 "build process (if using custom build).", "builds without MPS: `torch.zeros(1, device=\"mps\")` "
                 "(a NotImplementedError; the message goes on with the backends that have the operator); 2.13 checked",
                 "real run (2.13 CPU build)")),
        "`mps` is Apple's GPU. This PyTorch has no MPS (a build for Linux or Windows, a Linux container on a Mac "
        "included), or it has MPS (`torch.backends.mps.is_built()` is True) but cannot use it on this Mac "
        "(`is_available()` is False): a macOS older than the release needs, or a virtual machine without the GPU.",
        "Ask before you use it: `torch.backends.mps.is_available()` (or `torch.accelerator.is_available()`, or "
        "`cu.best_device()`), and fall back to the CPU. On a Mac, `sw_vers` shows the macOS version (compare it with "
        "what your PyTorch release supports) and `python -c \"import platform; print(platform.machine())\"` should "
        "print `arm64` on Apple silicon."),
    Family(
        "ordinal", "Invalid device ordinal",
        (r"invalid device ordinal",),
        (Wording("CUDA error: invalid device ordinal", "CUDA; every version", "CUDA runtime (libcudart.so.12)"),
         Wording("CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some "
                 "other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
                 "CUDA_LAUNCH_BLOCKING=1", "2.7 as quoted; 2.8 and newer raise it as torch.AcceleratorError",
                 "c10/cuda/CUDAException.cpp (lines verbatim in libc10_cuda.so 2.7)")),
        "You asked for a GPU index that does not exist here, e.g. `cuda:1` on a one-GPU machine. Indices "
        "count from 0, and `CUDA_VISIBLE_DEVICES` renumbers the GPUs a process can see.",
        "Check `torch.cuda.device_count()` and use an index below it, or plain `\"cuda\"` (the current device). "
        "Loading a checkpoint saved on another GPU? `torch.load(path, map_location=\"cuda:0\")`."),
    Family(
        "map-location", "Loading a GPU checkpoint without a GPU",
        (r"Attempting to deserialize object on (?:a )?(?P<b>[A-Z]+) device",),
        (Wording("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
                 "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to "
                 "map your storages to the CPU.", ALL_CHECKED,
                 "real run (2.7, 2.13); torch/serialization.py in 2.7, 2.8, 2.14"),
         Wording("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1. Please use "
                 "torch.load with map_location to map your storages to an existing device.", ALL_CHECKED,
                 "torch/serialization.py in 2.7, 2.8, 2.14")),
        "`torch.save` records each tensor's device, and `torch.load` puts tensors back there. This checkpoint "
        "was saved on a GPU, and this machine cannot use one.",
        "Say where the tensors should go: `torch.load(path, map_location=\"cpu\")` (or `map_location=device`), "
        "then `model.load_state_dict(state)` and `model.to(device)`.",
        tailor=tailor_map_location),
    Family(
        "weights-only", "`torch.load` refuses to unpickle an object",
        (r"Weights only load failed", r"Unsupported global: GLOBAL [\w.]+ was not an allowed global by default"),
        (Wording("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
                 "steps only if you trust the source of the checkpoint.",
                 "2.6 and newer by default (earlier with weights_only=True); an UnpicklingError",
                 "torch/serialization.py in 2.7, 2.8, 2.14; real run (2.13); the message goes on with the two options"),
         Wording("Unsupported global: GLOBAL torch.nn.modules.linear.Linear was not an allowed global by default.",
                 "2.6 and newer, inside the message above", "torch/_weights_only_unpickler.py in 2.7 and 2.14")),
        "Since PyTorch 2.6 `torch.load` loads with `weights_only=True`: tensors, dicts, lists and numbers, but "
        "no other Python objects, because unpickling an object can run arbitrary code. A whole model saved "
        "with `torch.save(model, path)` is such an object.",
        "Save and load the state dict instead: `torch.save(model.state_dict(), path)`, then "
        "`model.load_state_dict(torch.load(path, map_location=device))`. For a file you trust, "
        "`torch.load(path, weights_only=False)`, or allow its classes with "
        "`torch.serialization.add_safe_globals([...])`.",
        device_problem=False),
    Family(
        "pin", "Pinning a tensor that is not on the CPU",
        (r"cannot pin '(?P<type>[\w.]+)' only dense CPU tensors can be pinned", r"only dense "
                                                                                r"CPU tensors can be pinned"),
        (Wording("cannot pin 'CUDAFloatType' only dense CPU tensors can be pinned",
                 "CUDA; 2.10, 2.13 and 2.14 (checked); the simulated GPU raises it too",
                 "_pin_memory, aten/src/ATen/native/Memory.cpp: both halves in libtorch_cpu.so 2.10, 2.13, 2.14, the "
                 "type between them as `toString()` gives it (a real run with meta: 'MetaFloatType')"),
         Wording("cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned", "earlier releases (quoted "
                 "online, e.g. scverse/scvi-tools#1713, 2022; not checked)", "learner reports"),
         Wording("cannot pin 'MetaFloatType' only dense CPU tensors can be pinned", ALL_CHECKED,
                 "real run (2.7, 2.10, 2.13)")),
        "Pinned (page-locked) memory is CPU memory that a GPU can copy from directly. A tensor already on "
        "the GPU (or a sparse one) cannot be pinned; often `pin_memory=True` meets batches a `Dataset` "
        "already moved to the GPU.",
        "Pin CPU tensors only: keep the `Dataset` on the CPU, let `DataLoader(..., pin_memory=True)` pin, "
        "and move each batch with `x.to(device, non_blocking=True)`."),
    Family(
        "leaf", "A moved tensor is not a leaf",
        (r"you can only change requires_grad flags of leaf variables", r"can't optimize a non-leaf Tensor"),
        (Wording("you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
                 "in a subgraph that doesn't require differentiation use var_no_grad = var.detach().", ALL_CHECKED,
                 "real run (2.7, 2.13); libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("can't optimize a non-leaf Tensor", ALL_CHECKED,
                 "real run: torch.optim.SGD (2.7, 2.13); torch/optim/optimizer.py")),
        "`t.to(device)` and `t.cuda()` on a tensor that requires grad return the *result* of a move, with a "
        "`grad_fn`: not a leaf. You cannot switch its `requires_grad`, and an optimizer refuses it.",
        "Create the tensor on the device: `torch.randn(3, device=device, requires_grad=True)`, or move "
        "first and ask for grad after: `w = torch.randn(3).to(device).requires_grad_()`. For a model, "
        "`model.to(device)` keeps its parameters leaves."),
    Family(
        "sync-debug", "A synchronising CUDA call, reported by the sync debug mode",
        (r"called a synchronizing CUDA operation",),
        (Wording("called a synchronizing CUDA operation",
                 "CUDA, with `torch.cuda.set_sync_debug_mode(\"warn\")` (a UserWarning) or `\"error\"` (a "
                 "RuntimeError); 2.x CUDA builds (not in the CPU wheel checked here)",
                 "warn_or_error_on_sync, c10/cuda/CUDAFunctions.cpp (read in PyTorch's source)"),
         Wording("called a synchronizing CUDA operation (Triggered internally at "
                 "/pytorch/c10/cuda/CUDAFunctions.cpp:NNN.)",
                 "the warning's form (\"warn\" mode): TORCH_WARN adds where it was raised; 2.x CUDA builds",
                 "TORCH_WARN in warn_or_error_on_sync, c10/cuda/CUDAFunctions.cpp; the suffix as other TORCH_WARN "
                 "messages of this file show it (`CUDA initialization: ...`)")),
        "You turned on `torch.cuda.set_sync_debug_mode`, and a call made the CPU wait for the GPU: `.item()`, "
        "`.cpu()`, `print(t)`, a device-to-host copy, `torch.cuda.synchronize()`, a boolean mask's `nonzero`...",
        "Keep the synchronisations you need (a loss printed every 100 steps) and move the others out of the loop: "
        "accumulate on the device (`total += loss.detach()`) and read once at the end. Set the mode back with "
        "`torch.cuda.set_sync_debug_mode(0)`."),
    Family(
        "generator", "Generator on the wrong device (often a default device and a DataLoader)",
        (r"(?:Expected a '(?P<b>\w+)' )?device type for generator but found '(?P<a>\w+)'",
         r"(?P<meta>META) device type not an accelerator"),
        (Wording("Expected a 'cuda' device type for generator but found 'cpu'", "CUDA; " + ALL_CHECKED,
                 "check_generator: format in libtorch_cpu.so and libtorch_cuda.so 2.7, 2.8, 2.14"),
         Wording("Expected a 'cpu' device type for generator but found 'cuda'",
                 "CUDA: a CUDA generator for a draw on the CPU; " + ALL_CHECKED, "the same check, the other way round"),
         Wording("Expected a 'mps' device type for generator but found 'cpu'", MAC_SOURCE, "the same check"),
         Wording("META device type not an accelerator.", ALL_CHECKED,
                 "real run: torch.Generator(device=\"meta\") (2.13); format in libtorch_cpu.so 2.7, 2.8, 2.14")),
        "A random-number generator on one device type drew numbers for another. " + GENERATOR_RULE,
        "Don't set a default device for the whole program: restore it with `torch.set_default_device(None)` "
        "before making and iterating the DataLoader, and move each batch with `.to(device)`. A generator you "
        "pass yourself must be on the device that draws: `torch.Generator(device=device)`.",
        tailor=tailor_generator),
    Family(
        "meta-data", "A meta tensor has no data",
        (r"Tensor\.item\(\) cannot be called on meta tensors", r"Cannot copy out of meta tensor; no data!"),
        (Wording("Tensor.item() cannot be called on meta tensors", ALL_CHECKED,
                 "real run (2.7, 2.13); torch/_meta_registrations.py in 2.7, 2.8, 2.14"),
         Wording("Cannot copy out of meta tensor; no data!", ALL_CHECKED,
                 "real run: `.cpu()` / `.tolist()` (2.7, 2.13); libtorch_cpu.so 2.7, 2.8, 2.14")),
        "Tensors on `meta` have a shape, a dtype and a device but no values, so nothing can read them "
        "(`.item()`, `print`, `.cpu()`). If a `DataLoader` raised it, `torch.set_default_device(\"meta\")` "
        "made its sampler draw on `meta`.",
        "Make the tensor on a real device. For a model built on meta, `model.to_empty(device=device)` then "
        "`model.load_state_dict(...)`. Reset a default device with `torch.set_default_device(None)`.",
        tailor=tailor_meta_data),
)


def family(key: str) -> Family:
    """The :class:`Family` with this key (``KeyError`` if there is none)."""
    return {f.key: f for f in FAMILIES}[key]
