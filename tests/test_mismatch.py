"""The mismatch explainer lists where every tensor lives, flags the odd ones out, suggests fixes, never raises."""
from __future__ import annotations

import io
from collections import UserDict

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from course_utils import devicereport, mismatch
from course_utils.mismatch import DeviceReport, explain_devices, save_as_gpu_checkpoint


class Standardize(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = torch.zeros(4)            # plain tensor attributes: the classic bug
        self.std = torch.ones(4)

    def forward(self, x):
        return (x - self.mean) / self.std


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = Standardize()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))
        self.head = nn.Linear(8, 3)
        self.register_buffer("mask", torch.ones(3), persistent=False)


def entry(report, name):
    return next(e for e in report.entries if e.name == name)


def test_lists_every_parameter_buffer_plain_attribute_and_input_with_its_device():
    model = Classifier().to("meta")
    model.head = nn.Linear(8, 3)                          # replaced after moving: on the CPU
    report = explain_devices(model, {"x": torch.randn(2, 4), "y": torch.zeros(2, device="meta")}, device="meta")
    kinds = {e.name: e.kind for e in report.entries}
    assert kinds["body.0.weight"] == "parameter" and kinds["body.1.running_mean"] == "buffer"
    assert kinds["mask"] == "buffer" and kinds["norm.mean"] == "plain attribute" and kinds["x"] == "input"
    assert report.mismatches == ["head.bias", "head.weight", "norm.mean", "norm.std", "x"]
    assert entry(report, "y").status == "ok" and entry(report, "x").device == "cpu"
    assert entry(report, "body.0.weight").shape == "(8, 4)" and entry(report, "x").dtype == "float32"
    assert report.devices["cpu"] and report.target == "meta" and not report.ok


def test_suggests_the_fix_for_each_kind_of_odd_one_out():
    model = Classifier().to("meta")
    model.head = nn.Linear(8, 3)
    text = explain_devices(model, {"x": torch.randn(2, 4)}, device="meta").text()
    assert 'x = x.to("meta")' in text
    assert 'self.register_buffer("mean", tensor)' in text and "submodule 'norm'" in text
    assert 'Call `model.to("meta")` again' in text and "head.weight" in text


def test_a_model_entirely_elsewhere_gets_a_single_move_the_model():
    report = explain_devices(nn.Linear(2, 2), {"x": torch.ones(2, device="meta")}, device="meta")
    assert report.mismatches == ["bias", "weight"]
    assert any(s.startswith('Move the model: `model.to("meta")`') for s in report.suggestions)


def test_plain_attributes_are_flagged_even_on_the_right_device():
    report = explain_devices(Standardize(), {"x": torch.ones(4)}, device="cpu")
    assert report.mismatches == [] and report.warnings == ["mean", "std"] and not report.ok
    assert "Watch out for mean, std" in report.headline()


def test_meta_parameters_get_the_to_empty_advice():
    report = explain_devices(nn.Linear(2, 2).to("meta"), device="cpu")
    assert any("to_empty" in s for s in report.suggestions)


def test_all_fine():
    report = explain_devices(nn.Linear(2, 2), {"x": torch.ones(2), "n": 3})
    assert report.ok and report.headline() == "All 3 tensors are on cpu."
    assert "Nothing to fix here" in report.suggestions[0] and "device=x.device" in report.suggestions[0]
    assert entry(report, "n").status == "note" and "Python number" in entry(report, "n").note


def test_target_is_inferred_from_the_parameters_then_the_inputs():
    model = nn.Sequential(nn.Linear(10, 10), nn.Linear(1, 1))
    model[1].to("meta")
    report = explain_devices(model)
    assert report.target == "cpu" and "most of the model's parameters" in report.reason
    assert report.mismatches == ["1.bias", "1.weight"]
    only_inputs = explain_devices(None, [torch.ones(1, device="meta")] * 2 + [torch.ones(1)])
    assert only_inputs.target == "meta" and only_inputs.mismatches == ["inputs[2]"]
    assert explain_devices(nn.ReLU()).target is None


@pytest.mark.parametrize("device, target", [("cpu", "cpu"), ("cpu:0", "cpu"), (torch.device("meta"), "meta")])
def test_device_is_normalised_like_pytorch_does(device, target):
    report = explain_devices(nn.Linear(2, 2), device=device)
    assert report.target == target


