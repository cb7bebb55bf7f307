"""Appendix 08 (field guide): every error the notebook raises or quotes is the one PyTorch gives, its fixes
work, and its checks catch the realistic mistakes."""
from __future__ import annotations

import inspect
import io

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.data import DataLoader, TensorDataset

import course_utils as cu
from course_utils.lessons.l08_field_guide import _label_cases
from course_utils.mismatch import save_as_gpu_checkpoint
from nbtools import NOTEBOOK_DIR, RAISE_WHEN, load, raises, source

NOTEBOOK = NOTEBOOK_DIR / "08_field_guide.ipynb"
VERSION = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])   # (2, 13) for 2.13.0+cpu


def _markdown() -> str:
    return "\n".join(source(c) for c in load(NOTEBOOK)["cells"] if c["cell_type"] == "markdown")


def _error(fn, kind=Exception):
    with pytest.raises(kind) as info:
        fn()
    return info.value


# --- the cells that raise on purpose ---------------------------------------------------------------

def test_every_cell_that_raises_on_purpose_declares_its_error():
    """The notebook runs (tests/test_notebook_runs.py) then assert each declared error after its cell."""
    cells = [c for c in load(NOTEBOOK)["cells"] if "raises-exception" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) >= 7
    for cell in cells:
        declared = raises(cell)
        assert declared and declared["error"] and declared["message"], source(cell)
        assert declared.get("when", "always") in RAISE_WHEN
        messages = [declared["message"]] if isinstance(declared["message"], str) else declared["message"]
        assert any(m in _markdown() for m in messages) or declared["error"] == "AssertionError", (
            f"the message {declared['message']!r} is raised but never quoted for the reader")


def test_a_bad_label_on_the_cpu_names_the_label():
    error = _error(lambda: nn.CrossEntropyLoss()(torch.randn(4, 5), torch.tensor([0, 3, 5, 1])), IndexError)
    assert str(error) == "Target 5 is out of bounds."
    assert str(_error(lambda: nn.CrossEntropyLoss()(torch.randn(4, 5), torch.tensor([-1, 0, 1, 2])),
                      IndexError)) == "Target -1 is out of bounds."
    assert str(_error(lambda: nn.Embedding(10, 3)(torch.tensor([3, 10])), IndexError)) == "index out of range in self"
    assert nn.CrossEntropyLoss()(torch.randn(4, 6), torch.tensor([0, 3, 5, 1])).isfinite()   # the fix


def test_a_dataparallel_checkpoint_does_not_load_into_a_plain_model():
    model = nn.Linear(3, 2)
    wrapped = nn.DataParallel(model)
    if not torch.cuda.is_available():
        assert wrapped.device_ids == [] and wrapped(torch.randn(1, 3)).shape == (1, 2)   # just calls model
    checkpoint = wrapped.state_dict()
    assert list(checkpoint) == ["module.weight", "module.bias"]
    error = _error(lambda: nn.Linear(3, 2).load_state_dict(checkpoint), RuntimeError)
    assert str(error) == ('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "weight", '
                          '"bias". \n\tUnexpected key(s) in state_dict: "module.weight", "module.bias". ')
    other = _error(lambda: nn.DataParallel(nn.Linear(3, 2)).load_state_dict(model.state_dict()), RuntimeError)
    assert str(other).startswith('Error(s) in loading state_dict for DataParallel:\n\tMissing key(s) in state_dict: '
                                 '"module.weight", "module.bias". ')
    for text in ('Missing key(s) in state_dict: "weight", "bias".',
                 'Unexpected key(s) in state_dict: "module.weight", "module.bias".',
                 'Error(s) in loading state_dict for DataParallel: Missing key(s) in state_dict: "module.weight"'):
        assert text in _markdown()


def test_the_prefix_fixes_work():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
    model = nn.Linear(3, 2)
    wrapped = nn.DataParallel(model)
    state = dict(wrapped.state_dict())
    consume_prefix_in_state_dict_if_present(state, "module.")
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(state)
    assert torch.equal(fresh.weight, model.weight.cpu())   # with one GPU the wrapper moved model to cuda:0
    assert list(wrapped.module.state_dict()) == ["weight", "bias"]
    result = nn.Linear(3, 2).load_state_dict(wrapped.state_dict(), strict=False)   # loads nothing
    assert result.missing_keys == ["weight", "bias"] and result.unexpected_keys == ["module.weight", "module.bias"]


