"""Write ``course_utils/data/cuda_device_checks.json``: which ATen operations a CUDA build checks how, per release.

PyTorch's code generator (``torchgen``, shipped in every wheel with ``native_functions.yaml``) decides which CUDA
kernels check the device of each tensor argument (``device_check`` left at ``ExactSame``: the generated
``wrapper_CUDA_*`` calls ``check_and_update_common_device`` for each tensor argument, ``out`` first) and which are
TensorIterator kernels (``structured_inherits: TensorIteratorBase``), whose device check allows CPU scalars. This
script runs each release's own ``torchgen`` over its own YAML and merges the answers, so that the simulated GPU
(:mod:`course_utils.gpusim.backend`) raises what a CUDA build of the installed release raises, without PyYAML or torchgen
at run time.

Usage::

    python scripts/device_rules.py WHEEL_OR_FOLDER...   # torch wheels, or folders holding their torchgen/

Each argument is a torch wheel (``torch-2.13.0-...whl``; only ``torchgen/`` is read from it) or a folder with a
``torchgen`` package inside. The file is replaced atomically.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "course_utils" / "data" / "cuda_device_checks.json"

#: Runs inside a subprocess with one release's torchgen first on sys.path; prints that release's tables as JSON.
_EXTRACT = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import torchgen.gen as gen
from torchgen.api.types import DispatcherSignature, NativeSignature
from torchgen.model import DeviceCheckType, DispatchKey, NativeFunctionsGroup

here = os.path.join(os.path.dirname(gen.__file__), "packaged", "ATen", "native")
parsed = gen.parse_native_yaml(os.path.join(here, "native_functions.yaml"), os.path.join(here, "tags.yaml"))
cuda = parsed.backend_indices[DispatchKey.CUDA]

def checked(f):
    return [a.name for a in (*f.func.arguments.out, *f.func.arguments.flat_positional) if a.type.is_tensor_like()]

def native_name(f):
    try:
        return NativeSignature(f.func, prefix="wrapper_CUDA_", symint=False).name()
    except TypeError:   # older torchgen: no symint argument
        return NativeSignature(f.func, prefix="wrapper_CUDA_").name()

per_argument, iterator = {}, []
for group in gen.get_grouped_native_functions(parsed.native_functions):
    structured = isinstance(group, NativeFunctionsGroup) and group.structured
    functions = list(group.functions()) if isinstance(group, NativeFunctionsGroup) else [group]
    if structured and cuda.has_kernel(group):
        if group.out.structured_inherits == "TensorIteratorBase":
            iterator += [str(f.func.name) for f in functions]
        for f in functions:
            if f.device_check == DeviceCheckType.ExactSame:
                per_argument[str(f.func.name)] = [native_name(f), checked(f)]
    elif not structured:
        for f in functions:
            if cuda.has_kernel(f) and f.device_check == DeviceCheckType.ExactSame:
                name = DispatcherSignature.from_schema(
                    f.func, prefix=f"wrapper_CUDA_{f.func.name.overload_name}_").name()
                per_argument[str(f.func.name)] = [name, checked(f)]
print(json.dumps({"per_argument": per_argument, "tensor_iterator": sorted(iterator)}))
"""


def _version(path: Path) -> str:
    match = re.search(r"torch-(\d+\.\d+(?:\.\d+)?)", path.name) or re.search(r"(\d+\.\d+\.\d+)", str(path))
    if not match:
        raise SystemExit(f"{path}: cannot tell its PyTorch release from the name")
    return match.group(1)


def _tables(source: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = source
        if source.suffix == ".whl":
            with zipfile.ZipFile(source) as wheel:
                wheel.extractall(tmp, [n for n in wheel.namelist() if n.startswith("torchgen/")])
            folder = Path(tmp)
        done = subprocess.run([sys.executable, "-c", _EXTRACT, str(folder)], capture_output=True, text=True,
                              check=False)
        if done.returncode:
            raise SystemExit(f"{source}: torchgen failed:\n{done.stderr[-2000:]}")
        return json.loads(done.stdout)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def merge(by_release: dict[str, dict]) -> dict:
    """One table: each operation's variants as ``[first release, last release, value]`` (releases as ``"2.7"``)."""
    releases = sorted(by_release, key=_key)

    def spans(values: dict[str, object]) -> list:
        out: list = []
        for release in releases:
            if release not in values:
                continue
            value = values[release]
            if out and out[-1][2] == value and out[-1][1] == _previous(release, releases):
                out[-1][1] = release
            else:
                out.append([release, release, value])
        return out

    def _previous(release: str, ordered: list[str]) -> str:
        return ordered[ordered.index(release) - 1] if ordered.index(release) else ""

    ops = sorted({op for t in by_release.values() for op in t["per_argument"]})
    per_argument = {op: spans({r: by_release[r]["per_argument"][op] for r in releases
                               if op in by_release[r]["per_argument"]}) for op in ops}
    iterators = sorted({op for t in by_release.values() for op in t["tensor_iterator"]})
    tensor_iterator = {op: [[a, b] for a, b, _ in spans({r: True for r in releases
                                                         if op in by_release[r]["tensor_iterator"]})]
                       for op in iterators}
    return {"releases": releases, "per_argument": per_argument, "tensor_iterator": tensor_iterator}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    by_release = {}
    for arg in argv:
        source = Path(arg)
        release = ".".join(_version(source).split(".")[:2])
        by_release[release] = _tables(source)
        print(f"{release}: {len(by_release[release]['per_argument'])} checked, "
              f"{len(by_release[release]['tensor_iterator'])} TensorIterator operations", file=sys.stderr)
    data = merge(by_release)
    OUT.parent.mkdir(exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=OUT.parent, delete=False, encoding="utf-8") as f:
        json.dump(data, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    os.replace(f.name, OUT)
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size:,} bytes) for {', '.join(data['releases'])}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
