"""The IPython extension, in a real kernel and in plain IPython: under a device error, a traceback without PyTorch's
machinery and the help, the failing cell's variables first; any other error untouched."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import nbformat
import pytest
import torch
from nbclient import NotebookClient
from torch import nn

from course_utils.extension import ErrorHelp, cell_names, variables_on, without_machinery
from course_utils.errors import explain_error
from nbtools import ROOT

MISMATCH = "model(x)"      # a meta model and a CPU input: the course's real device error


def run_notebook(*sources: str) -> list:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    return [cell.outputs for cell in nb.cells]


def help_outputs(outputs: list) -> list:
    return [o for o in outputs
            if o.output_type == "display_data" and "course-error-help" in o.data.get("text/html", "")]


MACHINERY = ("torch/_prims", "torch/_refs", "_call_impl", "course_utils/gpusim/")   # never in a short traceback


def plain(lines: list) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(lines))


@pytest.fixture(scope="module")
def cells():
    return run_notebook(
        "import torch\nfrom torch import nn\nimport course_utils as cu\n"
        "model = nn.Linear(2, 2).to('meta')\nx = torch.ones(1, 2)\nw = torch.zeros(3)",
        "%load_ext course_utils\n%load_ext course_utils",           # twice: still one explanation
        MISMATCH,                                                    # 2: explained, traceback shortened
        "1 / 0",                                                     # 3: not a device error: untouched
        "torch.ones(2, dtype=torch.float64) @ torch.ones(2)",        # 4: a dtype look-alike: untouched
        "%unload_ext course_utils",
        MISMATCH,                                                    # 6: no longer explained nor shortened
        "device = cu.setup('06')",                                   # setup turns it on again
        MISMATCH,                                                    # 8: explained, shortened
        "%tb",                                                       # 9: the whole traceback of cell 8
        "nn.Linear(3, 2)(x)",                                        # 10: a shape error: untouched
        "%xmode Verbose\n" + MISMATCH,                               # 11: Verbose: nothing left out
        "%unload_ext course_utils",                                  # 12: off again, though setup turned it on
        MISMATCH,                                                    # 13: no help
    )


def test_the_explanation_follows_the_shortened_traceback(cells):
    outputs = cells[2]
    assert [o.output_type for o in outputs] == ["error", "display_data"]
    error, shown = outputs
    assert error.ename == "RuntimeError" and "is not on the expected device" in error.evalue
    traceback = plain(error.traceback)
    assert "----> 1 model(x)" in traceback and traceback.count("\nFile ") == 1       # the cell, Linear.forward
    assert "Linear.forward" in traceback and not any(m in traceback for m in MACHINERY)
    # PyTorch's frame by its path inside PyTorch, not the installation's (a virtualenv's absolute path)
    installed = os.path.dirname(os.path.dirname(torch.__file__))
    assert installed not in traceback and "torch/nn/modules/linear.py" in traceback
    assert re.search(r"\n\(\d+ frames inside PyTorch not shown: run %tb to see them\.\)$", traceback)
    assert help_outputs(outputs) == [shown]
    html, text = shown.data["text/html"], shown.data["text/plain"]
    assert "Tensors on different devices" in text and "`x = x.to(device)`" in text
    assert "06_mismatch_errors" in html
    # meta's own message names meta first: the cell's variables first, in the order of the devices it names
    assert "  used in this cell: model (meta), x (cpu)\n  others on cpu: w" in text
    assert "course-device-map" in html and 'data-name="x"' in html and 'data-name="model.weight"' in html
    assert 'data-name="w"' not in html                                                 # the map: the cell's only


def test_in_the_lesson_that_teaches_it_the_help_does_not_send_the_learner_to_itself(cells):
    """Before any setup cell the help links to lesson 06; after `cu.setup('06')` it is lesson 06 that is open."""
    before, after = (help_outputs(cells[i])[0].data for i in (2, 8))
    assert "Learn more" in before["text/html"] and "06_mismatch_errors.ipynb#" in before["text/html"]
    assert "Learn more" not in after["text/html"] and "Learn more" not in after["text/plain"]


def test_other_errors_are_left_alone(cells):
    assert [o.output_type for o in cells[3]] == ["error"] and cells[3][0].ename == "ZeroDivisionError"
    assert [o.output_type for o in cells[4]] == ["error"]
    shape_error = plain(cells[10][0].traceback)
    assert [o.output_type for o in cells[10]] == ["error"] and "_call_impl" in shape_error
    assert "not shown" not in shape_error


def test_unload_removes_it_and_setup_brings_it_back(cells):
    assert [o.output_type for o in cells[6]] == ["error"]
    whole = plain(cells[6][0].traceback)
    assert "_call_impl" in whole and "torch/_prims" in whole and "not shown" not in whole
    assert [o.output_type for o in cells[8]] == ["error", "display_data"] and len(help_outputs(cells[8])) == 1
    short = plain(cells[8][0].traceback)
    assert "----> 1 model(x)" in short and not any(m in short for m in MACHINERY) and "not shown: run %tb" in short


def test_unload_works_after_setup(cells):
    assert not [o for o in cells[12] if o.output_type == "stream" and "not loaded" in o.text]
    assert [o.output_type for o in cells[13]] == ["error"]


def test_tb_shows_the_whole_traceback_and_verbose_hides_nothing(cells):
    whole = plain(next(o for o in cells[9] if o.output_type == "error").traceback)
    assert "----> 1 model(x)" in whole and "_call_impl" in whole and "not shown" not in whole
    verbose = plain(next(o for o in cells[11] if o.output_type == "error").traceback)
    assert "_call_impl" in verbose and "not shown" not in verbose
    assert len(help_outputs(cells[11])) == 1


def test_plain_ipython_without_widgets():
    """A terminal IPython with ipywidgets unimportable: the short traceback, then the explanation as text; a
    custom exception handler set before is kept."""
    code = textwrap.dedent("""
        import sys
        sys.modules["ipywidgets"] = None            # as if it were not installed
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "course_utils")
        ip.run_cell("import torch; from torch import nn; m = nn.Linear(2, 2).to('meta'); x = torch.ones(1, 2)")
        print("=== cell")
        ip.run_cell("m(x)")
        print("=== tb")
        ip.run_line_magic("tb", "")
        print("=== other")
        ip.run_cell("1/0")
        ip.run_line_magic("unload_ext", "course_utils")
        print("=== unloaded", ip.custom_exceptions)
        ip.run_cell("m(x)")
        ip.set_custom_exc((ZeroDivisionError,), lambda *a, **k: print("mine"))
        ip.run_line_magic("load_ext", "course_utils")
        print("=== kept", ip.custom_exceptions)
        ip.run_cell("m(x)")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    text = out.stdout + out.stderr
    cell, rest = text.split("=== cell", 1)[1].split("=== tb", 1)
    tb, rest = rest.split("=== other", 1)
    other, rest = rest.split("=== unloaded", 1)
    unloaded, kept = rest.split("=== kept", 1)
    assert "RuntimeError" in cell and "Device error: Tensors on different devices" in cell
    assert cell.index("RuntimeError") < cell.index("not shown: run %tb") < cell.index("Device error:")
    assert "_call_impl" not in cell and "_call_impl" in tb and "not shown" not in tb
    assert "used in this cell: m (meta), x (cpu)" in cell
    assert "ZeroDivisionError" in other and "Device error" not in other
    assert unloaded.startswith(" ()") and "Device error" not in unloaded and "_call_impl" in unloaded
    assert "ZeroDivisionError" in kept.splitlines()[0] and "Device error" in kept and "_call_impl" in kept


