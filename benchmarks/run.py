#!/usr/bin/env python3
"""Measure the course on this machine and print a Markdown report.

    python benchmarks/run.py                      # everything (a few minutes)
    python benchmarks/run.py --only import timing # some sections
    python benchmarks/run.py --write docs/benchmarks.md

Sections:
  notebooks  cell execution time of every notebook, unsolved and solved (kernel start excluded)
  timing     course_utils.time_it against torch.utils.benchmark, same operations, same run
  copy       lesson 07's host copy bandwidth against NumPy's large-array copy
  import     cost of `import course_utils` on top of `import torch`
  errors     cu.explain_error on 100 kB and 1 MB pasted tracebacks (budget: 50 ms for 100 kB)
  memory     peak resident memory of a kernel running each notebook (for sizing JupyterHub users)
  grading    a class graded with `python -m course_utils grade`: STUDENTS x every lesson, solved,
             --jobs 1 and 2 (set COURSE_BENCH_STUDENTS; default 100)
  gpu        the reference run on a real GPU that lessons 02 and 07 show (from its data file; no measuring here)
  simclock   the simulated GPU's modeled clock against that run, size by size (its error table)
  report     `python -m course_utils report` on a generated class of 1,000 students x every lesson (its CSV,
             and the same class as Gradescope results), whole command, HTML and JSON
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tests_on_path() -> None:
    """Let a section import the tests' helpers (``tests/nbtools.py``, ``tests/classroom/...``)."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))


BUDGET_S = 30.0


def notebooks() -> list[str]:
    """Cells' wall time, first execute_input to last execute_reply, from nbclient's timing records."""
    import nbformat
    from nbclient import NotebookClient

    _tests_on_path()
    from nbtools import with_solutions

    rows = ["| notebook | unsolved (s) | solved (s) | within 30 s |", "|---|---:|---:|:-:|"]
    env_file = ROOT / "benchmarks" / ".progress.json"
    os.environ["COURSE_PROGRESS_FILE"] = str(env_file)
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        times = []
        for solved in (False, True):
            nb = nbformat.read(path, as_version=4)
            if solved:
                nb = nbformat.from_dict(with_solutions(nb))
            NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=True,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
            stamps = [c.metadata.get("execution", {}) for c in nb.cells if c.cell_type == "code"]
            start = min(s["iopub.execute_input"] for s in stamps if "iopub.execute_input" in s)
            end = max(s["shell.execute_reply"] for s in stamps if "shell.execute_reply" in s)
            times.append((_ts(end) - _ts(start)))
        ok = "yes" if max(times) < BUDGET_S else "**no**"
        rows.append(f"| {path.name} | {times[0]:.1f} | {times[1]:.1f} | {ok} |")
    env_file.unlink(missing_ok=True)
    return rows


def timing(repeats: int = 7) -> list[str]:
    """Median of alternating repeats: the helper vs a bare benchmark.Timer, same threads."""
    import torch
    import torch.utils.benchmark as benchmark

    from course_utils import time_it

    cases = {
        "matmul 256x256": (torch.mm, (torch.randn(256, 256), torch.randn(256, 256))),
        "matmul 1024x1024": (torch.mm, (torch.randn(1024, 1024), torch.randn(1024, 1024))),
        "add 1M floats": (torch.add, (torch.randn(2**20), torch.randn(2**20))),
        "copy 64 MB": (torch.Tensor.clone, (torch.empty(2**24),)),
    }
    rows = ["| operation | helper median | benchmark.Timer median | difference |", "|---|---:|---:|---:|"]
    for name, (fn, args) in cases.items():
        ours, theirs = [], []
        for _ in range(repeats):
            ours.append(time_it(fn, *args, min_run_time=0.1).median)
            timer = benchmark.Timer("fn(*args)", globals={"fn": fn, "args": args},
                                    num_threads=torch.get_num_threads())
            theirs.append(timer.blocked_autorange(min_run_time=0.1).median)
        a, b = statistics.median(ours), statistics.median(theirs)
        rows.append(f"| {name} | {_fmt(a)} | {_fmt(b)} | {100 * (a - b) / b:+.1f} % |")
    return rows


