"""Lesson 02 checks catch the realistic mistakes and say which one it was; the lesson's facts hold."""
from __future__ import annotations

import inspect
import math
import timeit

import pytest
import torch
import torch.utils.benchmark as benchmark
from torch.utils.flop_counter import FlopCounterMode

import course_utils as cu
from course_utils.grading import simulated_accelerator, simulated_no_accelerator
from course_utils.lessons.l02_cpu_vs_gpu import matmul_flops, pick_device


# --- 02.pick_device ----------------------------------------------------------------------------

def cuda_only():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def backend_list():  # the pre-2.6 way: name the backends one by one (and miss the others)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return torch.device("xpu")
    return torch.device("cpu")


def unchecked_current():
    return torch.device(torch.accelerator.current_accelerator().type)


def current_index():   # current_device_index() needs an accelerator: it raises "none is available" without one
    index = torch.accelerator.current_device_index()
    return torch.device(torch.accelerator.current_accelerator().type, index)


@pytest.mark.parametrize("answer, says, code", [
    (lambda: torch.device("cuda"), "hard-cod", "02.hard-coded-device"),
    (lambda: torch.zeros(1).cuda().device, "hard-cod", "02.hard-coded-device"),   # raises on CPU-only, wrong elsewhere
    (cuda_only, "`torch.cuda.is_available()`", "02.cuda-only-check"),
    (backend_list, "fixed list of backends", "02.backend-list"),
    (lambda: "cuda" if torch.cuda.is_available() else "cpu", "string", "02.returned-device-string"),
    (lambda: torch.accelerator.current_accelerator() or torch.device("cpu"), "current_accelerator",
     "02.accelerator-not-checked"),
    (unchecked_current, "current_accelerator", "02.accelerator-not-checked"),     # None.type on CPU-only
    (current_index, "needs an accelerator", "02.accelerator-not-checked"),
    (lambda: torch.accelerator.current_accelerator(check_available=True), "None", "02.no-cpu-fallback"),
    (lambda: torch.device("meta"), "hard-cod", "02.hard-coded-device"),
    (lambda: 0, "should return a `torch.device`", "any.wrong-type"),
    (lambda: torch.device(), "takes no arguments", "any.raised"),                  # a TypeError of its own
])
@pytest.mark.skipif(torch.accelerator.is_available(), reason="these feedbacks are a machine without an accelerator's "
                    "(on one, the simulations catch the same answers: the test below and the gpu tests)")