def test_variables_on_each_device():
    namespace = {"model": nn.Linear(2, 2).to("meta"), "x": torch.ones(1), "_hidden": torch.ones(1), "n": 3,
                 "opt": torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=0.1)}
    assert variables_on(namespace, ("cpu", "meta")) == {"cpu": ["x", "opt"], "meta": ["model"]}
    assert variables_on(namespace, ("cuda",)) == {"cuda": []}
    assert variables_on({"bad": object()}, ()) == {}


def test_batches_count_on_the_devices_of_their_tensors_and_history_is_skipped():
    from collections import UserDict

    class Encoding(UserDict):                       # the shape of a Hugging Face BatchEncoding
        def to(self, device):
            return self
    namespace = {"batch": {"x": torch.ones(1, device="meta"), "n": 3}, "pair": (torch.ones(1), "label"),
                 "enc": Encoding(input_ids=torch.ones(1, device="meta")), "Out": {1: torch.ones(1)},
                 "In": ["x"], "words": ["a", "b"]}
    assert variables_on(namespace, ("cpu", "meta")) == {"cpu": ["pair"], "meta": ["batch", "enc"]}


def test_help_views_escape_names():
    help_ = ErrorHelp(explain_error("Tensor on device cpu is not on the expected device meta!"), {"cpu": ["<b>x</b>"]})
    assert "&lt;b&gt;x&lt;/b&gt;" in help_._repr_html_() and "cpu: <b>x</b>" in help_.text()


