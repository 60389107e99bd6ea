"""The `acl` command (experiments/commands.py) and its parser core (experiments/cli.py):
every subcommand listed and helped, the shared flags declared one way wherever they apply,
bad input as one line, the restart for XLA flags under `acl`, and the installed console
script. In-process but the last test: the fast suite cannot afford a subprocess per
command."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from acl.core.errors import ConfigError
from experiments import cli, commands

ROOT = Path(__file__).resolve().parents[1]
ALL_SHARED = set(cli.SHARED_FLAGS)
RUN_LIKE = ALL_SHARED - {"--preset", "--devices", "--max-minutes"}
"""The flags of a command that runs one config's seeds with progress."""
COMPARISON = {"--config", "--set", "--seeds", "--out", "--no-progress"}
SHARED = {
    "run": ALL_SHARED,
    "compare": {"--out"},
    "evaluate": set(),
    "benchmark": {"--config", "--seeds", "--out", "--no-progress"},
    "shootout": {"--config", "--set", "--preset", "--seeds", "--out", "--no-progress"},
    "report": {"--out"},
    "helps-where": {"--out"},
    "risk": {"--out", "--no-progress"},
    "render-maze-levels": {"--out"},
    "render-docs": set(),
    "hparams-docs": {"--out"},
    "toy-bandit": {"--set", "--seeds", "--out", "--no-progress"},
    "reference-teachers": {"--seeds", "--out", "--no-progress"},
    "bit-flip": RUN_LIKE,
    "goal-curricula": {"--out", "--no-progress"},
    "jsrl": COMPARISON,
    "reverse-curriculum": COMPARISON,
    "svgg": COMPARISON,
    "stump-tracks-ppo": RUN_LIKE | {"--max-minutes"},
    "ued-mazes": {"--set", "--preset", "--seeds", "--out", "--no-progress", "--max-minutes"},
    "bench-ppo": {"--seeds", "--out"},
    "bench-dqn": {"--seeds", "--out"},
    "bench-teachers": {"--config", "--set", "--seeds", "--out"},
    "bench-devices": {"--set", "--seeds", "--out", "--devices"},
    "bench-gmm-fit": {"--seeds", "--out"},
    "bench-teachdeeprl": {"--seeds", "--out", "--no-progress"},
    "bench-overhead": {"--set", "--out", "--no-progress"},
    "bench-maze": {"--set", "--preset", "--seeds", "--out"},
    "bench-stump-tracks": {"--out"},
    "bench-brax-goal": {"--out"},
    "profile-maze-student": {"--config", "--set", "--seeds", "--out"},
    "checkpoint-size": {"--preset", "--out"},
    "gmm-k-range": {"--config", "--set", "--seeds", "--out"},
    "xland-generator": {"--out"},
}
"""The shared flags each command must take (and no other): a new command adds its row."""
SAMPLE = {
    "--config": (
        ["--config", "cartpole_random"],
        "config",
        str(cli.CONFIGS / "cartpole_random.yaml"),
    ),
    "--set": (["--set", "loop.num_envs=8"], "overrides", "loop.num_envs=8"),
    "--preset": (["--preset", "cpu"], "preset", "cpu"),
    "--seeds": (["--seeds", "3"], "seeds", 3),
    "--out": (["--out", "elsewhere"], "out", "elsewhere"),
    "--no-progress": (["--no-progress"], "no_progress", True),
    "--devices": (["--devices", "2"], "devices", 2),
    "--max-minutes": (["--max-minutes", "1.5"], "max_minutes", 1.5),
}
"""Flag -> (arguments, the attribute every command parses it into, the value)."""
NAMES = [command.name for command in commands.COMMANDS]


def parser_of(name: str) -> cli.CommandParser:
    return commands.load(name).parser()


def test_every_command_has_its_shared_flags_declared_here():
    assert sorted(SHARED) == sorted(NAMES)
    assert len(set(NAMES)) == len(NAMES)


def test_acl_help_lists_every_command_by_group(capsys):
    with pytest.raises(SystemExit) as exited:
        commands.main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: acl COMMAND")
    listed = {
        line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()
    }
    assert set(NAMES) <= listed
    for heading in commands.GROUPS.values():
        assert f"{heading}:" in out
    assert " ".join(cli.SHARED_FLAGS) in out


