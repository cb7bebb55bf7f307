"""The course's lessons, one record each: number, title and notebook.

The one table of lessons: the progress table (:mod:`course_utils.store`), the nbgitpuller links
(:mod:`course_utils.classroom.links`), the error catalogue's "Learn more" (:mod:`course_utils.errors.schema`) and the
generated pages read it. A lesson's content (its quizzes and exercises) lives in :mod:`course_utils.lessons`.

The bottom floor of the package: it imports nothing of the course (nor PyTorch)."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Lesson", "LESSONS"]


@dataclass(frozen=True)
class Lesson:
    """One lesson of the course."""

    number: str     # "01".."08", which starts its exercise, quiz and misconception ids
    title: str      # for tables and links: "CPU vs GPU"
    notebook: str   # its file name in notebooks/: "02_cpu_vs_gpu.ipynb"

    @property
    def stem(self) -> str:
        """The notebook's name without ``.ipynb``, as a misconception's or an error's teaching section names it."""
        return self.notebook.removesuffix(".ipynb")


#: Lesson number -> its :class:`Lesson`, in course order.
LESSONS: dict[str, Lesson] = {lesson.number: lesson for lesson in (
    Lesson("01", "Tensors", "01_tensors.ipynb"),
    Lesson("02", "CPU vs GPU", "02_cpu_vs_gpu.ipynb"),
    Lesson("03", ".to(device)", "03_to_device.ipynb"),
    Lesson("04", ".cuda()", "04_cuda.ipynb"),
    Lesson("05", ".device", "05_device_attribute.ipynb"),
    Lesson("06", "Device-mismatch errors", "06_mismatch_errors.ipynb"),
    Lesson("07", "Transfer cost", "07_transfer_cost.ipynb"),
    Lesson("08", "Field guide (appendix)", "08_field_guide.ipynb"),
)}
