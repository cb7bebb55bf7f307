"""course_utils.text: the shared pieces of text and HTML."""
from __future__ import annotations

from course_utils import text


def test_shorten_keeps_short_text_and_marks_a_cut():
    assert text.shorten("abc", 3) == "abc"
    assert text.shorten("abcdef", 4) == "abc…" and len(text.shorten("x" * 500, 300)) == 300


def test_code_html_escapes_and_shows_backticks_as_code():
    assert text.code_html("use `a<b`\nnow") == "use <code>a&lt;b</code><br>now"


def test_card_has_the_coloured_edge_and_class():
    html = text.card("<b>hi</b>", "#2e9d4f", "course-result course-passed")
    assert html.startswith("<div class='course-result course-passed' style='border-left:6px solid #2e9d4f;")
    assert html.endswith("<b>hi</b></div>")
