"""JAX environments with an explicit task argument (DESIGN.md contract 1).

Importing this package registers every env in `ENVS`; build one with `make_env(name)`.
"""

from envs import acrobot, cartpole, mountain_car, pendulum, stump_tracks, toy_bandit  # noqa: F401
from envs.base import GymnaxTaskEnv, TaskEnv
from envs.registry import ENVS, make_env

__all__ = ["ENVS", "GymnaxTaskEnv", "TaskEnv", "make_env"]
