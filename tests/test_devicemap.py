"""The device map (cu.show_devices): one lane per memory, one block per storage, sizes that grow with
the bytes, labels inside their blocks, before/after comparison, and odd input handled kindly."""
from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import course_utils as cu
from course_utils.devicemap import render
from course_utils.devicemap.model import COPIED, MOVED, NEW, ODD, STAYED


def lanes(device_map):
    return {lane.device: lane for lane in device_map.lanes}


def test_a_block_per_object_in_its_lane():
    x, w = torch.ones(3), torch.zeros(2, 2, device="meta")
    m = cu.show_devices(x, w)
    assert list(lanes(m)) == ["cpu", "meta"]
    assert [b.names for b in lanes(m)["cpu"].blocks] == [["x"]]
    assert [b.names for b in lanes(m)["meta"].blocks] == [["w"]]
    assert m.find("w").nbytes == 16 and m.find("w").shape == (2, 2) and m.find("w").dtype == "float32"


def test_lanes_come_in_a_fixed_order_cpu_accelerators_meta():
    m = cu.show_devices(a=torch.ones(1, device="meta"), b=torch.ones(1))
    assert [lane.device for lane in m.lanes] == ["cpu", "meta"]


def test_views_that_share_storage_are_one_block_counted_once():
    base = torch.arange(12.0)
    view, reshaped = base[2:5], base.view(3, 4)
    m = cu.show_devices(base, view, reshaped)
    [block] = m.blocks()
    assert block.names == ["base", "view", "reshaped"] and block.nbytes == 48
    assert lanes(m)["cpu"].used == 48
    assert "(+2 views)" in render.label_lines(block)[0]


def test_a_module_gives_parameters_buffers_and_gradients_grouped_by_submodule():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    model(torch.randn(4, 2)).sum().backward()
    m = cu.show_devices(model)
    kinds = {b.name: (b.kind, b.group) for b in m.blocks()}
    assert kinds["model.0.weight"] == ("parameter", "0")
    assert kinds["model.0.weight.grad"] == ("gradient", "0")
    assert kinds["model.1.running_mean"] == ("buffer", "1")


def test_optimizer_state_is_drawn():
    model = nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 2)).sum().backward()
    opt.step()
    m = cu.show_devices(model, opt)
    state = [b for b in m.blocks() if b.kind == "optimizer state"]
    assert {b.name for b in state} >= {"opt.state[0].exp_avg", "opt.state[0].exp_avg_sq", "opt.state[1].exp_avg"}
    assert next(b for b in state if b.name == "opt.state[0].exp_avg").group == "model.weight"


@pytest.mark.parametrize("small, big", [(0, 4), (4, 8), (4, 4096), (2**20, 2**30), (2**30, 4 * 2**30)])
def test_sizes_grow_with_bytes(small, big):
    assert render.bar_width(small) < render.bar_width(big)
    assert render.BAR_MIN <= render.bar_width(small) and render.bar_width(big) <= render.BAR_MAX


def test_4_bytes_and_4_gigabytes_are_both_readable():
    tiny, huge = render.bar_width(4), render.bar_width(4 * 2**30)
    assert tiny >= render.BAR_MIN and huge <= render.BAR_MAX and huge / tiny < 100


def test_blocks_stay_inside_their_lane_and_labels_fit_their_block():
    blocks = {f"t{i}": torch.empty(2 ** (2 * i), dtype=torch.uint8, device="meta") for i in range(16)}
    blocks["a_very_long_variable_name_that_goes_on_and_on"] = torch.ones(3)
    m = cu.show_devices(**blocks)
    for lane in m.lanes:
        for block, x, y in render.layout(lane):
            assert 0 <= x and x + render.block_width(block) <= render.LANE_WIDTH
            name, *lines = render.label_lines(block)
            assert len(name) <= render._NAME_CHARS and all(len(line) <= render._CHARS for line in lines)


def test_text_and_html_carry_every_label():
    x = torch.ones(2, 3)
    m = cu.show_devices(x, batch=torch.zeros(4, dtype=torch.int64, device="meta"))
    text, page = str(m), m._repr_html_()
    for needed in ("x", "batch", "2×3", "float32", "int64", "24 B", "32 B", "cpu (host memory)", "meta"):
        assert needed in text and needed in page, needed
    assert page.count("<svg") == 2 and "<script" not in page
    assert page.count('class="course-block"') == 2


