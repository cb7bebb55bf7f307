"""Finding and reading submissions for ``python -m course_utils grade``: which files, which lesson,
which answer cells, read as IPython reads them; and the static checks made before anything runs
(answers that read the checker's frames, cells that cannot be run)."""
from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import os
import re
import stat
import threading
import tokenize
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, NamedTuple, Optional, Sequence

from ..exceptions import CourseError
from ..notebook import cell_source, exercise_cells
from ..results import PREDICTIONS_MIME
from .messages import clean


#: Notebook files larger than this are not read. Outputs are dropped while reading, so what
#: counts for answers is :data:`MAX_ANSWER_CHARS`.
MAX_NOTEBOOK_BYTES = 2**30
#: Answer cells longer than this (characters) are not run: that exercise scores 0.
MAX_ANSWER_CHARS = 2**20


class AnswerCell(NamedTuple):
    """A code cell the grader runs: an exercise's answer cell, or (``exercise`` is :data:`OWN_CELL`)
    a cell of the learner's that defines a name the answers use."""

    index: int
    exercise: str
    source: str


#: The ``exercise`` of an :class:`AnswerCell` that is not an answer cell (see :func:`own_cells`).
OWN_CELL = ""
#: Names the notebook's setup cell provides, which the grader's namespace provides too
#: (:func:`course_utils.classroom.worker.notebook_namespace`): an answer may use them without a cell of its own
#: defining them.
PROVIDED = frozenset({"torch", "nn", "F", "cu", "course_utils", "math", "device", "display", "np", "get_ipython"})
#: At most this many cells of the learner's own are run (the grader's time limits apply to each).
MAX_OWN_CELLS = 40


class InvalidSubmission(CourseError):
    """The file cannot be graded as a notebook; the message says why."""


class NotANotebook(InvalidSubmission):
    """The file is another kind of file (a Python script, a PDF, JSON without cells...): nothing was handed in."""


def find_submissions(paths: Sequence[str], problems: Optional[list[str]] = None) -> list[str]:
    """Expand files and folders into the notebooks to grade.

    Args:
        paths: notebook files (any name, any content: a broken file is graded as broken) and
            folders (searched recursively for ``*.ipynb``, skipping hidden files and folders such as
            ``.ipynb_checkpoints``, and not following links to folders).
        problems: if given, gets a line for each folder that could not be read.

    Returns:
        Submission paths as given or found, sorted, each path once. Two paths to one file (a
        link, or a folder given twice under different names) are two submissions: each gets its
        own rows, under its own name.

    Raises:
        FileNotFoundError: a path that does not exist.
    """
    def unreadable(error: OSError) -> None:
        if problems is not None:
            problems.append(f"Could not read the folder {error.filename}: {error.strerror}.")

    found: set[str] = set()
    for arg in paths:
        if os.path.isdir(arg):
            for folder, dirs, files in os.walk(arg, onerror=unreadable):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in files:
                    file = os.path.join(folder, name)
                    if name.endswith(".ipynb") and not name.startswith(".") and os.path.isfile(file):
                        found.add(str(Path(file)))
        elif os.path.lexists(arg):
            found.add(str(Path(arg)))
        else:
            raise FileNotFoundError(f"No such file or folder: {arg}")
    return sorted(found)


_SURROGATE = re.compile("[\ud800-\udfff]")
_BIG_FILE = 32 * 2**20
_BIG_READS = threading.Semaphore(1)  # one large notebook in memory at a time, whatever --jobs is


