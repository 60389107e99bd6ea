"""Sampling For Learnability (SFL; Rutherford et al. 2024, "No Regrets: Investigating and
Improving Regret Approximations for Curriculum Discovery", NeurIPS).

SFL keeps a buffer of the levels the current student finds most learnable, p (1 - p) with
p its success rate on the level, and trains on a mix of those and fresh random levels:

- Refresh, every `buffer_update_frequency` updates (at steps 0, f, 2f, ...: the first
  update builds the first buffer): draw `num_batches` x `batch_size` random levels, roll
  the current student on each for `rollout_steps` env steps (`RunContext.play`, every
  instance restarting on its own level after each episode), p = the share of its
  finished episodes that succeed (`env.is_success` of the episode's return). A level with
  no finished episode has learnability 0. The `num_to_save` levels of highest
  learnability become the buffer (`top_learnability`; ties go to the earlier draw).
- Sample: each level is a buffer level drawn uniformly with probability
  `sampled_envs_ratio` (Kinetix's key: the share of levels from the SFL buffer, 0 being
  its SFL-DR ablation; the authors' maze config takes 128 of 256), else a fresh random
  level. Until the first refresh the
  buffer is empty and every level is fresh.

Random levels come from the env's generator when it has one (a `LevelTaskEnv`:
`env.sample_tasks(key, n, num_walls)`, the maze's, as the `dr` teacher), otherwise
uniformly from the task space (any `TaskEnv`: point_reach, cartpole, ...).

The student is the agent state the loop hands `update` (`context.student`, after this
iteration's agent update) acting through the run's agent (`RunContext.agent`); the
refresh is a `lax.cond` on the shared step, a real branch under a vmap over seeds. Its
env steps are not training steps: the state counts them (`eval_env_steps`, float32, as
the count outgrows int32 at the paper's sizes) and the refreshes, and `snapshot`
reports both with the buffer's learnability statistics, so results can report
evaluation steps beside training steps.

Presets (`SFL_PRESETS`):
- `maze` (default): the paper's MiniGrid maze settings (Rutherford et al. 2024, appendix;
  the authors' sfl/train/minigrid_sfl.py): 5 batches of 5000 levels, 2000 rollout steps,
  1000 levels kept, a refresh every 100 updates, half buffer half fresh.
- `kinetix`: Kinetix's configs/ued/sfl.yaml: 3 x 4096 levels, 512 steps, 1024 kept, a
  refresh every 128 updates, sampled_envs_ratio 0.5.
- `cpu`: ours, for CPU runs (the mini-UED protocol's 32 x 256-step updates): 1 x 128
  levels, 512 steps (four of the 9 x 9 maze's 128-step episodes), 64 kept, a refresh
  every 16 updates: 65,536 evaluation steps per 16 x 8192 training steps, half of them.
  (A first version rolled 128 steps, one maze episode: a level whose episode ran out of
  time had one finished episode at most, so p was 0 or 1 and every level's learnability
  0; the rollout must be longer than the env's time limit, which construction checks.)

Departures: the buffer is drawn uniformly per level as in the reference, but the fresh
share is per level (a coin per instance) rather than a fixed split of the batch, so a
batch's buffer share varies around `sampled_envs_ratio`. Evaluation rollouts use the
student's sampled actions, as the reference. The rollout is `play`'s whole Transition
[T, N] of a batch, of which only rewards and dones are read: at the maze preset a batch
is 5000 x 2000 steps, so memory, not compute, may call for smaller batches.

Under a challenge (`with_challenge`) SFL works in the unit cube like every teacher: its
random levels are uniform there (a challenge has no level generator), and the wrapper
passes `update` the challenge's map (`context.env_tasks`), through which SFL plays them
on the env; the buffer stays in the teacher's coordinates. Inside a `subspace` view the
map lifts its levels onto the view's base task the same way.

Not supported: `loop.shard_envs` (every device would run the same evaluation rollouts):
ConfigError at construction.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam, nested
from acl.core.spaces import Box
from acl.core.types import Feedback, default_info, episode_returns
from acl.teachers import checks
from acl.teachers.base import TEACHERS, RunContext, Teacher, UpdateContext, class_factory
from acl.teachers.plr import check_fresh_levels
from envs.base import LevelTaskEnv, TaskEnv, random_tasks

# -- learnability ------------------------------------------------------------------------


def episode_successes(reward: jax.Array, done: jax.Array, is_success) -> tuple[jax.Array, ...]:
    """Finished episodes and their successes per instance of a rollout in which every
    instance starts an episode at step 0 (`play`): reward, done [T, N] ->
    (successes [N], episodes [N]), float32. `is_success(episode_return)` judges each
    finished episode; an unfinished tail counts for nothing."""
    episodes = episode_returns(reward.astype(jnp.float32), done)
    successes = episodes.mask & is_success(episodes.returns)
    return successes.sum(0, dtype=jnp.float32), episodes.mask.sum(0, dtype=jnp.float32)


def learnability(successes: jax.Array, episodes: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Success rate p and learnability p (1 - p) per level, [N] each; both 0 for a level
    with no finished episode."""
    finished = episodes > 0
    p = jnp.where(finished, successes / jnp.maximum(episodes, 1.0), 0.0)
    return p, jnp.where(finished, p * (1.0 - p), 0.0)