def test_html_escapes_names():
    m = cu.show_devices(**{"<script>alert(1)</script>": torch.ones(1)})
    assert "<script>" not in m._repr_html_() and "&lt;script&gt;" in m._repr_html_()


def test_theme_colours_come_from_jupyterlab_variables_with_fallbacks():
    page = cu.show_devices(t=torch.ones(1))._repr_html_()
    assert "var(--jp-ui-font-color1, #1f1f1f)" in page and "var(--jp-layout-color1, #ffffff)" in page


def test_compare_marks_moved_copied_stayed_and_new():
    model = nn.Linear(2, 2)
    model.register_buffer("scale", torch.ones(2))
    model.offset = torch.zeros(2)           # a plain attribute: .to does not move it
    x = torch.ones(2)
    before = cu.show_devices(model, x)
    model.to("meta")
    y = x.to("meta")                        # a copy; x stays
    z = torch.ones(1, device="meta")        # new
    after = cu.show_devices(model, x, y, z, compare=before)
    status = {b.name: b.status for b in after.blocks()}
    assert status["model.weight"] == status["model.scale"] == MOVED
    assert status["model.offset"] == STAYED and status["x"] == STAYED
    assert status["y"] == COPIED and "copy of x" in after.find("y").note
    assert status["z"] == NEW
    assert "stayed behind" in str(after) and 'data-status="stayed behind"' in after._repr_html_()


def test_an_optimizer_step_count_on_the_cpu_is_not_called_left_behind():
    model = nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(1, 2)).sum().backward()
    opt.step()
    before = cu.show_devices(model, opt)
    model.to("meta")
    after = cu.show_devices(model, opt, compare=before)
    assert after.find("opt.state[0].step").status == ""
    assert after.find("opt.state[0].exp_avg").status == STAYED


class Hostile:
    def __getattr__(self, name):
        raise RuntimeError("no")


ODD_THINGS = {"None": lambda: None, "int": lambda: 3, "str": lambda: "text", "bytes": lambda: b"bytes",
              "hostile": Hostile, "generator": lambda: (i for i in range(3)), "deep": lambda: [[[[[[torch.ones(1)]]]]]],
              "empty dict": lambda: {"a": {}}, "function": lambda: (lambda: 1), "module without tensors": nn.ReLU}


@pytest.mark.parametrize("thing", list(ODD_THINGS))
def test_odd_objects_never_break_the_map(thing):
    m = cu.show_devices(thing=ODD_THINGS[thing]())
    assert isinstance(str(m), str) and isinstance(m._repr_html_(), str)


def test_a_cyclic_container_is_visited_once():
    box: dict = {"t": torch.ones(2)}
    box["self"] = box
    m = cu.show_devices(box=box)
    assert [b.names for b in m.blocks()] == [["box['t']"]]


def test_objects_without_tensors_are_listed_kindly():
    m = cu.show_devices(n=3, label="cat")
    assert m.skipped == ["n", "label"] and "No tensors in: n, label" in str(m)


def test_with_no_arguments_it_maps_the_callers_variables():
    weights = torch.ones(5)   # noqa: F841 - found by name
    m = cu.show_devices()
    assert m.find("weights") is not None


def test_explain_devices_draws_the_odd_ones_out():
    layer = nn.Linear(4, 2).to("meta")
    report = cu.explain_devices(layer, {"x": torch.randn(3, 4)})
    assert report.device_map.find("x").status == ODD
    assert report.device_map.find("weight").status == ""
    page = report._repr_html_()
    assert page.index("Device report") < page.index("course-device-map")
    assert re.search(r'data-name="x"[^>]*data-status="odd one out"', page)


