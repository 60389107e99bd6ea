"""A ball pushed by 2-D forces through a maze of box walls, simulated by Brax.

The physics-engine counterpart of `envs.point_maze`: the same unit-square world, wall
layouts, task space, goal reward and goal/start protocols, but the body is a rigid
sphere with mass and momentum whose wall contacts Brax resolves.

World: the unit square [0, 1]^2, x to the right and y upwards. Every wall of
`planar_tasks.LAYOUTS[layout]`, and each side of the square, is a fixed axis-aligned box
(a Brax world geom) around its segment, `WALL_HALF_THICKNESS` = 0.01 thick on each side
and past each end. So the default `u_maze` has the box [-0.01, 0.71] x [0.49, 0.51]
inside, and the free space is [0.01, 0.99]^2 less the inner walls.

Body: a sphere of radius `RADIUS` = 0.03 and mass 1 kg on two slide joints (x, y): it
has no rotation and no height, so no gravity and no floor are simulated (the fewer the
contacts, the cheaper the step). Joint positions are the ball's (x, y) directly.

Actions: Box [-1, 1]^2 (clipped), a force of `MAX_FORCE` * action newtons along x and
y, held for one env step = `N_FRAMES` = 5 physics steps of `TIMESTEP` = 0.01 s. Linear
velocity damping (Brax's `vel_damping`, `VEL_DAMPING` = 5 / s) caps the speed at
MAX_FORCE / (mass * VEL_DAMPING) = 1 m/s, i.e. 0.05 per env step (point_maze's step
size), reached with a time constant of 0.2 s (4 env steps). Walls are frictionless and
inelastic: a ball pushed into a wall stops against it and slides along it. Contacts are
soft: they act once the ball overlaps a wall, so at full speed it sinks up to ~1.5 cm
(one physics step's travel and some) before it is pushed back out; walls are 2 cm thick
and the ball 3 cm in radius, so it never gets through one.

Pipeline (static config `pipeline`): Brax's `spring` by default (impulse-based contacts,
contact detection by MuJoCo MJX), the cheapest Brax pipeline for this body on CPU;
`positional`, `generalized` and `mjx` run the same system (the damping is set both as
Brax's `vel_damping`, which spring and positional use, and as joint damping, which
generalized and MuJoCo use). `python -m experiments.bench_brax_goal` times them:
jit(vmap(step)) over 64 envs (one env step = 5 physics steps, brax 0.14.2) on a 2-core
CPU shared with other jobs, so wall times varied 2-4x between runs. Compile, in process
CPU seconds: spring 23, mjx 25, generalized 29, positional 55 (wall 25-110, 37-50,
48-59, 59-175 s). Env steps/s: spring 16k-45k, positional 4k-20k, mjx 6k-12k,
generalized 300. All four stop the ball at a wall.

Valid positions (starts and goals): inside the square and at least `goal_tolerance`
(>= RADIUS) from every wall box. That margin keeps a goal's tolerance disc clear of
walls, so a goal is never "reached" through a wall, and a valid start never overlaps a
wall. Task [4] = (start x, start y, goal x, goal y); `task_to_params` keeps a valid
point and maps an invalid one to the nearest valid centre of a SNAP_GRID x SNAP_GRID
grid over the square (as point_maze does).

Observation [6] float32 = (x, y, vx, vy, goal x, goal y); `achieved_goal` is
obs[..., :2], `desired_goal` obs[..., 4:6]. Velocities are in units per second.

Reward (point_maze's, HER-style -1/0): after each step, 0 if the ball's centre is
within `goal_tolerance` (Euclidean, inclusive) of the goal, else -1; the episode
terminates on that step. Truncation after `max_episode_steps` (default 100; the
default task needs about 40). Success = return > -max_episode_steps; return bounds
(-max_episode_steps, 0).

Helpers: `is_valid_position`, `valid_position`, `goal_grid`, `sample_valid_goals`,
`task_for`, `render` (top-down RGB, numpy).
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from acl.core.errors import ConfigError
from envs._checks import positive_int
from envs.planar_tasks import (
    BOUNDARY,
    LAYOUTS,
    MARGIN_SLACK,
    SOLIDS,
    PlanarStartGoalTasks,
    StartGoalParams,
    check_layout,
)
from envs.registry import ENVS

RADIUS = 0.03
"""Radius of the ball."""
WALL_HALF_THICKNESS = 0.01
"""How far a wall box extends on each side of (and past the ends of) its segment."""
WALL_HALF_HEIGHT = 0.1
"""Half-height of the wall boxes; the ball's centre stays at height 0."""
MASS = 1.0
MAX_FORCE = 5.0
"""Newtons per unit of action (the actuator gear)."""
VEL_DAMPING = 5.0
"""Linear velocity damping per second; terminal speed MAX_FORCE / (MASS * VEL_DAMPING)."""
TIMESTEP = 0.01
"""Seconds per physics step."""
N_FRAMES = 5
"""Physics steps per env step (the action is held for all of them)."""
MAX_SPEED = 2.0
"""Bound of the observed velocities: twice the terminal speed, for the contact transients."""
PIPELINES = ("spring", "positional", "generalized", "mjx")
"""Brax pipelines the env can step with (`brax.<name>.pipeline`)."""


