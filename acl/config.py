"""Typed experiment configs, YAML loading, `--set` overrides and validation.

Everything here runs before any JAX compilation, so bad input fails fast with a
one-line `ConfigError` naming the field.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acl.core.errors import ConfigError
from acl.core.hparams import as_float, check_keys, did_you_mean, unknown_key
from acl.loop.schedule import Schedule


@dataclass(frozen=True)
class ComponentConfig:
    """A registry name plus the keyword arguments of its factory."""

    name: str
    """Registry name, e.g. "cartpole", "random", "ppo"."""
    kwargs: dict = field(default_factory=dict)
    """Factory arguments; unknown keys are an error."""


@dataclass(frozen=True)
class LoopConfig:
    """How the curriculum loop runs."""

    num_envs: int = 4
    """Environment instances per seed, stepped as one vmapped batch."""
    num_steps: int = 128
    """Steps per instance between agent updates (and teacher updates)."""
    total_env_steps: int = 500_000
    """Env steps per seed over the whole run."""
    eval_every: int = 50_000
    """Env steps between evaluations on the test set; one chunk of the run."""
    mode: str = "episode"
    """episode: instances take a new task at their own next reset; batch: reset each batch."""
    reinit_every: int = 0
    """Re-initialise the agent every this many env steps (0: never); forgetting student."""
    lr_schedule_updates: int = 0
    """Update calls the agent's learning-rate annealing spans (0: the run's own number of
    updates). A short run of a published config sets the published run's count, so its
    learning rate at update k equals the published run's at update k instead of falling
    to 0 within the short run (JaxUED and dcd anneal over 30,000 updates)."""
    task_log_size: int = 64
    """Tasks kept per evaluation period, for the curriculum record."""
    max_feedback: int = 0
    """Completed episodes passed to the teacher per update (0: one slot per step and
    instance, i.e. all). Episodes beyond it are counted in `feedback_dropped`."""
    checkpoint_every: int = 1
    """Evaluations between checkpoints of the whole loop carry (0: none), saved with orbax
    under the run directory's checkpoints/ for `--resume` (acl.run.checkpoint). A run stopped
    by SIGINT, SIGTERM or its time limit saves one whatever this is."""
    keep_checkpoints: int = 2
    """How many of the newest checkpoints a run keeps."""
    task_pool: int | None = None
    """`episode` mode: tasks the teacher draws per iteration, P <= num_envs * num_steps.
    The k-th reset of the iteration (resets ordered by step, then instance) takes pool
    entry k, so each drawn task is handed out at most once. A reset beyond the pool
    (overflow) restarts the instance on the task it just ran, with its train_on and guide
    horizon, and draws nothing; overflow resets are counted in `task_pool_overflow`.
    `update` gets the pool as `tasks` [P, D]: its first min(resets, P) rows were handed
    out, and teachers are told that count (`Feedback.handed_out`; acl.teachers.base).

    None (the default): the slot layout, one task per (step, instance) slot, an instance
    resetting at step t taking slot [t, i]; T * N tasks are drawn and only a few used.
    The default stays None so existing runs and results reproduce bit for bit. Size a
    pool for the busiest iterations, not the mean: on cartpole_unfeasible_alp_gmm (8 x 128
    = 1,024 slots) resets average ~10 per iteration over the run but reach ~410 in its
    first iterations, when uniform tasks on a mostly infeasible space end within a few
    steps; there P = 512 never overflowed (2 seeds), 256 overflowed on ~4% of episodes and
    128 on ~24%, in at most 23 of the run's 970 iterations, early ones.

    Teachers whose `sample` advances their state advance once per pool entry instead of
    once per slot, i.e. by P per iteration: the reverse curriculum's cursor moves P
    through its batch, and is moved back by the entries not handed out (so handed-out
    starts follow each other in the batch's order, as the docstring of
    acl.teachers.reverse promises); JSRL draws a guide horizon per pool entry and records
    the mean of the P drawn (`last_guide_steps`); SVGG, RIAC and the GMM teachers draw P
    goals or tasks from an unchanged state (particles, regions and mixtures move in
    `update`). PLR (one replay decision per `sample` call), ACCEL and PAIRED score whole
    levels and run in `batch` mode, where every instance resets at the start of the
    rollout and the pool does not apply."""
    shard_envs: bool = False
    """Split each seed's `num_envs` instances over the run's devices instead of its seeds
    (acl.loop.devices, docs/scaling.md): every device holds all seeds' agent and teacher
    state, steps num_envs / devices instances of each, and the agent's update averages
    its gradients over devices. Each device draws its own random stream, so the run is
    not the one-device run's bit for bit. Needs an agent with an `axis_name` update
    (PPO) and no `task_pool`; false: devices split the seeds."""
    overlap_teacher: bool = False
    """Run the teacher's update on a second device, beside the agent's update: the two
    read the same rollout and not each other's result (`acl.loop.placement.TeacherBeside`).
    On CPU the second device is a second XLA host device (experiments.run and
    bench_teachers restart Python with `acl.loop.devices.HOST_DEVICES_FLAG` and one intra-op
    thread more, `acl.loop.devices.host_threads`), so a GMM
    teacher's fits use the core training leaves idle (docs/results/teacher_overhead.md).
    Takes two devices and all seeds on each; not with `shard_envs`, nor with a teacher
    that evaluates the student after the agent's update (SFL). The metrics equal the
    one-device run's up to float32 round-off."""

    @property
    def schedule(self) -> Schedule:
        """The run's counts: iterations, chunks, the agent's updates (acl.loop.schedule)."""
        return Schedule.create(
            num_envs=self.num_envs,
            num_steps=self.num_steps,
            total_env_steps=self.total_env_steps,
            eval_every=self.eval_every,
            reinit_every=self.reinit_every,
            lr_schedule_updates=self.lr_schedule_updates,
            task_log_size=self.task_log_size,
        )


