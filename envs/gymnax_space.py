"""Any gymnax environment as a curriculum task space, by config: the `gymnax` env entry.

    env:
      name: gymnax
      id: CartPole-v1                  # a gymnax 1.0.1 id (`gymnax.registered_envs`)
      task:                            # the task dimensions, each a name:
        length: [0.01, 10.01]          #   a field of the id's EnvParams: [low, high]
        pole_mass: {fields: [masspole], bounds: [0.01, 10.01]}   # named apart from its field
      success_threshold: 475           # a return strictly above it counts as mastered
      return_bounds: [0, 500]          # optional where the id's are known (classic control)
      max_episode_steps: 500           # optional: gymnax's own time limit
      generator: my_package.levels:corners   # optional: the level generator (else uniform)

`task` maps each dimension's name to its bounds `[low, high]` (the name is then the field
it sets) or to `{fields: [F, ...], bounds: [low, high]}`: one dimension may set several
fields (tied: JaxUED's Acrobot sets both link lengths from one value). `env.task_low` /
`env.task_high` narrow or widen the box afterwards, as for every env, and are checked
by the same rules. Every bad input is a one-line ConfigError before anything compiles.

Rules, field by field (`FIELD_RULES`; docs/envs.md tables them for the 26 ids):

- A field's kind is its `default_params` value's type. Float fields take the task value.
  Integer fields take it rounded to the nearest integer (`jnp.round`, half to even) as
  int32: MinAtar's and Pong's dynamics mix them with int32 state, so a float32 breaks
  their tracing. Boolean fields are true where the task value is > 0.5, and their bounds
  lie in [0, 1]. `max_steps_in_episode` is rounded everywhere, kept in the type gymnax
  stores (BernoulliBandit's float 100.0: its observation space selects between it and a
  float), and a dimension over it makes `max_episode_steps` its rounded high bound.
- Refused, each with one line: an array-valued field (Acrobot's `available_torque`,
  DiscountingChain's `reward_timestep`), a field that is not a number, a stored derived
  field (set its sources instead), a dimension whose fields all leave the dynamics
  unchanged (Asterix's `shot_cool_down`: its minimal action set cannot fire), an unknown
  field (with "did you mean"), and the id `MNISTBandit-bsuite` (`gymnax.make` downloads
  MNIST).
- Physical limits: masses, lengths, time steps and intervals positive, magnitudes
  (forces, torques, gravity, costs, noise, cool-downs) non-negative, probabilities in
  [0, 1]; a field without a stated limit takes any finite number. Orderings the dynamics
  assume hold for every task of the box (MountainCar's min_position < goal_position <=
  max_position, MountainCarContinuous's min_action < max_action, BernoulliBandit's
  min_lim < max_lim), fields not in the task at their defaults.
- Derived fields: gymnax does not recompute stored derived fields (CartPole's
  `EnvParams(masspole=5)` keeps total_mass = 1.1), so `task_to_params` recomputes every
  derived field whose sources a task sets: CartPole's total_mass = masscart + masspole
  and polemass_length = masspole * length, BernoulliBandit's time-normalisation horizon
  t_max = max_steps_in_episode. No other id stores a field derived from others.
- Return bounds: known for the classic-control ids (from the episode length and the
  box), else `return_bounds` in the config, else none. A teacher that rescales returns
  (alp_gmm, covar_gmm, adr, spdl, jsrl) refuses a space without them in one line
  (acl.teachers.base.require_return_bounds).
- Episodes: gymnax's `step_env` with no auto-reset; `terminated` (a real end) and
  `truncated` (the time limit of the task's own params, bootstrapped) kept apart, as
  `GymnaxTaskEnv` does for every gymnax env. Actions are gymnax's: the action space is
  the one of `default_params` (a task-dependent bound such as Pendulum's max_torque
  clips inside gymnax's step).

The space is a `LevelTaskEnv`: its generator draws levels for dr, plr, robust_plr and
sfl, uniform over the box by default, or `generator: package.module:function`, a function
`(key, n, task_space: Box) -> tasks [n, D]` whose tasks are clipped to the box.

Differences from JaxUED's gymnax UED envs: JaxUED's Acrobot scales the torque by a level
parameter `force_multiplier` that gymnax lacks (its generator keeps it at 1.0); a space
here has no such dimension (the shipped `acrobot` preset scales `available_torque`
instead). JaxUED keeps the link centre-of-mass positions at 0.5 whatever the lengths, and
so does a space here.

The shipped classic-control envs (cartpole, acrobot, pendulum, mountain_car_continuous)
are presets over `GymnaxSpace`: fixed dimensions, thresholds, challenge bounds.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnax
import jax
import jax.numpy as jnp
import numpy as np

from acl.core.errors import ConfigError
from acl.core.spaces import NON_NEGATIVE, POSITIVE, UNIT, Box, Limit
from envs._checks import positive_int
from envs.base import GymnaxTaskEnv, LevelTaskEnv
from envs.registry import ENVS, TEST_SETS

ANY = Limit()
"""Any finite number (a position, a reward, a mean)."""
AT_LEAST_ONE = Limit(1.0)
"""A count or an interval in steps, an integer >= 1 (checked on the bounds, so that
rounding keeps every task >= 1)."""
PROBABILITY = UNIT

LevelGenerator = Callable[[jax.Array, int, Box], jax.Array]
"""`generator(key, n, task_space) -> tasks [n, D]`: a user's level generator."""

IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


# -- what is known of each gymnax id ---------------------------------------------------------


@dataclass(frozen=True)
class FieldRule:
    """A field's physical limit and unit (docs)."""

    limit: Limit = ANY
    unit: str = ""


@dataclass(frozen=True)
class DerivedField:
    """A stored field gymnax computes once from others; recomputed when a task sets one of
    its sources."""

    name: str
    sources: tuple[str, ...]
    formula: str
    compute: Callable[[Any], Any]
    """params -> the field's value."""


@dataclass(frozen=True)
class Ordering:
    """`lower < upper` (`<=` unless strict) for every task of the box."""

    lower: str
    upper: str
    strict: bool = True

    def __str__(self) -> str:
        return f"{self.lower} {'<' if self.strict else '<='} {self.upper}"


