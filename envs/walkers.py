"""Walker bodies for Stump Tracks, as static config, and their jax2d scene.

Units are jax2d world units, which equal Box2D's: TeachMyAgent draws in pixels and
divides by SCALE = 30, so a 34-pixel leg segment is 34 / 30 = 1.133 units here too.

A body is a hull plus legs of two motorised segments (hip, knee), each a box. The
observation and action sizes follow from the number of legs, so a body is static
config: one compiled program per body.

| body | hull (w x h) | legs | segment (upper, lower) | leg length | motors |
|---|---|---|---|---|---|
| `classic_bipedal` | 2.133 x 0.567 | 2 | 0.267 x 1.133, 0.213 x 1.133 | 2.267 | 4 |
| `small_bipedal` | 2.133 x 0.567 | 2 | 0.267 x 0.567, 0.213 x 0.567 | 1.133 | 4 |
| `spider` | 0.667 x 0.667 | 4 | 0.200 x 0.667, 0.160 x 0.667 | 1.333 | 8 |

Departures from TeachMyAgent's bodies, all for jax2d:
- the hull is a box, not Box2D's 5-vertex polygon (jax2d polygons have at most 4
  vertices here, and each vertex costs in every contact test);
- TeachMyAgent's spider has three segments per leg and starts with splayed legs; ours has
  two and starts upright, which keeps the same observation layout as the bipeds;
- motors are Box2D's (a target speed, reached with a capped torque), solved by
  `WalkerEngine` inside jax2d's constraint loop; the action sets the target speed, where
  TeachMyAgent's sets the torque cap (see `envs/stump_tracks.py`);
- friction is Box2D's mixed friction rebuilt under jax2d's mixing rule
  (`build_template`).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from jax2d import engine as j2d_engine
from jax2d.engine import PhysicsEngine
from jax2d.scene import add_rectangle_to_scene, add_revolute_joint_to_scene
from jax2d.sim_state import SimParams, SimState, StaticSimParams

from acl.core.errors import ConfigError

SCALE = 30.0
"""Pixels per world unit in TeachMyAgent; body sizes below are its pixels / SCALE."""

JAX2D_BASE_FRICTION = 1.0
"""SimParams.base_friction the scene is built for (see `build_template`)."""

# jax2d collision modes: walker parts (0) touch only terrain (2), never each other,
# like Box2D's category/mask bits in BipedalWalker.
WALKER_COLLISION_MODE = 0
TERRAIN_COLLISION_MODE = 2


@dataclass(frozen=True)
class Leg:
    """One leg: a hip on the hull and two box segments hanging straight down."""

    hip_x: float
    """Hip anchor along the hull, from the hull centre [units]."""
    upper: tuple[float, float]
    """Upper segment (width, height) [units]."""
    lower: tuple[float, float]
    """Lower segment (width, height) [units]; its ground contact is observed."""


@dataclass(frozen=True)
class WalkerBody:
    """Static description of a walker; hashable, so it can key a compiled program."""

    name: str
    hull: tuple[float, float]
    """Hull (width, height) [units]."""
    legs: tuple[Leg, ...]
    hip_y: float = 0.0
    """Hip anchors' height from the hull centre [units]."""
    hull_density: float = 5.0
    leg_density: float = 1.0
    hull_friction: float = 0.1
    """Box2D fixture friction of the hull (BipedalWalker's HULL_FD)."""
    leg_friction: float = 0.2
    """Box2D fixture friction of the legs: BipedalWalker's LEG_FD / LOWER_FD set none, so
    Box2D's default 0.2."""
    hip_limits: tuple[float, float] = (-0.8, 1.1)
    knee_limits: tuple[float, float] = (-1.6, -0.1)
    hip_speed: float = 4.0
    """Hip target speed at |action| = 1 [rad/s] (Box2D's SPEED_HIP)."""
    knee_speed: float = 6.0
    """Knee target speed at |action| = 1 [rad/s] (Box2D's SPEED_KNEE)."""
    motor_torque: float = 80.0
    """Largest motor torque (Box2D's MOTORS_TORQUE); sets jax2d's motor power."""
    torque_penalty: float = 0.00035
    """TeachMyAgent's TORQUE_PENALTY: a full-torque motor costs 80 * this per step."""

    @property
    def num_legs(self) -> int:
        return len(self.legs)

    @property
    def num_motors(self) -> int:
        return 2 * self.num_legs

    @property
    def num_parts(self) -> int:
        return 1 + 2 * self.num_legs

    @property
    def leg_length(self) -> float:
        return max(leg.upper[1] + leg.lower[1] for leg in self.legs)

    @property
    def stance_height(self) -> float:
        """Hull centre above the ground with straight legs [units]."""
        return self.leg_length - self.hip_y

    @property
    def reach(self) -> float:
        """Farthest any part can be from the hull centre along x [units]."""
        return max(self.hull[0] / 2, max(abs(leg.hip_x) for leg in self.legs) + self.leg_length)


