"""Golden fixtures: a tiny run of every registered teacher, recorded bit for bit.

They pin down what each teacher does today (the tasks it draws, the loop's metrics, its
snapshots), so that a refactor of the teacher contract or of the loop can be checked to
change no teacher's behaviour: tests/test_golden.py re-runs each config in `CONFIGS` and
asserts that every array is bit-identical to the recorded one.

    python -m tests.golden                     # check every teacher, listing what differs
    python -m tests.golden plr svgg            # check some
    python -m tests.golden --record plr        # re-record some (no names: all)
    python -m tests.golden --add-cpu           # record this CPU's bytes beside the others

Re-record only when a change is meant to alter a teacher's behaviour, and say why in the
commit. A recording is bit-exact on the CPU it was made on only (tests/cpu_recordings.py):
a check passes when the run equals the reference recording or another CPU's recording of
the same code; `--record` replaces the reference and drops the other CPUs' recordings of
those teachers, which no longer describe the code; `--add-cpu` adds this CPU's, and is
right only on a commit whose reference recordings pass on their own CPU. Recordings store
the CPU they were made on; where every recording of a teacher names another CPU, its check
is skipped there with that reason, until that CPU's recording is added.

A newly registered teacher needs a config in `CONFIGS` and a recorded fixture
(tests/test_golden.py fails until it has both).

Each run takes the public path: a config dict -> `acl.build.make_train`, its seed vmap
(`jit_init_seeds`), then `run_iterations` one iteration at a time, so the fixtures
survive internal changes of the loop. The test-set evaluation of `run_chunk` is left
out: it scores the student, whose updates the agent metrics already pin, and would add
a compile per teacher. Fixtures are one compressed .npz per teacher under
tests/fixtures/golden/, keyed by name:

    config                 the config dict the run used, as JSON
    versions               jax/jaxlib/numpy of the recording (reported, not compared)
    tasks                  [iterations, seeds, n, D] every task the teacher drew in each
                           iteration: the loop's task log, sized to hold them all
    metrics.<name>         [iterations, seeds] the per-iteration stats of
                           `Trainer.run_iterations` (episodes, return and success sums,
                           dropped feedback, pool overflow)
    metrics.agent.<name>   [iterations, seeds] the agent's update metrics
    snapshot.<name>        [iterations, seeds, ...] teacher.snapshot(state) after each
                           iteration; the last is the final state's

The runs are tiny (4 to 6 iterations of a 16-unit PPO, 2 seeds) yet each reaches its
teacher's periodic work: GMM fits, RIAC splits, PLR replays and ACCEL edits, reverse
rounds, SVGG fits, a JSRL stage move, ADR boundaries moving out and in, GoalGAN and
Setter-Solver trainings. Between them
they also take each way the loop talks to a teacher: the slot layout, a task pool (with
`handed_out` for reverse), `max_feedback`, a challenge with an expert prior (alp_gmm's
low, adr's, goal_gan's and setter_solver's high), batch mode with rollout
readers (PLR, ACCEL, PAIRED), a guide (JSRL), and the student's agent state (SFL's
refreshes).

Bit-identity holds on CPU, where the project requires determinism. The runs compile with
`tests.compile_effort.FAST_COMPILE`, as the fast suite does, in whatever session checks
or records them, so a fixture is checked under the options it was recorded with. The fixtures were
recorded on an x86-64 CPU and may differ on another architecture or jax version.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax
import numpy as np

from tests.compile_effort import FAST_COMPILE, compile_effort
from tests.cpu_recordings import (
    CPUS,
    cpu_tag,
    foreign_only,
    recorded_on,
    recordings,
    this_cpu_path,
)

GOLDEN = Path(__file__).parent / "fixtures" / "golden"
NOT_COMPARED = ("versions", "cpu")

_PPO = {"name": "ppo", "hidden_sizes": [16], "update_epochs": 2, "num_minibatches": 2}
# Episode mode: 4 iterations of 4 x 16 steps; the task log holds all 64 tasks each
# iteration draws (one per slot). One chunk: the evaluation is not run (see `run`).
_EPISODE = {
    "num_envs": 4,
    "num_steps": 16,
    "total_env_steps": 256,
    "eval_every": 256,
    "task_log_size": 256,
}
# Batch mode on a 6 x 6 maze: 6 iterations of 4 levels played 12 steps.
_MAZE = {"name": "maze", "height": 6, "width": 6, "max_episode_steps": 12, "num_walls": 5}
_BATCH = {
    "num_envs": 4,
    "num_steps": 12,
    "total_env_steps": 288,
    "eval_every": 288,
    "mode": "batch",
    "task_log_size": 24,
}


def _config(teacher: dict, env: dict, loop: dict | None = None, **extra) -> dict:
    return {
        "name": f"golden_{teacher['name']}",
        "seed": 0,
        "num_seeds": 2,
        "env": env,
        "teacher": teacher,
        "agent": _PPO,
        "loop": {**_EPISODE, **(loop or {})},
        **extra,
    }


def _maze(teacher: dict, **extra) -> dict:
    return _config(teacher, _MAZE, _BATCH, **extra)


_CARTPOLE = {"name": "cartpole", "max_episode_steps": 50}
_POINT_REACH = {"name": "point_reach"}
_GOAL_MAZE = {"name": "goal_maze", "max_episode_steps": 20}
_POINT_MAZE = {"name": "point_maze", "max_episode_steps": 20}
_GMM = {"fit_rate": 8, "fit_every": 1, "k_max": 3, "em_iterations": 20}

CONFIGS: dict[str, dict] = {
    "random": _config({"name": "random"}, _CARTPOLE),
    "fixed": _config({"name": "fixed"}, _CARTPOLE),
    "schedule": _config(
        {
            "name": "schedule",
            "start_low": [0.0, 0.0],
            "start_high": [0.1, 1.0],
            "ramp_iterations": 3,
        },
        _POINT_REACH,
    ),
    # The unfeasible challenge with the low expert: the teacher works in the unit cube
    # and bootstraps from the expert's prior.
    "alp_gmm": _config(
        {"name": "alp_gmm", **_GMM},
        _POINT_REACH,
        {"max_feedback": 16},
        challenge={"name": "unfeasible", "expert": "low"},
    ),
    # The high expert: the box grows from point_reach's easy task, in the unit cube.
    "adr": _config(
        {"name": "adr", "queue_len": 4, "threshold_low": 0.0, "threshold_high": 0.25},
        {"name": "point_reach", "max_episode_steps": 8},
        challenge={"name": "default", "expert": "high"},
    ),
    # The high expert: the GAN pretrains on the prior, goals are played twice and
    # labelled, and the GAN trains every second iteration.
    "goal_gan": _config(
        {
            "name": "goal_gan",
            "generator_layers": [16],
            "discriminator_layers": [16],
            "gan_iterations": 10,
            "pretrain_iterations": 20,
            "pretrain_samples": 64,
            "update_size": 4,
            "update_every": 2,
            "pending_size": 32,
            "label_buffer_size": 32,
            "old_buffer_size": 16,
        },
        {"name": "point_reach", "max_episode_steps": 8},
        challenge={"name": "default", "expert": "high"},
    ),
    # The high expert's prior as the initial setter; small nets trained every other update.
    "setter_solver": _config(
        {
            "name": "setter_solver",
            "setter_hidden": 16,
            "judge_hidden": [16],
            "train_every": 2,
            "train_steps": 2,
            "buffer_size": 64,
            "setter_batch": 16,
        },
        {"name": "point_reach", "max_episode_steps": 8},
        challenge={"name": "default", "expert": "high"},
    ),
    "covar_gmm": _config({"name": "covar_gmm", **_GMM}, _CARTPOLE, {"task_pool": 16}),
    "riac": _config(
        {"name": "riac", "max_region_size": 4, "max_regions": 15, "num_split_attempts": 8},
        _CARTPOLE,
        {"max_feedback": 16},
    ),
    "dr": _maze({"name": "dr"}),
    "plr": _maze({"name": "plr", "capacity": 8, "minimum_fill_ratio": 0.5}),
    "robust_plr": _maze(
        {
            "name": "robust_plr",
            "capacity": 8,
            "minimum_fill_ratio": 0.5,
            "score_function": "pvl",
            "prioritization": "topk",
        }
    ),
    "accel": _maze({"name": "accel", "capacity": 8, "minimum_fill_ratio": 0.25, "num_edits": 2}),
    "paired": _maze(
        {
            "name": "paired",
            "adversary_agent": "ppo",
            "adversary_kwargs": {"hidden_sizes": [16], "update_epochs": 1},
            "antagonist_kwargs": {"hidden_sizes": [16], "update_epochs": 1, "num_minibatches": 1},
            "num_wall_steps": 6,
            "noise_dim": 4,
        }
    ),
    # A task pool: the reverse curriculum is told how many starts were handed out.
    "reverse": _config(
        {
            "name": "reverse",
            "preset": "small",
            "n_new": 8,
            "n_old": 4,
            "num_walks": 8,
            "updates_per_round": 2,
            "buffer_capacity": 32,
        },
        _GOAL_MAZE,
        {"task_pool": 16},
    ),
    # Rollout values (PPO's extras) kept across rollouts (num_envs from the run); an SPDL
    # update every iteration from the second.
    "spdl": _config(
        {
            "name": "spdl",
            "update_offset": 128,
            "update_frequency": 64,
            "solver_rounds": 4,
            "solver_steps": 25,
        },
        _POINT_REACH,
    ),
    "uniform_start": _config({"name": "uniform_start"}, _GOAL_MAZE),
    "jsrl": _config({"name": "jsrl", "window": 4, "n_stages": 3}, _GOAL_MAZE),
    "svgg": _config(
        {
            "name": "svgg",
            "num_particles": 8,
            "svgd_steps": 2,
            "predictor_steps": 2,
            "predictor_batch": 16,
            "predictor_hidden": [8],
            "predictor_buffer": 64,
            "validity_buffer": 64,
            "plot_grid": 4,
        },
        _POINT_MAZE,
    ),
    "random_goal": _config({"name": "random_goal"}, _POINT_MAZE),
    # Learnability rollouts of the current student (the loop's `student`), a refresh at
    # iterations 0 and 2, half the levels from the buffer after the first.
    "sfl": _config(
        {
            "name": "sfl",
            "num_batches": 2,
            "batch_size": 8,
            "rollout_steps": 24,
            "num_to_save": 4,
            "buffer_update_frequency": 2,
        },
        _POINT_REACH,
    ),
    # ALP-GMM over point_maze's goals, the start fixed (issue 24's goal-only view).
    "subspace": _config(
        {"name": "subspace", "teacher": "alp_gmm", "dims": ["goal_x", "goal_y"], "inner": _GMM},
        _POINT_MAZE,
        {"max_feedback": 16},
    ),
}
"""One tiny run per registered teacher, as an experiment config dict."""


def fixture_path(name: str) -> Path:
    return GOLDEN / f"{name}.npz"


def _flatten(prefix: str, value, out: dict[str, np.ndarray]) -> None:
    # None leaves (fields a run does not fill) are left out: the key sets still differ
    # if one starts or stops being filled.
    if value is None:
        return
    if isinstance(value, dict):
        for key in sorted(value):
            _flatten(f"{prefix}.{key}", value[key], out)
    else:
        out[prefix] = np.asarray(value)


def run(name: str) -> dict[str, np.ndarray]:
    """The run of `CONFIGS[name]` as flat arrays, keyed as the module docstring says."""
    with compile_effort(low=True):
        return _run(name)


def _run(name: str) -> dict[str, np.ndarray]:
    from acl.build import make_train, run_data
    from acl.config import parse_config

    data = CONFIGS[name]
    config = parse_config(data)
    trainer = make_train(config)
    draws = trainer.task_layout.tasks_per_draw
    logged = trainer.schedule.tasks_logged_per_iteration
    if logged < draws:
        raise ValueError(
            f"{name}: loop.task_log_size keeps {logged} of the {draws} "
            "tasks drawn per iteration; size it to keep them all"
        )
    keys = trainer.seed_keys()
    axes = trainer.carry_axes
    init = jax.vmap(trainer.init, in_axes=(0, None), out_axes=axes)
    carry = jax.jit(init, compiler_options=FAST_COMPILE)(keys, run_data(config, trainer))

    def iteration(carry):
        carry, stats = trainer.run_iterations(carry, 1)
        return carry, stats, trainer.teacher.snapshot(carry.seed.teacher_state)

    step = jax.jit(
        jax.vmap(iteration, in_axes=(axes,), out_axes=(axes, 0, 0)), compiler_options=FAST_COMPILE
    )
    records = []
    for _ in range(trainer.schedule.iterations):
        carry, stats, snapshot = step(carry)
        records.append(jax.device_get((stats, snapshot)))
    # [iterations, seeds, ...], without run_iterations' own axis of length 1.
    stats, snapshot = jax.tree.map(lambda *xs: np.stack(xs), *records)
    stats = jax.tree.map(lambda x: x[:, :, 0], stats)

    out = {"config": np.asarray(json.dumps(data, sort_keys=True))}
    out["tasks"] = stats.pop("tasks")
    _flatten("metrics", stats, out)
    _flatten("snapshot", snapshot, out)
    return out


def versions() -> np.ndarray:
    import jaxlib

    return np.asarray(
        json.dumps({"jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__})
    )


def record(name: str, add_cpu: bool = False) -> Path:
    """Record `name`'s run: as the reference (dropping other CPUs' recordings, now stale),
    or with `add_cpu` as this CPU's recording beside the reference."""
    reference = fixture_path(name)
    path = this_cpu_path(reference) if add_cpu else reference
    if not add_cpu:
        for stale in (GOLDEN / CPUS).glob(f"*/{name}.npz"):
            stale.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, versions=versions(), cpu=np.asarray(cpu_tag()), **run(name))
    return path


