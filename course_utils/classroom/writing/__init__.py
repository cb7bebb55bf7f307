"""What ``grade`` and ``report`` write for the teacher: the grades CSV, Gradescope results, the class report (its
statistics and its page), the gradebook for an LMS, and the quiz predictions."""
