"""A Brax env whose system parameters (masses, gravity, actuator strength) are the task.

brax 0.14.2's `DomainRandomizationVmapWrapper` calls its randomisation function once, at
construction, so a teacher cannot choose tasks through it. Here the env's params are
the System itself: `task_to_params(task, system)` is the loaded System with the task's
values `tree_replace`d into it, so `params_for_tasks` (a vmap) gives a System whose
leaves lead with [N], and the vmapped `reset` and `step` run each instance on its own.

Static config names the Brax env (`brax_env`, a name in BRAX_TASKS; brax's own env class
loads the System, so the physics time step and frames per env step are brax's), the
pipeline (`backend`: spring by default; positional, generalized, mjx) and the task
dimensions (`dimensions`), each a system parameter with bounds:

- `gravity`: g in m/s^2, gravity = (g_x, g_y, -g) with the loaded x and y kept; default
  the loaded -g_z; limit >= 0. Sets `gravity` (brax's pipelines) and `opt.gravity` (mjx).
- `mass` (with `body: NAME`): that body's mass in kg, its inertia scaled with it (the same
  shape, denser); default the loaded mass; limit > 0. Sets `link.inertia.mass` and
  `link.inertia.i` (brax's pipelines), `body_mass` and `body_inertia` (mjx).
- `mass_scale`: every body's mass and inertia times this, after the per-body masses;
  default 1; limit > 0. Sets the leaves `mass` sets.
- `actuator_strength`: every actuator's gear times this; default 1; limit >= 0. Sets
  `actuator.gear` (brax's pipelines) and `actuator_gear`'s first column (mjx).

Where brax 0.14.2 reads them (brax/...): the spring pipeline takes `sys.gravity` as each
link's acceleration (spring/pipeline.py `step`), `sys.link.inertia.mass` into its
State's `mass` at `init` (spring/pipeline.py; the step, joints and contacts divide by
that), `sys.link.inertia.i` in `com.inv_inertia` raised to 1 - `spring_inertia_scale`,
and `sys.actuator.gear` in `actuator.to_tau`. So on spring a mass takes effect at the
reset that starts an episode, which is when the loop hands an instance its task.
inverted_pendulum's `spring_inertia_scale` is 1, so spring replaces its inertias by 1:
there a pole's mass changes the dynamics and its inertia does not. Positional reads the
same leaves; generalized reads `link.inertia.mass` and `link.inertia.i` in its mass
matrix each step; mjx reads `opt.gravity`, `body_mass`, `body_inertia` and
`actuator_gear` (MuJoCo's own fields; its `body_subtreemass` and `*_invweight0`, derived
at load, keep the loaded masses).

Speed (brax 0.14.2, a 2-core CPU shared with other jobs, so +-50%): jit(vmap(step)) with
a different task per instance runs 87k env steps/s at 64 instances and 112k at 256,
beside 68k and 94k for brax's own `InvertedPendulum.step` with one System; compiling
takes 20-35 s. PPO's loop (the `cpu` presets of experiments/configs/brax_pendulum_*.yaml)
runs 23k-33k env steps/s.

Friction is no dimension: the supported envs have no contacts (every inverted_pendulum
geom has contype 0, so `contact.get` finds none and no pipeline reads `geom_friction`).

inverted_pendulum (brax/envs/inverted_pendulum.py; Barto et al.'s cart-pole, the cart on
a rail from -1 to 1 m): observation [4] = (q, qd) = (cart x, pole angle, their
velocities); action [1] in [-1, 1] mapped onto the motor's ctrl range [-3, 3] (gear
100: up to 300 N on the cart, times `actuator_strength`); a reset puts q and qd uniform
in +-0.01. Spring and positional run 4 physics steps of 0.005 s per env step,
generalized and mjx 2 of 0.02 s (brax's choice). Reward 1 per step, the terminal one
included; terminated when |pole angle| > 0.2 rad after a step; truncated after
`max_episode_steps` T (default 1000, brax's `envs.create` episode length). A return is
the steps survived, in [1, T]: return bounds (0, T) as cartpole's, success = return >
0.95 T. Default dimensions: pole mass [0.5, 50] kg (loaded 5.02), gravity [1, 30]
m/s^2 (9.81), actuator strength [0.05, 2] (1). The observation does not show the task.

Regions, checked on spring with linear controllers force = k . (x, angle, x', angle')
in newtons (so tuned to the task's strength), 96 uniform tasks from one start each:
over T = 200, one controller (k = (30, 3000, 0, 30)) masters 94% and the best of 225
masters 95% (the rest: poles over 40 kg under over 24 m/s^2); over T = 1000 the best of
those 42 masters 41% (every task with a pole under 14 kg, a quarter of the heavier ones).
In the failure traced, the cart drifted to the rail's end, which cart feedback these
controllers lack would prevent. So no region is known infeasible, and no challenge
bounds are declared (`unfeasible_bounds`, `trivial_bounds` None).
"""

