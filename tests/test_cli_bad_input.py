"""What a new user types wrong, through `acl run` (issue 22, point 2).

Every bad input must give one line naming the field, exit code 2 and no traceback,
before anything is compiled and before anything is written under --out. Nothing here
compiles, so the whole file runs in seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.tools import run as run_cli

# test_cli's compile listener, and its import of acl.loop.train that keeps gymnax's
# import-time jnp constants out of the counts.
from tests.test_cli import count_compilations, write_tiny


def _set(*pairs: str) -> list[str]:
    return [arg for pair in pairs for arg in ("--set", pair)]


def _gymnax(*pairs: str) -> list[str]:
    """The tiny config on the `gymnax` entry (CartPole-v1 unless a pair names an id), with
    a success threshold, and `pairs`."""
    return _set("env.name=gymnax", "env.id=CartPole-v1", "env.success_threshold=40", *pairs)


# (id, extra arguments after --config tiny.yaml --out OUT, a fragment of the one line)
SET_CASES = [
    # agent: numbers of the wrong type, non-finite or out of range
    ("lr string", _set("agent.learning_rate=fast"), "agent.learning_rate must be > 0, got 'fast'"),
    ("lr negative", _set("agent.learning_rate=-1"), "agent.learning_rate must be > 0, got -1"),
    ("lr zero", _set("agent.learning_rate=0"), "agent.learning_rate must be > 0, got 0"),
    ("lr nan", _set("agent.learning_rate=.nan"), "agent.learning_rate must be > 0, got nan"),
    (
        "lr inf",
        _set("agent.learning_rate=.inf"),
        "agent.learning_rate must be a finite number > 0, got inf",
    ),
    (
        "lr list",
        _set("agent.learning_rate=[0.001]"),
        "agent.learning_rate must be > 0, got [0.001]",
    ),
    ("clip_eps zero", _set("agent.clip_eps=0"), "agent.clip_eps must be > 0, got 0"),
    ("gamma 1.5", _set("agent.gamma=1.5"), "agent.gamma must be in (0, 1], got 1.5"),
    ("gamma zero", _set("agent.gamma=0"), "agent.gamma must be in (0, 1], got 0"),
    ("lambda 1.5", _set("agent.gae_lambda=1.5"), "agent.gae_lambda must be in (0, 1], got 1.5"),
    ("lambda negative", _set("agent.gae_lambda=-0.1"), "agent.gae_lambda must be in (0, 1]"),
    ("reward_scale inf", _set("agent.reward_scale=.inf"), "agent.reward_scale must be a finite"),
    ("epochs zero", _set("agent.update_epochs=0"), "agent.update_epochs must be a positive"),
    (
        "minibatches string",
        _set("agent.num_minibatches=two"),
        "agent.num_minibatches must be an integer >= 1, got 'two'",
    ),
    (
        "minibatches divide",
        _set("agent.num_minibatches=3"),
        "agent.num_minibatches (3) must divide",
    ),
    (
        "bool string",
        _set("agent.anneal_lr=maybe"),
        "agent.anneal_lr must be true or false, got 'maybe'",
    ),
    ("bool int", _set("agent.anneal_lr=1"), "agent.anneal_lr must be true or false, got 1"),
    ("choice typo", _set("agent.activation=sigmoid"), "agent.activation must be one of"),
    ("hidden zero", _set("agent.hidden_sizes=[16, 0]"), "agent.hidden_sizes must be"),
    (
        "agent key typo",
        _set("agent.learning_rte=0.1"),
        "agent: unknown config key 'learning_rte'; did you mean 'learning_rate'",
    ),
    ("agent typo", _set("agent.name=ppo2"), "agent.name: unknown agent 'ppo2'"),
    ("agent list", _set("agent=[ppo]"), "agent: expected a mapping with a 'name'"),
    # env and its task bounds
    (
        "pole length negative",
        _set("env.task_low=[-1.0, 0.05, 1.0]"),
        "env.task_low: dimension 'pole_half_length' must be > 0",
    ),
    (
        "pole mass negative",
        _set("env.task_low=[0.05, -1.0, 1.0]"),
        "env.task_low: dimension 'pole_mass' must be > 0",
    ),
    (
        "force negative",
        _set("env.task_high=[2.0, 2.0, -5.0]"),
        "env.task_high: dimension 'force_mag' must be >= 0",
    ),
    (
        "task bound inf",
        _set("env.task_high=[2.0, 2.0, .inf]"),
        "env.task_high must be a list of 3 finite numbers",
    ),
    (
        "task bound nan",
        _set("env.task_low=[.nan, 0.05, 1.0]"),
        "env.task_low must be a list of 3 finite numbers",
    ),
    (
        "task low > high",
        _set("env.task_low=[1.0, 0.05, 1.0]", "env.task_high=[0.5, 2.0, 40.0]"),
        "low=1.0 >= high=0.5",
    ),
    ("task bound short", _set("env.task_low=[0.1, 0.1]"), "env.task_low must be a list of 3"),
    ("task bound string", _set("env.task_low=low"), "env.task_low must be a list of 3"),
    ("episode steps", _set("env.max_episode_steps=-5"), "env.max_episode_steps must be a positive"),
    (
        "env float inf",
        _set("env.name=point_reach", "env.unfeasible_max_distance=.inf"),
        "env.unfeasible_max_distance must be a finite number > 2.0, got inf",
    ),
    ("env typo", _set("env.name=cartpol"), "env.name: unknown env 'cartpol'; did you mean"),
    ("env key typo", _set("env.max_episode_step=50"), "env: unknown config key 'max_episode_step'"),
    # the gymnax entry (envs/gymnax_space.py)
    (
        "gymnax unknown field",
        _gymnax("env.task.lenght=[0.1, 1.0]"),
        "env.task.lenght: CartPole-v1 has no EnvParams field 'lenght'; did you mean 'length'",
    ),
    (
        "gymnax unknown id",
        _gymnax("env.id=Cartpole-v1", "env.task.length=[0.1, 1.0]"),
        "env.id: unknown gymnax id 'Cartpole-v1'; did you mean 'CartPole-v1'",
    ),
    (
        "gymnax array field",
        _gymnax("env.id=Acrobot-v1", "env.task.available_torque=[0.5, 2.0]"),
        "Acrobot-v1's available_torque is refused: an array: a task value is a scalar",
    ),
    (
        "gymnax derived field",
        _gymnax("env.task.total_mass=[1.0, 2.0]"),
        "CartPole-v1's total_mass is refused: derived, masscart + masspole",
    ),
    (
        "gymnax bounds word",
        _gymnax("env.task.length=long"),
        "env.task.length must be [low, high] (two finite numbers)",
    ),
    (
        "gymnax bound outside limit",
        _gymnax("env.task.masspole=[-1.0, 2.0]"),
        "env.task.low: dimension 'masspole' must be > 0 (its physical limit), got -1",
    ),
    (
        "gymnax ordering",
        _gymnax("env.id=MountainCar-v0", "env.task.goal_position=[0.4, 0.7]"),
        "MountainCar-v0 needs goal_position <= max_position for every task",
    ),
    (
        "gymnax no success",
        _set("env.name=gymnax", "env.id=CartPole-v1", "env.task.length=[0.1, 1.0]"),
        "env.success_threshold: the gymnax entry needs one",
    ),
    (
        "gymnax mnist",
        _gymnax("env.id=MNISTBandit-bsuite", "env.task.max_steps_in_episode=[1, 2]"),
        "env.id: MNISTBandit-bsuite is refused: gymnax.make downloads MNIST",
    ),
    (
        "gymnax generator",
        _gymnax("env.task.length=[0.1, 1.0]", "env.generator=nowhere_at_all:levels"),
        "env.generator: cannot import 'nowhere_at_all'",
    ),
    (
        "gymnax no return bounds",
        _gymnax(
            "env.id=Catch-bsuite",
            "env.task.max_steps_in_episode=[10, 50]",
            "teacher.name=alp_gmm",
        ),
        "teacher alp_gmm rescales returns by the env's return bounds, and env 'gymnax' "
        "declares none",
    ),
    # teacher
    ("teacher typo", _set("teacher.name=alp-gmm"), "unknown teacher 'alp-gmm'; did you mean"),
    ("teacher number", _set("teacher=5"), "teacher: expected a mapping with a 'name'"),
    (
        "teacher key typo",
        _set("teacher.name=alp_gmm", "teacher.fit_evry=10"),
        "teacher: unknown config key 'fit_evry'",
    ),
    # loop
    ("loop scalar", _set("loop=8"), "loop: expected a mapping, got 8"),
    ("num_envs negative", _set("loop.num_envs=-4"), "loop.num_envs must be a positive integer"),
    ("num_steps negative", _set("loop.num_steps=-16"), "loop.num_steps must be a positive integer"),
    (
        "total steps negative",
        _set("loop.total_env_steps=-768"),
        "loop.total_env_steps must be a positive integer",
    ),
    ("eval_every zero", _set("loop.eval_every=0"), "loop.eval_every must be a positive integer"),
    ("num_envs float", _set("loop.num_envs=4.5"), "loop.num_envs: expected an integer, got 4.5"),
    ("num_envs word", _set("loop.num_envs=four"), "loop.num_envs: expected an integer"),
    ("mode typo", _set("loop.mode=episodes"), "loop.mode must be 'episode' or 'batch'"),
    ("max_feedback", _set("loop.max_feedback=-1"), "loop.max_feedback must be >= 0"),
    ("loop key typo", _set("loop.num_enms=4"), "loop: unknown config key 'num_enms'"),
    ("not a section", _set("loop.num_envs.x=1"), "'num_envs' is not a section"),
    ("no equals", ["--set", "loop.num_envs"], "--set: expected key=value"),
    # top level, eval, challenge
    ("num_seeds zero", _set("num_seeds=0"), "num_seeds must be a positive integer, got 0"),
    ("num_seeds word", _set("num_seeds=two"), "num_seeds: expected an integer"),
    ("seed negative", _set("seed=-1"), "seed must be in 0..4294967295, got -1"),
    ("name empty", _set("name="), "name: expected a non-empty string"),
    ("top key typo", _set("colour=blue"), "config: unknown config key 'colour'"),
    ("eval tasks zero", _set("eval.num_test_tasks=0"), "eval.num_test_tasks must be a positive"),
    ("eval seed", _set("eval.seed=-3"), "eval.seed must be in 0..4294967295"),
    (
        "eval bound inf",
        _set("eval.task_high=[2.0, 2.0, .inf]"),
        "eval.task_high must be a list of 3 finite numbers",
    ),
    ("challenge typo", _set("challenge.name=unfeasable"), "challenge.name must be one of"),
    (
        "forgetting period",
        _set("challenge.forgetting_period=1.5"),
        "challenge.forgetting_period must be in (0, 1)",
    ),
    # command-line arguments
    ("seeds zero", ["--seeds", "0"], "num_seeds must be a positive integer, got 0"),
    ("seeds word", ["--seeds", "two"], "argument --seeds: invalid int value: 'two'"),
    ("minutes negative", ["--max-minutes", "-1"], "--max-minutes must be a finite number >= 0"),
    ("minutes nan", ["--max-minutes", "nan"], "--max-minutes must be a finite number >= 0"),
    ("preset unknown", ["--preset", "gpu"], "--preset: no preset 'gpu'"),
    ("flag typo", ["--seed", "3"], "unrecognized arguments: --seed 3"),
]


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    }


def _run(argv: list[str]) -> int:
    """The CLI's return code, or argparse's exit code."""
    try:
        return run_cli.main(argv)
    except SystemExit as exited:
        return exited.code


def _check_refused(tmp_path, capsys, argv, message, out: Path):
    before = _files(tmp_path)
    with count_compilations() as compiled:
        code = _run(argv)
    captured = capsys.readouterr()
    text = (captured.out + captured.err).strip()
    assert code == 2, text
    assert len(text.splitlines()) == 1, text
    assert message in text, text
    assert "Traceback" not in text
    assert compiled == [], "nothing may be compiled before an input error"
    assert _files(tmp_path) == before, "nothing may be written"
    assert not out.is_dir() or not any(out.iterdir())


@pytest.mark.parametrize("args,message", [c[1:] for c in SET_CASES], ids=[c[0] for c in SET_CASES])
def test_bad_setting_is_one_line_before_compiling(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    argv = ["--config", write_tiny(tmp_path), "--out", str(out), "--no-progress", *args]
    _check_refused(tmp_path, capsys, argv, message, out)


CONFIG_FILES = [
    ("empty", "", "is empty"),
    ("comments only", "# nothing yet\n", "is empty"),
    ("empty mapping", "{}\n", "is empty"),
    ("list", "- env: cartpole\n- teacher: random\n", "must hold a mapping, got list"),
    ("number", "5\n", "must hold a mapping, got int"),
    ("string", "cartpole\n", "must hold a mapping, got str"),
    ("bad yaml", "loop: [unclosed\n", "is not valid YAML"),
    ("missing", None, "cannot read"),
]


@pytest.mark.parametrize(
    "content,message", [c[1:] for c in CONFIG_FILES], ids=[c[0] for c in CONFIG_FILES]
)
def test_bad_config_file_is_one_line_before_compiling(tmp_path, capsys, content, message):
    path = tmp_path / "config.yaml"
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out"
    argv = ["--config", str(path), "--out", str(out), "--no-progress"]
    _check_refused(tmp_path, capsys, argv, message, out)


@pytest.mark.parametrize("where", ["the file", "under the file"])
def test_out_naming_a_file_is_one_line_before_compiling(tmp_path, capsys, where):
    existing = tmp_path / "results.txt"
    existing.write_text("keep me\n")
    out = existing if where == "the file" else existing / "run"
    argv = ["--config", write_tiny(tmp_path), "--out", str(out), "--no-progress"]
    _check_refused(tmp_path, capsys, argv, "--out: ", out)
    assert existing.read_text() == "keep me\n"
