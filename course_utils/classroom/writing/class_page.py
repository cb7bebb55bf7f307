"""The class report as one self-contained, accessible HTML page (no script, no network: it opens from disk and in a
JupyterLab tab): what to re-teach first, where the class stands, the misconceptions, the predictions, whom to follow
up and each exercise. It draws a :class:`~course_utils.classroom.writing.class_stats.ClassReport`."""
from __future__ import annotations

import html

from ... import misconceptions
from ...text import code_html
from . import predictions as predicted
from .class_stats import TOP_PER_LESSON, ClassReport

_CSS = """
:root { color-scheme: light dark; --fg: #1b1b1b; --fg2: #4a4a4a; --bg: #ffffff; --card: #f4f4f4; --line: #767676;
        --bar: #0072B2; --bar2: #D55E00; --link: #0b5cad; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #ededed; --fg2: #c4c4c4; --bg: #121212; --card: #1f1f1f; --line: #9a9a9a; --bar: #56B4E9;
          --bar2: #E69F00; --link: #8cc4ff; } }
body { font: 15px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0 auto;
       max-width: 62rem; padding: 1rem; overflow-wrap: anywhere; }
a { color: var(--link); text-decoration: underline; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; width: 100%; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.n { white-space: nowrap; }
.muted { color: var(--fg2); }
.card { background: var(--card); border-left: 4px solid var(--line); padding: .5rem .8rem; margin: .6rem 0; }
svg text { fill: var(--fg); font-size: 12px; }
svg .bar { fill: var(--bar); } svg .bar2 { fill: var(--bar2); } svg .axis { stroke: var(--line); }
code { font-size: 90%; }
.row { display: flex; flex-wrap: wrap; gap: 0 1.5rem; } .row figure { margin: 0 0 1rem; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "–"


def _bars(title: str, items: list[tuple[str, int, int]], total_label: str) -> str:
    """A horizontal bar chart (inline SVG) of ``(label, value, whole)``: a bar per item, its number written
    beside it; the figure's text alternative states every number."""
    height, width, left = 22 * len(items) + 10, 560, 170
    rows = []
    for i, (label, value, whole) in enumerate(items):
        y, w = 5 + 22 * i, (width - left - 90) * value / whole if whole else 0
        rows.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">{_e(label)}</text>'
                    f'<rect class="bar" x="{left}" y="{y + 3}" width="{w:.1f}" height="14"/>'
                    f'<text x="{left + w + 6:.1f}" y="{y + 14}">{value} of {whole} ({_percent(value, whole)})</text>')
    alt = f"{title}: " + "; ".join(f"{label}, {value} of {whole} {total_label}" for label, value, whole in items)
    return (f'<svg role="img" aria-label="{_e(alt)}" viewBox="0 0 {width} {height}" width="100%" '
            f'style="max-width:{width}px"><line class="axis" x1="{left}" y1="0" x2="{left}" y2="{height}"/>'
            f'{"".join(rows)}</svg>')


def _table(caption: str, columns: tuple[str, ...], rows: str) -> str:
    """A table of ``rows`` under its ``caption``, a header cell per column (a name starting with ``#`` is a number
    column, right-aligned, shown without the ``#``)."""
    head = "".join(f"<th scope='col' class='n'>{c[1:]}</th>" if c.startswith("#") else f"<th scope='col'>{c}</th>"
                   for c in columns)
    return f"<table><caption>{caption}</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _distribution(counts: dict[int, int], most: int, what: str) -> str:
    """Students per score (0..most), as columns with their numbers written above."""
    scores = list(range(most + 1)) if most <= 20 else sorted(counts)
    peak = max(counts.values(), default=1)
    width, colw = max(40 * len(scores), 120), 40
    cols = []
    for i, s in enumerate(scores):
        n = counts.get(s, 0)
        h = 60 * n / peak
        cols.append(f'<rect class="bar2" x="{i * colw + 8}" y="{80 - h:.1f}" width="{colw - 16}" height="{h:.1f}"/>'
                    f'<text x="{i * colw + colw / 2}" y="{76 - h:.1f}" text-anchor="middle">{n}</text>'
                    f'<text x="{i * colw + colw / 2}" y="96" text-anchor="middle">{s}</text>')
    alt = f"Students by {what}: " + ", ".join(f"{counts.get(s, 0)} with {s}" for s in scores)
    return (f'<svg role="img" aria-label="{_e(alt)}" viewBox="0 -4 {width} 104" width="{width}" '
            f'style="max-width:100%">{"".join(cols)}</svg>')