def test_an_accelerator_named_without_index_compares_by_type_when_it_is_not_present():
    if torch.cuda.is_available():
        pytest.skip("with CUDA, 'cuda' means the current CUDA device")
    report = explain_devices(nn.Linear(2, 2), device="cuda")
    assert report.target == "cuda" and report.mismatches == ["bias", "weight"]


def test_zero_dim_cpu_inputs_are_a_note_not_a_mismatch():
    report = explain_devices(nn.Linear(2, 2).to("meta"), {"lr": torch.tensor(0.1), "v": torch.tensor([0.1])})
    assert entry(report, "lr").status == "note" and report.mismatches == ["v"]


def test_nested_inputs_get_names_you_can_paste():
    report = explain_devices(None, {"batch": {"x": torch.ones(1), "ys": [torch.ones(1)]}, "my key": torch.ones(1)},
                             device="meta")
    assert report.mismatches == ["batch['x']", "batch['ys'][0]", "inputs['my key']"]
    assert """batch['x'] = batch['x'].to("meta")""" in report.text()


def test_modules_and_tensors_in_plain_lists():
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(2, 2)]
            self.consts = {"a": torch.ones(1)}
    report = explain_devices(Holder().to("meta"), device="meta")
    assert entry(report, "layers[0]").kind == "unregistered module"
    assert entry(report, "consts['a']").status == "mismatch"
    assert "nn.ModuleList" in report.text() and "plain list or dict" in report.text()


def test_an_uninitialised_module_is_explained():
    class Broken(nn.Module):
        def __init__(self):  # super().__init__() forgotten on purpose
            self.scale = torch.ones(2)
    report = explain_devices(Broken())
    assert "super().__init__()" in report.problems[0] and entry(report, "scale").kind == "plain attribute"


def test_optimizer_state_away_from_its_parameter():
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    for state in opt.state.values():        # what a GPU run looks like: state on another device
        state["exp_avg"] = state["exp_avg"].to("meta")
    report = explain_devices(model, optimizer=opt)
    assert report.mismatches == ["bias (exp_avg)", "weight (exp_avg)"]
    assert entry(report, "weight (step)").status == "ok"
    assert "Optimizer state not next to its parameter" in report.headline()
    assert any("load_state_dict" in s for s in report.suggestions)


def test_optimizer_that_tracks_tensors_the_model_no_longer_uses():
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    model.to("meta")                          # cpu -> meta makes new parameter objects
    report = explain_devices(model, optimizer=opt)
    assert report.warnings == ["optimizer param #0", "optimizer param #1"]


def test_the_headline_says_what_the_rows_show_group_by_group():
    """Lesson 06's optimizer cell: two meta parameters, eight CPU rows of an optimizer left behind."""
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    model.to("meta")
    report = explain_devices(model, optimizer=opt)
    assert report.headline() == ("All 2 tensors of the model are on meta. The optimizer's 8 tensors are on cpu. "
                                 "Watch out for optimizer param #0, optimizer param #1: see the notes.")
    state = [e for e in report.entries if e.kind == "optimizer state"]
    assert len(state) == 8 and {e.device for e in state} == {"cpu"}
    assert all(e.status != "ok" for e in state)      # no ✔ next to the state of a parameter the model left behind
    assert entry(report, "optimizer param #0 (exp_avg)").note == ("next to optimizer param #0, which the model "
                                                                  "no longer uses")


def test_the_headline_counts_every_row_and_names_each_device():
    report = explain_devices(nn.Linear(2, 2).to("meta"), {"x": torch.ones(2, device="meta"), "lr": torch.tensor(0.1)})
    assert report.headline() == "3 of 4 tensors are on meta. lr may stay on cpu: see the notes."
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    for state in opt.state.values():
        state["exp_avg"] = state["exp_avg"].to("meta")
    headline = explain_devices(model, optimizer=opt).headline()
    assert headline.startswith("All 2 tensors of the model are on cpu. The optimizer's 6 tensors are on cpu (4) "
                               "and meta (2). Optimizer state not next to its parameter: ")


