"""``python -m course_utils report GRADES --format gradebook``: each student's points per lesson, as Canvas and Moodle
import them. The submission that counts per student and lesson is :mod:`.resubmissions`' choice.

* **Canvas** (*Grades → Import*) matches a row by ``ID`` (its user id, which the bulk download's file names carry)
  and a column by the assignment id in its header, ``Name (id)``; a column without an id becomes a new assignment,
  so there is no ``Total``. ``--roster`` with Canvas's own gradebook export gives every student of the course, the
  assignments' columns (matched to lessons by ``--assignment NN=ID`` or by a name that names the lesson) and their
  points possible (points are scaled to them); without it, ``--assignment NN=ID`` names each lesson's column.
* **Moodle** matches users by email address, username or ID number, which its download does not hold: ``--roster``
  is the course's participants export (*Participants → Download table data as CSV*), matched by full name, or the
  assignment's offline grading worksheet, filled in as its upload reads it (``Identifier``, ``Grade``, points
  scaled to its maximum grade).
* Any other layout gets the same columns as Canvas's, the student's name as the folders give it.

A student with nothing graded in a lesson gets an empty cell (the LMS keeps what it has) or, with ``--missing zero``,
an explicit 0; the command lists them either way."""
from __future__ import annotations

import argparse
import csv
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Optional, TextIO

from ...exceptions import ReportError
from ...files import atomic_open
from ..grader import Row
from ..reading import layouts
from .reports import csv_field
from .resubmissions import LATEST, choose

#: Canvas's leading columns, in its order.
LEADING = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
COURSE = "Where does my tensor live?"
#: What ``--missing`` may choose for a student with nothing graded in a lesson.
BLANK, ZERO = "blank", "zero"
#: The columns Moodle's grading worksheet upload reads (``Identifier`` ends with the participant id).
WORKSHEET = ("Identifier", "Grade", "Last modified (grade)")
_ASSIGNMENT = re.compile(r"^(?P<name>.*\S)\s*\((?P<id>\d+)\)$")


def column(lesson: str) -> str:
    """The gradebook column of a lesson, when no assignment names it."""
    return f"Lesson {lesson} ({COURSE})"


@dataclass(frozen=True)
class Options:
    """How the gradebook is written."""

    roster: Optional[str] = None   # a Canvas gradebook export, a Moodle participants export or grading worksheet
    assignments: dict[str, str] = field(default_factory=dict)   # lesson -> Canvas assignment id
    missing: str = BLANK           # or ZERO
    policy: str = LATEST           # of resubmissions

    @classmethod
    def of(cls, args: argparse.Namespace) -> "Options":
        """The options ``report`` was given; raises :class:`ReportError` for an ``--assignment`` not ``NN=ID``."""
        assignments = {}
        for given in args.assignment or []:
            lesson, _, number = given.partition("=")
            if not (lesson.strip().isdigit() and number.strip().isdigit()):
                raise ReportError(f"--assignment {given}: write the lesson and Canvas's assignment id, e.g. 03=12345")
            assignments[lesson.strip().zfill(2)] = number.strip()
        return cls(args.roster, assignments, args.missing, args.resubmissions)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the gradebook's options to ``report``'s parser."""
    parser.add_argument("--roster", metavar="CSV",
                        help="gradebook: Canvas's gradebook export, or Moodle's participants export or the "
                             "assignment's grading worksheet (every student listed; Moodle's users matched)")
    parser.add_argument("--assignment", action="append", metavar="NN=ID",
                        help="gradebook: the Canvas assignment id of lesson NN (repeat it per lesson)")
    parser.add_argument("--missing", choices=(BLANK, ZERO), default=BLANK,
                        help="gradebook: a student with nothing graded in a lesson gets an empty cell (default: "
                             "the LMS keeps its grade) or 0")


class _Marks:
    """Each student's points per lesson, from the submission that counts."""

    def __init__(self, rows: list[Row], policy: str) -> None:
        chosen = choose(rows, policy)
        self.students = {s.key: s for s in chosen.whose.values()}
        self.lessons = sorted({lesson for _, lesson in chosen.counted})
        self.possible: dict[str, int] = defaultdict(int)
        for exercise in sorted({e for _, e in chosen.best}):
            self.possible[exercise[:2]] += max(r.max_points for (_, e), r in chosen.best.items() if e == exercise)
        self.points: dict[tuple[str, str], int] = defaultdict(int)
        for (student, exercise), row in chosen.best.items():
            self.points[student, exercise[:2]] += row.points
        self.graded = set(chosen.counted)
        self.matched: set[Optional[str]] = set()   # the students a roster's rows were matched to
        self.empty = 0   # the cells of students with nothing graded in that lesson

    def mark(self, student: Optional[str], lesson: str, missing: str, scale_to: str = "") -> str:
        """A cell: the points (scaled to ``scale_to`` points possible when given), or what ``missing`` says."""
        self.matched.add(student)
        if student is None or (student, lesson) not in self.graded:
            self.empty += 1
            return "0" if missing == ZERO else ""
        points, possible = self.points[student, lesson], self.possible[lesson]
        try:
            theirs = float(scale_to)
        except ValueError:
            return str(points)
        return f"{round(points * theirs / possible, 2):g}" if possible and theirs != possible else str(points)


