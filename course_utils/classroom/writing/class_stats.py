"""What a class got wrong, counted: the rows ``grade`` writes (one per submission and exercise) become a
:class:`ClassReport` (per lesson and exercise, how many students attempted and passed and how their scores spread;
the misconceptions they showed, ranked by how many students showed each; the students to follow up; what they
predicted). :mod:`course_utils.classroom.writing.class_report` reads the rows and writes the report,
:mod:`course_utils.classroom.writing.class_page` draws it as HTML."""
from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ... import misconceptions
from ..reading import layouts
from ..reading.submissions import file_lesson
from . import predictions as predicted
from ..grader import Row
from .resubmissions import LATEST, Chosen, choose, lesson_of_id

#: Codes that mean the exercise was not tried (the stub, or no answer at all).
NOT_TRIED = frozenset({misconceptions.NOT_ATTEMPTED, misconceptions.MISSING, misconceptions.NOT_A_NOTEBOOK})
#: Codes a teacher follows up on, with how the report names them.
FOLLOW_UP = {misconceptions.TAMPERING: "tampering", misconceptions.OUT_OF_TIME: "time limit",
             misconceptions.TIMEOUT: "time limit", misconceptions.CALL_STACK: "read the checker's stack",
             misconceptions.REFERENCE: "used the reference solution",
             misconceptions.NOT_A_NOTEBOOK: "handed in a file that is not a notebook"}
#: A lesson handed in by more than this share of the students is the batch's assignment: a student who handed in
#: another lesson instead is followed up (a wrong upload).
ASSIGNMENT_SHARE = 0.5
#: The share of a lesson's students from which a misconception is worth class time: the first page shows it.
MIN_SHARE = 0.10
#: At most this many misconceptions per lesson on the first page (:meth:`ClassReport.to_reteach`).
TOP_PER_LESSON = 3


@dataclass
class ExerciseStats:
    exercise: str
    lesson: str
    title: str
    students: int = 0
    attempted: int = 0
    passed: int = 0
    max_points: int = 0
    scores: dict[int, int] = field(default_factory=dict)    # points -> students
    codes: dict[str, int] = field(default_factory=dict)     # misconception -> students


@dataclass
class MisconceptionStats:
    code: str
    name: str
    lesson: str
    students: int
    of: int     # the students who handed in the lessons of its exercises
    exercises: list[str]
    explanation: str
    section: str
    link: str
    question: str
    generic: bool
    by_lesson: dict[str, tuple[int, int]] = field(default_factory=dict)   # lesson -> (students, of), its exercises'

    @property
    def share(self) -> float:
        """The share of the students who handed in its lessons that showed it."""
        return self.students / self.of if self.of else 0.0


@dataclass
class LessonStats:
    lesson: str
    students: int
    mean_percent: float
    all_passed: int
    zero: int
    scores: dict[int, int]      # points -> students
    max_points: int
    late: int = 0               # students whose counted submission was late


@dataclass
class FollowUp:
    student: str
    lesson: str            # the lessons with a reason, "03, 05"
    reasons: list[str]     # each "lesson 03: time limit"


@dataclass
class ClassReport:
    """Everything the report shows, as plain data (``--format json`` writes it as it is)."""

    students: int
    submissions: int
    rows: int
    layout: str     # how the submissions were read (layouts.read_layout)
    lessons: list[LessonStats]
    exercises: list[ExerciseStats]
    misconceptions: list[MisconceptionStats]
    follow_up: list[FollowUp]
    quizzes: list[predicted.QuizStats] = field(default_factory=list)   # what the class predicted (if given)
    anonymous: bool = False
    min_share: float = MIN_SHARE    # a misconception below this share of its lessons' students gets no card

    def to_reteach(self) -> dict[str, list[tuple[MisconceptionStats, int, int]]]:
        """Per lesson, its misconceptions (not the generic reasons) that at least :attr:`min_share` of the students
        who handed it in showed in its exercises, most shown first, at most :data:`TOP_PER_LESSON`: each with those
        two numbers (students, of)."""
        out: dict[str, list[tuple[MisconceptionStats, int, int]]] = {}
        for s in self.lessons:
            mine = [(m, *m.by_lesson[s.lesson]) for m in self.misconceptions
                    if not m.generic and s.lesson in m.by_lesson
                    and m.by_lesson[s.lesson][0] >= self.min_share * m.by_lesson[s.lesson][1]]
            out[s.lesson] = sorted(mine, key=lambda t: (-t[1], t[0].code))[:TOP_PER_LESSON]
        return out


