"""Stump Tracks (TeachMyAgent, Romac et al. 2021) on jax2d: a walker crosses a track of
procedurally generated stumps.

Task (2-D): stump height mean mu in [0, 3] and spacing s in [0, 6]. Each stump's height
is max(0.05, N(mu, 0.1)) in TeachMyAgent's height unit (one TERRAIN_STEP); negative means
(the trivial challenge's [-3, 3]) all give 0.05, the smallest stumps.

Geometry, in world units (Box2D's metres = TeachMyAgent pixels / 30), as TeachMyAgent:

| quantity | value |
|---|---|
| TERRAIN_STEP | 14 / 30 = 0.467 |
| track | 0 to 200 steps = 93.3; the episode ends (reached) past 190 steps = 88.7 |
| start pad | 20 steps = 9.33, flat; the walker starts at its middle, x = 4.67 |
| stump | width 1 step = 0.467, height h * 0.467 for a drawn h; the first at x = 9.33 |
| spacing s | flat gap between stumps, in units, floored at 0.01 (s = 0: back to back) |
| classic leg | two segments of 34 / 30 = 1.133, so 2.267 = 4.86 height units |

So a stump of height 3 is 1.4 units, 62% of the classic walker's leg, as in
TeachMyAgent; the unfeasible challenge's 9 is 4.2 units, taller than the whole walker.

Observation (classic walker: 24, as BipedalWalker's): hull angle, 2 * angular speed /
FPS, 0.3 * vx * (600 / 30) / FPS, 0.3 * vy * (400 / 30) / FPS; per leg: hip angle, hip
speed / 4, knee angle + 1, knee speed / 6, lower-leg ground contact; then 10 lidar
fractions. Lidar ray i leaves the hull centre at 1.5 i / 10 rad from straight down
towards +x, range 160 / 30; it is computed analytically against the ground line and the
stump boxes (jax2d has no ray casting).

Actions: [-1, 1]^(2 * legs), one per motor; action a sets the joint's target speed,
a * 4 rad/s (hips) or a * 6 rad/s (knees), which the motor reaches with a torque of at
most 80 (the spider's 100): Box2D's revolute motor, a velocity constraint solved with the
joints and contacts (`walkers.WalkerEngine`). TeachMyAgent instead sets the torque cap
to 80 |a| and the target to full speed in the direction of a, so there a = 0 leaves a
joint limp where here it holds the joint still.

Reward, per step: shaping = 130 x / 30 - 5 |hull angle|, reward = shaping change minus
a motor cost; -100 and the end of the episode when the hull touches terrain or x < 0.
Motor cost: TeachMyAgent charges torque_penalty * 80 * |a| per motor, because in Box2D
|a| sets the torque, which motors nearly always use in full. Here a sets a target
*speed* and the motor applies what its constraint needs, up to the cap; we charge
torque_penalty * 80 * |impulse| / (cap * dt), the share of the cap the motor really
applied this step, so a motor that meets its speed without load costs little.

Success: return > 230. The shaping pays 130 / 30 = 4.33 per unit: 364 from the start to
the finish line, 182 to halfway (tests/test_stump_tracks.py checks both ends with a
scripted traverse).

Episode: at most 2,000 steps at 50 steps per second (Box2D's FPS).

Physics, against Box2D's BipedalWalker (dt = 1 / 50; Box2D runs 180 velocity
iterations a step there):
- motors: `walkers.WalkerEngine` solves Box2D's motor inside jax2d's constraint loop.
  jax2d's own motor is one explicit impulse per step; capped at 80 N m it kicks a knee
  (axial inertia 0.015) by up to 107 rad/s a step, so the walker chattered, broke its
  joint limits (a knee at +0.72 against a limit of -0.1) and fell.
- solver: SOLVER_ITERATIONS = 20 jax2d iterations, joint_stiffness 1.0 (jax2d's 0.6
  under-relaxes the joints) and contact Baumgarte 0.1 (jax2d's 0.2 makes feet bounce).
  The hull (6 kg) stands on legs of 0.3 kg (small: 0.15 kg), and Gauss-Seidel carries
  that weight down to the feet only over many iterations. Measured with
  `scripted.stump_tracks_stance` on the flat task, 4 episodes of 2,000 steps: at 5
  iterations the classic walker rocks (hull speed ~0.6 m/s) and 1 in 4 falls, and every
  small walker falls; at 10 the classic walker stands (0.03 m/s) but every small walker
  still falls; at 20 the classic walker and the spider come to rest (hull speed < 0.01
  m/s) and the small walker stands but sways (~0.25 m/s). Cost, 64 envs on 2 CPU cores:
  ~1,900 steps/s at 20 iterations, ~3,450 at 5 (per 6,400 env steps, ~1.4 s of
  collision detection plus ~0.1 s per iteration).
- friction: Box2D's mixed frictions (legs on terrain 0.71, hull 0.5), rebuilt under
  jax2d's different mixing rule (`walkers.build_template`).
- joint limits hold to within ~0.13 rad under random actions while an episode runs
  (~0.2 once the walker lies fallen); the knees start straight, 0.1 past their -0.1
  limit, as in Box2D.

Physics departures, for speed: jax2d checks every pair of polygons each step, so only
`num_stump_slots` stumps (default 8) are physical at a time: the first stump that
ends past the walker's rearmost vertex (less 0.1) and the next ones. Stump i always
occupies slot i mod num_stump_slots, so a stump keeps its contact cache while it is near
the walker. Eight slots cover 3.8 units of back-to-back stumps; the classic walker spans
at most 3.1 (hull 2.1, a leg stretched forward 2.0 from the centre), the spider 3.3. The
lidar sees every stump.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces
from jax2d.sim_state import SimParams, SimState

from acl.core.spaces import NON_NEGATIVE, Box, Limit
from envs._checks import positive_int
from envs.base import TaskEnv
from envs.registry import ENVS
from envs.walkers import (
    JAX2D_BASE_FRICTION,
    SCALE,
    SceneLayout,
    WalkerBody,
    WalkerEngine,
    build_template,
    get_body,
)

FPS = 50
TERRAIN_STEP = 14 / SCALE
TERRAIN_LENGTH = 200
TERRAIN_END = 10
TERRAIN_STARTPAD = 20
TERRAIN_HEIGHT = 400 / SCALE / 4
TRACK_END = TERRAIN_LENGTH * TERRAIN_STEP
FINISH_X = (TERRAIN_LENGTH - TERRAIN_END) * TERRAIN_STEP
START_X = TERRAIN_STEP * TERRAIN_STARTPAD / 2
FIRST_STUMP_X = TERRAIN_STEP * TERRAIN_STARTPAD
STUMP_WIDTH = TERRAIN_STEP
MIN_SPACING = 0.01
MIN_STUMP_HEIGHT = 0.05
STUMP_HEIGHT_STD = 0.1
MAX_STUMPS = math.ceil((TRACK_END - FIRST_STUMP_X) / (STUMP_WIDTH + MIN_SPACING))
FRICTION = 2.5
GRAVITY = 10.0

NUM_LIDAR = 10
LIDAR_RANGE = 160 / SCALE
LIDAR_ANGLES = 1.5 * np.arange(NUM_LIDAR) / NUM_LIDAR
SHAPING_PER_UNIT = 130 / SCALE
HULL_ANGLE_COST = 5.0
FALL_REWARD = -100.0
FOOTPRINT_MARGIN = 0.1
"""Stumps this far behind the walker's rear end are still physical [units]."""
INITIAL_PUSH = 5.0
"""Largest horizontal force on the hull in the first step, as TeachMyAgent's INITIAL_RANDOM."""