ReturnBoundsRule = Callable[[Mapping[str, tuple[float, float]], int], tuple[float, float]]
"""(range of every numeric field over the box, episode length T) -> (lowest, highest)
episode return."""


@dataclass(frozen=True)
class GymnaxIdRules:
    """What this module knows of one gymnax id beyond its EnvParams."""

    fields: Mapping[str, FieldRule] = field(default_factory=dict)
    """Limits and units; a numeric field not named here takes any finite number."""
    inert: Mapping[str, str] = field(default_factory=dict)
    """Fields that leave rewards, observations and episode ends unchanged, and why."""
    derived: tuple[DerivedField, ...] = ()
    orderings: tuple[Ordering, ...] = ()
    return_bounds: ReturnBoundsRule | None = None
    return_bounds_doc: str = ""
    refused: str = ""
    """Why the whole id is refused ("": it is not)."""


STEPS = FieldRule(AT_LEAST_ONE, "steps")
COOL_DOWN = FieldRule(NON_NEGATIVE, "steps")
MASS, LENGTH, TIME_STEP = (
    FieldRule(POSITIVE, "kg"),
    FieldRule(POSITIVE, "m"),
    FieldRule(POSITIVE, "s"),
)
MC_UNIT = "position units / step^2"
MC_POSITION = "position units"


def _t_bounds(low_per_step: float, high_per_step: float) -> ReturnBoundsRule:
    return lambda ranges, steps: (low_per_step * steps, high_per_step * steps)


def _pendulum_bounds(ranges, steps):
    worst = math.pi**2 + 0.1 * ranges["max_speed"][1] ** 2 + 0.001 * ranges["max_torque"][1] ** 2
    return (-steps * worst, 0.0)


def _mountain_car_continuous_bounds(ranges, steps):
    largest = max(abs(v) for key in ("min_action", "max_action") for v in ranges[key])
    return (-0.1 * largest**2 * steps, 100.0)


_MOUNTAIN_CAR_ORDER = (
    Ordering("min_position", "goal_position"),
    Ordering("goal_position", "max_position", strict=False),
)