def test_rows_left_out_say_which_device_they_are_on():
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    opt.step()                                        # fine state, next to its CPU parameters
    report = explain_devices(model, optimizer=opt, device="meta")
    assert report.mismatches == ["bias", "weight"]
    assert "... and 4 more tensors on cpu, all fine" in report.text(max_rows=4)     # not "on meta"


def test_text_wraps_at_spaces_and_html_between_words():
    model = Classifier().to("meta")
    model.head = nn.Linear(8, 3)
    report = explain_devices(model, {"x": torch.randn(2, 4), "lengths": torch.tensor([3, 2])}, device="meta")
    text = report.text()
    assert max(len(line) for line in text.splitlines()) <= devicereport.WIDTH
    flat = " ".join(text.split())
    for said in report.suggestions + [report.headline()] + [e.note for e in report.entries if e.note]:
        assert " ".join(said.split()) in flat           # every word whole: broken only at spaces
    page = report._repr_html_()
    assert "break-all" not in page and "anywhere" not in page and "word-break:normal" in page


def test_long_reports_hide_only_fine_rows():
    model = nn.Sequential(*[nn.Linear(2, 2) for _ in range(40)])
    report = explain_devices(model, {"x": torch.ones(2, device="meta")}, device="cpu")
    text = report.text()
    assert "x" in report.mismatches and " x " in text and "more tensors on cpu, all fine" in text
    assert len(text.splitlines()) < 50


def test_html_escapes_everything():
    evil = "<script>alert(1)</script>"
    report = explain_devices(nn.Linear(2, 2), {evil: torch.ones(1, device="meta"), "b": evil}, device="cpu")
    page = report._repr_html_()
    assert "<script" not in page and "&lt;script&gt;" in page
    assert str(report) == report.text() == repr(report)


class Hostile:
    def _boom(self, *a, **k):
        raise RuntimeError("hostile")

    __eq__ = __bool__ = __len__ = __iter__ = __repr__ = __str__ = __hash__ = __getitem__ = _boom

    def __getattr__(self, name):
        raise RuntimeError("hostile attribute")


class HostileModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 2)

    def named_parameters(self, *a, **k):
        raise RuntimeError("mine")


circular: list = []
circular.append(circular)


@pytest.mark.parametrize("model", [None, 42, "model", torch.ones(2), nn.Module(), Hostile(), HostileModule(),
                                   nn.Linear(2, 2), {"x": torch.ones(1)}], ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("inputs", [None, torch.ones(2), 3, "text", [1, None, "a"], {1: torch.ones(1)},
                                    {"h": Hostile()}, [Hostile()], circular, {},
                                    {"x": torch.ones(2, device="meta")}, (torch.ones(1),) * 500],
                         ids=lambda v: type(v).__name__)
@pytest.mark.parametrize("device", [None, "cpu", "meta", "cuda:3", "nonsense", 7, Hostile()],
                         ids=lambda v: type(v).__name__ if not isinstance(v, str) else v)
def test_never_raises(model, inputs, device):
    report = explain_devices(model, inputs, device)
    assert isinstance(report, DeviceReport)
    assert isinstance(report.text(), str) and isinstance(report._repr_html_(), str)
    assert isinstance(report.ok, bool) and isinstance(report.mismatches, list)


def test_never_raises_with_a_hostile_optimizer():
    report = explain_devices(nn.Linear(2, 2), optimizer=Hostile())
    assert report.problems and report.text()


leaves = st.one_of(
    st.none(), st.integers(), st.text(max_size=3), st.floats(allow_nan=True),
    st.builds(lambda shape, dev: torch.zeros(shape, device=dev), st.lists(st.integers(0, 3), max_size=2).map(tuple),
              st.sampled_from(["cpu", "meta"])))
structures = st.recursive(leaves, lambda children: st.one_of(
    st.lists(children, max_size=3), st.tuples(children, children),
    st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), children, max_size=3)), max_leaves=12)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(structures, st.sampled_from([None, "cpu", "meta"]))
def test_never_raises_for_generated_inputs(inputs, device):
    report = explain_devices(Classifier(), inputs, device)
    assert not report.problems
    text = report.text()
    for name in report.mismatches:
        assert name in text