def render_html(report: ClassReport) -> str:
    """The report as one self-contained, accessible HTML page (no script)."""
    parts = [f"<h1>What did the class get wrong?</h1><p class='muted'>{report.students} students, {report.submissions} "
             f"submissions, {report.rows} graded exercises. Read as {_e(report.layout)}."
             f"{' Names hidden (--anonymous).' if report.anonymous else ''}</p>"]
    parts += [section(report) for section in (_plan_section, _course_section, _misconception_section,
                                              _prediction_section, _follow_up_section, _exercise_section)]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            "content='width=device-width, initial-scale=1'><title>Class report: what did the class get wrong?</title>"
            f"<style>{_CSS}</style></head><body><main>{''.join(parts)}</main></body></html>")


def _plan_section(report: ClassReport) -> str:
    """The first page, for planning the next class: per lesson, what to re-teach (the misconceptions above the
    cut-off, each with its share, where it is taught and a question to ask), and how many to follow up."""
    items, reteach = [], report.to_reteach()
    for s in report.lessons:
        top = reteach[s.lesson]
        said = "".join(f"<li>{code_html(m.name)}: <b>{n}</b> of {of} ({_percent(n, of)}). Ask: {code_html(m.question)}"
                       + (f" <a href='{_e(m.link)}'>Taught in {code_html(m.section)}</a>" if m.link else "")
                       + "</li>" for m, n, of in top)
        nothing = f"<li>No misconception shown by {report.min_share:.0%} of the class or more.</li>"
        items.append(f"<h3>Lesson {_e(s.lesson)}</h3><p>{s.students} students handed it in; mean score "
                     f"{s.mean_percent:.0f}%, {s.all_passed} passed every exercise, {s.zero} scored zero"
                     f"{f', {s.late} handed it in late' if s.late else ''}.</p>"
                     f"<ul>{said or nothing}</ul>{_mispredicted(report, s.lesson)}")
    follow = (f"<p>{len(report.follow_up)} student{'s' if len(report.follow_up) != 1 else ''} to follow up "
              "(<a href='#follow-up'>the list</a>).</p>") if report.follow_up else ""
    return (f"<h2>To plan the next class</h2><p class='muted'>Per lesson, the misconceptions shown by at least "
            f"{report.min_share:.0%} of the students who handed it in (at most {TOP_PER_LESSON}, most shown first); "
            f"the details follow below.</p>{''.join(items)}{follow}")


def _mispredicted(report: ClassReport, lesson: str) -> str:
    """For the plan: the lesson's quizzes the fewest predicted right first time (none without predictions)."""
    worst = predicted.most_mispredicted(report.quizzes, lesson)
    if not worst:
        return ""
    items = "".join(f"<li><code>{_e(q.quiz)}</code>: {q.predicted - q.right_first} of {q.predicted} predicted it "
                    f"wrong first ({_percent(q.predicted - q.right_first, q.predicted)}), most often "
                    f"“{code_html(q.wrong[0][0])}”. The answer: “{code_html(q.answer)}”.</li>" for q in worst)
    return f"<p>Predicted wrong most often (<a href='#predictions'>every quiz</a>):</p><ul>{items}</ul>"


def _prediction_section(report: ClassReport) -> str:
    """Per quiz: how many recorded a prediction, how many were right first time, and the wrong options chosen."""
    if not report.quizzes:
        return ""
    rows = "".join(
        f"<tr><th scope='row'><code>{_e(q.quiz)}</code> {code_html(q.question)}</th>"
        f"<td class='n'>{q.predicted} of {q.students}</td>"
        f"<td class='n'>{f'{q.right_first} ({_percent(q.right_first, q.predicted)})' if q.predicted else '-'}</td>"
        f"<td>{code_html('; '.join(f'{option}: {n}' for option, n in q.wrong)) or '-'}</td></tr>"
        for q in report.quizzes)
    table = _table("Quizzes: predictions recorded, right first time, wrong options chosen",
                   ("Quiz", "#Predicted", "#Right first time", "Wrong first predictions"), rows)
    return ("<h2 id='predictions'>What the class predicted</h2><p class='muted'>Each student's first prediction on "
            "each quiz, from the record their notebook's <code>cu.progress()</code> cell saved (a notebook saved "
            "before that cell ran has none). Predictions are what students wrote before they knew: a signal for "
            f"planning, never a grade.</p>{table}")


