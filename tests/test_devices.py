"""Seeds over devices (acl.devices, `--devices`): a seed's result does not depend on the
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

from acl.devices import axes_to_specs, padded_count
from acl.results import AGENT_FILE
from acl.train import LoopCarry, SeedCarry
from experiments import run as run_cli
from tests.conftest import TINY
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


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("devices")
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
    return out


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


def test_seeds_split_over_four_devices_give_the_one_device_metrics(runs):
    one, sharded = metrics(runs / "one_device"), metrics(runs / "sharded")
    assert set(sharded.seed) == set(range(RUNS["sharded"][0]))
    assert_same_seeds(sharded, one)
    assert_same_params(agent_params(runs / "sharded"), agent_params(runs / "one_device"))
    assert not np.array_equal(one[one.seed == 0].agent_loss, one[one.seed == 1].agent_loss)


def test_padding_seeds_are_run_and_dropped(runs):
    seeds = RUNS["padded"][0]
    padded = metrics(runs / "padded")
    assert set(padded.seed) == set(range(seeds)), "the padding seeds must not be written"
    one = metrics(runs / "one_device")
    assert_same_seeds(padded, one[one.seed < seeds].reset_index(drop=True))
    first = [p[:seeds] for p in agent_params(runs / "one_device")]
    assert_same_params(agent_params(runs / "padded"), first)
    summary = pd.read_json(runs / "padded" / "summary.json", typ="series")
    assert summary["devices"] == DEVICES and summary["seeds"] == list(range(seeds))


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
