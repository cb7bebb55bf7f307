"""What a batch writes: the CSV (escaped for spreadsheets), Gradescope ``results.json`` files in
unique folders, and the summary table."""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import tempfile
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Optional, Sequence, TextIO

from ...files import atomic_open, is_special, write_text_atomic
from ...text import shorten
from ..grader import TOTAL, Row, SubmissionGrade


#: The CSV's columns (those added later after the others, so that they keep their places). ``code``: the
#: misconceptions the feedback names (:mod:`course_utils.misconceptions`), space-separated, ``""`` for a passed
#: exercise; on a ``TOTAL`` row, the code of why the whole submission was not graded, if it was not. ``submitted``,
#: ``late`` and ``answers``: the submission's (:class:`~course_utils.classroom.grader.SubmissionGrade`), on each row.
CSV_HEADER = ("submission", "exercise", "points", "max_points", "passed", "feedback", "code", "submitted", "late",
              "answers")


def csv_rows(grades: Sequence[SubmissionGrade]) -> list[Row]:
    """All rows, sorted by submission, then exercise id, each submission's ``TOTAL`` last."""
    rows = [r for g in grades for r in g.all_rows()]
    return sorted(rows, key=lambda r: (r.submission, r.exercise == TOTAL, r.exercise))


#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_field(text: str) -> str:
    """One CSV field, safe to open in a spreadsheet: one that starts like a formula (``=`` ``+`` ``-`` ``@``, tab or
    carriage return: a file named ``=HYPERLINK(...).ipynb``) gets a leading ``'``, as OWASP recommends; one holding a
    comma, semicolon (the separator in some locales), quote, tab or line break is quoted (RFC 4180)."""
    if text.startswith(_FORMULA_START):
        text = "'" + text
    if any(c in text for c in ',;"\t\r\n'):
        text = '"' + text.replace('"', '""') + '"'
    return text


def csv_unescape(text: str) -> str:
    """A field as :func:`csv_field` was given it (after CSV parsing): the ``'`` before a formula-like start goes."""
    return text[1:] if text.startswith("'") and text[1:].startswith(_FORMULA_START) else text


def _csv_lines(rows: Sequence[Row]) -> str:
    """CSV lines for ``rows``, each ending with ``\\n``."""
    return "".join(",".join(csv_field(v) for v in row.values()) + "\n" for row in rows)


def write_csv(grades: Sequence[SubmissionGrade], out: TextIO) -> None:
    """Write the grades as CSV (header :data:`CSV_HEADER`, ``\\n`` line ends, fields as
    :func:`csv_field` writes them) to ``out``."""
    out.write(",".join(CSV_HEADER) + "\n")
    out.write(_csv_lines(csv_rows(grades)))


class CsvFile:
    """The ``--out`` file, never half-written and never lost: each submission's rows go, as soon as it is graded, to
    a partial file beside ``--out`` (``grades.csv.<random>.partial``); when the batch ends (or is interrupted) the
    sorted CSV replaces ``--out`` in one atomic rename and the partial file is removed. A target that is not a regular
    file (``/dev/stdout``, a pipe) gets the sorted CSV only, at the end."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.grades: list[SubmissionGrade] = []
        self.partial: Optional[str] = None
        self._f: Optional[TextIO] = None
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "it is a folder", path)
        if not is_special(path):
            target = Path(os.path.realpath(path))
            fd, self.partial = tempfile.mkstemp(dir=target.parent, prefix=f"{target.name}.", suffix=".partial")
            self._f = os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="")
            self._f.write(",".join(CSV_HEADER) + "\n")
            self._f.flush()

    def add(self, grade: SubmissionGrade) -> None:
        """Append one submission's rows (its ``TOTAL`` last) to the partial file."""
        self.grades.append(grade)
        if self._f:
            self._f.write(_csv_lines(csv_rows([grade])))
            self._f.flush()

    def finish(self) -> None:
        """Write every row so far, sorted, to ``--out`` (atomically), then remove the partial file."""
        with atomic_open(self.path, "w", encoding="utf-8", errors="backslashreplace", newline="") as f:
            write_csv(self.grades, f)
        self.close()

    def close(self) -> None:
        """Remove the partial file (after :meth:`finish`, or when nothing was graded)."""
        if self._f:
            self._f.close()
            self._f = None
            with contextlib.suppress(OSError):
                os.unlink(self.partial)