def test_asking_for_cuda_without_it():
    if torch.cuda.is_available():
        pytest.skip("CUDA is usable here")
    if not torch.backends.cuda.is_built():
        error = _error(lambda: torch.zeros(1, device="cuda"), AssertionError)
        assert str(error) == "Torch not compiled with CUDA enabled" and torch.version.cuda is None
    else:
        error = _error(lambda: torch.zeros(1, device="cuda"), RuntimeError)
        assert str(error).startswith("Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
                                     "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx")
    assert torch.cuda.device_count() == 0
    if not torch.backends.cuda.is_built():
        assert torch.cuda.get_arch_list() == []  # a CUDA build lists the GPUs it has code for
    assert "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver " \
           "from http://www.nvidia.com/Download/index.aspx" in _markdown()


def test_loading_a_gpu_checkpoint_without_cuda_and_the_fix():
    if torch.cuda.is_available():
        pytest.skip("with CUDA the checkpoint loads")
    buffer = io.BytesIO()
    weights = nn.Linear(4, 2).state_dict()
    save_as_gpu_checkpoint(weights, buffer)
    data = buffer.getvalue()
    error = _error(lambda: torch.load(io.BytesIO(data)), RuntimeError)
    quoted = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are "
              "running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your "
              "storages to the CPU.")
    assert str(error) == quoted and quoted in " ".join(_markdown().split())
    state = torch.load(io.BytesIO(data), map_location="cpu")
    assert all(torch.equal(state[k], weights[k]) for k in weights)


def test_pinning_a_tensor_that_is_not_on_the_cpu():
    """PyTorch's wording names the tensor's type, then ends the same way on every device (`meta` here; the notebook
    pins a tensor on the lesson's GPU, and a CUDA tensor in the `gpu` test below)."""
    error = _error(lambda: torch.ones(4, device="meta").pin_memory(), RuntimeError)
    assert str(error) == "cannot pin 'MetaFloatType' only dense CPU tensors can be pinned"
    assert "`only dense CPU tensors can be pinned`" in _markdown()
    if not torch.accelerator.is_available():
        error = _error(lambda: torch.ones(2).pin_memory(), RuntimeError)
        expected = ("Cannot access accelerator device when none is available." if not torch.backends.cuda.is_built()
                    else "Found no NVIDIA driver on your system.")
        assert str(error).startswith(expected) and expected in _markdown()
        with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found, "
                                             "then device pinned memory won't be used."):
            next(iter(DataLoader(TensorDataset(torch.ones(4, 2)), batch_size=2, pin_memory=True)))


def test_lengths_for_packing_must_be_on_the_cpu():
    """PyTorch's check names the device the lengths are on (`meta` here; the notebook runs it on the lesson's GPU, and
    the `gpu` test below on CUDA, whose wording the notebook quotes)."""
    padded = torch.randn(3, 5, 2, device="meta")
    error = _error(lambda: pack_padded_sequence(padded, torch.tensor([5, 3, 2], device="meta"), batch_first=True),
                   RuntimeError)
    assert str(error) == "'lengths' argument should be a 1D CPU int64 tensor, but got 1D meta Long tensor"
    packed = pack_padded_sequence(padded, torch.tensor([5, 3, 2]), batch_first=True)
    assert packed.data.device.type == "meta" and packed.batch_sizes.device.type == "cpu"


def test_with_no_default_device_a_shuffling_loader_works():
    """The fix of *Default devices, samplers and generators*: restored to none, the sampler draws on the CPU (the
    notebook shows the error on the lesson's GPU, and the `gpu` test below on CUDA)."""
    torch.set_default_device(None)
    assert torch.empty(0).device.type == "cpu"
    assert next(iter(DataLoader(TensorDataset(torch.arange(8.0)), batch_size=4, shuffle=True)))[0].shape == (4,)


