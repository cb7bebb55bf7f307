"""Open every notebook in real JupyterLab (and one in Notebook 7), Run All, and use it as a learner."""
from __future__ import annotations

import json
import re
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import a11y
from conftest import ARTIFACTS
from course_utils.exercises import get_exercise
from course_utils.quizzes import get_quiz
from nbtools import exercise_cells, load, notebook_paths, source

NOTEBOOKS = notebook_paths()
QUIZ_CALL = re.compile(r"""cu\.quiz\(["']([^"']+)["']\)""")
RUN_ALL_TIMEOUT_S = 180
WIDGET_ERRORS = ("Error displaying widget", "model not found", "Failed to load model class")


def api(server, method, path, tries=5):
    """Call Jupyter's REST API. A GET is tried again after a server error: listing kernels while one
    is still shutting down (the previous test's) can answer 500 on a busy machine."""
    req = urllib.request.Request(server.url(path), method=method)
    for attempt in range(tries if method == "GET" else 1):
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                body = r.read()
            return json.loads(body) if body else None
        except urllib.error.HTTPError as e:
            if e.code < 500 or attempt == tries - 1 or method != "GET":
                raise
            time.sleep(1)


def shutdown_kernels(server):
    for kernel in api(server, "GET", "api/kernels"):
        api(server, "DELETE", f"api/kernels/{kernel['id']}")


def menu(page, top, item):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{top}$")).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).first.click()


def open_notebook(page, server, name, ui):
    # a fresh workspace per notebook: JupyterLab would otherwise restore the previous test's tabs
    workspace = f"lab/workspaces/{Path(name).stem}-{time.monotonic_ns()}"
    page.goto(server.url(f"{workspace}/tree/{name}" if ui == "lab" else f"notebooks/{name}"))
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=60_000)
    page.wait_for_function("() => { const s = document.querySelector('.jp-Notebook-ExecutionIndicator');"
                           " return !s || s.getAttribute('data-status') === 'idle'; }", timeout=60_000)
    wait_kernel_idle(server)