def gradescope_results(grade: SubmissionGrade, execution_time: float | None = None) -> dict:
    """A submission's grade in Gradescope's ``results.json`` format: ``score``, ``output``, one ``tests``
    entry per exercise (``name``, ``number``, ``score``, ``max_score``, ``status``, ``output``,
    ``visibility``, and ``tags``: the misconception codes, for a failed one), ``execution_time`` in seconds when
    given, and in ``extra_data`` the submission's path, when it was handed in, whether late and its answers' hash."""
    from ...exercises import get_exercise
    tests = [{"name": f"{row.exercise}: {get_exercise(row.exercise).title}", "number": row.exercise,
              "score": row.points, "max_score": row.max_points, "status": "passed" if row.passed else "failed",
              "output": row.feedback, "visibility": "visible", "tags": row.code.split()} for row in grade.rows]
    extra = {"submission": grade.submission, "submitted": grade.submitted, "late": grade.late, "answers": grade.answers}
    results = {"score": grade.points, "output": grade.total().feedback, "tests": tests,
               "extra_data": {**extra, **({"code": grade.note_code} if grade.note_code else {})}}
    if execution_time is not None:
        results["execution_time"] = max(int(round(execution_time)), 0)
    return results


_FOLDER_UNSAFE = frozenset('%/\\<>:"|?*~')
_FOLDER_MAX_BYTES = 200


def gradescope_folder(submission: str, strict: bool = False) -> str:
    """The folder name for a submission's ``results.json``: its path as given, percent-encoded. ``%``, ``/``, ``\\``,
    ``~``, the characters Windows forbids (``<>:"|?*``) and control characters become ``%XX`` (their UTF-8 bytes), as
    do a leading ``.`` and a trailing space or ``.``, so that the name is one folder on any system and
    ``urllib.parse.unquote(name) == submission``: ``subs/John Smith/hw.ipynb`` -> ``subs%2FJohn Smith%2Fhw.ipynb``.
    ``strict`` also encodes capital letters and non-ASCII characters (for names that differ only in case, which collide
    on macOS and Windows). A name over 200 bytes is cut, and ends with ``~`` and a hash of the path; it cannot be
    decoded: read ``extra_data.submission`` in its ``results.json``."""
    tokens = []
    for i, ch in enumerate(submission):
        edge = (i == 0 and ch == ".") or (i == len(submission) - 1 and ch in " .")
        if ch in _FOLDER_UNSAFE or not ch.isprintable() or edge or (strict and (ch.isupper() or not ch.isascii())):
            raw = ch.encode("utf-8", "surrogateescape" if "\udc80" <= ch <= "\udcff" else "surrogatepass")
            tokens.append("".join(f"%{b:02X}" for b in raw))
        else:
            tokens.append(ch)
    name = "".join(tokens)
    if len(name.encode()) <= _FOLDER_MAX_BYTES:
        return name
    digest = hashlib.sha256(submission.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    kept, size = [], 0
    for token in tokens:
        size += len(token.encode())
        if size > _FOLDER_MAX_BYTES - 17:
            break
        kept.append(token)
    return "".join(kept) + "~" + digest


def gradescope_folders(submissions: Sequence[str]) -> dict[str, str]:
    """Submission -> its folder (:func:`gradescope_folder`), unique even on a file system that ignores
    case or Unicode normalization: names that would collide there are encoded ``strict``."""
    def key(name: str) -> str:
        return unicodedata.normalize("NFC", name).casefold()

    names = {s: gradescope_folder(s) for s in submissions}
    counts = Counter(key(name) for name in names.values())
    return {s: gradescope_folder(s, strict=True) if counts[key(n)] > 1 else n for s, n in names.items()}


def write_results(grade: SubmissionGrade, directory: str, folder: str) -> Path:
    """Write ``DIRECTORY/FOLDER/results.json`` for one submission; returns its path."""
    target = Path(directory) / folder / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, json.dumps(gradescope_results(grade), indent=2, ensure_ascii=False) + "\n",
                      errors="backslashreplace")
    return target


def write_gradescope(grades: Sequence[SubmissionGrade], directory: str) -> list[Path]:
    """Write ``DIRECTORY/<folder>/results.json`` for each submission, the folder named by :func:`gradescope_folders`
    (the submission's path, percent-encoded: one folder per path); returns the files written."""
    folders = gradescope_folders([g.submission for g in grades])
    return [write_results(grade, directory, folders[grade.submission]) for grade in grades]


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: control characters, lone surrogates (from file names
    that are not UTF-8) and other invisible characters become ``\\x1b``-style escapes."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def summary_table(grades: Sequence[SubmissionGrade]) -> str:
    """One line per submission: points, exercises passed, and notes."""
    table = [("Submission", "Points", "Passed", "Notes")]
    for g in grades:
        notes = printable(g.note if g.note else "; ".join(g.events))
        table.append((printable(g.submission), f"{g.points}/{g.max_points}", f"{g.passed}/{len(g.rows)}",
                      shorten(notes, 70)))
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    lines = ["  ".join([c.ljust(w) for c, w in zip(row[:3], widths)] + [row[3]]).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths + [5]))
    return "\n".join(lines)
