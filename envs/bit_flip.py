"""Bit flipping (Andrychowicz et al. 2017, "Hindsight Experience Replay", section 3.1).

State and goal are bit vectors in {0, 1}^n (static config `num_bits`, default 10). The
action is the index of the bit to flip (Discrete(n)). The reward of a step is 0 when
the state after it equals the goal and -1 otherwise; nothing terminates, and the episode
is truncated after n steps (the paper's episode length). As in the paper, reaching the
goal does not end the episode.

Observation: concat(state, goal) as float32, shape [2n]; the goal sits inside the
observation, so HER can relabel stored observations (`GoalTaskEnv`).

Task: the goal, a vector in the Box [0, 1]^n that `task_to_params` rounds to bits
(> 0.5 is 1), so a uniform teacher hands out uniform goals. With `teach_start=True` the
task is [0, 1]^(2n): goal then start state. Otherwise the start state is drawn
uniformly from the reset key.

Success: the state equals the goal after *some* step of the episode. Why not "at the
final step": there is no no-op action, so a state that reached the goal must leave it
on the next step and can only be back two steps later. Being on the goal at step n
therefore needs the Hamming distance from the start to have the parity of n, and half of
all (start, goal) pairs could never succeed under that definition. The HER paper's
appendix counts an episode as successful when the goal is achieved at an arbitrary step
of it, which is this definition. It also follows from the return alone: every step
off the goal costs -1, so success <=> return > -n, which is `is_success`
(`success_threshold = -n`). Evaluation plays greedy episodes from random starts on the
test goals and counts this success.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from acl.core.spaces import UNIT, Box
from envs._checks import positive_int
from envs.base import GoalTaskEnv
from envs.registry import ENVS


@struct.dataclass
class BitFlipParams:
    """What a teacher may change: the goal (and optionally the start state)."""

    goal: jax.Array
    """[n] float32 in {0, 1}."""
    start: jax.Array
    """[n] float32 in {0, 1}; used only when the env has `teach_start`."""


@struct.dataclass
class BitFlipState:
    bits: jax.Array
    """[n] float32 in {0, 1}: the current state."""
    goal: jax.Array
    """[n] float32 in {0, 1}."""
    time: jax.Array
    """Steps taken in this episode, int32."""


@ENVS.register("bit_flip")
class BitFlip(GoalTaskEnv):
    """HER's bit-flipping env. Static config: `num_bits` n, `teach_start`."""

    name = "bit_flip"
    terminates_on_goal = False  # HER's bit flipping runs on after the goal

    def __init__(self, num_bits: int = 10, teach_start: bool = False):
        self.num_bits = positive_int(num_bits, "env.num_bits", allow_none=False)
        if not isinstance(teach_start, bool):
            raise ConfigError(f"env.teach_start: expected true/false, got {teach_start!r}")
        self.teach_start = teach_start
        n = self.num_bits
        names = tuple(f"goal{i}" for i in range(n))
        default = (0.0,) * n
        if teach_start:
            names += tuple(f"start{i}" for i in range(n))
            default += (1.0,) * n
        dim = len(names)
        self.task_space = Box(
            low=(0.0,) * dim,
            high=(1.0,) * dim,
            names=names,
            units=("",) * dim,
            default=default,
            limits=(UNIT,) * dim,
        )
        self.goal_dim = n
        self.max_episode_steps = n
        # return > -n <=> at least one step ended on the goal (see the module docstring)
        self.success_threshold = -float(n)
        self.return_bounds = (-float(n), 0.0)

    # -- TaskEnv ---------------------------------------------------------------------

    def default_params(self) -> BitFlipParams:
        zeros = jnp.zeros((self.num_bits,), jnp.float32)
        return BitFlipParams(goal=zeros, start=zeros)

    def task_to_params(self, task: jax.Array, base_params: BitFlipParams) -> BitFlipParams:
        """task [n] (goal) or [2n] (goal, start) in [0, 1] -> bits (> 0.5 is 1)."""
        bits = (jnp.asarray(task, jnp.float32) > 0.5).astype(jnp.float32)
        n = self.num_bits
        start = bits[n:] if self.teach_start else base_params.start
        return base_params.replace(goal=bits[:n], start=start)

    def reset(self, key: jax.Array, params: BitFlipParams) -> tuple[jax.Array, BitFlipState]:
        if self.teach_start:
            bits = params.start
        else:
            bits = jax.random.bernoulli(key, 0.5, (self.num_bits,)).astype(jnp.float32)
        state = BitFlipState(bits=bits, goal=params.goal, time=jnp.zeros((), jnp.int32))
        return self._obs(state), state

    def step(self, key, state: BitFlipState, action: jax.Array, params: BitFlipParams):
        flip = jax.nn.one_hot(action, self.num_bits, dtype=jnp.float32)
        bits = jnp.abs(state.bits - flip)
        time = state.time + 1
        new_state = BitFlipState(bits=bits, goal=state.goal, time=time)
        reward = self.compute_reward(bits, state.goal)
        terminated = jnp.asarray(False)
        truncated = time >= self.max_episode_steps
        return self._obs(new_state), new_state, reward, terminated, truncated, {}

    def _obs(self, state: BitFlipState) -> jax.Array:
        return jnp.concatenate([state.bits, state.goal])

    def observation_space(self) -> spaces.Box:
        return spaces.Box(0.0, 1.0, (2 * self.num_bits,), jnp.float32)

    def action_space(self) -> spaces.Discrete:
        return spaces.Discrete(self.num_bits)

    # -- GoalTaskEnv -----------------------------------------------------------------

    def achieved_goal(self, obs: jax.Array) -> jax.Array:
        return obs[..., : self.num_bits]

    def desired_goal(self, obs: jax.Array) -> jax.Array:
        return obs[..., self.num_bits :]

    def with_goal(self, obs: jax.Array, goal: jax.Array) -> jax.Array:
        goal = jnp.broadcast_to(goal, obs.shape[:-1] + (self.num_bits,)).astype(obs.dtype)
        return jnp.concatenate([obs[..., : self.num_bits], goal], axis=-1)

    def goal_reached(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        return jnp.all((achieved > 0.5) == (goal > 0.5), axis=-1)

    def compute_reward(self, achieved: jax.Array, goal: jax.Array) -> jax.Array:
        """0 on the goal, -1 elsewhere, as `step` gives."""
        return self.goal_reached(achieved, goal).astype(jnp.float32) - 1.0

    def goal_from_task(self, task: jax.Array) -> jax.Array:
        """[..., D] -> [..., n]: the goal part (the first n entries, before rounding)."""
        return jnp.asarray(task)[..., : self.num_bits]

    def task_with_goal(self, task: jax.Array, goal: jax.Array) -> jax.Array:
        """[..., D], [..., n] -> [..., D]: the task with its goal part replaced."""
        task = jnp.asarray(task)
        goal = jnp.broadcast_to(goal, task.shape[:-1] + (self.num_bits,)).astype(task.dtype)
        return jnp.concatenate([goal, task[..., self.num_bits :]], axis=-1)