def test_out_of_memory_has_one_class_and_no_grad_keeps_no_graph():
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError and issubclass(torch.OutOfMemoryError, RuntimeError)
    model = nn.Linear(3, 2)
    with torch.no_grad():
        out = model(torch.randn(2, 3))
    assert out.grad_fn is None and model(torch.randn(2, 3)).grad_fn is not None


def test_a_spawning_loader_can_be_made_and_cpu_batches_move_in_the_loop():
    data = TensorDataset(torch.randn(8, 2))
    assert DataLoader(data, num_workers=2, multiprocessing_context="spawn").multiprocessing_context \
        .get_start_method() == "spawn"
    assert next(iter(DataLoader(data, batch_size=4, num_workers=2)))[0].device.type == "cpu"


# --- messages quoted from PyTorch's source (checked against the installed PyTorch) ----------------------

def test_quoted_python_side_messages_match_the_installed_source():
    md = " ".join(_markdown().split())
    lazy_init = inspect.getsource(torch.cuda._lazy_init)
    assert '"Cannot re-initialize CUDA in forked subprocess. To use CUDA with "' in lazy_init
    assert '"multiprocessing, you must use the \'spawn\' start method"' in lazy_init
    assert ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the "
            "'spawn' start method") in md
    forward = inspect.getsource(nn.DataParallel.forward)
    assert '"module must have its parameters and buffers "' in forward
    assert 'f"on device {self.src_device_obj} (device_ids[0]) but found one of "' in forward
    assert ("module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on "
            "device: cpu") in md
    serialization = inspect.getsource(torch.serialization)
    assert "but torch.{backend_name}.device_count() is {device_count}. " in serialization
    assert ("Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1. Please use "
            "torch.load with map_location to map your storages to an existing device.") in md
    cubins = inspect.getsource(torch.cuda._check_cubins)
    assert "is not compatible with the current PyTorch installation." in cubins
    assert "with CUDA capability sm_XY is not compatible with the current PyTorch installation." in md
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate" in md
    assert "Target 5 is out of bounds." in md and "index out of range in self" in md


# --- recovering from out of memory, evaluation, state dicts, asking for help ---------------------------

def test_a_retry_inside_except_still_has_the_failed_steps_tensors_and_one_after_it_does_not():
    """PyTorch's FAQ: the exception's traceback keeps the failed frames (and their tensors) alive until the
    ``except`` block ends; the appendix retries after the block."""
    import weakref
    made = []

    def step(n):
        activations = torch.empty(n, 16)
        made.append(weakref.ref(activations))
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")

    try:
        step(8)
    except torch.OutOfMemoryError:
        inside = made[-1]() is not None
    assert inside and made[-1]() is None


def _section(title: str) -> str:
    """The Markdown of one level-2 section, up to the next level-2 heading."""
    cells = load(NOTEBOOK)["cells"]
    start = next(i for i, c in enumerate(cells) if source(c).startswith(f"## {title}"))
    found = [source(cells[start])]
    for cell in cells[start + 1:]:
        if cell["cell_type"] == "markdown" and source(cell).startswith("## "):
            break
        if cell["cell_type"] == "markdown":
            found.append(source(cell))
    return "\n".join(found)


def test_the_appendix_does_not_offer_empty_cache_as_an_out_of_memory_fix():
    oom = _section("CUDA out of memory")
    fix = oom[oom.index("**Fix.**"):]
    assert "`torch.cuda.empty_cache()` is no fix" in fix
    loop = next(source(c) for c in load(NOTEBOOK)["cells"] if "batch_size //= 2" in source(c))
    assert "empty_cache" not in loop and loop.index("except torch.OutOfMemoryError") < loop.index("batch_size //= 2")
    assert "`del` then `empty_cache()`" not in _markdown()