FIELD_RULES: dict[str, GymnaxIdRules] = {
    "CartPole-v1": GymnaxIdRules(
        fields={
            "gravity": FieldRule(NON_NEGATIVE, "m/s^2"),
            "masscart": MASS,
            "masspole": MASS,
            "length": FieldRule(POSITIVE, "m"),
            "force_mag": FieldRule(NON_NEGATIVE, "N"),
            "tau": TIME_STEP,
            "theta_threshold_radians": FieldRule(POSITIVE, "rad"),
            "x_threshold": FieldRule(POSITIVE, "m"),
        },
        derived=(
            DerivedField(
                "total_mass",
                ("masscart", "masspole"),
                "masscart + masspole",
                lambda p: p.masscart + p.masspole,
            ),
            DerivedField(
                "polemass_length",
                ("masspole", "length"),
                "masspole * length",
                lambda p: p.masspole * p.length,
            ),
        ),
        return_bounds=_t_bounds(0.0, 1.0),
        return_bounds_doc="(0, T)",
    ),
    "Pendulum-v1": GymnaxIdRules(
        fields={
            "max_speed": FieldRule(POSITIVE, "rad/s"),
            "max_torque": FieldRule(NON_NEGATIVE, "N m"),
            "dt": TIME_STEP,
            "g": FieldRule(NON_NEGATIVE, "m/s^2"),
            "m": MASS,
            "l": LENGTH,
        },
        return_bounds=_pendulum_bounds,
        return_bounds_doc="(-T (pi^2 + 0.1 max_speed^2 + 0.001 max_torque^2), 0), highs of the box",
    ),
    "Acrobot-v1": GymnaxIdRules(
        fields={
            "dt": TIME_STEP,
            "link_length_1": LENGTH,
            "link_length_2": LENGTH,
            "link_mass_1": MASS,
            "link_mass_2": MASS,
            "link_com_pos_1": FieldRule(NON_NEGATIVE, "m"),
            "link_com_pos_2": FieldRule(NON_NEGATIVE, "m"),
            "link_moi": FieldRule(POSITIVE, "kg m^2"),
            "max_vel_1": FieldRule(POSITIVE, "rad/s"),
            "max_vel_2": FieldRule(POSITIVE, "rad/s"),
            "torque_noise_max": FieldRule(NON_NEGATIVE, "N m"),
        },
        inert={"link_length_2": "never read, as gym's LINK_LENGTH_2"},
        return_bounds=_t_bounds(-1.0, 0.0),
        return_bounds_doc="(-T, 0)",
    ),
    "MountainCar-v0": GymnaxIdRules(
        fields={
            "min_position": FieldRule(ANY, MC_POSITION),
            "max_position": FieldRule(ANY, MC_POSITION),
            "goal_position": FieldRule(ANY, MC_POSITION),
            "max_speed": FieldRule(POSITIVE, "position units / step"),
            "goal_velocity": FieldRule(ANY, "position units / step"),
            "force": FieldRule(NON_NEGATIVE, MC_UNIT),
            "gravity": FieldRule(NON_NEGATIVE, MC_UNIT),
        },
        orderings=_MOUNTAIN_CAR_ORDER,
        return_bounds=_t_bounds(-1.0, 0.0),
        return_bounds_doc="(-T, 0)",
    ),
    "MountainCarContinuous-v0": GymnaxIdRules(
        fields={
            "min_action": FieldRule(ANY),
            "max_action": FieldRule(ANY),
            "min_position": FieldRule(ANY, MC_POSITION),
            "max_position": FieldRule(ANY, MC_POSITION),
            "goal_position": FieldRule(ANY, MC_POSITION),
            "max_speed": FieldRule(POSITIVE, "position units / step"),
            "goal_velocity": FieldRule(ANY, "position units / step"),
            "power": FieldRule(NON_NEGATIVE, MC_UNIT),
            "gravity": FieldRule(NON_NEGATIVE, MC_UNIT),
        },
        orderings=(Ordering("min_action", "max_action"), *_MOUNTAIN_CAR_ORDER),
        return_bounds=_mountain_car_continuous_bounds,
        return_bounds_doc="(-0.1 a^2 T, 100), a the largest |action bound| of the box "
        "(actions inside the action space)",
    ),
    "Asterix-MinAtar": GymnaxIdRules(
        fields={
            "ramp_interval": STEPS,
            "init_spawn_speed": STEPS,
            "init_move_interval": STEPS,
        },
        inert={"shot_cool_down": "never read: the minimal action set has no fire action"},
    ),
    "Breakout-MinAtar": GymnaxIdRules(),
    "Freeway-MinAtar": GymnaxIdRules(fields={"player_speed": COOL_DOWN}),
    "Seaquest-MinAtar": GymnaxIdRules(
        fields={
            "init_spawn_speed": STEPS,
            "init_move_interval": STEPS,
            "max_oxygen": STEPS,
            "diver_spawn_speed": STEPS,
            "shot_cool_down": COOL_DOWN,
            "enemy_shot_interval": STEPS,
            "diver_move_interval": STEPS,
        },
        inert={
            "ramp_interval": "never read: Seaquest ramps up on surfacing",
            "enemy_move_interval": "never read: enemies move by init_move_interval",
        },
    ),
    "SpaceInvaders-MinAtar": GymnaxIdRules(
        fields={
            "shot_cool_down": COOL_DOWN,
            "enemy_move_interval": STEPS,
            "enemy_shot_interval": STEPS,
        }
    ),
    "Catch-bsuite": GymnaxIdRules(),
    "DeepSea-bsuite": GymnaxIdRules(fields={"unscaled_move_cost": FieldRule(NON_NEGATIVE)}),
    "MemoryChain-bsuite": GymnaxIdRules(fields={"memory_length": STEPS}),
    "UmbrellaChain-bsuite": GymnaxIdRules(fields={"chain_length": STEPS}),
    "DiscountingChain-bsuite": GymnaxIdRules(),
    "MNISTBandit-bsuite": GymnaxIdRules(
        refused="gymnax.make downloads MNIST, and a run reaches no network"
    ),
    "SimpleBandit-bsuite": GymnaxIdRules(
        inert={"optimal_return": "only the regret bookkeeping of the state reads it"}
    ),
    "FourRooms-misc": GymnaxIdRules(
        fields={"fail_prob": FieldRule(Limit(0.0, 0.75))},
    ),
    "MetaMaze-misc": GymnaxIdRules(),
    "PointRobot-misc": GymnaxIdRules(
        fields={
            "max_force": FieldRule(POSITIVE),
            "circle_radius": FieldRule(POSITIVE),
            "goal_radius": FieldRule(POSITIVE),
        }
    ),
    "BernoulliBandit-misc": GymnaxIdRules(
        fields={"reward_prob": FieldRule(PROBABILITY)},
        derived=(
            DerivedField(
                "t_max",
                ("max_steps_in_episode",),
                "max_steps_in_episode, the time normalisation's horizon",
                lambda p: jnp.round(p.max_steps_in_episode).astype(jnp.int32),
            ),
        ),
        orderings=(Ordering("min_lim", "max_lim"),),
    ),
    "GaussianBandit-misc": GymnaxIdRules(
        fields={"sigma_p": FieldRule(NON_NEGATIVE), "sigma_l": FieldRule(NON_NEGATIVE)}
    ),
    "Reacher-misc": GymnaxIdRules(
        fields={"torque_scale": FieldRule(NON_NEGATIVE), "dt": TIME_STEP}
    ),
    "Swimmer-misc": GymnaxIdRules(fields={"dt": TIME_STEP}),
    "Pong-misc": GymnaxIdRules(
        fields={
            "ball_max_y_speed": FieldRule(NON_NEGATIVE, "cells / step"),
            "paddle_y_speed": FieldRule(NON_NEGATIVE, "cells / step"),
            "ball_x_speed": FieldRule(AT_LEAST_ONE, "cells / step"),
        }
    ),
    "FrozenLake-misc": GymnaxIdRules(),
}
"""Every gymnax 1.0.1 id (`gymnax.registered_envs`), checked field by field against its
source: `max_steps_in_episode` is `STEPS` everywhere, boolean fields are in [0, 1]."""

GYMNAX_IDS: tuple[str, ...] = tuple(gymnax.registered_envs)

PARAMS_MODULES = {
    "CartPole-v1": "classic_control.cartpole",
    "Pendulum-v1": "classic_control.pendulum",
    "Acrobot-v1": "classic_control.acrobot",
    "MountainCar-v0": "classic_control.mountain_car",
    "MountainCarContinuous-v0": "classic_control.continuous_mountain_car",
    "Asterix-MinAtar": "minatar.asterix",
    "Breakout-MinAtar": "minatar.breakout",
    "Freeway-MinAtar": "minatar.freeway",
    "Seaquest-MinAtar": "minatar.seaquest",
    "SpaceInvaders-MinAtar": "minatar.space_invaders",
    "Catch-bsuite": "bsuite.catch",
    "DeepSea-bsuite": "bsuite.deep_sea",
    "MemoryChain-bsuite": "bsuite.memory_chain",
    "UmbrellaChain-bsuite": "bsuite.umbrella_chain",
    "DiscountingChain-bsuite": "bsuite.discounting_chain",
    "MNISTBandit-bsuite": "bsuite.mnist",
    "SimpleBandit-bsuite": "bsuite.bandit",
    "FourRooms-misc": "misc.rooms",
    "MetaMaze-misc": "misc.meta_maze",
    "PointRobot-misc": "misc.point_robot",
    "BernoulliBandit-misc": "misc.bernoulli_bandit",
    "GaussianBandit-misc": "misc.gaussian_bandit",
    "Reacher-misc": "misc.reacher",
    "Swimmer-misc": "misc.swimmer",
    "Pong-misc": "misc.pong",
    "FrozenLake-misc": "misc.frozen_lake",
}
"""Each id's module under gymnax.environments: its EnvParams class."""


