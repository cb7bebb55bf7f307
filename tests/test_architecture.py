"""The package's shape: no import cycles, lower floors never import higher ones, and no module reaches
into another module's private (underscore) names. Read from the source, every import counted (also
those inside functions, and ``importlib.import_module`` of a constant name). And its size and plainness: no module
over 600 lines, no function over 60, the package under 18,000; the exceptions in one module; text cut in one
place."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from nbtools import ROOT

PACKAGE = ROOT / "course_utils"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _package_of(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(module).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _course_module(name: str) -> str | None:
    """The course module ``name`` is, or is inside (``course_utils.x.f`` -> ``course_utils.x``)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports(module: str) -> dict[str, set[str]]:
    """The course modules ``module`` imports -> the names it takes from each (empty: the module itself)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(module, node)
            for alias in node.names:
                sub = _course_module(f"{target}.{alias.name}")
                if sub and sub != _course_module(target):   # `from . import x`: the module x
                    found.setdefault(sub, set())
                elif _course_module(target):
                    found.setdefault(_course_module(target), set()).add(alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _course_module(alias.name):
                    found.setdefault(_course_module(alias.name), set())
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            name = node.args[0].value
            if name.startswith("."):
                package = node.args[1].id if len(node.args) > 1 and isinstance(node.args[1], ast.Name) else ""
                name = _package_of(module) + name if package in ("__name__", "__package__", "") else name
            if _course_module(name):
                found.setdefault(_course_module(name), set())
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" and node.args
              and isinstance(node.args[0], ast.JoinedStr) and node.args[0].values
              and isinstance(node.args[0].values[0], ast.FormattedValue)
              and getattr(node.args[0].values[0].value, "id", "") == "__name__"):
            for sub in MODULES:   # f"{__name__}.{name}": any module here but `__main__` (run, not imported)
                if sub.startswith(_package_of(module) + ".") and not sub.endswith(".__main__"):
                    found.setdefault(sub, set())
    found.pop(module, None)
    return found


GRAPH = {m: set(imports(m)) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module of ``graph`` (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def _is_package_parent(a: str, b: str) -> bool:
    """A package's ``__init__`` may import its own modules, and they may import names it defines."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def test_no_import_cycles():
    """The deliberate upward imports (:data:`UPWARD`) left out: the worker imports the package as learners do, and the
    package imports any of its modules on first use, the fork server that imports the worker too."""
    graph = {m: {t for t in targets if (m, t) not in UPWARD} for m, targets in GRAPH.items()}
    cycles = [g for g in _cycles(graph)
              if not all(_is_package_parent(a, b) or _is_package_parent(b, a) for a in g for b in g if a != b)]
    assert cycles == [], cycles


def test_the_graph_sees_imports_in_functions_and_by_name():
    assert "course_utils.classroom.sandbox.processes" in GRAPH["course_utils.classroom.sandbox.worker"]  # imported in a function
    assert "course_utils.device" in GRAPH["course_utils"]


def test_no_module_uses_another_modules_private_names():
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}   # local name -> the course module it is
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _absolute(module, node)
                for alias in node.names:
                    sub = _course_module(f"{target}.{alias.name}")
                    if sub and sub != _course_module(target):
                        aliases[alias.asname or alias.name] = sub
                    elif (_course_module(target) and _course_module(target) != module
                          and alias.name.startswith("_") and not alias.name.startswith("__")):
                        found.append(f"{module}: from {target} import {alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if _course_module(alias.name) and alias.asname:
                        aliases[alias.asname] = _course_module(alias.name)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and aliases.get(node.value.id, module) != module):
                found.append(f"{module}: {node.value.id}.{node.attr}")
    assert found == [], found


_DOTTED = re.compile(r"\bcourse_utils(?:\.\w+)+")


