"""The catalogue: every device-error family the course explains, in the order the explainer ranks them.

:data:`FAMILIES` is the one source for everything the course says about these errors: the explainer reads it,
``scripts/error_index.py`` turns it into ``docs/errors.md``, the tests check every wording in it. Every
:class:`~course_utils.errors.schema.Wording` is a message exactly as PyTorch prints it, with the PyTorch versions
that print it and where that was checked (a build's string table, PyTorch's source, a real run). What only a GPU
or a Mac prints, and was not run on one, says so.
"""
from __future__ import annotations

from .schema import Family, Wording
from .tailors import (GENERATOR_RULE, SAME_DEVICE_RULE, SEE_WHERE, data_parallel_fix, devices_differ, not_none,
                      tailor_data_parallel, tailor_devices, tailor_generator, tailor_lengths, tailor_map_location,
                      tailor_meta_data, tailor_module_prefix, tailor_mps_op, tailor_no_cuda, tailor_no_device,
                      tailor_no_to, tailor_numpy, tailor_op_devices)

__all__ = ["FAMILIES", "family"]

_DEV = r"[A-Za-z_]+(?::\d+)?"          # cpu, cuda:0, mps, meta, xpu:1 ...

# How the versions were checked, in the words the catalogue uses (see docs/errors.md):
#: a format string or source file found in the CUDA wheels of 2.7, 2.8 and 2.14 and the CPU build of 2.13
_ALL = "2.7, 2.8, 2.13 and 2.14 (all checked)"
#: what a Mac's build prints, read in PyTorch's source: the Linux wheels checked here do not contain it
_MAC = "Mac (MPS) builds; read in PyTorch's source, not run on a Mac here"

_TORCH_CUDA = "torch/cuda/__init__.py"
_TO_HOST = r"(?:\. Use Tensor\.cpu\(\) to copy the tensor to host memory first)"

