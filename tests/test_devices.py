"""Seeds over devices (acl.loop.devices, `--devices`): a seed's result does not depend on the
seeds beside it, so a run split over 4 devices, padded or not, gives every seed the
metrics of the one-device run.

The multi-device runs happen in a subprocess with 4 forced host CPU devices
(tests/devices_runs.py): the flag must be set before JAX starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from flax import serialization
from jax.sharding import PartitionSpec

from acl.loop.devices import axes_to_specs, padded_count
from acl.loop.train import LoopCarry, SeedCarry
from acl.run.results import AGENT_FILE
from experiments import run as run_cli
from tests.conftest import TINY, once_per_session
from tests.devices_runs import DEVICES, RUNS

ROOT = Path(__file__).resolve().parent.parent
LOSS_RTOL = 1e-6
SUMMARY_ATOL = 1e-6
PARAMS_RTOL = 1e-6
"""A seed's result is not bit for bit the same when its vmap batches other seeds (1 or 8
seeds in one vmap, or 2 per device) on XLA's CPU backend: programs of other batch shapes
are fused differently, and float32 sums differ in the last bit. In these short runs
returns, episodes, tasks and evaluations stay equal; the final params differ by about
one float32 ulp (within PARAMS_RTOL of each leaf's largest entry); the agent's metric
summaries (means over minibatches) within rtol 1e-6 (the chunked-run test's tolerance,
tests/test_train.py), plus an atol for the summaries that average terms cancelling to
near 0 (the policy loss, the approximate KL). Long runs may drift apart, as any two
float32 programs do."""


def produce_runs(out: Path) -> None:
    env = dict(os.environ)
    env["XLA_FLAGS"] = (
        f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={DEVICES}".strip()
    )
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "tests.devices_runs", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, worker_id) -> Path:
    # Once for both xdist workers: the subprocess compiles a dozen runs.
    return once_per_session(tmp_path_factory, worker_id, "devices_runs", produce_runs)


def metrics(run: Path) -> pd.DataFrame:
    return pd.read_csv(run / "metrics.csv").sort_values(["chunk", "seed"], ignore_index=True)


def assert_same_seeds(actual: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Every column equal, the agent's metric summaries within LOSS_RTOL / SUMMARY_ATOL."""
    assert list(actual.columns) == list(expected.columns)
    assert len(actual) == len(expected) > 0
    for column in expected.columns:
        if column.startswith("agent_"):
            np.testing.assert_allclose(
                actual[column], expected[column], LOSS_RTOL, SUMMARY_ATOL, err_msg=column
            )
        else:
            np.testing.assert_array_equal(actual[column], expected[column], err_msg=column)


def assert_same_params(actual: list[np.ndarray], expected: list[np.ndarray]) -> None:
    """Each leaf [S, ...] within PARAMS_RTOL of its largest entry: a wrong seed order or
    padding would differ by the params' own scale."""
    assert len(actual) == len(expected) > 0
    for a, b in zip(actual, expected):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=0, atol=PARAMS_RTOL * np.abs(b).max())


def agent_params(run: Path) -> list[np.ndarray]:
    state = serialization.msgpack_restore((run / AGENT_FILE).read_bytes())
    leaves = []

    def walk(node):
        if isinstance(node, dict):
            for key in sorted(node):
                walk(node[key])
        else:
            leaves.append(np.asarray(node))

    walk(state["params"])
    return leaves


@pytest.mark.slow
def test_a_seed_does_not_depend_on_the_seeds_beside_it(runs):
    """Seed 0 vmapped alone or beside 7 others. Not bit for bit on XLA's CPU backend: the
    final params and the agent's metric summaries differ in the last bits (see
    PARAMS_RTOL), while returns, episodes, tasks and evaluations are the same."""
    alone = metrics(runs / "alone")
    beside = metrics(runs / "one_device")
    beside = beside[beside.seed == 0].reset_index(drop=True)
    assert set(alone.seed) == {0}
    assert_same_seeds(alone, beside)
    first = [p[:1] for p in agent_params(runs / "one_device")]
    assert_same_params(agent_params(runs / "alone"), first)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["eight", "sharded"])