def summarize(rows: Iterable[Row], anonymous: bool = False, min_share: float = MIN_SHARE,
              predictions: Optional[Iterable[predicted.Prediction]] = None, policy: str = LATEST) -> ClassReport:
    """Count ``rows`` (one per submission and exercise) into a :class:`ClassReport`, one submission per student and
    lesson as ``policy`` chooses (:mod:`.resubmissions`), and ``predictions`` (``None``: none given) per quiz."""
    rows = list(rows)
    chosen = choose(rows, policy)
    names = {s: (f"Student {i}" if anonymous else s)
             for i, s in enumerate(sorted({s.key for s in chosen.whose.values()}), start=1)}
    late = [lesson for (_, lesson), sub in chosen.counted.items() if chosen.rows[sub][0].late]
    return ClassReport(students=len(names), submissions=len(chosen.handed_in), rows=len(rows),
                       layout=layouts.read_layout(chosen.whose),
                       lessons=[dataclasses.replace(s, late=late.count(s.lesson)) for s in _lesson_stats(chosen.best)],
                       exercises=_exercise_stats(chosen.best), misconceptions=_misconception_stats(chosen.best),
                       follow_up=_follow_up(chosen, names),
                       quizzes=[] if predictions is None else predicted.quiz_stats(predictions, chosen.whose,
                                                                                   chosen.handed_in),
                       anonymous=anonymous, min_share=min_share)


def _exercise_stats(best: dict[tuple[str, str], Row]) -> list[ExerciseStats]:
    from ...exercises import registry
    known = registry()
    stats: dict[str, ExerciseStats] = {}
    for (_, ex_id), row in best.items():
        s = stats.get(ex_id)
        if s is None:
            title = known[ex_id].title if ex_id in known else ex_id
            s = stats[ex_id] = ExerciseStats(ex_id, lesson_of_id(ex_id), title)
        s.students += 1
        s.max_points = max(s.max_points, row.max_points)
        s.attempted += row.passed or (row.code.split() or [""])[0] not in NOT_TRIED
        s.passed += row.passed
        s.scores[row.points] = s.scores.get(row.points, 0) + 1
        for code in () if row.passed else row.code.split():
            s.codes[code] = s.codes.get(code, 0) + 1
    return [stats[k] for k in sorted(stats)]


def _lesson_stats(best: dict[tuple[str, str], Row]) -> list[LessonStats]:
    per_student: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for (student, ex_id), row in best.items():
        per_student[lesson_of_id(ex_id)][student].append(row)
    out = []
    for lesson in sorted(per_student):
        students = per_student[lesson]
        totals = [sum(r.points for r in rows) for rows in students.values()]
        most = max(sum(r.max_points for r in rows) for rows in students.values())
        percent = [100 * sum(r.points for r in rows) / max(sum(r.max_points for r in rows), 1)
                   for rows in students.values()]
        out.append(LessonStats(lesson, len(students), round(sum(percent) / len(percent), 1),
                               sum(all(r.passed for r in rows) for rows in students.values()),
                               sum(t == 0 for t in totals), dict(sorted(Counter(totals).items())), most))
    return out


