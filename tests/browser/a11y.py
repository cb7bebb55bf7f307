"""Accessibility audit of what the course puts on a page: axe-core (bundled by axe-playwright-python, no network)
run on the course's own content only: rendered Markdown and cell outputs (quizzes, exercises, device maps,
explanations, plots). JupyterLab's own interface is audited apart and reported, not counted.

A lesson's static HTML (nbconvert's ``lab`` template, as a teacher exports it) is audited too. The template's own
findings are told apart by a control: a tiny notebook with a sentence holding a link, a code block, a print and a
traceback, run in the same kernel. What the template (or IPython's traceback colours) gets wrong there, it gets wrong
in every notebook; a lesson's finding counts against the course unless the control shows the same rule on the same
kind of element (tag and inline style, in the same kind of output)."""
from __future__ import annotations

import functools
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

#: WCAG 2.0 to 2.2, levels A and AA (what the course promises), as axe-core tags them.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
#: The course's content on a JupyterLab page (nbconvert's HTML uses the same classes).
COURSE_CONTENT = [[".jp-RenderedMarkdown"], [".jp-OutputArea-output"]]
#: Everything else on the page: JupyterLab's or Notebook 7's own interface.
INTERFACE = {"include": [["body"]], "exclude": COURSE_CONTENT}
#: Impacts that count against the course.
BLOCKING = ("serious", "critical")


@dataclass(frozen=True)
class Violation:
    rule: str
    impact: str
    nodes: int
    example: str
    help: str
    elements: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.rule} ({self.impact}, {self.nodes} element(s), e.g. {self.example}): {self.help}"


def audit(page, context: object = None) -> list[Violation]:
    """Run axe-core on ``page`` (by default: the course's content) and return its WCAG A/AA violations."""
    from axe_playwright_python.sync_playwright import Axe

    context = {"include": COURSE_CONTENT} if context is None else context
    results = Axe().run(page, context=context, options={"runOnly": {"type": "tag", "values": WCAG_AA}})
    violations = results.response["violations"]
    targets = [n["target"][-1] if n["target"] and isinstance(n["target"][-1], str) else ""
               for v in violations for n in v["nodes"]]
    outputs = iter(page.evaluate(WHERE, targets))
    return [Violation(v["id"], v.get("impact") or "minor", len(v["nodes"]),
                      " ".join(map(str, v["nodes"][0]["target"])) if v["nodes"] else "", v["help"],
                      tuple(sorted({_element(n, next(outputs)) for n in v["nodes"]})))
            for v in violations]


#: For each selector, the MIME type of the output holding it (``text/markdown`` for a Markdown cell), or ``?``.
WHERE = """(targets) => targets.map(t => { const el = t && document.querySelector(t);
  const out = el && el.closest('[data-mime-type]'); return out ? out.dataset.mimeType : '?'; })"""


def _element(node: dict, output: str) -> str:
    """An axe result node's kind of element: the output it sits in and its tag, marked ``[style]`` when it has an
    inline style: ``text/markdown a``, ``application/vnd.jupyter.stderr span[style]``, ``text/html div[style]``."""
    start = re.match(r"<([\w-]+)([^>]*)>", node.get("html", "")) or re.match("(.*)()", "?")
    return f"{output} {start.group(1).lower()}{'[style]' if ' style=' in start.group(2) else ''}"


def blocking(violations: list[Violation]) -> list[Violation]:
    """The serious and critical ones."""
    return [v for v in violations if v.impact in BLOCKING]


def record(artifact: Path, key: str, violations: list[Violation]) -> None:
    """Add one audit's violations to a JSON file of test artifacts (a dict: key -> list)."""
    artifact.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(artifact.read_text()) if artifact.exists() else {}
    data[key] = [v.__dict__ for v in violations]
    artifact.write_text(json.dumps(data, indent=1))


#: The control for the static HTML: a sentence with a link, inline code and a code block; a code cell that prints
#: and one that raises through a function (IPython's coloured traceback). :func:`control` runs it in a kernel.
CONTROL_CELLS = [
    ("markdown", "A sentence with [a link](other.ipynb) and `code` in it, then a block:\n\n"
                 "```python\nx = 1  # a comment\n```"),
    ("code", "x = 1  # a comment\nprint(x)"),
    ("code", 'def shout(words):\n    """Say it."""\n    for word in words:\n'
             '        raise RuntimeError(f"{word}!")  # on purpose\n\nshout(["stop"])'),
]


@functools.cache
def control() -> dict:
    """The control notebook, run in a real kernel (so its outputs are what a lesson's look like)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src)
                for kind, src in CONTROL_CELLS]
    NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True).execute()
    return json.loads(nbformat.writes(nb))


#: What nbconvert writes as the alt text of an image that has none.
NBCONVERT_ALT = "No description has been provided for this image"


def static_html(nb: dict, theme: str) -> str:
    """``nb`` as nbconvert's ``lab`` template writes it (``theme``: ``light`` or ``dark``)."""
    import nbformat
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name="lab", theme=theme).from_notebook_node(
        nbformat.reads(json.dumps(nb), as_version=4))
    return body


def audit_static(page, nb: dict, theme: str) -> list[Violation]:
    """Audit the course's content in ``nb``'s static HTML (opened from disk, as an exported file is)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lesson.html"
        path.write_text(static_html(nb, theme), encoding="utf-8")
        page.goto(path.as_uri())
        found = audit(page)
    # nbconvert gives every image without alt text a placeholder alt, which axe accepts and a screen reader reads
    placeholders = page.locator(", ".join(f"{c[0]} img[alt='{NBCONVERT_ALT}']" for c in COURSE_CONTENT)).count()
    if placeholders:
        found.append(Violation("image-alt-placeholder", "critical", placeholders, "img",
                               f"Images need a description, not nbconvert's {NBCONVERT_ALT!r}", ("img",)))
    return found


def split_by_template(found: list[Violation], control: list[Violation]) -> tuple[list[Violation], list[Violation]]:
    """(the course's, the template's): a finding is the template's when the control shows the same rule on
    every kind of element it names (the same tag, in the same kind of output)."""
    template = {v.rule: set(v.elements) for v in control}
    theirs = [v for v in found if v.rule in template and set(v.elements) <= template[v.rule]]
    return [v for v in found if v not in theirs], theirs