SUCCESS_THRESHOLD = 230.0

SOLVER_ITERATIONS = 20
"""jax2d velocity iterations per physics step (see the module docstring, Physics)."""
JOINT_STIFFNESS = 1.0
"""jax2d's joint impulse scale (its default 0.6 under-relaxes the joints)."""
CONTACT_BAUMGARTE = 0.1
"""jax2d's contact penetration correction (its default 0.2 makes feet bounce)."""


@struct.dataclass
class StumpTracksParams:
    """What a teacher may change: the task, in TeachMyAgent's units."""

    stump_height: jax.Array = 0.0
    """Mean stump height, in TERRAIN_STEP units."""
    stump_spacing: jax.Array = 6.0
    """Flat gap between stumps [units]."""


@struct.dataclass
class Track:
    """One generated track; stumps sorted by x, padded to MAX_STUMPS."""

    left: jax.Array
    """[MAX_STUMPS] left edge of each stump [units]; +inf past the last."""
    height: jax.Array
    """[MAX_STUMPS] stump height [units]; 0 past the last."""
    count: jax.Array
    """Number of real stumps."""


@struct.dataclass
class StumpTracksState:
    sim: SimState
    track: Track
    prev_shaping: jax.Array
    """Shaping after the previous step (rewards are its differences)."""
    time: jax.Array
    """Steps taken in this episode."""
    leg_contact: jax.Array
    """[legs] lower leg touching terrain after the last step."""