def private_names_in_strings(module: str, source: str) -> list[str]:
    """The other course modules' private names that the string constants of ``module`` (its ``source``) spell out,
    e.g. ``"course_utils.store._SESSION"``: a rename there would silently change what the string means."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for dotted in _DOTTED.findall(node.value):
                owner = _course_module(dotted)
                parts = dotted[len(owner or dotted):].split(".")[1:]
                if owner not in (None, module) and any(p.startswith("_") and not p.startswith("__") for p in parts):
                    found.append(f"{module}: {dotted!r}")
    return found


def test_no_module_names_another_modules_private_names_in_a_string():
    """What a module lets others see of its state, it declares under a public name (as ``store.CHANGING``)."""
    found = [hit for module, path in MODULES.items()
             for hit in private_names_in_strings(module, path.read_text(encoding="utf-8"))]
    assert found == [], found


def test_the_string_check_sees_private_names_spelled_out():
    integrity = "course_utils.classroom.sandbox.integrity"
    old = ('TABLES = frozenset({"course_utils.exercises._REGISTRY",\n'
           '                    "course_utils.lessons.l03_to_device._Watched.calls", f"course_utils.store._SESSION"})\n'
           'def f():\n    """See :func:`course_utils.notebook._cells`."""\n')
    assert sorted(private_names_in_strings(integrity, old)) == [
        f"{integrity}: {name!r}" for name in ("course_utils.exercises._REGISTRY",
                                              "course_utils.lessons.l03_to_device._Watched.calls",
                                              "course_utils.notebook._cells", "course_utils.store._SESSION")]
    allowed = ('"course_utils.check.__code__", "course_utils.store.CHANGING", "course_utils.classroom.sandbox.integrity._x", '
               '"course_utils.store"')
    assert private_names_in_strings(integrity, allowed) == []


#: The floors, bottom up (docs/architecture.md): a module imports only modules on its own floor or below.
FLOORS = [
    ["text", "exceptions", "syllabus", "files", "figures", "loading", "misconceptions", "modes", "device",
     "gpusim", "inventory", "results", "errors", "errors.schema", "errors.tailors",
     "errors.mixed_devices", "errors.catalogue", "errors.explain", "devicereport", "devicefixes",
     "devicemap", "devicemap.blocks", "devicemap.render", "devicemap.model"],   # looking at devices, plain data
    ["grading", "timing", "extension"],
    ["exercises", "checking", "publiccheck", "quizzes", "runtime", "transfer", "reference"],
    ["lessons", "mismatch", "notebook"],
    ["store"],
    ["learner", "widgets"],
    ["classroom"],
    ["__main__", ""],                                                          # the command line, the package
]
#: The one import upward: the grader's worker gives answer cells the package as learners import it (`cu`).
UPWARD = {("course_utils.classroom.sandbox.worker", "course_utils")}


def floor_of(module: str) -> int:
    name = module.removeprefix("course_utils").removeprefix(".")
    for level, names in enumerate(FLOORS):
        if any(name == n or (n and name.startswith(n + ".")) for n in names):
            return level
    raise AssertionError(f"{module} is on no floor: add it to FLOORS and to docs/architecture.md")


def test_every_module_has_a_floor_and_imports_only_downwards():
    upward = [(m, t) for m in MODULES for t in GRAPH[m]
              if floor_of(t) > floor_of(m) and (m, t) not in UPWARD]
    assert upward == [], upward


#: The rooms of ``classroom``, and the modules of the sandbox that the rest of it may use: the grader starts runs and
#: reads their messages; nothing else reaches into where learner code runs.
ROOMS = ("reading", "sandbox", "writing")
SANDBOX_DOORS = {"course_utils.classroom.sandbox.runs", "course_utils.classroom.sandbox.messages"}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "classroom" and parts[2] in ROOMS else ""


def test_the_classroom_keeps_its_rooms():
    """Reading a class runs nothing and writes nothing; what is written for the teacher never runs learner code; the
    sandbox reads cells but writes no report; outside the sandbox only its doors (runs, messages) are used."""
    rooms = {m: _room(m) for m in MODULES if m.startswith("course_utils.classroom.")}
    assert {r for r in rooms.values()} == {"", *ROOMS}
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for module, room in rooms.items():
        used = {t for t in GRAPH[module] if t.startswith("course_utils.classroom.")}
        assert not (room == "reading" and {_room(t) for t in used} & {"sandbox", "writing"}), (module, used)
        assert not (room == "writing" and {_room(t) for t in used} & {"sandbox"}), (module, used)
        assert not (room == "sandbox" and {_room(t) for t in used} & {"writing"}), (module, used)
        assert room == "sandbox" or {t for t in used if _room(t) == "sandbox"} <= SANDBOX_DOORS, (module, used)
        if room and not module.endswith(f".{room}"):
            assert f"`{module.rsplit('.', 1)[1]}`" in page, module   # the page names each room's modules


def test_the_architecture_page_names_every_module():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [m for m in MODULES if m != "course_utils" and f"`{m.removeprefix('course_utils.')}`" not in page
               and not m.startswith(("course_utils.lessons.", "course_utils.classroom."))]
    assert missing == [], missing


_ELLIPSES = ("…", "...")


def _is_cut(node: ast.AST) -> bool:
    """``text[:n]``, ``text[: n - 1]``: the first characters of something, to a length."""
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.lower is None
            and node.slice.upper is not None and node.slice.step is None)


def _starts_with_ellipsis(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(_ELLIPSES)


def text_cuts(source: str) -> list[int]:
    """The lines of ``source`` that cut text to a length and mark the cut with an ellipsis, :func:`course_utils.text.
    shorten`'s job: ``s[:n] + "…"``, ``s[: n - 3] + "..."``, ``f"{s[:n]}…"``, or ``textwrap.shorten(...)``. A list
    elided after its first items (``", ".join(names[:3]) + ", ..."``) cuts no text and is not one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = node.left.right if isinstance(node.left, ast.BinOp) else node.left
            if _is_cut(left) and _starts_with_ellipsis(node.right):
                found.append(node.lineno)
        elif isinstance(node, ast.JoinedStr):
            parts = node.values
            if any(isinstance(a, ast.FormattedValue) and _is_cut(a.value) and _starts_with_ellipsis(b)
                   for a, b in zip(parts, parts[1:])):
                found.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "shorten"
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "textwrap"):
            found.append(node.lineno)
    return sorted(set(found))


