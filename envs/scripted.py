"""Scripted (hand-written, non-learned) controllers.

Two uses, two signatures:

1. Region checks of the shipped presets' docs (`policy(ctrl, obs, params) -> action`,
   `ctrl` a small float array of gains, so a sweep over gains is a vmap). These are not
   baselines. A controller that solves a task shows the task is feasible; one that
   fails shows only that *this* controller fails, so "infeasible" claims in the env
   docstrings rest on the physics argument given there, with these rollouts as a
   consistency check.

2. Feasibility of a gymnax task space's test tasks (`SCRIPTED`, `scripted_success`): a
   test task that no final student and no scripted controller solves is counted
   infeasible, so the infeasible share of a space is measured, not guessed. `SCRIPTED`
   maps a gymnax id to a pure, jittable `controller(obs, params) -> action`, `params`
   the task's gymnax EnvParams: the controllers read the task's physics, as a
   model-based engineer would. Each is a per-task expert with fixed design constants,
   not tuned per task; its failures bound nothing, its successes prove feasibility.

   - `CartPole-v1` (`cartpole_pole_placement`): linearise gym's cart-pole about upright
     with the task's masses and length, place the closed-loop poles at -sqrt(g / L)
     (twice: the pole's own time scale, L the effective length) and -1 rad/s (twice: the
     cart's), and push right iff the linear feedback -K s is positive. Pole placement
     by matching the characteristic polynomial (Astrom & Murray, Feedback Systems,
     2008, ch. 7). Limits: every push is a full one, so a push too strong for a short,
     light pole (one push turns it by a sizeable part of the 12 deg window) or too weak
     for a heavy one (F < (M + m) g theta_0) fails whoever pushes; on JaxUED's grid
     only the longest, heaviest poles fail, from a few starts, by running the cart off
     the 2.4 m track.
   - `Pendulum-v1` (`pendulum_energy_swing_up`): energy-based swing-up, torque
     k (E_up - E) sign(theta_dot) (Astrom & Furuta 2000, "Swinging up a pendulum by
     energy control"; for a torque-driven pendulum dE/dt is proportional to
     theta_dot u), and near the top a PD on the linearised pendulum (closed loop
     theta_ddot = -wn^2 theta - 2 wn theta_dot), taking over where its torque demand
     is within twice max_torque; clipped to the task's max_torque (gymnax's action is
     the raw torque). Limits: a pendulum whose gravity torque m g l / 2 far exceeds
     max_torque takes too many swings (or, when short, needs more than the 8 rad/s
     speed clip) to come up within 200 steps and the -400 budget; a long one
     (l ~ 10 m) swings so slowly that the time spent low costs too much from many
     starts.
   - `Acrobot-v1` (`acrobot_energy_pump`): bang-bang energy pumping. The elbow torque
     is the only power input (dE/dt = tau theta2_dot, Spong 1995, "The swing up control
     problem for the Acrobot"), so tau = sign(theta2_dot) pumps; weighting the shoulder
     speed in, tau = sign(theta2_dot - 2 theta1_dot), reaches the top sooner (the best
     direction of a scan on the default task). On the default acrobot it reaches the
     goal within the time limit from every start tried and within the -100 budget from
     about 95% of starts (the default task sits on that border). Limits: no
     stabilisation, which the task does not need; heavy or long links (inertia and
     gravity torque far above the motor's) are out of its reach.

   A gymnax id not in `SCRIPTED` has no controller; `scripted_success` refuses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from acl.core.errors import ConfigError
from envs.gymnax_space import GymnaxSpace
from envs.pendulum import PendulumTask

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


# -- feasibility of gymnax task spaces: SCRIPTED, scripted_success --------------------------

Controller = Callable[[jax.Array, Any], jax.Array]
"""`controller(obs, params) -> action`: pure and jittable, `params` the task's EnvParams."""

CARTPOLE_CART_POLE = 1.0
"""Closed-loop pole of the cart modes [rad/s]; faster ones (2 rad/s) run the cart off the
+-2.4 m track more often under long poles."""
PENDULUM_ENERGY_GAIN = 10.0
"""k of the swing-up law [1/s]: large enough to pump at full torque until E is near E_up."""
PENDULUM_WN = 3.0
"""Natural frequency of the stabiliser's closed loop [rad/s]; wn dt = 0.15 keeps gymnax's
semi-implicit Euler step (dt 0.05 s) well damped."""
PENDULUM_CATCH = 2.0
"""The stabiliser takes over where its torque demand is within this many max_torques:
a moderately clipped PD still catches the pendulum, and a strong motor lifts it from
anywhere (a fixed catch angle suits only one of weak and strong motors)."""