def wait_kernel_idle(server, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        kernels = api(server, "GET", "api/kernels")
        if kernels and all(k["execution_state"] == "idle" for k in kernels):
            return
        time.sleep(0.5)
    raise AssertionError("the kernel never became idle")


def run_all_and_save(page, server, path):
    """Run All, wait until no cell is queued or running, save, and return the saved notebook."""
    menu(page, "Run", "Run All Cells")
    # JupyterLab may send cells one at a time, so a moment with no running cell does not mean the
    # end: wait until no prompt shows "*" and the kernel has been idle for 2 s in a row.
    quiet, deadline = 0, time.time() + RUN_ALL_TIMEOUT_S
    while quiet < 4:
        assert time.time() < deadline, f"Run All did not finish in {RUN_ALL_TIMEOUT_S} s"
        page.wait_for_timeout(500)
        running = page.evaluate("() => [...document.querySelectorAll('.jp-InputPrompt')]"
                                ".some(p => p.textContent.includes('*'))")
        idle = all(k["execution_state"] == "idle" for k in api(server, "GET", "api/kernels"))
        quiet = quiet + 1 if idle and not running else 0
    before = path.stat().st_mtime_ns
    menu(page, "File", "Save Notebook")
    deadline = time.time() + 30
    while time.time() < deadline:   # the server writes the file in place: wait for a whole notebook
        if path.stat().st_mtime_ns != before:
            try:
                return load(path)
            except ValueError:       # caught mid-write (empty or partial JSON)
                pass
        time.sleep(0.2)
    raise AssertionError(f"{path.name} was not saved within 30 s")


def problems_in(nb, page_text):
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        tagged = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        if cell["execution_count"] is None:
            found.append(f"cell {i} never ran: {source(cell)[:60]!r}")
        for out in cell["outputs"]:
            if out["output_type"] == "error" and not tagged:
                found.append(f"cell {i} raised {out['ename']}: {out['evalue'][:200]}")
    found += [f"the page shows {e!r}" for e in WIDGET_ERRORS if e.lower() in page_text.lower()]
    return found


def keep_artifacts(path, nb):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / f"{path.stem}-outputs.ipynb"
    out.write_text(json.dumps(nb, indent=1))
    return out


def tab_to(page, box, name: str, limit: int = 60) -> None:
    """Press Tab until the focus is on the control in ``box`` whose accessible name starts with ``name``
    (a keyboard user's way there)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if box.evaluate("(el, name) => el.contains(document.activeElement) && ((document.activeElement."
                        "labels?.[0]?.textContent || document.activeElement.textContent || '').trim()"
                        ".startsWith(name))", name):
            return
    raise AssertionError(f"{limit} presses of Tab never reached {name!r}")


def start_at(page, box) -> None:
    """Put the keyboard focus on the cell that holds ``box``, as a learner arrives there with the arrow keys in
    command mode; every step after this one is a key press."""
    box.scroll_into_view_if_needed()
    box.evaluate("el => el.closest('.jp-Cell').focus()")


def answer_quiz(page, nth, quiz_id, right):
    """Choose an option and commit it with the keyboard alone, then read the outcome as a screen reader does."""
    q = get_quiz(quiz_id)
    box = page.locator(".course-quiz").nth(nth)
    start_at(page, box)
    assert box.locator(".course-explanation").count() == 0, "explanation visible before committing"
    choice = q.answer if right else (q.answer + 1) % len(q.options)
    tab_to(page, box, f"{'abcdefgh'[choice]})")
    page.keyboard.press("Space")
    assert box.locator("input[type=radio]").nth(choice).is_checked()
    assert box.locator(".course-explanation").count() == 0, "explanation visible before committing"
    tab_to(page, box, "Commit my prediction")
    page.keyboard.press("Enter")
    box.locator(".course-quiz-outcome").wait_for(timeout=10_000)
    heard = box.get_by_role("alert").aria_snapshot()  # an alert: read out as it appears
    assert ("Correct!" in heard) if right else ("Not quite" in heard), heard
    assert box.locator(".course-explanation").inner_text().strip()
    # the verdict renders its options' code as the labels do: no Markdown backticks on the page
    verdict = box.locator(".course-quiz-outcome").inner_text()
    assert "`" not in verdict, verdict
    if not right:   # "Not quite: you predicted “...”" quotes the option, its code rendered
        assert q.options[choice].replace("`", "")[:15] in verdict, verdict


def press_check(page, box):
    """Check with the keyboard; the result as the accessibility tree gives it, from an alert (which a screen
    reader reads out as it appears)."""
    count = box.locator(".course-check-count").inner_text()
    start_at(page, box)
    tab_to(page, box, "Check")
    page.keyboard.press("Enter")
    box.page.wait_for_function(
        "([el, old]) => el.querySelector('.course-check-count').textContent !== old",
        arg=[box.element_handle(), count], timeout=30_000)
    # the count counts presses of Check: running the cell was not one
    presses = (0 if "when this cell ran" in count else 1 if "button once" in count
               else int(count.split(" times")[0].split()[-1]))
    said = box.locator(".course-check-count").inner_text()
    now = "once" if presses == 0 else f"{presses + 1} times"
    assert said.startswith(f"Checked with the Check button {now}"), (count, said)
    return box.get_by_role("alert").first.aria_snapshot()  # the status line is the box's first alert


def hint_and_solution_by_keyboard(page, box, ex_id):
    """Hint, then Show solution, with the keyboard; both answers are read from the accessibility tree."""
    start_at(page, box)
    tab_to(page, box, "Hint")
    page.keyboard.press("Enter")
    box.locator(".course-hints").wait_for(timeout=10_000)
    assert get_exercise(ex_id).hints[0].split("`")[0].strip()[:20] in box.get_by_role("alert").last.aria_snapshot()
    start_at(page, box)
    tab_to(page, box, "Show solution")
    page.keyboard.press("Enter")
    box.locator(".course-solution").wait_for(timeout=10_000)
    assert "Reference solution" in box.get_by_role("alert").last.aria_snapshot()


def solve_in_browser(page, ex_id):
    """Type the reference solution into the answer cell, as a learner would, and run it."""
    ex = get_exercise(ex_id)
    cell = page.locator(".jp-CodeCell").filter(has_text=f"def {ex.name}(").filter(
        has_text="raise NotImplementedError").first
    if cell.count() == 0:
        cell = page.locator(".jp-CodeCell").filter(has_text=f"class {ex.name}(").first
    handle = cell.element_handle()  # pin the element: its text is about to change
    handle.scroll_into_view_if_needed()
    handle.query_selector(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(ex.solution_source)
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        "(el) => /\\[\\d+\\]/.test(el.querySelector('.jp-InputPrompt').textContent)",
        arg=handle, timeout=30_000)


def set_theme(page, dark: bool) -> None:
    """Settings > Theme > JupyterLab Dark (or Light), and wait until the page says it changed."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Settings$")).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Theme$")).first.hover()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^JupyterLab {'Dark' if dark else 'Light'}$")).first.click()
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{'false' if dark else 'true'}'",
                           timeout=30_000)


