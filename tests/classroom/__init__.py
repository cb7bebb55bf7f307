"""Tests of :mod:`course_utils.classroom`, a file per module (``test_<module>.py``)."""
