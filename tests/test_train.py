"""The curriculum loop: task hand-over at resets, chunking, determinism, seeds, re-init."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.build import make_train
from acl.loop.rollout import collect, start_slots
from acl.loop.train import Trainer
from tests.conftest import tiny_config


@pytest.fixture(scope="module")
def trainer():
    return make_train(tiny_config())


def run_host_chunks(trainer: Trainer):
    init, run_chunk = trainer.jit_init_seeds(), trainer.jit_run_chunk_seeds()
    carry = init(trainer.seed_keys())
    chunks = []
    for _ in range(trainer.schedule.num_chunks):
        carry, metrics = run_chunk(carry)
        chunks.append(jax.device_get(metrics))
    return carry, jax.tree.map(lambda *xs: np.stack(xs, axis=1), *chunks)


@pytest.fixture(scope="module")
def host_run(trainer):
    return run_host_chunks(trainer)


def test_episode_keeps_its_task_across_batches_and_changes_only_at_reset(trainer):
    env, agent = trainer.env, trainer.agent
    n, steps = 4, 16
    key = jax.random.PRNGKey(3)
    agent_state = trainer.init_agent(key)
    first = trainer.env.task_space.sample_uniform(jax.random.PRNGKey(0), n)
    slots = start_slots(env, agent, key, first, jnp.ones(n, bool))

    @jax.jit
    def two_batches(slots):
        records, dones = [], []
        for b in range(2):
            next_tasks = env.task_space.sample_uniform(jax.random.PRNGKey(10 + b), steps * n)
            slots, batch, feedback = collect(
                env,
                agent,
                agent_state,
                slots,
                jax.random.PRNGKey(20 + b),
                next_tasks.reshape(steps, n, -1),
                jnp.ones((steps, n), bool),
                steps,
            )
            records.append(feedback.task.reshape(steps, n, -1))
            dones.append(batch.done)
        return jnp.concatenate(records), jnp.concatenate(dones)

    tasks, done = jax.device_get(two_batches(slots))  # [2T, N, D], [2T, N]
    assert done.any(), "the test needs episodes that end"
    np.testing.assert_array_equal(tasks[0], np.asarray(first))
    changed = np.any(tasks[1:] != tasks[:-1], axis=-1)  # task of step t+1 differs from t
    np.testing.assert_array_equal(changed, done[:-1])
    crossing = ~done[steps - 1]
    assert crossing.any(), "some episode must cross the batch boundary"
    np.testing.assert_array_equal(tasks[steps][crossing], tasks[steps - 1][crossing])


def test_chunked_and_unchunked_runs_give_identical_metrics(trainer, host_run):
    _, chunked = host_run
    _, whole = jax.jit(jax.vmap(trainer.train))(trainer.seed_keys())
    whole = jax.device_get(whole)
    for name in ("eval_pct_mastered", "eval_mean_return", "train_return", "episodes", "tasks"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(chunked, name), err_msg=name)
    # The two are different XLA programs; the loss summary (a mean over minibatches) may
    # be fused differently and differ in the last bit while the trajectory is identical.
    np.testing.assert_allclose(whole.loss, chunked.loss, rtol=1e-6, atol=0)


def test_same_seed_same_metrics_and_different_seeds_differ(trainer, host_run):
    _, first = host_run
    _, again = run_host_chunks(make_train(tiny_config()))
    np.testing.assert_array_equal(first.loss, again.loss)
    np.testing.assert_array_equal(first.eval_mean_return, again.eval_mean_return)
    assert not np.array_equal(first.loss[0], first.loss[1]), "seeds 0 and 1 gave equal losses"
    # Seeds 5 and 6: the same program as seeds 0 and 1, other keys.
    _, other = run_host_chunks(make_train(tiny_config(seed=5)))
    assert not np.array_equal(first.loss[0], other.loss[0])


def test_metrics_cover_every_chunk(trainer, host_run):
    _, metrics = host_run
    assert trainer.schedule.num_chunks == 3
    np.testing.assert_array_equal(metrics.env_steps[0], [256, 512, 768])
    assert metrics.tasks.shape[:2] == (2, 3)
    assert (metrics.episodes > 0).all()


def test_reinit_hook_resets_the_agent_every_n_steps(trainer, host_run):
    # 64 steps per iteration, re-init every 2 iterations, 4 iterations per chunk.
    reinit = make_train(tiny_config(loop={"reinit_every": 128}))
    carry = reinit.jit_init_seeds()(reinit.seed_keys())
    carry, _ = reinit.jit_run_chunk_seeds()(carry)
    # Updates since the last re-init: re-inits after iterations 2 and 4 leave 0.
    np.testing.assert_array_equal(carry.seed.agent_state.update_count, [0, 0])
    fresh = reinit.init_agent(jax.random.PRNGKey(0))
    kernel = lambda params: params["params"]["actor"]["Dense_0"]["kernel"]  # noqa: E731
    assert not np.allclose(kernel(carry.seed.agent_state.params)[0], kernel(fresh.params)), (
        "re-init must draw new weights"
    )
    # Without the hook the count keeps rising: 4 updates in each of the 3 chunks.
    no_reinit, _ = host_run
    np.testing.assert_array_equal(no_reinit.seed.agent_state.update_count, [12, 12])


def test_periodic_branch_stays_a_real_cond_under_seed_vmap():
    trainer = make_train(tiny_config(loop={"reinit_every": 128}))
    carry = jax.eval_shape(jax.vmap(trainer.init, out_axes=trainer.carry_axes), trainer.seed_keys())
    run = jax.vmap(
        trainer.run_chunk, in_axes=(trainer.carry_axes,), out_axes=(trainer.carry_axes, 0)
    )
    jaxpr = str(jax.make_jaxpr(run)(carry))
    assert " cond[" in jaxpr, "the re-init branch became a select under vmap"


@pytest.mark.slow
def test_batch_mode_resets_every_instance_onto_its_new_level():
    trainer = make_train(
        tiny_config(
            loop={"mode": "batch", "num_steps": 50, "eval_every": 400, "total_env_steps": 400},
            num_seeds=1,
        )
    )
    carry = trainer.jit_init_seeds()(trainer.seed_keys())
    carry, metrics = trainer.jit_run_chunk_seeds()(carry)
    assert (
        int(metrics.episodes[0])
        >= trainer.schedule.num_envs * trainer.schedule.iterations_per_chunk
    )
    # The levels logged for the last iteration are the ones its instances ran on.
    logged = min(trainer.schedule.tasks_logged_per_iteration, trainer.schedule.num_envs)
    last_tasks = metrics.tasks[0, -logged:]
    np.testing.assert_array_equal(carry.seed.slots.task[0][:logged], last_tasks)


@pytest.mark.slow
def test_capped_feedback_keeps_the_trajectory_and_counts_dropped_episodes(host_run):
    _, full = host_run
    capped = make_train(tiny_config(loop={"max_feedback": 2}))
    _, metrics = run_host_chunks(capped)
    # Random ignores feedback, so the runs are the same; only the teacher's view shrinks.
    np.testing.assert_array_equal(metrics.episodes, full.episodes)
    np.testing.assert_array_equal(metrics.train_return, full.train_return)
    assert (metrics.feedback_dropped > 0).all()
    assert (full.feedback_dropped == 0).all()