@pytest.mark.parametrize("name", NAMES)
def test_every_command_prints_a_usable_help(name, capsys):
    with pytest.raises(SystemExit) as exited:
        commands.main([name, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: acl {name} ")
    command = commands.BY_NAME[name]
    assert command.module.split(".")[0] in commands.GROUPS
    parser = parser_of(name)
    assert parser.prog == f"acl {name}" and parser.description
    # Every argument says what it is (argparse formats help lazily: a stray "%" fails here).
    undocumented = [
        action.dest
        for action in parser._actions
        if not action.help and action.dest != "help"  # argparse.SUPPRESS is documented
    ]
    assert not undocumented, f"acl {name}: arguments without a help line: {undocumented}"
    assert "examples:" in out and parser.examples
    for example in parser.examples:
        assert f"acl {name} {example}".rstrip() in out
    takes = SHARED[name]
    assert ("configs (--config" in out) == ("--config" in takes)
    assert ("presets (--preset" in out) == ("--preset" in takes)
    if "--preset" in takes:
        assert "cpu: " in out and "maze_dr" in out


@pytest.mark.parametrize("name", NAMES)
def test_every_command_takes_the_shared_flags_that_apply_to_it(name, capsys):
    parser = parser_of(name)
    # Its first example parses, and so does it with each shared flag it takes, into the
    # same attribute and value for every command.
    base = shlex.split(parser.examples[0])
    parser.parse_args(base)
    for flag, (arguments, dest, value) in SAMPLE.items():
        if flag in SHARED[name]:
            parsed = vars(parser.parse_args([*base, *arguments]))
            got = parsed[dest]
            assert got == value or got == [value] or value in got, (name, flag, got)
        else:
            with pytest.raises(SystemExit) as exited:
                parser.parse_args([*base, *arguments])
            assert exited.value.code == 2, (name, flag)
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1 and f"see acl {name} --help" in err


def test_toy_bandit_no_longer_refuses_no_progress():
    # The example of flags that disagreed between scripts.
    args = parser_of("toy-bandit").parse_args(["--no-progress"])
    assert args.no_progress is True


def test_an_unknown_command_is_one_line_naming_the_closest(capsys):
    with pytest.raises(SystemExit) as exited:
        commands.main(["rnu", "--config", "x"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "did you mean run" in err
    with pytest.raises(SystemExit) as exited:
        commands.main([])
    assert exited.value.code == 2


def test_from_the_command_line_a_command_runs_as_its_own_script(monkeypatch, capsys):
    # `acl run ARGS` leaves sys.argv as `python -m experiments.run ARGS` would.
    seen = {}
    module = commands.load("run")
    monkeypatch.setattr(sys, "argv", ["/bin/acl", "run", "--config", "x", "--seeds", "2"])
    monkeypatch.setattr(module, "main", lambda argv=None: seen.update(argv=argv, sys=sys.argv))
    commands.main()
    assert seen == {"argv": None, "sys": ["/bin/acl run", "--config", "x", "--seeds", "2"]}


def test_bad_input_is_one_line_with_exit_code_2(capsys):
    @cli.one_line_errors
    def main(argv=None) -> int:
        raise ConfigError("loop.num_envs must be a positive integer, got 0")

    assert main([]) == 2
    err = capsys.readouterr().err
    assert err == "error: loop.num_envs must be a positive integer, got 0\n"
    with pytest.raises(SystemExit) as exited:
        parser_of("run").parse_args(["--config", "x", "--seed", "3"])  # no abbreviations
    assert exited.value.code == 2
    assert "unrecognized arguments: --seed 3" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="finite number >= 0"):
        cli.minutes_budget(float("nan"))
    assert cli.minutes_budget(1.5) == 90.0 and cli.minutes_budget(None) is None


def test_configs_resolve_by_name_and_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    named = cli.CONFIGS / "cartpole_random.yaml"
    assert cli.config_path("cartpole_random") == str(named)
    assert cli.config_path("experiments/configs/cartpole_random.yaml") == str(named)
    (tmp_path / "mine.yaml").write_text("env: cartpole\n")
    assert cli.config_path("mine.yaml") == "mine.yaml"  # a path that exists comes first
    assert cli.config_path("nowhere.yaml") == "nowhere.yaml"  # its loader says so
    assert "cartpole_random" in cli.config_names(cli.RUN_CONFIGS)
    assert "benchmark_quick" not in cli.config_names(cli.RUN_CONFIGS)  # a suite
    assert cli.config_names("svgg_*.yaml") == ["svgg_point_maze", "svgg_s_maze"]


def test_the_restart_for_host_devices_reruns_the_command_line(monkeypatch):
    import jax

    if len(jax.devices()) >= 2 or jax.default_backend() != "cpu":
        pytest.skip("JAX already runs on 2+ devices or an accelerator: nothing to restart")
    calls = []
    monkeypatch.delenv("ACL_JAX_RESTARTED", raising=False)
    monkeypatch.setattr(sys, "orig_argv", ["python3", "/venv/bin/acl", "run", "--config", "x"])
    monkeypatch.setattr(os, "execve", lambda *args: calls.append(args))
    cli.restart_with_host_devices(2)
    ((program, argv, env),) = calls
    assert program == sys.executable
    assert argv == [sys.executable, "/venv/bin/acl", "run", "--config", "x"]
    assert "--xla_force_host_platform_device_count=2" in env["XLA_FLAGS"]
    assert env["ACL_JAX_RESTARTED"] == "1"


def test_the_library_knows_no_command_line():
    # Commands live in experiments/: no module of acl/ parses arguments or runs as a script.
    found = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "acl").rglob("*.py")
        if "argparse" in path.read_text() or '__name__ == "__main__"' in path.read_text()
    ]
    assert not found, found


def test_the_installed_console_script_runs():
    script = Path(sys.executable).parent / "acl"
    assert script.is_file(), "pip install -e . installs the acl console script"
    done = subprocess.run(
        [str(script), "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert all(name in done.stdout for name in NAMES)