def copy(repeats: int = 5) -> list[str]:
    """Host copy bandwidth as lesson 07 measures it (``transfer.copy_sweep``, CPU to CPU, one
    thread), against NumPy's ``copyto`` of the same bytes (single-threaded too): the machine's
    practical limit. Medians of alternating repeats."""
    import numpy as np

    from course_utils import transfer

    rows = ["| bytes per copy | lesson 07 (GB/s) | NumPy copyto (GB/s) | ratio |", "|---:|---:|---:|---:|"]
    for nbytes in (16 * 2**20, 64 * 2**20):
        lesson, numpy_rates = [], []
        src, dst = np.ones(nbytes, dtype=np.uint8), np.empty(nbytes, dtype=np.uint8)
        for _ in range(repeats):
            lesson.append(transfer.copy_sweep([nbytes], "cpu", "cpu", min_time=0.2).gbps[0])
            np.copyto(dst, src)  # warm
            start, count = time.perf_counter(), 0
            while time.perf_counter() - start < 0.2:
                np.copyto(dst, src)
                count += 1
            numpy_rates.append(nbytes * count / (time.perf_counter() - start) / 1e9)
        a, b = statistics.median(lesson), statistics.median(numpy_rates)
        rows.append(f"| {nbytes // 2**20} MiB | {a:.2f} | {b:.2f} | {a / b:.2f} |")
    return rows


def import_cost(repeats: int = 7) -> list[str]:
    """Fresh interpreters: `import torch` alone vs `import torch; import course_utils`."""
    code = ("import time; t = time.perf_counter(); import torch; a = time.perf_counter(); "
            "import course_utils; b = time.perf_counter(); print(a - t, b - a)")
    extra = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        extra.append(float(out.stdout.split()[1]))
    heavy = subprocess.run([sys.executable, "-c", "import torch, sys, course_utils; "
                            "print([m for m in ('matplotlib', 'ipywidgets', 'torch.utils.benchmark') if m in sys.modules])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    return ["| measurement | value |", "|---|---:|",
            f"| `import course_utils` after `import torch` (median of {repeats}) | {statistics.median(extra):.3f} s |",
            f"| heavy modules loaded by it | {heavy} |"]


def errors(repeats: int = 21) -> list[str]:
    """`cu.explain_error` on long pasted tracebacks: median of repeats, against a 50 ms budget."""
    from course_utils.errors import explain_error

    frame = '  File "/home/learner/project/train.py", line 42, in forward\n    h = self.layers[i](h)\n'
    message = ("RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, different "
               "from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)")
    cases = {"100 kB traceback, device error": frame * (100_000 // len(frame)) + message,
             "100 kB traceback, no device error": frame * (100_000 // len(frame)) + "ValueError: bad value",
             "1 MB traceback, device error": frame * (1_000_000 // len(frame)) + message}
    rows = ["| input | median | within 50 ms |", "|---|---:|:-:|"]
    for name, text in cases.items():
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            explain_error(text)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        rows.append(f"| {name} | {_fmt(median)} | {'yes' if median < 0.05 else '**no**'} |")
    return rows


def simdevice(repeats: int = 9) -> list[str]:
    """The simulated GPU's cost: lessons 02, 07 and 08's work on ``simgpu:0`` tensors against the same work on plain
    CPU tensors (the fastest of alternating repeats, one thread). The course times the CPU tensors behind the
    simulated ones, so this is the cost of running a lesson's untimed cells, not a measurement a learner sees."""
    import torch

    from course_utils.gpusim import backend as sim

    if not sim.available():
        return [f"PyTorch {torch.__version__} cannot register the simulated GPU (2.10 and later can)."]
    sim.enable()

    def work(device: str) -> dict:
        mats = [(torch.randn(n, n, device=device), torch.randn(n, n, device=device)) for n in (16, 64, 256)]
        copies = [torch.ones(n) for n in (2**14, 2**18, 2**20)]
        net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).to(device)
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        batch, labels = torch.randn(16, 32, device=device), torch.randint(0, 10, (16,), device=device)

        def matmuls() -> None:
            for a, b in mats:
                for _ in range(10):
                    a @ b

        def host_to_device() -> None:
            for c in copies:
                c.to(device, copy=True)

        def training_steps() -> None:
            for _ in range(4):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(batch), labels).backward()
                opt.step()

        return {"02: n×n matmuls, n = 16, 64, 256": matmuls,
                "07: host → device copies, 64 kB to 4 MiB": host_to_device,
                "08: 4 training steps, a small MLP with Adam": training_steps}

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    cpu, simulated = work("cpu"), work("simgpu:0")
    steps = "08: 4 training steps, a small MLP with Adam"
    simulated["the same steps on a bare wrapper (the floor)"] = _bare_training_steps()
    cpu["the same steps on a bare wrapper (the floor)"] = cpu[steps]
    rows = ["| work | CPU tensors (per loop) | simgpu:0 / CPU |", "|---|---:|---:|"]
    for name in cpu:
        plain, wrapped = [], []
        for _ in range(repeats):
            plain.append(_per_call(cpu[name]))
            wrapped.append(_per_call(simulated[name]))
        rows.append(f"| {name} | {_fmt(min(plain))} | {min(wrapped) / min(plain):.2f} |")
    torch.set_num_threads(threads)
    return rows + ["", "Each operation on the simulated GPU runs on the CPU tensors behind it, after a device check "
                       "and a Python dispatch: large work costs the same, many tiny operations more. The floor is a "
                       "tensor subclass whose dispatch only unwraps, runs and rewraps (no device, no checks, no "
                       "clock): what any device written in Python pays."]


def _bare_training_steps():
    """The simdevice benchmark's training steps on a bare wrapper subclass (the same model, Adam's multi-tensor
    path): the cost of PyTorch's Python dispatch alone, which any device written in Python pays."""
    import importlib

    import torch

    class Bare(torch.Tensor):
        @staticmethod
        def __new__(cls, elem):
            made = torch.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(), dtype=elem.dtype,
                                                       device=elem.device, requires_grad=elem.requires_grad)
            made.elem = elem
            return made

        __torch_function__ = torch._C._disabled_torch_function_impl

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):   # the least Python a dispatch can do
            def unwrap(x):
                if type(x) in (list, tuple):
                    return type(x)(unwrap(item) for item in x)
                return x.elem if isinstance(x, Bare) else x

            out = func(*unwrap(args), **{key: unwrap(value) for key, value in (kwargs or {}).items()})
            if type(out) in (list, tuple):
                return type(out)(Bare(x) if isinstance(x, torch.Tensor) else x for x in out)
            return Bare(out) if isinstance(out, torch.Tensor) else out

    for module in ("torch.optim.optimizer", "torch.utils._foreach_utils"):
        importlib.import_module(module)._foreach_supported_types.append(Bare)
    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    for layer in (net[0], net[2]):
        for name, value in list(layer._parameters.items()):
            layer._parameters[name] = torch.nn.Parameter(Bare(value.detach()))
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    batch, labels = Bare(torch.randn(16, 32)), Bare(torch.randint(0, 10, (16,)))

    def training_steps() -> None:
        for _ in range(4):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(batch), labels).backward()
            opt.step()

    return training_steps


