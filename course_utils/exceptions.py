"""The course's own exceptions, in one place: what the course refuses on purpose, and what stops the grader.

``CourseError`` is the base of what the course refuses on purpose, so that a caller (the command line, a grading
script) can tell it from a bug; the message always says what was wrong and what to do, and the command line prints
it and exits with status 2. :class:`GraderLimit` is the grader's own limit, told to the learner as such.

The outcomes of checking an answer (``Wrong``, ``NotAttempted``, ``Crashed``, ``TimeLimit``) are here too, at the
end: they are not errors of the course, but how a check tells what learner code did (:mod:`course_utils.grading`).
"""
from __future__ import annotations


class CourseError(Exception):
    """Something the course refuses on purpose; the message says what and what to do."""


class UnknownId(CourseError, KeyError):
    """An exercise or quiz id that is not registered (a ``KeyError`` too, for code that looks ids up in a dict)."""

    def __str__(self) -> str:   # KeyError's own quotes the message as a repr
        return str(self.args[0]) if self.args else ""


class UsageError(CourseError):
    """Why ``grade`` exits with status 2 before grading anything (the message is printed as it is)."""


class InvalidSubmission(CourseError):
    """A submitted file cannot be graded as a notebook; the message says why."""


class NotANotebook(InvalidSubmission):
    """The file is another kind of file (a Python script, a PDF, JSON without cells...): nothing was handed in."""


class ReportError(CourseError):
    """Bad input to ``report``: the message says what and where; the command exits with status 2."""


class ReleaseError(CourseError):
    """A student release that cannot be written as asked (:mod:`course_utils.classroom.release`)."""


class GraderLimit(Exception):
    """The grader itself could not go on (out of memory while verifying): not the learner's fault."""


# --- the outcomes of checking an answer ---------------------------------------------------------------------

class Wrong(Exception):
    """The answer ran but gave a wrong result: ``message`` is the feedback, ``code`` the mistake it names (a code
    from :mod:`course_utils.misconceptions`, defined beside the check that raises it), ``earned`` the points the
    answer still earns (part marks, for an exercise of independent parts such as the capstone's bugs), ``also`` the
    codes of the other mistakes it still has (the capstone's other bugs)."""

    def __init__(self, message: str, code: str, earned: int = 0, also: tuple[str, ...] = ()):
        super().__init__(message)
        self.code = code
        self.earned = earned
        self.also = also


class NotAttempted(Exception):
    """The answer is still the stub (it raises ``NotImplementedError`` or is missing)."""


class Crashed(Exception):
    """The learner's code raised; ``error`` is the exception, ``context`` says on what input."""

    def __init__(self, error: BaseException, context: str):
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error
        self.context = context


class TimeLimit(BaseException):
    """Raised inside learner code when a check runs past its time limit."""


__all__ = ["CourseError", "UnknownId", "UsageError", "InvalidSubmission", "NotANotebook", "ReportError", "ReleaseError",
           "GraderLimit", "Wrong", "NotAttempted", "Crashed", "TimeLimit"]
