"""Teachers: one module per family; `TEACHERS` maps names to factories."""

from acl.core.types import Feedback, SampleInfo
from acl.teachers import adr as _adr  # noqa: F401  (registers adr)
from acl.teachers import alp_gmm as _alp_gmm  # noqa: F401  (registers alp_gmm)
from acl.teachers import covar_gmm as _covar_gmm  # noqa: F401  (registers covar_gmm)
from acl.teachers import goal_gan as _goal_gan  # noqa: F401  (registers goal_gan)
from acl.teachers import jsrl as _jsrl  # noqa: F401  (registers jsrl)
from acl.teachers import paired as _paired  # noqa: F401  (registers paired)
from acl.teachers import plr as _plr  # noqa: F401  (registers dr, plr, robust_plr, accel)
from acl.teachers import random as _random  # noqa: F401  (registers random, fixed)
from acl.teachers import reverse as _reverse  # noqa: F401  (registers reverse, uniform_start)
from acl.teachers import riac as _riac  # noqa: F401  (registers riac)
from acl.teachers import schedule as _schedule  # noqa: F401  (registers schedule)
from acl.teachers import setter_solver as _setter_solver  # noqa: F401  (registers setter_solver)
from acl.teachers import sfl as _sfl  # noqa: F401  (registers sfl)
from acl.teachers import spdl as _spdl  # noqa: F401  (registers spdl)
from acl.teachers import subspace as _subspace  # noqa: F401  (registers subspace)
from acl.teachers import svgg as _svgg  # noqa: F401  (registers svgg, random_goal)
from acl.teachers.base import TEACHERS, Teacher, UpdateContext

__all__ = ["TEACHERS", "Feedback", "SampleInfo", "Teacher", "UpdateContext"]