def _per_call(fn, min_time: float = 0.03) -> float:
    """Seconds per call of ``fn``: one warm-up call, then calls until ``min_time`` has passed."""
    fn()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        fn()
        count += 1
    return (time.perf_counter() - start) / count


def memory() -> list[str]:
    """Peak resident memory (VmHWM) of the kernel after running each notebook, solved, top to bottom."""
    import nbformat
    from nbclient import NotebookClient

    _tests_on_path()
    from nbtools import with_solutions

    rows = ["| notebook | kernel peak memory (MiB) |", "|---|---:|"]
    os.environ["COURSE_PROGRESS_FILE"] = str(ROOT / "benchmarks" / ".progress.json")
    peaks = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.from_dict(with_solutions(nbformat.read(path, as_version=4)))
        client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}})
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            pid = client.km.provisioner.process.pid
            status = Path(f"/proc/{pid}/status").read_text()
        peak = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))) / 1024
        peaks.append(peak)
        rows.append(f"| {path.name} | {peak:.0f} |")
    (ROOT / "benchmarks" / ".progress.json").unlink(missing_ok=True)
    rows += ["", f"The largest: {max(peaks):.0f} MiB. A kernel keeps what it allocated: one that runs several lessons "
                 "in a row can go above these figures, so shut a lesson's kernel down before starting the next."]
    return rows


