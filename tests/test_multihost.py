"""One run over two processes (`--coordinator`, JAX's multi-controller runtime), on
CPU: two local processes of one CPU device each, gloo collectives, 127.0.0.1 only. The
run, stopped by its time limit and resumed, equals the one-process run of the same seeds
as a run over two devices does (tests/test_devices.py), and only process 0 writes the
run directory."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import TINY
from tests.test_devices import agent_params, assert_same_params, assert_same_seeds, metrics

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_processes(commands: dict[str, list[str]]) -> dict[str, str]:
    """Runs `tests.multihost_run` with each command at once; their outputs, after
    asserting that every process exited 0."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["JAX_PLATFORMS"] = "cpu"
    processes = {
        name: subprocess.Popen(
            [sys.executable, "-m", "tests.multihost_run", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, args in commands.items()
    }
    outputs = {}
    try:
        for name, process in processes.items():
            outputs[name], _ = process.communicate(timeout=300)
            assert process.returncode == 0, f"{name}:\n{outputs[name][-3000:]}"
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
    return outputs


def two_processes(args: list[str]) -> dict[str, list[str]]:
    coordinator = f"127.0.0.1:{free_port()}"
    return {
        f"two_{i}": [
            *args,
            *("--coordinator", coordinator, "--num-processes", "2", "--process-id", str(i)),
        ]
        for i in (0, 1)
    }


@pytest.mark.slow
def test_two_processes_stopped_and_resumed_give_the_one_process_run(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    common = ["--config", str(config), "--no-progress", "--seeds", "4"]
    common += ["--set", "loop.total_env_steps=512"]
    two, one = tmp_path / "two", tmp_path / "one"
    # One run directory, as on hosts sharing a file system: orbax saves the checkpoints
    # collectively into it (each process its own shards). The time limit stops both
    # processes after the first chunk, whichever reaches it first (acl.run.distributed.agreed).
    outputs = run_processes(
        {
            "one": [*common, "--out", str(one), "--devices", "1"],
            **two_processes([*common, "--out", str(two), "--max-minutes", "0"]),
        }
    )
    assert "run directory" in outputs["two_0"] and "run directory" not in outputs["two_1"]
    stopped = yaml.safe_load((two / "summary.json").read_text())
    assert stopped["stopped_at_time_limit"] and stopped["env_steps"] == 256
    outputs = run_processes(two_processes(["--resume", str(two), "--no-progress"]))
    assert sorted(p.name for p in (two / "checkpoints").iterdir()) == ["1", "2"]
    summary = yaml.safe_load((two / "summary.json").read_text())
    assert summary["devices"] == 2 and summary["seeds"] == [0, 1, 2, 3]
    assert "stopped_at_time_limit" not in summary
    assert_same_seeds(metrics(two), metrics(one))
    assert_same_params(agent_params(two), agent_params(one))


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--coordinator", "127.0.0.1:1"], "go together"),
        (["--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2"], "[0, 2)"),
    ],
)
def test_incomplete_or_wrong_process_flags_are_one_line_errors(tmp_path, capsys, flags, message):
    from experiments import run as run_cli

    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "run"
    assert run_cli.main(["--config", str(config), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not out.exists()