def test_save_as_gpu_checkpoint_writes_cuda_tags_and_only_then():
    buffer = io.BytesIO()
    save_as_gpu_checkpoint({"w": torch.ones(2), "b": torch.zeros(1), "n": 1}, buffer, location="cuda:1")
    tags = []
    loaded = torch.load(io.BytesIO(buffer.getvalue()), map_location=lambda s, loc: tags.append(loc) or s)
    assert sorted(tags) == ["cuda:1", "cuda:1"] and loaded["n"] == 1 and torch.equal(loaded["w"], torch.ones(2))
    with pytest.raises(Exception):
        save_as_gpu_checkpoint({"f": lambda: None}, io.BytesIO())     # cannot pickle a lambda
    assert mismatch._TAG_AS is None                                    # ... and the tagging is switched off
    plain = io.BytesIO()
    torch.save(torch.ones(1), plain)
    tags.clear()
    torch.load(io.BytesIO(plain.getvalue()), map_location=lambda s, loc: tags.append(loc) or s)
    assert tags == ["cpu"]


@pytest.mark.parametrize("make", [
    lambda: nn.LSTM(4, 4, 2), lambda: nn.MultiheadAttention(8, 2), lambda: nn.Embedding(5, 3),
    lambda: nn.Conv2d(1, 2, 3), lambda: nn.BatchNorm2d(3), lambda: nn.LayerNorm(4),
    lambda: nn.utils.parametrizations.weight_norm(nn.Linear(3, 3)),
], ids=["LSTM", "MultiheadAttention", "Embedding", "Conv2d", "BatchNorm2d", "LayerNorm", "weight_norm"])
def test_no_false_alarms_on_built_in_layers(make):
    for device in ("cpu", "meta"):
        report = explain_devices(make().to(device), device=device)
        assert report.ok, report.text()


# --- arguments that stay on the CPU, and tensors a loss holds ------------------------------------------------

class Tagger(nn.Module):
    """An RNN that packs its padded input: its lengths must stay on the CPU."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(2, 2, batch_first=True)

    def forward(self, x, x_len):
        packed = nn.utils.rnn.pack_padded_sequence(x, x_len, batch_first=True, enforce_sorted=False)
        return self.rnn(packed)


class Masker(nn.Module):
    """A model that uses a length tensor on its own device, to build a mask: no packing."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)

    def forward(self, x, src_len):
        mask = torch.arange(x.shape[1], device=x.device)[None, :] < src_len[:, None]
        return self.proj(x) * mask[..., None]


@pytest.mark.parametrize("name", ["lengths", "src_len", "x_len", "seq_len", "seqlen", "input_lengths", "tgt_lens"])
def test_lengths_given_to_pack_padded_sequence_stay_on_the_cpu(name):
    model = Tagger().to("meta")
    report = explain_devices(model, {"x": torch.ones(2, 3, 2, device="meta"), name: torch.tensor([3, 2])})
    assert report.target == "meta" and report.mismatches == []
    assert f"{name}.to" not in report.text() and "pack_padded_sequence" in entry(report, name).note
    on_gpu = explain_devices(model, {"x": torch.ones(2, 3, 2, device="meta"),
                                     name: torch.tensor([3, 2], device="meta")})
    assert on_gpu.mismatches == [name]
    assert any(f"`{name} = {name}.cpu()`" in s for s in on_gpu.suggestions)
    assert not any(f'{name}.to("meta")' in s for s in on_gpu.suggestions)


@pytest.mark.parametrize("name", ["src_len", "x_len", "seq_len", "lengths"])
def test_lengths_of_unknown_use_are_never_moved_and_said_to_be_uncertain(name):
    """A model that computes with its lengths on the device; the explainer cannot tell that from a name."""
    model = Masker().to("meta")
    for lengths in (torch.tensor([3, 2]), torch.tensor([3, 2], device="meta")):
        report = explain_devices(model, {"x": torch.ones(2, 3, 2, device="meta"), name: lengths})
        assert report.target == "meta" and report.mismatches == [], report.text()
        note = entry(report, name).note
        assert entry(report, name).status == "note" and "pack_padded_sequence" in note and "did not say" in note
        assert not any(name in s for s in report.suggestions)


def test_lengths_on_a_third_device_get_both_ways_back():
    report = explain_devices(Masker(), {"x": torch.ones(2, 3, 2), "x_len": torch.tensor([3, 2], device="meta")})
    assert report.target == "cpu" and report.mismatches == ["x_len"]
    assert any("`x_len = x_len.cpu()` if it goes to pack_padded_sequence" in s for s in report.suggestions)