def _course_section(report: ClassReport) -> str:
    rows = "".join(f"<tr><th scope='row'>Lesson {_e(s.lesson)}</th><td class='n'>{s.students}</td>"
                   f"<td class='n'>{s.mean_percent:.0f}%</td><td class='n'>{s.all_passed}</td>"
                   f"<td class='n'>{s.zero}</td><td class='n'>{s.late}</td></tr>" for s in report.lessons)
    table = _table("Each lesson", ("Lesson", "#Students", "#Mean score", "#Passed all", "#Scored zero", "#Late"), rows)
    chart = _bars("Students who passed every exercise of a lesson",
                  [(f"Lesson {s.lesson}", s.all_passed, s.students) for s in report.lessons], "students")
    figures = "".join(f"<figure>{_distribution(s.scores, s.max_points, 'points')}<figcaption>Lesson {_e(s.lesson)}: "
                      "students by points</figcaption></figure>" for s in report.lessons)
    return (f"<h2>Where the class stands</h2><figure>{chart}<figcaption>Students who passed every exercise of each "
            f"lesson, of those who handed it in.</figcaption></figure>{table}<div class='row'>{figures}</div>")


def _misconception_section(report: ClassReport) -> str:
    specific = [m for m in report.misconceptions if not m.generic and m.share >= report.min_share]
    rare = [m for m in report.misconceptions if not m.generic and m.share < report.min_share]
    generic = [m for m in report.misconceptions if m.generic]
    cards = []
    for rank, m in enumerate(specific, start=1):
        section = (f"<a href='{_e(m.link)}'>{code_html(m.section)}</a>" if m.link else code_html(m.section))
        lessons = sorted(m.by_lesson)   # "lesson 03" or "lessons 03 and 06"
        named = f"lesson {lessons[0]}" if len(lessons) == 1 else f"lessons {', '.join(lessons[:-1])} and {lessons[-1]}"
        cards.append(f"<div class='card'><h3>{rank}. {code_html(m.name)}</h3><p><b>{m.students}</b> of the {m.of} "
                     f"students who handed in {_e(named)} ({_percent(m.students, m.of)}), in "
                     f"{_e(', '.join(m.exercises))} · code <code>{_e(m.code)}</code></p>"
                     f"<p>{code_html(m.explanation)}</p><p>Taught in: {section}</p>"
                     f"<p>Ask the class: {code_html(m.question)}</p></div>")
    none = "<p>No misconception the checks name was shown that often.</p>" if not specific else ""

    def rows(found: list, of: bool) -> str:
        return "".join(f"<tr><th scope='row'>{code_html(m.name)} <code>{_e(m.code)}</code></th><td class='n'>"
                       f"{m.students}{f' of {m.of}' if of else ''}</td><td>{_e(', '.join(m.exercises))}</td></tr>"
                       for m in found)

    other_table = _table("Other reasons answers failed (no particular misconception)",
                         ("Reason", "#Students", "Exercises"), rows(generic, of=False)) if generic else ""
    few_table = _table(f"Shown by fewer than {report.min_share:.0%} of the students who handed the lesson in",
                       ("Misconception", "#Students", "Exercises"), rows(rare, of=True)) if rare else ""
    return ("<h2>Misconceptions to re-teach</h2><p class='muted'>Ranked by how many students showed each (a "
            f"student counts once per misconception); a card for each shown by {report.min_share:.0%} of the "
            f"students or more.</p>{none}{''.join(cards)}{few_table}{other_table}")


def _exercise_section(report: ClassReport) -> str:
    out = [f"<h2>Each exercise</h2><details><summary>The {len(report.exercises)} exercises: attempts, passes, "
           "points and the mistakes behind the failures</summary>"]
    for s in report.exercises:
        codes = ", ".join(f"{misconceptions.get(c).name} ({n})" for c, n in
                          sorted(s.codes.items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(f"<h3>{_e(s.exercise)} · {code_html(s.title)}</h3><p>{s.attempted} of {s.students} attempted, "
                   f"{s.passed} passed ({_percent(s.passed, s.students)}).</p>"
                   f"<figure>{_distribution(s.scores, s.max_points, 'points')}<figcaption>Students by points "
                   f"(0 to {s.max_points}).</figcaption></figure>"
                   + (f"<p>Failed answers: {code_html(codes)}.</p>" if codes else ""))
    return "".join(out) + "</details>"


def _follow_up_section(report: ClassReport) -> str:
    if not report.follow_up:
        return ("<h2 id='follow-up'>To follow up</h2><p>Nobody scored zero on a whole lesson or hit tampering or a "
                "time limit.</p>")
    rows = "".join(f"<tr><th scope='row'>{_e(f.student)}</th><td>{_e(f.lesson)}</td>"
                   f"<td>{_e('; '.join(f.reasons))}</td></tr>" for f in report.follow_up)
    return ("<h2 id='follow-up'>To follow up</h2><p class='muted'>To offer help, not to blame: a zero is often a "
            "file handed in unsaved, a time limit a loop that never ends. Each student once, with every reason.</p>"
            + _table("Students to follow up", ("Student", "Lessons", "Why"), rows))


__all__ = ["render_html"]
