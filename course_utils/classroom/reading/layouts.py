"""Whose each submission is: the folder layouts in which schools collect a class's notebooks.

* **Canvas** (*Download Submissions*): one flat folder, each file ``lastfirst_userid_submissionid_<file>``
  (``lastfirst_LATE_userid_...`` when late; a file handed in twice under one name gains ``-1``). The student is
  ``lastfirst``, with Canvas's user id.
* **Moodle** (*Download all submissions*): a folder per submission, ``Full Name_participantid_assignsubmission_file``
  (or, without folders, that prefix on each file name). The student is ``Full Name``, with the participant id.
* **nbgrader**: ``submitted/<student>/<assignment>/<notebook>`` (``autograded/`` too): the student is the folder
  after ``submitted``.
* **A folder per student**: ``alice/01_tensors.ipynb`` is alice's, whatever the folders above it.
* **A flat folder**: files of several students in one folder, in no platform's naming (a folder holding two
  submissions of one lesson under names that differ by more than a copy's suffix): each file is a student.

The layout is read from the paths alone, per submission, so a batch that mixes layouts still works;
:func:`read_layout` says which were read, for the grader's summary and the report."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Iterable, Mapping

CANVAS, MOODLE, NBGRADER, FOLDERS, FLAT = "Canvas", "Moodle", "nbgrader", "folder per student", "flat folder"
#: How each layout is named in a summary.
DESCRIPTIONS = {CANVAS: "Canvas's bulk download (one flat folder, the student in each file name)",
                MOODLE: "Moodle's download (a folder per submission, the student in its name)",
                NBGRADER: "nbgrader's submitted/<student>/<assignment>/",
                FOLDERS: "a folder per student",
                FLAT: "a flat folder (each file a student)"}

_CANVAS = re.compile(r"^(?P<name>[^_]*[^\W\d_][^_]*)_(?P<late>late_)?(?P<id>\d+)_(?P<file>\d+)_.+$",
                     re.IGNORECASE)  # a name in any script
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_[a-z]+(?:_|$)", re.IGNORECASE)
_CANVAS_PREFIX = re.compile(r"^[^_]*[^\W\d_][^_]*_(?:late_)?\d+_\d+_(?=.)", re.IGNORECASE)
_MOODLE_PREFIX = re.compile(r"^.+?_\d+_assignsubmission_[a-z]+_", re.IGNORECASE)
_NBGRADER_ROOTS = frozenset({"submitted", "autograded", "feedback"})
#: A copy's suffix on a file name: ``(1)``, ``-1``, `` copy``, ``_v2``.
_COPY = re.compile(r"(?:[\s_-]*(?:\(\d+\)|copy|v?\d+))+$", re.IGNORECASE)


@dataclass(frozen=True)
class Student:
    """One student of a class, as the submissions name them."""

    name: str  # how the report shows them (doejane, Jane Doe, alice, or a folder or file path)
    id: str  # the platform's id (Canvas user id, Moodle participant id), "" when it gives none
    layout: str  # the layout the name was read from (DESCRIPTIONS' keys)

    @property
    def key(self) -> str:
        """What tells two students apart: the name, with the id when there is one."""
        return f"{self.name} ({self.id})" if self.id else self.name


def _parts(submission: str) -> tuple[str, ...]:
    windows = "\\" in submission and "/" not in submission
    return (PureWindowsPath(submission) if windows else PurePosixPath(submission)).parts


def _platform_student(parts: tuple[str, ...]) -> Student | None:
    """The student a platform's naming gives (nbgrader, Moodle, Canvas), or ``None``."""
    for i, part in enumerate(parts[:-3]):
        if part in _NBGRADER_ROOTS:
            return Student(parts[i + 1], "", NBGRADER)
    for part in reversed(parts):
        if match := _MOODLE.match(part):
            return Student(match["name"].strip(), match["id"], MOODLE)
    if match := _CANVAS.match(parts[-1]):
        return Student(match["name"], match["id"], CANVAS)
    return None