def top_learnability(levels: jax.Array, p: jax.Array, score: jax.Array, k: int):
    """The k levels of highest learnability: levels [M, D], p [M], score [M] ->
    (levels [k, D], p [k], score [k]), highest first; ties go to the lower index."""
    top_score, index = jax.lax.top_k(score, k)
    return levels[index], p[index], top_score


def _identity(levels: jax.Array) -> jax.Array:
    return levels


# -- the teacher -------------------------------------------------------------------------


@struct.dataclass
class SFLParams:
    """Numeric hyperparameters (pytree leaves, vmappable): as configured on the teacher
    (`hyper`), as arrays in `default_params()`."""

    sampled_envs_ratio: jax.Array = hparam(
        0.5,
        low=0.0,
        high=1.0,
        doc="Probability that a level handed out comes from the learnability buffer "
        "(Kinetix's key; 0 is pure DR); the paper's half buffer, half fresh.",
    )
    num_walls: jax.Array = hparam(
        None,
        kind="int",
        low=0,
        doc="Walls of each generated level for an env with a level generator (int32); "
        "default: the env's own num_walls; unused by envs without one.",
    )


@struct.dataclass
class SFLState:
    """The learnability buffer and the evaluation's bookkeeping."""

    params: SFLParams
    levels: jax.Array
    """[B, D] buffered levels (B = num_to_save)."""
    success: jax.Array
    """[B] the student's success rate p on each at the last refresh."""
    score: jax.Array
    """[B] their learnability p (1 - p)."""
    refreshes: jax.Array
    """int32 buffer refreshes so far."""
    eval_env_steps: jax.Array
    """float32 env steps of the refreshes' evaluation rollouts (not training steps)."""
    buffer_share: jax.Array
    """float32 share of the last sample's levels drawn from the buffer."""

    @property
    def filled(self) -> jax.Array:
        """bool: a refresh has filled the buffer (before it, every level is fresh)."""
        return self.refreshes > 0


ENV_DOC = "The env the student is evaluated on (static); default: the run's."