def _read_roster(path: str) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            table = [row for row in csv.reader(f) if any(cell.strip() for cell in row)]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ReportError(f"--roster {path}: cannot be read ({getattr(e, 'strerror', None) or e})") from None
    if not table:
        raise ReportError(f"--roster {path}: an empty file")
    return table[0], [row + [""] * (len(table[0]) - len(row)) for row in table[1:]]


def _letters(name: str) -> str:
    """A name as Canvas's download writes it: its letters, lower case (``Doe, Jane`` -> ``doejane``)."""
    return "".join(c for c in name.casefold() if c.isalnum())


def _canvas(marks: _Marks, options: Options) -> list[list[str]]:
    """The import file for Canvas: from its gradebook export when given, else from the students graded."""
    lessons = marks.lessons or sorted(options.assignments)
    if not options.roster:
        header = [f"{column(lesson)} ({options.assignments[lesson]})" if lesson in options.assignments
                  else column(lesson) for lesson in lessons]
        out = [[*LEADING, *header], ["Points Possible", "", "", "", "", *(str(marks.possible[x]) for x in lessons)]]
        for key in sorted(marks.students, key=str.lower):
            student = marks.students[key]
            out.append([student.name, student.id, "", "", "",
                        *(marks.mark(key, lesson, options.missing) for lesson in lessons)])
        return out
    header, table = _read_roster(options.roster)
    at = {name: header.index(name) for name in LEADING if name in header}
    points_row = next((row for row in table if row[0].strip() == "Points Possible"), None)
    columns = {lesson: _assignment_column(header, lesson, options) for lesson in lessons}
    by_id = {s.id: key for key, s in marks.students.items() if s.id}
    by_name = {_letters(s.name): key for key, s in marks.students.items()}
    out = [[*LEADING, *(header[i] for i in columns.values())],
           ["Points Possible", "", "", "", "", *((points_row[i] if points_row else "") for i in columns.values())]]
    for row in table:
        if row is points_row or not row[at["ID"]].strip():
            continue
        key = by_id.get(row[at["ID"]].strip()) or by_name.get(_letters(row[at["Student"]]))
        out.append([row[at[name]] if name in at else "" for name in LEADING]
                   + [marks.mark(key, lesson, options.missing, points_row[i] if points_row else "")
                      for lesson, i in columns.items()])
    return out


def _assignment_column(header: list[str], lesson: str, options: Options) -> int:
    """The column of a Canvas gradebook export that is lesson ``lesson``'s assignment."""
    found = [i for i, name in enumerate(header) if (match := _ASSIGNMENT.match(name))
             and (match["id"] == options.assignments[lesson] if lesson in options.assignments
                  else re.search(rf"\blesson\W*0?{int(lesson)}\b|\b{lesson}_", match["name"], re.IGNORECASE))]
    if len(found) != 1:
        which = "no assignment" if not found else "several assignments (" + ", ".join(header[i] for i in found) + ")"
        raise ReportError(f"--roster {options.roster}: {which} for lesson {lesson}; name it with "
                          f"--assignment {lesson}=ID (the number in the column's parentheses)")
    return found[0]