_CLASSIC_LEG = dict(upper=(8 / SCALE, 34 / SCALE), lower=(0.8 * 8 / SCALE, 34 / SCALE))
_SMALL_LEG = dict(upper=(8 / SCALE, 17 / SCALE), lower=(0.8 * 8 / SCALE, 17 / SCALE))
_SPIDER_LEG = dict(upper=(6 / SCALE, 20 / SCALE), lower=(0.8 * 6 / SCALE, 20 / SCALE))

BODIES: dict[str, WalkerBody] = {
    "classic_bipedal": WalkerBody(
        name="classic_bipedal",
        hull=(64 / SCALE, 17 / SCALE),
        legs=(Leg(hip_x=0.0, **_CLASSIC_LEG), Leg(hip_x=0.0, **_CLASSIC_LEG)),
        hip_y=-8 / SCALE,
    ),
    "small_bipedal": WalkerBody(
        name="small_bipedal",
        hull=(64 / SCALE, 17 / SCALE),
        legs=(Leg(hip_x=0.0, **_SMALL_LEG), Leg(hip_x=0.0, **_SMALL_LEG)),
        hip_y=-8 / SCALE,
    ),
    "spider": WalkerBody(
        name="spider",
        hull=(20 / SCALE, 20 / SCALE),
        legs=tuple(Leg(hip_x=x, **_SPIDER_LEG) for x in (10 / SCALE, -10 / SCALE) * 2),
        hip_y=-4 / SCALE,
        motor_torque=100.0,
        torque_penalty=0.00035 / 2,
    ),
}


def get_body(name: str) -> WalkerBody:
    if name not in BODIES:
        raise ConfigError(f"unknown walker body {name!r}; known: {', '.join(sorted(BODIES))}")
    return BODIES[name]


@dataclass(frozen=True)
class SceneLayout:
    """Where everything lives in jax2d's polygon array (static terrain first)."""

    num_stump_slots: int
    body: WalkerBody

    ground: int = 0

    @property
    def first_stump(self) -> int:
        return 1

    @property
    def num_static(self) -> int:
        return 1 + self.num_stump_slots

    @property
    def hull(self) -> int:
        return self.num_static

    def upper(self, leg: int) -> int:
        return self.num_static + 1 + 2 * leg

    def lower(self, leg: int) -> int:
        return self.num_static + 2 + 2 * leg

    @property
    def joint_pairs(self) -> tuple[tuple[int, int], ...]:
        """(a, b) polygon indices of each joint, in jax2d's joint order, which is the
        action layout: per leg, the hip (hull, upper), then the knee (upper, lower)."""
        pairs = []
        for i in range(self.body.num_legs):
            pairs += [(self.hull, self.upper(i)), (self.upper(i), self.lower(i))]
        return tuple(pairs)

    @property
    def num_polygons(self) -> int:
        return self.num_static + self.body.num_parts

    def static_params(self, solver_iterations: int) -> StaticSimParams:
        return StaticSimParams(
            num_polygons=self.num_polygons,
            num_circles=2,  # jax2d builds circle-pair tables that need at least 2 (inactive here)
            num_joints=self.body.num_motors,
            num_thrusters=1,  # likewise at least 1 (inactive)
            max_polygon_vertices=4,
            num_solver_iterations=solver_iterations,
            num_static_fixated_polys=self.num_static,
        )