def _without_outputs(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` for :func:`read_notebook`: drops saved outputs and attachments as soon as
    each is parsed (they are never graded; only a record of quiz predictions, :data:`PREDICTIONS_MIME`, is
    kept, for :mod:`course_utils.classroom.predictions`), and turns lone surrogates in cell sources
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
    """``path`` opened for reading in binary, without blocking on a FIFO or a device.

    Raises:
        InvalidSubmission: the path is not a regular file.
        OSError: it cannot be opened.
    """
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
    :func:`_without_outputs`).

    Text that is not valid UTF-8 is read with U+FFFD in place of the bad bytes; UTF-8 with a byte
    order mark, UTF-16 and UTF-32 are read too.

    Raises:
        InvalidSubmission: unreadable, not a regular file, larger than :data:`MAX_NOTEBOOK_BYTES`,
            not JSON, nested too deeply, or not an nbformat-4 notebook.
    """
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


def answer_cells(nb: dict) -> list[AnswerCell]:
    """The answer cells of a notebook, in notebook order: the code cells marked as an exercise's answer
    (:func:`course_utils.notebook.exercise_cells`).

    Every marked cell is kept: an answer split over two cells (both carry the metadata) keeps both
    halves, and a duplicated answer cell runs twice, as it would in the notebook.

    Returns:
        An :class:`AnswerCell` (cell index, exercise id, source) per answer cell.

    Raises:
        InvalidSubmission: the cells are not what nbformat 4 describes.
    """
    try:
        return [AnswerCell(index, ex_id, cell_source(cell)) for index, cell in enumerate(nb["cells"])
                for ex_id in exercise_cells({"cells": [cell]})]
    except (AttributeError, TypeError):
        raise InvalidSubmission("the file is not a valid notebook: its cells are malformed") from None


def file_lesson(path: str) -> Optional[str]:
    """The ``NN`` of a file name ``NN_*.ipynb`` when lesson ``NN`` has exercises, else ``None``."""
    match = re.match(r"(\d\d)_", Path(path).name)
    return match.group(1) if match and lesson_exercises(match.group(1)) else None


def lesson_of(path: str, cells: Sequence[AnswerCell] = ()) -> Optional[str]:
    """The lesson a submission is an assignment of, told by what it holds before what it is called.

    First the lesson most of its answer cells (of registered exercises) belong to, so that lesson
    01's notebook saved as ``04_team_tensors.ipynb`` is lesson 01; then the exercise ids the file
    names (:func:`lesson_mentioned`: its check cells, for a notebook whose answer cells lost their
    metadata); then a file name ``NN_*.ipynb``. ``None`` when none of these names one lesson.
    """
    return _cells_lesson(cells) or lesson_mentioned(path) or file_lesson(path)


def _cells_lesson(cells: Sequence[AnswerCell]) -> Optional[str]:
    """The lesson most of ``cells`` (of registered exercises) belong to; ``None`` for none or a tie."""
    from ..exercises import exercise_ids, get_exercise
    known = set(exercise_ids())
    counts: dict[str, int] = {}
    for cell in cells:
        if cell.exercise in known:
            lesson = get_exercise(cell.exercise).lesson
            counts[lesson] = counts.get(lesson, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def lesson_number(text: str) -> str:
    """A lesson as typed on the command line, written as the course writes it: ``1`` -> ``01``,
    ``1,2`` -> ``01,02``; anything else (``all``) as it is."""
    return ",".join(part.strip().zfill(2) if part.strip().isdigit() else part.strip() for part in text.split(","))


def lesson_exercises(lesson: str) -> list[str]:
    """The registered exercise ids of ``lesson`` (``"01"``; ``"01,02"`` for several), in course order."""
    from ..exercises import exercise_ids, get_exercise
    numbers = lesson.split(",")
    return [e for e in exercise_ids() if get_exercise(e).lesson in numbers]


def strip_magics(source: str) -> str:
    """An answer cell as the Python that Jupyter runs: IPython's own input transformer turns magics
    (``%timeit f(x)``, ``t = %timeit -o f(x)``, ``%%time``), shell escapes (``!pip ...``,
    ``files = !ls``) and help (``x?``) into calls of ``get_ipython()``; the rest is left as it is
    (``!=`` and ``%`` on continuation lines stay operators).

    Without IPython (it comes with Jupyter), lines that start with ``%`` or ``!`` become ``pass``.
    """
    if not any(mark in source for mark in "%!?"):  # plain Python: nothing to transform (the common case)
        return source
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - IPython is installed with Jupyter
        return _magics_as_pass(source)
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # IPython gives up on it: Python's compiler reports what is wrong
        return source


def _magics_as_pass(source: str) -> str:
    """Without IPython: each line that starts a statement with ``%`` or ``!`` becomes ``pass``; a line inside
    brackets or a string (``!= 2)`` continuing an expression) is left as it is."""
    starts = _statement_lines(source)
    return "\n".join(line[: len(line) - len(line.lstrip())] + "pass  # " + line.lstrip()
                     if line.lstrip().startswith(("%", "!")) and (starts is None or number in starts) else line
                     for number, line in enumerate(source.splitlines(), start=1))


def _statement_lines(source: str) -> Optional[set[int]]:
    """The numbers of the lines on which a statement starts, or ``None`` when Python cannot tokenize ``source``."""
    starts, at_start = set(), True
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.NEWLINE, tokenize.DEDENT, tokenize.INDENT):
                at_start = True
            elif token.type not in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER) and at_start:
                starts.add(token.start[0])
                at_start = False
    except (tokenize.TokenError, SyntaxError):
        return None
    return starts


#: Modules with functions that hand out frames of the call stack, whose local variables include
#: the checker's expected values.
_FRAME_MODULES = frozenset({"sys", "inspect", "gc", "traceback"})
#: Names that give access to frames (or to every object, as ``gc`` does) on whatever object they are
#: read: no other Python or PyTorch API has these names.
_FRAME_NAMES = frozenset({
    "_getframe", "_getframemodulename", "_current_frames", "currentframe", "getouterframes",
    "getinnerframes", "walk_stack", "get_referrers", "get_referents", "get_objects", "settrace",
    "setprofile", "f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame", "cr_frame",
    "ag_frame"})
#: Names that read frames only on the ``inspect`` module (``torch.stack`` is fine).
_INSPECT_FRAME_NAMES = frozenset({"stack", "trace"})
#: A frame API named in a string (for ``eval``, ``exec`` or ``operator.attrgetter``).
_FRAME_WORDS = re.compile(r"\b(?:" + "|".join(sorted(_FRAME_NAMES)) + r")\b|\binspect\s*\.\s*(?:stack|trace)\b")


def _frame_module(node: ast.AST, aliases: dict[str, str]) -> Optional[str]:
    """The frame module (:data:`_FRAME_MODULES`) that the expression ``node`` stands for, if any:
    a name it was imported as, ``__import__("sys")``, ``importlib.import_module("sys")`` or
    ``sys.modules["sys"]``."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        name = node.args[0].value
        if called in ("__import__", "import_module") and isinstance(name, str):
            return name.partition(".")[0] if name.partition(".")[0] in _FRAME_MODULES else None
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "modules" and isinstance(node.slice, ast.Constant)):
        return node.slice.value if node.slice.value in _FRAME_MODULES else None
    return None


def _frame_name(name: str, module: Optional[str]) -> bool:
    """Whether reading attribute ``name`` (of ``module``, when that is known) gives frames."""
    return name in _FRAME_NAMES or (module == "inspect" and name in _INSPECT_FRAME_NAMES)


def reaches_into_course(source: str) -> Optional[str]:
    """The first construct in the answer cell ``source`` that reads the call stack, or ``None``.

    Frames of the stack hold the checker's local variables (the expected values) while the answer
    is called, so an answer cell must not touch them: ``sys._getframe``, ``inspect.currentframe``,
    ``inspect.stack()``/``trace()`` (also as ``import inspect as i; i.stack()`` or ``from inspect
    import stack``), ``traceback.walk_stack``, ``gc.get_referrers``/``get_objects``, ``settrace``, a
    frame's ``f_back``/``f_locals``/``f_globals``, ``tb_frame``, a generator's ``gi_frame``; a
    ``getattr`` of such a name, or of a computed name on ``sys``, ``inspect``, ``gc`` or
    ``traceback``; ``vars()``/``__dict__`` of those modules; star imports from them; and strings that
    name a frame API (for ``eval``). The cell is read as IPython would run it (:func:`strip_magics`).

    Static and deliberately narrow: none of these has a place in an answer to this course, and no
    everyday name is among them. Reading the course's reference solutions is detected by what the
    answer *is* and *calls* while it is checked (see :mod:`course_utils.classroom.worker`), not here.
    """
    try:
        tree = ast.parse(strip_magics(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    aliases = {name: name for name in _FRAME_MODULES}
    for node in ast.walk(tree):  # imports first: an alias may be used above the line that makes it
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                if top in _FRAME_MODULES:
                    aliases[alias.asname or top] = top
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").partition(".")[0] in _FRAME_MODULES:
            module = (node.module or "").partition(".")[0]
            for alias in node.names:
                if alias.name == "*" or _frame_name(alias.name, module):
                    return f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute):
            module = _frame_module(node.value, aliases)
            if _frame_name(node.attr, module) or (module and node.attr == "__dict__"):
                return ast.unparse(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            target = _frame_module(node.args[0], aliases)
            if node.func.id == "vars" and target:
                return ast.unparse(node)
            if node.func.id in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) > 1:
                name = node.args[1]
                literal = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
                if (literal is None and target) or (literal is not None and _frame_name(literal, target)):
                    return ast.unparse(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _FRAME_WORDS.search(node.value):
            return repr(node.value) if len(node.value) <= 60 else repr(node.value[:57] + "...")
    return None


_MENTION = re.compile(r"exercise\W{1,6}(\d\d\.[A-Za-z_]\w*)")


def lesson_mentioned(path: str) -> Optional[str]:
    """The lesson a file names when neither its answer cells nor its name do: the lesson of the
    registered exercise ids in its answer-cell metadata (``"exercise": "01.nbytes"``) or check cells
    (``cu.exercise("01.nbytes")``), read as plain text (so it works on a damaged file too); ``None``
    when those name no lesson, or several."""
    from ..exercises import exercise_ids, get_exercise
    try:
        with _open_file(path) as f:
            text = f.read(64 * 2**20).decode("latin-1")
    except (OSError, InvalidSubmission):
        return None
    known = set(exercise_ids())
    lessons = {get_exercise(m).lesson for m in _MENTION.findall(text) if m in known}
    return lessons.pop() if len(lessons) == 1 else None


def why_unrunnable(source: str) -> Optional[str]:
    """Why an answer cell cannot be run at all (the feedback for its exercise), or ``None``.

    Too long, or Python's own parser gives up on it (nested too deeply, a null character): reasons a
    learner can act on, which would otherwise stop the grader's checks or the worker. A plain
    syntax error is left to the worker, which reports its line.
    """
    if len(source) > MAX_ANSWER_CHARS:
        return (f"Your answer cell is too long to grade ({len(source):,} characters; the limit is "
                f"{MAX_ANSWER_CHARS:,}).")
    for text in (source, strip_magics(source)):
        try:
            ast.parse(text)
            compile(text, "<answer cell>", "exec", dont_inherit=True)
            return None
        except SyntaxError:
            continue
        except (RecursionError, MemoryError):
            return ("Your answer cell could not be graded: it is nested too deeply for Python to read "
                    "(an expression or a structure thousands of levels deep).")
        except (ValueError, UnicodeError) as e:
            return f"Your answer cell could not be graded: Python cannot read it ({clean(str(e))})."
    return None


# --- cells of the learner's own that the answers need ------------------------------------------

def _parse(source: str) -> Optional[ast.Module]:
    """A cell's syntax tree as IPython would run it, or ``None`` when Python cannot read it."""
    try:
        return ast.parse(strip_magics(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _bound_at_top(tree: ast.Module) -> set[str]:
    """The names a cell binds in the notebook's namespace: functions, classes, imports and
    assignments at its top level, also inside its ``if``/``for``/``while``/``with``/``try`` blocks."""
    names: set[str] = set()

    def targets(node: Optional[ast.AST]) -> None:
        for child in ast.walk(node) if node is not None else ():
            if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
                names.add(child.id)

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name.partition(".")[0]) for a in node.names if a.name != "*")
            elif isinstance(node, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try)):
                targets(getattr(node, "target", None))
                for item in getattr(node, "items", []):
                    targets(item.optional_vars)
                for block in (node.body, getattr(node, "orelse", []), getattr(node, "finalbody", [])):
                    visit(block)
                for handler in getattr(node, "handlers", []):
                    if handler.name:
                        names.add(handler.name)
                    visit(handler.body)
            else:  # a simple statement: assignments, and walrus targets inside expressions
                targets(node)

    visit(tree.body)
    return names


def defines(source: str) -> set[str]:
    """The names a cell binds in the notebook's namespace (empty when Python cannot read it)."""
    tree = _parse(source)
    return _bound_at_top(tree) if tree is not None else set()


def _names_read(tree: ast.Module) -> set[str]:
    """Names a cell reads that it does not bind anywhere (at its top level, or as a function's
    parameter or local): what it needs from the namespace it runs in."""
    read, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name.partition(".")[0]) for a in node.names)
    return read - bound - PROVIDED - set(dir(builtins))


@lru_cache(maxsize=4096)
def _names(source: str) -> Optional[tuple[frozenset[str], frozenset[str]]]:
    """(The names a cell binds, the names it reads), or ``None`` when Python cannot read it. Cached:
    a class's notebooks share most of their cells."""
    tree = _parse(source)
    return None if tree is None else (frozenset(_bound_at_top(tree)), frozenset(_names_read(tree)))


def check_cell(cells: list, ex_id: str) -> Optional[int]:
    """The index of the cell that checks ``ex_id`` (``cu.exercise("01.nbytes")``), or ``None``."""
    for index, cell in enumerate(cells):
        if (isinstance(cell, dict) and cell.get("cell_type") == "code"
                and re.search(r"""['"]""" + re.escape(ex_id) + r"""['"]""", cell_source(cell))):
            return index
    return None


def own_cells(nb: dict, answers: Sequence[AnswerCell], exercises: Sequence[str]) -> list[AnswerCell]:
    """The notebook's other code cells that the answers need, as the learner's kernel had them.

    In a notebook, an answer may call a helper defined in a cell of the learner's own, and Check
    passes; so does an answer cell that lost its answer-cell marker. The grader runs those cells
    too: for each name that the answer cells read but neither they nor the setup cell
    (:data:`PROVIDED`) define, and for each exercise's answer name that no answer cell defines, the
    last cell above where it is used that defines it (else the first below), then what that cell
    needs in turn. Nothing else of the notebook runs: its demonstrations, timings and quizzes do not.

    Returns:
        :class:`AnswerCell` s with ``exercise`` :data:`OWN_CELL`, in notebook order, at most
        :data:`MAX_OWN_CELLS`.
    """
    from ..exercises import get_exercise
    cells = nb.get("cells", [])
    taken = {a.index for a in answers}
    candidates: dict[int, tuple[str, set[str], set[str]]] = {}   # index -> (source, binds, reads)
    for index, cell in enumerate(cells):
        if index in taken or not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell_source(cell)
        names = _names(source) if len(source) <= MAX_ANSWER_CHARS else None
        if names is not None:
            candidates[index] = (source, *names)
    bound_by_answers: set[str] = set()
    wanted: list[tuple[str, int]] = []   # (name, index of the cell where it is used)
    for answer in answers:
        names = _names(answer.source)
        if names is not None:
            bound_by_answers |= names[0]
            wanted += [(name, answer.index) for name in sorted(names[1])]
    for ex_id in exercises:
        name = get_exercise(ex_id).name
        if not any(a.exercise == ex_id for a in answers) or name not in bound_by_answers:
            used = check_cell(cells, ex_id)
            wanted.append((name, len(cells) if used is None else used))
    chosen: set[int] = set()
    resolved = set(bound_by_answers)
    while wanted and len(chosen) < MAX_OWN_CELLS:
        name, used_at = wanted.pop(0)
        if name in resolved:
            continue
        resolved.add(name)
        defining = [i for i, (_, binds, _) in candidates.items() if name in binds]
        if not defining:
            continue
        above = [i for i in defining if i < used_at]
        index = above[-1] if above else defining[0]
        if index not in chosen:
            chosen.add(index)
            resolved |= candidates[index][1]
            wanted += [(n, index) for n in sorted(candidates[index][2])]
    return [AnswerCell(i, OWN_CELL, candidates[i][0]) for i in sorted(chosen)]


def checked_after(nb: dict, answers: Sequence[AnswerCell], own: Sequence[AnswerCell],
                  exercises: Sequence[str]) -> list[AnswerCell]:
    """Empty cells that put each exercise's check where the notebook's Check is: after the
    learner's own cells that come before its check cell (``cu.exercise("...")``), even when they
    come after its answer cell (a helper defined below the answer). An exercise with no answer cell
    of its own, whose code sits in another exercise's answer cell (two answer cells merged into one)
    or in a cell of the learner's own, is checked after the last such cell above its check cell (else
    the first below). The worker checks an exercise right after its last cell, so an empty cell of
    that exercise moves the check (:func:`run_order` puts it after the cell whose index it shares)."""
    from ..exercises import get_exercise
    cells = nb.get("cells", [])
    moved = []
    for ex_id in exercises:
        at = check_cell(cells, ex_id)
        mine = [a.index for a in answers if a.exercise == ex_id]
        if mine:
            later = [c.index for c in own if c.index > max(mine) and (at is None or c.index < at)]
            if later:
                moved.append(AnswerCell(max(later), ex_id, ""))
            continue
        name = get_exercise(ex_id).name
        defining = [c.index for c in (*answers, *own) if name in defines(c.source)]
        above = [i for i in defining if at is None or i < at]
        if defining:
            moved.append(AnswerCell(max(above) if above else min(defining), ex_id, ""))
    return moved


def run_order(cells: Sequence[AnswerCell]) -> list[AnswerCell]:
    """The cells in notebook order; an empty cell made by :func:`checked_after` right after the cell
    whose index it shares."""
    return sorted(cells, key=lambda c: (c.index, c.source == "" and c.exercise != OWN_CELL, c.exercise))
