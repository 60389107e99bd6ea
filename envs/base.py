"""The environment contract.

    reset(key, params) -> (obs, state)
    step(key, state, action, params) -> (obs, state, reward, terminated, truncated, info)

`terminated` is a real end (no bootstrap); `truncated` is a time limit (bootstrap from
the final observation). Steps never auto-reset: the curriculum loop owns resets, so an
instance always restarts on the task it was handed. Everything a teacher may change
lives in `params`, filled by the pure `task_to_params(task, base_params)`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import environment, spaces

from acl.core.spaces import Box


class TaskEnv:
    """Base class of every environment with a task space.

    Subclasses set the class attributes below and implement `default_params`,
    `task_to_params`, `reset`, `step`, `observation_space` and `action_space`.
    """

    name: str = ""
    task_space: Box
    """Box of tasks a teacher may hand out."""
    success_threshold: float
    """An episode whose return is strictly above this counts as mastered."""
    return_bounds: tuple[float, float]
    """Lowest and highest achievable episode return, for rescaling to [0, 1]."""
    max_episode_steps: int
    """Time limit of one episode; the length of an evaluation rollout."""

    def default_params(self) -> Any:
        raise NotImplementedError

    def task_to_params(self, task: jax.Array, base_params: Any) -> Any:
        """Params for `task` (shape [D]); pure, so a batch of tasks is one vmap."""
        raise NotImplementedError

    def reset(self, key: jax.Array, params: Any) -> tuple[jax.Array, Any]:
        raise NotImplementedError

    def step(self, key: jax.Array, state: Any, action: jax.Array, params: Any):
        raise NotImplementedError

    def observation_space(self) -> spaces.Box:
        raise NotImplementedError

    def action_space(self) -> spaces.Discrete | spaces.Box:
        raise NotImplementedError

    def is_success(self, episode_return: jax.Array) -> jax.Array:
        return episode_return > self.success_threshold

    def params_for_tasks(self, tasks: jax.Array) -> Any:
        """Params for a batch of tasks, shape [N, D] -> params with leading axis N."""
        base = self.default_params()
        return jax.vmap(lambda t: self.task_to_params(t, base))(tasks)


class GymnaxTaskEnv(TaskEnv):
    """A gymnax environment with a task space; no auto-reset, explicit truncation."""

    def __init__(self, gymnax_env: environment.Environment, max_episode_steps: int | None = None):
        self._env = gymnax_env
        base = gymnax_env.default_params
        self.max_episode_steps = int(max_episode_steps or base.max_steps_in_episode)

    def default_params(self):
        return self._env.default_params.replace(max_steps_in_episode=self.max_episode_steps)

    def reset(self, key, params):
        return self._env.reset_env(key, params)

    def step(self, key, state, action, params):
        obs, state, reward, terminated, info = self._env.step_env(key, state, action, params)
        terminated = jnp.asarray(terminated, bool)
        truncated = self._env.is_truncated(state, params) & ~terminated
        return obs, state, jnp.asarray(reward, jnp.float32), terminated, truncated, info

    def observation_space(self):
        return self._env.observation_space(self.default_params())

    def action_space(self):
        return self._env.action_space(self.default_params())


class GoalTaskEnv(TaskEnv):
    """A TaskEnv whose observation carries a goal, for HER and goal/start curricula.

    The goal (and, where the env has one, the start state) is part of the task a teacher
    hands over, so it lives in `params`. The observation is `[..., O]` with the goal
    inside it, which lets HER relabel stored observations without the env state:
    `achieved_goal` reads what the state has reached, `desired_goal` reads the goal,
    `with_goal` writes another goal into an observation, and `compute_reward` scores an
    (achieved, goal) pair exactly as `step` does. All four broadcast over leading axes
    and are jittable. Goal generators (acl.teachers.svgg) read and write the goal part
    of a task with `goal_from_task` and `task_with_goal`, also broadcasting and
    jittable.
    """

    goal_dim: int
    """Size G of a goal vector."""
    terminates_on_goal: bool = False
    """Whether `step` terminates on reaching the goal; HER then recomputes `terminated`
    of a relabelled transition as `goal_reached` for its new goal."""

    def achieved_goal(self, obs: jax.Array) -> jax.Array:
        """[..., O] -> [..., G]: the goal the observed state has reached."""
        raise NotImplementedError

    def desired_goal(self, obs: jax.Array) -> jax.Array:
        """[..., O] -> [..., G]: the goal the observation asks for."""
        raise NotImplementedError

    def with_goal(self, obs: jax.Array, goal: jax.Array) -> jax.Array:
        """[..., O], [..., G] -> [..., O]: the observation with its goal replaced."""
        raise NotImplementedError

    def compute_reward(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        """[..., G], [..., G] -> [...]: the reward `step` gives for reaching `achieved`."""
        raise NotImplementedError

    def goal_reached(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        """[..., G], [..., G] -> [...] bool."""
        raise NotImplementedError

    def goal_from_task(self, task: jax.Array) -> jax.Array:
        """[..., D] -> [..., G]: the goal part of a task, in the coordinates goal
        generators (SVGG) move their particles in."""
        raise NotImplementedError

    def task_with_goal(self, task: jax.Array, goal: jax.Array) -> jax.Array:
        """[..., D], [..., G] -> [..., D]: `task` with its goal part replaced (the rest,
        e.g. the start, kept). Inverse of `goal_from_task`:
        goal_from_task(task_with_goal(t, g)) == g."""
        raise NotImplementedError


class PositionGoalObservation:
    """The goal protocol's observation half for obs = (position [P], goal [P]): the
    achieved goal is the position. Mix into a GoalTaskEnv that sets `goal_dim` = P."""

    goal_dim: int

    def achieved_goal(self, obs: jax.Array) -> jax.Array:
        return obs[..., : self.goal_dim]

    def desired_goal(self, obs: jax.Array) -> jax.Array:
        return obs[..., self.goal_dim : 2 * self.goal_dim]

    def with_goal(self, obs: jax.Array, goal: jax.Array) -> jax.Array:
        goal = jnp.broadcast_to(goal, obs.shape[:-1] + (self.goal_dim,)).astype(obs.dtype)
        return jnp.concatenate([obs[..., : self.goal_dim], goal], axis=-1)


class StartTaskEnv(TaskEnv):
    """A TaskEnv whose start state is part of the task: the host of start curricula.

    A reverse curriculum (acl.teachers.reverse) hands out starts as tasks and grows them
    by random walks of the env's own dynamics, so it needs to read a start back from an
    env state, to write one into a task, and to tell how far a start is from the goal.
    A start is a vector [S] in the env's own terms (a position for the mazes; a joint
    configuration for a robot). All four methods are pure and jittable;
    `task_with_start` broadcasts over leading axes.
    """

    start_dim: int
    """Size S of a start vector."""

    def start_from_state(self, state: Any) -> jax.Array:
        """Env state -> [S]: the start vector that would reset the env to this state."""
        raise NotImplementedError

    def task_with_start(self, task: jax.Array, start: jax.Array) -> jax.Array:
        """[..., D], [..., S] -> [..., D]: `task` with its start part replaced."""
        raise NotImplementedError

    def goal_start(self, task: jax.Array) -> jax.Array:
        """[D] -> [S]: a start at which `task`'s goal is achieved (a reverse curriculum's
        seed)."""
        raise NotImplementedError

    def start_distance(self, starts: jax.Array, task: jax.Array) -> jax.Array:
        """starts [..., S], task [D] -> [...] float32: how far each start is from `task`'s
        goal, in env steps along the env's shortest path (inf if unreachable). A reverse
        curriculum keeps its fallback expansions from drifting back towards the goal
        with it."""
        raise NotImplementedError


def random_tasks(env, key: jax.Array, n: int, **generator_kwargs) -> jax.Array:
    """[n, D] float32 random tasks of `env`: its level generator (`sample_tasks(key, n,
    **generator_kwargs)`, the maze's) where it has one, else uniform over its task space."""
    if callable(getattr(env, "sample_tasks", None)):
        return env.sample_tasks(key, n, **generator_kwargs).astype(jnp.float32)
    return env.task_space.sample_uniform(key, n).astype(jnp.float32)