def _misconception_stats(best: dict[tuple[str, str], Row]) -> list[MisconceptionStats]:
    who: dict[str, set[str]] = defaultdict(set)
    where: dict[str, set[str]] = defaultdict(set)
    in_lesson: dict[tuple[str, str], set[str]] = defaultdict(set)   # (code, lesson) -> students
    for (student, ex_id), row in best.items():
        for code in () if row.passed else row.code.split():   # every mistake it names (each capstone bug left)
            who[code].add(student)
            where[code].add(ex_id)
            in_lesson[code, lesson_of_id(ex_id)].add(student)
    handed_in: dict[str, set[str]] = defaultdict(set)   # lesson -> the students who handed it in
    for student, ex_id in best:
        handed_in[lesson_of_id(ex_id)].add(student)
    out = []
    for code, students in who.items():
        m = misconceptions.get(code)
        section = f"Lesson {m.section[0][:2]}, {m.section[1]}" if m.section else ""
        of = set().union(*(handed_in[lesson_of_id(e)] for e in where[code]))
        by_lesson = {lesson: (len(in_lesson[code, lesson]), len(handed_in[lesson]))
                     for lesson in sorted({lesson_of_id(e) for e in where[code]})}
        out.append(MisconceptionStats(code, m.name, m.lesson, len(students), len(of), sorted(where[code]),
                                      m.explanation, section, m.link(), m.question, m.generic, by_lesson))
    return sorted(out, key=lambda m: (-m.students, m.code))


def _follow_up(chosen: Chosen, names: dict[str, str]) -> list[FollowUp]:
    """Each student to follow up, once, with every reason, each named with its lesson: no points in a whole lesson,
    a reason of :data:`FOLLOW_UP`, a late or a wrong-lesson upload, answers identical to another student's, and
    every file handed in that did not count."""
    by: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for (student, ex_id), row in chosen.best.items():
        by[student][lesson_of_id(ex_id)].append(row)
    extra = _upload_reasons(chosen, names)
    out = []
    for student in sorted(set(by) | set(extra)):
        lessons, reasons = [], []
        for lesson in sorted(set(by[student]) | set(extra.get(student, {}))):
            rows = by[student][lesson]
            why = sorted({FOLLOW_UP[c] for r in rows for c in r.code.split() if c in FOLLOW_UP})
            if sum(r.max_points for r in rows) and not sum(r.points for r in rows):
                why.insert(0, "no points in the whole lesson")
            why += extra.get(student, {}).get(lesson, [])
            if why:
                lessons.append(lesson)
                reasons += [f"lesson {lesson}: {w}" if lesson != "?" else w for w in why]
        if reasons:
            out.append(FollowUp(names[student], ", ".join(lessons), reasons))
    return out


def _upload_reasons(chosen: Chosen, names: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Student -> lesson -> what the teacher should know of their uploads (``"?"``: files of no lesson)."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    students = Counter(lesson for _, lesson in chosen.counted)
    assignment, most = students.most_common(1)[0] if students else ("", 0)
    is_assignment = most > ASSIGNMENT_SHARE * len({s for s, _ in chosen.counted} | set(chosen.unplaced))
    copies: dict[tuple[str, str], set[str]] = defaultdict(set)   # (lesson, answers) -> students
    for (student, lesson), sub in chosen.counted.items():
        first = chosen.rows[sub][0]
        if first.answers:
            copies[lesson, first.answers].add(student)
        if first.late:
            out[student][lesson].append("handed in late")
        named = file_lesson(sub)
        if named and named != lesson:
            out[student][lesson].append(f"the file is named for lesson {named} but holds lesson {lesson}'s answers")
        if is_assignment and lesson != assignment and (student, assignment) not in chosen.counted:
            out[student][lesson].append(f"handed in lesson {lesson} where {most} students handed in lesson "
                                        f"{assignment}: a wrong upload?")
    for (student, lesson), subs in chosen.others.items():
        kept = chosen.counted[student, lesson]
        out[student][lesson].append(f"{len(subs) + 1} files handed in; {layouts.file_name(kept)} counted, "
                                    f"not {', '.join(layouts.file_name(s) for s in subs)}")
    for student, rows in chosen.unplaced.items():
        out[student]["?"] += [f"{layouts.file_name(r.submission)}: {r.feedback}" for r in rows]
    for (lesson, answers), group in copies.items():
        for student in group if len(group) > 1 else ():
            same = ", ".join(sorted(names[other] for other in group - {student}))
            out[student][lesson].append(f"the same answers as {same} ({answers.split(':')[0]} answer cells)")
    return out


__all__ = ["ClassReport", "ExerciseStats", "MisconceptionStats", "LessonStats", "FollowUp", "summarize",
           "lesson_of_id", "NOT_TRIED", "FOLLOW_UP", "MIN_SHARE", "TOP_PER_LESSON"]
