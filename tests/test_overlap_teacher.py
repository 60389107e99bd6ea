"""The teacher's update beside the agent's, on a second device (`loop.overlap_teacher`,
`acl.loop.placement.TeacherBeside`): what it refuses, and (slow) that `python -m
experiments.run` restarts itself with two CPU host devices and computes what the
one-device loop computes, an ALP-GMM fit included."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from experiments import run as run_cli
from tests.conftest import TINY, tiny_config
from tests.test_devices import agent_params, assert_same_params, assert_same_seeds, metrics

ROOT = Path(__file__).resolve().parent.parent
GMM_TEACHER = {"name": "alp_gmm", "fit_rate": 8, "fit_every": 1, "k_max": 3}
"""Small enough that TINY's 12 iterations fit a mixture at each update after the first."""


def test_overlap_and_shard_envs_are_refused_together():
    from acl.core.errors import ConfigError

    with pytest.raises(ConfigError, match="set one of them"):
        tiny_config(loop={"overlap_teacher": True, "shard_envs": True})


def test_sfl_refuses_to_run_beside_the_agent():
    from acl.build import make_train
    from acl.core.errors import ConfigError

    config = tiny_config(
        env={"name": "maze"},
        teacher={"name": "sfl"},
        loop={"overlap_teacher": True, "mode": "batch"},
    )
    with pytest.raises(ConfigError, match="does not take loop.overlap_teacher"):
        make_train(config)


def test_one_device_is_a_config_error_in_process(tmp_path, capsys):
    """Called in-process (argv given), experiments.run does not restart itself: with the
    one device this process has, the layout refuses before any training."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "loop": {**TINY["loop"], "overlap_teacher": True}}))
    code = run_cli.main(["--config", str(config), "--out", str(tmp_path / "run"), "--no-progress"])
    assert code == 2
    assert "loop.overlap_teacher takes two devices" in capsys.readouterr().err


def run_script(config: Path, out: Path, *overrides: str) -> None:
    """`python -m experiments.run` in a fresh process, as a user runs it."""
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    args = [sys.executable, "-m", "experiments.run", "--config", str(config), "--out", str(out)]
    args += ["--no-progress", *[f"--set={o}" for o in overrides]]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_the_teacher_beside_the_agent_computes_the_one_device_run(tmp_path):
    """TINY with ALP-GMM fitting at every update, on one device and overlapped: the same
    episodes, returns, tasks and evaluations, params within float32 round-off, and the
    same mixtures; the overlapped run is deterministic, and records its two devices."""
    config = tmp_path / "tiny_gmm.yaml"
    config.write_text(yaml.safe_dump({**TINY, "teacher": GMM_TEACHER}))
    run_script(config, tmp_path / "one")
    run_script(config, tmp_path / "beside", "loop.overlap_teacher=true")
    run_script(config, tmp_path / "again", "loop.overlap_teacher=true")

    one, beside = tmp_path / "one", tmp_path / "beside"
    assert_same_seeds(metrics(beside), metrics(one))
    assert_same_params(agent_params(beside), agent_params(one))
    for name in ("metrics.csv", "tasks.csv", "agent_params.msgpack"):
        assert (tmp_path / "again" / name).read_bytes() == (beside / name).read_bytes(), name
    assert yaml.safe_load((beside / "summary.json").read_text())["devices"] == 2

    snapshots = sorted((one / "teacher").glob("eval_*.npz"))
    assert len(snapshots) == 3
    for path in snapshots:
        expected, actual = np.load(path), np.load(beside / "teacher" / path.name)
        assert expected["has_fit"].all(), "every seed must have fitted by each evaluation"
        for key in expected.files:
            np.testing.assert_allclose(actual[key], expected[key], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["plr", "reverse"])
def test_teachers_whose_draw_advances_their_state_run_beside_the_agent(tmp_path, name):
    """The teacher's device draws the next tasks right after its update: PLR (a batch of
    levels per iteration, its draw replays or fills its buffer) and the reverse curriculum
    (a task pool) compute on two devices what they compute on one."""
    from tests.golden import CONFIGS

    config = tmp_path / f"{name}.yaml"
    config.write_text(yaml.safe_dump(CONFIGS[name]))
    run_script(config, tmp_path / "one")
    run_script(config, tmp_path / "beside", "loop.overlap_teacher=true")
    assert_same_seeds(metrics(tmp_path / "beside"), metrics(tmp_path / "one"))
    assert_same_params(agent_params(tmp_path / "beside"), agent_params(tmp_path / "one"))