def _box_vertices(width: float, height: float) -> jnp.ndarray:
    """Clockwise from the top-left corner, as jax2d wants."""
    w, h = width / 2, height / 2
    return jnp.array([[-w, h], [w, h], [w, -h], [-w, -h]], jnp.float32)


def build_template(
    layout: SceneLayout,
    static: StaticSimParams,
    ground_top: float,
    ground_span: tuple[float, float],
    hull_position: tuple[float, float],
    friction: float,
    gravity: float,
) -> SimState:
    """The scene at rest: ground, inactive stump slots, the walker standing at
    `hull_position` with straight legs. Built once per env; resets only move it.

    Friction: Box2D mixes two fixtures' frictions as sqrt(a * b), jax2d as base_friction
    * sqrt(a^2 + b^2). So terrain gets friction 0 and each walker part its Box2D mix with
    the terrain's `friction`, sqrt(friction * part friction), under JAX2D_BASE_FRICTION
    = 1: legs on terrain sqrt(2.5 * 0.2) = 0.71 and the hull 0.5, as in BipedalWalker.
    """
    body = layout.body
    hull_mu = float(np.sqrt(friction * body.hull_friction)) / JAX2D_BASE_FRICTION
    leg_mu = float(np.sqrt(friction * body.leg_friction)) / JAX2D_BASE_FRICTION
    sim = j2d_engine.create_empty_sim(static, add_floor=False, add_walls_and_ceiling=False)
    sim = sim.replace(gravity=jnp.array([0.0, -gravity], jnp.float32))
    x0, x1 = ground_span
    depth = 10.0
    sim, _ = add_rectangle_to_scene(
        sim,
        static,
        jnp.array([(x0 + x1) / 2, ground_top - depth / 2]),
        jnp.array([x1 - x0, depth]),
        friction=0.0,
        fixated=True,
    )
    for _ in range(layout.num_stump_slots):
        sim, _ = add_rectangle_to_scene(
            sim,
            static,
            jnp.array([x0, ground_top]),
            jnp.array([0.5, 0.5]),
            friction=0.0,
            fixated=True,
        )
    hx, hy = hull_position
    sim, _ = add_rectangle_to_scene(
        sim,
        static,
        jnp.array([hx, hy]),
        jnp.array(body.hull),
        density=body.hull_density,
        friction=hull_mu,
    )
    for leg in body.legs:
        hip = (hx + leg.hip_x, hy + body.hip_y)
        uw, uh = leg.upper
        lw, lh = leg.lower
        sim, _ = add_rectangle_to_scene(
            sim,
            static,
            jnp.array([hip[0], hip[1] - uh / 2]),
            jnp.array([uw, uh]),
            density=body.leg_density,
            friction=leg_mu,
        )
        sim, _ = add_rectangle_to_scene(
            sim,
            static,
            jnp.array([hip[0], hip[1] - uh - lh / 2]),
            jnp.array([lw, lh]),
            density=body.leg_density,
            friction=leg_mu,
        )
    for m in range(body.num_motors):  # per leg, hip then knee (SceneLayout.joint_pairs)
        i, leg = m // 2, body.legs[m // 2]
        uh, lh = leg.upper[1], leg.lower[1]
        if m % 2:
            anchors = (jnp.array([0.0, -uh / 2]), jnp.array([0.0, lh / 2]))
            parts, limits = (layout.upper(i), layout.lower(i)), body.knee_limits
        else:
            anchors = (jnp.array([leg.hip_x, body.hip_y]), jnp.array([0.0, uh / 2]))
            parts, limits = (layout.hull, layout.upper(i)), body.hip_limits
        sim, _ = add_revolute_joint_to_scene(
            sim,
            static,
            *parts,
            *anchors,
            motor_on=True,
            motor_speed=0.0,
            motor_power=body.motor_torque,
            has_joint_limits=True,
            min_rotation=limits[0],
            max_rotation=limits[1],
        )
    modes = np.full(layout.num_polygons, WALKER_COLLISION_MODE)
    modes[: layout.num_static] = TERRAIN_COLLISION_MODE
    active = np.ones(layout.num_polygons, bool)
    active[layout.first_stump : layout.num_static] = False
    sim = sim.replace(
        polygon=sim.polygon.replace(collision_mode=jnp.asarray(modes), active=jnp.asarray(active))
    )
    return sim


