"""The accessibility audit can fail: negative controls for tests/browser/a11y.py in real JupyterLab."""
from __future__ import annotations

import copy

import a11y
from test_learner_view import open_notebook, shutdown_kernels
from nbtools import notebook_paths


def test_the_audit_sees_a_barrier_in_the_course_content(page, server, notebook_copy):
    """An image without a text alternative and a button without a name, put into a rendered Markdown cell,
    are reported; the same barriers in JupyterLab's own toolbar are not the course's."""
    first = notebook_paths()[0]
    open_notebook(page, server, first.name, "lab")
    try:
        assert a11y.blocking(a11y.audit(page)) == [], "the unexecuted lesson already has a barrier"
        page.evaluate("""() => {
            const md = document.querySelector('.jp-RenderedMarkdown');
            md.insertAdjacentHTML('beforeend', '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">'
                                  + '<button></button>');
        }""")
        rules = {v.rule for v in a11y.blocking(a11y.audit(page))}
        assert {"image-alt", "button-name"} <= rules, rules
    finally:
        shutdown_kernels(server)


def test_the_static_audit_tells_the_courses_barriers_from_the_templates(page):
    """In nbconvert's HTML, a lesson's own barriers count (an image without alt text, which nbconvert covers with
    a placeholder that axe accepts; a nameless button; grey-on-grey text in an output), while the template's (a Markdown link styled by colour alone, as the control shows) are listed
    apart; and the control itself has findings, so the split is not empty by construction."""
    nb = copy.deepcopy(a11y.control())
    nb["cells"][0]["source"] += '\n\n<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><button></button>'
    nb["cells"][1]["outputs"] += [{"output_type": "display_data", "metadata": {}, "data": {
        "text/html": '<span style="color:#bbb;background:#ccc">faint words</span>', "text/plain": "faint words"}}]
    for theme in ("light", "dark"):
        control = a11y.audit_static(page, a11y.control(), theme)
        assert {v.rule for v in a11y.blocking(control)} >= {"link-in-text-block"}, (theme, control)
        ours, theirs = a11y.split_by_template(a11y.audit_static(page, nb, theme), control)
        assert {v.rule for v in a11y.blocking(ours)} >= {"image-alt-placeholder", "button-name",
                                                           "color-contrast"}, (theme, ours)
        assert "link-in-text-block" in {v.rule for v in theirs}, (theme, theirs)