def generate_track(key: jax.Array, params: StumpTracksParams) -> Track:
    """Stumps from the start pad to the end of the track, as TeachMyAgent lays them."""
    spacing = jnp.maximum(MIN_SPACING, params.stump_spacing)
    index = jnp.arange(MAX_STUMPS)
    left = FIRST_STUMP_X + index * (STUMP_WIDTH + spacing)
    real = left < TRACK_END
    drawn = params.stump_height + STUMP_HEIGHT_STD * jax.random.normal(key, (MAX_STUMPS,))
    height = jnp.maximum(MIN_STUMP_HEIGHT, drawn) * TERRAIN_STEP
    return Track(
        left=jnp.where(real, left, jnp.inf).astype(jnp.float32),
        height=jnp.where(real, height, 0.0).astype(jnp.float32),
        count=real.sum(),
    )


def lidar(origin: jax.Array, track: Track) -> jax.Array:
    """Fraction of LIDAR_RANGE at which each ray first meets terrain: [NUM_LIDAR] in (0, 1].

    Slab test of each ray against each stump box [left, left + w] x [ground, ground + h]
    and the ground line; every stump of the track is tested (cheap next to physics).
    """
    direction = jnp.stack([jnp.sin(LIDAR_ANGLES), -jnp.cos(LIDAR_ANGLES)], -1)  # [R, 2]
    dx, dy = direction[:, 0], direction[:, 1]
    ground_t = jnp.where(dy < 0, (TERRAIN_HEIGHT - origin[1]) / jnp.minimum(dy, -1e-6), jnp.inf)
    ground_t = jnp.where(ground_t < 0, 0.0, ground_t)

    x0 = track.left[None, :]
    x1 = x0 + STUMP_WIDTH
    y0 = jnp.full_like(x0, TERRAIN_HEIGHT)
    y1 = TERRAIN_HEIGHT + track.height[None, :]

    def slab(lo, hi, o, d):
        safe = jnp.where(jnp.abs(d) < 1e-9, 1e-9, d)[:, None]
        t0, t1 = (lo - o) / safe, (hi - o) / safe
        return jnp.minimum(t0, t1), jnp.maximum(t0, t1)

    tx0, tx1 = slab(x0, x1, origin[0], dx)
    ty0, ty1 = slab(y0, y1, origin[1], dy)
    t_enter = jnp.maximum(jnp.maximum(tx0, ty0), 0.0)
    t_exit = jnp.minimum(tx1, ty1)
    hit = (t_enter <= t_exit) & jnp.isfinite(x0)
    stump_t = jnp.where(hit, t_enter, jnp.inf).min(axis=1)
    t = jnp.minimum(ground_t, stump_t)
    return jnp.clip(t / LIDAR_RANGE, 0.0, 1.0)


@dataclass(frozen=True)
class _Contacts:
    """Which jax2d polygon-pair manifolds mean a part touches terrain."""

    hull: np.ndarray
    """[pairs] bool: (terrain, hull) pairs."""
    lower: np.ndarray
    """[legs, pairs] bool: (terrain, lower leg i) pairs."""


