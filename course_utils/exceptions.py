"""The course's own exceptions: one family, so that a caller (the command line, a grading script) can tell what the
course refuses on purpose from a bug.

``CourseError`` is the base; the message always says what was wrong and what to do. The outcomes of checking an
answer (:mod:`course_utils.grading`: ``Wrong``, ``NotAttempted``...) are not errors and are not in this family.
"""
from __future__ import annotations


class CourseError(Exception):
    """Something the course refuses on purpose; the message says what and what to do."""


class UnknownId(CourseError, KeyError):
    """An exercise or quiz id that is not registered (a ``KeyError`` too, for code that looks ids up in a dict)."""

    def __str__(self) -> str:   # KeyError's own quotes the message as a repr
        return str(self.args[0]) if self.args else ""


__all__ = ["CourseError", "UnknownId"]