@dataclass(frozen=True)
class EvalConfig:
    """The fixed test set and how it is played."""

    num_test_tasks: int = 100
    """Test-set size for spaces of dimension != 2 (uniform tasks from `seed`)."""
    grid_per_dim: int = 10
    """2-D spaces: a grid_per_dim x grid_per_dim grid of cell centres."""
    episodes_per_task: int = 1
    """Episodes per test task, deterministic policy."""
    seed: int = 0
    """Seed of the test set and of evaluation resets (fixed, so evaluations are comparable)."""
    test_set: str | list = ""
    """A fixed level set the env provides instead of the task-space test set: a set's name
    (e.g. the maze's "maze_held_out") or a list of level names (acl.loop.evaluation.TEST_SETS).
    Its names label per-test-task metrics in metrics.csv and summary.json. "": none."""
    sampled_attempts: int = 0
    """Episodes per test task with actions sampled from the policy (the UED literature's
    solve rate: 10); 0 plays none."""
    task_low: list | None = None
    """The task-space test set covers [task_low, task_high] (each inside the env's task
    space) instead of the whole space, e.g. only its hardest tasks; None: the bound of
    the env's task space."""
    task_high: list | None = None


CHALLENGES = ("default", "unfeasible", "trivial", "rugged", "forgetting", "students")
""""students" (variety of students) is default data run by several agents (the runner)."""
EXPERT_LEVELS = ("none", "low", "high")


@dataclass(frozen=True)
class ChallengeSpec:
    """A named challenge setting (host side): a challenge and an expert-knowledge level."""

    challenge: str = "default"
    """One of CHALLENGES."""
    expert: str = "none"
    """One of EXPERT_LEVELS."""

    def __post_init__(self):
        if self.challenge not in CHALLENGES:
            raise ConfigError(
                f"challenge must be one of {', '.join(CHALLENGES)}; got {self.challenge!r}"
            )
        if self.expert not in EXPERT_LEVELS:
            raise ConfigError(
                f"expert must be one of {', '.join(EXPERT_LEVELS)}; got {self.expert!r}"
            )

    @property
    def label(self) -> str:
        """e.g. "unfeasible" or "unfeasible / expert high"."""
        if self.expert == "none":
            return self.challenge
        return f"{self.challenge} / expert {self.expert}"

    @property
    def key(self) -> str:
        """File-name-safe id, e.g. "unfeasible+expert_high"."""
        return self.challenge if self.expert == "none" else f"{self.challenge}+expert_{self.expert}"