def test_pick_device_mistakes(answer, says, code):
    result = cu.check("02.pick_device", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


@pytest.mark.parametrize("answer", [
    lambda: torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu"),
    lambda: torch.device(torch.accelerator.current_accelerator().type if torch.accelerator.is_available()
                         else "cpu"),
    lambda: (torch.device(torch.accelerator.current_accelerator().type,
                          torch.accelerator.current_device_index())
             if torch.accelerator.is_available() else torch.device("cpu")),
    cu.best_device,
])
def test_pick_device_accepts_valid_alternatives(answer, monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    result = cu.check("02.pick_device", answer)
    assert result.passed and result.code == "", result.feedback


@pytest.mark.parametrize("answer, says, code", [
    (lambda: torch.device("cuda"), "hard-cod", "02.hard-coded-device"),
    (cuda_only, "`torch.cuda.is_available()`", "02.cuda-only-check"),
    (backend_list, "fixed list of backends", "02.backend-list"),
    (lambda: torch.accelerator.current_accelerator() or torch.device("cpu"), "current_accelerator",
     "02.accelerator-not-checked"),
])
def test_pick_device_mistakes_are_caught_on_a_cuda_machine_too(answer, says, code, monkeypatch):
    """On a machine with CUDA these answers pass the first step; the simulations must still catch them."""
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda check_available=False: torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    result = cu.check("02.pick_device", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)
    assert "on this machine" not in result.feedback.lower()          # not caught by the first step


def test_pick_device_simulations_restore_torch():
    before = (torch.accelerator.is_available, torch.accelerator.current_accelerator, torch.cuda.is_available)
    with simulated_no_accelerator():
        assert not torch.accelerator.is_available() and pick_device() == torch.device("cpu")
        assert torch.accelerator.current_accelerator() == torch.device("cuda")   # the built-for accelerator
    with simulated_accelerator():
        assert pick_device().type == "meta"
    assert (torch.accelerator.is_available, torch.accelerator.current_accelerator,
            torch.cuda.is_available) == before


def test_pick_device_reference_on_this_machine():
    acc = cu.accelerator()
    assert pick_device().type == (acc.type if acc is not None else "cpu")


# --- 02.matmul_flops ---------------------------------------------------------------------------

@pytest.mark.parametrize("answer, says, code", [
    (lambda n: n ** 3, "forgot the 2", "02.flops-forgot-the-2"),
    (lambda n: n ** 2, "number of outputs", "02.flops-counted-outputs"),
    (lambda n: 2 * n ** 2, "one multiply-add per output", "02.flops-one-multiply-add-per-output"),
    (lambda n: n ** 2 * (2 * n - 1), "exact count n²(2n−1)", "02.flops-exact-count"),
    (lambda n: 2 * n ** 3.0, "float", "any.wrong-type"),
    (lambda n: 2 * math.pow(n, 3), "float", "any.wrong-type"),
    (lambda n: int(2 * n ** 3.0), "went through a float", "02.flops-through-float"),
    (lambda n: round(2 * math.pow(n, 3)), "went through a float", "02.flops-through-float"),
    (lambda n: 2 * n ** 3 if n > 1 else 1, "Empty matrices", "02.flops-empty-product"),      # wrong for n = 0
    (lambda n: max(2 * n ** 3, 8), "Empty matrices", "02.flops-empty-product"),
    (lambda n: 2 * n ** 3 if n != 1 else 1, "1×1 product", "02.flops-one-by-one"),          # wrong for n = 1
    (lambda n: torch.tensor(2 * n ** 3), "tensor", "any.returned-tensor"),
    (lambda n: 3 * n ** 3, "not 3", "02.flops-three-per-term"),
    (lambda n: str(2 * n ** 3), "Python int", "any.wrong-type"),
    (lambda n: 2 * n ** 3 + 1, "Count it as 2·n³", "any.wrong-value"),
])
def test_matmul_flops_mistakes(answer, says, code):
    result = cu.check("02.matmul_flops", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


@pytest.mark.parametrize("answer", [lambda n: n * n * n * 2, lambda n: 2 * pow(n, 3), lambda n: (n ** 3) << 1])
def test_matmul_flops_accepts_valid_alternatives(answer):
    result = cu.check("02.matmul_flops", answer)
    assert result.passed and result.code == "", result.feedback


# --- facts the notebook states ------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 7, 64, 100])
def test_pytorch_flop_counter_uses_the_2n3_convention(n):
    counter = FlopCounterMode(display=False)
    with counter:
        torch.randn(n, n, device="meta") @ torch.randn(n, n, device="meta")
    assert counter.get_total_flops() == matmul_flops(n) == 2 * n ** 3


def test_benchmark_timer_defaults_to_one_thread():
    assert inspect.signature(benchmark.Timer).parameters["num_threads"].default == 1
    m = benchmark.Timer("x @ x", globals={"x": torch.randn(8, 8)}).timeit(5)
    assert m.task_spec.num_threads == 1


def test_time_it_uses_all_of_pytorchs_threads(monkeypatch):
    seen = []
    real_timer = benchmark.Timer

    def spy(*args, **kwargs):
        seen.append(kwargs.get("num_threads", 1))
        return real_timer(*args, **kwargs)
    monkeypatch.setattr(benchmark, "Timer", spy)   # time_it imports torch.utils.benchmark when called
    cu.time_it(torch.add, torch.ones(3), torch.ones(3), min_run_time=0.001)
    assert seen == [torch.get_num_threads()]


def test_benchmark_timer_synchronises_an_accelerator(monkeypatch):
    """benchmark.Timer's clock waits for the accelerator before every reading (simulated here).
    Recent releases ask at every reading; older ones chose their clock once, at import, from what
    the machine had then (CUDA or XPU only in 2.7), which no simulation can change afterwards."""
    from torch.utils.benchmark.utils import timer as timer_module
    if timer_module.timer is timeit.default_timer:
        pytest.skip(f"torch {torch.__version__} chose a plain clock at import: no accelerator was usable")
    calls = []
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: calls.append(1))
    benchmark.Timer("x + x", globals={"x": torch.ones(2)}).timeit(3)
    assert calls, "torch.utils.benchmark no longer synchronises the accelerator around its measurements"


def test_current_accelerator_reports_the_build_unless_asked_to_check():
    param = inspect.signature(torch.accelerator.current_accelerator).parameters["check_available"]
    assert param.default is False
    if cu.accelerator() is None:
        assert torch.accelerator.current_accelerator(check_available=True) is None
        assert not torch.accelerator.is_available()


def test_a_device_is_not_equal_to_its_name():
    assert torch.device("cpu") != "cpu"


@pytest.mark.skipif(torch.backends.cuda.is_built(), reason="this PyTorch is a CUDA build")
def test_cuda_on_a_cpu_only_build_says_not_compiled():
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        torch.zeros(2, device="cuda")


def test_cpu_ops_are_synchronous():
    """On the CPU the result is complete when the call returns: a later synchronisation adds nothing."""
    a = torch.randn(256, 256)
    c = a @ a
    assert torch.allclose(c, a @ a)   # the values are there, no waiting needed


# --- on a real accelerator ----------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_work_is_still_queued_when_python_moves_on():
    """Why unsynchronised timing misses the work, shown without a clock: right after the calls
    return, the stream still has work to do; after synchronize() it has none."""
    device = cu.best_device()
    if device.type != "cuda":
        pytest.skip("stream queries are shown for CUDA")
    a = torch.randn(4096, 4096, device=device)
    torch.cuda.synchronize(device)
    for _ in range(50):
        a = a @ a / 4096
    assert not torch.cuda.current_stream(device).query()
    torch.cuda.synchronize(device)
    assert torch.cuda.current_stream(device).query()


@pytest.mark.gpu
def test_pick_device_reference_finds_the_accelerator():
    assert pick_device().type == cu.accelerator().type
    result = cu.check("02.pick_device", pick_device)
    assert result.passed and result.code == "", result.feedback


@pytest.mark.gpu
def test_cuda_events_measure_milliseconds():
    if not torch.cuda.is_available():
        pytest.skip("CUDA events need CUDA")
    a = torch.randn(1024, 1024, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    a @ a
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0


# --- learners' setups: a CUDA build without a GPU, names imported from torch.accelerator ---------

def _cuda_build_without_gpu(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    monkeypatch.setattr(torch.accelerator, "current_accelerator",
                        lambda check_available=False: None if check_available else torch.device("cuda"))


@pytest.mark.parametrize("answer", [lambda: torch.accelerator.current_accelerator() or torch.device("cpu"),
                                    unchecked_current])
def test_unchecked_current_accelerator_on_a_cuda_build_without_a_gpu(answer, monkeypatch):
    """pip's default PyTorch on a laptop: the answer returns `cuda`; the feedback says why, not 'hard-coded'."""
    _cuda_build_without_gpu(monkeypatch)
    result = cu.check("02.pick_device", answer)
    assert not result.passed and "check_available=True" in result.feedback and "hard-cod" not in result.feedback
    assert result.code == "02.accelerator-not-checked", result.code


def test_hard_coded_cuda_on_a_cuda_build_without_a_gpu_is_called_hard_coded(monkeypatch):
    _cuda_build_without_gpu(monkeypatch)
    result = cu.check("02.pick_device", lambda: torch.device("cuda"))
    assert not result.passed and "hard-cod" in result.feedback, result.feedback
    assert result.code == "02.hard-coded-device", result.code


def test_names_imported_from_torch_accelerator_are_simulated_too(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    namespace = {}
    exec("from torch.accelerator import is_available, current_accelerator\n"
         "import torch\n"
         "def pick_device():\n"
         "    return current_accelerator() if is_available() else torch.device('cpu')\n", namespace)
    result = cu.check("02.pick_device", namespace["pick_device"])
    assert result.passed and result.code == "", result.feedback
    assert namespace["is_available"] is torch.accelerator.is_available   # put back afterwards


# --- only plain values count; a list of backends is told what the simulation is -----------------

from hostile_values import AlwaysEqualInt  # noqa: E402


def test_matmul_flops_refuses_an_int_subclass_whose_comparisons_lie():
    result = cu.check("02.matmul_flops", lambda n: AlwaysEqualInt(0))
    assert not result.passed and "not a plain Python int" in result.feedback and "`int(...)`" in result.feedback, \
        result.feedback
    assert result.code == "any.wrong-type", result.code


def three_backends():
    if torch.cuda.is_available():
        return torch.device("cuda")
    elif torch.backends.mps.is_available():
        return torch.device("mps")
    elif torch.xpu.is_available():
        return torch.device("xpu")
    return torch.device("cpu")


def test_pick_device_with_cuda_mps_and_xpu_is_not_told_it_misses_mps_and_xpu():
    result = cu.check("02.pick_device", three_backends)
    assert not result.passed and result.code == "02.backend-list", result.feedback
    assert "misses Apple's MPS" not in result.feedback and "Intel's XPU" not in result.feedback
    for said in ("`torch.cuda`, `torch.backends.mps`, `torch.xpu`", "none of CUDA, MPS or XPU",
                 "fixed list of backends", "torch.accelerator.is_available()",
                 "torch.accelerator.current_accelerator()"):
        assert said in result.feedback, result.feedback


def test_pick_device_backend_list_feedback_on_a_cuda_machine_too(monkeypatch):
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "current_accelerator", lambda check_available=False: torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    result = cu.check("02.pick_device", three_backends)
    assert not result.passed and "none of CUDA, MPS or XPU" in result.feedback, result.feedback
    assert result.code == "02.backend-list", result.code


def test_pick_device_notices_backend_checks_imported_by_name(monkeypatch):
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    namespace = {}
    exec("from torch.backends.mps import is_available as mps_available\n"
         "import torch\n"
         "def pick_device():\n"
         "    if torch.cuda.is_available():\n"
         "        return torch.device('cuda')\n"
         "    return torch.device('mps') if mps_available() else torch.device('cpu')\n", namespace)
    result = cu.check("02.pick_device", namespace["pick_device"])
    assert not result.passed and "none of CUDA or MPS" in result.feedback, result.feedback
    assert result.code == "02.backend-list", result.code
    assert namespace["mps_available"] is torch.backends.mps.is_available      # put back afterwards


# --- how the lesson teaches: the formula is derived, one plot, a timeline picture ----------------------

def _lesson02_cells() -> list:
    from nbtools import NOTEBOOK_DIR, load
    return load(NOTEBOOK_DIR / "02_cpu_vs_gpu.ipynb")["cells"]


def test_nothing_above_02_matmul_flops_states_the_count():
    from nbtools import source
    cells = _lesson02_cells()
    end = next(i for i, c in enumerate(cells)
               if (c.get("metadata", {}).get("course") or {}).get("exercise") == "02.matmul_flops")
    text = "\n".join(source(c) for c in cells[:end]).replace(" ", "")
    for given_away in ("2·n³", "2*n**3", "2n³", "2·n^3"):
        assert given_away not in text, given_away


def test_the_sweep_is_plotted_once_and_the_timeline_is_a_labelled_picture():
    import xml.etree.ElementTree as ET
    from nbtools import NOTEBOOK_DIR, source
    text = "\n".join(source(c) for c in _lesson02_cells())
    assert text.count("cu.show_figure(") == 1 and "plt.show()" not in text   # one plot, with its text alternative
    assert "](img/02_async_timeline.svg)" in text and "![A timeline with two lanes" in text
    svg = ET.parse(NOTEBOOK_DIR / "img" / "02_async_timeline.svg").getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.find(f"{ns}title").text and svg.find(f"{ns}desc").text
    assert min(float(t.get("font-size")) for t in svg.iter(f"{ns}text")) >= 12


def test_results_read_every_step_are_one_line_here_and_lesson_07s_to_show():
    """Lesson 07 times `.item()` every step; this lesson says it in one line, with the pointer, and shows no loop."""
    from nbtools import source
    text = "\n".join(source(c) for c in _lesson02_cells())
    assert "def with_item" not in text and "def on_device" not in text
    line = next(line for line in text.splitlines() if "`loss.item()`" in line)
    assert "lesson 07" in text[text.index(line):].split("\n\n")[0]


def test_matmul_flops_asks_for_the_counters_number_and_says_so_to_an_exact_count():
    """Issue 33: the task asks for "the FLOPs PyTorch's counter reports" (2·n³); the exact count n²(2n−1) is right
    arithmetic for another question, and the feedback says which question, with the counter's own numbers."""
    result = cu.check("02.matmul_flops", lambda n: n ** 2 * (2 * n - 1))
    assert not result.passed and result.code == "02.flops-exact-count"
    assert "PyTorch's FLOP counter reports" in result.feedback and "`counted_flops(2)`, 16" in result.feedback
    assert "Well counted! But" not in result.feedback
    counter = FlopCounterMode(display=False)
    with counter:
        torch.randn(2, 2) @ torch.randn(2, 2)
    assert counter.get_total_flops() == 16 != 2 ** 2 * (2 * 2 - 1) == 12
    assert "counter" in result.title


def test_the_primer_shows_the_pieces_the_later_lessons_use():
    """A model class, a loss function, a checkpoint and a data loader, before lesson 03 first uses them: each named
    in the note and run in the cell after it."""
    from nbtools import NOTEBOOK_DIR, load, source
    nb = load(NOTEBOOK_DIR / "02_cpu_vs_gpu.ipynb")
    at = next(i for i, c in enumerate(nb["cells"]) if "The rest of a training script" in source(c))
    note, code = source(nb["cells"][at]), source(nb["cells"][at + 1])
    for piece in ("super().__init__()", "forward", "F.cross_entropy", "state_dict()", "DataLoader("):
        assert piece in note and piece.split("(")[0] in code, piece
    assert at < next(i for i, c in enumerate(nb["cells"]) if source(c).startswith("## Going further"))