def test_float_or_2d_tensors_named_like_lengths_are_ordinary_inputs():
    inputs = {"seq_len": torch.ones(2), "lengths": torch.ones(2, 2, dtype=torch.long)}
    report = explain_devices(nn.Linear(2, 2).to("meta"), inputs)
    assert report.mismatches == ["lengths", "seq_len"]


def test_lengths_on_the_cpu_do_not_choose_the_target():
    report = explain_devices(None, {"x": torch.ones(3, device="meta"), "seq_lens": torch.tensor([3]),
                                    "src_lengths": torch.tensor([3])})
    assert report.target == "meta" and report.mismatches == []


def test_a_dataloader_generator_is_never_moved():
    loader = torch.utils.data.DataLoader(range(4), shuffle=True, generator=torch.Generator())
    report = explain_devices(nn.Linear(2, 2).to("meta"), {"x": torch.ones(2, device="meta"), "loader": loader})
    gen = entry(report, "loader.generator")
    assert gen.device == "cpu" and gen.status == "note" and "CPU" in gen.note
    assert report.ok is True and not any("generator" in s or "loader" in s for s in report.suggestions)


def test_a_loss_weight_is_checked_against_the_model():
    model = nn.Linear(2, 3).to("meta")
    report = explain_devices(model, {"x": torch.ones(1, 2, device="meta")},
                             loss=nn.CrossEntropyLoss(weight=torch.ones(3)))
    assert report.target == "meta" and report.mismatches == ["loss.weight"]
    assert entry(report, "loss.weight").kind == "loss"
    assert any(s.startswith("Move 'loss' with the model: `loss.to(\"meta\")`") for s in report.suggestions)
    assert not any("Move input" in s for s in report.suggestions)
    named = explain_devices(model, {"x": torch.ones(1, 2, device="meta"),
                                    "criterion": nn.BCEWithLogitsLoss(pos_weight=torch.ones(3))})
    assert named.mismatches == ["criterion.pos_weight"] and "`criterion.to(\"meta\")`" in named.text()


def test_a_loss_weight_never_sends_the_data_to_the_cpu():
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.ones(2))         # its pos_weight is on the CPU
    inputs = {"logits": torch.ones(2, device="meta"), "y": torch.ones(2, device="meta")}
    def check(report):
        assert report.target == "meta", report.text()
        assert not any(s.startswith("Move input") for s in report.suggestions)
        assert any('.to("meta")' in s for s in report.suggestions)   # the loss moves to the data

    check(explain_devices(criterion, inputs))                       # a loss passed as the model
    check(explain_devices(None, inputs, loss={"criterion": criterion}))


@pytest.mark.parametrize("loss", [Hostile(), 3, "loss", {"a": Hostile()}, nn.MSELoss(), HostileModule()],
                         ids=lambda v: type(v).__name__)
def test_never_raises_with_odd_losses(loss):
    report = explain_devices(nn.Linear(2, 2), {"x": torch.ones(2)}, loss=loss)
    assert isinstance(report.text(), str) and isinstance(report._repr_html_(), str)



class GpuGenerator(torch.Generator):
    """What `torch.Generator(device="cuda")` reports, on a machine without CUDA."""
    device = torch.device("cuda", 0)


def test_a_dataloader_generator_off_the_cpu_gets_the_way_back_and_a_bare_one_is_left_alone():
    loader = torch.utils.data.DataLoader(range(4), shuffle=True, generator=GpuGenerator())
    report = explain_devices(nn.Linear(2, 2), {"x": torch.ones(2), "loader": loader, "g": GpuGenerator()})
    assert report.mismatches == ["loader.generator"] and entry(report, "loader.generator").device == "cuda:0"
    assert any('torch.Generator(device="cpu")' in s for s in report.suggestions)
    assert entry(report, "g").status == "note"            # one for torch.randn(..., generator=g) may be on a GPU
    assert not any(".to(" in s for s in report.suggestions)


# --- nn.DataParallel and Hugging Face style batches -----------------------------------------------------------