FAMILIES: tuple[Family, ...] = (
    Family(
        "devices", "Tensors on different devices",
        (r"Expected all tensors to be on the same (?:common )?device, but found at least two devices, (?P<b>" + _DEV
         + r") and (?P<a>" + _DEV + r")!?(?: \(when checking (?:argument|arugment) for argument (?P<arg>\w+) in "
         r"method (?P<op>\w+)\))?",
         r"Expected all tensors to be on the same device, but got (?P<arg>\w+) is on (?P<a>" + _DEV
         + r"), different from other tensors on (?P<b>" + _DEV
         + r")(?: \(when checking argument in method (?P<op>\w+)\))?",
         r"Expected object of device type (?P<b>\w+) but got device type (?P<a>\w+) for (?:argument #\d+|sequence "
         r"element \d+ in sequence argument at position #\d+) '(?P<arg>\w+)'(?: in call to (?P<op>\w+))?",
         r"Tensor for argument #\d+ '(?P<arg>\w+)' is on (?P<a>CPU), (?:Tensor for argument #\d+ '\w+' is on CPU, )?"
         r"but expected (?:it|them) to be on GPU(?: \(while checking arguments for (?P<op>\w+)\))?",
         r"Tensor on device (?P<a>" + _DEV + r") is not on the expected device (?P<b>" + _DEV + r")!",
         r"Input type \((?P<ta>[^()\n]{1,60})\) and (?P<param>weight|bias) "
         r"type \((?P<tb>[^()\n]{1,60})\) should be the same",
         r"Tensor for argument #?\d*\s*'?(?P<arg>\w+)'? is on (?P<a>" + _DEV + r") but expected on (?P<b>" + _DEV
         + r")",
         r"Expected tensor for argument #\d+ '(?P<arg>\w+)' to have the same device as tensor for argument #\d+ "
         r"'(?P<arg2>\w+)'; but device (?P<a>\d+) does not equal (?P<b>\d+)"
         r"(?: \(while checking arguments for (?P<op>\w+)\))?",
         r"Input and (?:parameter|hidden) tensors are not at the same device, found input tensor at (?P<a>" + _DEV
         + r") and (?P<what>parameter|hidden) tensor at (?P<b>" + _DEV + r")",
         r"(?P<arg>input)\(device='(?P<a>" + _DEV + r")'\) and weight\(device=(?P<b>" + _DEV
         + r")'\) must be on the same device",
         r"expected self and (?P<arg>mask) to be on the same device, but got mask on (?P<a>" + _DEV
         + r") and self on (?P<b>" + _DEV + r")",
         r"expected self and (?P<arg>mask) to be on the same device",
         r"Placeholder storage has not been allocated(?: on (?P<b>MPS) device)?",
         r"is not on the expected device",
         r"Expected all tensors to be on the same device"),
        (Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
                 "element-wise operations on CUDA; " + _ALL + ", and 1.x",
                 "TensorIterator.cpp, prefix verbatim in libtorch_cpu.so 2.7, 2.8, 2.14 (the two devices in the "
                 "order met, not which tensor is odd)"),
         Wording("Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors "
                 "on cuda:0 (when checking argument in method wrapper_CUDA_addmm)",
                 "2.8 and newer, on CUDA (ops that check each argument: addmm, mm, index_select, nll_loss...)",
                 "common_device_check_failure, aten/src/ATen/core/op_registration/adaption.cpp: format pieces in "
                 "libtorch_cpu.so 2.8 and 2.14, absent in 2.7; wrapper_CUDA_addmm in libtorch_cuda.so"),
         Wording("Expected all tensors to be on the same device, but got weight is on cpu, different from other "
                 "tensors on cuda:0 (when checking argument in method wrapper_CUDA_nll_loss_forward)",
                 "2.8 and newer, on CUDA: a loss's class weights left on the CPU",
                 "the same format (2.8, 2.14); wrapper_CUDA_nll_loss_forward in libtorch_cuda.so 2.7 to 2.14"),
         Wording("Expected all tensors to be on the same device, but got index is on cpu, different from other "
                 "tensors on cuda:0 (when checking argument in method wrapper_CUDA__index_select)",
                 "2.8 and newer, on CUDA: `nn.Embedding` or `index_select` with a CPU index",
                 "the same format (2.8, 2.14); wrapper_CUDA__index_select in libtorch_cuda.so 2.7 to 2.14"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                 "(when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
                 "up to 2.7, on CUDA (checked in 2.7; how far back was not checked)",
                 "adaption.cpp before 2.8: \"! (when checking argument for argument \" verbatim in libtorch_cpu.so "
                 "2.7, absent in 2.8 and 2.14"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                 "(when checking argument for argument weight in method wrapper_CUDA_nll_loss_forward)",
                 "up to 2.7, on CUDA: a loss's class weights left on the CPU",
                 "the same format as above (libtorch_cpu.so 2.7)"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                 "(when checking argument for argument mat1 in method wrapper_addmm)",
                 "late 1.x, after the misspelling was fixed in July 2021 (learner reports from 2022; no "
                 "build checked)",
                 "adaption.cpp with \"argument for argument\"; kernel names without the CUDA_ part"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! "
                 "(when checking arugment for argument mat1 in method wrapper_addmm)",
                 "around 1.9 (\"arugment\" is misspelt in PyTorch itself; fixed in July 2021, pytorch/pytorch#61459)",
                 "adaption.cpp as pytorch/pytorch#60864 quotes it (June 2021)"),
         Wording("Expected object of device type cuda but got device type cpu for argument #1 'self' in "
                 "call to _th_addmm",
                 "1.x before the dispatcher's device check (up to about 1.7; learner reports)",
                 "checked_dense_tensor_unwrap, aten/src/ATen/Utils.h in PyTorch 1.x (read in old copies)"),
         Wording("Tensor for argument #2 'mat1' is on CPU, but expected it to be on GPU (while checking "
                 "arguments for addmm)",
                 "1.x on CUDA (learner reports with 1.6); MPS's `mm` in 2.x says the same for `mat2` (reports, "
                 "not run on a Mac here)",
                 "checkSameGPU, aten/src/ATen/TensorUtils.cpp: \" to be on GPU (while checking arguments for \" in "
                 "libtorch_cpu.so 2.7 and 2.14"),
         Wording("Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or input "
                 "should be a MKLDNN tensor and weight is a dense tensor",
                 "a CPU input and a CUDA model, when PyTorch picks its MKLDNN backend for the CPU input (most float32 "
                 "convolutions); " + _ALL,
                 "check_input_same_type_as_parameters, aten/src/ATen/native/Convolution.cpp: the MKLDNN clause is "
                 "added only for the MKLDNN backend, which is chosen only for a CPU input; suffix verbatim in "
                 "libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same",
                 "a CUDA input and a CPU model (never with the MKLDNN clause); every version (format in 2.7 to 2.14)",
                 "the same check without the clause (libtorch_cpu.so 2.7, 2.8, 2.14); legacy type names as PyTorch "
                 "prints them"),
         Wording("Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same",
                 "a CPU input and a CUDA model in 1.x (learner reports); 2.7 to 2.14 never print it for a CPU input",
                 "Convolution.cpp 2.x: a CPU input goes to MKLDNN, whose check adds the clause above, or to a slow "
                 "kernel that checks each argument (below)"),
         Wording("Expected all tensors to be on the same device, but got weight is on cuda:0, different from other "
                 "tensors on cpu (when checking argument in method wrapper_CUDA___slow_conv2d_forward)",
                 "2.8 and newer, on CUDA: one small image (no batch of them) through a `Conv2d` on the GPU, which "
                 "PyTorch hands to its slow convolution kernel instead of MKLDNN",
                 "Convolution.cpp: _select_conv_backend picks Slow2d, whose CUDA wrapper checks each argument; "
                 "wrapper_CUDA___slow_conv2d_forward in libtorch_cuda.so 2.7, 2.8, 2.14"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0! "
                 "(when checking argument for argument weight in method wrapper_CUDA___slow_conv2d_forward)",
                 "2.7, on CUDA: the same small image",
                 "adaption.cpp's 2.7 format (libtorch_cpu.so 2.7); the wrapper in libtorch_cuda.so 2.7"),
         Wording("Tensor for argument input is on cpu but expected on mps", _MAC,
                 "aten/src/ATen/native/mps/operations/Linear.mm; test/test_mps.py asserts it"),
         Wording("Tensor for argument weight is on cpu but expected on mps", _MAC,
                 "the same check for the layer's weight; test/test_mps.py asserts it"),
         Wording("Placeholder storage has not been allocated on MPS device!", _MAC,
                 "Placeholder, aten/src/ATen/native/mps/OperationUtils.mm"),
         Wording("slow_conv2d_forward_mps: input(device='cpu') and weight(device=mps:0')  must be on the same device",
                 _MAC + " (the two spaces and the lone quote are PyTorch's)",
                 "slow_conv2d_forward_mps, aten/src/ATen/mps/MPSFallback.mm"),
         Wording("Input and parameter tensors are not at the same device, found input tensor at cpu and parameter "
                 "tensor at meta", _ALL,
                 "real run: nn.LSTM on meta (2.7, 2.13); RNN.cpp's format pieces in libtorch_cpu.so 2.7 to 2.14"),
         Wording("expected self and mask to be on the same device, but got mask on cpu and self on cuda:0",
                 "`masked_fill` on CUDA, MPS or XPU with the mask on another device (a causal mask kept as a plain "
                 "attribute); 2.13 checked",
                 "masked_fill__cuda, aten/src/ATen/native/cuda/Indexing.cu (and masked_fill__mps): the format's "
                 "prefix verbatim in libtorch_cpu.so 2.13"),
         Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!",
                 "two GPUs in one element-wise operation (multi-GPU machines); the TensorIterator format above, "
                 "2.13 checked",
                 "compute_types, aten/src/ATen/TensorIterator.cpp: the first GPU met, then the odd one; prefix "
                 "verbatim in libtorch_cpu.so 2.13"),
         Wording("Tensor on device cpu is not on the expected device meta!", _ALL,
                 "real run (2.7, 2.13); torch/_prims_common/__init__.py in 2.7, 2.8, 2.14")),
        "One operation got tensors that live on different devices. " + SAME_DEVICE_RULE,
        "Put everything on one device: move the model once with `model.to(device)` (in place) and each input "
        "with `x = x.to(device)` (`Tensor.to` returns a new tensor: keep the result). " + SEE_WHERE,
        check=devices_differ, tailor=tailor_devices),
    Family(
        "no-kernel", "An operation with no kernel for the device it was sent to",
        (r"Could not run '(?P<op>[\w:.]+)' with arguments from the '(?P<b>CUDA|MPS|XPU|HIP|Meta|CPU)' backend",),
        (Wording("Could not run 'aten::slow_conv3d_forward' with arguments from the 'CUDA' backend. This could be "
                 "because the operator doesn't exist for this backend, or was omitted during the selective/custom "
                 "build process (if using custom build). ...",
                 "2.7 to 2.14, on CUDA: one small volume (no batch of them) through a `Conv3d` on the GPU; PyTorch "
                 "goes on with the backends the operator has and its whole dispatch table",
                 "OperatorEntry::reportError, aten/src/ATen/core/dispatch/OperatorEntry.cpp: format pieces in "
                 "libtorch_cpu.so 2.7 and 2.14; Convolution.cpp picks Slow3d for the CPU input, and "
                 "libtorch_cuda.so 2.7, 2.8 and 2.14 have no slow_conv3d_forward kernel"),),
        "PyTorch picks an operation's kernel by the devices of its tensors (a GPU tensor among CPU ones picks "
        "the GPU's) and has no kernel of this operation there. Most often the tensors are on different devices: "
        "the CPU input chose a CPU-only algorithm (a `Conv3d` given one small volume), then a weight on the GPU "
        "sent it to the GPU, which lacks it. Less often the operation does not exist for that device at all.",
        "Check each tensor in the failing line (`t.device`, or `cu.explain_devices(model, {\"x\": x})`) and put "
        "them on one device, usually `x = x.to(device)`. If they already are, the operation has no kernel for "
        "that device: run that step on the CPU (`.cpu()`, then move the result back)."),
    Family(
        "op-devices", "An operation's own device check: its inputs on different devices",
        (r"Expected query, key, and value to have the same device type, but got query\.device: (?P<q>" + _DEV
         + r"),? key\.device: (?P<k>" + _DEV + r"),? and value\.device: (?P<v>" + _DEV + r")",
         r"Expected query, key, and value to have the same device type",
         r"torch\.searchsorted\(\): boundaries and input value tensors should have same device type, but got "
         r"boundaries tensor device type (?P<b>" + _DEV + r") and input value tensor device type (?P<a>" + _DEV + r")",
         r"torch\.searchsorted\(\): (?P<sorter>sorter) and boundary tensors should have same device type, but got "
         r"sorter tensor device type (?P<a>" + _DEV + r") and input value tensor device type (?P<b>" + _DEV + r")",
         r"X1 and X2 must have the same device type\. X1: (?P<x1>\w+) X2: (?P<x2>\w+)",
         r"device of X1 \((?P<i1>-?\d+)\) must match device of X2 \((?P<i2>-?\d+)\)"),
        (Wording("Expected query, key, and value to have the same device type, but got query.device: cuda:0 "
                 "key.device: cpu and value.device: cpu instead.",
                 "`F.scaled_dot_product_attention` (2.x), also inside `nn.TransformerEncoderLayer` and "
                 "`nn.MultiheadAttention`'s fast path; 2.13 checked",
                 "validate_sdpa_input, aten/src/ATen/native/transformers/attention.cpp: prefix verbatim in "
                 "libtorch_cpu.so 2.13; real run with `meta` (2.13): \"query.device: cpu key.device: meta and "
                 "value.device: meta instead.\""),
         Wording("torch.searchsorted(): sorter and boundary tensors should have same device type, but got sorter "
                 "tensor device type cpu and input value tensor device type cuda:0",
                 "`torch.searchsorted(..., sorter=...)` with the sorter elsewhere (\"input value tensor\" there names "
                 "the boundaries: PyTorch's wording); 2.13 checked",
                 "searchsorted_pre_check, aten/src/ATen/native/BucketizationUtils.h: format pieces in libtorch_cpu.so "
                 "2.13 (the sorter is a keyword argument, so CUDA's generated per-argument check does not see it)"),
         Wording("torch.searchsorted(): boundaries and input value tensors should have same device type, but got "
                 "boundaries tensor device type cuda:0 and input value tensor device type cpu",
                 "`torch.searchsorted` / `torch.bucketize` where no generated check speaks first (on CUDA the "
                 "per-argument check names `self` instead: wrapper_CUDA_Tensor_searchsorted); 2.13 checked",
                 "searchsorted_pre_check, BucketizationUtils.h: format pieces in libtorch_cpu.so 2.13"),
         Wording("X1 and X2 must have the same device type. X1: cuda X2: cpu",
                 "`torch.cdist` with p=2 and more than 25 rows (or compute_mode=\"use_mm_for_euclid_dist\"), which "
                 "skips the per-argument check of wrapper_CUDA___cdist_forward; device types only, no index; "
                 "2.13 checked",
                 "cdist_impl, aten/src/ATen/native/Distance.cpp: prefix in libtorch_cpu.so 2.13; real run with `meta` "
                 "(2.13): \"X1: cpu X2: meta\""),
         Wording("device of X1 (0) must match device of X2 (1)",
                 "`torch.cdist` on two GPUs, the same path; 2.13 checked",
                 "cdist_impl, Distance.cpp: format pieces in libtorch_cpu.so 2.13")),
        "One operation got inputs on different devices, and it checks them itself, in words of its own.",
        "Put every input of that call on one device, usually the model's: `t = t.to(device)` for the one that is "
        "elsewhere. " + SEE_WHERE,
        tailor=tailor_op_devices),
    Family(
        "cpu-scalars", "Two 0-dim CPU tensors in one GPU operation",
        (r"Trying to pass too many CPU scalars to non-CPU kernel",),
        (Wording("Trying to pass too many CPU scalars to non-CPU kernel!",
                 "CUDA (any accelerator), element-wise operations; 2.13 checked (the same check in 1.x copies of the "
                 "source)",
                 "compute_types, aten/src/ATen/TensorIterator.cpp (max_cpu_scalars_on_non_cpu is 1): verbatim in "
                 "libtorch_cpu.so 2.13"),),
        "An element-wise GPU kernel reads one 0-dim CPU tensor as if it were a number, and only one: here two "
        "0-dim CPU tensors met in an operation that runs on the GPU, e.g. `torch.add(a, b, out=y)` with `a` and `b` "
        "0-dim CPU tensors and `y` on the GPU.",
        "Make them numbers, `a.item()`, or create them on the GPU: `torch.tensor(2.0, device=device)` (or "
        "`a = a.to(device)`). A number in Python (`x * 2.0`) never needs a device."),
    Family(
        "addcmul-scalar", "A 0-dim CPU tensor in `addcmul` where its GPU kernel refuses one",
        (r"CPU Scalar support for (?P<arg>self|tensor1) argument is not supported when calling addcmul on CUDA "
         r"tensors",),
        (Wording("CPU Scalar support for tensor1 argument is not supported when calling addcmul on CUDA tensors. "
                 "However, CPU Scalar support for tensor2 is supported, please swap your tensor1 and tensor2 terms.",
                 "CUDA, `torch.addcmul`/`addcmul_` with a 0-dim CPU `tensor1`; 2.7 and 2.15 checked, and a real run "
                 "on 2.11 (H100)",
                 "addcmul_cuda_kernel, aten/src/ATen/native/cuda/PointwiseOpsKernel.cu: verbatim in libtorch_cuda.so "
                 "2.7 and 2.15"),
         Wording("CPU Scalar support for self argument is not supported when calling addcmul on CUDA tensors.",
                 "CUDA, `torch.addcmul` with a 0-dim CPU `input`; 2.7 and 2.15 checked",
                 "the same kernel: verbatim in libtorch_cuda.so 2.7 and 2.15")),
        "`addcmul(input, tensor1, tensor2)` on the GPU lets one 0-dim CPU tensor in, and reads it as a number only "
        "as `tensor2`, its last factor; as `input` or `tensor1` its kernel refuses it in words of its own.",
        "Pass the CPU value as `tensor2` (the product is the same: `torch.addcmul(x, a, s)` for `torch.addcmul(x, "
        "s, a)`), or make it a number (`s.item()`) or put it on the GPU: `s.to(device)`."),
    Family(
        "data-parallel", "DataParallel with its model off `device_ids[0]`",
        (r"module must have its parameters and buffers on device (?P<b>" + _DEV + r") \(device_ids\[0\]\) but found "
         r"one of them on device: (?P<a>" + _DEV + r")",),
        (Wording("module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them "
                 "on device: cpu", "CUDA GPUs only; " + _ALL,
                 "torch/nn/parallel/data_parallel.py in 2.7, 2.8, 2.13, 2.14"),),
        "`nn.DataParallel` copies the model from `device_ids[0]` to every GPU on each call, so it first checks "
        "that every parameter and buffer is already on that GPU. One is not: the model was never moved (with one "
        "GPU the wrapper moves it when it is made, with several it does not), it was moved away again, or a "
        "layer was added after moving it.",
        data_parallel_fix("cuda:0"), tailor=tailor_data_parallel),
    Family(
        "optimizer-state", "Optimizer state on another device than its parameters",
        (r"Tensors of the same index must be on the same device and the same dtype",),
        (Wording("Tensors of the same index must be on the same device and the same dtype except `step` tensors that "
                 "can be CPU and float32/64 notwithstanding",
                 "2.7 and 2.8 (checked; earlier 2.x not checked); foreach and fused optimizer "
                 "steps, the default on CUDA",
                 "_group_tensors_by_device_and_dtype: verbatim in libtorch_python.so 2.7 and 2.8"),
         Wording("Tensors of the same index must be on the same device and the same dtype except `step` tensors that "
                 "can be CPU and float32/64, and optimizer states that can be bfloat16 for mixed-precision training",
                 "2.13 and 2.14 (checked; 2.9 to 2.12 not checked)",
                 "verbatim in libtorch_python.so 2.13 (CPU build) and 2.14")),
        "An optimizer step that updates all parameters at once (foreach or fused, the default on CUDA) groups "
        "each parameter with its gradient and its state (`exp_avg`, `momentum_buffer`...), and one of them is on "
        "another device (or has another dtype). Usually the state was created or loaded while the model was "
        "elsewhere, or the model was moved after the optimizer had state.",
        "Move the model first, then create the optimizer. To resume training, `model.to(device)` and then "
        "`optimizer.load_state_dict(torch.load(path, map_location=device))`: it casts the state to each "
        "parameter's device. `cu.explain_devices(model, optimizer=optimizer)` shows which state is where."),
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
        "The GPU has no room for a new tensor: the model, the activations kept for backward, the optimizer "
        "state and whatever you still hold a reference to (an old model, a loss with its graph) fill its memory.",
        "Make the batch smaller; run evaluation under `torch.no_grad()`; accumulate `loss.item()` or "
        "`loss.detach()`, not `loss`; `del` what you no longer need; consider `torch.autocast`. To retry with "
        "a smaller batch, catch the error and recover after the `except` block, not inside it: the exception "
        "keeps the failed step's tensors alive until the block ends (PyTorch FAQ). `torch.cuda.empty_cache()` "
        "does not help: the caching allocator already frees its cached blocks and retries before it raises. "
        "`torch.cuda.memory_summary()` shows what is using the memory."),
    Family(
        "mps-oom", "MPS out of memory",
        (r"MPS backend out of memory",),
        (Wording("MPS backend out of memory (MPS allocated: 17.92 GB, other allocations: 384.00 KB, max allowed: "
                 "18.13 GB). Tried to allocate 256.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to "
                 "disable upper limit for memory allocations (may cause system failure).",
                 _MAC + " (sizes illustrative)",
                 "aten/src/ATen/mps/MPSAllocator.mm, with the default high watermark"),),
        "Your Mac's GPU shares memory with the rest of the system, and PyTorch stops an MPS allocation that "
        "would pass its limit (the high watermark).",
        "Make the batch smaller, evaluate under `torch.no_grad()`, `del` what you no longer need. "
        "`torch.mps.empty_cache()` does not help here: the allocator already releases its cached buffers and "
        "retries before it raises. `PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0` (set before Python starts) lifts the "
        "limit, at the risk of slowing or freezing the whole machine."),
    Family(
        "numpy", "`.numpy()` on a tensor that is not on the CPU",
        (r"can't convert (?P<a>" + _DEV + r")(?: device type)? tensor to numpy" + _TO_HOST + "?",
         r"to numpy" + _TO_HOST),
        (Wording("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                 "memory first.", "CUDA; " + _ALL,
                 "torch/csrc/utils/tensor_numpy.cpp: format in libtorch_python.so 2.7, 2.8, 2.14; the device as the "
                 "meta run shows it"),
         Wording("can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
                 "first.", _ALL, "real run (2.7, 2.13)"),
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
        (Wording("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.", _ALL,
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
        (Wording("'Linear' object has no attribute 'device'", _ALL,
                 "nn.Module.__getattr__, torch/nn/modules/module.py 2.7, 2.8, 2.14; real run (2.13)"),),
        "`.device` belongs to tensors (and so to parameters and buffers). A module has none: its tensors may "
        "be on several devices, or it may have none at all.",
        "Ask one of its tensors, `next(model.parameters()).device` (a module without parameters raises "
        "StopIteration), or better, keep the `device` you moved the model to and use it.",
        check=not_none, tailor=tailor_no_device),
    Family(
        "module-init", "A module used before `super().__init__()`",
        (r"cannot assign (?:module|parameters?|buffer) before Module\.__init__\(\) call",),
        (Wording("cannot assign module before Module.__init__() call", _ALL,
                 "torch/nn/modules/module.py in 2.7, 2.8, 2.14; real run (2.13)"),
         Wording("cannot assign parameter before Module.__init__() call", _ALL, "torch/nn/modules/module.py")),
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
                 "libtorch_python.so 2.8 and 2.14, not 2.7")),
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
        (Wording("Target 5 is out of bounds.", _ALL,
                 "aten/src/ATen/native/LossNLL.cpp: \" is out of bounds.\" in libtorch_cpu.so 2.7, 2.8, 2.14; real "
                 "run (2.13)"),
         Wording("index out of range in self", _ALL,
                 "an nn.Embedding given an id >= its size: verbatim in libtorch_cpu.so 2.7, 2.8, 2.14; real "
                 "run (2.13)")),
        "A value used as an index is outside its range: a class label outside `0 .. num_classes - 1` given to "
        "a loss (the loss's `ignore_index`, -100 by default, is skipped and allowed), or a token id at least "
        "as large as an `nn.Embedding`. The CPU names the bad value; on a GPU the same mistake is a "
        "device-side assert.",
        "Find the bad values and fix the data (or the number of classes, or `num_embeddings`): "
        "`y[(y != -100) & ((y < 0) | (y >= num_classes))]` for labels, `ids[ids >= emb.num_embeddings]` for "
        "an embedding.",
        device_problem=False),
    Family(
        "module-prefix", "`module.` prefix in a state_dict",
        (r'Unexpected key\(s\) in state_dict: "module\.', r'Missing key\(s\) in state_dict: "module\.',
         r"""unexpected key "module\.[\w.]*" in state_dict"""),
        (Wording('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "weight", "bias". \n\t'
                 'Unexpected key(s) in state_dict: "module.weight", "module.bias". ', _ALL,
                 "real run (2.7, 2.13); torch/nn/modules/module.py in 2.7, 2.8, 2.14"),
         Wording('Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: "module.weight", '
                 '"module.bias". \n\tUnexpected key(s) in state_dict: "weight", "bias". ', _ALL,
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
                 "'spawn' start method", "CUDA; " + _ALL, _TORCH_CUDA + " in 2.7, 2.8, 2.14"),),
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
                 _MAC + " (the current wording; it names the build's commit)",
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
        "Set `PYTORCH_ENABLE_MPS_FALLBACK=1` before Python starts (or before `import torch`): that operator "
        "then runs on the CPU, slower, and the rest stays on MPS. Or run the whole step on the CPU. A newer "
        "PyTorch may have it.",
        tailor=tailor_mps_op),
    Family(
        "index-device", "Index tensor on another device",
        (r"indices should be either on (?P<c>\w+) or on the same device as the indexed tensor(?: \((?P<b>" + _DEV
         + r")\))?",),
        (Wording("indices should be either on cpu or on the same device as the indexed tensor (cuda:1)",
                 "CUDA: an index on one GPU for a tensor on another; " + _ALL,
                 "aten/src/ATen/native/TensorAdvancedIndexing.cpp: prefix in libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("indices should be either on cpu or on the same device as the indexed tensor (cpu)",
                 "CUDA: a GPU index for a CPU tensor; " + _ALL, "the same check (meta lets it pass)")),
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
                 _MAC + " (a TypeError, for `.to(\"mps\")` of a float64 tensor and for a float64 tensor made on MPS "
                 "alike)",
                 "empty_mps and empty_strided_mps, aten/src/ATen/mps/EmptyTensor.cpp: every MPS tensor is allocated "
                 "there, before any other dtype check"),),
        "Apple's GPU has no float64. NumPy arrays are float64 by default, so `torch.from_numpy(a).to(\"mps\")` "
        "is the usual way in.",
        "Convert and move in one call: `t.to(device, torch.float32)`, or make the array float32 first "
        "(`a.astype(np.float32)`)."),
    Family(
        "lengths", "Sequence lengths not on the CPU",
        (r"'lengths' argument should be a 1D CPU int64 tensor, but got (?P<shape>\w+) (?P<a>" + _DEV
         + r") (?P<dtype>\w+) tensor",
         r"'lengths' argument should be a 1D CPU int64 tensor"),
        (Wording("'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor", "CUDA; " + _ALL,
                 "aten/src/ATen/native/PackedSequence.cpp: prefix in libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("'lengths' argument should be a 1D CPU int64 tensor, but got 1D meta Long tensor", _ALL,
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
        (Wording("Torch not compiled with CUDA enabled", "builds without CUDA (an AssertionError); " + _ALL,
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
                 "`set_device_index()`, `synchronize()`, `current_stream()`, `memory_allocated()`, `empty_cache()`); "
                 "never `.cuda()` or `device=\"cuda\"`; " + _ALL,
                 "getAccelerator(checked=true), aten/src/ATen/DeviceAccelerator.cpp; real run of each call named "
                 "(2.13 CPU build); libtorch_cpu.so 2.7, 2.8, 2.14"),
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
        "`torch.accelerator.is_available()`, `device_count()` and `current_accelerator()` are safe everywhere "
        "(False, 0, None). For a GPU, install a PyTorch build for it (Colab: Runtime -> Change runtime type)."),
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
                 "map your storages to the CPU.", _ALL,
                 "real run (2.7, 2.13); torch/serialization.py in 2.7, 2.8, 2.14"),
         Wording("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1. Please use "
                 "torch.load with map_location to map your storages to an existing device.", _ALL,
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
                 "torch/serialization.py in 2.7, 2.8, 2.14; real run (2.13); the message goes on with the "
                 "two options"),
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
        (Wording("cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned",
                 "CUDA; " + _ALL + " (the type name as learner reports quote it)",
                 "suffix verbatim in libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("cannot pin 'MetaFloatType' only dense CPU tensors can be pinned", _ALL, "real run (2.7, 2.13)")),
        "Pinned (page-locked) memory is CPU memory that a GPU can copy from directly. A tensor already on "
        "the GPU (or a sparse one) cannot be pinned; often `pin_memory=True` meets batches a `Dataset` "
        "already moved to the GPU.",
        "Pin CPU tensors only: keep the `Dataset` on the CPU, let `DataLoader(..., pin_memory=True)` pin, "
        "and move each batch with `x.to(device, non_blocking=True)`."),
    Family(
        "leaf", "A moved tensor is not a leaf",
        (r"you can only change requires_grad flags of leaf variables", r"can't optimize a non-leaf Tensor"),
        (Wording("you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
                 "in a subgraph that doesn't require differentiation use var_no_grad = var.detach().", _ALL,
                 "real run (2.7, 2.13); libtorch_cpu.so 2.7, 2.8, 2.14"),
         Wording("can't optimize a non-leaf Tensor", _ALL,
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
        (r"Expected a '(?P<b>\w+)' device type for generator but found '(?P<a>\w+)'",
         r"(?P<meta>META) device type not an accelerator"),
        (Wording("Expected a 'cuda' device type for generator but found 'cpu'", "CUDA; " + _ALL,
                 "check_generator: format in libtorch_cpu.so and libtorch_cuda.so 2.7, 2.8, 2.14"),
         Wording("Expected a 'cpu' device type for generator but found 'cuda'",
                 "CUDA: a CUDA generator for a draw on the CPU; " + _ALL, "the same check, the other way round"),
         Wording("Expected a 'mps' device type for generator but found 'cpu'", _MAC, "the same check"),
         Wording("META device type not an accelerator.", _ALL,
                 "real run: torch.Generator(device=\"meta\") (2.13); format in libtorch_cpu.so 2.7, 2.8, 2.14")),
        "A random-number generator on one device type drew numbers for another. " + GENERATOR_RULE,
        "Don't set a default device for the whole program: restore it with `torch.set_default_device(None)` "
        "before making and iterating the DataLoader, and move each batch with `.to(device)`. A generator you "
        "pass yourself must be on the device that draws: `torch.Generator(device=device)`.",
        tailor=tailor_generator),
    Family(
        "meta-data", "A meta tensor has no data",
        (r"Tensor\.item\(\) cannot be called on meta tensors", r"Cannot copy out of meta tensor; no data!"),
        (Wording("Tensor.item() cannot be called on meta tensors", _ALL,
                 "real run (2.7, 2.13); torch/_meta_registrations.py in 2.7, 2.8, 2.14"),
         Wording("Cannot copy out of meta tensor; no data!", _ALL,
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
    for f in FAMILIES:
        if f.key == key:
            return f
    raise KeyError(key)

