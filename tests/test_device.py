"""course_utils.device and course_utils.runtime: device choice, override, banner."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course_utils import device as dev
import course_utils as cu
from course_utils import runtime, text
from course_utils.gpusim import backend as simdevice
from course_utils.grading import simulated_accelerator


def test_cpu_only_machine_picks_cpu(monkeypatch):
    monkeypatch.delenv(dev.DEVICE_ENV, raising=False)
    monkeypatch.delenv(dev.REQUIRE_ENV, raising=False)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    assert dev.accelerator() is None
    assert dev.best_device() == torch.device("cpu")


def test_accelerator_is_preferred_with_its_current_index(monkeypatch):
    monkeypatch.delenv(dev.DEVICE_ENV, raising=False)
    with simulated_accelerator("meta"):
        assert dev.accelerator() == torch.device("meta")
        assert dev.best_device() == torch.device("meta", 0)


def test_environment_override(monkeypatch):
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda check_available=False: torch.device("meta"))
    monkeypatch.setattr(torch.accelerator, "device_count", lambda: 2)
    monkeypatch.setenv(dev.DEVICE_ENV, "meta:1")
    assert dev.accelerator() == torch.device("meta") and dev.best_device() == torch.device("meta", 1)


@pytest.mark.parametrize("name", ["cpu", " cpu "])
def test_course_device_never_makes_the_lessons_device_the_cpu(monkeypatch, name):
    """The lessons move tensors from the CPU to `device`: it must be a GPU or the simulated one."""
    monkeypatch.setenv(dev.DEVICE_ENV, name)
    with pytest.raises(RuntimeError, match="need a device besides the CPU") as info:
        dev.best_device()
    assert "COURSE_DEVICE=simgpu" in str(info.value)


def test_simulations_hide_this_machines_settings(monkeypatch):
    from course_utils.grading import simulated_no_accelerator
    monkeypatch.setenv(dev.DEVICE_ENV, "cuda:7")
    monkeypatch.setenv(dev.REQUIRE_ENV, "1")
    with simulated_accelerator("meta"):
        assert dev.best_device() == torch.device("meta", 0)
    with simulated_no_accelerator():
        assert dev.best_device() == torch.device("cpu") and dev.accelerator() is None
    assert os.environ[dev.DEVICE_ENV] == "cuda:7" and dev.accelerator_required()


def test_override_to_a_missing_device_says_what_to_do(monkeypatch):
    monkeypatch.setenv(dev.DEVICE_ENV, "cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="Unset COURSE_DEVICE"):
        dev.best_device()


def test_required_accelerator_missing_is_an_error(monkeypatch):
    monkeypatch.delenv(dev.DEVICE_ENV, raising=False)
    monkeypatch.setenv(dev.REQUIRE_ENV, "1")
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="sees no accelerator"):
        dev.best_device()


def test_free_memory_on_cpu_is_plausible():
    free = dev.free_memory("cpu")
    assert free is None or 0 < free < 2**50
    assert dev.free_memory("meta") is None


def test_synchronize_is_a_no_op_on_cpu_and_meta():
    dev.synchronize("cpu")
    dev.synchronize("meta")


@pytest.mark.parametrize("env, name", [({"COLAB_RELEASE_TAG": "x"}, "Colab"),
                                       ({"BINDER_SERVICE_HOST": "x"}, "Binder"), ({}, "local")])
def test_platform_detection(monkeypatch, env, name):
    for key in ("COLAB_RELEASE_TAG", "BINDER_SERVICE_HOST", "BINDER_REQUEST"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delitem(__import__("sys").modules, "google.colab", raising=False)
    assert runtime.platform_name() == name


def test_banner_without_accelerator_tells_what_to_do(monkeypatch, capsys):
    monkeypatch.delenv(dev.DEVICE_ENV, raising=False)
    monkeypatch.delenv(dev.REQUIRE_ENV, raising=False)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    monkeypatch.setenv("COLAB_RELEASE_TAG", "x")
    device = runtime.setup("01")
    out = capsys.readouterr().out
    assert device == torch.device("cpu")
    assert max(map(len, out.splitlines())) <= text.WIDTH     # wrapped at spaces: JupyterLab breaks mid-word
    said = " ".join(out.split())
    assert torch.__version__ in said and "Lesson 01" in said and "running on: Colab" in said
    assert "Runtime -> Change runtime type" in said and "cannot register the course's simulated GPU" in said
    assert "meta" not in said and "No accelerator found" not in said


@pytest.mark.gpu
def test_real_accelerator_is_chosen_and_described(monkeypatch):
    monkeypatch.delenv(dev.DEVICE_ENV, raising=False)
    device = dev.best_device()
    assert device.type == torch.accelerator.current_accelerator().type
    assert device.index == torch.accelerator.current_device_index()
    assert dev.describe(device)
    x = torch.ones(3, device=device)
    dev.synchronize(device)
    assert x.device == device


@pytest.mark.parametrize("version, ok", [("2.10.0", True), ("2.13.0+cpu", True), ("3.0.0a0", True),
                                         ("2.9.1+cu128", False), ("2.7.0", False), ("1.13.1", False)])
def test_old_pytorch_is_recognised(version, ok):
    assert runtime.torch_is_supported(version) is ok


def test_banner_warns_about_an_old_pytorch(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.9.0")
    assert 'pip install -U "torch>=2.10"' in " ".join(runtime.banner(torch.device("cpu")).split())
    monkeypatch.setattr(torch, "__version__", "2.10.1")
    assert "older than" not in runtime.banner(torch.device("cpu"))


def test_the_declared_floor_is_the_tested_one():
    """`.ci/floor.txt` is what CI tests; every file that declares a minimum must say the same."""
    root = Path(__file__).resolve().parent.parent
    floor = dict(line.strip().split("==") for line in (root / ".ci/floor.txt").read_text().splitlines()
                 if "==" in line and not line.startswith("#"))
    torch_floor = ".".join(floor["torch"].split(".")[:2])
    assert tuple(int(p) for p in torch_floor.split(".")) == runtime.MIN_TORCH
    widgets_floor = ".".join(floor["ipywidgets"].split(".")[:2])
    for path in ("requirements.txt", "binder/requirements.txt", "pyproject.toml"):
        text = (root / path).read_text()
        assert f"torch>={torch_floor}" in text and f"ipywidgets>={widgets_floor}" in text, path
        assert not re.search(r"torch>=(?!" + re.escape(torch_floor) + r"\b)", text), path
    assert f"PyTorch {torch_floor} or newer" in (root / "README.md").read_text()


def test_the_banner_does_not_create_a_cuda_context(monkeypatch):
    """Free memory would need a CUDA context (hundreds of MB) in lessons that never use the GPU."""
    class Props:
        name, total_memory = "Some GPU", 16 * 2**30

    def no_context(*args, **kwargs):
        raise AssertionError("mem_get_info creates a CUDA context")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: Props())
    monkeypatch.setattr(torch.cuda, "mem_get_info", no_context)
    assert dev.describe(torch.device("cuda", 0)) == "Some GPU, 16.0 GiB"


# --- the banner says what the learner has ---------------------------------------------------------------------

def test_setup_with_an_accelerator_says_so(capsys):
    with simulated_accelerator("meta"):                  # the device choice finds an accelerator
        device = runtime.setup("06")
    said = " ".join(capsys.readouterr().out.split())
    assert device == torch.device("meta", 0) and "Accelerator: meta, 1 device(s) visible." in said
    assert "No GPU here" not in said and "Simulated GPU" not in said


# --- COURSE_DEVICE=simgpu, and the accelerator's start-up --------------------------------------------------------

@pytest.mark.skipif(not simdevice.available(), reason="the simulated GPU needs PyTorch 2.10+")
def test_course_device_simgpu_hands_out_the_simulated_gpu_even_where_a_real_one_is():
    """A class that should all see the same course, and the simulated GPU's own tests on a GPU machine."""
    code = "import course_utils as cu, torch; d = cu.setup(); print(d, (torch.ones(2, device=d) + 1).device)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, dev.DEVICE_ENV: "simgpu"})
    assert done.stdout.split()[-2:] == ["simgpu:0", "simgpu:0"], done.stdout + done.stderr
    assert "Simulated GPU: simgpu:0 and simgpu:1" in " ".join(done.stdout.split())