def id_rules(gymnax_id: Any, field_name: str = "env.id") -> GymnaxIdRules:
    """The rules of `gymnax_id`; a one-line ConfigError for an unknown or refused id."""
    if not isinstance(gymnax_id, str) or gymnax_id not in GYMNAX_IDS:
        close = difflib.get_close_matches(str(gymnax_id), GYMNAX_IDS, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(
            f"{field_name}: unknown gymnax id {gymnax_id!r}{hint} (gymnax registers: "
            f"{', '.join(GYMNAX_IDS)})"
        )
    rules = FIELD_RULES.get(gymnax_id, GymnaxIdRules())
    if rules.refused:
        raise ConfigError(f"{field_name}: {gymnax_id} is refused: {rules.refused}")
    return rules


# -- fields -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldInfo:
    """One EnvParams field as a task dimension sees it."""

    name: str
    kind: str
    """"float", "int" or "bool"; "array" and "other" are refused."""
    default: Any
    rule: FieldRule

    @property
    def numeric(self) -> bool:
        return self.kind in ("float", "int", "bool")

    @property
    def integral(self) -> bool:
        """Rounded to an integer: an int field, or the step count whatever its type."""
        return self.kind == "int" or self.name == "max_steps_in_episode"

    @property
    def limit(self) -> Limit:
        return UNIT if self.kind == "bool" else self.rule.limit

    def cast(self, value: jax.Array) -> jax.Array:
        """A task value [] float32 as this field's value."""
        if self.kind == "bool":
            return value > 0.5
        if self.integral:
            value = jnp.round(value)
        return value.astype(jnp.int32) if self.kind == "int" else value

    def host_value(self, value: float) -> float:
        """`cast` on the host, for bounds (ranges, orderings)."""
        if self.integral:
            return float(np.round(value))
        if self.kind == "bool":
            return float(value > 0.5)
        return float(value)


def _kind(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, int | np.integer):
        return "int"
    if isinstance(value, float | np.floating):
        return "float"
    if isinstance(value, jax.Array | np.ndarray):
        if value.ndim:
            return "array"
        return {"b": "bool", "i": "int", "u": "int", "f": "float"}.get(value.dtype.kind, "other")
    return "other"


def declared_fields(gymnax_id: str, rules: GymnaxIdRules) -> dict[str, FieldInfo]:
    """Every field of the id's EnvParams class with its declared default, without building
    the env (which compiles, for some ids). A field made by a default factory is an array
    in gymnax 1.0.1 (Acrobot's available_torque, DiscountingChain's reward_timestep)."""
    module = importlib.import_module(f"gymnax.environments.{PARAMS_MODULES[gymnax_id]}")
    out = {}
    for f in dataclasses.fields(module.EnvParams):
        rule = STEPS if f.name == "max_steps_in_episode" else rules.fields.get(f.name, FieldRule())
        if f.default is dataclasses.MISSING:
            out[f.name] = FieldInfo(f.name, "array", None, rule)
        else:
            out[f.name] = FieldInfo(f.name, _kind(f.default), f.default, rule)
    return out


def env_fields(params: Any, rules: GymnaxIdRules) -> dict[str, FieldInfo]:
    """Every field of an EnvParams value, by name."""
    out = {}
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        rule = STEPS if f.name == "max_steps_in_episode" else rules.fields.get(f.name, FieldRule())
        out[f.name] = FieldInfo(f.name, _kind(value), value, rule)
    return out


def refusal(info: FieldInfo, rules: GymnaxIdRules) -> str:
    """Why no dimension may set `info` ("" if one may)."""
    derived = {d.name: d for d in rules.derived}
    if info.kind == "array":
        shape = "" if info.default is None else f" of shape {tuple(np.shape(info.default))}"
        return f"an array{shape}: a task value is a scalar, and a field's shape is fixed"
    if not info.numeric:
        return f"not a number ({type(info.default).__name__})"
    if info.name in derived:
        d = derived[info.name]
        return f"derived, {d.formula}, recomputed from {' and '.join(d.sources)}: set those"
    return ""


def inert_refusal(name: str, rules: GymnaxIdRules) -> str:
    """Why `name` may not be a dimension's only kind of field ("" if it may): it changes
    nothing (it may be tied to a field that does, as JaxUED ties Acrobot's lengths)."""
    why = rules.inert.get(name)
    return f"no effect on the dynamics ({why})" if why else ""


# -- task dimensions --------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskDimension:
    """One task dimension: a name, bounds and the EnvParams fields its value sets (several:
    tied). A preset's own dimension sets no field (its `task_to_params` reads the column)
    and declares its unit, limit and default."""

    name: str
    low: float
    high: float
    fields: tuple[str, ...]
    unit: str | None = None
    """None: the first field's."""
    limit: Limit | None = None
    """None: the tightest of its fields' limits."""
    default: float | None = None
    """None: the first field's default_params value."""


def _tightest(limits: Sequence[Limit]) -> Limit:
    """The intersection of `limits` (a tied dimension keeps every field's)."""
    low = max(limits, key=lambda lim: (lim.low, lim.low_open))
    high = min(limits, key=lambda lim: (lim.high, not lim.high_open))
    return Limit(low.low, high.high, low_open=low.low_open, high_open=high.high_open)


def _bounds_pair(value: Any, field_name: str) -> tuple[float, float]:
    ok = isinstance(value, list | tuple) and len(value) == 2
    ok = ok and all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )
    if not ok:
        raise ConfigError(
            f"{field_name} must be [low, high] (two finite numbers) or "
            f"{{fields: [FIELD, ...], bounds: [low, high]}}, got {value!r}"
        )
    return float(value[0]), float(value[1])