def test_the_out_of_memory_reading_quotes_the_message_it_reads():
    """Each figure the table reads stands in the quoted message, the figures add up, and the quiz asks about the
    same message."""
    import re
    oom = _section("CUDA out of memory")
    message = next(line for line in oom.splitlines() if line.startswith("torch.OutOfMemoryError: CUDA out of memory"))
    rows = re.findall(r"^\| `([^`]+)` \|", oom, re.MULTILINE)
    assert len(rows) == 5 and all(row in message for row in rows), rows
    capacity, free, process, allocated, cached = (float(x) for x in re.findall(
        r"capacity of ([\d.]+) GiB of which ([\d.]+) GiB is free.*has ([\d.]+) GiB memory in use.*memory ([\d.]+) GiB "
        r"is allocated by PyTorch, and ([\d.]+) MiB is reserved", message)[0])
    assert abs(capacity - free - process) < 0.02                      # no other process holds memory
    assert allocated + cached / 1024 < process                          # the rest is the CUDA context
    quiz = cu.quizzes.get_quiz("08.oom_message")
    assert message.split(": ", 1)[1].split(" If reserved")[0].strip() in quiz.question
    assert quiz.options[quiz.answer].startswith("Hold fewer tensors")


def test_eval_mode_alone_keeps_autograd_recording():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).eval()
    out = model(torch.randn(2, 4))
    assert not model.training and out.grad_fn is not None and out.requires_grad
    with torch.no_grad():
        assert model(torch.randn(2, 4)).grad_fn is None
    with torch.inference_mode():
        assert model(torch.randn(2, 4)).grad_fn is None


def test_a_loaded_state_dict_has_no_to_and_map_location_then_load_state_dict_works():
    buffer = io.BytesIO()
    torch.save(nn.Linear(4, 2).state_dict(), buffer)
    state = torch.load(io.BytesIO(buffer.getvalue()), map_location="cpu")
    message = str(_error(lambda: state.to("cpu"), AttributeError))
    assert message == "'collections.OrderedDict' object has no attribute 'to'" and message in _markdown()
    model = nn.Linear(4, 2).to("meta").to_empty(device="cpu")
    model.load_state_dict(state)
    assert torch.equal(model.weight, state["weight"])


def test_collect_env_reports_the_lines_the_appendix_prints():
    import subprocess
    import sys
    report = subprocess.run([sys.executable, "-m", "torch.utils.collect_env"], capture_output=True, text=True,
                            check=True, timeout=120).stdout
    for key in ("PyTorch version:", "CUDA used to build PyTorch:", "Is CUDA available:",
                "GPU models and configuration:", "Nvidia driver version:"):
        assert any(line.startswith(key) for line in report.splitlines()), key
    assert f"PyTorch version: {torch.__version__}" in report
    assert "python -m torch.utils.collect_env" in _markdown()


def test_a_minus_one_label_is_refused_unless_it_is_the_ignore_index():
    logits, marked = torch.randn(4, 5), torch.tensor([0, 3, -1, 1])
    assert str(_error(lambda: nn.CrossEntropyLoss()(logits, marked), IndexError)) == "Target -1 is out of bounds."
    assert nn.CrossEntropyLoss(ignore_index=-1)(logits, marked).isfinite()
    assert "`ignore_index`" in _markdown() and "-100" in _markdown()


def test_the_default_start_method_is_fork_on_linux_up_to_python_3_13():
    import multiprocessing
    import sys
    if not sys.platform.startswith("linux"):
        pytest.skip("the start method the appendix describes for Linux")
    expected = "fork" if sys.version_info < (3, 14) else "forkserver"
    assert multiprocessing.get_context().get_start_method() == expected
    assert "Linux's default up to Python 3.13" in _markdown() and "Linux from Python 3.14 uses `forkserver`" \
        in _markdown()


# --- on a real GPU ------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_cuda_refuses_to_pin_a_tensor_already_on_the_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    error = _error(lambda: torch.ones(4, device="cuda").pin_memory(), RuntimeError)
    assert str(error).startswith("cannot pin '") and str(error).endswith("' only dense CPU tensors can be pinned")


@pytest.mark.gpu
def test_cuda_lengths_for_packing_must_be_on_the_cpu():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    padded = torch.randn(3, 5, 2, device="cuda:0")
    error = _error(lambda: pack_padded_sequence(padded, torch.tensor([5, 3, 2], device="cuda:0"), batch_first=True),
                   RuntimeError)
    assert str(error) == "'lengths' argument should be a 1D CPU int64 tensor, but got 1D cuda:0 Long tensor"
    assert str(error) in _markdown()
    packed = pack_padded_sequence(padded, torch.tensor([5, 3, 2], device="cuda:0").cpu(), batch_first=True)
    assert packed.data.device == torch.device("cuda", 0) and packed.batch_sizes.device.type == "cpu"