def test_a_module_and_an_optimizer_count_on_every_device_their_tensors_use():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(2, 2)
            self.scale = torch.ones(2)                  # a plain attribute: left on the CPU by Module.to
    model = Scaled().to("meta")
    layer = nn.Linear(2, 2)
    opt = torch.optim.Adam(layer.parameters())
    layer(torch.ones(1, 2)).sum().backward()
    opt.step()
    layer.to("meta")                                    # the state stays on the CPU
    namespace = {"model": model, "opt": opt, "nested": {"xs": [torch.ones(1, device="meta")]}}
    assert variables_on(namespace, ("cpu", "meta")) == {"cpu": ["model", "opt"], "meta": ["model", "nested"]}


@pytest.mark.parametrize("source, line, names", [
    ("a = torch.ones(3, device=target)\nb = torch.ones(3)\na + b", 3, ["a", "b", "torch", "target"]),
    ("layer = nn.Linear(4, 2).to(target)\nlayer(torch.randn(8, 4))", 2, ["layer", "torch", "nn", "target"]),
    ("try:\n    f(x)\nfinally:\n    g(y)", 2, ["f", "x", "g", "y"]),        # the innermost statement of the line
    ("out = model(\n    x,\n    mask)\nprint(out)", 2, ["model", "x", "mask", "print", "out"]),
    ("a + b", None, ["a", "b"]),
    ("%timeit a + b", 1, []),                                              # not Python: nothing to rank
])
def test_cell_names_the_failing_statement_first(source, line, names):
    assert cell_names(source, line) == names


def test_the_cell_variables_come_first_and_the_rest_are_counted():
    where = {"cpu": [f"t{i}" for i in range(20)] + ["x"], "meta": ["model", "x"]}
    help_ = ErrorHelp(explain_error("Tensor on device cpu is not on the expected device meta!"), where,
                      used=["model", "x", "torch"])
    text = help_.text()
    assert ("  used in this cell: x (cpu, meta), model (meta)\n"
            "  others on cpu: t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11 and 8 more") in text
    assert "others on meta" not in text                        # nothing else there
    html = help_._repr_html_()
    assert "<code>x</code> (cpu, meta)" in html and "and 8 more" in html
    nothing_used = ErrorHelp(explain_error("Tensor on device cpu is not on the expected device meta!"), where)
    assert "\n  cpu: t0, t1," in nothing_used.text() and "\n  meta: model, x" in nothing_used.text()


def test_variables_on_lists_the_names_asked_for_first():
    namespace = {"b": torch.ones(1), "a": torch.ones(1, device="meta"), "c": torch.ones(1), "In": [torch.ones(1)]}
    assert variables_on(namespace, ("cpu", "meta"), first=["c", "a"]) == {"cpu": ["c", "b"], "meta": ["a"]}


def test_machinery_is_pytorch_internals_not_public_layers():
    def frames(fn):
        try:
            fn()
        except RuntimeError as e:
            tb = e.__traceback__
        short, hidden = without_machinery(tb)
        kept = []
        while short is not None:
            kept.append(short.tb_frame.f_code.co_name)
            short = short.tb_next
        return kept, [f.f_code.co_filename.replace("\\", "/") for f in hidden]
    kept, hidden = frames(lambda: nn.CrossEntropyLoss(weight=torch.ones(3))(torch.ones(1, 3, device="meta"),
                                                                             torch.zeros(1, dtype=torch.long)))
    assert kept == ["frames", "<lambda>", "forward", "cross_entropy"]      # yours, then the loss's public code
    assert any("torch/_refs/" in f for f in hidden) and any("torch/nn/modules/module.py" in f for f in hidden)


def test_a_variable_with_a_part_on_each_device_is_listed_once_and_said_to_be_split():
    """An optimizer whose state stayed on the CPU while its parameters moved is on both devices: one line says so,
    rather than the same name under each device with no word that it is split."""
    from course_utils.errors import explain_error
    from course_utils.extension import ErrorHelp
    e = explain_error("Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
    text = ErrorHelp(e, {"cuda:0": ["model", "opt"], "cpu": ["x", "opt", "b"]}, used=["x"]).text()
    assert text.count("opt") == 1 and "others split across devices (a part on each): opt (cuda:0, cpu)" in text
    assert "others on cuda:0: model\n" in text and "others on cpu: b\n" in text