def parse_task(task: Any, field_name: str = "env.task") -> tuple[TaskDimension, ...]:
    """The config's `task` mapping as dimensions, in its order."""
    if not isinstance(task, Mapping) or not task:
        raise ConfigError(
            f"{field_name}: name at least one task dimension, e.g. {{length: [0.05, 2.0]}} "
            f"(a field of the id's EnvParams and its bounds), got {task!r}"
        )
    dims = []
    for name, spec in task.items():
        where = f"{field_name}.{name}"
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{field_name}: a dimension's name must be a string, got {name!r}")
        if isinstance(spec, Mapping):
            unknown = set(spec) - {"fields", "bounds"}
            if unknown or "bounds" not in spec:
                raise ConfigError(
                    f"{where}: expected {{fields: [FIELD, ...], bounds: [low, high]}}, got "
                    f"{dict(spec)!r}"
                )
            fields = spec.get("fields", [name])
            if isinstance(fields, str):
                fields = [fields]
            if not (
                isinstance(fields, list | tuple)
                and fields
                and all(isinstance(f, str) and f for f in fields)
            ):
                raise ConfigError(
                    f"{where}.fields must be a non-empty list of names, got {fields!r}"
                )
            low, high = _bounds_pair(spec["bounds"], f"{where}.bounds")
        else:
            fields = [name]
            low, high = _bounds_pair(spec, where)
        dims.append(TaskDimension(name, low, high, tuple(fields)))
    return tuple(dims)


def load_generator(path: Any, field_name: str = "env.generator") -> LevelGenerator:
    """The function an import path `package.module:function` names; one-line errors."""
    if not isinstance(path, str) or not IMPORT_PATH.fullmatch(path):
        raise ConfigError(f"{field_name} must be 'package.module:function', got {path!r}")
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # a user's module may raise anything on import
        first = (str(err).strip().splitlines() or [""])[0]
        raise ConfigError(
            f"{field_name}: cannot import {module_name!r} ({type(err).__name__}: {first})"
        ) from None
    try:
        function = operator.attrgetter(attribute)(module)
    except AttributeError:
        raise ConfigError(f"{field_name}: module {module_name!r} has no {attribute!r}") from None
    if not callable(function):
        raise ConfigError(f"{field_name}: {path} is not a function")
    return function


# -- the space --------------------------------------------------------------------------------