@pytest.mark.gpu
def test_cuda_as_the_default_device_breaks_a_shuffling_loader():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    torch.set_default_device("cuda")
    try:
        loader = DataLoader(TensorDataset(torch.arange(8.0, device="cpu")), batch_size=4, shuffle=True)
        error = _error(lambda: next(iter(loader)), RuntimeError)
    finally:
        torch.set_default_device(None)
    assert "Expected a 'cuda' device type for generator but found 'cpu'" in str(error)
    assert "Expected a 'cuda' device type for generator but found 'cpu'" in _markdown()


@pytest.mark.gpu
def test_cuda_dataparallel_wants_the_model_on_cuda0():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    model = nn.Linear(3, 2)
    dp = nn.DataParallel(model)
    if torch.cuda.device_count() == 1:   # one GPU: the wrapper moved the model there itself (seen on an H100)
        assert next(model.parameters()).device == torch.device("cuda", 0)
        model.cpu()
    error = _error(lambda: dp(torch.randn(4, 3, device="cuda")), RuntimeError)
    assert str(error) == ("module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found "
                          "one of them on device: cpu")
    assert nn.DataParallel(nn.Linear(3, 2).to("cuda:0"))(torch.randn(4, 3, device="cuda")).device.type == "cuda"


@pytest.mark.gpu
def test_cuda_del_keeps_memory_reserved_until_empty_cache():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    torch.cuda.empty_cache()
    big = torch.empty(2**28, device="cuda")
    allocated = torch.cuda.memory_allocated()
    del big
    assert torch.cuda.memory_allocated() <= allocated - 2**30 and torch.cuda.memory_reserved() >= 2**30
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() < 2**30


@pytest.mark.gpu
def test_cuda_arch_list_names_this_gpus_generation():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    major, _ = torch.cuda.get_device_capability()
    assert any(arch.startswith(f"sm_{major}") for arch in torch.cuda.get_arch_list())


# --- 08.strip_prefix -------------------------------------------------------------------------------

def strips_everywhere(state_dict, prefix="module."):
    return {k.replace(prefix, ""): v for k, v in state_dict.items()}


def strips_in_place(state_dict, prefix="module."):
    for key in list(state_dict):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    return state_dict


def strips_fixed_length(state_dict, prefix="module."):
    return {k[7:] if k.startswith(prefix) else k: v for k, v in state_dict.items()}


def copies_values(state_dict, prefix="module."):
    return {(k[len(prefix):] if k.startswith(prefix) else k): (v.clone() if torch.is_tensor(v) else v)
            for k, v in state_dict.items()}


def strips_all_repeats(state_dict, prefix="module."):
    out = {}
    for k, v in state_dict.items():
        while k.startswith(prefix):
            k = k[len(prefix):]
        out[k] = v
    return out


