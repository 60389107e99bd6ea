"""Stein Variational Goal Generation (Castanet, Sigaud, Lamprier 2023, "Stein Variational
Goal Generation for adaptive Exploration in Multi-Goal Reinforcement Learning"), and a
random-valid-goal baseline.

One concern per module: `teacher` (the `svgg` teacher: params, state, update order,
snapshot), `particles` (SVGD), `predictor` (D_phi and its training), `validity`
(p_valid), `goals` (what the goal teachers read of the env: the goal box, valid goals,
the goals an episode used and visited) and `random_goal` (the baseline). This package
re-exports their public names; importing it registers `svgg` and `random_goal`.

The teacher hands out *goals*: `base_task` (which fixes the start) with its goal part
replaced (`envs.base.GoalTaskEnv.task_with_goal`). It works with any GoalTaskEnv
(point_maze, goal_maze, bit_flip); the env is a static field. Goals live in the box the
task space gives the goal coordinates (`goal_from_task` of the task bounds).

The method, all inside the teacher state and jittable:

1. Goal particles: `num_particles` (100) points x_i in goal space; the training goals
   are drawn uniformly from them (`sample`).
2. Success predictor D_phi(g) in (0, 1): an MLP (flax; ReLU hidden layers, sigmoid
   output) trained with binary cross-entropy on (goal, success) records. The goal of a
   record is the one the env actually ran (`used_goal`: the desired goal of a reset under
   the task, e.g. point_maze's snapped goal; the handed-out goal under `invalid_goal:
   keep`), so D_phi learns where the attempts really were. The records come from
   `Feedback` and sit in a ring buffer of the `predictor_buffer` most recent episodes;
   each fit does `predictor_steps` Adam steps on minibatches of `predictor_batch` records
   drawn uniformly from the buffer. Parameters and Adam state live in the teacher state.
3. Validity model p_valid(g): a model of the goals the agent can reach, fitted on the
   states episodes visited: every step's achieved goal in the rollout the loop hands the
   teacher (`env.achieved_goal(rollout.next_obs)`), of which `validity_per_update` are
   drawn uniformly per update into a ring buffer of the `validity_buffer` most recent.
4. Target: log p_goals(g) = T * Beta(D_phi(g); alpha, beta) + log p_valid(g) (the Beta
   *density*, times the temperature T, as the authors' code computes it;
   `skill_term: log` uses T * log Beta instead). The Beta term puts the particles where
   the predicted success is intermediate; (alpha, beta) sets the difficulty (presets in
   `DIFFICULTIES`; (2, 2) "medium" peaks at D = 0.5), T how much it counts against
   validity.
5. SVGD (Liu & Wang 2016): `svgd_steps` steps per teacher update of
   phi(x_i) = 1/P sum_j [k(x_j, x_i) grad log p_goals(x_j) + grad_{x_j} k(x_j, x_i)],
   with an RBF kernel k(x, y) = exp(-|x - y|^2 / h) and the median heuristic
   h = med(|x_i - x_j|^2) / log(P + 1) recomputed at every step. The particles follow phi
   through Adam (lr `svgd_lr` = 0.1), whose moments persist across updates, and are
   clipped into the goal box after each step. The authors run one SVGD step every 20
   env steps: set `svgd_steps` to about (env steps per update) / 20. SVGD runs in the
   goal box rescaled to [-1, 1]^G (the predictor's input too), so the step size is the
   same share of the goal space in every env.
6. Particles start around the goal the start achieves (the achieved goal of the base
   task's reset observation), Gaussian with std `init_std` (0.1) times the goal box's
   width, clipped into the box.

Order of one update: the records join the buffers (`record`); then (`fit`) the
validity model is refitted, D_phi takes its Adam steps and the particles their SVGD
steps. With `update_every` > 1, `fit` runs every that many updates only, keyed on the
loop's update counter (the same for every seed, so a real `lax.cond` under a vmap over
seeds).

Sources. The paper (Castanet, Sigaud, Lamprier, ICML 2023; arXiv 2206.06719) for the
method; its defaults were read from the authors' public code
(github.com/nicolascastanet/Stein-Variational-Goal-Generation: `train_svgg.py`,
`mrl/modules/curiosity.py` `SvgdEntropy`, `mrl/utils/svgd.py` `Energy`,
`mrl/modules/density.py` `OCSVMdensity`), not from the paper's text, which was not
available here:
- target: `temp * Beta.pdf(D) + log prior`, temp = `--beta` = 10 (not overridden in
  the published point-maze commands), so `temperature` 10 and `skill_term` "density";
- difficulty (alpha, beta): medium (2, 2), easy (3, 1.5), hard (1.5, 3), very easy
  (5, 1), very hard (1, 5) (`--alpha_beta` in the published commands);
- 100 particles, Adam lr 0.1, one SVGD step every 20 env steps;
- particles initialised N(0, I) in the point maze's coordinates, whose origin is the
  start cell ("origin", the default start square) and whose cells are 1 unit wide:
  around the start, std one cell. `init_std` 0.1 of the goal box is this module's
  translation of "one cell", not a number of the authors'. (With `goal_predict`, their
  Fetch setting, every particle starts at the reset's achieved goal.)
- validity: a one-class SVM (nu = 0.01, RBF gamma = 0.5) refitted every 4000 steps on
  5000 achieved goals drawn from the replay buffer, i.e. visited states; log p_valid =
  log sigmoid(SVM decision function);
- the success predictor learns from the replay buffer's episodes with the goals they
  ran, in batches half successes and half failures.

Where this departs from the authors, and why:
- Validity model. A one-class SVM has no jittable fixed-cost solver here. It is a
  Gaussian kernel density estimate over the visited-goal buffer, turned into a soft
  *support* as the SVM's decision function is: with kde(g) the masked Gaussian KDE
  (Scott's rule bandwidth h = bandwidth_scale * sigma * n^(-1/(G + 4)), sigma the RMS
  per-coordinate standard deviation of the n buffered goals) and tau the
  `validity_quantile` (nu, 0.01 as the SVM's) quantile of the buffered goals'
  *leave-one-out* log kde (each point's density from the others),
      log p_valid(g) = log sigmoid(log kde(g) - tau).
  Inside the support log p_valid is about 0 and flat, so the skill term alone moves the
  particles there; outside it falls off like -|g - nearest visited goal|^2 / (2 h^2).
  Leave-one-out matters at the frontier: an isolated visited point's own kernel would
  lift its density above tau and keep it inside the support while its neighbourhood
  stays out; without its own kernel it counts as the outlier it is. The buffer is the
  most recent `validity_buffer` visited goals rather than a sample of the whole replay
  buffer, and the fit runs at every fit, not every 4000 steps.
- SVGD's kernel bandwidth: the median heuristic in the rescaled box, where the
  authors' default is a fixed sigma = 1 (about a tenth of their maze).
- Success predictor: a uniform minibatch of the most recent records, not balanced
  between successes and failures; its input is the goal alone (the start is fixed).
- An update without a rollout (`context.rollout` None: a hand-built record): the used
  goals of *successful* episodes stand in for the visited states, since a success
  reached its goal.
- Random-goal mix: `random_goal_ratio` (default 0, i.e. pure particle sampling) of the
  handed-out goals are replaced by uniform valid goals (the env's `sample_valid_goals`
  where it declares valid goals, `has_valid_goals`, else uniform over the goal box).
  It is not part of the method; it is a safety net against particles that collapse on
  a bad region.
- Fixed-size arrays throughout: both buffers are rings over the most recent records
  (acl.core.ring); with more valid records in one update than a buffer holds, the latest
  fill it.

`snapshot` returns the particles, D_phi and log p_valid on them, the predictor's
accuracy on its buffer, the buffer fills, the validity bandwidth and threshold, and, for
2-D goals, D_phi and log p_valid on a `plot_grid` x `plot_grid` grid over the goal box
(its points in `grid`), which is what a plot of the curriculum needs.
"""

from acl.teachers.svgg.goals import goal_box, valid_goal_sampler
from acl.teachers.svgg.particles import median_bandwidth, svgd_direction, svgd_step
from acl.teachers.svgg.predictor import SuccessPredictor, log_beta_pdf
from acl.teachers.svgg.random_goal import RandomGoalParams, RandomGoalTeacher
from acl.teachers.svgg.teacher import (
    DIFFICULTIES,
    SVGGParams,
    SVGGState,
    SVGGTeacher,
    make_svgg,
)
from acl.teachers.svgg.validity import fit_validity, kde_log_density, kde_loo_log_density

__all__ = [
    "DIFFICULTIES",
    "RandomGoalParams",
    "RandomGoalTeacher",
    "SVGGParams",
    "SVGGState",
    "SVGGTeacher",
    "SuccessPredictor",
    "fit_validity",
    "goal_box",
    "kde_log_density",
    "kde_loo_log_density",
    "log_beta_pdf",
    "make_svgg",
    "median_bandwidth",
    "svgd_direction",
    "svgd_step",
    "valid_goal_sampler",
]