@dataclass(frozen=True)
class SFLTeacher(Teacher):
    """Sampling For Learnability; see the sfl module docstring."""

    task_space: Box
    env: Any = hparam(None, kind="any", doc=ENV_DOC)
    agent: Any = hparam(
        None, kind="any", doc="The student's agent object (static); default: the run's."
    )
    play: Any = hparam(
        None,
        kind="any",
        doc=(
            "The rollout that plays the student on levels (acl.loop.rollout.play); "
            "default: the run's."
        ),
    )
    num_batches: int = hparam(5, low=1, doc="Batches of random levels per refresh.")
    batch_size: int = hparam(5000, low=1, doc="Random levels per batch, rolled at once.")
    rollout_steps: int = hparam(
        2000, low=1, doc="Env steps the student plays on each level per refresh."
    )
    num_to_save: int = hparam(
        1000, low=1, doc="Levels of highest learnability kept (the buffer's size)."
    )
    buffer_update_frequency: int = hparam(
        100, low=1, doc="Updates between refreshes (at steps 0, f, 2f, ...)."
    )
    snapshot_size: int = hparam(16, low=1, doc="Most learnable levels recorded by `snapshot`.")
    hyper: SFLParams = nested(SFLParams)

    def __post_init__(self):
        checks.check_env(
            self.env,
            self.task_space,
            "sfl",
            uses="evaluates the student on the env's levels",
            build="TEACHERS.get('sfl')(task_space, context=RunContext(env=..., agent=..., "
            "play=...))",
            protocol=TaskEnv,
            methods=("is_success",),
        )
        if self.task_space.dim != self.env.task_space.dim:
            raise ConfigError(
                f"teacher sfl plays its levels on the env: its task space has "
                f"{self.task_space.dim} dimensions, the env's {self.env.task_space.dim}"
            )
        if self.agent is None or self.play is None:
            raise ConfigError(
                "teacher sfl rolls the current student on its levels: it needs the run's "
                "agent and rollout (RunContext.agent and RunContext.play; outside a run, "
                "agent=... and play=acl.loop.rollout.play)"
            )
        hparams.validate_fields(self, "teacher")
        if self.num_to_save > self.num_batches * self.batch_size:
            raise ConfigError(
                f"teacher.num_to_save ({self.num_to_save}) must be at most num_batches x "
                f"batch_size ({self.num_batches * self.batch_size}), the levels scored"
            )
        limit = self.env.max_episode_steps
        if self.rollout_steps <= limit:
            raise ConfigError(
                f"teacher.rollout_steps ({self.rollout_steps}) must exceed the env's time "
                f"limit ({limit}): a level whose episode runs out of time would finish one "
                "episode at most, so p would be 0 or 1 and its learnability p (1 - p) 0"
            )
        if isinstance(self.env, LevelTaskEnv):
            check_fresh_levels("sfl", self.task_space, self.env, edits=False)
        if self.hyper.num_walls is None:
            walls = int(self.env.num_walls) if self.generates else 0
            object.__setattr__(self, "hyper", self.hyper.replace(num_walls=walls))

    @property
    def on_env_space(self) -> bool:
        """The teacher's task space is the env's: its levels are env tasks as they are
        (otherwise a wrapper maps them, `UpdateContext.env_tasks`)."""
        return (self.task_space.low, self.task_space.high) == (
            self.env.task_space.low,
            self.env.task_space.high,
        )

    @property
    def generates(self) -> bool:
        """Levels come from the env's generator (a `LevelTaskEnv`'s `sample_tasks`), which
        only exists on the env's own task space; else they are uniform over the teacher's
        task space."""
        return self.on_env_space and isinstance(self.env, LevelTaskEnv)

    @property
    def env_steps_per_refresh(self) -> int:
        return self.num_batches * self.batch_size * self.rollout_steps

    def default_params(self) -> SFLParams:
        return hparams.leaves(self.hyper)

    def init(self, key: jax.Array, params: SFLParams) -> SFLState:
        del key
        b, d = self.num_to_save, self.task_space.dim
        zero = jnp.zeros((), jnp.float32)
        return SFLState(
            params=params,
            levels=jnp.zeros((b, d), jnp.float32),
            success=jnp.zeros((b,), jnp.float32),
            score=jnp.zeros((b,), jnp.float32),
            refreshes=jnp.zeros((), jnp.int32),
            eval_env_steps=zero,
            buffer_share=zero,
        )

    def random_levels(self, key: jax.Array, params: SFLParams, n: int) -> jax.Array:
        """[n, D] fresh levels in the teacher's task space: the env's generator, or
        uniform."""
        if self.generates:
            return random_tasks(self.env, key, n, num_walls=params.num_walls)
        return self.task_space.sample_uniform(key, n).astype(jnp.float32)

    def sample(self, state: SFLState, key: jax.Array, n: int):
        fresh_key, pick_key, coin_key = jax.random.split(key, 3)
        fresh = self.random_levels(fresh_key, state.params, n)
        buffered = state.levels[jax.random.randint(pick_key, (n,), 0, self.num_to_save)]
        coin = jax.random.uniform(coin_key, (n,))
        from_buffer = state.filled & (coin < state.params.sampled_envs_ratio)
        tasks = jnp.where(from_buffer[:, None], buffered, fresh)
        state = state.replace(buffer_share=from_buffer.mean(dtype=jnp.float32))
        return state, tasks, default_info(n)

    def update(
        self,
        state: SFLState,
        key: jax.Array,
        tasks: jax.Array,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ) -> SFLState:
        """A refresh when step % buffer_update_frequency == 0 (a real branch: `step` is
        shared by the seeds); otherwise nothing. `tasks`, `feedback` and the rollout are
        not read: SFL scores levels by rollouts of its own, with `context.student`.

        `context.env_tasks`: the map from the teacher's task space to the env's tasks,
        [n, D] -> [n, D], when a wrapper hands out mapped tasks (`with_challenge` passes
        its challenge's); None: the levels are env tasks."""
        student, env_tasks = context.student, context.env_tasks
        if student is None:
            raise ConfigError(
                "teacher sfl evaluates the current student: call update with "
                "UpdateContext(student=<the agent state>) (the loop does)"
            )
        if env_tasks is None:
            if not self.on_env_space:
                raise ConfigError(
                    "teacher sfl's task space is not the env's: update needs "
                    "context.env_tasks, the map onto the env's tasks (with_challenge "
                    "passes it)"
                )
            env_tasks = _identity
        due = jnp.asarray(step, jnp.int32) % self.buffer_update_frequency == 0
        return jax.lax.cond(
            due,
            functools.partial(self.refresh, env_tasks=env_tasks),
            lambda s, k, _: s,
            state,
            key,
            student,
        )

    def refresh(
        self, state: SFLState, key: jax.Array, student: Any, env_tasks: Any = None
    ) -> SFLState:
        """Scores num_batches x batch_size random levels by the student's rollouts and
        keeps the num_to_save most learnable (module docstring). `env_tasks` as in
        `update`."""
        env_tasks = _identity if env_tasks is None else env_tasks
        level_key, play_key = jax.random.split(key)
        m = self.num_batches * self.batch_size
        levels = self.random_levels(level_key, state.params, m)

        def score_batch(xs):
            batch_levels, batch_key = xs
            reset_key, rollout_key = jax.random.split(batch_key)
            _, rollout = self.play(
                self.env,
                self.agent,
                student,
                env_tasks(batch_levels),
                self.rollout_steps,
                reset_key,
                rollout_key,
            )
            return episode_successes(rollout.reward, rollout.done, self.env.is_success)

        # One batch at a time: the rollout's memory is one batch's.
        batches = levels.reshape(self.num_batches, self.batch_size, -1)
        keys = jax.random.split(play_key, self.num_batches)
        successes, episodes = jax.lax.map(score_batch, (batches, keys))
        p, score = learnability(successes.reshape(m), episodes.reshape(m))
        kept, kept_p, kept_score = top_learnability(levels, p, score, self.num_to_save)
        refreshes = state.refreshes + 1
        return state.replace(
            levels=kept,
            success=kept_p,
            score=kept_score,
            refreshes=refreshes,
            eval_env_steps=refreshes.astype(jnp.float32) * float(self.env_steps_per_refresh),
        )

    def offline_env_steps(self, snapshot: dict) -> jax.Array:
        return snapshot["eval_env_steps"]

    def snapshot(self, state: SFLState) -> dict:
        """The `snapshot_size` most learnable buffered levels, the buffer's learnability
        statistics (mean p, mean p (1 - p), share with 0 < p < 1; 0 before the first
        refresh), the refresh count and the evaluation's env steps."""
        k = min(self.snapshot_size, self.num_to_save)
        filled = state.filled.astype(jnp.float32)
        learnable = ((state.success > 0) & (state.success < 1)).mean(dtype=jnp.float32)
        return {
            "levels": state.levels[:k],
            "level_success": state.success[:k],
            "level_learnability": state.score[:k],
            "mean_success": filled * state.success.mean(),
            "mean_learnability": filled * state.score.mean(),
            "learnable_share": filled * learnable,
            "refreshes": state.refreshes,
            "eval_env_steps": state.eval_env_steps,
            "buffer_share": state.buffer_share,
        }


