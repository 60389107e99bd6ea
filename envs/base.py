"""The environment contract.

    reset(key, params) -> (obs, state)
    step(key, state, action, params) -> (obs, state, reward, terminated, truncated, info)

`terminated` is a real end (no bootstrap); `truncated` is a time limit (bootstrap from
the final observation). Steps never auto-reset: the curriculum loop owns resets, so an
instance always restarts on the task it was handed. Everything a teacher may change
lives in `params`, filled by the pure `task_to_params(task, base_params)`.

What an env can do beyond that is declared here, never probed: a typed variant that the
env subclasses (`GoalTaskEnv`, `StartTaskEnv`, `LevelTaskEnv`, `LevelEditorEnv`,
`ImageDirectionObservation`, `TokenObservation`; callers check it with `isinstance`), or
a member whose default says the env lacks it (`unfeasible_bounds`, `trivial_bounds` and
`easy_task` None; `has_oracle_action`, `GoalTaskEnv.has_valid_goals`,
`LevelTaskEnv.has_level_edits` and `has_level_editor` False, and their methods raising
a ConfigError that names the env). docs/envs.md tables what each teacher family needs.
"""

from __future__ import annotations

import abc
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import environment, spaces

from acl.core.errors import ConfigError
from acl.core.spaces import Box