from __future__ import annotations

import abc
import dataclasses
import difflib
import functools
import importlib
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from acl.core.spaces import NON_NEGATIVE, POSITIVE, Box, Limit
from envs._checks import positive_int
from envs.base import TaskEnv
from envs.brax_goal import PIPELINES
from envs.registry import ENVS


@dataclass(frozen=True)
class SystemParameter:
    """A kind of task dimension: one system parameter and the System leaves it sets."""

    unit: str
    limit: Limit
    leaves: tuple[str, ...]
    """The `System.tree_replace` paths it sets (brax's pipelines' and MJX's)."""
    needs_body: bool = False
    """Whether a dimension of it names a body (`body: pole`)."""


_MASS_LEAVES = ("link.inertia.mass", "link.inertia.i", "body_mass", "body_inertia")
PARAMETERS: dict[str, SystemParameter] = {
    "gravity": SystemParameter("m/s^2", NON_NEGATIVE, ("gravity", "opt.gravity")),
    "mass": SystemParameter("kg", POSITIVE, _MASS_LEAVES, needs_body=True),
    "mass_scale": SystemParameter("x loaded", POSITIVE, _MASS_LEAVES),
    "actuator_strength": SystemParameter(
        "x gear", NON_NEGATIVE, ("actuator.gear", "actuator_gear")
    ),
}
"""Parameter name -> what it sets (the module docstring's table)."""


@dataclass(frozen=True)
class SystemDimension:
    """One task dimension: a system parameter (a name in PARAMETERS) and its bounds."""

    parameter: str
    low: float
    high: float
    body: str = ""
    """The body a `mass` dimension sets; "" for the others."""

    @property
    def name(self) -> str:
        """The task space's name of the dimension: `pole_mass`, `gravity`, ..."""
        return f"{self.body}_mass" if self.parameter == "mass" else self.parameter


_DIMENSION_KEYS = ("parameter", "low", "high", "body")


def _did_you_mean(value: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(value), list(known), n=3, cutoff=0.4)
    hint = f"did you mean {', '.join(repr(c) for c in close)}? " if close else ""
    return f"{hint}(known: {', '.join(known)})"


def parse_dimension(item: Any, field: str, bodies: Sequence[str]) -> SystemDimension:
    """A config's dimension (a mapping {parameter, low, high, body} or a SystemDimension)
    as a SystemDimension whose bounds are finite, ordered and inside the parameter's
    limit; ConfigError naming `field` otherwise."""
    if isinstance(item, SystemDimension):
        item = dataclasses.asdict(item)
    if not isinstance(item, Mapping):
        raise ConfigError(f"{field} must be a mapping {{parameter, low, high}}, got {item!r}")
    for key in item:
        if key not in _DIMENSION_KEYS:
            raise ConfigError(
                f"{field}: unknown key {key!r}; {_did_you_mean(key, _DIMENSION_KEYS)}"
            )
    parameter = item.get("parameter")
    if parameter not in PARAMETERS:
        raise ConfigError(
            f"{field}.parameter: unknown system parameter {parameter!r}; "
            f"{_did_you_mean(parameter, tuple(PARAMETERS))}"
        )
    spec = PARAMETERS[parameter]
    body = item.get("body", "")
    if spec.needs_body and body not in bodies:
        raise ConfigError(
            f"{field}.body: {parameter} needs a body of the system, got {body!r}; "
            f"{_did_you_mean(body, bodies)}"
        )
    if not spec.needs_body and body:
        raise ConfigError(f"{field}.body: {parameter} sets no single body; drop body {body!r}")
    bounds = []
    for key in ("low", "high"):
        value = item.get(key)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ConfigError(f"{field}.{key} must be a finite number, got {value!r}")
        if value not in spec.limit:
            raise ConfigError(
                f"{field}.{key}: {parameter} must be {spec.limit} (its physical limit), "
                f"got {value:g}"
            )
        bounds.append(float(value))
    if not bounds[0] < bounds[1]:
        raise ConfigError(f"{field}: low must be < high, got low={bounds[0]:g} high={bounds[1]:g}")
    return SystemDimension(parameter, bounds[0], bounds[1], body)


