"""Checkpoints and resume: a run killed or stopped at any point and resumed writes the same
files as a run that was never interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest
import yaml
from orbax.checkpoint._src.path import atomicity

from acl.build import make_train
from acl.run.checkpoint import SUMMARY_TIME_FIELDS, RunInterrupted
from acl.run.experiment import run_experiment
from acl.run.results import RunDir
from experiments import run as run_cli
from tests.conftest import TINY, tiny_config

# Every test here resumes a real run, from one reference run that takes 20-40 s on 2 cores.
pytestmark = pytest.mark.slow

# Four evaluations, a teacher with state worth saving (buffers, mixtures, PRNG key).
SECTIONS = {
    "teacher": "alp_gmm",
    "loop": {**TINY["loop"], "total_env_steps": 1024},
}
COMPARED = ("metrics.csv", "tasks.csv", "agent_params.msgpack") + tuple(
    f"teacher/eval_{chunk:04d}.npz" for chunk in range(4)
)


def assert_same_run(reference: Path, other: Path) -> None:
    """Byte-identical files; the summary equal except for its machine-speed fields."""
    for name in COMPARED:
        assert (other / name).read_bytes() == (reference / name).read_bytes(), name
    assert sorted(p.name for p in (other / "teacher").iterdir()) == sorted(
        p.name for p in (reference / "teacher").iterdir()
    )

    def results(path: Path) -> dict:
        summary = json.loads((path / "summary.json").read_text())
        return {k: v for k, v in summary.items() if k not in SUMMARY_TIME_FIELDS}

    assert results(other) == results(reference)


@pytest.fixture(scope="module")
def config():
    return tiny_config(**SECTIONS)


@pytest.fixture(scope="module")
def trainer(config):
    """One trainer for the module: run_experiment compiles it once."""
    return make_train(config)


@pytest.fixture(scope="module")
def reference(tmp_path_factory, config, trainer) -> Path:
    """The uninterrupted run every test compares with."""
    out = tmp_path_factory.mktemp("resume") / "reference"
    run_experiment(config, out, progress=False, trainer=trainer)
    return out


def test_a_run_saves_its_last_checkpoints(reference):
    assert sorted(p.name for p in (reference / "checkpoints").iterdir()) == ["3", "4"]


def test_a_run_stopped_by_its_time_limit_resumes_to_the_full_length(
    reference, config, trainer, tmp_path
):
    stopped = run_experiment(config, tmp_path, False, trainer, max_seconds=0)
    assert stopped["stopped_at_time_limit"] and stopped["env_steps"] == 256
    summary = run_experiment(config, tmp_path, False, trainer, resume=True)
    assert "stopped_at_time_limit" not in summary
    assert_same_run(reference, tmp_path)
    resumed = json.loads((tmp_path / "provenance.json").read_text())["resumed"]
    assert len(resumed) == 1


def test_sigterm_saves_a_checkpoint_after_the_chunk_then_resumes(
    reference, config, trainer, tmp_path, monkeypatch
):
    append = RunDir.append_tasks

    def append_then_signal(self, chunk, *args):
        append(self, chunk, *args)
        if chunk == 1:  # in the middle of the second evaluation's writes
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(RunDir, "append_tasks", append_then_signal)
    config = tiny_config(**{**SECTIONS, "loop": {**SECTIONS["loop"], "checkpoint_every": 3}})
    with pytest.raises(RunInterrupted) as stop:
        run_experiment(config, tmp_path, False, trainer)
    assert stop.value.chunks_done == 2 and stop.value.signum == signal.SIGTERM
    # Saved although checkpoint_every is 3: a stop always saves.
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["2"]
    monkeypatch.undo()
    run_experiment(config, tmp_path, False, trainer, resume=True)
    assert_same_run(reference, tmp_path)


def test_a_kill_during_a_save_resumes_from_the_previous_checkpoint(
    reference, config, trainer, tmp_path, monkeypatch
):
    class Killed(Exception):
        """Stands for the process dying during the save."""

    finalize = atomicity.AtomicRenameTemporaryPath.finalize

    async def die_before_the_third_commit(self, *args, **kwargs):
        # orbax has written checkpoint 3 into its temporary directory, not renamed it.
        if self.get_final().name == "3":
            raise Killed
        return await finalize(self, *args, **kwargs)

    monkeypatch.setattr(
        atomicity.AtomicRenameTemporaryPath, "finalize", die_before_the_third_commit
    )
    with pytest.raises(Killed):
        run_experiment(config, tmp_path, False, trainer)
    monkeypatch.undo()
    steps = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert "3" not in steps and "2" in steps  # 3 is only a temporary directory
    # The files have run ahead of the usable checkpoint: the resume cuts them back.
    assert len((tmp_path / "metrics.csv").read_text().splitlines()) > 1 + 2 * 2
    run_experiment(config, tmp_path, False, trainer, resume=True)
    assert_same_run(reference, tmp_path)


@pytest.mark.slow
def test_sigkill_after_the_second_evaluation_then_resume_from_the_shell(reference, tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, **SECTIONS}))
    out = tmp_path / "run"
    # The kill comes at a fixed point, right after the second evaluation's metrics rows,
    # before its snapshot and its checkpoint: not at a time that a fast run may outpace.
    driver = textwrap.dedent(
        f"""
        import os, signal, sys
        from acl.run.results import RunDir
        append = RunDir.append_metrics
        def append_then_die(self, rows):
            append(self, rows)
            if rows[0]["chunk"] == 1:
                os.kill(os.getpid(), signal.SIGKILL)
        RunDir.append_metrics = append_then_die
        from experiments.run import main
        sys.exit(main(["--config", {str(config)!r}, "--out", {str(out)!r}, "--no-progress"]))
        """
    )
    # The same compile options as this process, so the files can match bit for bit.
    env = {
        **os.environ,
        "JAX_DISABLE_MOST_OPTIMIZATIONS": str(jax.config.read("jax_disable_most_optimizations")),
    }
    killed = subprocess.run(
        [sys.executable, "-c", driver], env=env, capture_output=True, text=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (out / "summary.json").exists()
    assert run_cli.main(["--resume", str(out), "--no-progress"]) == 0
    assert_same_run(reference, out)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "agent.learning_rate=0.1"], "--set agent.learning_rate: a resumed run keeps"),
        (["--seeds", "3"], "--seeds cannot change a resumed run"),
        (["--config", "x.yaml"], "give one of --config and --resume"),
    ],
)
def test_resume_refuses_what_would_change_the_run(reference, capsys, args, message):
    code = None
    try:
        code = run_cli.main(["--resume", str(reference), *args])
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_resume_refuses_other_package_versions_unless_forced(reference, tmp_path, capsys):
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("config.yaml", "provenance.json"):
        (copy / name).write_bytes((reference / name).read_bytes())
    record = json.loads((copy / "provenance.json").read_text())
    record["versions"]["jax"] = "0.0.1"
    record["git_commit"] = "0123456789abcdef"
    (copy / "provenance.json").write_text(json.dumps(record))
    assert run_cli.main(["--resume", str(copy), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "installed packages differ from the run's (jax 0.0.1 -> " in err
    assert err.count("\n") == 1

    from acl.run.checkpoint import resume_config

    config, warnings = resume_config(copy, ["loop.keep_checkpoints=3"], force=True)
    assert config.loop.keep_checkpoints == 3
    assert any("other package versions" in w for w in warnings)
    assert any("started at commit 0123456789ab" in w for w in warnings)