def _lacking(env, member: str, what: str) -> ConfigError:
    """The error for a capability `env` does not declare: names the env and the member."""
    return ConfigError(f"env {env.name or type(env).__name__!r} has no {member}: {what}")


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

    unfeasible_bounds: Box | None = None
    """A widened task space most of which no policy masters: the benchmark's "unfeasible"
    challenge (acl.build.make_challenge builds it; acl.teachers.challenge wraps the
    teacher). None: the env declares none."""
    trivial_bounds: Box | None = None
    """A widened task space most of which is mastered already: the "trivial" challenge.
    None: the env declares none."""
    easy_task: tuple[float, ...] | None = None
    """A task an expert calls easy: the mean of the "high" expert's prior
    (acl.build.make_challenge). None: the task space's default task stands in."""
    has_oracle_action: bool = False
    """Whether `oracle_action` gives a shortest-path action (JSRL's oracle guide)."""

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

    def oracle_action(self, obs: jax.Array) -> jax.Array:
        """[..., O] -> [...] int32: an action on a shortest path to the task's end;
        jittable. Only where `has_oracle_action`."""
        raise _lacking(self, "oracle_action", "no shortest-path oracle (has_oracle_action)")


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
    jittable, and draw replacement goals with `sample_valid_goals` where the env knows
    its valid goals (`has_valid_goals`).
    """

    goal_dim: int
    """Size G of a goal vector."""
    terminates_on_goal: bool = False
    """Whether `step` terminates on reaching the goal; HER then recomputes `terminated`
    of a relabelled transition as `goal_reached` for its new goal."""
    has_valid_goals: bool = False
    """Whether the env knows its set of valid goals (the mazes' free space), which
    `sample_valid_goals` draws from and `goal_grid` lists. Without it a goal teacher
    draws goals uniformly over its goal box."""

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

    def sample_valid_goals(self, key: jax.Array, n: int) -> jax.Array:
        """[n, G] goals drawn (near-)uniformly over the valid goals; jittable. Only where
        `has_valid_goals`."""
        raise _lacking(self, "sample_valid_goals", "no set of valid goals (has_valid_goals)")

    def goal_grid(self) -> np.ndarray:
        """[M, G] float32: a fixed, regular set of valid goals (the goals of the "success
        coverage" metric). Only where `has_valid_goals`."""
        raise _lacking(self, "goal_grid", "no set of valid goals (has_valid_goals)")


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


class LevelEditorEnv(abc.ABC):
    """An env whose episodes build one level of a `LevelTaskEnv`, a placement per step:
    PAIRED's adversary acts in it (`LevelTaskEnv.level_editor` makes one).

    It has no task space (every episode starts from the empty map) and a fixed episode
    length `max_episode_steps`, whose last step is terminated; the reward is always 0
    (the adversary's regret comes from the students). The observation [..., O] is a map
    [H, W, C] (`grid_shape`), the time step (one of `num_time_steps` values) and a noise
    vector, flattened; `split_observation` undoes that for an encoder with a conv over
    the map and an embedding of the time step (recurrent PPO's GridTimeEncoder).
    """

    name: str = ""
    max_episode_steps: int
    grid_shape: tuple[int, int, int]
    """(H, W, C): the shape of the observation's map."""
    num_time_steps: int
    """How many values the observation's time step takes."""

    @abc.abstractmethod
    def default_params(self) -> Any:
        """The editor's params (its level size and budgets)."""

    @abc.abstractmethod
    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, Any]:
        """(obs, state) of an empty level to build."""

    @abc.abstractmethod
    def step(self, key: jax.Array, state: Any, action: jax.Array, params: Any = None):
        """One building step: (obs, state, reward, terminated, truncated, info)."""

    @abc.abstractmethod
    def observation_space(self) -> spaces.Box:
        """The adversary's observation: the map, the time step and the noise, flat."""

    @abc.abstractmethod
    def action_space(self) -> spaces.Discrete:
        """Where to place the next wall, the agent or the goal."""

    @abc.abstractmethod
    def split_observation(self, obs: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """[..., O] -> (map [..., H, W, C], time [...] int32, noise [..., Z])."""

    @abc.abstractmethod
    def level(self, state: Any) -> Any:
        """The level built so far, as its env's params (complete once terminated)."""


class LevelTaskEnv(TaskEnv):
    """A TaskEnv whose tasks are levels drawn by a generator of its own: the host of the
    UED teachers (the maze, a gymnax space's generator, XLand-MiniGrid's rulesets).

    `sample_tasks` is its domain randomisation (dr, plr, robust_plr, and sfl's random
    levels), `edit_tasks` ACCEL's level edits (`has_level_edits`), and `level_editor`
    the env PAIRED's adversary builds levels in (`has_level_editor`). Tasks are the
    env's own, [n, D]; `sample_tasks` and `edit_tasks` are jittable.
    """

    num_walls: int = 0
    """The generator's size knob where it has one: walls of a generated maze when the
    caller names no number. 0 for generators without one, whose `sample_tasks` ignores
    `num_walls`."""
    has_level_edits: bool = False
    """Whether `edit_tasks` makes small edits of levels (ACCEL)."""
    has_level_editor: bool = False
    """Whether `level_editor` builds a level editor env (PAIRED)."""
    uniform_levels: bool = False
    """Whether `sample_tasks` draws uniformly over `task_space`: then a teacher working in
    other coordinates (a challenge's unit cube) draws the same levels uniformly in its
    own (acl.teachers.plr.fresh_levels)."""

    @property
    def task_dim(self) -> int:
        """D: the size of one level as a task."""
        return self.task_space.dim

    def sample_tasks(
        self, key: jax.Array, n: int, num_walls: jax.Array | int | None = None
    ) -> jax.Array:
        """[n, D] generated levels as tasks; a maze's have `num_walls` walls each (None:
        the env's `num_walls`; it may be traced)."""
        raise NotImplementedError

    def edit_tasks(self, key: jax.Array, tasks: jax.Array, num_edits: int) -> jax.Array:
        """Levels tasks [n, D] -> [n, D], each with `num_edits` (static) small edits.
        Only where `has_level_edits`."""
        raise _lacking(self, "edit_tasks", "no level edits (has_level_edits)")

    def level_editor(
        self, num_wall_steps: int | None = None, noise_dim: int | None = None
    ) -> LevelEditorEnv:
        """The env in which an adversary builds this env's levels (None keeps the
        editor's defaults); host side. Only where `has_level_editor`."""
        raise _lacking(self, "level_editor", "no level editor (has_level_editor)")


class ImageDirectionObservation(abc.ABC):
    """The observation half of an env that sees an egocentric image and its heading (the
    maze): obs [..., V * V * C + K] is the image [V, V, C] (`image_shape`) flattened,
    then a one-hot direction [K]. Conv encoders (recurrent PPO's ImageDirectionEncoder)
    read it through `split_observation`."""

    image_shape: tuple[int, int, int]
    """(V, V, C): the observation image's shape."""

    @abc.abstractmethod
    def split_observation(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """[..., O] -> (image [..., V, V, C], direction [...] int32)."""


class TokenObservation:
    """The observation half of an env that sees categorical codes (XLand-MiniGrid's view,
    heading, goal and rules): obs [..., O] holds integers stored as float32, position i
    taking the values 0..token_sizes[i] - 1. Recurrent PPO's TokenEncoder embeds each
    position's code (a one-hot of it times a learned matrix) instead of reading the codes
    as magnitudes."""

    token_sizes: tuple[int, ...]
    """[O]: how many values each observation position takes."""


def random_tasks(
    env: TaskEnv, key: jax.Array, n: int, num_walls: jax.Array | int | None = None
) -> jax.Array:
    """[n, D] float32 random tasks of `env`: its level generator (`LevelTaskEnv`, with
    `num_walls` walls; None: the env's own) where it has one, else uniform over its task
    space (`num_walls` unused)."""
    if isinstance(env, LevelTaskEnv):
        return env.sample_tasks(key, n, num_walls).astype(jnp.float32)
    return env.task_space.sample_uniform(key, n).astype(jnp.float32)
