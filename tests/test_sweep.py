"""Sweeps (acl.run.sweep): one compiled program over combination x seed, equal to single runs;
spec parsing and the refusal of keys that cannot share a program."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json

import jax
import numpy as np
import pandas as pd
import pytest
import yaml
from flax import serialization

from acl.core.errors import ConfigError
from acl.run.experiment import run_experiment
from acl.run.sweep import (
    SWEEP_FILE,
    check_sweep,
    combination_config,
    combination_name,
    combinations,
    format_sweep,
    parse_sweep,
)
from experiments import run as run_cli
from tests.conftest import tiny_config
from tests.test_cli import count_compilations, write_tiny

RATES = [1e-4, 3e-4, 1e-3]


@pytest.fixture(scope="module")
def tiny_sweep():
    # A student re-initialised every two iterations must keep its swept learning rate.
    return tiny_config(loop={"total_env_steps": 512, "reinit_every": 128})


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The CLI's sweep of three learning rates on the tiny config: (out, printed table)."""
    root = tmp_path_factory.mktemp("sweep")
    out = root / "sweep"
    args = ["--config", write_tiny(root), "--out", str(out), "--no-progress"]
    args += ["--set", "loop.total_env_steps=512", "--set", "loop.reinit_every=128"]
    args += ["--sweep", "agent.learning_rate=1e-4,3e-4,1e-3"]
    if importlib.util.find_spec("tensorboardX"):
        args += ["--log", "tensorboard"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert run_cli.main(args) == 0
    return out, printed.getvalue()


@pytest.mark.slow
def test_a_learning_rate_sweep_equals_the_single_runs(swept, tiny_sweep, tmp_path):
    out, _ = swept
    for rate in RATES:
        values = {"agent.learning_rate": rate}
        single = tmp_path / str(rate)
        run_experiment(combination_config(tiny_sweep, values), single, progress=False)
        combo = out / combination_name(values)
        a, b = pd.read_csv(combo / "metrics.csv"), pd.read_csv(single / "metrics.csv")
        assert list(a.columns) == list(b.columns) and len(a) == len(b) == 4
        for column in a.columns:
            if column.startswith("agent_"):
                # A wider vmap may change how XLA's CPU backend rounds the update's
                # reductions: loss summaries agree to rel. 2e-7 (the policy loss and the
                # approximate KL, near 0, to abs. 5e-8), not always to the bit.
                np.testing.assert_allclose(
                    a[column], b[column], rtol=1e-6, atol=1e-7, err_msg=column
                )
            else:
                np.testing.assert_array_equal(a[column], b[column], err_msg=column)
        assert (combo / "tasks.csv").read_bytes() == (single / "tasks.csv").read_bytes()
        params, alone = (
            serialization.msgpack_restore((d / "agent_params.msgpack").read_bytes())
            for d in (combo, single)
        )
        jax.tree.map(
            lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6), params, alone
        )
        config, alone = (yaml.safe_load((d / "config.yaml").read_text()) for d in (combo, single))
        assert config == alone
        snapshot, alone = (
            np.load(combo / "teacher/eval_0001.npz"),
            np.load(single / "teacher/eval_0001.npz"),
        )
        for key in alone:
            np.testing.assert_array_equal(snapshot[key], alone[key], err_msg=key)
    # The rates must matter, or the comparison above proves nothing.
    losses = [
        pd.read_csv(
            out / combination_name({"agent.learning_rate": r}) / "metrics.csv"
        ).agent_loss.iloc[-1]
        for r in RATES
    ]
    assert len(set(losses)) == len(RATES)


@pytest.mark.slow
def test_the_sweep_writes_a_table_and_full_run_directories(swept):
    out, printed = swept
    table = pd.read_csv(out / SWEEP_FILE)
    assert list(table["agent.learning_rate"]) == RATES
    assert len(table) == 3 and (table.env_steps == 512).all() and table.diverged.isna().all()
    for _, row in table.iterrows():
        run_dir = out / row["run_dir"]
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["final_pct_mastered_mean"] == pytest.approx(row.final_pct_mastered_mean)
        assert summary["sweep"]["values"] == {"agent.learning_rate": row["agent.learning_rate"]}
        assert summary["seeds"] == [0, 1] and summary["env_steps"] == 512
        resolved = yaml.safe_load((run_dir / "config.yaml").read_text())
        assert resolved["agent"]["learning_rate"] == row["agent.learning_rate"]
        for name in ("config.yaml", "provenance.json", "tasks.csv", "learning_curve.png"):
            assert (run_dir / name).stat().st_size > 0, name
    spec = json.loads((out / "sweep.json").read_text())
    assert spec["sweep"] == {"agent.learning_rate": RATES} and spec["combinations"] == 3
    rows = table.assign(diverged="").to_dict("records")
    assert format_sweep(rows) in printed and "0.0003" in printed and "% mastered" in printed


