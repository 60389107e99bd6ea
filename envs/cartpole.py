"""CartPole-v1 with task = (pole half-length [m], pole mass [kg], push force [N]).

Wraps gymnax 1.0.1 `CartPole`; the cart mass (1 kg), gravity, time step (0.02 s) and
the failure box (|theta| > 12 deg, |x| > 2.4 m) stay at the gym values. Actions are
0 (push left with `force_mag`) and 1 (push right): there is no "no push" action.
Reward 1 per step; return = steps survived, at most `max_episode_steps` (500).

Task space (default = gym's CartPole-v1):

| dim | name | low | high | default | unit |
|---|---|---|---|---|---|
| 0 | pole_half_length (`length`) | 0.05 | 2.0 | 0.5 | m |
| 1 | pole_mass (`masspole`) | 0.05 | 2.0 | 0.1 | kg |
| 2 | force_mag | 1.0 | 1000.0 | 10.0 | N |

`task_to_params` keeps gymnax's stored derived fields consistent:
`total_mass = masscart + masspole`, `polemass_length = masspole * length`.

Success ("mastered"): return > 475 (0.95 * max_episode_steps). Return bounds (0, 500)
(the true minimum is 1: the first step always pays 1).

Regions (reasoned, then checked with `envs/scripted.py` on 256 uniform tasks x 8 starts):

- Infeasible: every action is a full push, so the controller chatters. One push changes
  the pole angle by about kappa = tau^2 F / ((M + m) l (4/3 - m / (M + m))) rad within two
  steps (tau = 0.02 s, M = 1 kg cart). When kappa is comparable to the 0.21 rad failure
  angle no policy can keep the pole inside the window. Checked on 768 tasks: the best
  of 36 bang-bang linear controllers masters (nearly) all starts when kappa < 0.15, 73%
  of starts on average when 0.15 <= kappa < 0.2, and none when kappa >= 0.2. High
  forces on short or light poles are therefore infeasible: 32% of the task space (best
  controller masters < 10% of starts), e.g. (0.1, 0.25, 850).
  Very weak pushes (F / ((M + m) g) below the initial tilt, about 0.05) also fail on
  most starts, but with force >= 1 N this corner is under 1% of the space.
- Trivial: the one-line policy "push towards where the pole is falling",
  a = [theta + 0.5 theta_dot > 0] with no cart feedback, masters 46% of the space
  (roughly kappa < 0.1, pole half-length >= 0.2 m), including the default task.
- Learnable: the remaining ~20% (short poles with moderate force, long poles, heavy
  poles) needs a tuned controller (cart feedback, other gains).

Benchmark variants (TeachMyAgent-style challenge spaces, same dims):

- `unfeasible_bounds`: force up to 5000 N. 82% of it is infeasible (best controller < 10% of
  starts), 11% trivial (checked as above).
- `trivial_bounds`: pole mass up to 20 kg (a heavier pole lowers kappa). 69% of it is
  mastered by the one-line policy, 12% infeasible (checked as above).
"""

from __future__ import annotations

from envs._checks import positive_int
from envs.gymnax_space import GymnaxSpace, TaskDimension
from envs.registry import ENVS

DIMENSIONS = (
    TaskDimension("pole_half_length", 0.05, 2.0, ("length",)),
    TaskDimension("pole_mass", 0.05, 2.0, ("masspole",)),
    TaskDimension("force_mag", 1.0, 1000.0, ("force_mag",)),
)
"""The task space over gymnax's fields (units, limits and defaults are the fields':
0.5 m, 0.1 kg, 10 N; total_mass and polemass_length are recomputed)."""


@ENVS.register("cartpole")
class CartPoleTask(GymnaxSpace):
    """CartPole-v1 whose pole half-length, pole mass and push force are the task.

    Static config: `max_episode_steps` (default 500). The success threshold and return
    bounds scale with it (0.95 * T and (0, T)).
    """

    name = "cartpole"

    def __init__(self, max_episode_steps: int | None = None):
        steps = positive_int(max_episode_steps, "env.max_episode_steps") or 500
        threshold = 475.0 if steps == 500 else 0.95 * steps
        super().__init__(
            "CartPole-v1",
            DIMENSIONS,
            threshold,
            (0.0, float(steps)),
            steps,
            field_name="task_space",
        )
        space = self.task_space
        self.unfeasible_bounds = space.replace(
            low=(0.05, 0.05, 1.0), high=(2.0, 2.0, 5000.0), field_name="unfeasible_bounds"
        )
        self.trivial_bounds = space.replace(
            low=(0.05, 0.05, 1.0), high=(2.0, 20.0, 1000.0), field_name="trivial_bounds"
        )
