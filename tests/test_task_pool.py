"""The reset-count task pool (`loop.task_pool`): each drawn task is handed out at most
once, overflow is counted, `update` learns which tasks were used; without a pool the
loop is bit-identical to the slot layout it always had."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from acl.agents.ppo import make_ppo
from acl.build import make_train
from acl.config import parse_config
from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.core.types import Feedback, default_info
from acl.loop.rollout import Slots, TaskPool, take_from_pool
from acl.loop.train import Components, Trainer
from acl.run.experiment import _rows
from acl.teachers.base import Teacher, UpdateContext
from tests.compile_effort import FAST_COMPILE
from tests.conftest import TINY, tiny_config
from tests.cpu_recordings import recordings
from tests.probe_envs import MatchTargetDiscrete

FIXTURE = Path(__file__).parent / "fixtures" / "task_pool" / "slot_layout.npz"


def slot_config(**loop):
    """Random teacher on tiny cartpole, one seed, 2 chunks of 4 iterations."""
    return tiny_config(loop={"total_env_steps": 512, **loop}, num_seeds=1)


def run_values(trainer: Trainer, compiler_options=None) -> dict[str, np.ndarray]:
    """The run's metrics and final state as flat numpy arrays, for exact comparison."""
    train = jax.jit(jax.vmap(trainer.train), compiler_options=compiler_options)
    carry, metrics = train(trainer.seed_keys())
    values = {
        f"metrics.{name}": np.asarray(getattr(metrics, name))
        for name in ("episodes", "train_return", "eval_mean_return", "loss", "tasks")
    }
    params = jax.tree_util.tree_leaves_with_path(carry.seed.agent_state.params)
    values.update({f"params{jax.tree_util.keystr(p)}": np.asarray(x) for p, x in params})
    values["slots.task"] = np.asarray(carry.seed.slots.task)
    return values


@pytest.mark.slow
def test_without_a_pool_the_run_is_bit_identical_to_the_slot_layout():
    # The fixture was recorded by the loop before the pool existed (the same
    # `run_values(make_train(slot_config()))`), so this compares against the old code path.
    # On 2026-12-03 it was re-recorded with FAST_COMPILE, after today's loop had matched
    # the old recording under XLA's default options.
    # Bit-exact on the CPU it was recorded on: any CPU's recording (tests/cpu_recordings.py).
    got = run_values(make_train(slot_config()), compiler_options=FAST_COMPILE)
    paths = recordings(FIXTURE)
    for path in paths:
        expected = np.load(path)
        assert sorted(got) == sorted(expected.files)
        if all(np.array_equal(got[n], expected[n]) for n in expected.files):
            return
    expected = np.load(paths[0])
    for name in expected.files:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{paths[0]}: {name}")


@pytest.mark.parametrize(
    "loop, message",
    [
        ({"task_pool": 0}, "loop.task_pool must be in 1..num_envs * num_steps (64), got 0"),
        ({"task_pool": 65}, "loop.task_pool must be in 1..num_envs * num_steps (64), got 65"),
        ({"task_pool": "8"}, "loop.task_pool: expected an integer or null, got '8'"),
        ({"task_pool": True}, "loop.task_pool: expected an integer or null, got True"),
        (
            {"task_pool": 8, "mode": "batch", "num_steps": 64},
            "loop.task_pool applies to loop.mode: episode; leave it out (null)",
        ),
    ],
)
def test_bad_task_pools_are_one_line_config_errors(loop, message):
    with pytest.raises(ConfigError) as err:
        tiny_config(loop=loop)
    assert str(err.value) == message


def test_task_pool_accepts_null_and_whole_numbers():
    assert tiny_config(loop={"task_pool": None}).loop.task_pool is None
    assert tiny_config(loop={"task_pool": 16.0}).loop.task_pool == 16
    assert parse_config({**TINY, "loop": {**TINY["loop"], "task_pool": 64}}).loop.task_pool == 64


