"""JAX environments with an explicit task argument.

Importing this package registers every env in `ENVS`; build one with `make_env(name)`.
"""

from envs import (  # noqa: F401
    acrobot,
    bit_flip,
    brax_goal,
    brax_system,
    cartpole,
    goal_maze,
    gymnax_space,
    maze,
    maze_levels,  # registers the maze's held-out test sets (envs.registry.TEST_SETS)
    mountain_car,
    pendulum,
    point_maze,
    point_reach,
    stump_tracks,
    toy_bandit,
    xland,  # XLand-MiniGrid's rulesets; registers its held-out test sets too
)
from envs.base import GymnaxTaskEnv, TaskEnv
from envs.registry import ENVS, make_env

__all__ = ["ENVS", "GymnaxTaskEnv", "TaskEnv", "make_env"]