def _moodle(marks: _Marks, options: Options) -> list[list[str]]:
    """The file for Moodle: its grading worksheet filled in, or its participants export with a column per lesson."""
    if not options.roster:
        raise ReportError("Moodle's grade import matches users by email address, username or ID number, which its "
                          "download does not hold: give --roster with the course's participants export "
                          "(Participants, Download table data as CSV) or the assignment's grading worksheet")
    header, table = _read_roster(options.roster)
    moodle = {s.id: key for key, s in marks.students.items() if s.layout == layouts.MOODLE}
    if all(name in header for name in WORKSHEET):
        if len(marks.lessons) != 1:
            raise ReportError(f"a grading worksheet holds one assignment, and the grades hold lessons "
                              f"{', '.join(marks.lessons)}: choose one with --lesson")
        ident, grade = header.index("Identifier"), header.index("Grade")
        most = next((i for i, name in enumerate(header) if name.casefold() == "maximum grade"), None)
        for row in table:
            mark = marks.mark(moodle.get(re.sub(r"^\D*", "", row[ident])), marks.lessons[0], options.missing,
                              row[most] if most is not None else "")
            row[grade] = mark or row[grade]
        return [header, *table]
    first = next((header.index(n) for n in ("First name",) if n in header), None)
    last = next((header.index(n) for n in ("Last name", "Surname") if n in header), None)
    if first is None or last is None or "Email address" not in header:
        raise ReportError(f"--roster {options.roster}: neither Moodle's participants export (First name, Last name, "
                          f"Email address) nor its grading worksheet ({', '.join(WORKSHEET)})")
    roles = header.index("Roles") if "Roles" in header else None
    by_name = {" ".join(s.name.casefold().split()): key for key, s in marks.students.items()}
    keep = [i for i, name in enumerate(header) if name in ("First name", "Last name", "Surname", "Email address",
                                                            "Username", "ID number")]
    out = [[header[i] for i in keep] + [column(lesson) for lesson in marks.lessons]]
    for row in table:
        if roles is not None and row[roles].strip() and "student" not in row[roles].casefold():
            continue
        names = (f"{row[first]} {row[last]}", f"{row[last]} {row[first]}")
        key = next((by_name[n] for n in (" ".join(x.casefold().split()) for x in names) if n in by_name), None)
        out.append([row[i] for i in keep] + [marks.mark(key, lesson, options.missing) for lesson in marks.lessons])
    return out


def table(rows: Iterable[Row], options: Options = Options()) -> tuple[list[list[str]], list[str], int]:
    """The gradebook (a header, then its rows) for the LMS the class was collected from (Moodle when most students
    were read from Moodle's download, else Canvas's form); the students graded whom ``--roster`` does not list; and
    how many cells are empty (or 0, with ``--missing zero``) for want of anything graded."""
    marks = _Marks(list(rows), options.policy)
    seen = [s.layout for s in marks.students.values()]
    out = _moodle(marks, options) if seen.count(layouts.MOODLE) > len(seen) / 2 else _canvas(marks, options)
    unmatched = sorted(marks.students[k].name for k in marks.students if k not in marks.matched)
    return out, unmatched if options.roster else [], marks.empty


def write(rows: Iterable[Row], out: str, options: Options = Options(), stderr: Optional[TextIO] = None) -> list[str]:
    """Write the gradebook of ``rows`` to ``out`` as CSV, atomically (cells a spreadsheet would run are escaped),
    and say on ``stderr`` whom the roster does not list and who has nothing graded. Returns the files written."""
    lines, unmatched, empty = table(rows, options)
    with atomic_open(out, "w", encoding="utf-8", newline="") as f:
        for line in lines:
            f.write(",".join(csv_field(cell) for cell in line) + "\n")
    if stderr is not None:
        if unmatched:
            print(f"Not in --roster, so not in the gradebook: {', '.join(unmatched)}.", file=stderr)
        if empty:
            print(f"{empty} mark(s) of students with nothing graded in that lesson: "
                  + ("0, as --missing zero asks." if options.missing == ZERO
                     else "left empty, so the LMS keeps what it has; --missing zero gives them 0."), file=stderr)
    return [out]


__all__ = ["table", "write", "column", "add_arguments", "Options", "LEADING", "WORKSHEET", "BLANK", "ZERO"]
