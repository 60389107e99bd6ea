"""teachDeepRL's toy-bandit protocol: a teacher hands one task per step to a simulated
student, which plays one episode on it; % mastered is scored every `score_every` episodes.

    scores = run_toy_bandit(teacher, bandit, num_episodes=20_000, score_every=1_000,
                            num_seeds=16)          # [S, num_episodes // score_every]

Seeds are one `jax.vmap`; the whole run is one `jax.jit`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from acl.core.types import Feedback
from envs.toy_bandit import ToyBandit


def _one_episode_feedback(task: jax.Array, reward: jax.Array, success: jax.Array) -> Feedback:
    return Feedback(
        task=task[None],
        episode_return=reward[None],
        success=success[None],
        length=jnp.ones((1,), jnp.int32),
        mask=jnp.ones((1,), bool),
    )


def make_toy_bandit_run(teacher, bandit: ToyBandit, num_episodes: int, score_every: int):
    """A jittable `run(key) -> (scores [num_episodes // score_every], final teacher state)`."""
    if num_episodes % score_every:
        raise ValueError(f"num_episodes ({num_episodes}) must be a multiple of score_every")
    num_blocks = num_episodes // score_every

    def run(key):
        init_key, loop_key = jax.random.split(key)
        carry = (teacher.init(init_key, teacher.default_params()), bandit.init(), loop_key)

        def episode(carry, step):
            teacher_state, student, key = carry
            key, sample_key = jax.random.split(key)
            teacher_state, tasks, _ = teacher.sample(teacher_state, sample_key, 1)
            student, reward = bandit.episode(student, tasks[0])
            feedback = _one_episode_feedback(tasks[0], reward, bandit.is_success(reward))
            # No rollout: a bandit episode has no transitions.
            update_key = jax.random.fold_in(sample_key, 1)
            teacher_state = teacher.update(teacher_state, update_key, tasks, feedback, step)
            return (teacher_state, student, key), None

        def block(carry, block_index):
            # The step counter comes from the scan's xs: shared by every seed, never vmapped.
            steps = block_index * score_every + jnp.arange(score_every, dtype=jnp.int32)
            carry, _ = jax.lax.scan(episode, carry, steps)
            return carry, bandit.pct_mastered(carry[1])

        carry, scores = jax.lax.scan(block, carry, jnp.arange(num_blocks, dtype=jnp.int32))
        return scores, carry[0]

    return run


@dataclass
class ToyBanditResult:
    scores: np.ndarray
    """% mastered, [S, num_episodes // score_every]; column j is after (j+1)*score_every."""
    compile_seconds: float
    run_seconds: float
    """Wall time of the compiled run for all seeds together."""


def run_toy_bandit(
    teacher,
    bandit: ToyBandit,
    num_episodes: int = 20_000,
    score_every: int = 1_000,
    num_seeds: int = 16,
    seed: int = 0,
) -> ToyBanditResult:
    """All seeds as one jit(vmap(run)); compile time measured apart from run time."""
    run = make_toy_bandit_run(teacher, bandit, num_episodes, score_every)
    keys = jax.random.split(jax.random.PRNGKey(seed), num_seeds)
    start = time.perf_counter()
    compiled = jax.jit(jax.vmap(run)).lower(keys).compile()
    compile_seconds = time.perf_counter() - start
    start = time.perf_counter()
    scores, _ = compiled(keys)
    scores = np.asarray(jax.block_until_ready(scores))
    return ToyBanditResult(scores, compile_seconds, time.perf_counter() - start)
