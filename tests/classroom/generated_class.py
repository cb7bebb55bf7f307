"""A generated class for the class report's tests and benchmark: N students, every lesson, and mistakes that
follow a known distribution, written as the grader writes its CSV.

For each exercise, the first share of students (in a fixed order) passes, then each of the exercise's
misconceptions takes its own block of students, then a block has not attempted it. Students are numbered, so the
counts the report must find are known exactly (:attr:`GeneratedClass.expected`). The blocks are 1 to 3 students
each, or, ``skewed``, as a real class's are: an exercise's first mistake a quarter of the class, its second a
tenth, the others one student each.
"""
from __future__ import annotations

import ast
import inspect
import io
from collections import defaultdict
from dataclasses import dataclass, field

from course_utils import misconceptions
from course_utils.classroom.grader import TOTAL, Row, SubmissionGrade
from course_utils.classroom.writing.reports import write_csv
from course_utils.exercises import exercise_ids, get_exercise


def exercise_codes() -> dict[str, list[str]]:
    """Each exercise's own lesson codes: the code constants its grader names, itself or through the lesson module's
    helpers it calls (read from the module's source), so that a generated mistake lands where it can happen."""
    codes = set(lesson_codes_flat())
    out: dict[str, list[str]] = {}
    for ex_id in exercise_ids():
        grade = get_exercise(ex_id).grade
        module = inspect.getmodule(grade)
        functions = {n.name: n for n in ast.walk(ast.parse(inspect.getsource(module)))
                     if isinstance(n, ast.FunctionDef)}
        seen, todo, found = set(), [grade.__name__], set()
        while todo:
            name = todo.pop()
            if name in seen or name not in functions:
                continue
            seen.add(name)
            for node in ast.walk(functions[name]):
                if isinstance(node, ast.Name):
                    value = getattr(module, node.id, None)
                    if isinstance(value, str) and value in codes:
                        found.add(value)
                    elif node.id in functions:
                        todo.append(node.id)
        out[ex_id] = sorted(found)
    return out


def lesson_codes_flat() -> list[str]:
    return [c for codes in lesson_codes().values() for c in codes]


def lesson_codes() -> dict[str, list[str]]:
    """Each lesson's own misconception codes, in code order."""
    out: dict[str, list[str]] = defaultdict(list)
    for code, m in sorted(misconceptions.registry().items()):
        if not m.generic:
            out[m.lesson].append(code)
    return out


@dataclass
class GeneratedClass:
    students: int
    grades: list[SubmissionGrade] = field(default_factory=list)
    #: code -> students showing it; exercise -> (attempted, passed); lesson -> students who passed it all
    expected_codes: dict[str, int] = field(default_factory=dict)
    expected_exercises: dict[str, tuple[int, int]] = field(default_factory=dict)
    expected_all_passed: dict[str, int] = field(default_factory=dict)

    def csv(self) -> str:
        out = io.StringIO()
        write_csv(self.grades, out)
        return out.getvalue()


def _blocks(students: int, mistakes: int, share: int, skewed: bool) -> list[int]:
    """How many students show each of an exercise's mistakes (then, last, how many did not attempt it)."""
    if not skewed:
        return [share] * (mistakes + 1)
    sizes = ([students // 4, students // 10] + [1] * mistakes)[:mistakes] + [1]
    assert sum(sizes) <= students * 3 // 4, f"too small a class for {mistakes} skewed mistakes"
    return [max(1, n) for n in sizes]


def generate(students: int = 40, skewed: bool = False) -> GeneratedClass:
    """A class of ``students`` (``s0001``...): each exercise's outcome by the student's number (see the module)."""
    gen = GeneratedClass(students)
    codes = exercise_codes()
    ids = exercise_ids()
    by_lesson: dict[str, list[str]] = defaultdict(list)
    for ex_id in ids:
        by_lesson[ex_id[:2]].append(ex_id)
    shown: dict[str, set[int]] = defaultdict(set)
    failed_somewhere: dict[str, set[int]] = defaultdict(set)
    outcomes: dict[tuple[int, str], tuple[bool, str]] = {}
    for lesson, exs in by_lesson.items():
        for ex_id in exs:
            mine = codes.get(ex_id) or [misconceptions.WRONG_VALUE]   # the mistakes this exercise's check names
            share = 1 + (int(ex_id.replace(".", "").encode().hex(), 16) % 3)   # 1..3 students per mistake,
            share = max(1, min(share, students * 3 // 4 // (len(mine) + 1)))   # a quarter or more passing
            assert students >= len(mine) + 1, f"too small a class for {ex_id}'s {len(mine)} mistakes"
            sizes = _blocks(students, len(mine), share, skewed)
            passed = students - sum(sizes)
            attempted = passed
            starts = [passed + sum(sizes[:i]) for i in range(len(sizes))]
            for n in range(students):
                block = max(i for i, start in enumerate(starts) if start <= n) if n >= passed else -1
                if n < passed:
                    outcomes[n, ex_id] = (True, "")
                elif block < len(mine):
                    outcomes[n, ex_id] = (False, mine[block])
                    shown[mine[block]].add(n)
                    attempted += 1
                else:
                    outcomes[n, ex_id] = (False, misconceptions.NOT_ATTEMPTED)
                    shown[misconceptions.NOT_ATTEMPTED].add(n)
                if not outcomes[n, ex_id][0]:
                    failed_somewhere[lesson].add(n)
            gen.expected_exercises[ex_id] = (attempted, passed)
        gen.expected_all_passed[lesson] = students - len(failed_somewhere[lesson])
    gen.expected_codes = {code: len(who) for code, who in shown.items()}
    for n in range(students):
        for lesson, exs in by_lesson.items():
            submission = f"s{n + 1:04d}/{lesson}_lesson.ipynb"
            rows = []
            for ex_id in exs:
                ok, code = outcomes[n, ex_id]
                points = get_exercise(ex_id).points
                rows.append(Row(submission, ex_id, points if ok else 0, points, ok,
                                "Right." if ok else f"Feedback for {code}.", code))
            gen.grades.append(SubmissionGrade(submission, rows))
    return gen


__all__ = ["generate", "GeneratedClass", "lesson_codes", "exercise_codes", "TOTAL"]