def test_take_from_pool_hands_out_in_instance_order_and_keeps_own_task_past_the_end():
    n = 4
    slots = Slots(
        env_state=None,
        obs=None,
        params=None,
        task=-jnp.arange(1.0, n + 1)[:, None],  # tasks -1..-4 running
        train_on=jnp.zeros(n, bool),
        episode_return=None,
        episode_length=None,
        recurrent=None,
    )
    pool = TaskPool(
        task=jnp.arange(10.0, 15.0)[:, None],  # entries 0..4 are tasks 10..14
        train_on=jnp.ones(5, bool),
    )
    done = jnp.array([True, False, True, True])
    # Entries 0..2 are gone: instances 0, 2, 3 take entries 3, 4 and (past the end) none.
    task, train_on, taken = take_from_pool(pool, jnp.int32(3), done, slots)
    np.testing.assert_array_equal(task[:, 0], [13.0, -2.0, 14.0, -4.0])
    np.testing.assert_array_equal(train_on, [True, False, True, False])
    assert int(taken) == 6


# -- the pool ----------------------------------------------------------------------------

NUM_ENVS, NUM_STEPS, ITERATIONS = 4, 8, 4
SCALE = 1.0 / 4096
"""Task j (the j-th drawn, from 1) is j * SCALE: distinct and exact in float32."""


class OneOrTwoSteps(MatchTargetDiscrete):
    """Episodes end after one or two steps (a coin flip): resets at almost every step."""

    max_episode_steps = 2

    def step(self, key, state, action, params):
        obs, state, reward, _, truncated, info = super().step(key, state, action, params)
        terminated = (state.time >= self.max_episode_steps) | jax.random.bernoulli(key)
        return obs, state, reward, terminated, truncated, info


@struct.dataclass
class RecordState:
    drawn: jax.Array
    """int32 tasks drawn so far."""
    episodes: jax.Array
    """[C, 1] tasks of the completed episodes, in feedback order."""
    episode_count: jax.Array
    pools: jax.Array
    """[ITERATIONS, P, 1] the `tasks` each `update` got."""
    handed_out: jax.Array
    """[ITERATIONS] the `handed_out` each `update` got."""


@dataclass(frozen=True)
class RecordingTeacher(Teacher):
    """Draws tasks 1, 2, 3, ... (times SCALE) and records what `update` is given."""

    task_space: Box
    pool_size: int

    def default_params(self):
        return None

    def init(self, key, params) -> RecordState:
        del key, params
        capacity = ITERATIONS * NUM_STEPS * NUM_ENVS
        return RecordState(
            drawn=jnp.zeros((), jnp.int32),
            episodes=jnp.zeros((capacity, 1)),
            episode_count=jnp.zeros((), jnp.int32),
            pools=jnp.zeros((ITERATIONS, self.pool_size, 1)),
            handed_out=jnp.full((ITERATIONS,), -1, jnp.int32),
        )

    def sample(self, state: RecordState, key, n: int):
        del key
        index = state.drawn + 1 + jnp.arange(n)
        return state.replace(drawn=state.drawn + n), (index * SCALE)[:, None], default_info(n)

    def update(
        self, state: RecordState, key, tasks, feedback: Feedback, step, context=UpdateContext()
    ):
        mask = feedback.mask
        slot = state.episode_count + jnp.cumsum(mask) - mask
        slot = jnp.where(mask, slot, state.episodes.shape[0])  # invalid records: dropped
        return state.replace(
            episodes=state.episodes.at[slot].set(feedback.task, mode="drop"),
            episode_count=state.episode_count + mask.sum(dtype=jnp.int32),
            pools=state.pools.at[step].set(tasks),
            handed_out=state.handed_out.at[step].set(feedback.handed_out),
        )

    def snapshot(self, state: RecordState) -> dict:
        return {}


