"""Finding and reading submissions for ``python -m course_utils grade``: which files, read how, and which lesson
each is. Which of a notebook's cells run, and the static checks on them, are :mod:`.cells`."""
from __future__ import annotations

import ast
import collections
import contextlib
import json
import os
import re
import stat
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Optional, Sequence

from ...exceptions import InvalidSubmission, NotANotebook
from ...results import PREDICTIONS_MIME
from .cells import AnswerCell
from .layouts import file_name

#: Notebook files larger than this are not read. Outputs are dropped while reading, so what
#: counts for answers is :data:`~course_utils.classroom.reading.cells.MAX_ANSWER_CHARS`.
MAX_NOTEBOOK_BYTES = 2**30


#: What a download holds that no student handed in: nbgrader's record of the time, and what zip tools and operating
#: systems leave.
NOT_HANDED_IN = frozenset({"timestamp.txt", "__MACOSX", "Thumbs.db", "desktop.ini"})


def find_submissions(paths: Sequence[str], problems: Optional[list[str]] = None) -> list[str]:
    """Expand files (any name, any content: a broken file is graded as broken) and folders into the notebooks to
    grade, sorted, each path once; FileNotFoundError for a path that does not exist.

    Folders are searched recursively for every file a student handed in (a ``.py`` or a ``.pdf`` too, so that the
    student is counted), skipping hidden files and folders such as ``.ipynb_checkpoints``, :data:`NOT_HANDED_IN`, and
    nbgrader's ``feedback`` folder, and not following links to folders; ``problems`` (if given) gets a line for each
    folder that could not be read. Two paths to one file are two submissions, each with its own rows."""
    def unreadable(error: OSError) -> None:
        if problems is not None:
            problems.append(f"Could not read the folder {error.filename}: {error.strerror}.")

    found: set[str] = set()
    for arg in paths:
        if os.path.isdir(arg):
            for folder, dirs, files in os.walk(arg, onerror=unreadable):
                nbgrader = "submitted" in dirs
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in NOT_HANDED_IN
                                 and not (nbgrader and d == "feedback"))
                for name in files:
                    file = os.path.join(folder, name)
                    if not name.startswith(".") and name not in NOT_HANDED_IN and os.path.isfile(file):
                        found.add(str(Path(file)))
        elif os.path.lexists(arg):
            found.add(str(Path(arg)))
        else:
            raise FileNotFoundError(f"No such file or folder: {arg}")
    return sorted(found)


def handed_in_at(path: str) -> Optional[datetime]:
    """When a file was handed in, as the download kept it: nbgrader's ``timestamp.txt`` in its folder or the one
    above, else the file's modification time; ``None`` when neither can be read."""
    for folder in list(Path(path).parents)[:2]:
        with contextlib.suppress(OSError, ValueError):
            text = (folder / "timestamp.txt").read_text(encoding="utf-8", errors="replace").strip()
            stamp = datetime.fromisoformat(text.removesuffix("UTC").strip())
            return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)
    try:
        return datetime.fromtimestamp(os.stat(path).st_mtime, timezone.utc)
    except (OSError, ValueError, OverflowError):
        return None


_SURROGATE = re.compile("[\ud800-\udfff]")
_BIG_FILE = 32 * 2**20
_BIG_READS = threading.Semaphore(1)  # one large notebook in memory at a time, whatever --jobs is


