"""Build the course package for students of an assessed class: the reference solutions' source is not in it.

    python scripts/student_wheel.py --out dist/

writes ``dist/course_utils-<version>-cp<XY>-none-any.whl``, the package as ``pip install`` would build it, except:

- each lesson module (``course_utils/lessons/l*.py``, where the reference solutions and their checks live) is
  shipped compiled, without its source: ``cu.solution``, ``inspect.getsource`` and a search of the installed files
  find no solution, and the last (most telling) hint of each exercise is not in it either;
- it always runs in assessed mode (``course_utils/data/assessed-build.json``), whatever ``COURSE_MODE`` says: no
  solutions, not the last hint, feedback without the code to write.

Check works as in the full package (the same checks, compiled), so Check and ``grade`` agree; grade with the full
package (the teacher's installation). Compiled code is tied to one Python version: run this script with the Python
the students use (the wheel's tag, e.g. ``cp311``, makes pip refuse it on another). What it cannot do: a determined
student can disassemble compiled code, so the checks' logic, and the reference solutions' operations, can still be
worked out from it; the source, the solutions as text and the last hints are gone.
"""
from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import importlib.util
import json
import marshal
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The lesson modules shipped without source.
LESSON_MODULE = re.compile(r"^course_utils/lessons/l\d\d_\w+\.py$")
#: The marker that makes an installation run in assessed mode (read by course_utils.modes).
MARKER = "course_utils/data/assessed-build.json"
#: What stands in for each exercise's last hint (assessed mode never shows it).
WITHHELD_HINT = "(Withheld in assessed mode.)"


def _without_last_hints(tree: ast.Module) -> ast.Module:
    """Replace the last hint of every ``grader(..., hints=(...))`` call with :data:`WITHHELD_HINT`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "grader":
            for keyword in node.keywords:
                if keyword.arg == "hints" and isinstance(keyword.value, (ast.Tuple, ast.List)) \
                        and len(keyword.value.elts) > 1:
                    keyword.value.elts[-1] = ast.Constant(WITHHELD_HINT)
    return ast.fix_missing_locations(tree)


def compiled(source: bytes, name: str) -> bytes:
    """A sourceless ``.pyc`` of a lesson module (an unchecked hash-based one: no source to compare with)."""
    tree = _without_last_hints(ast.parse(source, filename=name))
    code = compile(tree, name, "exec", dont_inherit=True)
    flags = (1).to_bytes(4, "little")   # hash-based, not checked against a source
    return importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source) + marshal.dumps(code)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _built_wheel(folder: str) -> Path:
    """The package's wheel, as pip builds it, in ``folder``."""
    command = [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", folder]
    done = subprocess.run(command + ["--no-build-isolation"], capture_output=True, text=True)
    if done.returncode != 0:   # no setuptools here: let pip fetch it
        subprocess.run(command, check=True, capture_output=True, text=True)
    return next(Path(folder).glob("course_utils-*.whl"))


def student_wheel(out: Path) -> Path:
    """Write the students' wheel into the folder ``out`` (atomically) and return its path."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    with tempfile.TemporaryDirectory() as tmp:
        source = _built_wheel(tmp)
        version = source.name.split("-")[1]
        files: dict[str, bytes] = {}
        record = ""
        with zipfile.ZipFile(source) as whl:
            for name in whl.namelist():
                data = whl.read(name)
                if LESSON_MODULE.match(name):
                    files[name[:-3] + ".pyc"] = compiled(data, name)
                elif name.endswith(".dist-info/WHEEL"):
                    files[name] = re.sub(rb"(?m)^Tag: .*$", f"Tag: {tag}-none-any".encode(), data)
                elif name.endswith(".dist-info/RECORD"):
                    record = name   # written again below, for the files as they are now
                else:
                    files[name] = data
        files[MARKER] = json.dumps({"assessed": True, "version": version, "python": tag}).encode()
        lines = [_record_line(n, d) for n, d in files.items()] + [f"{record},,"]
        files[record] = ("\n".join(lines) + "\n").encode()
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"course_utils-{version}-{tag}-none-any.whl"
        fd, partial = tempfile.mkstemp(dir=out, prefix=target.name, suffix=".partial")
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as whl:
            for name, data in files.items():
                whl.writestr(name, data)
        os.replace(partial, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="dist", help="folder to write the wheel into (default: dist)")
    args = parser.parse_args(argv)
    target = student_wheel(Path(args.out))
    print(f"Wrote {target}: the course for an assessed class (no solution source, assessed mode always on). "
          f"Students: pip install {target.name}; grading: the full package (python -m course_utils grade "
          "--assessed).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