def test_the_values_of_several_keys_are_crossed():
    sweep = parse_sweep(["agent.learning_rate=1e-4,1e-3", "agent.ent_coef=0,0.01,0.1"])
    assert sweep == {"agent.learning_rate": ["1e-4", "1e-3"], "agent.ent_coef": [0, 0.01, 0.1]}
    checked = check_sweep(tiny_config(), sweep)
    assert checked["agent.learning_rate"] == [1e-4, 1e-3]  # YAML's "1e-4" string, as a number
    combos = combinations(checked)
    assert len(combos) == 6 and combos[1] == {"agent.learning_rate": 1e-4, "agent.ent_coef": 0.01}
    assert combination_config(tiny_config(), combos[1]).agent.kwargs["ent_coef"] == 0.01


@pytest.mark.parametrize(
    "items, message",
    [
        (
            ["loop.num_envs=2,4"],
            "--sweep loop.num_envs: not a numeric hyperparameter (pytree leaf)",
        ),
        (["agent.hidden_sizes=16,32"], "changes array shapes or the compiled program"),
        (["agent.anneal_lr=true,false"], "--sweep agent.anneal_lr: not a numeric"),
        (["agent.learning_rat=1e-4"], "did you mean 'learning_rate'"),
        (["agnt.learning_rate=1e-4"], "unknown config key 'agnt'; did you mean 'agent'"),
        (["seed=0,1"], "use --seeds"),
        (["agent.learning_rate="], "empty value"),
        (["agent.learning_rate=1e-4,,1e-3"], "empty value"),
        (["agent.learning_rate"], "expected key=value"),
        (["agent.learning_rate=1e-4", "agent.learning_rate=1e-3"], "given twice"),
        (["agent.learning_rate=1e-4,1e-4"], "a value is given twice"),
        (["agent.learning_rate=fast,1e-3"], "agent.learning_rate must be > 0, got 'fast'"),
        (["agent.learning_rate=-1"], "agent.learning_rate must be > 0, got -1"),
    ],
)
def test_bad_sweeps_are_one_line_errors(items, message):
    with pytest.raises(ConfigError, match=None) as err:
        check_sweep(tiny_config(), parse_sweep(items))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_teacher_params_are_sweepable_and_teacher_options_are_not():
    config = tiny_config(teacher={"name": "riac"})
    assert check_sweep(config, {"teacher.mutation_std": [0.1, 0.2]}) == {
        "teacher.mutation_std": [0.1, 0.2]
    }
    with pytest.raises(ConfigError, match="teacher.max_regions: not a numeric"):
        check_sweep(config, {"teacher.max_regions": [4, 8]})


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--sweep", "loop.num_envs=2,4"],
            "error: --sweep loop.num_envs: not a numeric hyperparameter (pytree leaf) of the "
            "agent or teacher: it changes array shapes or the compiled program, so it cannot "
            "share one compiled program; run one config per value",
        ),
        (["--sweep", "agent.learning_rate="], "--sweep agent.learning_rate: empty value"),
        (["--sweep", "agent.learning_rate=1e-3", "--max-minutes", "1"], "not to --sweep"),
    ],
)
def test_the_cli_refuses_a_bad_sweep_before_compiling(tmp_path, capsys, args, message):
    out = tmp_path / "run"
    with count_compilations() as compiled:
        code = run_cli.main(["--config", write_tiny(tmp_path), "--out", str(out), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert compiled == [] and not out.exists()


@pytest.mark.slow
def test_each_combination_logs_its_own_metrics(swept):
    pytest.importorskip("tensorboardX")
    from tests.test_loggers import read_events

    out, _ = swept
    for rate in RATES:
        run_dir = out / combination_name({"agent.learning_rate": rate})
        scalars, _ = read_events(run_dir / "tensorboard")
        metrics = pd.read_csv(run_dir / "metrics.csv")
        means = metrics.groupby("env_steps").agent_loss.mean()
        logged = scalars["agent_loss"]
        np.testing.assert_allclose([logged[step] for step in means.index], means, rtol=1e-6)
