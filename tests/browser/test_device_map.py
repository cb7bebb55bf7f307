"""The device map as a learner sees it in JupyterLab, in the light and the dark theme: every label sits
inside its block, nothing overflows the output area, and text stands out from its block."""
from __future__ import annotations

import itertools
import json
import re

import pytest

from conftest import ARTIFACTS
from test_learner_view import open_notebook, run_all_and_save, shutdown_kernels

pytestmark = pytest.mark.browser

CELL = ("import torch, course_utils as cu\n"
        "model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))\n"
        "tiny, batch = torch.ones(1), torch.ones(64, 3, 32, 32)\n"
        "before = cu.show_devices(model, tiny, batch)\n"
        "model.to('meta')\n"
        "cu.show_devices(model, tiny, batch, huge=torch.empty(2**30, device='meta'),\n"
        "                a_rather_long_variable_name_indeed=torch.ones(3, 3), compare=before)\n")

GEOMETRY = """(map) => {
  const out = map.closest('.jp-OutputArea-output').getBoundingClientRect();
  const box = map.getBoundingClientRect();
  const lum = (c) => { const [r, g, b] = c.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => v / 255);
                       return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const blocks = [...map.querySelectorAll('g.course-block')].map(g => {
    const card = g.querySelector('rect').getBoundingClientRect();
    const texts = [...g.querySelectorAll('text')].map(t => t.getBoundingClientRect());
    const inside = texts.every(t => t.left >= card.left - 1 && t.right <= card.right + 1 &&
                                    t.top >= card.top - 1 && t.bottom <= card.bottom + 1);
    const fill = getComputedStyle(g.querySelector('rect')).fill;
    const ink = getComputedStyle(g.querySelector('text')).fill;
    return {name: g.dataset.name, inside, contrast: Math.abs(lum(fill) - lum(ink)), width: card.width};
  });
  return {overflow: box.right > out.right + 1 || box.left < out.left - 1, blocks};
}"""


def set_theme(page, name):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Settings$")).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Theme$")).first.hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{name}$")).first.click()
    page.wait_for_function("(n) => document.body.dataset.jpThemeName === n", arg=name, timeout=30_000)
    page.wait_for_timeout(500)


def test_the_device_map_reads_well_in_light_and_dark_themes(page, server, notebook_copy):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                             "language": "python"}},
          "cells": [{"cell_type": "code", "id": "map", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": CELL}]}
    target = notebook_copy / "device_map_view.ipynb"
    target.write_text(json.dumps(nb), encoding="utf-8")
    open_notebook(page, server, target.name, ui="lab")
    try:
        run_all_and_save(page, server, target)
        device_map = page.locator(".course-device-map").first
        device_map.wait_for(timeout=30_000)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for theme in ("JupyterLab Light", "JupyterLab Dark"):
            set_theme(page, theme)
            device_map.scroll_into_view_if_needed()
            device_map.screenshot(path=str(ARTIFACTS / f"device-map-{theme.split()[-1].lower()}.png"))
            seen = device_map.evaluate(GEOMETRY)
            assert not seen["overflow"], theme
            assert {b["name"] for b in seen["blocks"]} >= {"tiny", "batch", "huge", "model.0.weight"}
            for block in seen["blocks"]:
                assert block["inside"], (theme, block)
                assert block["contrast"] > 0.4, (theme, block)
            widths = {b["name"]: b["width"] for b in seen["blocks"]}
            assert widths["tiny"] < widths["batch"] < widths["huge"]
        set_theme(page, "JupyterLab Light")
    finally:
        shutdown_kernels(server)


KINDS_CELL = ("import torch, course_utils as cu\n"
              "model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.BatchNorm1d(4))\n"
              "opt = torch.optim.Adam(model.parameters())\n"
              "model(torch.ones(2, 8)).sum().backward(); opt.step()\n"
              "cu.show_devices(model, opt=opt, batch=torch.ones(64, 8))\n")
PLOT_CELL = ("import matplotlib.pyplot as plt\nfrom course_utils import figures\n"
             "fig, ax = plt.subplots(figsize=(5, 3))\n"
             "for i, name in enumerate(['host to host', 'pageable to GPU', 'pinned to GPU', 'GPU to host']):\n"
             "    ax.plot([1, 2, 3, 4], [i + 1, i + 2, i + 4, i + 8], label=name, **figures.style(i))\n"
             "ax.legend()\ncu.show_figure(fig, 'Four rising lines, one per kind of copy')\n")
#: Centre of each bar (the block's second rect), in the element's own pixels, with the block's kind.
BARS = """(map) => { const box = map.getBoundingClientRect();
  return [...map.querySelectorAll('g.course-block')].map(g => { const r = g.querySelectorAll('rect')[1]
    .getBoundingClientRect(); return {kind: g.dataset.kind, x: r.left - box.left + r.width / 2,
    y: r.top - box.top + r.height / 2, width: box.width}; }); }"""


def test_colour_vision_simulations_of_the_map_and_a_plot(page, server, notebook_copy):
    """The device map and a plot as learners with protanopia, deuteranopia or tritanopia see them (Machado et
    al.'s matrices as an SVG filter over the rendered output; screenshots kept as artifacts): in each, every
    kind of block still shows a bar of its own colour, and the kinds are written besides."""
    import io

    from colour_vision import SIMULATIONS, svg_filters
    from PIL import Image

    cells = [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
              "source": src} for i, src in enumerate((KINDS_CELL, PLOT_CELL))]
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                             "language": "python"}}, "cells": cells}
    target = notebook_copy / "colour_vision_view.ipynb"
    target.write_text(json.dumps(nb), encoding="utf-8")
    open_notebook(page, server, target.name, ui="lab")
    out = ARTIFACTS / "colour-vision"
    out.mkdir(parents=True, exist_ok=True)
    try:
        run_all_and_save(page, server, target)
        device_map = page.locator(".course-device-map").first
        device_map.wait_for(timeout=30_000)
        plot = page.locator(".jp-OutputArea-output img[alt^='Four rising lines']").first
        page.evaluate("(svg) => document.body.insertAdjacentHTML('beforeend', svg)", svg_filters())
        bars = device_map.evaluate(BARS)
        assert {b["kind"] for b in bars} >= {"parameter", "buffer", "gradient", "optimizer state", "tensor"}
        for name in ("normal", *SIMULATIONS):
            css = "none" if name == "normal" else f"url(#sim-{name})"
            for element in (device_map, plot):
                element.evaluate("(el, f) => { el.style.filter = f; }", css)
            plot.scroll_into_view_if_needed()
            plot.screenshot(path=str(out / f"plot-{name}.png"))
            device_map.scroll_into_view_if_needed()
            shot = Image.open(io.BytesIO(device_map.screenshot(path=str(out / f"map-{name}.png")))).convert("RGB")
            scale = shot.width / bars[0]["width"]
            colour = {b["kind"]: shot.getpixel((int(b["x"] * scale), int(b["y"] * scale))) for b in bars}
            for a, b in itertools.combinations(sorted(colour), 2):
                apart = sum(abs(x - y) for x, y in zip(colour[a], colour[b]))
                assert apart > 30, (name, a, colour[a], b, colour[b])
    finally:
        shutdown_kernels(server)