# -- registration ------------------------------------------------------------------------

SFL_PRESETS: dict[str, dict] = {
    # The paper's MiniGrid maze (appendix; sfl/train/minigrid_sfl.py).
    "maze": {},
    # Kinetix's configs/ued/sfl.yaml.
    "kinetix": dict(
        num_batches=3,
        batch_size=4096,
        rollout_steps=512,
        num_to_save=1024,
        buffer_update_frequency=128,
        sampled_envs_ratio=0.5,
    ),
    # Ours, for CPU runs: evaluation half the mini-UED protocol's training steps.
    "cpu": dict(
        num_batches=1,
        batch_size=128,
        rollout_steps=512,
        num_to_save=64,
        buffer_update_frequency=16,
    ),
}
"""Named settings of the SFL teacher (module docstring)."""

_make_sfl = class_factory(
    SFLTeacher,
    presets=SFL_PRESETS,
    preset="maze",
    run_fields=("env", "agent", "play"),
    name="make_sfl",
)


@functools.wraps(_make_sfl)
def make_sfl(task_space: Box, context: RunContext | None = None, **config) -> SFLTeacher:
    if context is not None and context.shard_envs:
        raise ConfigError(
            "teacher sfl does not take loop.shard_envs: every device would run the same "
            "evaluation rollouts of the student"
        )
    if context is not None and context.overlap_teacher:
        raise ConfigError(
            "teacher sfl does not take loop.overlap_teacher: it evaluates the student "
            "after the agent's update, so its update cannot run beside it"
        )
    return _make_sfl(task_space, context, **config)


TEACHERS.register("sfl")(make_sfl)

__all__ = [
    "SFL_PRESETS",
    "SFLParams",
    "SFLState",
    "SFLTeacher",
    "episode_successes",
    "learnability",
    "make_sfl",
    "top_learnability",
]
