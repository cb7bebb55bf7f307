"""The class report as a teacher opens it from disk in a browser: it renders, nothing overflows (even 320 px wide),
and axe finds no serious or critical WCAG 2.2 AA violation, in the light and the dark colour scheme."""
from __future__ import annotations

import pytest

import a11y
from classroom.generated_class import generate
from conftest import ARTIFACTS
from course_utils.classroom.writing import class_report, predictions
from course_utils.quizzes import get_quiz, quiz_ids

pytestmark = pytest.mark.browser

OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_report_reads_well_and_passes_the_audit(page, tmp_path, scheme):
    klass = generate(40)
    (tmp_path / "grades.csv").write_text(klass.csv(), encoding="utf-8")
    rows = class_report.read_rows([str(tmp_path / "grades.csv")])
    lessons = {r.submission: r.exercise[:2] for r in rows}
    guessed = [predictions.Prediction(sub, q, "abcd"[(n + len(sub)) % len(get_quiz(q).options)], 1)
               for n, (sub, lesson) in enumerate(sorted(lessons.items())) for q in quiz_ids() if q[:2] == lesson]
    report = class_report.summarize(rows, predictions=guessed)
    out = tmp_path / "report.html"
    class_report.write(report, str(out), "html")
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size({"width": 1100, "height": 900})
    page.goto(out.as_uri())
    assert page.locator("h1").inner_text() == "What did the class get wrong?"
    top = report.misconceptions[0] if not report.misconceptions[0].generic else \
        next(m for m in report.misconceptions if not m.generic)
    assert top.name.replace("`", "") in page.locator(".card h3").first.inner_text()
    assert page.locator("#predictions + p + table tbody tr").count() == len(report.quizzes) > 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"class-report-{scheme}.png"))
    violations = a11y.audit(page, {"include": [["body"]]})
    a11y.record(ARTIFACTS / "a11y-report.json", scheme, violations)
    assert a11y.blocking(violations) == [], "\n".join(map(str, violations))
    assert page.evaluate(OVERFLOW) <= 0
    page.set_viewport_size({"width": 320, "height": 800})   # WCAG 1.4.10: reflow at 320 CSS pixels
    assert page.evaluate(OVERFLOW) <= 0
