"""The reference GPU run that lessons 02 and 07 show beside a learner's numbers: what it holds, and that the
lessons' sentences about it agree with it."""
from __future__ import annotations

import json

from course_utils import reference
from nbtools import NOTEBOOK_DIR, load


def _text(lesson: str) -> str:
    nb = load(NOTEBOOK_DIR / f"{lesson}.ipynb")
    return "\n".join("".join(c["source"]) for c in nb["cells"])


def test_the_run_names_its_machine_and_versions():
    ref = reference.load()
    assert ref.gpu.startswith("NVIDIA ") and "PyTorch 2." in ref.versions and "CUDA " in ref.versions
    assert ref.describe().startswith("a reference run on an NVIDIA") and ref.date in ref.describe()


def test_the_sweeps_are_lesson_02s_and_07s():
    ref = reference.load()
    assert sorted(ref.matmul_seconds["cuda"]) == [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    assert sorted(ref.matmul_seconds["cpu"]) == [16, 32, 64, 128, 256, 512, 1024]
    assert [s.label.split(" (")[0] for s in ref.copies] == ["host → device, pageable", "host → device, pinned",
                                                          "device → host, pageable"]
    assert all(len(s.nbytes) == len(s.seconds) >= 5 and min(s.seconds) > 0 for s in ref.copies)


def test_lesson_02_says_what_the_run_measured():
    ref = reference.load()
    text = _text("02_cpu_vs_gpu")
    assert ref.crossover() == 256 and "at n = 256" in text and "reference.load()" in text
    # the largest product: tens of TFLOP/s on the GPU, about one on the host's CPU
    assert ref.gflops()[4096] > 20 * ref.gflops("cpu")[1024]
    assert text.count("(float32, TF32 off") == 2   # the dtype beside the figure, as the run measured it
    script = (reference._DATA.parents[2] / "scripts" / "gpu_reference.py").read_text(encoding="utf-8")
    assert "float32" in script and not any(s in script for s in ("tf32", "float32_matmul_precision", "fp32_precision"))


def test_lesson_07_says_what_the_run_measured():
    ref = reference.load()
    pageable, pinned, _ = ref.fits()
    text = _text("07_transfer_cost")
    assert round(pinned.bandwidth_gbps) == 57 and round(pageable.bandwidth_gbps) == 11
    assert "the fitted lines give about\n  57 GB/s pinned and 11 GB/s pageable" in text and "reference.load()" in text
    # what the largest copies measured, beside the fits: 256 MiB, and pageable's range from 1 MiB up
    largest = {s.label.split(" (")[0]: s for s in ref.copies}
    assert ref.copies[0].nbytes[-1] == 256 * 2**20 and "largest copies (256 MiB)" in text
    assert round(largest["host → device, pinned"].gbps[-1], 1) == 55.2 and "55.2 GB/s pinned" in text
    pageable_mib = [g for n, g in zip(ref.copies[0].nbytes, ref.copies[0].gbps) if n >= 2**20]
    assert (round(min(pageable_mib), 1), round(max(pageable_mib), 1)) == (8.8, 12.9)
    assert "8.8 GB/s\n  pageable (host → device pageable copies ranged from 8.8 to 12.9 GB/s from 1 MiB up)" in text


def test_the_data_file_is_what_the_script_writes():
    raw = json.loads(reference._DATA.read_text(encoding="utf-8"))
    assert set(raw) >= {"machine", "matmul_seconds", "add_seconds", "copies"}
    assert {"gpu", "torch", "cuda", "driver", "date"} <= set(raw["machine"])
