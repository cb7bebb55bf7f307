"""The device map as a learner sees it in JupyterLab, in the light and the dark theme: every label sits
inside its block, nothing overflows the output area, and text stands out from its block."""
from __future__ import annotations

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
