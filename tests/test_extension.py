"""The IPython extension, in a real kernel and in plain IPython: help under device errors, nothing else."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import nbformat
import pytest
import torch
from nbclient import NotebookClient
from torch import nn

from course_utils.extension import ErrorHelp, variables_on
from course_utils.errors import explain_error
from nbtools import ROOT

MISMATCH = "model(x)"      # a meta model and a CPU input: the course's real device error


def run_notebook(*sources: str) -> list:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    return [cell.outputs for cell in nb.cells]


def same_traceback(a: list, b: list) -> bool:
    def norm(lines: list) -> list:
        return [re.sub(r"In\[\d+\]", "In[N]", line) for line in lines]
    return norm(a) == norm(b)


def help_outputs(outputs: list) -> list:
    return [o for o in outputs if o.output_type == "display_data" and "course-error-help" in o.data.get("text/html", "")]


@pytest.fixture(scope="module")
def cells():
    return run_notebook(
        "import torch\nfrom torch import nn\nimport course_utils as cu\n"
        "model = nn.Linear(2, 2).to('meta')\nx = torch.ones(1, 2)\nw = torch.zeros(3)",
        "%load_ext course_utils\n%load_ext course_utils",           # twice: still one explanation
        MISMATCH,                                                    # 2: explained
        "1 / 0",                                                     # 3: not a device error: untouched
        "torch.ones(2, dtype=torch.float64) @ torch.ones(2)",        # 4: a dtype look-alike: untouched
        "%unload_ext course_utils",
        MISMATCH,                                                    # 6: no longer explained
        "device = cu.setup('06')",                                   # setup turns it on again
        MISMATCH,                                                    # 8: explained
    )


def test_the_explanation_follows_the_unchanged_traceback(cells):
    outputs = cells[2]
    assert [o.output_type for o in outputs] == ["error", "display_data"]
    error, shown = outputs
    assert error.ename == "RuntimeError" and "is not on the expected device" in error.evalue
    assert help_outputs(outputs) == [shown]
    html, text = shown.data["text/html"], shown.data["text/plain"]
    assert "Tensors on different devices" in text and "`x = x.to(device)`" in text
    assert "06_mismatch_errors" in html
    assert "meta: model\n" in text and "cpu: x, w" in text   # the variables on each device the message names
    assert "course-device-map" in html and 'data-name="x"' in html and 'data-name="model.weight"' in html


def test_other_errors_are_left_alone(cells):
    assert [o.output_type for o in cells[3]] == ["error"] and cells[3][0].ename == "ZeroDivisionError"
    assert [o.output_type for o in cells[4]] == ["error"]


def test_unload_removes_it_and_setup_brings_it_back(cells):
    assert [o.output_type for o in cells[6]] == ["error"]
    assert [o.output_type for o in cells[8]] == ["error", "display_data"] and len(help_outputs(cells[8])) == 1
    # the traceback with the extension on (cell 8) is the one without it (cell 6), but for the cell number
    assert same_traceback(cells[8][0].traceback, cells[6][0].traceback) and cells[8][0].evalue == cells[6][0].evalue


def test_plain_ipython_without_widgets():
    """A terminal IPython with ipywidgets unimportable: the traceback, then the explanation as text."""
    code = textwrap.dedent("""
        import sys
        sys.modules["ipywidgets"] = None            # as if it were not installed
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "course_utils")
        ip.run_cell("import torch; from torch import nn; m = nn.Linear(2, 2).to('meta'); x = torch.ones(1, 2)")
        print("=== cell")
        ip.run_cell("m(x)")
        print("=== other")
        ip.run_cell("1/0")
        ip.run_line_magic("unload_ext", "course_utils")
        print("=== unloaded")
        ip.run_cell("m(x)")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    text = out.stdout + out.stderr
    cell, rest = text.split("=== cell", 1)[1].split("=== other", 1)
    other, unloaded = rest.split("=== unloaded", 1)
    assert "RuntimeError" in cell and "Device error: Tensors on different devices" in cell
    assert cell.index("RuntimeError") < cell.index("Device error:")
    assert "m: meta" not in cell and "meta: m" in cell
    assert "ZeroDivisionError" in other and "Device error" not in other
    assert "RuntimeError" in unloaded and "Device error" not in unloaded


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