class WalkerEngine(PhysicsEngine):
    """jax2d's engine with Box2D's revolute motor: a velocity constraint in the solver.

    jax2d's own motor (`jax2d.joint.apply_motor`) is one explicit impulse per step,
    before the solver, of size power * tanh(decay * speed error). On the walker's light
    leg links (a knee's axial inertia is 0.015) a cap of 80 N m makes that a 1.6 N m s
    kick, 107 rad/s of relative speed, so a motor overshoots its target speed ~100-fold
    and chatters at full torque; weaker calibrations cannot carry the hull's weight
    (measured: with motor_decay_coefficient 0.02-2 and motor power 0.03-1 x the cap, a
    joint-angle P controller lost the classic walker within 130 steps every time).
    Box2D instead solves the motor in every velocity iteration with the joints and
    contacts: impulse = -axial_mass * (w_b - w_a - target), its sum over the step clamped
    to +-max_torque * dt, warm-started from the last step. That is what this engine does:
    before jax2d's joint pass in each solver iteration, each motor in turn (Gauss-Seidel,
    in joint order) applies that impulse. The accumulated impulse lives in
    `joint.acc_r_impulse` (jax2d keeps it only for fixed joints and zeroes it for revolute
    ones in each joint pass; we restore it after), so jax2d's warm start applies last
    step's motor impulse at the start of the next, as Box2D's does.

    Per joint, the scene stores `motor_speed` = this step's target speed [rad/s] (the env
    sets it from the action before each step) and `motor_power` = the largest torque
    [N m]. Pass zero motor actions to `step`, so jax2d's explicit motor stays off.
    Relies on jax2d 1.0.2's solver layout (`j_fn` called once per solver iteration).
    """

    def __init__(self, static_params: StaticSimParams, layout: SceneLayout):
        super().__init__(static_params)
        self.motor_pairs = layout.joint_pairs
        resolve_joints = self.j_fn

        def solve_joints(state: SimState, params: SimParams) -> SimState:
            state, acc = self._solve_motors(state, params)
            state = resolve_joints(state, params)
            return state.replace(joint=state.joint.replace(acc_r_impulse=acc))

        self.j_fn = solve_joints

    def _solve_motors(self, state: SimState, params: SimParams):
        joint, poly = state.joint, state.polygon
        inv_inertia = poly.inverse_inertia
        w = poly.angular_velocity
        acc = joint.acc_r_impulse
        for j, (a, b) in enumerate(self.motor_pairs):
            ia, ib = inv_inertia[a], inv_inertia[b]
            cap = joint.motor_power[j] * params.dt * joint.motor_on[j]
            cdot = w[b] - w[a] - joint.motor_speed[j]
            total = jnp.clip(acc[j] + cdot / (ia + ib), -cap, cap)
            impulse = total - acc[j]
            w = w.at[a].add(impulse * ia).at[b].add(-impulse * ib)
            acc = acc.at[j].set(total)
        return state.replace(polygon=poly.replace(angular_velocity=w)), acc
