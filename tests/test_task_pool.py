"""The reset-count task pool (`loop.task_pool`): each drawn task is handed out at most
once, overflow is counted, `update` learns which tasks were used; without a pool the
loop is bit-identical to the slot layout it always had."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from acl.train import Trainer
from tests.conftest import tiny_config

FIXTURE = Path(__file__).parent / "fixtures" / "task_pool" / "slot_layout.npz"


def slot_config(**loop):
    """Random teacher on tiny cartpole, one seed, 2 chunks of 4 iterations."""
    return tiny_config(loop={"total_env_steps": 512, **loop}, num_seeds=1)


def run_values(trainer: Trainer) -> dict[str, np.ndarray]:
    """The run's metrics and final state as flat numpy arrays, for exact comparison."""
    carry, metrics = jax.jit(jax.vmap(trainer.train))(trainer.seed_keys())
    values = {
        f"metrics.{name}": np.asarray(getattr(metrics, name))
        for name in ("episodes", "train_return", "eval_mean_return", "loss", "tasks")
    }
    params = jax.tree_util.tree_leaves_with_path(carry.seed.agent_state.params)
    values.update({f"params{jax.tree_util.keystr(p)}": np.asarray(x) for p, x in params})
    values["slots.task"] = np.asarray(carry.seed.slots.task)
    return values


def test_without_a_pool_the_run_is_bit_identical_to_the_slot_layout():
    # The fixture was recorded by the loop before the pool existed (the same
    # `run_values(Trainer(slot_config()))`), so this compares against the old code path.
    expected = np.load(FIXTURE)
    got = run_values(Trainer(slot_config()))
    assert sorted(got) == sorted(expected.files)
    for name in expected.files:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