class GymnaxSpace(GymnaxTaskEnv, LevelTaskEnv):
    """A gymnax env whose task dimensions set fields of its EnvParams (module docstring).

    `dimensions` name the fields each task column sets; `return_bounds` None takes the
    id's known bounds, if any; `generator` None draws levels uniformly over the box.
    """

    name = "gymnax"

    def __init__(
        self,
        gymnax_id: str,
        dimensions: Sequence[TaskDimension],
        success_threshold: float,
        return_bounds: tuple[float, float] | None = None,
        max_episode_steps: int | None = None,
        generator: LevelGenerator | None = None,
        field_name: str = "env.task",
    ):
        self.gymnax_id = gymnax_id
        self.rules = id_rules(gymnax_id)
        self.dimensions = tuple(dimensions)
        self._field_name = field_name
        self._static_steps = max_episode_steps
        self.success_threshold = float(success_threshold)
        self._given_bounds = return_bounds
        self.generator = generator
        # Everything a config can get wrong is checked on EnvParams' declared defaults
        # first: building some gymnax envs compiles (their arrays), and a config error
        # comes before anything compiles.
        self.param_fields = declared_fields(gymnax_id, self.rules)
        self._check_dimensions()
        box = self._box()
        self._check_orderings(box)
        self._episode_steps(box, declared=True)
        if generator is not None:
            self._check_generator(box)
        gymnax_env, params = gymnax.make(gymnax_id)
        self.param_fields = env_fields(params, self.rules)
        super().__init__(gymnax_env, self._episode_steps(box))
        self.task_space = self._box()

    # -- the box, re-checked whenever it changes (env.task_low / task_high) -------------

    def _box(self) -> Box:
        return Box(
            low=tuple(d.low for d in self.dimensions),
            high=tuple(d.high for d in self.dimensions),
            names=tuple(d.name for d in self.dimensions),
            units=tuple(self._unit(d) for d in self.dimensions),
            default=self._default(),
            limits=tuple(self._limit(d) for d in self.dimensions),
            field_name=self._field_name,
        )

    @property
    def uniform_levels(self) -> bool:
        """The default generator is uniform over the box; a user's may not be."""
        return self.generator is None

    @property
    def task_space(self) -> Box:
        return self._task_space

    @task_space.setter
    def task_space(self, space: Box) -> None:
        self._check_orderings(space)
        self._task_space = space
        self.max_episode_steps = self._episode_steps(space)
        self.return_bounds = self._return_bounds(space)

    def _check_dimensions(self) -> None:
        seen: dict[str, str] = {}
        for dim in self.dimensions:
            where = f"{self._field_name}.{dim.name}"
            for name in dim.fields:
                if name not in self.param_fields:
                    close = difflib.get_close_matches(
                        name, list(self.param_fields), n=3, cutoff=0.5
                    )
                    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
                    raise ConfigError(
                        f"{where}: {self.gymnax_id} has no EnvParams field {name!r}{hint} "
                        f"(fields: {', '.join(self.param_fields)})"
                    )
                why = refusal(self.param_fields[name], self.rules)
                if why:
                    raise ConfigError(f"{where}: {self.gymnax_id}'s {name} is refused: {why}")
                if name in seen:
                    raise ConfigError(
                        f"{where}: field {name} is set by dimension {seen[name]!r} already"
                    )
                seen[name] = dim.name
            inert = [inert_refusal(name, self.rules) for name in dim.fields]
            if dim.fields and all(inert):
                raise ConfigError(
                    f"{where}: {self.gymnax_id}'s {dim.fields[0]} is refused: {inert[0]}"
                )
            if not dim.fields and None in (dim.unit, dim.limit, dim.default):
                raise ConfigError(
                    f"{where}: a dimension without fields declares its unit, limit and default"
                )
        if not self.dimensions:
            raise ConfigError(f"{self._field_name}: name at least one task dimension")

    def _unit(self, dim: TaskDimension) -> str:
        if dim.unit is not None:
            return dim.unit
        return self.param_fields[dim.fields[0]].rule.unit if dim.fields else ""

    def _limit(self, dim: TaskDimension) -> Limit:
        if dim.limit is not None:
            return dim.limit
        return _tightest([self.param_fields[name].limit for name in dim.fields])

    def _default(self) -> tuple[float, ...] | None:
        """gymnax's default of each dimension's first field, where the box holds every one;
        else None (the box's centre)."""
        values = []
        for dim in self.dimensions:
            value = dim.default
            if value is None:
                value = float(self.param_fields[dim.fields[0]].default)
            if not dim.low <= value <= dim.high:
                return None
            values.append(value)
        return tuple(values)

    def field_ranges(self, space: Box) -> dict[str, tuple[float, float]]:
        """Every numeric field's (lowest, highest) value over the tasks of `space`, as the
        env receives it (ints rounded, bools thresholded); a field no dimension sets keeps
        its default."""
        ranges = {}
        for name, info in self.param_fields.items():
            if info.numeric:
                value = float(info.default)
                ranges[name] = (value, value)
        for i, dim in enumerate(self.dimensions):
            for name in dim.fields:
                info = self.param_fields[name]
                ranges[name] = (info.host_value(space.low[i]), info.host_value(space.high[i]))
        return ranges

    def _check_orderings(self, space: Box) -> None:
        ranges = self.field_ranges(space)
        for order in self.rules.orderings:
            lower, upper = ranges[order.lower][1], ranges[order.upper][0]
            if not (lower < upper if order.strict else lower <= upper):
                raise ConfigError(
                    f"{space.field_name}: {self.gymnax_id} needs {order} for every task; "
                    f"the box reaches {order.lower} = {lower:g} and {order.upper} = {upper:g}"
                )

    def _steps_dimension(self) -> int | None:
        for i, dim in enumerate(self.dimensions):
            if "max_steps_in_episode" in dim.fields:
                return i
        return None

    def _episode_steps(self, space: Box, declared: bool = False) -> int:
        """The longest episode: the static limit, or the high bound of a dimension over
        `max_steps_in_episode`. `declared`: only the checks (gymnax's own limit is known
        once the env is built)."""
        given = positive_int(self._static_steps, "env.max_episode_steps")
        i = self._steps_dimension()
        if i is None:
            return 0 if declared else int(given or self._env_default_steps())
        longest = int(np.round(space.high[i]))
        if given is not None and given < longest:
            raise ConfigError(
                f"env.max_episode_steps ({given}) is below the task's longest episode "
                f"(max_steps_in_episode up to {longest})"
            )
        return given or longest

    def _env_default_steps(self) -> int:
        return int(self.param_fields["max_steps_in_episode"].default)

    def _return_bounds(self, space: Box) -> tuple[float, float] | None:
        if self._given_bounds is not None:
            return self._given_bounds
        if self.rules.return_bounds is None:
            return None
        low, high = self.rules.return_bounds(self.field_ranges(space), self.max_episode_steps)
        return (float(low), float(high))

    # -- params -------------------------------------------------------------------------

    def default_params(self):
        """gymnax's, with the episode length in the type gymnax stores it in
        (BernoulliBandit's float) and the derived fields that follow it."""
        default = self.param_fields["max_steps_in_episode"].default
        params = self._env.default_params.replace(
            max_steps_in_episode=type(default)(self.max_episode_steps)
        )
        if self.max_episode_steps != self._env_default_steps():
            params = self._recompute(params, {"max_steps_in_episode"})
        return params

    def _recompute(self, params, changed: set[str]):
        """`params` with every derived field whose sources are in `changed` recomputed."""
        for derived in self.rules.derived:
            if changed & set(derived.sources):
                params = params.replace(**{derived.name: derived.compute(params)})
        return params

    def task_to_params(self, task: jax.Array, base_params):
        """task [D] -> params: each column into its dimension's fields (ints rounded,
        bools thresholded), then the derived fields of the fields it set."""
        values = {}
        for i, dim in enumerate(self.dimensions):
            for name in dim.fields:
                values[name] = self.param_fields[name].cast(task[i])
        return self._recompute(base_params.replace(**values), set(values))

    # -- the level generator ------------------------------------------------------------

    def sample_tasks(self, key, n, num_walls=None):
        """[n, D] levels: uniform over the box, or the user's generator clipped to it."""
        if self.generator is None:
            return self.task_space.sample_uniform(key, n)
        tasks = self.generator(key, n, self.task_space)
        return self.task_space.clip(jnp.asarray(tasks, jnp.float32))

    def _check_generator(self, space: Box) -> None:
        """The generator's output shape, traced without compiling: [n, D]."""
        key = jax.ShapeDtypeStruct((2,), jnp.uint32)
        n = 3
        try:
            out = jax.eval_shape(lambda k: self.generator(k, n, space), key)
        except Exception as err:  # a user's function may raise anything
            first = (str(err).strip().splitlines() or [""])[0]
            raise ConfigError(
                f"env.generator: calling it as generator(key, n, task_space) failed "
                f"({type(err).__name__}: {first})"
            ) from None
        shape = out.shape if isinstance(out, jax.ShapeDtypeStruct) else type(out).__name__
        if shape != (n, space.dim):
            raise ConfigError(
                f"env.generator must return tasks [n, {space.dim}]; for n = {n} it "
                f"returned shape {shape}"
            )


# -- the config entry -------------------------------------------------------------------------

DOCS_EXAMPLE = {
    "id": "CartPole-v1",
    "task": {"length": [0.01, 10.01], "masspole": [0.01, 10.01]},
    "success_threshold": 475.0,
}
"""The example docs/envs.md builds: JaxUED's CartPole space."""


