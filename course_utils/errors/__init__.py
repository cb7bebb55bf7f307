"""The error catalogue: paste an error, get its cause, its fix and the lesson that teaches it.

::

    import course_utils as cu
    cu.explain_error(error)          # an exception, or the text you copied: one line or a whole traceback
    cu.explain_error(text).known     # False for anything the course does not teach; it never guesses

:data:`FAMILIES` is the one source for everything the course says about these errors, each :class:`Wording` a message
exactly as PyTorch prints it (see :mod:`~course_utils.errors.catalogue`). A family whose words depend on the message
(the devices, the argument, the type it names) carries its own ``tailor``, so a new family is one entry. :data:`LESSONS`
says which lesson section teaches each family; families no lesson teaches yet point to the appendix :data:`FIELD_GUIDE`.
This package imports nothing from the rest of the package but the bottom floor's :mod:`course_utils.text` and
:mod:`course_utils.syllabus` (the lessons' notebooks), so any part of it (``setup`` included) may use it.

Its modules: :mod:`~course_utils.errors.schema` (what an entry is, and :data:`LESSONS`),
:mod:`~course_utils.errors.tailors` (the words that depend on the message), :mod:`~course_utils.errors.catalogue`
(:data:`FAMILIES`, the data; its first families, tensors on different devices, are
:mod:`~course_utils.errors.mixed_devices`'s) and :mod:`~course_utils.errors.explain` (:func:`explain_error`).
"""
from __future__ import annotations

from .catalogue import FAMILIES, family
from .explain import Explanation, explain_error, last_error, lesson_link
from .schema import FIELD_GUIDE, LESSONS, Family, Reading, Wording

__all__ = ["explain_error", "last_error", "Explanation", "Family", "Reading", "Wording", "FAMILIES", "LESSONS",
           "FIELD_GUIDE", "family"]