def _load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def load(name: str) -> dict[str, np.ndarray]:
    """The recording `check` reports against: this CPU's, else the reference."""
    return _load(recordings(fixture_path(name))[0])


def not_checkable_here(name: str) -> str | None:
    """Why no recording of `name` can be reproduced on this CPU, or None when one can
    (tests/cpu_recordings.py: `foreign_only`)."""
    paths = recordings(fixture_path(name))
    cpus = []
    for path in paths:
        with np.load(path) as data:
            stored = str(data["cpu"]) if "cpu" in data.files else None
        cpus.append(recorded_on(path, stored))
    return foreign_only(cpus)


def check(name: str) -> list[str]:
    """[] when the run of `name` equals one of its recordings bit for bit; else what
    differs from this CPU's recording (or the reference), with a version note."""
    paths = recordings(fixture_path(name))
    if not paths:
        return [f"no recording of {name!r}: python -m tests.golden --record {name}"]
    got = run(name)
    first = None
    for path in paths:
        expected = _load(path)
        problems = mismatches(expected, got)
        if not problems:
            return []
        if first is None:
            first = problems + ([version_note(expected)] if version_note(expected) else [])
            first.append(f"(compared with {path.relative_to(GOLDEN)} of {len(paths)} recordings)")
    return first


def mismatches(expected: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> list[str]:
    """What differs between a fixture and a run, one line each; [] when bit-identical."""
    expected = {k: v for k, v in expected.items() if k not in NOT_COMPARED}
    got = {k: v for k, v in got.items() if k not in NOT_COMPARED}
    problems = []
    if str(expected.get("config")) != str(got.get("config")):
        problems.append("config: CONFIGS differs from the recorded config")
    for key in sorted(expected.keys() - got.keys()):
        problems.append(f"{key}: in the fixture, not in the run")
    for key in sorted(got.keys() - expected.keys()):
        problems.append(f"{key}: in the run, not in the fixture")
    for key in sorted(expected.keys() & got.keys()):
        want, have = expected[key], got[key]
        if want.dtype != have.dtype or want.shape != have.shape:
            problems.append(
                f"{key}: {have.dtype}{list(have.shape)}, recorded {want.dtype}{list(want.shape)}"
            )
        elif want.tobytes() != have.tobytes():
            # Bytes, not values: -0.0 against 0.0 or two NaN payloads are differences too.
            differ = np.asarray(want != have).sum() if want.dtype.kind != "U" else 1
            problems.append(f"{key}: {differ} of {want.size} values differ")
    return problems


def version_note(expected: dict[str, np.ndarray]) -> str | None:
    """A line when the fixture was recorded under other library versions, else None."""
    recorded = str(expected.get("versions", ""))
    current = str(versions())
    return None if recorded == current else f"recorded with {recorded}, running {current}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="teachers (default: all of CONFIGS)")
    parser.add_argument("--record", action="store_true", help="re-record instead of checking")
    parser.add_argument(
        "--add-cpu",
        action="store_true",
        help="record this CPU's bytes beside the reference (the code unchanged)",
    )
    args = parser.parse_args(argv)
    names = args.names or sorted(CONFIGS)
    unknown = sorted(set(names) - set(CONFIGS))
    if unknown:
        parser.error(
            f"no golden config for {', '.join(unknown)} (known: {', '.join(sorted(CONFIGS))})"
        )
    failed = 0
    for name in names:
        if args.record or args.add_cpu:
            path = record(name, add_cpu=args.add_cpu)
            print(f"{name}: {path.relative_to(GOLDEN)}, {path.stat().st_size / 1024:.1f} KiB")
            continue
        reason = not_checkable_here(name)
        if reason:
            print(f"{name}: not checked, {reason}")
            continue
        problems = check(name)
        failed += bool(problems)
        print(f"{name}: {'ok' if not problems else 'DIFFERS'}")
        for line in problems:
            print(f"  {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