@struct.dataclass
class BraxSystemState:
    """One instance's env state."""

    pipeline_state: Any
    """The pipeline's State, carried whole: spring's maximal coordinates (link poses and
    velocities) are not a function of (q, qd) mid-episode."""
    time: jax.Array
    """Steps taken in this episode."""


class BraxTaskRules(abc.ABC):
    """What a Brax env adds to its System: its reset, observation, control, reward and
    termination, as brax's env class defines them, with the System passed in (brax's
    classes read `self.sys`). One subclass per supported env."""

    default_dimensions: tuple[SystemDimension, ...]
    episode_length: int = 1000
    """brax's `envs.create` default."""

    @abc.abstractmethod
    def initial_joints(self, key: jax.Array, system: Any) -> tuple[jax.Array, jax.Array]:
        """q [Q], qd [QD] of a reset."""

    @abc.abstractmethod
    def control(self, system: Any, action: jax.Array) -> jax.Array:
        """Action [A] in [-1, 1] -> the actuators' control [A]."""

    @abc.abstractmethod
    def observe(self, pipeline_state: Any) -> jax.Array:
        """[O] float32."""

    @abc.abstractmethod
    def reward(self, pipeline_state: Any, action: jax.Array) -> jax.Array:
        """The reward of the step that reached `pipeline_state`."""

    @abc.abstractmethod
    def terminated(self, pipeline_state: Any) -> jax.Array:
        """bool: a real end (no bootstrap)."""

    @abc.abstractmethod
    def success_threshold(self, max_episode_steps: int) -> float:
        """The return above which an episode of `max_episode_steps` is mastered."""

    @abc.abstractmethod
    def return_bounds(self, max_episode_steps: int) -> tuple[float, float]:
        """The lowest and highest return of an episode of `max_episode_steps`."""


class InvertedPendulumRules(BraxTaskRules):
    """brax/envs/inverted_pendulum.py's reset, observation, reward and termination."""

    default_dimensions = (
        SystemDimension("mass", 0.5, 50.0, body="pole"),
        SystemDimension("gravity", 1.0, 30.0),
        SystemDimension("actuator_strength", 0.05, 2.0),
    )
    max_angle = 0.2
    """rad: |pole angle| beyond this after a step ends the episode."""

    def initial_joints(self, key, system):
        q_key, qd_key = jax.random.split(key)
        q = system.init_q + jax.random.uniform(q_key, (system.q_size(),), minval=-0.01, maxval=0.01)
        qd = jax.random.uniform(qd_key, (system.qd_size(),), minval=-0.01, maxval=0.01)
        return q, qd

    def control(self, system, action):
        low, high = system.actuator.ctrl_range[:, 0], system.actuator.ctrl_range[:, 1]
        return (jnp.clip(action, -1.0, 1.0) + 1.0) * (high - low) * 0.5 + low

    def observe(self, pipeline_state):
        return jnp.concatenate([pipeline_state.q, pipeline_state.qd]).astype(jnp.float32)

    def reward(self, pipeline_state, action):
        return jnp.float32(1.0)

    def terminated(self, pipeline_state):
        return jnp.abs(pipeline_state.q[1]) > self.max_angle

    def success_threshold(self, max_episode_steps):
        return 0.95 * max_episode_steps

    def return_bounds(self, max_episode_steps):
        return (0.0, float(max_episode_steps))


BRAX_TASKS: dict[str, BraxTaskRules] = {"inverted_pendulum": InvertedPendulumRules()}
"""The Brax envs `brax_system` runs: brax's env name -> its rules."""


@functools.cache
def load_brax_env(name: str, backend: str) -> Any:
    """brax's env `name` on pipeline `backend` (`brax.envs.get_environment`), loaded once
    per process: only its immutable System and time step are read."""
    # Imported here: `import envs` registers every env, and brax (with MuJoCo) takes
    # seconds to import that users of the other envs should not pay.
    import contextlib
    import io

    # mujoco-mjx 3.17 prints "Failed to import warp" when its optional GPU backend is
    # missing, which it always is here.
    with contextlib.redirect_stdout(io.StringIO()):
        from brax import envs as brax_envs
    with warnings.catch_warnings():
        # brax 0.14 warns on every load that its pipelines are unmaintained.
        warnings.simplefilter("ignore", UserWarning)
        return brax_envs.get_environment(name, backend=backend)


