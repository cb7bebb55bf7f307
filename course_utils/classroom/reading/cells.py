"""The cells of a submission that the grader runs, and how it reads them: the answer cells, as IPython reads them
(magics included); the static checks made before anything runs (cells that cannot be run, answers that read the
checker's frames); and the cells of the learner's own that the answers need, in the order they run."""
from __future__ import annotations

import ast
import builtins
import io
import re
import tokenize
from functools import lru_cache
from typing import NamedTuple, Optional, Sequence

from ...exceptions import InvalidSubmission
from ...notebook import cell_source, exercise_cells
from ...text import clean, shorten

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
#: (:func:`course_utils.classroom.sandbox.worker.notebook_namespace`): an answer may use them without a cell of its own
#: defining them.
PROVIDED = frozenset({"torch", "nn", "F", "cu", "course_utils", "math", "device", "display", "np", "get_ipython"})
#: At most this many cells of the learner's own are run (the grader's time limits apply to each).
MAX_OWN_CELLS = 40


def answer_cells(nb: dict) -> list[AnswerCell]:
    """The answer cells of a notebook, in notebook order: an :class:`AnswerCell` (cell index, exercise id, source) per
    code cell marked as an exercise's answer (:func:`course_utils.notebook.exercise_cells`); InvalidSubmission when
    the cells are not what nbformat 4 describes. Every marked cell is kept: an answer split over two cells keeps both
    halves, and a duplicated answer cell runs twice, as it would in the notebook."""
    try:
        return [AnswerCell(index, ex_id, cell_source(cell)) for index, cell in enumerate(nb["cells"])
                for ex_id in exercise_cells({"cells": [cell]})]
    except (AttributeError, TypeError):
        raise InvalidSubmission("the file is not a valid notebook: its cells are malformed") from None


def strip_magics(source: str) -> str:
    """An answer cell as the Python that Jupyter runs: IPython's own input transformer turns magics (``%timeit f(x)``,
    ``t = %timeit -o f(x)``, ``%%time``), shell escapes (``!pip ...``, ``files = !ls``) and help (``x?``) into calls of
    ``get_ipython()``; the rest is left as it is (``!=`` and ``%`` on continuation lines stay operators). Without
    IPython (it comes with Jupyter), lines that start with ``%`` or ``!`` become ``pass``."""
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


# --- static checks, before anything runs -----------------------------------------------------------

#: Modules with functions that hand out frames of the call stack, whose local variables include
#: the checker's expected values.
_FRAME_MODULES = frozenset({"sys", "inspect", "gc", "traceback"})
#: Names that give access to frames (or to every object, as ``gc`` does) on whatever object they are
#: read: no other Python or PyTorch API has these names.
_FRAME_NAMES = frozenset({
    "_getframe", "_getframemodulename", "_current_frames", "currentframe", "getouterframes", "getinnerframes",
    "walk_stack", "get_referrers", "get_referents", "get_objects", "settrace", "setprofile", "f_back", "f_locals",
    "f_globals", "f_builtins", "tb_frame", "gi_frame", "cr_frame", "ag_frame"})
#: Names that read frames only on the ``inspect`` module (``torch.stack`` is fine).
_INSPECT_FRAME_NAMES = frozenset({"stack", "trace"})
#: A frame API named in a string (for ``eval``, ``exec`` or ``operator.attrgetter``).
_FRAME_WORDS = re.compile(r"\b(?:" + "|".join(sorted(_FRAME_NAMES)) + r")\b|\binspect\s*\.\s*(?:stack|trace)\b")


def _frame_module(node: ast.AST, aliases: dict[str, str]) -> Optional[str]:
    """The frame module (:data:`_FRAME_MODULES`) that the expression ``node`` stands for, if any: a name it was imported
    as, ``__import__("sys")``, ``importlib.import_module("sys")`` or ``sys.modules["sys"]``."""
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
    """The first construct in the answer cell ``source`` that reads the call stack, or ``None``. Frames of the stack
    hold the checker's local variables (the expected values) while the answer is called, so an answer cell must not
    touch them: ``sys._getframe``, ``inspect.currentframe``/``stack()``, ``traceback.walk_stack``, ``gc.get_referrers``,
    ``settrace``, a frame's ``f_back``/``f_locals``, ``tb_frame``, ``gi_frame`` (:data:`_FRAME_NAMES`), under any
    alias, through ``getattr``, ``vars()``, ``__dict__`` or a star import, or named in a string (for ``eval``). The
    cell is read as IPython would run it (:func:`strip_magics`).

    Static and deliberately narrow: none of these has a place in an answer to this course. Reading the reference
    solutions is detected by what the answer *is* and *calls* while it is checked (see
    :mod:`course_utils.classroom.sandbox.worker`), not here."""
    tree = _parse(source)
    if tree is None:
        return None
    aliases = {name: name for name in _FRAME_MODULES}
    for node in ast.walk(tree):  # imports first: an alias may be used above the line that makes it
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                if top in _FRAME_MODULES:
                    aliases[alias.asname or top] = top
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (module := (node.module or "").partition(".")[0]) in _FRAME_MODULES:
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
            return repr(shorten(node.value, 60))
    return None


def why_unrunnable(source: str) -> Optional[str]:
    """Why an answer cell cannot be run at all (the feedback for its exercise), or ``None``: too long, or Python's
    own parser gives up on it (nested too deeply, a null character). A plain syntax error is left to the worker,
    which reports its line."""
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
    """The notebook's other code cells that the answers need, as the learner's kernel had them: :class:`AnswerCell` s
    with ``exercise`` :data:`OWN_CELL`, in notebook order, at most :data:`MAX_OWN_CELLS` (in a notebook, an answer may
    call a helper defined in a cell of the learner's own, and Check passes). For each name that the answer cells
    read but neither they nor the setup cell (:data:`PROVIDED`) define, and for each exercise's answer name that no
    answer cell defines, the last cell above where it is used that defines it (else the first below), then what that
    cell needs in turn. Nothing else of the notebook runs: its demonstrations, timings and quizzes do not."""
    from ...exercises import get_exercise
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
    """Empty cells that put each exercise's check where the notebook's Check is: after the learner's own cells that come
    before its check cell (``cu.exercise("...")``), even when they come after its answer cell (a helper defined below
    the answer). An exercise with no answer cell of its own, whose code sits in another exercise's answer cell (two
    answer cells merged into one) or in a cell of the learner's own, is checked after the last such cell above its check
    cell (else the first below). The worker checks an exercise right after its last cell, so an empty cell of that
    exercise moves the check (:func:`run_order` puts it after the cell whose index it shares)."""
    from ...exercises import get_exercise
    cells, moved = nb.get("cells", []), []
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