def audit_both_themes(page, path, ui):
    """axe-core on the course's content after Run All, in the light and the dark theme (results kept as artifacts;
    the interface around it is audited too, and recorded apart)."""
    found = []
    for dark in (False, True):
        if ui == "lab":
            set_theme(page, dark)
        elif dark:
            continue
        violations = a11y.audit(page)
        key = f"{ui}/{'dark' if dark else 'light'}/{path.stem}"
        a11y.record(ARTIFACTS / "a11y.json", key, violations)
        # the rest of the page is JupyterLab's (or Notebook 7's) own: recorded apart, not counted
        a11y.record(ARTIFACTS / "a11y-jupyter.json", key, a11y.audit(page, a11y.INTERFACE))
        found += [f"{'dark' if dark else 'light'}: {v}" for v in a11y.blocking(violations)]
    if ui == "lab":
        set_theme(page, False)
    return found


def audit_static_both_themes(page, nb, path):
    """axe-core on the lesson's static HTML as nbconvert writes it (the notebook just run and saved), light and dark;
    the template's own findings (tests/browser/a11y.py's control) are recorded apart and not counted."""
    found, other = [], page.context.new_page()
    try:
        for theme in ("light", "dark"):
            control = a11y.audit_static(other, a11y.control(), theme)
            ours, theirs = a11y.split_by_template(a11y.audit_static(other, nb, theme), control)
            a11y.record(ARTIFACTS / "a11y-static.json", f"{theme}/{path.stem}", ours)
            a11y.record(ARTIFACTS / "a11y-static-template.json", f"{theme}/{path.stem}", theirs)
            found += [f"static HTML, {theme}: {v}" for v in a11y.blocking(ours)]
    finally:
        other.close()
    return found


def learner_session(page, server, notebook_copy, path, ui):
    target = notebook_copy / path.name
    shutil.copy(path, target)  # start from the committed notebook every time
    original = load(path)
    open_notebook(page, server, path.name, ui)
    try:
        nb = run_all_and_save(page, server, target)
        found = problems_in(nb, page.locator("body").inner_text())
        if found:
            print(f"\nnotebook outputs kept at {keep_artifacts(path, nb)}")
        assert not found, "\n".join(found)
        barriers = audit_both_themes(page, path, ui) + (audit_static_both_themes(page, nb, path) if ui == "lab" else [])
        assert not barriers, "accessibility barriers in the course's content:\n" + "\n".join(barriers)

        quizzes = [m for c in original["cells"] if c["cell_type"] == "code" for m in QUIZ_CALL.findall(source(c))]
        answer_quiz(page, 0, quizzes[0], right=False)
        answer_quiz(page, 1, quizzes[1], right=True)

        ex_id = next(iter(exercise_cells(original)))
        box = page.locator(".course-exercise").first
        box.scroll_into_view_if_needed()
        assert "not attempted" in box.locator(".course-result").inner_text()
        assert "not attempted" in press_check(page, box)
        solve_in_browser(page, ex_id)
        after = press_check(page, box)
        assert "passed" in after, after
        hint_and_solution_by_keyboard(page, box, ex_id)
    finally:
        shutdown_kernels(server)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_jupyterlab_run_all_and_use(page, server, notebook_copy, path):
    learner_session(page, server, notebook_copy, path, ui="lab")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook7_run_all_and_use(page, server, notebook_copy, path):
    learner_session(page, server, notebook_copy, path, ui="notebook")


def test_the_harness_sees_an_untagged_error_stop_run_all(page, server, notebook_copy):
    """Negative control: an intentional error without the `raises-exception` tag stops Run All,
    and the checks above report both the error and the cells that never ran."""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": load(NOTEBOOKS[0])["metadata"], "cells": [
        {"cell_type": "code", "id": "a", "metadata": {"tags": ["raises-exception"]}, "execution_count": None,
         "outputs": [], "source": "1 / 0  # tagged: Run All goes on"},
        {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "import torch\ntorch.ones(2, device='meta') + torch.ones(2)  # untagged"},
        {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "print('never reached')"},
    ]}
    target = notebook_copy / "zz_negative_control.ipynb"
    target.write_text(json.dumps(nb))
    try:
        open_notebook(page, server, target.name, "lab")
        found = problems_in(run_all_and_save(page, server, target), page.locator("body").inner_text())
    finally:
        shutdown_kernels(server)
        target.unlink()
    assert any(p.startswith("cell 1 raised RuntimeError") for p in found), found
    assert any(p.startswith("cell 2 never ran") for p in found), found
    assert not any(p.startswith("cell 0") for p in found), found
