"""Experiment loggers (acl.run.loggers): what TensorBoard gets equals metrics.csv; a backend
that is not installed is a one-line error naming the extra."""

from __future__ import annotations

import struct
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from acl.core.errors import ConfigError
from acl.run.loggers import TENSORBOARD_DIR, make_loggers
from experiments import run as run_cli
from tests.conftest import tiny_config
from tests.test_cli import count_compilations, write_tiny


def read_events(folder: Path) -> tuple[dict, set]:
    """(scalars {tag: {step: value}}, histogram tags) of the event files in `folder`,
    read as TFRecords (length, CRC, an Event proto, CRC) with tensorboardX's proto."""
    from tensorboardX.proto.event_pb2 import Event

    scalars, histograms = defaultdict(dict), set()
    files = sorted(folder.glob("events.out.tfevents.*"))
    assert files, f"no event file in {folder}"
    for file in files:
        data, offset = file.read_bytes(), 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            event = Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                if value.HasField("histo"):
                    histograms.add(value.tag)
                else:
                    scalars[value.tag][event.step] = value.simple_value
    return scalars, histograms


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory):
    pytest.importorskip("tensorboardX")
    root = tmp_path_factory.mktemp("logged")
    out = root / "run"
    args = ["--config", write_tiny(root), "--out", str(out), "--no-progress"]
    args += ["--set", "loop.total_env_steps=512", "--log", "tensorboard"]
    assert run_cli.main(args) == 0
    return out


@pytest.mark.slow
def test_tensorboard_scalars_equal_metrics_csv(logged_run):
    scalars, histograms = read_events(logged_run / TENSORBOARD_DIR)
    metrics = pd.read_csv(logged_run / "metrics.csv")
    means = metrics.drop(columns=["chunk", "seed"]).groupby("env_steps").mean()
    assert list(means.index) == [256, 512]
    for column in means.columns:
        logged = scalars[column]
        assert sorted(logged) == [256, 512], column
        # Event files hold float32.
        np.testing.assert_allclose(
            [logged[step] for step in means.index], means[column], rtol=1e-6, err_msg=column
        )
    for seed, rows in metrics.groupby("seed"):
        logged = scalars[f"eval_pct_mastered/seed_{seed}"]
        np.testing.assert_allclose([logged[s] for s in rows.env_steps], rows.eval_pct_mastered)
    assert {"tasks/pole_half_length", "teacher/episodes_seen"} <= histograms


def test_a_missing_backend_names_its_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails
    out = tmp_path / "run"
    with count_compilations() as compiled:
        code = run_cli.main(
            ["--config", write_tiny(tmp_path), "--out", str(out), "--log", "tensorboard"]
        )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "needs tensorboardX: pip install -e '.[tensorboard]'" in err
    assert compiled == [] and not (out / "metrics.csv").exists()


def test_an_unknown_logger_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="unknown logger 'mlflow'; choose from tensorboard"):
        make_loggers(["mlflow"], tmp_path, tiny_config(), ("x",))


def test_wandb_logs_offline_into_the_run_directory(tmp_path):
    pytest.importorskip("wandb")
    out = tmp_path / "run"
    args = ["--config", write_tiny(tmp_path), "--out", str(out), "--no-progress"]
    assert run_cli.main([*args, "--set", "loop.total_env_steps=512", "--log", "wandb"]) == 0
    assert list((out / "wandb").glob("offline-run-*")), "no offline run in the run directory"
