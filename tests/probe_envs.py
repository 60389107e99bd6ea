"""Tiny probe environments (rejax-style) whose right answer is known exactly."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import spaces

from acl.core.spaces import Box
from envs.base import TaskEnv


@struct.dataclass
class ProbeParams:
    target: jax.Array


@struct.dataclass
class ProbeState:
    time: jax.Array


class MatchTargetDiscrete(TaskEnv):
    """One step. obs = [target in {0, 1}]; reward 1 for the action equal to the target.

    The task decides the target (task > 0.5), so learning it needs the task to reach
    the params, the params the observation, and the policy to read it.
    """

    name = "probe_discrete"
    task_space = Box(low=(0.0,), high=(1.0,), names=("target",))
    success_threshold = 0.5
    return_bounds = (0.0, 1.0)
    max_episode_steps = 1

    def default_params(self):
        return ProbeParams(target=jnp.zeros(()))

    def task_to_params(self, task, base_params):
        return base_params.replace(target=(task[0] > 0.5).astype(jnp.float32))

    def reset(self, key, params):
        return params.target[None], ProbeState(time=jnp.zeros((), jnp.int32))

    def step(self, key, state, action, params):
        reward = (action == params.target.astype(jnp.int32)).astype(jnp.float32)
        return (
            params.target[None],
            ProbeState(state.time + 1),
            reward,
            jnp.asarray(True),
            jnp.asarray(False),
            {},
        )

    def observation_space(self):
        return spaces.Box(0.0, 1.0, (1,))

    def action_space(self):
        return spaces.Discrete(2)


class MatchTargetContinuous(MatchTargetDiscrete):
    """One step. obs = [target]; reward -(action - target)^2 with the target the task."""

    name = "probe_continuous"
    task_space = Box(low=(-0.8,), high=(0.8,), names=("target",))
    success_threshold = -0.01
    return_bounds = (-4.0, 0.0)

    def task_to_params(self, task, base_params):
        return base_params.replace(target=task[0])

    def step(self, key, state, action, params):
        reward = -((action[0] - params.target) ** 2)
        return (
            params.target[None],
            ProbeState(state.time + 1),
            reward,
            jnp.asarray(True),
            jnp.asarray(False),
            {},
        )

    def action_space(self):
        return spaces.Box(-1.0, 1.0, (1,))


class ConstantRewardTruncated(MatchTargetDiscrete):
    """Reward 1 every step, constant obs, never terminates, truncated after 5 steps.

    With correct time-limit bootstrapping the value of the (only) observation is
    1 / (1 - gamma); treating truncation as termination would pull it far lower.
    """

    name = "probe_truncation"
    max_episode_steps = 5
    success_threshold = 4.5
    return_bounds = (5.0, 5.0)

    def reset(self, key, params):
        return jnp.ones((1,)), ProbeState(time=jnp.zeros((), jnp.int32))

    def step(self, key, state, action, params):
        time = state.time + 1
        return (
            jnp.ones((1,)),
            ProbeState(time),
            jnp.asarray(1.0),
            jnp.asarray(False),
            time >= self.max_episode_steps,
            {},
        )


class MatchTargetOneHot(MatchTargetDiscrete):
    """One step, K = 6 actions. The task picks target floor(6 task) (task in [0, 1));
    obs = one-hot(target); reward 1 for the action equal to the target.

    Unlike the 2-action probe, a fixed or random greedy policy almost never gets every
    target right (a random net: about (1/6)^6), so mastering all of it shows learning.
    """

    name = "probe_one_hot"
    num_actions = 6
    task_space = Box(low=(0.0,), high=(1.0,), names=("target",))

    def task_to_params(self, task, base_params):
        target = jnp.clip(jnp.floor(task[0] * self.num_actions), 0, self.num_actions - 1)
        return base_params.replace(target=target)

    def _obs(self, params):
        return jax.nn.one_hot(params.target.astype(jnp.int32), self.num_actions)

    def reset(self, key, params):
        return self._obs(params), ProbeState(time=jnp.zeros((), jnp.int32))

    def step(self, key, state, action, params):
        reward = (action == params.target.astype(jnp.int32)).astype(jnp.float32)
        return (
            self._obs(params),
            ProbeState(state.time + 1),
            reward,
            jnp.asarray(True),
            jnp.asarray(False),
            {},
        )

    def observation_space(self):
        return spaces.Box(0.0, 1.0, (self.num_actions,))

    def action_space(self):
        return spaces.Discrete(self.num_actions)


class RecallCue(MatchTargetDiscrete):
    """Three steps, two actions. The task picks a cue (task > 0.5), shown at the first step
    only: obs [1, cue], then [0, 0]. The last step rewards 1 for the action equal to the
    cue; the others reward nothing.

    At the last step a feed-forward policy sees [0, 0] whatever the cue, so it is right
    half the time at best (a deterministic one: on the tasks of one cue only); a
    recurrent policy can carry the cue there.
    """

    name = "probe_memory"
    max_episode_steps = 3

    def reset(self, key, params):
        return jnp.stack([1.0, params.target]), ProbeState(time=jnp.zeros((), jnp.int32))

    def step(self, key, state, action, params):
        time = state.time + 1
        last = time >= self.max_episode_steps
        hit = (action == params.target.astype(jnp.int32)).astype(jnp.float32)
        return (
            jnp.zeros(2),
            ProbeState(time),
            jnp.where(last, hit, 0.0),
            last,
            jnp.asarray(False),
            {},
        )

    def observation_space(self):
        return spaces.Box(0.0, 1.0, (2,))