@pytest.mark.parametrize("answer, says, code", [
    (strips_everywhere, "only where a key starts with it", "08.prefix-not-removed-once-at-start"),
    (strips_in_place, "changed the dict it was given", "08.state-dict-changed-in-place"),
    (strips_fixed_length, "_orig_mod.", "08.prefix-not-removed-once-at-start"),
    (copies_values, "Keep every value as it is", "08.copied-values"),
    (strips_all_repeats, "only once", "08.prefix-not-removed-once-at-start"),
])
def test_strip_prefix_mistakes(answer, says, code):
    result = cu.check("08.strip_prefix", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


def test_strip_prefix_reference_and_alternatives_pass():
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

    def with_torch(state_dict, prefix="module."):
        state = dict(state_dict)
        consume_prefix_in_state_dict_if_present(state, prefix)
        return dict(state)

    def with_removeprefix(state_dict, prefix="module."):
        return {k.removeprefix(prefix): v for k, v in state_dict.items()}

    for answer in (cu.exercises.get_exercise("08.strip_prefix").reference, with_removeprefix, with_torch):
        result = cu.check("08.strip_prefix", answer)   # PyTorch's own function reorders keys: order is free
        assert result.passed and result.code == "", result.feedback


# --- 08.bad_labels ---------------------------------------------------------------------------------

from hostile_values import AlwaysEqualList  # noqa: E402


def _refused(labels, num_classes, ignore_index):
    return ((labels < 0) | (labels >= num_classes)) & (labels != ignore_index)


def only_too_large(labels, num_classes, ignore_index=-100):
    return ((labels >= num_classes) & (labels != ignore_index)).nonzero().flatten().tolist()


def off_by_one(labels, num_classes, ignore_index=-100):
    return (((labels < 0) | (labels > num_classes)) & (labels != ignore_index)).nonzero().flatten().tolist()


def returns_tensor(labels, num_classes, ignore_index=-100):
    return _refused(labels, num_classes, ignore_index).nonzero().flatten()


def returns_values(labels, num_classes, ignore_index=-100):
    return labels[_refused(labels, num_classes, ignore_index)].tolist()


def clamps_in_place(labels, num_classes, ignore_index=-100):
    bad = _refused(labels, num_classes, ignore_index).nonzero().flatten().tolist()
    labels.clamp_(0, num_classes - 1)
    return bad


def reports_the_ignore_index(labels, num_classes, ignore_index=-100):
    return ((labels < 0) | (labels >= num_classes)).nonzero().flatten().tolist()


def no_ignore_index_parameter(labels, num_classes):
    return (((labels < 0) | (labels >= num_classes)) & (labels != -100)).nonzero().flatten().tolist()


def hardcodes_minus_100(labels, num_classes, ignore_index=-100):
    return _refused(labels, num_classes, -100).nonzero().flatten().tolist()


def always_equal_list(labels, num_classes, ignore_index=-100):
    return AlwaysEqualList()


def returns_a_tuple(labels, num_classes, ignore_index=-100):
    return tuple(_refused(labels, num_classes, ignore_index).nonzero().flatten().tolist())


def returns_tensor_items(labels, num_classes, ignore_index=-100):
    return list(_refused(labels, num_classes, ignore_index).nonzero().flatten())


@pytest.mark.parametrize("answer, says, code", [
    (only_too_large, "negative labels", "08.wrong-label-range"),
    (off_by_one, "equal to num_classes", "08.wrong-label-range"),
    (returns_tensor, "`.tolist()` gives them as Python ints", "any.wrong-type"),
    (returns_values, "the bad positions are", "08.wrong-label-range"),
    (clamps_in_place, "changed the labels", "08.labels-changed-in-place"),
    (reports_the_ignore_index, "the `ignore_index`: `nn.CrossEntropyLoss` and `nn.NLLLoss` skip those labels",
     "08.ignore-index-reported"),
    (no_ignore_index_parameter, "Your function takes no `ignore_index`", "08.no-ignore-index-parameter"),
    (hardcodes_minus_100, "holds -1, the `ignore_index`", "08.ignore-index-reported"),
    (always_equal_list, "Return a plain `list` of positions", "any.wrong-type"),
    (returns_a_tuple, "(a `tuple`)", "any.wrong-type"),
    (returns_tensor_items, "your list holds tensors", "any.wrong-type"),
])
def test_bad_labels_mistakes(answer, says, code):
    result = cu.check("08.bad_labels", answer)
    assert not result.passed and says in result.feedback, result.feedback
    assert result.code == code, (result.code, result.feedback)


def test_bad_labels_reference_and_alternatives_pass():
    def loop(labels, num_classes, ignore_index=-100):
        return [i for i, v in enumerate(labels.tolist()) if not 0 <= v < num_classes and v != ignore_index]

    for answer in (cu.exercises.get_exercise("08.bad_labels").reference, loop):
        result = cu.check("08.bad_labels", answer)
        assert result.passed and result.code == "", result.feedback


def test_bad_labels_never_requires_the_ignore_index():
    """-100 is the losses' default ``ignore_index``: the CPU kernel skips it (as the CUDA kernels do before their
    assert), so a batch holding it is not bad, and the reference leaves it out."""
    assert nn.CrossEntropyLoss().ignore_index == nn.NLLLoss().ignore_index == -100
    labels = torch.tensor([0, -100, 4, 1])
    assert nn.CrossEntropyLoss()(torch.randn(4, 5), labels).isfinite()
    assert nn.NLLLoss()(torch.randn(4, 5).log_softmax(1), labels).isfinite()
    assert str(_error(lambda: nn.CrossEntropyLoss(ignore_index=-1)(torch.randn(4, 5), labels), IndexError)) \
        == "Target -100 is out of bounds."
    reference = cu.exercises.get_exercise("08.bad_labels").reference
    assert reference(labels, 5) == [] and reference(labels, 5, ignore_index=-1) == [1]
    for _, cases_labels, num_classes, ignore_index in _label_cases(torch.Generator().manual_seed(80)):
        skip = -100 if ignore_index is None else ignore_index
        for i in reference(cases_labels, num_classes, skip):
            assert cases_labels[i].item() != skip


# --- CUDA messages quoted from a CUDA build's libraries (where this PyTorch is one) ---------------------

def _cuda_library(*patterns):
    from pathlib import Path
    for pattern in patterns:
        for root in (Path(torch.__file__).parent / "lib", Path(torch.__file__).parent.parent / "nvidia"):
            for found in sorted(root.glob(pattern)):
                return found.read_bytes()
    pytest.skip(f"{' or '.join(patterns)} is not in this PyTorch (a CPU build)")


def test_cuda_check_messages_quoted_are_in_the_cuda_libraries():
    """The CUDA messages the appendix quotes are in this CUDA build's libraries: the parts every version
    prints always, and the lines the appendix labels as one version's (2.14's, 2.10's, or the older wording of 2.7
    and 2.8) when this is that version."""
    md = _markdown()
    c10_cuda = _cuda_library("libc10_cuda.so")
    every_version = [
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
        "below might be incorrect.", "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "CUDA out of memory. Tried to allocate ", " is reserved by PyTorch but unallocated.",
        " If reserved but unallocated memory is large try setting",
        "True to avoid fragmentation.  See documentation for Memory Management  (",
        "Including non-PyTorch memory, this process", "The NVIDIA driver on your system is too old (found version ",
        "). Please update your GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
        "PyTorch version that has been compiled with your version of the CUDA driver."]
    as_in_2_7_and_2_8 = ["https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
                         "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertio"]
    as_in_2_14 = ["https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
                  "alloc-conf)", "GPU device may be out of range, do you have en",
                  "' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more informatio"]
    as_in_2_10 = as_in_2_7_and_2_8 + as_in_2_14[2:]   # the older link and Compile line, and the Search line
    labelled = {(2, 7): as_in_2_7_and_2_8, (2, 8): as_in_2_7_and_2_8, (2, 10): as_in_2_10,
                (2, 14): as_in_2_14}.get(VERSION, [])
    for text in every_version + labelled:
        assert text.encode() in c10_cuda, text
        assert " ".join(text.split()) in " ".join(md.split()), text   # the markdown wraps lines
    if VERSION in ((2, 7), (2, 8)):                     # the lines the appendix labels as newer are not there yet
        for text in as_in_2_14:
            assert text.encode() not in c10_cuda, text
    if VERSION == (2, 14):
        assert b"Compile with `TORCH_USE_CUDA_DSA`" not in c10_cuda
    cudart = _cuda_library("cuda_runtime/lib/libcudart.so.*", "cu*/lib/libcudart.so.*")
    for text in ("device-side assert triggered", "no kernel image is available for execution on the device",
                 "invalid device ordinal", "cudaErrorAssert", "cudaErrorNoKernelImageForDevice"):
        assert text.encode() in cudart and text in md, text


def test_newer_pytorch_raises_cuda_errors_as_accelerator_errors():
    if not hasattr(torch, "AcceleratorError"):
        pytest.skip(f"torch {torch.__version__} raises CUDA errors as plain RuntimeError")
    assert issubclass(torch.AcceleratorError, RuntimeError) and torch.AcceleratorError.__module__ == "torch"
    assert "torch.AcceleratorError" in _markdown()