def _without_outputs(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for :func:`read_notebook`: drops saved outputs and attachments as soon as
    each is parsed (they are never graded; only a record of quiz predictions, :data:`PREDICTIONS_MIME`, is
    kept, for :mod:`course_utils.classroom.writing.predictions`), and turns lone surrogates in cell sources
    (``"\\ud800"`` escapes, which no UTF-8 file can hold) into U+FFFD."""
    obj = dict(pairs)
    if "output_type" in obj:
        data = obj.get("data")
        if isinstance(data, dict) and PREDICTIONS_MIME in data:
            return {"output_type": obj["output_type"], "data": {PREDICTIONS_MIME: data[PREDICTIONS_MIME]}}
        return {"output_type": obj["output_type"]}
    if "cell_type" in obj:
        outputs = obj.pop("outputs", None)
        records = [o for o in outputs if isinstance(o, dict) and "data" in o] if isinstance(outputs, list) else []
        if records:
            obj["outputs"] = records
        obj.pop("attachments", None)
        source = obj.get("source")
        if isinstance(source, str):
            obj["source"] = _SURROGATE.sub("\ufffd", source)
        elif isinstance(source, list):
            obj["source"] = [_SURROGATE.sub("\ufffd", s) if isinstance(s, str) else s for s in source]
    return obj


def _open_file(path: str) -> BinaryIO:
    """``path`` opened for reading in binary, without blocking on a FIFO or a device; InvalidSubmission when it is
    not a regular file."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    f = open(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise InvalidSubmission("the path is not a regular file")
    return f


#: What :func:`what_file` says of a notebook whose JSON is cut off or broken.
DAMAGED = "a damaged notebook"


def what_file(text: str) -> str:
    """What a file that is not JSON is, for a teacher and a student: "a Python script", "a PDF", "an HTML page"..."""
    head = text.lstrip().removeprefix("\ufeff")[:1024]
    if not head:
        return "empty"
    if head[:1] == "{" and ('"cells"' in text or '"nbformat"' in text):
        return DAMAGED
    if head.startswith("%PDF"):
        return "a PDF"
    if head.startswith("PK"):
        return "a zip archive (or a Word or Excel file)"
    if head[:1] == "<":
        return "an HTML page (a notebook exported as HTML, or a web page)"
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return "a text file"
    return "a Python script"


def read_notebook(path: str) -> dict:
    """Read a notebook file as JSON, without its saved outputs but a record of quiz predictions (see
    :func:`_without_outputs`); InvalidSubmission when it is unreadable, not a regular file, too large, not JSON,
    nested too deeply, or not a notebook. Bad UTF-8 bytes become U+FFFD; a BOM, UTF-16 and UTF-32 are read too."""
    try:
        with _open_file(path) as f:
            info = os.fstat(f.fileno())
            if info.st_size > MAX_NOTEBOOK_BYTES:
                raise InvalidSubmission(f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
            with _BIG_READS if info.st_size > _BIG_FILE else contextlib.nullcontext():
                data = f.read(MAX_NOTEBOOK_BYTES + 1)
                if len(data) > MAX_NOTEBOOK_BYTES:
                    raise InvalidSubmission(f"the file is larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
                try:
                    text = data.decode(json.detect_encoding(data))
                except UnicodeDecodeError:
                    text = data.decode("utf-8", errors="replace")
                del data
                try:
                    nb = json.loads(text.removeprefix("\ufeff"), object_pairs_hook=_without_outputs)
                except json.JSONDecodeError as e:
                    where = f"{e.msg} at line {e.lineno}, column {e.colno}"
                    kind = what_file(text)
                    if kind == DAMAGED:
                        raise InvalidSubmission(f"the notebook is damaged: it is not valid JSON ({where}); "
                                                "save it again from Jupyter") from None
                    raise NotANotebook(f"the file is {kind}, not a notebook (it is not valid JSON: {where})") from None
    except InvalidSubmission:
        raise
    except RecursionError:
        raise InvalidSubmission("the file is not a notebook: its JSON is nested too deeply") from None
    except (MemoryError, ValueError, LookupError) as e:  # e.g. a number too large to read
        raise InvalidSubmission(f"the file is not a notebook: its JSON could not be read "
                                f"({type(e).__name__})") from None
    except OSError as e:
        raise InvalidSubmission(f"the file could not be read ({e.strerror or type(e).__name__})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotANotebook("the file is JSON but not a Jupyter notebook (it has no list of cells)")
    return nb


def file_lesson(path: str) -> Optional[str]:
    """The ``NN`` of a file name ``NN_*.ipynb`` when lesson ``NN`` has exercises, else ``None``; after the prefix
    Canvas and Moodle put before the name (``doejane_1234_5678_01_tensors.ipynb``)."""
    match = re.match(r"(\d\d)_", file_name(Path(path).name))
    return match.group(1) if match and lesson_exercises(match.group(1)) else None


def lesson_of(path: str, cells: Sequence[AnswerCell] = ()) -> Optional[str]:
    """The lesson a submission is an assignment of, told by what it holds before what it is called: the lesson most
    of its answer cells belong to (lesson 01's notebook saved as ``04_team_tensors.ipynb`` is lesson 01), else the
    exercise ids the file names (:func:`lesson_mentioned`), else a file name ``NN_*.ipynb``; else ``None``."""
    return _cells_lesson(cells) or lesson_mentioned(path) or file_lesson(path)


def _cells_lesson(cells: Sequence[AnswerCell]) -> Optional[str]:
    """The lesson most of ``cells`` (of registered exercises) belong to; ``None`` for none or a tie."""
    from ...exercises import exercise_ids, get_exercise
    known = set(exercise_ids())
    ranked = collections.Counter(get_exercise(c.exercise).lesson for c in cells if c.exercise in known).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def lesson_number(text: str) -> str:
    """A lesson as typed on the command line, written as the course writes it: ``1`` -> ``01``,
    ``1,2`` -> ``01,02``; anything else (``all``) as it is."""
    return ",".join(part.strip().zfill(2) if part.strip().isdigit() else part.strip() for part in text.split(","))


def lesson_exercises(lesson: str) -> list[str]:
    """The registered exercise ids of ``lesson`` (``"01"``; ``"01,02"`` for several), in course order."""
    from ...exercises import exercise_ids, get_exercise
    numbers = lesson.split(",")
    return [e for e in exercise_ids() if get_exercise(e).lesson in numbers]


_MENTION = re.compile(r"exercise\W{1,6}(\d\d\.[A-Za-z_]\w*)")


def lesson_mentioned(path: str) -> Optional[str]:
    """The lesson a file names when neither its answer cells nor its name do: the lesson of the registered exercise
    ids in its answer-cell metadata (``"exercise": "01.nbytes"``) or check cells (``cu.exercise("01.nbytes")``), read
    as plain text (so it works on a damaged file too); ``None`` when those name no lesson, or several."""
    from ...exercises import exercise_ids, get_exercise
    try:
        with _open_file(path) as f:
            text = f.read(64 * 2**20).decode("latin-1")
    except (OSError, InvalidSubmission):
        return None
    known = set(exercise_ids())
    lessons = {get_exercise(m).lesson for m in _MENTION.findall(text) if m in known}
    return lessons.pop() if len(lessons) == 1 else None

