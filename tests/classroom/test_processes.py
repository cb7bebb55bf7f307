"""course_utils.classroom.sandbox.processes: every process a submission starts (double-forked daemons included)
ends with its run, and the memory limit holds for all of them together (shared memory included)."""
from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from course_utils import classroom

from .cases import NBYTES, OTHER, linux_only, points_of, solved01, write

pytestmark = linux_only


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` has ended (or is a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


DAEMON = ("import os, time\n"
          "r, w = os.pipe()\n"
          "if os.fork() == 0:\n"
          "    {detach}\n"
          "    if os.fork() == 0:\n"
          "        os.write(w, str(os.getpid()).encode())\n"
          "        time.sleep(120)\n"
          "        open({pidfile!r} + '.late', 'w').write('still running')\n"
          "        os._exit(0)\n"
          "    os._exit(0)\n"
          "os.close(w)\n"
          "open({pidfile!r}, 'w').write(os.read(r, 20).decode())\n")


def test_no_learner_process_survives_its_run(tmp_path):
    def daemon(name: str, detach: bool, then: str = "") -> dict:
        code = DAEMON.format(detach="os.setsid()" if detach else "pass", pidfile=str(tmp_path / f"{name}.pid"))
        return solved01(code + then)

    write(tmp_path, {
        "subs/daemon_then_done.ipynb": daemon("done", detach=True),
        "subs/child_then_exit.ipynb": daemon("exit", detach=False, then="os._exit(1)\n"),
        "subs/daemon_then_hang.ipynb": daemon("hang", detach=True, then="import time\nwhile True:\n"
                                               "    try:\n        time.sleep(1)\n    except BaseException:\n"
                                               "        pass\n"),
    })
    pids = []
    try:
        classroom.grade_all(classroom.find_submissions([str(tmp_path / "subs")]), classroom.Limits(8, 3, 5, 640),
                            jobs=3)
        pids = [int((tmp_path / f"{name}.pid").read_text()) for name in ("done", "exit", "hang")]
        assert all(gone(pid) for pid in pids), [(pid, gone(pid, 0)) for pid in pids]
    finally:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


FORK_HOG = ("import os, time\n"
            "children = []\n"
            "for _ in range(3):  # each under the per-process limit, together over it\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        block = b'\\x01' * (300 << 20)\n"
            "        time.sleep(6)\n"
            "        os._exit(0)\n"
            "    children.append(pid)\n"
            "for pid in children:\n"
            "    os.waitpid(pid, 0)\n")
# mmap's shared memory is outside RLIMIT_DATA: one process mapping more than the limit is stopped too, and a
# mapping that two processes both touch counts once (counting each one's private memory would miss both).
MMAP_HOG = ("import mmap, os, time\n"
            "size = 900 << 20\n"
            "m = mmap.mmap(-1, size)  # anonymous and shared\n"
            "child = {fork}\n"
            "for i in range(0, size, 4096):  # with a child, both touch every page: each is mapped twice\n"
            "    m[i] = 1\n"
            "time.sleep(8)\n"
            "if child == 0:\n"
            "    os._exit(0)\n")


@pytest.mark.parametrize("hog", [FORK_HOG, MMAP_HOG.format(fork="1"), MMAP_HOG.format(fork="os.fork()")],
                         ids=["forked private memory", "shared memory, one process", "shared memory, two"])
def test_memory_is_limited_for_all_the_processes_of_a_submission(tmp_path, hog):
    write(tmp_path, {"01_hog.ipynb": solved01(hog)})
    [graded] = classroom.grade_all([str(tmp_path / "01_hog.ipynb")], classroom.Limits(40, 20, 5, 640))
    rows = {r.exercise: r for r in graded.rows}
    assert rows[NBYTES].points == 0, rows[NBYTES].feedback
    assert "used more than 640 MB of memory together with the processes it started" in rows[NBYTES].feedback
    assert rows[OTHER].points == points_of(OTHER)  # graded again without the culprit
