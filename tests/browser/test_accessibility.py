"""The accessibility audit can fail: negative controls for tests/browser/a11y.py in real JupyterLab."""
from __future__ import annotations

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