def _contact_pairs(layout: SceneLayout, engine: WalkerEngine) -> _Contacts:
    pairs = np.asarray(engine.poly_poly_pairs)  # get_pairwise_interaction_indices' order
    terrain = pairs[:, 0] < layout.num_static

    def with_part(part: int) -> np.ndarray:
        return terrain & (pairs[:, 1] == part)

    lower = np.stack([with_part(layout.lower(i)) for i in range(layout.body.num_legs)])
    return _Contacts(hull=with_part(layout.hull), lower=lower)


@functools.cache
def _scene(body: str, num_stump_slots: int, solver_iterations: int):
    """(layout, jax2d static params, engine, scene at rest, contact pairs) of one static
    config. Building them runs hundreds of small eager jax2d ops (about a second), and a
    benchmark suite builds an env per teacher and student: envs of one config share them,
    as they hold only immutable arrays."""
    layout = SceneLayout(num_stump_slots=num_stump_slots, body=get_body(body))
    static_params = layout.static_params(solver_iterations)
    engine = WalkerEngine(static_params, layout)
    template = build_template(
        layout,
        static_params,
        ground_top=TERRAIN_HEIGHT,
        ground_span=(-TRACK_END, 2 * TRACK_END),
        hull_position=(START_X, TERRAIN_HEIGHT + layout.body.stance_height),
        friction=FRICTION,
        gravity=GRAVITY,
    )
    joints = template.joint
    assert [tuple(p) for p in zip(joints.a_index.tolist(), joints.b_index.tolist())] == list(
        layout.joint_pairs
    ), "jax2d joint order differs from SceneLayout.joint_pairs"
    return layout, static_params, engine, template, _contact_pairs(layout, engine)