def cartpole_pole_placement(obs: jax.Array, params: Any) -> jax.Array:
    """obs [4] = (x, x_dot, theta, theta_dot) -> action int32 (1: push right).

    Linearised about upright (gym's model, F the push):
    theta_ddot = a_t theta + b_t F, x_ddot = a_x theta + b_x F, L = l (4/3 - m / M).
    With F = -K s, det(sI - A + BK) = s^4 + (b_t k4 + b_x k2) s^3 +
    (b_t k3 + b_x k1 - a_t) s^2 + D k2 s + D k1, D = a_x b_t - b_x a_t = -g / (M L),
    so matching (s + w)^2 (s + c)^2 gives K in closed form.
    """
    # gravity 0 leaves the cart and pole driven by one force alone (D = 0: no pole
    # placement); the floor keeps the gains finite there, where nothing falls anyway.
    g = jnp.maximum(params.gravity, 1e-6)
    total = params.total_mass
    length = params.length * (4.0 / 3.0 - params.masspole / total)
    a_t = g / length
    b_t = -1.0 / (total * length)
    b_x = (1.0 + params.polemass_length / (total * length)) / total
    d = -g / (total * length)
    w, c = jnp.sqrt(a_t), CARTPOLE_CART_POLE
    c3 = 2 * (w + c)
    c2 = w * w + 4 * w * c + c * c
    c1 = 2 * w * c * (w + c)
    c0 = (w * c) ** 2
    k1, k2 = c0 / d, c1 / d
    k3 = (c2 + a_t - b_x * k1) / b_t
    k4 = (c3 - b_x * k2) / b_t
    force = -(k1 * obs[0] + k2 * obs[1] + k3 * obs[2] + k4 * obs[3])
    return (force > 0).astype(jnp.int32)


def pendulum_energy_swing_up(obs: jax.Array, params: Any) -> jax.Array:
    """obs [3] = (cos theta, sin theta, theta_dot), theta = 0 upright -> torque [1] in
    [-max_torque, max_torque].

    gymnax: theta_ddot = w0^2 sin(theta) + b u, w0^2 = 3 g / (2 l), b = 3 / (m l^2).
    E = theta_dot^2 / 2 + w0^2 (cos(theta) - 1) is 0 upright at rest, and
    dE/dt = b theta_dot u: the swing-up pushes along theta_dot while E < 0.
    """
    theta, theta_dot = jnp.arctan2(obs[1], obs[0]), obs[2]
    w0_sq = 1.5 * params.g / params.l
    b = 3.0 / (params.m * params.l**2)
    energy = 0.5 * theta_dot**2 + w0_sq * (jnp.cos(theta) - 1.0)
    # sign(0) = +1: a pendulum at rest at the bottom still gets a first push.
    direction = jnp.where(theta_dot >= 0, 1.0, -1.0)
    pump = PENDULUM_ENERGY_GAIN * (0.0 - energy) * direction / b
    wn = PENDULUM_WN
    # Linearised (w0^2 theta, not w0^2 sin theta): exact gravity cancellation would widen
    # the catch region to angles it cannot hold from (2% of default starts fail then).
    hold = -((w0_sq + wn**2) * theta + 2 * wn * theta_dot) / b
    torque = jnp.where(jnp.abs(hold) <= PENDULUM_CATCH * params.max_torque, hold, pump)
    return jnp.clip(torque, -params.max_torque, params.max_torque)[None]


def acrobot_energy_pump(obs: jax.Array, params: Any) -> jax.Array:
    """obs [6] = (cos t1, sin t1, cos t2, sin t2, t1_dot, t2_dot) -> action int32 in
    {0, 2} (torque -1, +1): tau = sign(t2_dot - 2 t1_dot)."""
    del params  # the pumping direction is the same for every task
    return jnp.where(obs[5] - 2.0 * obs[4] > 0, 2, 0).astype(jnp.int32)


SCRIPTED: dict[str, Controller] = {
    "CartPole-v1": cartpole_pole_placement,
    "Pendulum-v1": pendulum_energy_swing_up,
    "Acrobot-v1": acrobot_energy_pump,
}
"""gymnax id -> its scripted controller (module docstring); a declared registry."""


def scripted_success(
    env: GymnaxSpace, tasks: np.ndarray, episodes: int = 1, seed: int = 0
) -> np.ndarray:
    """Share of `episodes` episodes per task that the id's scripted controller masters
    (`env.is_success` of the episode's return): tasks [M, D] -> [M] in [0, 1].

    Full episodes as the env plays them (its reset, termination and the task's time
    limit), one jit over tasks x episodes. Raises ConfigError for an id without one.
    """
    controller = SCRIPTED.get(env.gymnax_id)
    if controller is None:
        raise ConfigError(
            f"no scripted controller for gymnax id {env.gymnax_id!r} "
            f"(envs.scripted.SCRIPTED has: {', '.join(SCRIPTED)})"
        )
    tasks = np.asarray(tasks, np.float32)
    if tasks.ndim != 2 or tasks.shape[1] != env.task_space.dim:
        raise ConfigError(
            f"scripted_success: tasks must be [M, {env.task_space.dim}], got shape {tasks.shape}"
        )
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ConfigError(f"scripted_success: episodes must be an int >= 1, got {episodes!r}")
    if isinstance(env, PendulumTask):
        # The preset's action is a fraction of max_torque, gymnax's the torque itself.
        policy = lambda _, obs, params: controller(obs, params) / params.max_torque
    else:
        policy = lambda _, obs, params: controller(obs, params)
    base = env.default_params()

    def task_returns(task: jax.Array, keys: jax.Array) -> jax.Array:  # [D], [E, 2] -> [E]
        params = env.task_to_params(task, base)
        return jax.vmap(lambda key: episode_return(env, policy, None, params, key))(keys)

    keys = jax.random.split(jax.random.PRNGKey(seed), (len(tasks), episodes))
    returns = jax.jit(jax.vmap(task_returns))(jnp.asarray(tasks), keys)
    return np.asarray(env.is_success(returns), np.float64).mean(axis=1)