@ENVS.register("gymnax")
def make_gymnax_space(
    id: str | None = None,
    task: Mapping[str, Any] | None = None,
    success_threshold: float | None = None,
    return_bounds: Sequence[float] | None = None,
    max_episode_steps: int | None = None,
    generator: str | None = None,
) -> GymnaxSpace:
    """Any gymnax environment whose EnvParams fields are the task, by config.

    Static config: `id` (a gymnax 1.0.1 id), `task` (dimension name -> [low, high], or
    {fields: [...], bounds: [low, high]}), `success_threshold` (required), `return_bounds`
    ([low, high]; default: the id's known ones, classic control only), `max_episode_steps`
    (default: gymnax's), `generator` (`package.module:function`; default: uniform).
    """
    if id is None:
        raise ConfigError("env.id: the gymnax entry needs a gymnax id, e.g. id: CartPole-v1")
    id_rules(id)
    dims = parse_task(task)
    if success_threshold is None:
        raise ConfigError(
            "env.success_threshold: the gymnax entry needs one (an episode whose return is "
            "strictly above it counts as mastered), e.g. success_threshold: 475"
        )
    if (
        isinstance(success_threshold, bool)
        or not isinstance(success_threshold, int | float)
        or not math.isfinite(success_threshold)
    ):
        raise ConfigError(
            f"env.success_threshold must be a finite number, got {success_threshold!r}"
        )
    bounds = None
    if return_bounds is not None:
        low, high = _bounds_pair(return_bounds, "env.return_bounds")
        if not low < high:
            raise ConfigError(f"env.return_bounds needs low < high, got {list(return_bounds)}")
        bounds = (low, high)
    function = None if generator is None else load_generator(generator)
    return GymnaxSpace(
        id,
        dims,
        float(success_threshold),
        return_bounds=bounds,
        max_episode_steps=max_episode_steps,
        generator=function,
    )


make_gymnax_space.docs_example = DOCS_EXAMPLE


# -- named test sets (eval.test_set) ---------------------------------------------------------

JAXUED_EVAL = ("log_grid", 0.05, 10.0, 10)
"""JaxUED's evaluation levels of its gymnax UED spaces (make_eval_levels_and_names in
src/jaxued/environments/gymnax/{cartpole,acrobot,pendulum}.py): a 10 x 10 grid log-spaced
from 0.05 to 10 in each of the two dimensions, plus the env's default level."""

_PART = re.compile(r"^(?P<kind>[a-z_]+)(?:\((?P<args>[^()]*)\))?$")


def _log_grid(space: Box, low: float, high: float, per_dim: int, prefix: str):
    if not 0 < low < high:
        raise ConfigError(f"eval.test_set: log_grid needs 0 < low < high, got {low}, {high}")
    axis = np.geomspace(low, high, per_dim)
    outside = (low < np.asarray(space.low)) | (high > np.asarray(space.high))
    if outside.any():
        raise ConfigError(
            f"eval.test_set: log_grid({low:g}, {high:g}, {per_dim}) leaves the task space "
            f"in {', '.join(n for n, o in zip(space.names, outside, strict=True) if o)}"
        )
    grid = np.stack(np.meshgrid(*[axis] * space.dim, indexing="ij"), -1).reshape(-1, space.dim)
    names = tuple(
        f"{prefix}/" + "_".join(f"{n}{v:.3g}" for n, v in zip(space.names, task, strict=True))
        for task in grid
    )
    return names, grid


def _default_task(space: Box, prefix: str):
    if space.default is None:
        raise ConfigError(
            "eval.test_set: 'default' needs the env's default level inside the task space"
        )
    return (prefix,), np.asarray([space.default])


@TEST_SETS.register("gymnax")
def gymnax_test_set(env, spec: str | list[str], seed: int = 0):
    """`eval.test_set` of the gymnax entry: parts joined by "+", each a group of test tasks
    whose names start with the part's name:

    - `jaxued_eval`: JaxUED's evaluation levels (`JAXUED_EVAL`), 2-D spaces;
    - `log_grid(LOW,HIGH,N)`: N log-spaced values from LOW to HIGH in every dimension;
    - `default`: the env's default level (gymnax's default params);
    - `uniform(N)`: N tasks uniform over the task space, drawn with `seed`.

    e.g. "jaxued_eval+uniform(100)": 201 tasks in two groups. -> (names [M], tasks [M, D])."""
    if not isinstance(spec, str):
        raise ConfigError(
            "eval.test_set of the gymnax entry is a string of parts joined by '+', e.g. "
            "'jaxued_eval+uniform(100)'"
        )
    space = env.task_space
    names: list[str] = []
    tasks: list[np.ndarray] = []
    for part in spec.split("+"):
        match = _PART.match(part.strip())
        kind = match["kind"] if match else part
        args = [a for a in (match["args"] or "").split(",") if a.strip()] if match else []
        try:
            if kind == "jaxued_eval" and not args:
                if space.dim != 2:
                    raise ConfigError(
                        f"eval.test_set: jaxued_eval is JaxUED's 2-D grid; the space has "
                        f"{space.dim} dimensions"
                    )
                _, low, high, n = JAXUED_EVAL
                part_names, part_tasks = _log_grid(space, low, high, n, "jaxued_eval")
                default_names, default = _default_task(space, "jaxued_eval/default")
                part_names = part_names + default_names
                part_tasks = np.vstack([part_tasks, default])
            elif kind == "log_grid" and len(args) == 3:
                low, high, n = float(args[0]), float(args[1]), int(args[2])
                part_names, part_tasks = _log_grid(space, low, high, n, "log_grid")
            elif kind == "default" and not args:
                part_names, part_tasks = _default_task(space, "default/task")
            elif kind == "uniform" and len(args) == 1:
                n = int(args[0])
                key = jax.random.fold_in(jax.random.PRNGKey(seed), len(names))
                part_tasks = np.asarray(space.sample_uniform(key, n))
                part_names = tuple(f"uniform/{i:03d}" for i in range(n))
            else:
                raise ValueError
        except ConfigError:
            raise
        except ValueError:
            raise ConfigError(
                f"eval.test_set: cannot read {part.strip()!r}; parts: jaxued_eval, default, "
                "log_grid(LOW,HIGH,N), uniform(N), joined by '+'"
            ) from None
        names.extend(part_names)
        tasks.append(np.asarray(part_tasks, np.float64))
    return tuple(names), np.vstack(tasks).astype(np.float32)


# -- docs/envs.md -----------------------------------------------------------------------------


