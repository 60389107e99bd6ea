"""Teachers: one module per family; `TEACHERS` maps names to factories."""

from acl.teachers import random as _random  # noqa: F401  (registers random, fixed)
from acl.teachers.base import TEACHERS, Feedback, SampleInfo, Teacher

__all__ = ["TEACHERS", "Feedback", "SampleInfo", "Teacher"]