@dataclass(frozen=True)
class ChallengeConfig:
    """A TeachMyAgent challenge the run trains under (acl.teachers.challenge).

    The teacher then works in the unit cube that the challenge maps onto the env's tasks
    (e.g. the widened `unfeasible_bounds`), while the test set stays on the env's own
    task space, as in TeachMyAgent."""

    name: str = ""
    """A challenge name (default, unfeasible, trivial, rugged, forgetting); "": none, the
    teacher samples `env.task_space` itself."""
    expert: str = "none"
    """Expert knowledge given to teachers that take a prior: none, low or high."""
    seed: int = 0
    """Seeds the rugged permutation and the low expert's sub-space."""
    forgetting_period: float = 0.35
    """forgetting: fraction of the run between re-initialisations of the student."""


@dataclass(frozen=True)
class ExperimentConfig:
    name: str = "experiment"
    """Run name, used in tables."""
    seed: int = 0
    """Seed of the first run; seeds are seed, seed+1, ..."""
    num_seeds: int = 1
    """Seeds run together as one vmap."""
    env: ComponentConfig = ComponentConfig("cartpole")
    teacher: ComponentConfig = ComponentConfig("random")
    agent: ComponentConfig = ComponentConfig("ppo")
    loop: LoopConfig = LoopConfig()
    eval: EvalConfig = EvalConfig()
    challenge: ChallengeConfig = ChallengeConfig()

    def to_dict(self) -> dict:
        return _component_flatten(dataclasses.asdict(self))


_COMPONENTS = ("env", "teacher", "agent")
_SECTIONS = {"loop": LoopConfig, "eval": EvalConfig, "challenge": ChallengeConfig}
_POSITIVE = {
    "num_seeds",
    "loop.num_envs",
    "loop.num_steps",
    "loop.total_env_steps",
    "loop.eval_every",
    "loop.task_log_size",
    "loop.keep_checkpoints",
    "eval.num_test_tasks",
    "eval.grid_per_dim",
    "eval.episodes_per_task",
}
_NON_NEGATIVE = {
    "eval.sampled_attempts",
    "loop.max_feedback",
    "loop.checkpoint_every",
    "loop.lr_schedule_updates",
}
_SEEDS = {"seed", "eval.seed", "challenge.seed"}
MAX_SEED = 2**32 - 1
"""numpy's and JAX's seeds are unsigned 32-bit at heart; a negative one is a numpy error."""
_NAME_OR_NAMES = {"eval.test_set"}
_OPTIONAL_INT = {"loop.task_pool"}
_PRESETS = "presets"
"""Top-level key of named override sets (`presets: {cpu: {loop: {...}}}`), applied by
`load_config(..., preset=)` / `--preset`; not part of the config itself."""


def _component_flatten(d: dict) -> dict:
    for comp in _COMPONENTS:
        d[comp] = {"name": d[comp]["name"], **d[comp]["kwargs"]}
    return d


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"--config: cannot read '{path}': {err.strerror or err}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        first = str(err).splitlines()[0] if str(err) else "parse error"
        raise ConfigError(f"--config: '{path}' is not valid YAML: {first}") from None
    # An empty file would otherwise run every default under the name "experiment".
    if data is None or data == {}:
        raise ConfigError(f"--config: '{path}' is empty; it must hold a mapping of settings")
    if not isinstance(data, dict):
        raise ConfigError(f"--config: '{path}' must hold a mapping, got {type(data).__name__}")
    return data


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Apply `key.sub=value` strings; values are parsed as YAML scalars."""
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--set: expected key=value, got '{item}'")
        key, raw = item.split("=", 1)
        value = yaml.safe_load(raw) if raw else ""
        parts = key.strip().split(".")
        node = data
        for part in parts[:-1]:
            if isinstance(node.get(part), str) and part in _COMPONENTS:
                node[part] = {"name": node[part]}
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {key}: '{part}' is not a section")
        node[parts[-1]] = value
    return data


def _section(cls, data: Any, field_name: str):
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise ConfigError(f"{field_name}: expected a mapping, got {data!r}")
    names = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in names:
            raise unknown_key(field_name, key, names)
    values = {}
    for key, value in data.items():
        default = names[key].default
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{field_name}.{key}: expected true/false, got {value!r}")
        elif isinstance(default, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{field_name}.{key}: expected an integer, got {value!r}")
        elif isinstance(default, float):
            value = _finite_float(value, f"{field_name}.{key}")
        elif f"{field_name}.{key}" in _NAME_OR_NAMES:
            value = _name_or_names(value, f"{field_name}.{key}")
        elif f"{field_name}.{key}" in _OPTIONAL_INT:
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ConfigError(f"{field_name}.{key}: expected an integer or null, got {value!r}")
        elif isinstance(default, str) and not isinstance(value, str):
            raise ConfigError(f"{field_name}.{key}: expected a string, got {value!r}")
        values[key] = value
    return cls(**values)


def _finite_float(value: Any, field_name: str) -> float:
    number = as_float(value)
    if number is None:
        raise ConfigError(f"{field_name}: expected a number, got {value!r}")
    if not math.isfinite(number):
        raise ConfigError(f"{field_name}: expected a finite number, got {value!r}")
    return number


def _name_or_names(value: Any, field_name: str) -> str | list:
    """A string, or a non-empty list of non-empty strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) and v for v in value):
        return list(value)
    raise ConfigError(f"{field_name}: expected a name or a list of names, got {value!r}")


