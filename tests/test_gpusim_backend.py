"""course_utils.simdevice: the simulated GPU holds real values and behaves as a CUDA GPU does, in a process of its own
(its registration cannot be undone, so it never happens in the test runner's process).

Each case is a learner's cell; what it must do is what a CUDA build of the installed PyTorch does (read from
PyTorch's own rules, :mod:`course_utils.devicerules`): run with these values, or raise this message."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from course_utils.gpusim import backend as simdevice
from course_utils.gpusim import rules as devicerules
from course_utils.device import DEVICE_ENV, accelerator

pytestmark = pytest.mark.skipif(not simdevice.available(), reason=f"PyTorch {torch.__version__} cannot register "
                                "the simulated GPU (2.10 and later can): the course needs 2.10")

#: Cells that run on a GPU: name -> (code, the value its last line must give, as text).
RUNS = {
    "print": ("g = torch.arange(3.).to(device); repr(g)", "tensor([0., 1., 2.], device='simgpu:0')"),
    "print rows aligned as on a GPU": ("repr(torch.zeros(2, 2, 2).to(device)) == repr(torch.zeros(2, 2, 2))[:-1] + "
                                       "\", device='simgpu:0')\"", "True"),
    "print a parameter": ("repr(nn.Linear(2, 1).to(device).bias).startswith('Parameter containing:\\ntensor([') "
                          "and repr(nn.Linear(2, 1).to(device).bias).endswith(\"device='simgpu:0', requires_grad=True)\")",
                          "True"),
    "item": ("torch.tensor([1.5, 2.5], device=device).sum().item()", "4.0"),
    "tolist": ("torch.ones(2, 2, device=device).tolist()", "[[1.0, 1.0], [1.0, 1.0]]"),
    "to cpu": ("t = torch.ones(2, device=device).to('cpu'); (type(t).__name__, str(t.device))", "('Tensor', 'cpu')"),
    "cpu()": ("str(torch.ones(2, device=device).cpu().device)", "cpu"),
    "boolean mask": ("g = torch.arange(5., device=device); g[g > 2].tolist()", "[3.0, 4.0]"),
    "mask with a cpu mask": ("g = torch.arange(4., device=device); "
                             "g[torch.tensor([True, False, True, False])].tolist()", "[0.0, 2.0]"),
    "cpu index": ("g = torch.arange(4., device=device); g[torch.tensor([0, 3])].tolist()", "[0.0, 3.0]"),
    "0-dim cpu in a binary op": ("(torch.ones(2, device=device) * torch.tensor(3.)).tolist()", "[3.0, 3.0]"),
    "0-dim cpu in place": ("g = torch.ones(2, device=device); g += torch.tensor(1.); g.mul_(torch.tensor(.5)); "
                           "g.tolist()", "[1.0, 1.0]"),
    "where moves 0-dim": ("g = torch.arange(3., device=device); torch.where(g > 0, g, torch.tensor(-1.)).tolist()",
                          "[-1.0, 1.0, 2.0]"),
    "written 0-dim value": ("g = torch.zeros(3, device=device); g[torch.tensor([1])] = torch.tensor(7.); g.tolist()",
                            "[0.0, 7.0, 0.0]"),
    "masked_fill with a 0-dim cpu value": ("g = torch.zeros(2, device=device); "
                                           "g.masked_fill(g == 0, torch.tensor(2.)).tolist()", "[2.0, 2.0]"),
    "copy_ between devices": ("g = torch.zeros(2, device=device); g.copy_(torch.ones(2)); g.tolist()", "[1.0, 1.0]"),
    "second device": ("str(torch.zeros(1, device='simgpu:1').to('simgpu:0').device)", "simgpu:0"),
    "device index None": ("torch.device('simgpu').index is None and torch.device('simgpu') != torch.device('simgpu:0')",
                          "True"),
    "Module.to keeps parameters": ("m = nn.Linear(3, 2); w = m.weight; m.to(device); "
                                   "(m.weight is w, str(w.device))", "(True, 'simgpu:0')"),
    "training matches the CPU": (textwrap.dedent("""\
        torch.manual_seed(0); cpu_model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
        sim_model = copy.deepcopy(cpu_model).to(device)
        x, y = torch.randn(16, 3), torch.randn(16, 1)
        for model, xs, ys in ((cpu_model, x, y), (sim_model, x.to(device), y.to(device))):
            opt = torch.optim.Adam(model.parameters(), lr=0.05)
            for _ in range(5):
                loss = F.mse_loss(model(xs), ys); opt.zero_grad(); loss.backward(); opt.step()
        state = opt.state[next(sim_model.parameters())]
        (all(torch.allclose(a, b.cpu()) for a, b in zip(cpu_model.parameters(), sim_model.parameters())),
         str(state['exp_avg'].device))"""), "(True, 'simgpu:0')"),
    "save and load": (textwrap.dedent("""\
        buf = io.BytesIO(); torch.save(nn.Linear(2, 2).to(device).state_dict(), buf)
        places = []
        for where in ('cpu', None, device, 'simgpu:1'):
            buf.seek(0); places.append(str(torch.load(buf, map_location=where)['weight'].device))
        places"""), "['cpu', 'simgpu:0', 'simgpu:0', 'simgpu:1']"),
    "a cpu checkpoint onto the device": (textwrap.dedent("""\
        buf = io.BytesIO(); torch.save(nn.Linear(2, 2).state_dict(), buf); buf.seek(0)
        str(torch.load(buf, map_location=device)['bias'].device)"""), "simgpu:0"),
    "pack with lengths on the CPU": ("from torch.nn.utils.rnn import pack_padded_sequence\n"
                                     "p = pack_padded_sequence(torch.ones(3, 5, 2, device=device), "
                                     "torch.tensor([5, 3, 2]), batch_first=True)\n"
                                     "[str(p.data.device), str(p.batch_sizes.device), p.batch_sizes.tolist()]",
                                     "['simgpu:0', 'cpu', [3, 3, 2, 1, 1]]"),
    "DataLoader(pin_memory=True)": ("data = torch.utils.data.TensorDataset(torch.ones(4, 2)); "
                                    "[b[0].shape[0] for b in torch.utils.data.DataLoader(data, batch_size=2, "
                                    "pin_memory=True)]", "[2, 2]"),
    "accelerator": ("(torch.accelerator.is_available(), str(torch.accelerator.current_accelerator()), "
                    "torch.accelerator.device_count())", "(True, 'simgpu', 2)"),
    "synchronize": ("torch.accelerator.synchronize(); torch.accelerator.synchronize(device)", "None"),
    "autocast": ("layer = nn.Linear(2, 2).to(device)\nwith torch.autocast(device_type=device.type, "
                 "dtype=torch.float16):\n    out = layer(torch.ones(1, 2, device=device))\n"
                 "(out.dtype, layer.weight.dtype)", "(torch.float16, torch.float32)"),
    "device map: a view shares its tensor's block": ("x = torch.randn(4, 3, device=device); v = x[1:]; "
                                                     "'x, v' in str(cu.show_devices(x, v))", "True"),
    "distributions": ("str(torch.distributions.Normal(torch.zeros(2, device=device), "
                      "torch.ones(2, device=device)).sample().device)", "simgpu:0"),
    # factories PyTorch builds as an empty tensor that an out= kernel resizes, and out= and in-place view ops
    "factories have their shape": ("[tuple(t.shape) for t in (torch.arange(5, device=device), "
                                   "torch.eye(3, device=device), torch.range(0, 2, device=device), "
                                   "torch.linspace(0, 1, 4, device=device), torch.randperm(4, device=device), "
                                   "torch.arange(6, device='simgpu:1').view(2, 3), "
                                   "torch.tril_indices(3, 3, device=device))]",
                                   "[(5,), (3, 3), (3,), (4,), (4,), (2, 3), (2, 6)]"),
    "a factory's tensor reads as on a GPU": ("a = torch.arange(3, device=device); (len(a), a[2].item(), repr(a), "
                                             "(torch.eye(2, device=device) @ torch.ones(2, device=device)).tolist())",
                                             "(3, 2, \"tensor([0, 1, 2], device='simgpu:0')\", [1.0, 1.0])"),
    "out= and in-place views resize their tensor": (
        "o = torch.empty(0, device=device); r = torch.add(torch.ones(3, device=device), 1, out=o)\n"
        "g = torch.zeros(2, 3, device=device); g.t_(); h = torch.zeros(3, device=device); h.unsqueeze_(0)\n"
        "(r is o, o.tolist(), tuple(g.shape), tuple(h.shape), tuple(h.stride()))",
        "(True, [2.0, 2.0, 2.0], (3, 2), (1, 3), (3, 1))"),
    "a cpu tensor filled in place with a 0-dim device value stays on the cpu": (
        "c = torch.zeros(3); r = c.fill_(torch.tensor(2., device=device))\n"
        "m = c.masked_fill_(torch.tensor([True, False, False]), torch.tensor(5., device='simgpu:1'))\n"
        "(r is c, m is c, type(c).__name__, str(c.device), c.tolist())",
        "(True, True, 'Tensor', 'cpu', [5.0, 2.0, 2.0])"),
    "LSTM and GRU train as on the CPU": (textwrap.dedent("""\
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        same = []
        for layer, bias in ((nn.LSTM, True), (nn.LSTM, False), (nn.GRU, True), (nn.GRU, False)):
            torch.manual_seed(0); cpu_rnn = layer(3, 4, num_layers=2, bias=bias, batch_first=True)
            x, found = torch.randn(3, 5, 3), []
            for rnn, where in ((cpu_rnn, 'cpu'), (copy.deepcopy(cpu_rnn).to(device), device)):
                xs = x.to(where, copy=True).requires_grad_()
                out, hidden = rnn(pack_padded_sequence(xs, torch.tensor([5, 3, 2]), batch_first=True))
                padded, _ = pad_packed_sequence(out, batch_first=True)
                h = hidden if isinstance(hidden, tuple) else (hidden,)
                (padded.sum() + sum((t * t).sum() for t in h)).backward()
                found.append([t.detach().cpu() for t in (padded, *h, xs.grad, *(p.grad for p in rnn.parameters()))])
            same.append(all(torch.allclose(a, b, atol=1e-5) for a, b in zip(*found)))
        same"""), "[True, True, True, True]"),
    "save and load keep views views, as map_location says": (textwrap.dedent("""\
        from unittest import mock
        def saved(values, tag=None):
            buf = io.BytesIO()
            with mock.patch('torch.serialization.location_tag', tag or torch.serialization.location_tag):
                torch.save(values, buf)
            return buf
        found = []
        cases = [(torch.arange(6., device=device), where) for where in (None, 'simgpu:1', {'simgpu:0': 'cpu'},
                                                                        lambda s, loc: s, lambda s, loc: None)]
        for x, where in cases + [(torch.arange(6.), where) for where in ('simgpu', {'cpu': 'simgpu:1'})]:
            buf = saved([x, x[2:].view(2, 2)]); buf.seek(0)
            a, b = torch.load(buf, map_location=where); b[0, 0] = 100.
            found.append((str(a.device), str(b.device), a[2].item()))
        buf = saved({'x': torch.arange(4.)}, lambda storage: 'cuda:0'); buf.seek(0)   # a GPU's checkpoint
        found.append(str(torch.load(buf, map_location={'cuda:0': 'simgpu:0'})['x'].device))
        found"""), "[('simgpu:0', 'simgpu:0', 100.0), ('simgpu:1', 'simgpu:1', 100.0), ('cpu', 'cpu', 100.0), "
                   "('cpu', 'cpu', 100.0), ('simgpu:0', 'simgpu:0', 100.0), ('simgpu:0', 'simgpu:0', 100.0), "
                   "('simgpu:1', 'simgpu:1', 100.0), 'simgpu:0']"),
    "autocast: attention and recurrent layers in float16": (
        "q = torch.randn(1, 2, 4, 8, device=device)\n"
        "with torch.autocast(device_type=device.type, dtype=torch.float16):\n"
        "    found = (F.scaled_dot_product_attention(q, q, q).dtype, nn.LSTM(8, 4).to(device)(q[0, 0:1])[0].dtype,\n"
        "             F.binary_cross_entropy_with_logits(q, q.sigmoid()).dtype)\nfound",
        "(torch.float16, torch.float16, torch.float32)"),
    "the current device": (textwrap.dedent("""\
        torch.accelerator.set_device_index(1)
        made = (torch.accelerator.current_device_index(), str(torch.zeros(1, device='simgpu').device),
                str(torch.ones(1).to('simgpu').device), str(nn.Linear(1, 1).to(torch.device('simgpu')).bias.device),
                str(torch.ones(1).to('simgpu:0').device))
        torch.accelerator.set_device_index(0)
        with torch.accelerator.device_index(1):
            inside = (torch.accelerator.current_device_index(), str(torch.ones(1, device='simgpu').device))
        (made, inside, torch.accelerator.current_device_index(), str(torch.ones(1).to('simgpu').device))"""),
        "((1, 'simgpu:1', 'simgpu:1', 'simgpu:1', 'simgpu:0'), (1, 'simgpu:1'), 0, 'simgpu:0')"),
    "memory questions are refused clearly, caches emptied": (textwrap.dedent("""\
        said = []
        for name in ('memory_allocated', 'max_memory_allocated', 'memory_reserved', 'max_memory_reserved',
                     'memory_stats', 'get_memory_info', 'reset_peak_memory_stats', 'reset_accumulated_memory_stats'):
            for module in (torch.accelerator, torch.simgpu):
                try:
                    getattr(module, name)()
                except RuntimeError as error:
                    said.append(str(error).startswith(name + "() has no answer on the course's simulated GPU: it "
                                                      "does not model memory"))
        (len(said), all(said), torch.accelerator.empty_cache(), torch.accelerator.empty_host_cache())"""),
        "(16, True, None, None)"),
    "torch.tensor and as_tensor on the current device": (textwrap.dedent("""\
        torch.accelerator.set_device_index(1)
        made = (str(torch.tensor(data=[1.], device='simgpu').device),
                str(torch.as_tensor(__import__('numpy').arange(3.), device='simgpu').device),
                str(torch.tensor([1.], device='simgpu:0').device))
        torch.accelerator.set_device_index(0)
        with torch.device(device):   # a default device still reaches them
            made += (str(torch.tensor([1.]).device), str(torch.as_tensor([1.]).device))
        made + (str(torch.tensor([1.], device='simgpu').device),)"""),
        "('simgpu:1', 'simgpu:1', 'simgpu:0', 'simgpu:0', 'simgpu:0', 'simgpu:0')"),
    "a generator on the device": (textwrap.dedent("""\
        g = torch.Generator(device=device).manual_seed(42)
        x = torch.randn(3, device=device, generator=g)
        g.manual_seed(42)
        (str(g.device), torch.equal(x, torch.randn(3, device=device, generator=g)),
         isinstance(g, torch.Generator), isinstance(torch.default_generator, torch.Generator),
         str(torch.Generator().device), str(torch.Generator(device='simgpu:1').device))"""),
        "('simgpu:0', True, True, True, 'cpu', 'simgpu:1')"),
    "training on device 1, on the caller's thread": (
        "w = torch.ones(2, device='simgpu:1', requires_grad=True); (w * 2).sum().backward(); "
        "(str(w.grad.device), w.grad.tolist(), torch.is_grad_enabled())", "('simgpu:1', [2.0, 2.0], True)"),
    "optimizers take the multi-tensor path, as on CUDA": (
        "from torch.optim.optimizer import _default_to_fused_or_foreach\n"
        "_default_to_fused_or_foreach(list(nn.Linear(2, 2).to(device).parameters()), False, False)", "(False, True)"),
    "dropout draws from the device's stream; generators pickle and copy": (textwrap.dedent("""\
        torch.manual_seed(0); on_cpu = F.dropout(torch.ones(16), 0.5)
        torch.manual_seed(0); on_device = F.dropout(torch.ones(16, device=device), 0.5); after = F.dropout(torch.ones(16), 0.5)
        g = torch.Generator(device='simgpu:1').manual_seed(7)
        back = pickle.loads(pickle.dumps(g)); twin = copy.deepcopy(g)
        buf = io.BytesIO(); torch.save({'cpu': torch.Generator()}, buf)
        (torch.equal(on_cpu, on_device.cpu()), torch.equal(on_cpu, after), str(back.device), back.initial_seed(),
         torch.equal(twin.get_state(), g.get_state()))"""), "(False, True, 'simgpu:1', 7, True)"),
    "gradients from another thread, on simgpu:1": (textwrap.dedent("""\
        import threading
        found = []
        def step():
            w = torch.ones(2, device='simgpu:1', requires_grad=True); (w * 2).sum().backward(); found.append(w.grad.tolist())
        worker = threading.Thread(target=step); worker.start(); worker.join()
        found"""), "[[2.0, 2.0]]"),
    "the device's own random stream": (textwrap.dedent("""\
        torch.manual_seed(0); on_cpu = torch.randn(3)
        torch.manual_seed(0); on_device = torch.randn(3, device=device); after = torch.randn(3)
        torch.manual_seed(0); again = torch.randn(3, device=device)
        state = torch.simgpu.get_rng_state(); u = torch.rand(2, device=device); torch.simgpu.set_rng_state(state)
        (torch.equal(on_cpu, on_device.cpu()), torch.equal(on_cpu, after), torch.equal(on_device, again),
         torch.equal(u, torch.rand(2, device=device)))"""), "(False, True, True, True)"),
}

#: Cells a GPU refuses: name -> (code, the exception type, the message as a function of the PyTorch version).
RAISES = {
    "a fresh cpu generator beside a fresh device one": ("g = torch.Generator(device=device)\n"
                                                        "torch.randn(3, device=device, generator=torch.Generator())",
                                                        "RuntimeError", "Expected a 'simgpu' device type for generator "
                                                        "but found 'cpu'"),
    "a cpu generator for a device tensor": ("torch.randn(3, device=device, generator=torch.Generator())",
                                            "RuntimeError", "Expected a 'simgpu' device type for generator but found "
                                            "'cpu'"),
    "a shuffling DataLoader under a default device": (
        "torch.set_default_device(device)\ntry:\n    next(iter(torch.utils.data.DataLoader(torch.arange(8.), "
        "batch_size=4, shuffle=True)))\nfinally:\n    torch.set_default_device(None)", "RuntimeError",
        "Expected a 'simgpu' device type for generator but found 'cpu'"),
    "cpu + device": ("torch.ones(2, device=device) + torch.ones(2)", "RuntimeError",
                     devicerules.elementwise_message("simgpu:0", "cpu")),
    "device 0 + device 1": ("torch.ones(2, device=device) + torch.ones(2, device='simgpu:1')", "RuntimeError",
                            devicerules.elementwise_message("simgpu:0", "simgpu:1")),
    "Linear on a cpu input": ("nn.Linear(3, 2).to(device)(torch.ones(1, 3))", "RuntimeError",
                              devicerules.per_argument_message("mat1", "cpu", "simgpu:0", "wrapper_CUDA_addmm")),
    "three inputs refuse a 0-dim cpu": ("g = torch.ones(2, device=device); torch.addcdiv(g, g, torch.tensor(2.))",
                                        "RuntimeError", devicerules.elementwise_message("simgpu:0", "cpu")),
    # addcmul's CUDA kernel refuses a 0-dim CPU tensor1 in its own words (seen on an H100, PyTorch 2.11)
    "addcmul refuses a 0-dim cpu tensor1": ("g = torch.ones(2, device=device); torch.addcmul(g, torch.tensor(2.), g)",
                                            "RuntimeError", devicerules.OWN_CPU_SCALAR_CHECKS["addcmul"]["tensor1"]),
    "scatter_ with a cpu index": ("torch.zeros(3, device=device).scatter_(0, torch.tensor([0]), "
                                  "torch.ones(1, device=device))", "RuntimeError",
                                  devicerules.per_argument_message("index", "cpu", "simgpu:0",
                                                                   "wrapper_CUDA_scatter__src")),
    "written non-0-dim cpu values": ("g = torch.zeros(2, 2, device=device); g[torch.tensor([0])] = torch.ones(1, 2)",
                                     "RuntimeError", devicerules.elementwise_message("simgpu:0", "cpu")),
    "a device index into cpu data": ("torch.ones(3)[torch.tensor([0], device=device)]", "RuntimeError",
                                     "indices should be either on cpu or on the same device as the indexed tensor "
                                     "(cpu)"),
    "masked_fill with a cpu mask": ("g = torch.zeros(2, device=device); g.masked_fill(torch.tensor([True, False]), 1.)",
                                    "RuntimeError", "expected self and mask to be on the same device, but got mask on "
                                                    "cpu and self on simgpu:0"),
    "bucketize": ("torch.bucketize(torch.ones(2, device=device), torch.tensor([0., 2.]))", "RuntimeError",
                  devicerules.per_argument_message("boundaries", "cpu", "simgpu:0", "wrapper_CUDA_Tensor_bucketize")),
    "cdist": ("torch.cdist(torch.ones(1, 2, 3, device=device), torch.ones(1, 2, 3))", "RuntimeError",
              devicerules.per_argument_message("x2", "cpu", "simgpu:0", "wrapper_CUDA___cdist_forward")),
    "BatchNorm with cpu running stats": ("F.batch_norm(torch.ones(2, 3, device=device), torch.zeros(3), torch.ones(3))",
                                         "RuntimeError",
                                         devicerules.per_argument_message("running_mean", "cpu", "simgpu:0",
                                                                          "wrapper_CUDA__native_batch_norm")),
    "numpy": ("torch.ones(2, device=device).numpy()", "TypeError",
              "can't convert simgpu:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
              "first."),
    # pack_padded_sequence reads the lengths on the host (PackedSequence.cpp's checkLongTensor)
    "pack with lengths on the device": ("from torch.nn.utils.rnn import pack_padded_sequence\n"
                                        "pack_padded_sequence(torch.ones(3, 5, 2, device=device), "
                                        "torch.tensor([5, 3, 2], device=device), batch_first=True)", "RuntimeError",
                                        "'lengths' argument should be a 1D CPU int64 tensor, but got 1D simgpu:0 "
                                        "Long tensor"),
    # a GPU pins CPU tensors only: its own tensors are refused with their type's name (CUDA's, 2.10 to 2.15)
    "pin a device tensor": ("torch.ones(2, device=device).pin_memory()", "RuntimeError",
                            "cannot pin 'CUDAFloatType' only dense CPU tensors can be pinned"),
    "pin a device tensor of int64": ("torch.ones(2, dtype=torch.int64, device=device).pin_memory()", "RuntimeError",
                                     "cannot pin 'CUDALongType' only dense CPU tensors can be pinned"),
    # CUDA's autocast refuses it (autocast_mode.cpp), in the words of the installed PyTorch (tested below)
    "autocast refuses binary_cross_entropy": ("with torch.autocast(device_type=device.type, dtype=torch.float16):\n"
                                              "    nn.BCELoss()(torch.rand(2, device=device), "
                                              "torch.ones(2, device=device))", "RuntimeError",
                                              devicerules.AUTOCAST_REFUSED),
}

_PROBE = r"""
import copy, io, json, pickle, sys, traceback
import torch, torch.nn as nn, torch.nn.functional as F
import course_utils as cu
from course_utils.gpusim import backend as simdevice
device = cu.setup()
cases = json.loads(sys.stdin.read())
out = {"device": str(device)}
simdevice._note_pending = False   # the first error's note, tested apart
import ast
for name, code in cases.items():
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    scope = {"torch": torch, "nn": nn, "F": F, "copy": copy, "io": io, "pickle": pickle, "device": device, "cu": cu}
    try:
        exec(compile(tree, "<cell>", "exec"), scope)
        value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), scope) if last else None
        out[name] = ["ok", value if isinstance(value, str) else repr(value)]
    except Exception as e:
        frames = traceback.extract_tb(e.__traceback__)
        out[name] = [type(e).__name__, str(e), len(frames)]
