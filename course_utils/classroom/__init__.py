"""Grading a class: ``python -m course_utils grade NOTEBOOK|FOLDER... --out grades.csv``.

Three rooms, and the commands between them (the building blocks of a single check are :mod:`course_utils.grading`):

* :mod:`.reading`, reading a class: :mod:`~.reading.layouts` (whose each submission is, in the layouts schools collect
  in), :mod:`~.reading.submissions` (the notebooks, read, and their lesson), :mod:`~.reading.cells` (which cells run,
  read as IPython reads them, and the static checks made before anything runs);
* :mod:`.sandbox`, running learner code: :mod:`~.sandbox.runs` (one submission's run, watched to its end), the
  :mod:`~.sandbox.forkserver` and the :mod:`~.sandbox.worker`, :mod:`~.sandbox.integrity` and :mod:`~.sandbox.guard`
  (what keeps a check honest), :mod:`~.sandbox.processes` (process control), :mod:`~.sandbox.messages` (the signed
  channel between worker and grader, and how a run ends);
* :mod:`.writing`, what the teacher gets: :mod:`~.writing.reports` (CSV, Gradescope ``results.json``, the summary), the
  class report (:mod:`~.writing.class_stats`, :mod:`~.writing.class_page`, :mod:`~.writing.class_report`), the
  :mod:`~.writing.gradebook` and the quiz :mod:`~.writing.predictions`;
* between them: :mod:`.grader` (one submission's grade, and a batch's), :mod:`.cli` (``grade``), :mod:`.autograder`
  (Gradescope), :mod:`.release` (the students' release) and :mod:`.links` (launch links).

Each submission is graded on what its answer cells *do*, not on what the notebook *says*:

1. The notebook is read as JSON; its answer cells are the code cells marked with ``{"course": {"exercise": "<id>"}}``.
   Nothing else in it is run: not the check cells, not the saved outputs (dropped while the file is read). The
   submission is graded on every registered exercise of its lesson: ``--lesson``, else the ``NN`` of the file name
   ``NN_*.ipynb``, else the lesson of most of its answer cells, else of the exercise ids the file mentions, else the
   batch's one lesson. Answer cells of other lessons are not run; the grade says they were ignored.
2. The answer cells run, in notebook order, in a fresh process (:mod:`course_utils.classroom.sandbox.worker`, forked by
   a per-run supervisor, itself forked from a server that has imported PyTorch once: :mod:`.sandbox.forkserver`) with a
   memory limit (``RLIMIT_DATA`` per process, and a watchdog here that sums the private memory of every process the run
   started), a time limit per cell and the package's own time limit per check. They run in the namespace a notebook's
   setup cell gives (``torch``, ``nn``, ``F``, ``cu``, ``math``, ``np``, ``device``), read as IPython reads them (magics
   and ``!`` commands do nothing). Each exercise is checked right after its last answer cell, as the notebook's check
   cell would be, so later cells cannot change its grade; PyTorch's global state (default device and dtype, grad mode,
   RNG, active torch function and dispatch modes...) is reset for each check.
3. Before any learner code runs, the worker snapshots what the checks rely on: every attribute of every ``course_utils``
   module and class (functions down to their ``__code__``), the exercise registry, and the functions and classes of
   ``torch``, ``torch.nn``, ``torch.Tensor``, ``nn.Module``, ``builtins`` and a few standard modules. After every cell
   and every check it compares; any change and the whole submission scores 0, with a reason naming what changed.
4. Each exercise is checked with :func:`course_utils.check`. Results travel to this process on a private pipe, each
   message signed with an HMAC key made for that run; what the learner prints goes to ``/dev/null``. Results arrive as
   soon as they are known, so they survive a later crash.
5. A run that overruns ``--timeout`` is killed with every process it started: its process group, its supervisor's
   session, and what the supervisor (a subreaper) adopted. If a cell or a check ends the process (timeout, crash,
   ``os._exit``, a signal), that exercise scores 0 with the reason, and the rest are graded in a new process that skips
   the culprit, so one bad answer costs only its own points. Answer cells that read the checker's stack
   (``sys._getframe``, ``inspect.stack``, ``f_locals``... see :func:`reaches_into_course`) score 0 for their exercise,
   as does an answer that *is* a reference solution (an alias, a wrapper, a copy made from its source) or *calls* one
   while it is checked (see :mod:`course_utils.classroom.sandbox.worker`). A run whose supervisor was killed scores 0 as
   a whole (what happened after that depends on timing).

Threat model. This defeats what learners actually do, by accident or on purpose: redefining or monkeypatching
``course_utils.check``, its registry, its helpers or PyTorch functions (in an answer cell or from inside the answer
during its check); edited check cells; printed or saved claims of "passed", and bytes written into the grader's pipes;
importing the reference solution; infinite loops; crashes; memory bombs (forked ones included); processes left running;
stopping or killing the worker's parent; files that are not notebooks, or not even JSON. The batch always carries on,
every submission gets a row per exercise of its lesson, rows are kept as submissions finish, no output overwrites an
input, and the same input gives the same CSV.

It is **not a security sandbox**. Learner code runs with your user's rights: it can read and write your files (the
course's own included), use the network, find the HMAC key in its own memory, patch and restore things between integrity
checks (e.g. from a thread), signal or stop every process of your user (``os.kill(-1, signal.SIGSTOP)``; the grader and
its fork server resume each other, but not if both are stopped), kill the grader (the rows written so far stay), or use
GPU memory (which no limit here covers). Run batches you do not trust in a container or VM with no secrets and no
network (see the instructor's guide). ``--jobs N`` may use up to ``N * --memory-mb`` of RAM."""
from ..exceptions import InvalidSubmission
from .cli import add_arguments, run
from .grader import TOTAL, Row, SubmissionGrade, grade_all, grade_notebook
from .writing.reports import (CSV_HEADER, csv_field, csv_rows, gradescope_folder, gradescope_folders,
                              gradescope_results, summary_table, write_csv, write_gradescope)
from .sandbox.runs import Limits
from .reading.cells import answer_cells
from .reading.submissions import find_submissions, lesson_of, read_notebook

__all__ = ["Limits", "Row", "SubmissionGrade", "InvalidSubmission", "find_submissions", "read_notebook",
           "answer_cells", "lesson_of", "grade_notebook", "grade_all", "csv_rows", "csv_field", "write_csv",
           "gradescope_results", "gradescope_folder", "gradescope_folders", "write_gradescope", "summary_table",
           "add_arguments", "run", "CSV_HEADER", "TOTAL"]