def test_text_is_cut_in_one_place():
    """Cutting text to a length and adding "…" is :func:`course_utils.text.shorten`'s job; copies drift apart."""
    copies = [f"{path.relative_to(PACKAGE)}:{line}" for path in sorted(PACKAGE.rglob("*.py")) if path.name != "text.py"
              for line in text_cuts(path.read_text(encoding="utf-8"))]
    assert copies == [], copies


def test_the_cut_check_sees_every_form_of_a_cut():
    cuts = ('a = text[: limit - 1] + "…"\n'
            'b = repr(value[:57] + "...")\n'
            'c = "(" + name[:10] + "…" + ")"\n'
            'd = f"{message[:80]}… (more)"\n'
            'import textwrap\ne = textwrap.shorten(text, 40)\n')
    assert text_cuts(cuts) == [1, 2, 3, 4, 6]
    not_cuts = ('a = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")\n'
                'b = text[2:] + "…"\n'
                'c = f"{safe_repr(x[:4].tolist())}..."\n'
                'd = left + "…" + right\n'
                'e = shorten(text, 40)\n')
    assert text_cuts(not_cuts) == []


#: A module longer than this is split by concern; a function longer than this into named steps.
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 600, 60
#: The whole package, every ``.py`` file's lines together: what it may grow to.
MAX_PACKAGE_LINES = 18_000


def _lines(path: Path) -> int:
    """Lines as ``wc -l`` counts them."""
    return path.read_text(encoding="utf-8").count("\n")


def test_no_module_grows_past_its_size():
    too_long = [f"{name}: {_lines(path)} lines" for name, path in MODULES.items() if _lines(path) > MAX_MODULE_LINES]
    assert too_long == [], too_long


def test_no_function_grows_past_its_size():
    too_long = [f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines" for name, path in MODULES.items()
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert too_long == [], too_long


def test_the_package_stays_small():
    """The package as a whole, as ``find course_utils -name '*.py' | xargs cat | wc -l`` counts it."""
    total = sum(_lines(path) for path in PACKAGE.rglob("*.py"))
    assert total < MAX_PACKAGE_LINES, f"course_utils has {total:,} lines (the limit is {MAX_PACKAGE_LINES:,})"


def exception_classes(sources: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the public exception classes its source defines: classes derived, at any remove, from a built-in
    exception (read from the source: a base is known by its name)."""
    import builtins
    known = {name for name, value in vars(builtins).items() if isinstance(value, type)
             and issubclass(value, BaseException)}
    classes = [(module, node) for module, source in sources.items() for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.ClassDef)]
    grew = True
    while grew:   # a class derived from one found on the last pass is one too
        grew = False
        for _, node in classes:
            if node.name not in known and any(getattr(b, "attr", getattr(b, "id", "")) in known for b in node.bases):
                known.add(node.name)
                grew = True
    found: dict[str, set[str]] = {}
    for module, node in classes:
        if node.name in known and not node.name.startswith("_"):
            found.setdefault(module, set()).add(node.name)
    return found


#: Public exception classes defined outside :mod:`course_utils.exceptions`, by module, until they move there.
EXCEPTIONS_ELSEWHERE: dict = {}


def test_the_course_exceptions_are_one_family_in_one_module():
    """Every public exception class is in :mod:`course_utils.exceptions` (a private one may stay beside the code that
    raises and catches it, as lesson 07's capstone's)."""
    found = exception_classes({m: p.read_text(encoding="utf-8") for m, p in MODULES.items()})
    assert found.pop("course_utils.exceptions") >= {"CourseError", "UnknownId", "InvalidSubmission", "ReportError"}
    assert found == EXCEPTIONS_ELSEWHERE


def test_the_exception_check_sees_subclasses_of_subclasses():
    sources = {"a": "class Bad(ValueError): pass\nclass Worse(Bad): pass\nclass _Quiet(Exception): pass\n",
               "b": "import a\nclass Worst(a.Worse): pass\nclass Fine: pass\n"}
    assert exception_classes(sources) == {"a": {"Bad", "Worse"}, "b": {"Worst"}}


def test_the_public_api_lists_what_the_lessons_use():
    import json

    import course_utils as cu
    used = set()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            used |= set(re.findall(r"\bcu\.([a-z_]+)", "".join(cell["source"])))
    assert used <= set(cu.__all__), sorted(used - set(cu.__all__))
    assert all(getattr(cu, name) is not None for name in cu.__all__)
