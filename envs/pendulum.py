"""Pendulum-v1 with task = (mass [kg], length [m], max torque [N m]).

Wraps gymnax 1.0.1 `Pendulum` (gravity 10, dt 0.05 s, speed clipped to 8 rad/s, 200
steps, random start angle in [-pi, pi] and speed in [-1, 1]). Dynamics:
theta_ddot = 3 g / (2 l) sin(theta) + 3 / (m l^2) u, with theta = 0 upright.
Reward per step: -(theta^2 + 0.1 theta_dot^2 + 0.001 u^2), u the applied torque; no
termination, only the time limit.

Actions: the agent acts in the fixed box [-1, 1] (`action_space()` is Box(-1, 1, (1,))
for every task). `step` clips the action to [-1, 1] and applies torque
u = action * max_torque, so the same action means the same *fraction* of the available
torque on every task. (gymnax itself would clip a raw torque to [-max_torque,
max_torque] and report a task-dependent action box, which a policy network trained
across tasks cannot follow.)

Task space (default = gym's Pendulum-v1):

| dim | name | low | high | default | unit |
|---|---|---|---|---|---|
| 0 | mass (`m`) | 0.2 | 3.0 | 1.0 | kg |
| 1 | length (`l`) | 0.2 | 3.0 | 1.0 | m |
| 2 | max_torque | 0.2 | 6.0 | 2.0 | N m |

Success ("mastered"): return > -400. Why not -200: returns depend a lot on the random
start. Our swing-up controller (energy pumping + PD, `envs/scripted.py`) averages -150
to -160 on the default task, about what good RL agents report, yet only ~70% of its
episodes beat -200, while all of 256 beat -400 (worst -368). Not balancing costs more:
zero torque scores -1941 to -447 over 256 starts (median -1182). So -400 means "swings
up and balances from any start". The threshold does not scale with
`max_episode_steps`: once balanced, the per-step cost is near 0.
Return bounds: (-T (pi^2 + 0.1 * 8^2 + 0.001 * 6^2), 0) = (-3261.1, 0) for T = 200.

Regions, in terms of the torque ratio rho = max_torque / (m g l / 2): the motor's
torque over the gravity torque on the horizontal pendulum. Reasoned, then checked with
`envs/scripted.py`: 24 swing-up controllers tuned with the task's physics, 256 uniform
tasks x 16 starts.

- Trivial, rho >= 1 (15% of the space): the motor lifts the pendulum straight up, no
  swinging needed. The swing-up controllers master all of these, and one fixed,
  task-independent PD rule, a = clip(-(theta + 0.1 theta_dot)), masters 15% of the
  space (none with rho < 1).
- Infeasible, rho < 0.1 (19%): pumping the energy in takes too long for the -400 budget
  (< 20% of starts mastered). Also short pendulums (l < ~0.6 m) with rho < ~0.3:
  reaching the top from the bottom needs a speed of sqrt(6 g / l) > 8 rad/s, above the
  speed clip, so the motor has to push through the top half, which it cannot.
  7-13% of the space (depending on the start seeds) is mastered on < 10% of starts by
  every controller.
- Learnable, 0.1 <= rho < 1: swing-up by energy pumping. For rho < 0.5 only the starts
  with enough initial energy make the threshold, so the "% mastered" of these tasks
  depends on the start: 57% of the space is mastered on < 90% of starts by every
  controller.

Benchmark variants:

- `unfeasible_bounds`: mass up to 20 kg; 73% of it has rho < 0.1. 53% of it is mastered
  on < 10% of starts, and 90% on < 90%, by every controller.
- `trivial_bounds`: max torque up to 60 N m; 79% of it has rho >= 1, and the fixed PD
  rule masters 65% of it. The action cost 0.001 u^2 grows to 3.6 per step at 60 N m, so
  the return lower bound of that space is -3974.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from gymnax.environments import spaces

from envs._checks import positive_int
from envs.gymnax_space import GymnaxSpace, TaskDimension
from envs.registry import ENVS

DIMENSIONS = (
    TaskDimension("mass", 0.2, 3.0, ("m",)),
    TaskDimension("length", 0.2, 3.0, ("l",)),
    TaskDimension("max_torque", 0.2, 6.0, ("max_torque",)),
)


def _worst_step_cost(max_torque: float) -> float:
    return math.pi**2 + 0.1 * 8.0**2 + 0.001 * max_torque**2


@ENVS.register("pendulum")
class PendulumTask(GymnaxSpace):
    """Pendulum-v1 whose mass, length and torque limit are the task; actions in [-1, 1].

    Static config: `max_episode_steps` (default 200); the return lower bound scales
    with it, the success threshold (-400) does not.
    """

    name = "pendulum"

    def __init__(self, max_episode_steps: int | None = None):
        steps = positive_int(max_episode_steps, "env.max_episode_steps") or 200
        bounds = (-steps * _worst_step_cost(6.0), 0.0)
        super().__init__("Pendulum-v1", DIMENSIONS, -400.0, bounds, steps, field_name="task_space")
        space = self.task_space
        self.unfeasible_bounds = space.replace(
            low=(0.2, 0.2, 0.2), high=(20.0, 3.0, 6.0), field_name="unfeasible_bounds"
        )
        self.trivial_bounds = space.replace(
            low=(0.2, 0.2, 0.2), high=(3.0, 3.0, 60.0), field_name="trivial_bounds"
        )

    def step(self, key, state, action, params):
        """`action` [1] in [-1, 1] (clipped) is the torque as a fraction of max_torque."""
        torque = jnp.clip(jnp.asarray(action, jnp.float32), -1.0, 1.0) * params.max_torque
        return super().step(key, state, torque, params)

    def action_space(self):
        return spaces.Box(low=-1.0, high=1.0, shape=(1,), dtype=jnp.float32)
