"""course_utils.classroom.sandbox.messages: only what the worker signs counts; what the learner's code prints or
writes into the grader's pipes does not."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal

import pytest

from course_utils.classroom.sandbox import messages


def test_forged_messages_are_rejected():
    key = b"k" * 32
    message = messages.ResultMessage("01.nbytes", "passed", "")
    assert messages.unsign(key, messages.sign(key, message)) == message
    assert messages.unsign(key, messages.sign(b"x" * 32, message)) is None
    data = json.dumps({"t": "result", "exercise": "01.nbytes", "status": "passed", "feedback": ""}).encode()
    assert messages.unsign(key, b"0" * 64 + b" " + data) is None


def test_the_names_of_the_protocol_travel_as_plain_strings():
    key = b"k" * 32
    sent = messages.CellMessage(3, "01.nbytes", messages.CellFailure(messages.CellError.TIMEOUT, "too slow"))
    signed = messages.sign(key, sent)
    assert json.loads(signed.partition(b" ")[2]) == {"t": "cell", "index": 3, "exercise": "01.nbytes",
                                                     "error": {"kind": "timeout", "message": "too slow"}}
    received = messages.unsign(key, signed)
    assert received == sent and received.error.kind in messages.FATAL_CELL_ERRORS


@pytest.mark.parametrize("message", [
    messages.ReadyMessage(4321), messages.StageMessage(messages.Stage.CELL, "01.nbytes", 2),
    messages.StageMessage(messages.Stage.CHECK, "01.nbytes"), messages.CellMessage(2, "01.nbytes", None),
    messages.ResultMessage("01.nbytes", "failed", "Wrong.", "any.wrong-value", 1),
    messages.TamperedMessage(("course_utils.check",)), messages.ErrorMessage("boom"), messages.DoneMessage()],
    ids=lambda m: type(m).__name__)
def test_each_kind_of_message_arrives_as_it_was_sent(message):
    key = b"k" * 32
    assert messages.unsign(key, messages.sign(key, message)) == message


def _signed(key: bytes, data: dict) -> bytes:
    raw = json.dumps(data).encode()
    return hmac.new(key, raw, hashlib.sha256).hexdigest().encode() + b" " + raw


@pytest.mark.parametrize("data", [{"t": "nonsense"}, {"t": "stage", "stage": "lunch", "exercise": "01.nbytes"},
                                  {"t": "stage", "stage": "cell", "exercise": "01.nbytes"},
                                  {"t": "cell", "exercise": "01.nbytes"}, {"no t": 1}, {"t": "ready"},
                                  {"t": "ready", "pid": "12"}, {"t": "ready", "pid": 0}],
                         ids=["unknown kind", "unknown stage", "a cell's stage without its index", "no index",
                              "no kind", "ready without a pid", "ready with a pid as text", "ready with pid 0"])
def test_signed_messages_that_are_malformed_or_unknown_are_ignored(data):
    key = b"k" * 32
    assert messages.unsign(key, _signed(key, data)) is None
    assert messages.unsign(key, _signed(key, [data])) is None


def test_a_result_carries_only_plain_values():
    """A result's code is text and its points a whole number (anything else earns none), whatever was signed."""
    key = b"k" * 32
    received = messages.unsign(key, _signed(key, {"t": "result", "exercise": "01.nbytes", "status": "failed",
                                                  "feedback": "x", "code": None, "points": 2.5}))
    assert received == messages.ResultMessage("01.nbytes", "failed", "x", "", 0)


def test_the_job_travels_as_it_was_given():
    job = messages.Job(b"key", ((0, "01.nbytes", "def f(): pass"),), ("01.nbytes",), 30.0, 20.0, 4096, "/tmp/x", True)
    assert messages.Job.from_json(job.to_json()) == job


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


def test_the_memory_baseline_is_taken_when_ready_arrives_before_the_supervisors_session_line():
    """A worker that starts from the fork server's prepared state is ready within a millisecond or two, and its
    READY can come before the supervisor's ``session`` line: the memory limit must hold all the same."""
    import os
    from course_utils.classroom.sandbox import runs
    key = b"k" * 32
    channel_r, channel_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        run = runs.Run()
        follower = runs._Follower(run, key, channel_r, status_r, server=None, limits=runs.Limits())
        os.write(channel_w, messages.frame(messages.sign(key, messages.ReadyMessage(os.getpid()))))
        follower.read(1.0)
        assert run.ready and run.session is None and follower.baseline and follower.baseline > 0
    finally:
        for fd in (channel_r, channel_w, status_r, status_w):
            os.close(fd)
