"""MountainCarContinuous-v0 with task = (engine power, gravity).

Wraps gymnax 1.0.1 `ContinuousMountainCar`: position in [-1.2, 0.6], speed clipped
to 0.07 per step, start position uniform in [-0.6, -0.4] at rest, goal at x >= 0.45,
999 steps. Dynamics per step: v += a * power - cos(3 x) * gravity. Reward:
-0.1 a^2 per step, plus 100 on reaching the goal (which ends the episode).

Actions: Box(-1, 1, (1,)). `step` clips the action to [-1, 1] before the step, so the
control cost uses the clipped action. (gym and gymnax charge the raw action, which
makes the return unbounded below for an unclipped Gaussian policy.)

Task space (default = gym's MountainCarContinuous-v0):

| dim | name | low | high | default | unit |
|---|---|---|---|---|---|
| 0 | power | 0.0002 | 0.004 | 0.0015 | position units / step^2 |
| 1 | gravity | 0.0005 | 0.006 | 0.0025 | position units / step^2 |

Success ("mastered"): return > 90 (gym's reward threshold). At full throttle that
means reaching the goal within 100 steps. Return bounds: (-0.1 T, 100) = (-99.9, 100).

Regions (reasoned, then checked with `envs/scripted.py` on 256 uniform tasks x 8 starts):

- Trivial, power > gravity: the engine beats the steepest slope (cos(3x) <= 1), so
  driving right at constant throttle reaches the goal. No swinging, so this is the part
  of the space where a random policy's exploration problem disappears. Constant
  throttle masters 41% of the space: every task with power > gravity (33%) and some
  with less power, where the run-up from the start helps.
- Infeasible: the kinetic energy at the speed clip, 0.07^2 / 2, covers a climb of only
  0.00245 / 0.659 = 0.0037 in gravity units (bottom to goal is (1 + sin 1.35) / 3 =
  0.659). With more gravity the engine must also beat part of the slope (at gravity
  0.006 it takes power 0.002). With little power the swing-up takes far longer than the
  100-step budget of the threshold. No pumping controller (throttle 0.3-1 along the
  velocity) masters any start on 14% of the space, e.g. (power, gravity) = (0.0015,
  0.006), (0.0005, 0.0025) or (0.0002, 0.001).
- Learnable: the rest (~45%), including the default task: the car must swing back and
  forth to gain energy.

Benchmark variants:

- `unfeasible_bounds`: gravity up to 0.03; 82% of it is mastered on < 10% of starts by
  every controller.
- `trivial_bounds`: power up to 0.03; 89% of it is mastered by constant throttle.
"""

from __future__ import annotations

import jax.numpy as jnp

from envs._checks import positive_int
from envs.gymnax_space import GymnaxSpace, TaskDimension
from envs.registry import ENVS

DIMENSIONS = (
    TaskDimension("power", 0.0002, 0.004, ("power",)),
    TaskDimension("gravity", 0.0005, 0.006, ("gravity",)),
)


@ENVS.register("mountain_car_continuous")
class MountainCarContinuousTask(GymnaxSpace):
    """MountainCarContinuous-v0 whose engine power and gravity are the task.

    Static config: `max_episode_steps` (default 999); the return lower bound scales
    with it, the success threshold (90) does not.
    """

    name = "mountain_car_continuous"

    def __init__(self, max_episode_steps: int | None = None):
        steps = positive_int(max_episode_steps, "env.max_episode_steps") or 999
        super().__init__(
            "MountainCarContinuous-v0",
            DIMENSIONS,
            90.0,
            (-0.1 * steps, 100.0),
            steps,
            field_name="task_space",
        )
        space = self.task_space
        self.unfeasible_bounds = space.replace(
            low=(0.0002, 0.0005), high=(0.004, 0.03), field_name="unfeasible_bounds"
        )
        self.trivial_bounds = space.replace(
            low=(0.0002, 0.0005), high=(0.03, 0.006), field_name="trivial_bounds"
        )

    def step(self, key, state, action, params):
        """`action` [1], clipped to [-1, 1] before the step (and before the control cost)."""
        action = jnp.clip(jnp.asarray(action, jnp.float32), -1.0, 1.0)
        return super().step(key, state, action, params)
