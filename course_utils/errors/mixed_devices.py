"""The catalogue's first families: one operation given tensors on different devices, the error the course is about,
in each of PyTorch's wordings (the generic check, an operation's own, the 0-dim CPU tensors' exceptions,
``nn.DataParallel``'s, an optimizer's state), in the order the explainer ranks them.
:data:`~course_utils.errors.catalogue.FAMILIES` starts with them."""
from __future__ import annotations

from .schema import ALL_CHECKED, DEV, MAC_SOURCE, Family, Wording
from .tailors import (SAME_DEVICE_RULE, SEE_WHERE, data_parallel_fix, devices_differ, tailor_data_parallel,
                      tailor_devices, tailor_op_devices)

__all__ = ["MIXED_DEVICES"]

MIXED_DEVICES: tuple[Family, ...] = (
    Family(
        "devices", "Tensors on different devices",
        (r"Expected all tensors to be on the same (?:common )?device, but found at least two devices, (?P<b>" + DEV
         + r") and (?P<a>" + DEV + r")!?(?: \(when checking (?:argument|arugment) for argument (?P<arg>\w+) in "
         r"method (?P<op>\w+)\))?",
         r"Expected all tensors to be on the same device, but got (?P<arg>\w+) is on (?P<a>" + DEV
         + r"), different from other tensors on (?P<b>" + DEV
         + r")(?: \(when checking argument in method (?P<op>\w+)\))?",
         r"Expected object of device type (?P<b>\w+) but got device type (?P<a>\w+) for (?:argument #\d+|sequence "
         r"element \d+ in sequence argument at position #\d+) '(?P<arg>\w+)'(?: in call to (?P<op>\w+))?",
         r"Tensor for argument #\d+ '(?P<arg>\w+)' is on (?P<a>CPU), (?:Tensor for argument #\d+ '\w+' is on CPU, )?"
         r"but expected (?:it|them) to be on GPU(?: \(while checking arguments for (?P<op>\w+)\))?",
         r"Tensor on device (?P<a>" + DEV + r") is not on the expected device (?P<b>" + DEV + r")!",
         r"Input type \((?P<ta>[^()\n]{1,60})\) and (?P<param>weight|bias) "
         r"type \((?P<tb>[^()\n]{1,60})\) should be the same",
         r"Tensor for argument #?\d*\s*'?(?P<arg>\w+)'? is on (?P<a>" + DEV + r") but expected on (?P<b>" + DEV
         + r")",
         r"Expected tensor for argument #\d+ '(?P<arg>\w+)' to have the same device as tensor for argument #\d+ "
         r"'(?P<arg2>\w+)'; but device (?P<a>\d+) does not equal (?P<b>\d+)"
         r"(?: \(while checking arguments for (?P<op>\w+)\))?",
         r"Input and (?:parameter|hidden) tensors are not at the same device, found input tensor at (?P<a>" + DEV
         + r") and (?P<what>parameter|hidden) tensor at (?P<b>" + DEV + r")",
         r"(?P<arg>input)\(device='(?P<a>" + DEV + r")'\) and weight\(device=(?P<b>" + DEV
         + r")'\) must be on the same device",
         r"expected self and (?P<arg>mask) to be on the same device, but got mask on (?P<a>" + DEV
         + r") and self on (?P<b>" + DEV + r")",
         r"expected self and (?P<arg>mask) to be on the same device",
         r"Placeholder storage has not been allocated(?: on (?P<b>MPS) device)?",
         r"is not on the expected device",
         r"Expected all tensors to be on the same device"),
        (Wording("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
                 "element-wise operations on CUDA; " + ALL_CHECKED + ", and 1.x",
                 "TensorIterator.cpp, prefix verbatim in libtorch_cpu.so 2.7, 2.8, 2.14 (the first non-CPU device "
                 "met, then the other: `cpu_t + gpu_t` reads `cuda:0 and cpu` too; not which tensor is odd)"),
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
                 "late 1.x, after the misspelling was fixed in July 2021 (learner reports from 2022; no build checked)",
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
                 "convolutions); " + ALL_CHECKED,
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
         Wording("Tensor for argument input is on cpu but expected on mps", MAC_SOURCE,
                 "aten/src/ATen/native/mps/operations/Linear.mm; test/test_mps.py asserts it"),
         Wording("Tensor for argument weight is on cpu but expected on mps", MAC_SOURCE,
                 "the same check for the layer's weight; test/test_mps.py asserts it"),
         Wording("Placeholder storage has not been allocated on MPS device!", MAC_SOURCE,
                 "Placeholder, aten/src/ATen/native/mps/OperationUtils.mm"),
         Wording("slow_conv2d_forward_mps: input(device='cpu') and weight(device=mps:0')  must be on the same device",
                 MAC_SOURCE + " (the two spaces and the lone quote are PyTorch's)",
                 "slow_conv2d_forward_mps, aten/src/ATen/mps/MPSFallback.mm"),
         Wording("Input and parameter tensors are not at the same device, found input tensor at cpu and parameter "
                 "tensor at meta", ALL_CHECKED,
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
         Wording("Tensor on device cpu is not on the expected device meta!", ALL_CHECKED,
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
        (r"Expected query, key, and value to have the same device type, but got query\.device: (?P<q>" + DEV
         + r"),? key\.device: (?P<k>" + DEV + r"),? and value\.device: (?P<v>" + DEV + r")",
         r"Expected query, key, and value to have the same device type",
         r"torch\.searchsorted\(\): boundaries and input value tensors should have same device type, but got "
         r"boundaries tensor device type (?P<b>" + DEV + r") and input value tensor device type (?P<a>" + DEV + r")",
         r"torch\.searchsorted\(\): (?P<sorter>sorter) and boundary tensors should have same device type, but got "
         r"sorter tensor device type (?P<a>" + DEV + r") and input value tensor device type (?P<b>" + DEV + r")",
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
        (r"module must have its parameters and buffers on device (?P<b>" + DEV + r") \(device_ids\[0\]\) but found "
         r"one of them on device: (?P<a>" + DEV + r")",),
        (Wording("module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them "
                 "on device: cpu", "CUDA GPUs only; " + ALL_CHECKED,
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
)