def grading() -> list[str]:
    """A class of honest (solved) submissions, every lesson, graded with --jobs 1 and --jobs 2."""
    import json
    import resource
    import tempfile

    _tests_on_path()
    from nbtools import with_solutions

    students = int(os.environ.get("COURSE_BENCH_STUDENTS", "100"))
    paths = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    rows = ["| students × lessons | submissions | --jobs | wall time (s) | submissions/s | full marks |",
            "|---|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            text = json.dumps(with_solutions(json.loads(path.read_text(encoding="utf-8"))))
            for s in range(students):
                folder = Path(tmp, "class", f"student{s:03d}")
                folder.mkdir(parents=True, exist_ok=True)
                (folder / path.name).write_text(text, encoding="utf-8")
        total = students * len(paths)
        for jobs in (1, 2):
            out = Path(tmp, f"grades{jobs}.csv")
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "course_utils", "grade", str(Path(tmp, "class")), "--out", str(out),
                            "--jobs", str(jobs), "--no-progress"], check=True, capture_output=True, cwd=tmp)
            elapsed = time.perf_counter() - start
            lines = [line.split(",") for line in out.read_text().splitlines()[1:] if ",TOTAL," in line]
            full = sum(1 for f in lines if f[2] == f[3])
            rows.append(f"| {students} × {len(paths)} | {total} | {jobs} | {elapsed:.0f} | {total / elapsed:.1f} | "
                        f"{full}/{total} |")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    rows += ["", f"Largest single process the runs started (the grader, its fork server or a worker): "
                 f"{peak:.0f} MiB resident."]
    return rows


