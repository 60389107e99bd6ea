"""Scripted controllers used to check the trivial / infeasible regions claimed in the env docs.

These are not baselines. A scripted controller that solves a task shows the task is
feasible; one that fails shows only that *this* controller fails, so "infeasible" claims
in the env docstrings rest on the physics argument given there, with these rollouts as a
consistency check. Every policy has the signature `policy(ctrl, obs, params) -> action`,
where `ctrl` is a small float array of controller gains (so a sweep over gains is a vmap).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Policy = Callable[[jax.Array, jax.Array, Any], jax.Array]


def episode_return(env, policy: Policy, ctrl: jax.Array, params: Any, key: jax.Array) -> jax.Array:
    """Return of one episode (reset, then at most `env.max_episode_steps` steps), scalar."""
    reset_key, step_key = jax.random.split(key)
    obs, state = env.reset(reset_key, params)

    def body(carry, step_key):
        obs, state, ret, alive = carry
        action = policy(ctrl, obs, params)
        obs, state, reward, terminated, truncated, _ = env.step(step_key, state, action, params)
        ret = ret + jnp.where(alive, reward, 0.0)
        return (obs, state, ret, alive & ~terminated & ~truncated), None

    keys = jax.random.split(step_key, env.max_episode_steps)
    init = (obs, state, jnp.float32(0.0), jnp.array(True))
    (_, _, ret, _), _ = jax.lax.scan(body, init, keys)
    return ret


def cartpole_linear(ctrl, obs, params):
    """Bang-bang linear feedback: push right iff ctrl . (x, x_dot, theta, theta_dot) > 0.

    ctrl [4]; (0, 0, 1, 0.5) is the one-line "naive" policy (no cart feedback).
    """
    return (jnp.dot(ctrl, obs) > 0).astype(jnp.int32)


def pendulum_swing_up(ctrl, obs, params):
    """Energy pumping far from upright, PD near it; ctrl = (switch angle, wn, pump gain).

    Uses the task's physics (mass, length, torque limit) from `params`, so it is a
    per-task expert. Returns the action in [-1, 1] (a fraction of max_torque).
    """
    switch, wn, pump_gain = ctrl[0], ctrl[1], ctrl[2]
    theta = jnp.arctan2(obs[1], obs[0])  # 0 = upright
    theta_dot = obs[2]
    w0_sq = 3 * params.g / (2 * params.l)  # theta_ddot = w0_sq sin(theta) + b u
    b = 3 / (params.m * params.l**2)
    energy = 0.5 * theta_dot**2 + w0_sq * jnp.cos(theta)  # w0_sq at rest upright
    u_pump = pump_gain * theta_dot * (w0_sq - energy)
    u_pd = -((w0_sq + wn**2) * theta + 2 * wn * theta_dot) / b
    u = jnp.where(jnp.cos(theta) > jnp.cos(switch), u_pd, u_pump)
    return jnp.clip(u / params.max_torque, -1.0, 1.0)[None]


def pendulum_pd(ctrl, obs, params):
    """Task-independent PD: a = clip(-(k_p theta + k_d theta_dot)); ctrl = (k_p, k_d)."""
    theta = jnp.arctan2(obs[1], obs[0])
    return jnp.clip(-(ctrl[0] * theta + ctrl[1] * obs[2]), -1.0, 1.0)[None]


def mountain_car_pump(ctrl, obs, params):
    """Throttle c in the direction of motion (energy pumping); ctrl = (c, first push sign)."""
    v = obs[1]
    return (jnp.where(v == 0, ctrl[1], jnp.sign(v)) * ctrl[0])[None]


def mountain_car_constant(ctrl, obs, params):
    """Constant throttle ctrl[0] to the right: no swinging."""
    return jnp.full((1,), ctrl[0])


def acrobot_rule(ctrl, obs, params):
    """Torque sign(ctrl . (theta1_dot, theta2_dot)) as action index 0/1/2 (-, 0, +)."""
    return (1 + jnp.sign(ctrl[0] * obs[4] + ctrl[1] * obs[5])).astype(jnp.int32)


def acrobot_rules(n: int = 16) -> jax.Array:
    """`n` rule directions evenly spaced on the circle, shape [n, 2]."""
    angles = jnp.arange(n) * 2 * jnp.pi / n
    return jnp.stack([jnp.cos(angles), jnp.sin(angles)], axis=-1)


ACROBOT_FIXED_RULE = (float(jnp.cos(5 * jnp.pi / 8)), float(jnp.sin(5 * jnp.pi / 8)))
"""The best of the 16 rules on the default task: torque along 0.92 theta2_dot - 0.38 theta1_dot."""


STUMP_TRACKS_STANCE = (0.7, -0.2, 0.5)
"""Default `stump_tracks_stance` gains: (splay [rad], knee [rad], k_p)."""


def stump_tracks_stance(ctrl, obs, params):
    """Stand still: legs splayed into an A-frame, held by P control on the joint angles.

    ctrl = (splay, knee, k_p), e.g. `STUMP_TRACKS_STANCE`. Legs alternate front (hip
    target +splay: foot forward) and back (-splay), which suits both bipeds (legs 0, 1 on
    one hip) and the spider (legs 0, 2 at the front hips, 1, 3 at the back). A leg in the
    air aims at +-splay from the vertical instead (its hip target less the hull angle), so
    it lands where the A-frame wants it when the hull has tipped. Knees go to `knee`.
    Action = clip(k_p * angle error) in [-1, 1]: a target speed, which the env's motors
    reach within their torque, so the joints behave as stiff position servos. The number
    of legs comes from the observation size (4 + 5 * legs + 10 lidar). Jittable; `params`
    is unused.
    """
    del params
    splay, knee, k_p = ctrl[0], ctrl[1], ctrl[2]
    legs = (obs.shape[-1] - 14) // 5
    joints = obs[4 : 4 + 5 * legs].reshape(legs, 5)
    hip_angle, knee_angle, contact = joints[:, 0], joints[:, 2] - 1.0, joints[:, 4]
    side = jnp.where(jnp.arange(legs) % 2 == 0, 1.0, -1.0)
    hip_target = side * splay - jnp.where(contact > 0, 0.0, obs[0])
    actions = jnp.stack([hip_target - hip_angle, knee - knee_angle], -1).reshape(-1)
    return jnp.clip(k_p * actions, -1.0, 1.0)