def _component(data: Any, field_name: str, default: ComponentConfig) -> ComponentConfig:
    if data is None:
        return default
    if isinstance(data, str):
        return ComponentConfig(data)
    if not isinstance(data, dict) or "name" not in data:
        raise ConfigError(f"{field_name}: expected a mapping with a 'name', got {data!r}")
    data = dict(data)
    return ComponentConfig(str(data.pop("name")), data)


def parse_config(data: dict) -> ExperimentConfig:
    """Build and validate an ExperimentConfig from a plain dict (YAML contents).

    A `presets` section is skipped: `apply_preset` applies one."""
    top = {f.name for f in dataclasses.fields(ExperimentConfig)}
    data = {k: v for k, v in data.items() if k != _PRESETS}
    for key in data:
        if key not in top:
            raise unknown_key("config", key, top)
    defaults = ExperimentConfig()
    kwargs: dict[str, Any] = {}
    for key in ("name", "seed", "num_seeds"):
        if key in data:
            kwargs[key] = data[key]
    for comp in _COMPONENTS:
        kwargs[comp] = _component(data.get(comp), comp, getattr(defaults, comp))
    for name, cls in _SECTIONS.items():
        kwargs[name] = _section(cls, data.get(name), name)
    for key in ("seed", "num_seeds"):
        if isinstance(kwargs.get(key), float) and kwargs[key].is_integer():
            kwargs[key] = int(kwargs[key])
        if key in kwargs and (not isinstance(kwargs[key], int) or isinstance(kwargs[key], bool)):
            raise ConfigError(f"{key}: expected an integer, got {kwargs[key]!r}")
    if "name" in kwargs and (not isinstance(kwargs["name"], str) or not kwargs["name"].strip()):
        raise ConfigError(f"name: expected a non-empty string, got {kwargs['name']!r}")
    config = ExperimentConfig(**kwargs)
    validate(config)
    return config


def apply_preset(data: dict, preset: str | None) -> dict:
    """`data` with its `presets[preset]` section merged in (nested mappings merge key by
    key; a component given as a bare name becomes {name: ...}). None: `data` unchanged."""
    if preset is None:
        return data
    presets = data.get(_PRESETS) or {}
    if not isinstance(presets, dict) or preset not in presets:
        known = ", ".join(sorted(presets)) if isinstance(presets, dict) else ""
        raise ConfigError(
            f"--preset: no preset {preset!r} in the config (known: {known or 'none'})"
        )
    return _merge(data, presets[preset], f"presets.{preset}")


def _merge(base: dict, changes: Any, field_name: str) -> dict:
    if not isinstance(changes, dict):
        raise ConfigError(f"{field_name}: expected a mapping, got {changes!r}")
    merged = dict(base)
    for key, value in changes.items():
        current = merged.get(key)
        if isinstance(current, str) and key in _COMPONENTS and isinstance(value, dict):
            current = {"name": current}
        if isinstance(current, dict) and isinstance(value, dict):
            value = _merge(current, value, f"{field_name}.{key}")
        merged[key] = value
    return merged


def load_config(
    path: str | Path,
    overrides: list[str] = (),
    num_seeds: int | None = None,
    preset: str | None = None,
):
    """The config of a YAML file, with `presets[preset]`, then `overrides` (`--set`) and
    `num_seeds` applied in that order."""
    data = apply_overrides(apply_preset(load_yaml(path), preset), list(overrides))
    if num_seeds is not None:
        data["num_seeds"] = num_seeds
    return parse_config(data)