def test_seeds_split_over_four_devices_give_the_one_device_metrics(runs, name):
    """8 seeds over 4 devices (`--devices 4` against `--devices 1`), and 6 seeds padded
    to 8 (2 per device): the first seeds of the one-device run; padding seeds are
    neither written nor saved."""
    seeds = RUNS[name][0]
    sharded, one = metrics(runs / name), metrics(runs / "one_device")
    assert set(sharded.seed) == set(range(seeds)), "the padding seeds must not be written"
    assert_same_seeds(sharded, one[one.seed < seeds].reset_index(drop=True))
    first = [p[:seeds] for p in agent_params(runs / "one_device")]
    assert_same_params(agent_params(runs / name), first)
    assert not np.array_equal(one[one.seed == 0].agent_loss, one[one.seed == 1].agent_loss)
    summary = json.loads((runs / name / "summary.json").read_text())
    assert summary["devices"] == DEVICES and summary["seeds"] == list(range(seeds))


@pytest.mark.slow
def test_a_sharded_run_resumes_from_its_checkpoint_to_the_same_files(runs):
    """The "sharded" run stopped after its first evaluation and resumed over 4 devices
    (over 2, a layout with other padding, the resume was refused: tests/devices_runs.py)."""
    for name in ("metrics.csv", "tasks.csv", "agent_params.msgpack", "teacher/eval_0001.npz"):
        assert (runs / "resumed" / name).read_bytes() == (runs / "sharded" / name).read_bytes()


def test_more_devices_than_jax_sees_is_a_config_error(tmp_path, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text(json.dumps(TINY))  # JSON is YAML
    out = tmp_path / "run"
    code = run_cli.main(["--config", str(config), "--out", str(out), "--devices", "64"])
    assert code == 2
    assert "devices must be between 1 and the" in capsys.readouterr().err
    assert not out.exists()


def test_padding_rounds_up_to_a_multiple_of_the_devices():
    assert [padded_count(s, 4) for s in (1, 4, 6, 8, 9)] == [4, 4, 8, 8, 12]


def test_vmap_axes_become_seed_specs():
    specs = axes_to_specs(LoopCarry(iteration=None, seed=SeedCarry(0, 0, 0, 0, None)))
    assert specs.iteration == PartitionSpec()
    assert specs.seed.agent_state == PartitionSpec("seeds")
    with pytest.raises(ValueError, match="leading seed axes"):
        axes_to_specs((1,))


def test_bench_devices_counts_double_up_to_every_device():
    from experiments.bench_devices import default_counts

    assert default_counts(1) == [1]
    assert default_counts(4) == [1, 2, 4]
    assert default_counts(6) == [1, 2, 4, 6]


@pytest.mark.slow
def test_instances_split_over_devices_give_the_one_device_first_update(runs):
    """PPO's update on a rollout whose 8 instances are split over 4 devices, gradients
    summed over them: the params of one device's update within rtol 1e-5."""
    saved = np.load(runs / "first_update.npz")
    count = len([k for k in saved.files if k.startswith("initial_")])
    assert count > 0
    moved = 0.0
    for i in range(count):
        initial, one, sharded = (saved[f"{n}_{i}"] for n in ("initial", "one_device", "sharded"))
        np.testing.assert_allclose(sharded, one, rtol=1e-5, atol=1e-9, err_msg=f"leaf {i}")
        moved = max(moved, float(np.abs(one - initial).max()))
    assert moved > 1e-5, "the update must move the params well beyond the tolerance"


@pytest.mark.slow
def test_sharded_envs_run_feeds_the_teacher_every_devices_episodes(runs):
    run = runs / "shard_envs"
    rows = metrics(run)
    assert set(rows.seed) == {0, 1} and (rows.episodes > 0).all()
    # Random's snapshot counts the feedback records it read over the run: all devices'.
    last = sorted((run / "teacher").glob("eval_*.npz"))[-1]
    seen = np.load(last)["episodes_seen"]
    np.testing.assert_array_equal(seen, rows.groupby("seed").episodes.sum().to_numpy())
    params = agent_params(run)
    assert all(p.shape[0] == 2 and np.isfinite(p).all() for p in params)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"loop": {**TINY["loop"], "num_envs": 6}}, "must be a multiple of the devices"),
        ({"loop": {**TINY["loop"], "task_pool": 16}}, "does not take loop.task_pool"),
        ({"agent": {"name": "dqn", "her_strategy": "none"}}, "averages gradients over devices"),
    ],
)
def test_shard_envs_refuses_what_it_cannot_split(changes, message):
    from acl.build import make_train
    from acl.config import parse_config
    from acl.core.errors import ConfigError
    from acl.loop.devices import with_env_shards

    trainer = make_train(parse_config({**TINY, **changes}))
    with pytest.raises(ConfigError, match=message):
        with_env_shards(trainer, 4)