def test_an_executed_notebook_keeps_its_maps_in_the_static_view(tmp_path):
    """nbconvert's HTML of executed lesson 01 (what GitHub, nbviewer and a saved notebook show) holds the
    map as HTML with inline SVG: lanes, blocks and their labels, no widget."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    from nbtools import NOTEBOOK_DIR

    nb = nbformat.read(NOTEBOOK_DIR / "01_tensors.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    maps = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if "course-device-map" in o.get("data", {}).get("text/html", "")]
    assert maps, "lesson 01 shows a device map"
    page, _ = HTMLExporter().from_notebook_node(nb)
    assert page.count("course-device-map") >= 1 and "<svg" in page
    assert 'data-name="g"' in page and "2×3" in page
    assert set(re.findall(r'data-device="([^"]+)"', page)) - {"cpu"}     # a lane for the GPU beside the CPU's


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(2)                       # a plain attribute: Module.to leaves it behind


def test_what_a_submodule_holds_and_what_a_batch_encoding_holds_are_drawn():
    from collections import UserDict

    class Encoding(UserDict):                          # the shape of a Hugging Face BatchEncoding
        def to(self, device):
            return self
    model = nn.Sequential(nn.Linear(2, 2), _Scaled()).to("meta")
    m = cu.show_devices(model=model, enc=Encoding(ids=torch.ones(3, dtype=torch.long)))
    assert m.find("model.1.scale").device == "cpu" and m.find("model.1.scale").group == "1"
    assert m.find("enc['ids']").kind == "tensor" and m.skipped == []
    report = cu.explain_devices(model, device="meta")
    assert report.device_map.find("1.scale").status == ODD     # the report's odd one out is drawn too


def test_a_tensor_made_by_an_operation_is_drawn_without_a_warning():
    import warnings
    y = torch.ones(2, requires_grad=True) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # PyTorch warns when .grad of a non-leaf is read
        assert [b.names for b in cu.show_devices(y=y).blocks()] == [["y"]]


def test_a_screen_reader_gets_each_lane_in_words_and_the_map_as_a_table():
    """Each lane's SVG is labelled by its own title and a description naming every block; the same facts stand
    in a table with column headers (WCAG 1.1.1, 1.3.1). Two maps on one page never share an id."""
    a, m = torch.ones(3), torch.zeros(2, 4, device="meta")
    page = cu.show_devices(a, m)._repr_html_() + cu.show_devices(a)._repr_html_()
    for labelled_by in re.findall(r'<svg role="img" aria-labelledby="([^"]+)"', page):
        title, desc = labelled_by.split()
        assert f'<title id="{title}">' in page and f'<desc id="{desc}">' in page
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids)) == 6
    assert re.search(r'<desc id="[^"]+">m: tensor, shape \(2, 4\), float32, 32 B on meta</desc>', page)
    table = page[page.index("<table"):page.index("</table>")]
    assert table.count('<th scope="col"') == 7
    assert "<td>m</td><td>tensor</td><td>(2, 4)</td><td>float32</td><td>32 B</td><td>meta</td>" in table


def test_svg_text_is_drawn_in_the_themes_text_colours():
    """Text inside the SVG (axe does not check it) uses JupyterLab's text colours, which meet 4.5:1 on their
    theme's background, light or dark; a status is said in words, its colour only repeats it on the edge."""
    before = cu.show_devices(x=torch.ones(3))
    after = cu.show_devices(x=torch.ones(3, device="meta"), compare=before)
    fills = set(re.findall(r'<text [^>]*style="fill: ([^"]+)"', after._repr_html_()))
    assert fills <= {"var(--jp-ui-font-color1, #1f1f1f)", "var(--jp-ui-font-color2, #555)"}, fills
    assert "moved" in after._repr_html_()


def test_kinds_stay_apart_under_colour_vision_deficiencies_and_are_written_too():
    """The bars' colours come from the plots' palette and stay apart with protanopia, deuteranopia and
    tritanopia; colour is never the only carrier: each block writes its kind, and each bar has an edge in the
    theme's text colour (a bar in a pale colour still shows on a light or dark page)."""
    import itertools

    from colour_vision import SIMULATIONS, distance
    from course_utils.figures import COLOURS
    kinds = render._KIND_COLOUR
    assert set(kinds.values()) <= set(COLOURS)
    for name, matrix in SIMULATIONS.items():
        for (a, ca), (b, cb) in itertools.combinations(kinds.items(), 2):
            assert distance(ca, cb, matrix) > 0.1, (name, a, b, round(distance(ca, cb, matrix), 3))
    model = nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    html_text = cu.show_devices(model=model, opt=opt)._repr_html_()
    for kind in ("parameter", "gradient", "optimizer state"):
        assert kind in html_text
    assert html_text.count("stroke-width: 0.75") == html_text.count("fill-opacity: 0.85") > 0