def _get(config: ExperimentConfig, dotted: str):
    node = config
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def validate(config: ExperimentConfig) -> None:
    """Checks that need no registry: counts, modes and divisibility."""
    for dotted in sorted(_POSITIVE):
        value = _get(config, dotted)
        if value <= 0:
            raise ConfigError(f"{dotted} must be a positive integer, got {value}")
    for dotted in sorted(_NON_NEGATIVE):
        value = _get(config, dotted)
        if value < 0:
            raise ConfigError(f"{dotted} must be >= 0, got {value}")
    for dotted in sorted(_SEEDS):
        value = _get(config, dotted)
        if not 0 <= value <= MAX_SEED:
            raise ConfigError(f"{dotted} must be in 0..{MAX_SEED}, got {value}")
    _validate_challenge(config)
    loop = config.loop
    if loop.reinit_every < 0:
        raise ConfigError(
            f"loop.reinit_every must be >= 0 (0 disables it), got {loop.reinit_every}"
        )
    if loop.mode not in ("episode", "batch"):
        raise ConfigError(f"loop.mode must be 'episode' or 'batch', got '{loop.mode}'")
    steps_per_iteration = loop.schedule.steps_per_iteration
    if loop.task_pool is not None:
        if loop.mode != "episode":
            raise ConfigError("loop.task_pool applies to loop.mode: episode; leave it out (null)")
        if not 0 < loop.task_pool <= steps_per_iteration:
            raise ConfigError(
                f"loop.task_pool must be in 1..num_envs * num_steps ({steps_per_iteration}), "
                f"got {loop.task_pool}"
            )
    if loop.overlap_teacher and loop.shard_envs:
        raise ConfigError(
            "loop.overlap_teacher and loop.shard_envs both lay the run over devices; "
            "set one of them"
        )
    if loop.eval_every < steps_per_iteration:
        raise ConfigError(
            f"loop.eval_every ({loop.eval_every}) must be >= num_envs * num_steps "
            f"({steps_per_iteration})"
        )
    if loop.total_env_steps < loop.eval_every:
        raise ConfigError(
            f"loop.total_env_steps ({loop.total_env_steps}) must be >= loop.eval_every "
            f"({loop.eval_every})"
        )


def _validate_challenge(config: ExperimentConfig) -> None:
    challenge = config.challenge
    period = challenge.forgetting_period
    # Checked with or without a challenge: a bad value should not wait for one.
    if isinstance(period, bool) or not isinstance(period, int | float) or not 0 < period < 1:
        raise ConfigError(f"challenge.forgetting_period must be in (0, 1), got {period!r}")
    if not challenge.name:
        if challenge.expert != "none":
            raise ConfigError("challenge.expert needs a challenge.name (e.g. default)")
        return
    if challenge.name == "students":
        raise ConfigError(
            "challenge.name 'students' runs several agents: use experiments.benchmark"
        )
    # "students" is refused above: it is no choice here.
    runnable = tuple(c for c in CHALLENGES if c != "students")
    for key, allowed in (("name", runnable), ("expert", EXPERT_LEVELS)):
        value = getattr(challenge, key)
        if value not in allowed:
            raise ConfigError(
                f"challenge.{key} must be one of {', '.join(allowed)}, got {value!r}"
                f"{did_you_mean(value, allowed)}"
            )
    if config.loop.reinit_every:
        raise ConfigError(
            "loop.reinit_every and a challenge both set the forgetting period; "
            "use challenge.name: forgetting"
        )


def config_keys(factory, skip: tuple[str, ...] = ()) -> set[str]:
    """The config keys a registry factory accepts: its declared `config_keys`, else its
    signature's parameters other than `skip`."""
    allowed = getattr(factory, "config_keys", None)
    if allowed is None:
        allowed = {n for n in inspect.signature(factory).parameters if n not in skip}
    return set(allowed)


def check_kwargs(factory, kwargs: dict, field_name: str, skip: tuple[str, ...] = ()) -> None:
    """Raise ConfigError for keys the factory does not accept."""
    check_keys(kwargs, config_keys(factory, skip), field_name)


def replace_config(config: ExperimentConfig, **sections) -> ExperimentConfig:
    """Copy `config` with section fields changed, e.g. loop={"num_envs": 2}."""
    changes = {}
    for name, values in sections.items():
        current = getattr(config, name)
        if dataclasses.is_dataclass(current) and isinstance(values, dict):
            changes[name] = dataclasses.replace(current, **values)
        else:
            changes[name] = values
    return dataclasses.replace(config, **changes)