@ENVS.register("brax_system")
class BraxSystem(TaskEnv):
    """Brax system parameters as the task: each task dimension `tree_replace`s leaves of
    the loaded Brax System (gravity: `gravity`, `opt.gravity`; a body's mass, or all
    scaled: `link.inertia.mass`, `link.inertia.i`, `body_mass`, `body_inertia`; actuator
    strength: `actuator.gear`, `actuator_gear`), and the env's params are that System, so
    each vmapped instance steps with its own. Default: brax's inverted_pendulum on the
    spring pipeline (+1 per step up, terminated past 0.2 rad); see envs/brax_system.py.

    Static config: `brax_env` (a name in BRAX_TASKS, default `inverted_pendulum`),
    `backend` (a Brax pipeline in PIPELINES, default `spring`), `dimensions` (a list of
    {parameter, low, high} mappings, `body` for a `mass`; parameters gravity, mass,
    mass_scale, actuator_strength; None: the env's defaults), `max_episode_steps` (default
    1000, brax's episode length; the success threshold and return bounds scale with it).
    """

    name = "brax_system"

    def __init__(
        self,
        brax_env: str = "inverted_pendulum",
        backend: str = "spring",
        dimensions: Sequence[Mapping[str, Any] | SystemDimension] | None = None,
        max_episode_steps: int | None = None,
    ):
        if brax_env not in BRAX_TASKS:
            raise ConfigError(
                f"env.brax_env: no rules for Brax env {brax_env!r}; "
                f"{_did_you_mean(brax_env, tuple(BRAX_TASKS))}"
            )
        if backend not in PIPELINES:
            raise ConfigError(
                f"env.backend: unknown Brax pipeline {backend!r}; "
                f"{_did_you_mean(backend, PIPELINES)}"
            )
        self.brax_env = brax_env
        self.backend = backend
        self.rules = BRAX_TASKS[brax_env]
        self.max_episode_steps = (
            positive_int(max_episode_steps, "env.max_episode_steps") or self.rules.episode_length
        )
        self.success_threshold = self.rules.success_threshold(self.max_episode_steps)
        self.return_bounds = self.rules.return_bounds(self.max_episode_steps)

        loaded = load_brax_env(brax_env, backend)
        self.system = loaded.sys
        """The loaded System: the default params, which each task copies with its leaves
        replaced."""
        self.n_frames = round(float(loaded.dt) / float(self.system.opt.timestep))
        """Physics steps per env step (brax's env's choice for this backend)."""
        self._pipeline = importlib.import_module(f"brax.{backend}.pipeline")
        self.bodies = tuple(self.system.link_names)
        """The bodies a `mass` dimension may name (the System's links: MuJoCo's bodies
        after the world, in order, which `task_to_params` relies on)."""
        if len(self.bodies) != np.shape(self.system.body_mass)[0] - 1:
            raise ConfigError(
                f"env.brax_env {brax_env!r}: its {len(self.bodies)} links are not MuJoCo's "
                f"{np.shape(self.system.body_mass)[0]} bodies less the world"
            )

        if dimensions is None:
            dimensions = self.rules.default_dimensions
        if isinstance(dimensions, str | Mapping) or not isinstance(dimensions, Sequence):
            raise ConfigError(
                "env.dimensions must be a list of {parameter, low, high} mappings, "
                f"got {dimensions!r}"
            )
        if not dimensions:
            raise ConfigError("env.dimensions must name at least one system parameter")
        self.dimensions = tuple(
            parse_dimension(item, f"env.dimensions[{i}]", self.bodies)
            for i, item in enumerate(dimensions)
        )
        names = [d.name for d in self.dimensions]
        for name in names:
            if names.count(name) > 1:
                raise ConfigError(f"env.dimensions: {name!r} is set twice")
        loaded_mass = np.asarray(self.system.link.inertia.mass)
        for i, dimension in enumerate(self.dimensions):
            # A body's inertia scales by new / loaded mass.
            if dimension.body and not loaded_mass[self.bodies.index(dimension.body)] > 0:
                raise ConfigError(
                    f"env.dimensions[{i}].body: {dimension.body!r} has no mass in the loaded "
                    "system to scale its inertia by"
                )
        self.task_space = Box(
            low=tuple(d.low for d in self.dimensions),
            high=tuple(d.high for d in self.dimensions),
            names=tuple(names),
            units=tuple(PARAMETERS[d.parameter].unit for d in self.dimensions),
            default=tuple(self._loaded_value(d) for d in self.dimensions),
            limits=tuple(PARAMETERS[d.parameter].limit for d in self.dimensions),
        )

    def _loaded_value(self, dimension: SystemDimension) -> float:
        """The loaded System's value of `dimension`: the task's default (the shortest
        decimal of the float32, so 9.81 reads 9.81)."""
        if dimension.parameter == "gravity":
            value = -np.asarray(self.system.gravity, np.float32)[2]
        elif dimension.parameter == "mass":
            body = self.bodies.index(dimension.body)
            value = np.asarray(self.system.link.inertia.mass, np.float32)[body]
        else:  # the scales
            value = np.float32(1.0)
        return float(str(value))

    # -- params --------------------------------------------------------------------------

    def default_params(self) -> Any:
        """The loaded System."""
        return self.system

    def task_to_params(self, task: jax.Array, base_params: Any) -> Any:
        """task [D] -> `base_params` (a System) with the task's values `tree_replace`d into
        the leaves brax's pipelines read and MuJoCo's (for mjx); pure, so a batch of tasks
        is one vmap, a System whose leaves lead with [N]. Body masses first (each body's
        inertia scaled with its mass), then `mass_scale`; the scales multiply
        `base_params`' values."""
        task = jnp.asarray(task, jnp.float32)
        gravity = jnp.asarray(base_params.gravity, jnp.float32)
        mass = jnp.asarray(base_params.link.inertia.mass, jnp.float32)  # [L]
        inertia = jnp.asarray(base_params.link.inertia.i, jnp.float32)  # [L, 3, 3]
        gear = jnp.asarray(base_params.actuator.gear, jnp.float32)  # [A]
        mass_scale = jnp.float32(1.0)
        for i, dimension in enumerate(self.dimensions):
            value = task[i]
            if dimension.parameter == "gravity":
                gravity = gravity.at[2].set(-value)
            elif dimension.parameter == "mass":
                body = self.bodies.index(dimension.body)
                inertia = inertia.at[body].multiply(value / mass[body])
                mass = mass.at[body].set(value)
            elif dimension.parameter == "mass_scale":
                mass_scale = mass_scale * value
            else:  # actuator_strength
                gear = gear * value
        mass, inertia = mass * mass_scale, inertia * mass_scale
        # MuJoCo's bodies are the links after the world body 0; its inertias are diagonal.
        body_mass = jnp.asarray(base_params.body_mass, jnp.float32).at[1:].set(mass)
        body_inertia = jnp.asarray(base_params.body_inertia, jnp.float32)
        body_inertia = body_inertia.at[1:].set(jnp.diagonal(inertia, axis1=-2, axis2=-1))
        actuator_gear = jnp.asarray(base_params.actuator_gear, jnp.float32).at[:, 0].set(gear)
        return base_params.tree_replace(
            {
                "gravity": gravity,
                "opt.gravity": gravity,
                "link.inertia.mass": mass,
                "link.inertia.i": inertia,
                "body_mass": body_mass,
                "body_inertia": body_inertia,
                "actuator.gear": gear,
                "actuator_gear": actuator_gear,
            }
        )

    # -- spaces ----------------------------------------------------------------------------

    def observation_space(self) -> spaces.Box:
        size = self.system.q_size() + self.system.qd_size()
        return spaces.Box(low=-jnp.inf, high=jnp.inf, shape=(size,), dtype=jnp.float32)

    def action_space(self) -> spaces.Box:
        return spaces.Box(low=-1.0, high=1.0, shape=(self.system.act_size(),), dtype=jnp.float32)

    # -- dynamics ------------------------------------------------------------------------

    def reset(self, key: jax.Array, params: Any):
        """`params`: the instance's System (`task_to_params`)."""
        q, qd = self.rules.initial_joints(key, params)
        pipeline_state = self._pipeline.init(params, q, qd)
        state = BraxSystemState(pipeline_state=pipeline_state, time=jnp.int32(0))
        return self.rules.observe(pipeline_state), state

    def step(self, key: jax.Array, state: BraxSystemState, action: jax.Array, params):
        """`action` [A] in [-1, 1] (clipped); `n_frames` physics steps of the instance's
        System `params`."""
        del key
        control = self.rules.control(params, jnp.asarray(action, jnp.float32))

        def frame(pipeline_state, _):
            return self._pipeline.step(params, pipeline_state, control), None

        pipeline_state, _ = jax.lax.scan(frame, state.pipeline_state, None, length=self.n_frames)
        time = state.time + 1
        terminated = self.rules.terminated(pipeline_state)
        truncated = (time >= self.max_episode_steps) & ~terminated
        obs = self.rules.observe(pipeline_state)
        reward = self.rules.reward(pipeline_state, action)
        state = BraxSystemState(pipeline_state=pipeline_state, time=time)
        return obs, state, reward, terminated, truncated, {}
