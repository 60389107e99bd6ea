"""Acrobot-v1 with task = (link 1 mass [kg], link 2 mass [kg], joint torque [N m]).

Wraps gymnax 1.0.1 `Acrobot` (dt 0.2 s, one RK4 step per env step, 500 steps, start
near hanging, discrete torque {-tau, 0, +tau} at the elbow). The episode terminates
when the tip height -cos(t1) - cos(t1 + t2) > 1 (in units of the default link length).
Reward -1 per step that does not terminate, 0 on the terminating one.

Which parameters act: the dynamics (`dsdt`) use link_mass_1, link_mass_2,
link_length_1, the centre-of-mass positions and link_moi. link_length_2 is unused, as
in gym's LINK_LENGTH_2. The inertia `link_moi` is fixed (1) and does not scale with
the masses, so a heavier link means a stronger gravity torque for the same inertia.
The termination test uses unit lengths whatever the link lengths, so this env varies
the masses. The third dimension, the elbow torque magnitude (gymnax's
`available_torque = tau * (-1, 0, 1)`), is there because masses alone have no "trivial"
direction to extend the space in: light links do not make the swing-up trivial with a
weak motor.

Task space (default = gym's Acrobot-v1):

| dim | name | low | high | default | unit |
|---|---|---|---|---|---|
| 0 | link_mass_1 | 0.1 | 3.0 | 1.0 | kg |
| 1 | link_mass_2 | 0.1 | 3.0 | 1.0 | kg |
| 2 | torque | 0.2 | 3.0 | 1.0 | N m |

Success ("mastered"): return > -100 (gym's reward threshold): the tip goes above the
line within 100 steps (20 s). Return bounds: (-T, 0) = (-500, 0).

Regions (checked with `envs/scripted.py`, 256 uniform tasks x 8 starts, 16 bang-bang
rules "torque along k . (theta1_dot, theta2_dot)"; the physics is only sketched):

- Trivial: 34% of the space is mastered by one fixed rule (the best on the default
  task, torque along 0.92 theta2_dot - 0.38 theta1_dot), mostly with torque > 1 and
  a light second link.
- Infeasible: a weak motor (torque < ~0.5 N m: no rule masters any start) or a heavy
  second link with a moderate motor (link_mass_2 > ~2.5 with torque <~ 1). The energy
  needed to raise the tip grows with the masses, while the work per swing is bounded by
  the torque times the elbow's swing. No rule masters more than 10% of the starts on
  24% of the space. A learned policy might beat these rules near the border, so this is
  a checked estimate, not a proof.
- Learnable: the remaining ~42%, including the default task (best rule: about -80 on
  average; the fixed rule masters ~90% of its starts, so the default sits on the
  trivial/learnable border).

Benchmark variants:

- `unfeasible_bounds`: masses up to 10 kg and torque down to 0.05; 67% of it is
  mastered on < 10% of starts by every rule, 91% on < 90%.
- `trivial_bounds`: torque up to 20 N m; 81% of it is mastered by the fixed rule.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from acl.core.spaces import NON_NEGATIVE
from envs._checks import positive_int
from envs.gymnax_space import GymnaxSpace, TaskDimension
from envs.registry import ENVS

DIMENSIONS = (
    TaskDimension("link_mass_1", 0.1, 3.0, ("link_mass_1",)),
    TaskDimension("link_mass_2", 0.1, 3.0, ("link_mass_2",)),
    # gymnax's torque is the array available_torque, which no config dimension may set:
    # this preset's task_to_params scales it.
    TaskDimension("torque", 0.2, 3.0, (), unit="N m", limit=NON_NEGATIVE, default=1.0),
)


@ENVS.register("acrobot")
class AcrobotTask(GymnaxSpace):
    """Acrobot-v1 whose link masses and elbow torque are the task.

    Static config: `max_episode_steps` (default 500); the return lower bound scales
    with it, the success threshold (-100) does not.
    """

    name = "acrobot"

    def __init__(self, max_episode_steps: int | None = None):
        steps = positive_int(max_episode_steps, "env.max_episode_steps") or 500
        super().__init__(
            "Acrobot-v1", DIMENSIONS, -100.0, (-float(steps), 0.0), steps, field_name="task_space"
        )
        space = self.task_space
        self.unfeasible_bounds = space.replace(
            low=(0.1, 0.1, 0.05), high=(10.0, 10.0, 3.0), field_name="unfeasible_bounds"
        )
        self.trivial_bounds = space.replace(
            low=(0.1, 0.1, 0.2), high=(3.0, 3.0, 20.0), field_name="trivial_bounds"
        )

    def task_to_params(self, task: jax.Array, base_params):
        """task [3] = (link mass 1, link mass 2, torque) -> params."""
        torque = task[2] * jnp.array([-1.0, 0.0, 1.0], jnp.float32)
        return super().task_to_params(task, base_params).replace(available_torque=torque)
