"""The goal and start helpers the goal envs share, written once.

`SparseGoalReward`: HER's -1/0 reward, its episode end on the goal, and the success
threshold and return bounds that follow (goal_maze, point_maze, brax_goal,
point_reach). `StartGoalTasks`: tasks that are a start then a goal, and the goal and
start protocols' task halves (goal_maze, point_maze, brax_goal).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from acl.core.spaces import UNIT, Box
from envs.base import GoalTaskEnv, StartTaskEnv


def start_goal_box(default: tuple[float, ...], units: tuple[str, ...]) -> Box:
    """The task space [0, 1]^4 of (start x, start y, goal x, goal y) in normalised
    coordinates, with its `default` task and the `units` of (x, y)."""
    return Box(
        low=(0.0,) * 4,
        high=(1.0,) * 4,
        names=("start_x", "start_y", "goal_x", "goal_y"),
        units=units * 2,
        default=default,
        limits=(UNIT,) * 4,
    )


class SparseGoalReward(GoalTaskEnv):
    """Reward 0 on a step that ends on the goal (`goal_reached`), -1 on any other, and the
    episode terminates on the goal. An episode that reaches the goal on its k-th step
    returns -(k - 1), one that never does -T (T = `max_episode_steps`): success is a
    return > -T (threshold -T + 0.5), and returns lie in [-T, 0]."""

    terminates_on_goal = True

    @property
    def success_threshold(self) -> float:
        return -self.max_episode_steps + 0.5

    @property
    def return_bounds(self) -> tuple[float, float]:
        return (-float(self.max_episode_steps), 0.0)

    def compute_reward(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        return jnp.where(self.goal_reached(achieved, goal), 0.0, -1.0).astype(jnp.float32)

    def score_step(self, obs: jax.Array, time: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """What the step that led to `obs` [O], the `time`-th of its episode, scores:
        (reward, terminated, truncated), [] each. Scored from the observation alone, so
        that HER's relabelled rewards match `step`'s exactly."""
        achieved, goal = self.achieved_goal(obs), self.desired_goal(obs)
        reached = self.goal_reached(achieved, goal)
        reward = self.compute_reward(achieved, goal)
        truncated = (time >= self.max_episode_steps) & ~reached
        return reward, reached, truncated


class StartGoalTasks(SparseGoalReward, StartTaskEnv):
    """Tasks [..., S + G] = (start [S], goal [G]): the task halves of the goal protocol
    (`goal_from_task`, `task_with_goal`) and of the start protocol (`task_with_start`),
    all broadcasting over leading axes and jittable. A goal is read as handed out, not
    mapped to a valid one (the env's `task_to_params` does that)."""

    def goal_from_task(self, task: jax.Array) -> jax.Array:
        """[..., S + G] -> [..., G]."""
        return jnp.asarray(task)[..., self.start_dim : self.start_dim + self.goal_dim]

    def task_with_goal(self, task: jax.Array, goal: jax.Array) -> jax.Array:
        """[..., S + G], [..., G] -> [..., S + G]: the task with its goal replaced."""
        task = jnp.asarray(task)
        goal = jnp.broadcast_to(goal, task.shape[:-1] + (self.goal_dim,)).astype(task.dtype)
        return jnp.concatenate([task[..., : self.start_dim], goal], axis=-1)

    def task_with_start(self, task: jax.Array, start: jax.Array) -> jax.Array:
        """[..., S + G], [..., S] -> [..., S + G]: the task with its start replaced."""
        task = jnp.asarray(task)
        start = jnp.broadcast_to(start, task.shape[:-1] + (self.start_dim,)).astype(task.dtype)
        return jnp.concatenate([start, task[..., self.start_dim :]], axis=-1)