BraxGoalParams = StartGoalParams
"""What a teacher may change: the start and the goal (point_maze's params)."""


@struct.dataclass
class BraxGoalState:
    """The ball's joint state; the rest of Brax's state is recomputed from it each step."""

    position: jax.Array
    """[2] float32 (x, y) = the slide joints' positions."""
    velocity: jax.Array
    """[2] float32 (vx, vy) = the slide joints' velocities."""
    time: jax.Array
    """Steps taken in this episode."""


def segments_to_boxes(segments: np.ndarray, half_thickness: float) -> np.ndarray:
    """Axis-aligned segments [S, 2, 2] -> boxes [S, 2, 2] ((xmin, ymin), (xmax, ymax)),
    each grown by `half_thickness` in every direction. ConfigError for a slanted one."""
    segments = np.asarray(segments, np.float64).reshape(-1, 2, 2)
    delta = segments[:, 1] - segments[:, 0]
    slanted = (delta[:, 0] != 0) & (delta[:, 1] != 0)
    if np.any(slanted):
        raise ConfigError(
            f"env.layout: walls must be axis-aligned for box walls; segment(s) "
            f"{np.flatnonzero(slanted).tolist()} are slanted"
        )
    low = segments.min(axis=1) - half_thickness
    high = segments.max(axis=1) + half_thickness
    return np.stack([low, high], axis=1)


def box_distance(points, boxes):
    """Distance of points [..., 2] to axis-aligned boxes [B, 2, 2] -> [..., B] (numpy or
    jax); 0 inside a box."""
    xp = jnp if isinstance(points, jax.Array) else np
    centre = (boxes[:, 0] + boxes[:, 1]) / 2  # [B, 2]
    half = (boxes[:, 1] - boxes[:, 0]) / 2
    outside = xp.maximum(xp.abs(points[..., None, :] - centre) - half, 0.0)  # [..., B, 2]
    return xp.linalg.norm(outside, axis=-1)


