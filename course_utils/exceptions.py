"""The course's own exceptions, in one place: what the course refuses on purpose, and what stops the grader.

``CourseError`` is the base of what the course refuses on purpose, so that a caller (the command line, a grading
script) can tell it from a bug; the message always says what was wrong and what to do, and the command line prints
it and exits with status 2. :class:`GraderLimit` is the grader's own limit, told to the learner as such.

The outcomes of checking an answer (:mod:`course_utils.grading`: ``Wrong``, ``NotAttempted``, ``Crashed``,
``TimeLimit``) are not errors and are not in this family.
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


class GraderLimit(Exception):
    """The grader itself could not go on (out of memory while verifying): not the learner's fault."""


__all__ = ["CourseError", "UnknownId", "UsageError", "InvalidSubmission", "NotANotebook", "ReportError", "ReleaseError",
           "GraderLimit"]


class ReleaseError(CourseError):
    """A student release that cannot be written as asked (:mod:`course_utils.classroom.release`)."""