def data_parallel_on(device: str) -> nn.DataParallel:
    """What ``nn.DataParallel(model)`` looks like on a machine with several CUDA GPUs (the model left where it was):
    here no GPU is needed to build it. (With one GPU the wrapper moves the model to ``cuda:0`` when it is made.)"""
    dp = nn.DataParallel(nn.Linear(2, 2))
    dp.module.cpu()
    dp.device_ids, dp.src_device_obj = [0], torch.device(device)
    return dp


@pytest.mark.parametrize("inputs", [{"x": torch.ones(2, device="meta")}, {"x": torch.ones(2)}])
def test_a_data_parallel_model_on_the_cpu_moves_to_device_ids_0_never_the_inputs_to_the_cpu(inputs):
    report = explain_devices(data_parallel_on("cuda:0"), inputs)
    assert report.target == "cuda:0" and "device_ids[0]" in report.reason
    assert report.mismatches == ["module.bias", "module.weight"] and entry(report, "x").status == "note"
    text = " ".join(report.suggestions)
    assert 'model.to("cuda:0")' in text and "scatters" in text
    assert ".cpu()" not in text and 'to("cpu")' not in text and "Move input" not in text


def test_a_data_parallel_model_ignores_a_device_it_cannot_run_on():
    report = explain_devices(data_parallel_on("cuda:0"), {"x": torch.ones(2)}, device="cpu")
    assert report.target == "cuda:0" and any("device_ids[0]" in p for p in report.problems)
    assert not explain_devices(data_parallel_on("cuda:0"), device="cuda:0").problems


def test_a_data_parallel_model_without_gpus_is_an_ordinary_module(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)   # made as on a machine without a GPU
    report = explain_devices(nn.DataParallel(nn.Linear(2, 2)), {"x": torch.ones(2, device="meta")})
    assert report.target == "cpu" and report.mismatches == ["x"]


class BatchEncodingLike(UserDict):
    """The shape of a Hugging Face ``BatchEncoding``: a ``UserDict`` of tensors whose ``.to`` moves them all."""

    def to(self, device):
        self.data = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in self.data.items()}
        return self


def tokens(device: str = "cpu") -> BatchEncodingLike:
    return BatchEncodingLike(input_ids=torch.ones(2, 4, dtype=torch.long, device=device),
                             attention_mask=torch.ones(2, 4, dtype=torch.long, device=device))


def test_a_batch_encoding_is_looked_inside_and_moved_in_one_call():
    model = nn.Embedding(5, 3).to("meta")
    report = explain_devices(model, {"batch": tokens()})
    assert report.mismatches == ["batch['attention_mask']", "batch['input_ids']"]
    assert 'batch = batch.to("meta")' in report.text() and "Move input" not in report.text()
    as_inputs = explain_devices(model, tokens())
    assert as_inputs.mismatches == ["attention_mask", "input_ids"]
    assert any('inputs = inputs.to("meta")' in s for s in as_inputs.suggestions)
    moved = explain_devices(model, tokens().to("meta"))
    assert moved.ok and moved.target == "meta"


def test_a_plain_mapping_without_to_gets_a_move_per_tensor():
    class Batch(UserDict):
        pass
    report = explain_devices(nn.Linear(2, 2).to("meta"), {"batch": Batch(x=torch.ones(2))})
    assert report.mismatches == ["batch['x']"] and """batch['x'] = batch['x'].to("meta")""" in report.text()


def test_a_hostile_mapping_never_crashes_the_report():
    class Broken(UserDict):
        def items(self):
            raise RuntimeError("no")

        def to(self, device):
            raise RuntimeError("no")
    report = explain_devices(nn.Linear(2, 2), {"batch": Broken(x=torch.ones(2))})
    assert isinstance(report.text(), str) and isinstance(report._repr_html_(), str)


def test_the_html_report_says_each_rows_status_in_words_not_only_colour():
    import re

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(2, 2)
            self.scale = torch.ones(2)

    model = Plain().to("meta")
    page = explain_devices(model, {"x": torch.ones(1, 2)}, device="meta")._repr_html_()
    statuses = re.findall(r"<td[^>]*><span style='color:#[0-9a-f]{6}'>[^<]+</span> (\w+)</td>", page)
    assert "mismatch" in statuses and "ok" in statuses, statuses
    assert "<th style='text-align:left;padding:1px 8px'>status</th>" in page
    assert not re.search(r"<(b|div) style='color:#", page)        # no text told by colour: words in theme colour