print("RESULTS " + json.dumps(out))
"""


#: A child's environment that asks for the simulated GPU, also where there is a real one (``COURSE_DEVICE=simgpu``).
SIMULATED_ENV = {**os.environ, DEVICE_ENV: "simgpu"}


@pytest.fixture(scope="module")
def outcomes() -> dict:
    cases = {name: code for name, (code, *_) in {**RUNS, **RAISES}.items()}
    done = subprocess.run([sys.executable, "-c", _PROBE], input=json.dumps(cases), capture_output=True, text=True,
                          timeout=300, env=SIMULATED_ENV)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULTS ")), None)
    assert line, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(line[len("RESULTS "):])


def test_setup_hands_out_the_simulated_gpu(outcomes):
    assert outcomes["device"] == "simgpu:0"


@pytest.mark.parametrize("name", list(RUNS))
def test_what_a_gpu_runs_runs_with_real_values(outcomes, name):
    if name == "accelerator" and accelerator() is not None:
        pytest.skip("torch.accelerator names the real accelerator here, not the simulated GPU")
    assert outcomes[name] == ["ok", RUNS[name][1]], outcomes[name]


@pytest.mark.parametrize("name", list(RAISES))
def test_what_a_gpu_refuses_raises_its_error(outcomes, name):
    kind, message = RAISES[name][1:]
    got = outcomes[name]
    assert got[:1] == [kind] and got[1].startswith(message), got


def test_the_autocast_refusal_is_the_installed_pytorchs_own_message():
    """CUDA's autocast refuses binary_cross_entropy with a message built into ``libtorch_cpu`` (every build)."""
    from pathlib import Path
    library = next((Path(torch.__file__).parent / "lib").glob("libtorch_cpu.*"), None)
    if library is None:
        pytest.skip("no libtorch_cpu in this PyTorch")
    assert devicerules.AUTOCAST_REFUSED.encode() + b"\0" in library.read_bytes()