def report(students: int = 1000, repeats: int = 3) -> list[str]:
    """The class report on a generated class (tests/classroom/generated_class.py): the whole command, best of
    ``repeats``, from a CSV and from a folder of Gradescope results.json files."""
    import tempfile

    _tests_on_path()
    from classroom.generated_class import generate
    from course_utils.classroom.writing.reports import write_gradescope

    klass = generate(students)
    rows = ["| input | rows | format | wall time (s), best of 3 | report size |", "|---|---:|---|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp, "grades.csv")
        csv_path.write_text(klass.csv(), encoding="utf-8")
        write_gradescope(klass.grades, str(Path(tmp, "gradescope")))
        count = len(klass.csv().splitlines()) - 1
        for label, source in (("CSV", csv_path), ("Gradescope folder", Path(tmp, "gradescope"))):
            for fmt in ("html", "json"):
                out = Path(tmp, f"report.{fmt}")
                best = math.inf
                for _ in range(repeats):
                    start = time.perf_counter()
                    subprocess.run([sys.executable, "-m", "course_utils", "report", str(source), "--out", str(out)],
                                   check=True, capture_output=True, cwd=tmp)
                    best = min(best, time.perf_counter() - start)
                rows.append(f"| {label}, {students} students × {len(klass.grades) // students} lessons | {count} | "
                            f"{fmt} | {best:.2f} | {out.stat().st_size / 1024:.0f} KiB |")
        from course_utils.classroom.writing import class_report
        inside = []
        for source in (csv_path, Path(tmp, "gradescope")):
            start = time.perf_counter()
            class_report.render_html(class_report.summarize(class_report.read_rows([str(source)])))
            inside.append(time.perf_counter() - start)
    rows += ["", "The wall time includes starting Python and importing PyTorch and the course (see `import`); reading, "
                 f"counting and writing the HTML alone take {inside[0]:.2f} s from the CSV and {inside[1]:.2f} s from "
                 "the Gradescope folder."]
    return rows


def gpu() -> list[str]:
    """The reference run on a real GPU that lessons 02 and 07 show (read from its data; measured elsewhere by
    ``scripts/gpu_reference.py``)."""
    from course_utils import reference

    r = reference.load()
    rows = [f"Measured once with `scripts/gpu_reference.py` on {r.gpu} ({r.versions}; {r.date}), host CPU {r.cpu}; "
            "the data is `course_utils/data/reference_gpu.json`. Lesson 02's matmul sweep (float32, medians of "
            "`cu.time_it`) and lesson 07's copy sweeps (one CPU thread, buffers made before the clock starts).", "",
            "| n | GPU (GFLOP/s) | host CPU, all threads (GFLOP/s) |", "|---:|---:|---:|"]
    g, c = r.gflops(), r.gflops("cpu")
    rows += [f"| {n} | {g[n]:,.0f} | {f'{c[n]:,.0f}' if n in c else '-'} |" for n in sorted(g)]
    rows += ["", f"The GPU beat the host's CPU from n = {r.crossover()} on. A call of `x + x` on 1 to 10,000 elements "
             f"took {min(r.add_seconds.values()) * 1e6:.1f} to {max(r.add_seconds.values()) * 1e6:.1f} µs on the GPU, "
             "synchronised: the fixed cost of a call.", "",
             "| copy | latency (fit) | bandwidth (fit) | largest copy |", "|---|---:|---:|---:|"]
    rows += [f"| {s.label.split(' (')[0]} | {f.latency_s * 1e6:.1f} µs | {f.bandwidth_gbps:.1f} GB/s | "
             f"{s.nbytes[-1] / 2**20:.0f} MiB at {s.gbps[-1]:.1f} GB/s |" for s, f in zip(r.copies, r.fits())]
    return rows


def simclock() -> list[str]:
    """The simulated GPU's modeled clock (its ``h100`` profile) against the recorded H100 run it is calibrated on:
    lesson 02's matmul sweep and ``x + x``, lesson 07's copy sweeps, timed as the lessons time them, size by size."""
    import json

    import torch

    import course_utils as cu
    from course_utils import transfer
    from course_utils.gpusim import backend, clock

    dev = backend.enable()
    raw = json.loads((ROOT / "course_utils" / "data" / "reference_gpu.json").read_text(encoding="utf-8"))
    pairs = []   # (what, size, recorded, modeled)
    for n, recorded in raw["matmul_seconds"]["cuda"].items():
        a = torch.randn(int(n), int(n), device=dev)
        pairs.append(("matmul n×n", n, recorded, cu.time_it(torch.matmul, a, a, device=dev).median))
    for count, recorded in raw["add_seconds"]["cuda"].items():
        x = torch.randn(int(count), device=dev)
        pairs.append(("x + x, elements", count, recorded, cu.time_it(torch.add, x, x, device=dev).median))
    ways = {"host → device, pageable": ("cpu", dev, False), "host → device, pinned": ("cpu", dev, True),
            "device → host, pageable": (dev, "cpu", False)}
    for sweep in raw["copies"]:
        source, target, pinned = ways[sweep["label"]]
        modeled = transfer.copy_sweep(sweep["nbytes"], source, target, pinned=pinned, non_blocking=pinned,
                                      min_time=0.01)
        pairs += [(sweep["label"], f"{n:,} B", recorded, m)
                  for n, recorded, m in zip(sweep["nbytes"], sweep["seconds"], modeled.seconds)]
    errors = [abs(m / r - 1) for *_, r, m in pairs]
    rows = [f"Profile: {clock.clock().profile.name}, {clock.clock().profile.source}. Error = modeled / recorded − 1; "
            f"{sum(e <= 0.25 for e in errors)} of {len(errors)} within 25 %, median {statistics.median(errors):.0%}, "
            f"largest {max(errors):.0%}.", "", "| what | size | recorded | modeled | error |", "|---|---:|---:|---:|---:|"]
    rows += [f"| {what} | {size} | {_fmt(r)} | {_fmt(m)} | {m / r - 1:+.0%} |" for what, size, r, m in pairs]
    return rows


SECTIONS = {"notebooks": notebooks, "timing": timing, "copy": copy, "import": import_cost, "errors": errors,
            "simdevice": simdevice, "memory": memory, "grading": grading, "report": report,
            "gpu": gpu, "simclock": simclock}


def main() -> int:
    parser = argparse.ArgumentParser(description="Benchmark the course on this machine.")
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), help="run only these sections")
    parser.add_argument("--write", type=Path, help="also write the report to this Markdown file")
    args = parser.parse_args()
    import torch

    lines = [f"# Benchmarks ({datetime.now():%Y-%m-%d})", "",
             f"Python {platform.python_version()}, PyTorch {torch.__version__}, {os.cpu_count()} CPU cores, "
             f"{platform.machine()}; accelerator: {torch.accelerator.current_accelerator() if torch.accelerator.is_available() else 'none'}.",
             "Rerun with `python benchmarks/run.py`.", ""]
    for name in args.only or SECTIONS:
        start = time.perf_counter()
        lines += [f"## {name}", "", *SECTIONS[name](), "",
                  f"_(section took {time.perf_counter() - start:.0f} s)_", ""]
        print(f"[{name} done]", file=sys.stderr)
    report = "\n".join(lines)
    print(report)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(report + "\n")
    return 0


def _ts(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _fmt(seconds: float) -> str:
    from course_utils.timing import format_seconds
    return format_seconds(seconds)


if __name__ == "__main__":
    sys.exit(main())