def marked_late(submission: str) -> bool:
    """Whether Canvas marked the file late (``doejane_LATE_1234_5678_01_tensors.ipynb``)."""
    match = _CANVAS.match(_parts(submission)[-1]) if submission else None
    return bool(match and match["late"])


def version(submission: str) -> tuple[int, int]:
    """Which of a student's files came later, as the name tells: Canvas's file id (it grows with each upload), then
    a copy's number (``01_tensors (2).ipynb`` after ``01_tensors (1).ipynb`` after ``01_tensors.ipynb``)."""
    name = _parts(submission)[-1] if submission else ""
    canvas = _CANVAS.match(name)
    suffix = _COPY.search(file_name(name).rsplit(".", 1)[0])
    numbers = re.findall(r"\d+", suffix[0]) if suffix else []
    return int(canvas["file"]) if canvas else 0, int(numbers[-1]) if numbers else int(bool(suffix))


def file_name(path: str) -> str:
    """A file's name as the student saved it: the path's last part, without the prefix Canvas or Moodle put
    before it."""
    name = _parts(path)[-1] if path else path
    for pattern in (_CANVAS_PREFIX, _MOODLE_PREFIX):
        name = pattern.sub("", name, count=1)
    return name


def _stem(name: str) -> str:
    """A file name without its extension and a copy's suffix (``01_tensors (1).ipynb`` -> ``01_tensors``)."""
    stem = name.rsplit(".", 1)[0]
    return _COPY.sub("", stem) or stem


def students(lessons: Mapping[str, Iterable[str]]) -> dict[str, Student]:
    """Whose each submission is: each key of ``lessons`` (a submission path, as graded -> the lessons its rows belong
    to) -> its :class:`Student`."""

    out: dict[str, Student] = {}
    by_folder: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for submission in lessons:
        parts = _parts(submission)
        found = _platform_student(parts) if parts else None
        if found is not None:
            out[submission] = found
        else:
            by_folder[parts[:-1]].append(submission)
    for submission in _not_canvas(out):
        del out[submission]
        by_folder[_parts(submission)[:-1]].append(submission)
    for folder, files in by_folder.items():
        names: dict[str, set[str]] = defaultdict(set)   # lesson -> the stems of its files here
        for file in files:
            for lesson in lessons[file] or ("?",):
                names[lesson].add(_stem(_parts(file)[-1]))
        flat = not folder or any(len(stems) > 1 for stems in names.values())
        for file in files:
            out[file] = (Student(file, "", FLAT) if flat
                         else Student(PurePosixPath(*folder).as_posix(), "", FOLDERS))
    return out


def _not_canvas(found: Mapping[str, Student]) -> list[str]:
    """The files read as Canvas's that are not: Canvas's download is one flat folder, so a Canvas student found in
    several folders (``carol/week_5_01_tensors.ipynb`` and ``dave/week_5_01_tensors.ipynb``) is a name that only
    looks like Canvas's, in folders that are the students."""
    folders: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for submission, student in found.items():
        if student.layout == CANVAS:
            folders[student.key].add(_parts(submission)[:-1])
    return [sub for sub, student in found.items() if student.layout == CANVAS and len(folders[student.key]) > 1]


def read_layout(found: Mapping[str, Student]) -> str:
    """What :func:`students` read, in words: ``"Canvas's bulk download ...: 3 students, 4 submissions"``, the most
    common layout first when there are several."""
    if not found:
        return "no submissions"
    counts = Counter(s.layout for s in found.values())
    parts = []
    for layout, submissions in counts.most_common():
        people = len({s.key for s in found.values() if s.layout == layout})
        parts.append(f"{DESCRIPTIONS[layout]}: {people} student{'s' * (people != 1)}, "
                     f"{submissions} submission{'s' * (submissions != 1)}")
    return "; ".join(parts)
