"""course_utils.classroom.sandbox.worker: cells run as the notebook runs them (IPython syntax included), each
exercise checked right after its last answer cell, in PyTorch's pristine state; nothing an answer
raises costs more than its own exercise; answers that lie about their values earn nothing."""
from __future__ import annotations

import pytest

from course_utils.classroom.sandbox import worker
from course_utils.classroom.reading.cells import PROVIDED

from .cases import full, marks, points_of


def test_errors_in_answer_cells(batch):
    nbytes = batch.rows["subs/broken.ipynb", "01.nbytes"]
    assert nbytes["points"] == "0" and "syntax error on line 1" in nbytes["feedback"]
    blank = batch.rows["subs/broken.ipynb", "01.blank_like"]  # defined before the error: still checked
    assert blank["points"] == str(points_of("01.blank_like")) and "raised NameError on line 4" in blank["feedback"]


def test_what_the_setup_cell_gives_the_grader_gives_too():
    assert set(worker.notebook_namespace()) - {"__name__", "__builtins__"} <= PROVIDED


@pytest.mark.parametrize("submission", ["setup_again.ipynb", "merged_first.ipynb", "merged_second.ipynb",
                                        "07_merged.ipynb", "await.ipynb"])
def test_honest_reshapes_of_the_notebook_keep_full_marks(graded, submission):
    """A setup cell copied into an answer cell, two answer cells merged into one (whichever marker was kept, a
    whole lesson in one cell) and a top-level ``await`` (IPython runs it) are graded as Check sees them."""
    assert graded.rows.full_marks(submission), {e: graded.rows.feedback(submission, e)
                                                for e in graded.rows.points(submission) if e != "TOTAL"}


# --- graded the way the notebook runs ------------------------------------------------------------

def test_later_cells_cannot_change_an_earlier_grade(graded):
    """Try-it code that rebinds an answer's name or sets a default device after the answer."""
    assert graded.rows.full_marks("07_later_cells.ipynb"), graded.rows.points("07_later_cells.ipynb")


@pytest.mark.parametrize("submission", ["modes_last.ipynb", "modes_back.ipynb"])
def test_modes_left_active_do_not_reach_the_checks_and_come_back_after(graded, submission):
    """A torch function mode and a dispatch mode that break every call, entered and left active by an
    answer cell, are not active during the checks; the next answer cell finds them again."""
    assert graded.rows.full_marks(submission), (graded.rows.feedback(submission, "01.nbytes"),
                                                graded.rows.feedback(submission, "01.blank_like"))


def test_a_split_answer_cell_keeps_both_halves(graded):
    assert graded.rows.points("split.ipynb") == full("01.nbytes", "01.blank_like")


# --- KeyboardInterrupt costs only its own exercise -------------------------------------------------

@pytest.mark.parametrize("submission", ["ki_raised.ipynb", "ki_getattr.ipynb", "ki_str.ipynb"])
def test_keyboard_interrupt_costs_only_its_exercise(graded, submission):
    assert graded.rows.points(submission) == marks({"01.nbytes": False, "01.blank_like": True})
    assert "grader" not in graded.rows.feedback(submission, "01.nbytes").lower()


# --- IPython syntax --------------------------------------------------------------------------------

def test_magics_help_and_shell_commands_run_as_in_jupyter(graded):
    assert graded.rows.points("ipython.ipynb") == full("01.nbytes", "01.blank_like")


# --- answers that lie ------------------------------------------------------------------------------

@pytest.mark.parametrize("submission, cheats, says", [
    ("05_lies.ipynb", {"05.is_on": "return True or False", "05.model_device": "Return a single `torch.device`",
                       "05.training_bytes": "not a plain Python int"}, None),
    ("04_tensor_subclass.ipynb", {"04.mask_future": "a subclass of torch.Tensor of your own"}, None),
    ("04_function_mode.ipynb", {"04.mask_future": "should be -inf"}, None),
    ("04_dispatch_mode.ipynb", {"04.mask_future": "should be -inf"}, None),
    ("05_empties_table.ipynb", {"05.training_bytes": "you returned 0"}, "has no attribute 'clear'"),
])
def test_answers_that_lie_earn_nothing(graded, submission, cheats, says):
    """A value whose ``==`` or ``__class__`` lies, a tensor class that answers ``torch.equal``, a lenient
    mode left active by the answer, and a check's table emptied by the answer cell: each exercise is
    judged on plain values, and the others are graded as usual."""
    got = graded.rows.points(submission)
    assert {e: got[e] for e in cheats} == dict.fromkeys(cheats, 0)
    assert got["TOTAL"] == points_of(*(e for e in got if e not in cheats and e != "TOTAL")), got  # the rest in full
    for ex_id, text in cheats.items():
        feedback = graded.rows.feedback(submission, ex_id)
        assert text in feedback and (says or "") in feedback