@ENVS.register("stump_tracks")
class StumpTracks(TaskEnv):
    """TeachMyAgent's Stump Tracks on jax2d; one program per walker body.

    Static config: `body` (classic_bipedal, small_bipedal, spider), `max_episode_steps`
    (2000), `num_stump_slots` (8), `solver_iterations` (jax2d's; default SOLVER_ITERATIONS = 20).
    """

    name = "stump_tracks"
    task_space = Box(
        low=(0.0, 0.0),
        high=(3.0, 6.0),
        names=("stump_height", "stump_spacing"),
        units=("terrain steps", "units"),
        default=(0.0, 6.0),
        # Any mean height: the trivial variant's negative ones give the smallest stumps.
        limits=(Limit(), NON_NEGATIVE),
    )
    unfeasible_bounds = task_space.replace(
        low=(0.0, 0.0), high=(9.0, 6.0), field_name="unfeasible_bounds"
    )
    trivial_bounds = task_space.replace(
        low=(-3.0, 0.0), high=(3.0, 6.0), field_name="trivial_bounds"
    )
    success_threshold = SUCCESS_THRESHOLD

    def __init__(
        self,
        body: str = "classic_bipedal",
        max_episode_steps: int | None = None,
        num_stump_slots: int = 8,
        solver_iterations: int = SOLVER_ITERATIONS,
    ):
        self.body: WalkerBody = get_body(body)
        self.max_episode_steps = positive_int(max_episode_steps, "env.max_episode_steps") or 2000
        positive_int(num_stump_slots, "env.num_stump_slots", allow_none=False)
        positive_int(solver_iterations, "env.solver_iterations", allow_none=False)
        scene = _scene(body, num_stump_slots, solver_iterations)
        self.layout, self.static_params, self.engine, self._template, self._contacts = scene
        self.sim_params = SimParams(
            dt=1.0 / FPS,
            clip_position=2.0 * TRACK_END,
            base_friction=JAX2D_BASE_FRICTION,
            joint_stiffness=JOINT_STIFFNESS,
            baumgarte_coefficient_collision=CONTACT_BAUMGARTE,
        )
        speeds = [self.body.hip_speed, self.body.knee_speed] * self.body.num_legs
        self._max_speed = np.asarray(speeds, np.float32)
        max_cost = self.body.num_motors * self.body.torque_penalty * 80.0 * self.max_episode_steps
        finish = SHAPING_PER_UNIT * (FINISH_X - START_X)
        self.return_bounds = (FALL_REWARD - max_cost - HULL_ANGLE_COST * math.pi, finish + 10.0)

    # -- task and spaces ---------------------------------------------------------------

    def default_params(self) -> StumpTracksParams:
        return StumpTracksParams(
            stump_height=jnp.float32(self.task_space.default[0]),
            stump_spacing=jnp.float32(self.task_space.default[1]),
        )

    def task_to_params(self, task: jax.Array, base_params: StumpTracksParams) -> StumpTracksParams:
        """task [2] = (stump height mean, spacing) -> params."""
        task = jnp.asarray(task, jnp.float32)
        return base_params.replace(stump_height=task[0], stump_spacing=task[1])

    @property
    def obs_size(self) -> int:
        return 4 + 5 * self.body.num_legs + NUM_LIDAR

    def observation_space(self) -> spaces.Box:
        return spaces.Box(low=-jnp.inf, high=jnp.inf, shape=(self.obs_size,), dtype=jnp.float32)

    def action_space(self) -> spaces.Box:
        return spaces.Box(low=-1.0, high=1.0, shape=(self.body.num_motors,), dtype=jnp.float32)

    # -- dynamics ----------------------------------------------------------------------

    def reset(self, key: jax.Array, params: StumpTracksParams):
        track_key, push_key = jax.random.split(key)
        track = generate_track(track_key, params)
        sim = self._template
        hull = self.layout.hull
        hull_mass = 1.0 / sim.polygon.inverse_mass[hull]
        push = jax.random.uniform(push_key, (), minval=-INITIAL_PUSH, maxval=INITIAL_PUSH)
        velocity = sim.polygon.velocity.at[hull, 0].set(push / FPS / hull_mass)
        sim = self._place_stumps(sim.replace(polygon=sim.polygon.replace(velocity=velocity)), track)
        state = StumpTracksState(
            sim=sim,
            track=track,
            prev_shaping=self._shaping(sim),
            time=jnp.int32(0),
            leg_contact=jnp.zeros(self.body.num_legs, bool),
        )
        return self._observation(state), state

    def step(self, key: jax.Array, state: StumpTracksState, action: jax.Array, params):
        """`action` [motors] in [-1, 1] (clipped): target joint speeds as a share of the max."""
        del key, params
        action = jnp.clip(jnp.asarray(action, jnp.float32), -1.0, 1.0)
        sim = state.sim
        sim = sim.replace(joint=sim.joint.replace(motor_speed=self._max_speed * action))
        # All-zero jax2d motor (and thruster) actions: WalkerEngine solves the motors.
        off = jnp.zeros(self.static_params.num_joints + self.static_params.num_thrusters)
        sim, (rr, _, _) = self.engine.step(sim, self.sim_params, off)
        motor_cost = self._motor_cost(sim)
        touching = rr.active
        sim = self._place_stumps(sim, state.track)
        hull_contact = jnp.any(touching & self._contacts.hull)
        leg_contact = jnp.any(touching[None, :] & self._contacts.lower, axis=1)
        shaping = self._shaping(sim)
        x = sim.polygon.position[self.layout.hull, 0]
        fell = hull_contact | (x < 0.0)
        reward = jnp.where(fell, FALL_REWARD, shaping - state.prev_shaping - motor_cost)
        time = state.time + 1
        terminated = fell | (x > FINISH_X)
        truncated = (time >= self.max_episode_steps) & ~terminated
        state = StumpTracksState(
            sim=sim, track=state.track, prev_shaping=shaping, time=time, leg_contact=leg_contact
        )
        info = {"hull_x": x, "fell": fell}
        return (
            self._observation(state),
            state,
            reward.astype(jnp.float32),
            terminated,
            truncated,
            info,
        )

    # -- pieces ------------------------------------------------------------------------

    def _shaping(self, sim: SimState) -> jax.Array:
        hull = self.layout.hull
        return SHAPING_PER_UNIT * sim.polygon.position[hull, 0] - HULL_ANGLE_COST * jnp.abs(
            sim.polygon.rotation[hull]
        )

    def _motor_cost(self, sim: SimState) -> jax.Array:
        """Cost of the step just taken: each motor's impulse as a share of its cap."""
        joint = sim.joint
        cap = joint.motor_power * self.sim_params.dt
        share = jnp.abs(joint.acc_r_impulse) / jnp.where(cap > 0, cap, 1.0)
        return self.body.torque_penalty * 80.0 * share.sum()

    def _place_stumps(self, sim: SimState, track: Track) -> SimState:
        """Move the stumps near the walker into the physics slots (stump i -> slot i mod K)."""
        k = self.layout.num_stump_slots
        right = track.left + STUMP_WIDTH
        first = jnp.searchsorted(right, self._walker_back(sim) - FOOTPRINT_MARGIN)
        slot = jnp.arange(k)
        index = first + (slot - first) % k
        index_c = jnp.minimum(index, MAX_STUMPS - 1)
        real = index < track.count
        left = jnp.where(real, track.left[index_c], 0.0)
        height = jnp.where(real, track.height[index_c], 1.0)
        # Stumps sink 0.5 units into the ground so no seam is left for a foot to catch.
        bottom = TERRAIN_HEIGHT - 0.5
        centre = jnp.stack([left + STUMP_WIDTH / 2, (bottom + TERRAIN_HEIGHT + height) / 2], -1)
        half_w = STUMP_WIDTH / 2
        half_h = (TERRAIN_HEIGHT + height - bottom) / 2
        vertices = jnp.stack(
            [
                jnp.stack([-half_w * jnp.ones(k), half_h], -1),
                jnp.stack([half_w * jnp.ones(k), half_h], -1),
                jnp.stack([half_w * jnp.ones(k), -half_h], -1),
                jnp.stack([-half_w * jnp.ones(k), -half_h], -1),
            ],
            1,
        )
        s = slice(self.layout.first_stump, self.layout.num_static)
        poly = sim.polygon
        return sim.replace(
            polygon=poly.replace(
                position=poly.position.at[s].set(centre),
                vertices=poly.vertices.at[s].set(vertices),
                active=poly.active.at[s].set(real),
            )
        )

    def _walker_back(self, sim: SimState) -> jax.Array:
        """Smallest x of any walker vertex (the walker's rear end)."""
        parts = slice(self.layout.hull, self.layout.num_polygons)
        p = sim.polygon
        cos, sin = jnp.cos(p.rotation[parts]), jnp.sin(p.rotation[parts])
        vx, vy = p.vertices[parts, :, 0], p.vertices[parts, :, 1]
        world_x = p.position[parts, 0][:, None] + cos[:, None] * vx - sin[:, None] * vy
        return world_x.min()

    def _observation(self, state: StumpTracksState) -> jax.Array:
        sim, layout, body = state.sim, self.layout, self.body
        hull = layout.hull
        p = sim.polygon
        velocity = p.velocity[hull]
        head = jnp.stack(
            [
                p.rotation[hull],
                2.0 * p.angular_velocity[hull] / FPS,
                0.3 * velocity[0] * (600 / SCALE) / FPS,
                0.3 * velocity[1] * (400 / SCALE) / FPS,
            ]
        )
        a, b = sim.joint.a_index, sim.joint.b_index
        angle = p.rotation[b] - p.rotation[a]
        speed = p.angular_velocity[b] - p.angular_velocity[a]
        hips, knees = slice(0, None, 2), slice(1, None, 2)
        legs = jnp.stack(
            [
                angle[hips],
                speed[hips] / body.hip_speed,
                angle[knees] + 1.0,
                speed[knees] / body.knee_speed,
                state.leg_contact.astype(jnp.float32),
            ],
            -1,
        ).reshape(-1)
        rays = lidar(p.position[hull], state.track)
        return jnp.concatenate([head, legs, rays]).astype(jnp.float32)

    # -- helpers for tests, scripts and rendering --------------------------------------

    def hull_x(self, state: StumpTracksState) -> jax.Array:
        return state.sim.polygon.position[self.layout.hull, 0]
