"""Accessibility audit of what the course puts on a page: axe-core (bundled by axe-playwright-python, no network)
run on the course's own content only: rendered Markdown and cell outputs (quizzes, exercises, device maps,
explanations, plots). JupyterLab's own interface is audited apart and reported, not counted."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

#: WCAG 2.0 to 2.2, levels A and AA (what the course promises), as axe-core tags them.
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
#: The course's content on a JupyterLab page (nbconvert's HTML uses the same classes).
COURSE_CONTENT = [[".jp-RenderedMarkdown"], [".jp-OutputArea-output"]]
#: Impacts that count against the course.
BLOCKING = ("serious", "critical")


@dataclass(frozen=True)
class Violation:
    rule: str
    impact: str
    nodes: int
    example: str
    help: str

    def __str__(self) -> str:
        return f"{self.rule} ({self.impact}, {self.nodes} element(s), e.g. {self.example}): {self.help}"


def audit(page, context: object = None) -> list[Violation]:
    """Run axe-core on ``page`` (by default: the course's content) and return its WCAG A/AA violations."""
    from axe_playwright_python.sync_playwright import Axe

    context = {"include": COURSE_CONTENT} if context is None else context
    results = Axe().run(page, context=context, options={"runOnly": {"type": "tag", "values": WCAG_AA}})
    return [Violation(v["id"], v.get("impact") or "minor", len(v["nodes"]),
                      " ".join(map(str, v["nodes"][0]["target"])) if v["nodes"] else "", v["help"])
            for v in results.response["violations"]]


def blocking(violations: list[Violation]) -> list[Violation]:
    """The serious and critical ones."""
    return [v for v in violations if v.impact in BLOCKING]


def record(artifact: Path, key: str, violations: list[Violation]) -> None:
    """Add one audit's violations to a JSON file of test artifacts (a dict: key -> list)."""
    artifact.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(artifact.read_text()) if artifact.exists() else {}
    data[key] = [v.__dict__ for v in violations]
    artifact.write_text(json.dumps(data, indent=1))