def _field_text(info: FieldInfo) -> str:
    kind = {"int": "int, ", "bool": "bool: > 0.5, "}.get(info.kind, "")
    if info.integral and info.kind != "int":
        kind = f"{info.kind}, rounded, "
    return f"`{info.name}` ({kind}{info.limit})"


def id_table_row(gymnax_id: str) -> str:
    """One id's row of the docs table: usable fields, refused fields and why, derived
    fields, return bounds."""
    rules = FIELD_RULES.get(gymnax_id, GymnaxIdRules())
    if rules.refused:
        return f"| `{gymnax_id}` | none: the id is refused | {rules.refused} | | |"
    _, params = gymnax.make(gymnax_id)
    fields = env_fields(params, rules)
    usable, refused = [], []
    for info in fields.values():
        why = refusal(info, rules) or inert_refusal(info.name, rules)
        if why:
            refused.append(f"`{info.name}`: {why}")
        else:
            usable.append(_field_text(info))
    derived = "; ".join(f"`{d.name}` = {d.formula}" for d in rules.derived)
    bounds = rules.return_bounds_doc or "none known: give `return_bounds`"
    cells = (", ".join(usable), "; ".join(refused), derived, bounds)
    return f"| `{gymnax_id}` | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


DOCS_TEXT = """### Any gymnax environment by config

The `gymnax` entry (`envs/gymnax_space.py`) makes a task space of any gymnax 1.0.1 id
from its `EnvParams` fields. The config (the table above shows the example, JaxUED's
CartPole space):

```yaml
env:
  name: gymnax
  id: Acrobot-v1                  # a gymnax id (the table below)
  task:                           # dimension name -> [low, high] (the name is the field),
    link_mass_1: [0.1, 3.0]       # or {fields: [...], bounds: [low, high]}: one value sets
    link_length: {fields: [link_length_1, link_length_2], bounds: [0.01, 10.01]}  # them all
  success_threshold: -100         # required: a return strictly above it is mastered
  return_bounds: [-500, 0]        # optional where the id's are known; else required by
                                  # teachers that rescale returns
  max_episode_steps: 500          # optional: gymnax's time limit
  generator: my_package.levels:corner_levels   # optional: (key, n, task_space) -> [n, D]
```

- Each dimension's default is gymnax's `default_params` value of its first field (the
  box's centre if the bounds exclude it), its unit and physical limit those of its
  fields (the tightest, for a tie). `env.task_low` / `env.task_high` narrow or widen the
  box as for every env, under the same checks.
- Integer fields take the task value rounded to the nearest integer as int32 (MinAtar's
  and Pong's dynamics break on float32); boolean fields are true where it is > 0.5, with
  bounds in [0, 1]; `max_steps_in_episode` is rounded everywhere (kept a float where
  gymnax stores one: BernoulliBandit), and a dimension over it makes `max_episode_steps`
  its rounded high bound.
- Derived fields are recomputed from their sources (gymnax keeps CartPole's
  `total_mass = 1.1` under `EnvParams(masspole=5)`); a derived field is no dimension.
- Physical limits: masses, lengths, time steps and intervals positive; forces, torques,
  gravity, costs, noise and cool-downs non-negative; probabilities in [0, 1]. Orderings
  the dynamics assume hold for every task of the box: MountainCar's `min_position <
  goal_position <= max_position`, MountainCarContinuous's `min_action < max_action`,
  BernoulliBandit's `min_lim < max_lim`.
- Return bounds are known for classic control (T the episode length, highs over the
  box); elsewhere `return_bounds` gives them, and alp_gmm, covar_gmm, adr, spdl and jsrl
  refuse a space without them in one line.
- Levels: the space is a `LevelTaskEnv`, so dr, plr, robust_plr and sfl draw fresh levels
  from its generator: uniform over the box, or `generator`'s function (its tasks clipped
  to the box), as the learning-progress teachers draw from the box.
- Episodes: `terminated` and `truncated` stay apart, and truncation (the task's own
  `max_steps_in_episode`) is bootstrapped, as for every gymnax env here. Actions are
  gymnax's, on the action space of `default_params`.
- One line before anything compiles for: an unknown id or field (with "did you mean"),
  MNISTBandit, an array, non-numeric, derived or inert-only field, bounds that are not
  two finite numbers, a bound outside a physical limit, a broken ordering, a missing
  success threshold, a bad generator, and a return-rescaling teacher on a space without
  return bounds.

JaxUED's gymnax UED spaces (`src/jaxued/environments/gymnax/`), as configs:
`experiments/configs/gymnax_cartpole_jaxued_{random,alp_gmm}.yaml` (CartPole: pole
half-length `length` and `masspole`, each uniform in [0.01, 10.01], its generator's
`uniform * 10 + 0.01`; total_mass and polemass_length recomputed),
`gymnax_acrobot_jaxued.yaml` (Acrobot: one length for `link_length_1` and
`link_length_2`, one mass for `link_mass_1` and `link_mass_2`, each in [0.01, 10.01])
and `gymnax_pendulum_jaxued.yaml` (Pendulum: `l` and `m` in [0.01, 10.01]). Differences:
JaxUED's Acrobot level has a `force_multiplier` (its generator keeps it at 1.0) that
gymnax lacks, so no dimension fakes it (the `acrobot` preset scales `available_torque`
instead); gymnax ignores `link_length_2`, as JaxUED's dynamics do; the link
centre-of-mass positions stay 0.5 in both.

The shipped `cartpole`, `acrobot`, `pendulum` and `mountain_car_continuous` are presets
over this mechanism (their dimensions, thresholds, return and challenge bounds fixed;
acrobot's torque dimension scales `available_torque`, pendulum's actions are fractions
of max_torque, mountain car's are clipped before the cost).

Every gymnax 1.0.1 id (T: the episode length):

| id | usable fields (kind, limit) | refused fields, and why | derived, recomputed | return bounds |
|---|---|---|---|---|
"""


def docs_section() -> str:
    """docs/envs.md's "Any gymnax environment by config", its table of every id included."""
    return DOCS_TEXT + "\n".join(id_table_row(gymnax_id) for gymnax_id in GYMNAX_IDS) + "\n"


make_gymnax_space.docs_extra = docs_section
