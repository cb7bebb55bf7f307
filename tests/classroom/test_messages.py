"""course_utils.classroom.messages: only what the worker signs counts; what the learner's code prints or
writes into the grader's pipes does not."""
from __future__ import annotations

import json
import os
import signal

import pytest

from course_utils.classroom import messages


def test_forged_messages_are_rejected():
    key = b"k" * 32
    message = {"t": "result", "exercise": "01.nbytes", "status": "passed", "feedback": ""}
    assert messages.unsign(key, messages.sign(key, message)) == message
    assert messages.unsign(key, messages.sign(b"x" * 32, message)) is None
    assert messages.unsign(key, b"0" * 64 + b" " + json.dumps(message).encode()) is None


def test_the_names_of_the_protocol_travel_as_plain_strings():
    key = b"k" * 32
    sent = {"t": messages.Kind.STAGE, "stage": messages.Stage.CELL, "error": {"kind": messages.CellError.TIMEOUT}}
    received = messages.unsign(key, messages.sign(key, sent))
    assert received == {"t": "stage", "stage": "cell", "error": {"kind": "timeout"}}
    assert received["t"] == messages.Kind.STAGE and received["error"]["kind"] in messages.FATAL_CELL_ERRORS


@pytest.mark.parametrize("status, code", [(0, 0), (3 << 8, 3), (signal.SIGKILL, -signal.SIGKILL)],
                         ids=["exit 0", "exit 3", "SIGKILL"])
def test_status_lines_say_which_processes_are_the_runs_and_how_the_worker_ended(status, code):
    assert messages.read_status(messages.session_line(120, 121)) == ((120, 121), None)
    assert os.WIFSIGNALED(status) == (code < 0)
    assert messages.read_status(messages.exit_line(status)) == (None, code)
    assert messages.read_status(b"exit 1 2") == messages.read_status(b"session x 1") == (None, None)


@pytest.mark.parametrize("submission", ["subs/edited_check_cells.ipynb", "subs/prints_passed.ipynb",
                                        "subs/forges_results.ipynb"])
def test_claims_of_passing_are_ignored(batch, submission):
    assert batch.rows.points(submission)["TOTAL"] == 0
    assert "Not attempted" in batch.rows[submission, "01.nbytes"]["feedback"]
