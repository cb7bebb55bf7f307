"""``python -m course_utils --help``, each subcommand's ``--help``, ``--version`` and usage errors answer without
importing PyTorch (the package and its command line import it only where a command needs it)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from course_utils.__main__ import COMMANDS
from nbtools import ROOT

#: Runs the command line as ``python -m course_utils ARGV`` would, then says on stderr whether torch got imported.
PROBE = """
import runpy, sys
sys.argv = ["course_utils"] + sys.argv[1:]
try:
    runpy.run_module("course_utils", run_name="__main__", alter_sys=True)
except SystemExit as e:
    status = e.code
else:
    status = 0
sys.stderr.write(f"\\nexit={status} torch={'torch' in sys.modules}\\n")
"""


def _run(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)


@pytest.mark.parametrize("argv, status", [(["--help"], 0), (["--version"], 0), ([], 2), (["no-such-command"], 2),
                                          (["check"], 2), (["hint", "01.nbytes", "not-a-number"], 2)]
                         + [([name, "--help"], 0) for name in COMMANDS])
def test_answers_without_importing_torch(argv, status):
    done = _run(*argv)
    assert done.stderr.rstrip().endswith(f"exit={status} torch=False"), done.stderr


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_subcommand_has_a_description_and_an_example(name):
    done = _run(name, "--help")
    assert COMMANDS[name].example in done.stdout and "example:" in done.stdout
    assert " ".join(COMMANDS[name].description.split()[:4]) in " ".join(done.stdout.split())


def test_importing_the_package_does_not_import_torch_nor_the_lessons():
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import course_utils"], capture_output=True,
                          text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line]
    assert "course_utils" in imported
    assert not [m for m in imported if m == "torch" or m.startswith(("torch.", "course_utils.lessons"))]