def test_the_first_error_says_where_it_comes_from_and_tracebacks_stay_short():
    code = ("import torch, course_utils as cu\ndevice = cu.setup()\n"
            "try:\n    torch.ones(2, device=device) + torch.ones(2)\nexcept RuntimeError as e:\n"
            "    import traceback; print(len(traceback.extract_tb(e.__traceback__))); print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=SIMULATED_ENV)
    frames, *message = done.stdout.splitlines()[-3:]
    assert message == [devicerules.elementwise_message("simgpu:0", "cpu"), simdevice.NOTE], done.stdout + done.stderr
    assert int(frames) <= 6


def test_the_banner_says_what_is_simulated_and_what_is_not():
    done = subprocess.run([sys.executable, "-c", "import course_utils as cu; cu.setup('01')"], capture_output=True,
                          text=True, timeout=120, env=SIMULATED_ENV)
    banner = " ".join(done.stdout.split())
    assert "Device for this lesson: simgpu:0" in banner
    assert "Simulated GPU: simgpu:0 and simgpu:1 hold real values in host memory" in banner
    assert ("timings on them are a modeled H100's, labelled so. Not simulated: memory limits, pinned memory and "
            "CUDA's own API") in banner


@pytest.mark.skipif(accelerator() is not None, reason="with an accelerator the lessons use it")
def test_without_a_gpu_the_banner_says_the_learner_has_a_simulated_one():
    """No "No accelerator found" where torch.accelerator then reports the simulated GPU, and no word of meta."""
    env = {k: v for k, v in os.environ.items() if k != DEVICE_ENV}
    code = "import course_utils as cu, torch; d = cu.setup('01'); print(d, torch.accelerator.current_accelerator())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    banner = " ".join(done.stdout.split())
    assert done.stdout.split()[-2:] == ["simgpu:0", "simgpu"], done.stdout + done.stderr
    assert "No GPU here, so the course gives you a simulated one." in banner
    assert "No accelerator found" not in banner and "meta" not in banner and "stand-in" not in banner


def test_the_banner_names_a_real_gpu_that_course_device_set_aside():
    """Once registered, torch.accelerator names the simulated GPU even beside a real one: the banner asks each
    backend, so a class that chose the simulated GPU on a GPU machine reads that a GPU is there."""
    code = ("import torch; torch.cuda.is_available = lambda: True\n"
            "import course_utils as cu; cu.setup('01')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=SIMULATED_ENV)
    banner = " ".join(done.stdout.split())
    assert "A GPU (cuda) is present but COURSE_DEVICE chose the simulated GPU." in banner, done.stdout + done.stderr
    assert "No GPU here" not in banner