def test_course_device_names_the_simulated_gpu_at_index_0_only_and_after_setup(monkeypatch):
    monkeypatch.setenv(dev.DEVICE_ENV, "simgpu:1")
    with pytest.raises(RuntimeError, match="a lesson runs on simgpu:0"):
        dev.best_device()
    monkeypatch.setenv(dev.DEVICE_ENV, "simgpu")
    assert dev.simulated_by_user() and dev.chosen_by_user()
    if not simdevice.is_enabled():   # this process never registers it (conftest)
        with pytest.raises(RuntimeError, match="exists once cu.setup"):
            dev.best_device()


def test_a_check_starts_the_accelerator_before_its_time_limit(monkeypatch):
    """CUDA's start-up (seconds on a busy GPU; an H100 shared by 14 test processes took more than 2 s) must not count
    as the learner's time: cu.check starts it first."""
    from course_utils import checking
    order = []
    monkeypatch.setattr(dev, "warm_up", lambda: order.append("warm"))
    real_limit = checking.time_limit

    def limit(seconds):
        order.append("limit")
        return real_limit(seconds)
    monkeypatch.setattr(checking, "time_limit", limit)
    cu.check("01.nbytes", lambda t: t.numel() * t.element_size())
    assert order[:2] == ["warm", "limit"]


def test_warm_up_is_harmless_without_an_accelerator_and_with_one_that_cannot_start(monkeypatch):
    dev.warm_up()   # here: whatever the machine has, it returns
    monkeypatch.setattr(dev, "accelerator", lambda: torch.device("cuda"))
    monkeypatch.setattr(torch, "empty", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("no driver")))
    dev._start.cache_clear()
    try:
        dev.warm_up()
        assert dev._start("cuda") is False
    finally:
        dev._start.cache_clear()
