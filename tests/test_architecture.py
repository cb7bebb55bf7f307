"""The package's shape: no import cycles, lower floors never import higher ones, and no module reaches
into another module's private (underscore) names. Read from the source, every import counted (also
those inside functions, and ``importlib.import_module`` of a constant name)."""
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


def _cycles() -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
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

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return groups


def _is_package_parent(a: str, b: str) -> bool:
    """A package's ``__init__`` may import its own modules, and they may import names it defines."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def test_no_import_cycles():
    cycles = [g for g in _cycles()
              if not all(_is_package_parent(a, b) or _is_package_parent(b, a) for a in g for b in g if a != b)]
    assert cycles == [], cycles


def test_the_graph_sees_imports_in_functions_and_by_name():
    assert "course_utils.classroom.processes" in GRAPH["course_utils.classroom.worker"]  # imported in a function
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
    integrity = "course_utils.classroom.integrity"
    old = ('TABLES = frozenset({"course_utils.exercises._REGISTRY",\n'
           '                    "course_utils.lessons.l03_to_device._Watched.calls", f"course_utils.store._SESSION"})\n'
           'def f():\n    """See :func:`course_utils.notebook._cells`."""\n')
    assert sorted(private_names_in_strings(integrity, old)) == [
        f"{integrity}: {name!r}" for name in ("course_utils.exercises._REGISTRY",
                                              "course_utils.lessons.l03_to_device._Watched.calls",
                                              "course_utils.notebook._cells", "course_utils.store._SESSION")]
    allowed = ('"course_utils.check.__code__", "course_utils.store.CHANGING", "course_utils.classroom.integrity._x", '
               '"course_utils.store"')
    assert private_names_in_strings(integrity, allowed) == []


#: The floors, bottom up (docs/architecture.md): a module imports only modules on its own floor or below.
FLOORS = [
    ["text", "exceptions", "files", "figures", "loading", "misconceptions", "modes", "device", "devicerules", "standin",
     "simdevice", "inventory", "results", "errors", "errors.schema", "errors.tailors", "errors.catalogue",
     "errors.explain", "devicereport",
     "devicemap", "devicemap.blocks", "devicemap.render", "devicemap.model"],   # looking at devices, plain data
    ["grading", "timing", "extension"],
    ["exercises", "quizzes", "runtime", "transfer", "reference"],
    ["lessons", "mismatch", "notebook"],
    ["store"],
    ["learner", "widgets"],
    ["classroom"],
    ["__main__", ""],                                                          # the command line, the package
]
#: The one import upward: the grader's worker gives answer cells the package as learners import it (`cu`).
UPWARD = {("course_utils.classroom.worker", "course_utils")}


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


def test_the_architecture_page_names_every_module():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [m for m in MODULES if m != "course_utils" and f"`{m.removeprefix('course_utils.')}`" not in page
               and not m.startswith(("course_utils.lessons.", "course_utils.classroom."))]
    assert missing == [], missing


def test_text_is_cut_in_one_place():
    """Cutting text to a length and adding "…" is :func:`course_utils.text.shorten`'s job; copies drift apart."""
    cut = re.compile(r"\[:\s*[\w.]+\s*-\s*1\]\s*\+\s*[\"']…")
    copies = [f"{path.relative_to(PACKAGE)}:{n}" for path in sorted(PACKAGE.rglob("*.py")) if path.name != "text.py"
              for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if cut.search(line)]
    assert copies == [], copies


#: A module longer than this is split by concern; a function longer than this into named steps.
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 800, 60


def test_no_module_or_function_grows_past_its_size():
    too_long = []
    for name, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{name}: {len(text.splitlines())} lines")
        too_long += [f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines"
                     for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert too_long == [], too_long


def test_the_public_api_lists_what_the_lessons_use():
    import json

    import course_utils as cu
    used = set()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            used |= set(re.findall(r"\bcu\.([a-z_]+)", "".join(cell["source"])))
    assert used <= set(cu.__all__), sorted(used - set(cu.__all__))
    assert all(getattr(cu, name) is not None for name in cu.__all__)