def maze_mjcf(boxes: np.ndarray) -> str:
    """The MJCF of the ball and the wall boxes [B, 2, 2] (world geoms)."""
    walls = []
    for i, (low, high) in enumerate(np.asarray(boxes, np.float64)):
        c, h = (low + high) / 2, (high - low) / 2
        walls.append(
            f'<geom name="wall{i}" type="box" pos="{c[0]:.6f} {c[1]:.6f} 0" '
            f'size="{h[0]:.6f} {h[1]:.6f} {WALL_HALF_HEIGHT}"/>'
        )
    newline = "\n    "
    # vel_damping is the spring and positional pipelines' damping, joint damping that of
    # generalized and mjx (each ignores the other). Frictionless contacts let the ball
    # slide along a wall it is pushed into: friction 0 for Brax's own pipelines, condim 1
    # for MJX (whose pyramidal friction cone with friction 0 let the ball through walls).
    return f"""<mujoco model="brax_goal">
  <option timestep="{TIMESTEP}" gravity="0 0 0"/>
  <custom>
    <numeric name="vel_damping" data="{-VEL_DAMPING}"/>
    <numeric name="elasticity" data="0"/>
  </custom>
  <default><geom friction="0 0 0" condim="1" contype="1" conaffinity="1"/></default>
  <worldbody>
    {newline.join(walls)}
    <body name="ball" pos="0 0 0">
      <joint name="x" type="slide" axis="1 0 0" damping="{VEL_DAMPING * MASS}"/>
      <joint name="y" type="slide" axis="0 1 0" damping="{VEL_DAMPING * MASS}"/>
      <geom name="ball" type="sphere" size="{RADIUS}" mass="{MASS}"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="x" gear="{MAX_FORCE}" ctrllimited="true" ctrlrange="-1 1"/>
    <motor joint="y" gear="{MAX_FORCE}" ctrllimited="true" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


@ENVS.register("brax_goal")
class BraxGoal(PlanarStartGoalTasks):
    """A Brax ball in a maze of box walls in [0, 1]^2; see the module docstring.

    Static config: `layout` (a name in planar_tasks' LAYOUTS, default `u_maze`),
    `goal_tolerance` (0.05, also the valid margin from walls; at least RADIUS),
    `max_episode_steps` (100), `pipeline` (a name in PIPELINES, default `spring`).
    """

    name = "brax_goal"

    def __init__(
        self,
        layout: str = "u_maze",
        goal_tolerance: float = 0.05,
        max_episode_steps: int | None = None,
        pipeline: str = "spring",
    ):
        if pipeline not in PIPELINES:
            raise ConfigError(
                f"env.pipeline: unknown Brax pipeline {pipeline!r}; one of {', '.join(PIPELINES)}"
            )
        check_layout(layout)
        if (
            isinstance(goal_tolerance, bool)
            or not isinstance(goal_tolerance, int | float)
            or not RADIUS <= goal_tolerance < 0.5
        ):
            raise ConfigError(
                f"env.goal_tolerance must be a number in [{RADIUS}, 0.5) (at least the "
                f"ball's radius), got {goal_tolerance!r}"
            )
        if layout in SOLIDS:
            raise ConfigError(
                f"env.layout {layout!r} has solid blocks, which brax_goal does not build; "
                "use it with point_maze"
            )
        self.layout_name = layout
        self.pipeline_name = pipeline
        # At most MAX_FORCE / (MASS * VEL_DAMPING) * N_FRAMES * TIMESTEP per env step.
        self.step_length = MAX_FORCE / (MASS * VEL_DAMPING) * N_FRAMES * TIMESTEP
        self.goal_tolerance = float(goal_tolerance)
        self.max_episode_steps = positive_int(max_episode_steps, "env.max_episode_steps") or 100
        segments = np.concatenate(
            [np.asarray(LAYOUTS[layout], np.float64).reshape(-1, 2, 2), np.asarray(BOUNDARY)]
        )
        self.walls = segments.astype(np.float32)
        """[S, 2, 2] wall segments (the boxes' centre lines), the square's sides last."""
        self.boxes = segments_to_boxes(segments, WALL_HALF_THICKNESS).astype(np.float32)
        """[B, 2, 2] wall boxes ((xmin, ymin), (xmax, ymax)), the square's sides last."""
        self._init_tasks(
            layout,
            units="m",
            nothing_valid=f"env.goal_tolerance {goal_tolerance} leaves no valid position in "
            f"layout {layout!r}",
        )
        self.system = self._load_system()
        """The Brax System (static: closed over by `step`, never vmapped)."""

    def _load_system(self) -> Any:
        # Imported here: `import envs` registers every env, and brax (with MuJoCo) takes
        # seconds to import that users of the other envs should not pay.
        import contextlib
        import importlib
        import io

        # mujoco-mjx 3.17 prints "Failed to import warp" when its optional GPU backend is
        # missing, which it always is here.
        with contextlib.redirect_stdout(io.StringIO()):
            from brax.io import mjcf

        self._pipeline = importlib.import_module(f"brax.{self.pipeline_name}.pipeline")
        with warnings.catch_warnings():
            # brax 0.14 warns on every load that its pipelines are unmaintained.
            warnings.simplefilter("ignore", UserWarning)
            return mjcf.loads(maze_mjcf(self.boxes))

    # -- validity ------------------------------------------------------------------------

    def _valid_np(self, points: np.ndarray) -> np.ndarray:
        points = np.asarray(points, np.float64)
        inside = np.all((points >= 0.0) & (points <= 1.0), axis=-1)
        far = box_distance(points, np.asarray(self.boxes, np.float64)).min(-1)
        return inside & (far >= self.goal_tolerance - MARGIN_SLACK)

    def is_valid_position(self, points: jax.Array) -> jax.Array:
        """[..., 2] -> [...] bool: inside the square, >= goal_tolerance from every wall."""
        points = jnp.asarray(points, jnp.float32)
        inside = jnp.all((points >= 0.0) & (points <= 1.0), axis=-1)
        far = box_distance(points, jnp.asarray(self.boxes)).min(-1)
        return inside & (far >= self.goal_tolerance - MARGIN_SLACK)

    # -- spaces ----------------------------------------------------------------------------

    def observation_space(self) -> spaces.Box:
        low = jnp.array([0.0, 0.0, -MAX_SPEED, -MAX_SPEED, 0.0, 0.0], jnp.float32)
        high = jnp.array([1.0, 1.0, MAX_SPEED, MAX_SPEED, 1.0, 1.0], jnp.float32)
        return spaces.Box(low=low, high=high, shape=(6,), dtype=jnp.float32)

    def action_space(self) -> spaces.Box:
        return spaces.Box(low=-1.0, high=1.0, shape=(2,), dtype=jnp.float32)

    # -- goal protocol -------------------------------------------------------------------

    def achieved_goal(self, obs: jax.Array) -> jax.Array:
        return obs[..., :2]

    def desired_goal(self, obs: jax.Array) -> jax.Array:
        return obs[..., 4:6]

    def with_goal(self, obs: jax.Array, goal: jax.Array) -> jax.Array:
        goal = jnp.broadcast_to(goal, obs.shape[:-1] + (2,)).astype(obs.dtype)
        return jnp.concatenate([obs[..., :4], goal], axis=-1)

    # -- dynamics ------------------------------------------------------------------------

    def physics(
        self, position: jax.Array, velocity: jax.Array, action: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """[2], [2], [2] action -> [2] position, [2] velocity after N_FRAMES Brax steps."""
        action = jnp.clip(jnp.asarray(action, jnp.float32), -1.0, 1.0)
        # The spring state is a function of (q, qd), so the env state keeps only those
        # (the other pipelines' states are rebuilt from them too: contacts are re-found).
        pipeline_state = self._pipeline.init(self.system, position, velocity)

        def frame(pipeline_state, _):
            return self._pipeline.step(self.system, pipeline_state, action), None

        pipeline_state, _ = jax.lax.scan(frame, pipeline_state, None, length=N_FRAMES)
        return pipeline_state.q, pipeline_state.qd

    def _obs(self, state: BraxGoalState, params: BraxGoalParams) -> jax.Array:
        return jnp.concatenate(
            [state.position, state.velocity, jnp.asarray(params.goal, jnp.float32)]
        )

    def reset(self, key: jax.Array, params: BraxGoalParams):
        del key  # deterministic: the start is part of the task, at rest
        state = BraxGoalState(
            position=jnp.asarray(params.start, jnp.float32),
            velocity=jnp.zeros(2, jnp.float32),
            time=jnp.int32(0),
        )
        return self._obs(state, params), state

    def step(self, key: jax.Array, state: BraxGoalState, action: jax.Array, params: BraxGoalParams):
        """`action` [2] in [-1, 1] (clipped): the force along x and y, / MAX_FORCE."""
        del key
        position, velocity = self.physics(state.position, state.velocity, action)
        state = BraxGoalState(position=position, velocity=velocity, time=state.time + 1)
        obs = self._obs(state, params)
        reward, reached, truncated = self.score_step(obs, state.time)
        info = {"reached": reached, "distance": jnp.linalg.norm(position - params.goal)}
        return obs, state, reward, reached, truncated, info

    # -- rendering -----------------------------------------------------------------------

    def render(self, state: BraxGoalState, params: BraxGoalParams, pixels: int = 128) -> np.ndarray:
        """RGB image [pixels, pixels, 3] uint8, top-down, y upwards (numpy, not jittable).

        Walls black, the goal's tolerance disc green, the start a light blue dot, the
        ball a dark blue disc of its radius.
        """
        image, grid = self._draw_points(
            params, state.position, pixels, 1.5 / pixels + 0.005, max(RADIUS, 1.5 / pixels)
        )
        image[box_distance(grid, np.asarray(self.boxes, np.float64)).min(-1) <= 0] = (0, 0, 0)
        return image