def run_pool(pool_size: int):
    """One seed, one chunk of ITERATIONS iterations on OneOrTwoSteps with a task pool.

    Returns (carry, metrics) of that seed, on the host."""
    steps = ITERATIONS * NUM_STEPS * NUM_ENVS
    loop = {
        "num_envs": NUM_ENVS,
        "num_steps": NUM_STEPS,
        "total_env_steps": steps,
        "eval_every": steps,
        "task_pool": pool_size,
    }
    config = tiny_config(num_seeds=1, loop=loop, eval={"num_test_tasks": 2})
    env = OneOrTwoSteps()
    agent = make_ppo(total_updates=ITERATIONS, num_minibatches=2, hidden_sizes=(8,))
    teacher = RecordingTeacher(env.task_space, pool_size)
    trainer = make_train(config, Components(env, teacher, agent))
    assert trainer.schedule.iterations_per_chunk == ITERATIONS
    carry, metrics = jax.jit(jax.vmap(trainer.run_chunk))(
        jax.vmap(trainer.init)(trainer.seed_keys())
    )
    return jax.device_get(carry), jax.device_get(metrics)


def task_ids(tasks) -> np.ndarray:
    """Tasks [..., 1] -> the draw numbers j (ints)."""
    ids = np.asarray(tasks)[..., 0] / SCALE
    np.testing.assert_array_equal(ids, np.round(ids))
    return np.round(ids).astype(int)


def episode_ids(carry):
    """Draw numbers of every episode of the run: completed ones, then the running ones."""
    record = carry.seed.teacher_state
    done = task_ids(record.episodes[0, : int(record.episode_count[0])])
    return done, task_ids(carry.seed.slots.task[0])


def check_update_saw_the_used_tasks(carry, pool_size: int) -> None:
    """Each update's `tasks` is its iteration's pool; the first `handed_out` entries ran
    an episode, the rest none."""
    record = carry.seed.teacher_state
    done, running = episode_ids(carry)
    ran = set(done) | set(running)
    pools = task_ids(record.pools[0])  # [ITERATIONS, P]
    first = NUM_ENVS + 1  # init drew tasks 1..N for the first episodes
    expected = first + pool_size * np.arange(ITERATIONS)[:, None] + np.arange(pool_size)
    np.testing.assert_array_equal(pools, expected)
    for pool, count in zip(pools, record.handed_out[0]):
        assert 0 < count <= pool_size
        assert set(pool[:count]) <= ran, "a task reported as handed out ran no episode"
        assert not set(pool[count:]) & ran, "a task reported as unused ran an episode"


@pytest.mark.slow
def test_a_pool_as_large_as_the_resets_hands_out_each_task_once():
    pool_size = NUM_STEPS * NUM_ENVS  # the most resets an iteration can have
    carry, metrics = run_pool(pool_size)
    done, running = episode_ids(carry)
    assert len(done) > 2 * NUM_ENVS * ITERATIONS, "the env must reset often"
    everything = np.concatenate([done, running])
    assert len(np.unique(everything)) == len(everything), "a task ran two episodes"
    check_update_saw_the_used_tasks(carry, pool_size)
    # The k-th reset takes entry k: what ran is the first handed_out entries of each pool.
    record = carry.seed.teacher_state
    assert int(record.handed_out[0].sum()) == len(done)
    assert int(metrics.task_pool_overflow[0]) == 0


@pytest.mark.slow
def test_resets_beyond_the_pool_rerun_their_task_and_are_counted():
    pool_size = 6  # fewer than the ~20 resets of an iteration
    carry, metrics = run_pool(pool_size)
    check_update_saw_the_used_tasks(carry, pool_size)
    done, running = episode_ids(carry)
    # Every episode started either on a fresh task (init or pool) or, past the pool, on the
    # task its instance just ran; so the repeats are exactly the overflow restarts.
    everything = np.concatenate([done, running])
    repeats = len(everything) - len(np.unique(everything))
    overflow = int(metrics.task_pool_overflow[0])
    assert overflow > 0 and overflow == repeats
    record = carry.seed.teacher_state
    np.testing.assert_array_equal(record.handed_out[0], pool_size)
    assert overflow + pool_size * ITERATIONS == len(done)  # every completed episode reset
    row = _rows(metrics, 0, [0])[0]
    assert row["task_pool_overflow"] == overflow and row["episodes"] == len(done)
