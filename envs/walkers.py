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
- motors are jax2d's speed-driven motors (see `envs/stump_tracks.py` for the
  calibration), not Box2D torque-limited ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from jax2d import engine as j2d_engine
from jax2d.scene import add_rectangle_to_scene, add_revolute_joint_to_scene
from jax2d.sim_state import SimState, StaticSimParams

from acl.errors import ConfigError

SCALE = 30.0
"""Pixels per world unit in TeachMyAgent; body sizes below are its pixels / SCALE."""

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
    `hull_position` with straight legs. Built once per env; resets only move it."""
    body = layout.body
    sim = j2d_engine.create_empty_sim(static, add_floor=False, add_walls_and_ceiling=False)
    sim = sim.replace(gravity=jnp.array([0.0, -gravity], jnp.float32))
    x0, x1 = ground_span
    depth = 10.0
    sim, _ = add_rectangle_to_scene(
        sim,
        static,
        jnp.array([(x0 + x1) / 2, ground_top - depth / 2]),
        jnp.array([x1 - x0, depth]),
        friction=friction,
        fixated=True,
    )
    for _ in range(layout.num_stump_slots):
        sim, _ = add_rectangle_to_scene(
            sim,
            static,
            jnp.array([x0, ground_top]),
            jnp.array([0.5, 0.5]),
            friction=friction,
            fixated=True,
        )
    hx, hy = hull_position
    sim, _ = add_rectangle_to_scene(
        sim,
        static,
        jnp.array([hx, hy]),
        jnp.array(body.hull),
        density=body.hull_density,
        friction=0.1,
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
            friction=friction,
        )
        sim, _ = add_rectangle_to_scene(
            sim,
            static,
            jnp.array([hip[0], hip[1] - uh - lh / 2]),
            jnp.array([lw, lh]),
            density=body.leg_density,
            friction=friction,
        )
    for i, leg in enumerate(body.legs):
        uh, lh = leg.upper[1], leg.lower[1]
        sim, _ = add_revolute_joint_to_scene(
            sim,
            static,
            layout.hull,
            layout.upper(i),
            jnp.array([leg.hip_x, body.hip_y]),
            jnp.array([0.0, uh / 2]),
            motor_on=True,
            motor_speed=body.hip_speed,
            motor_power=1.0,
            has_joint_limits=True,
            min_rotation=body.hip_limits[0],
            max_rotation=body.hip_limits[1],
        )
        sim, _ = add_revolute_joint_to_scene(
            sim,
            static,
            layout.upper(i),
            layout.lower(i),
            jnp.array([0.0, -uh / 2]),
            jnp.array([0.0, lh / 2]),
            motor_on=True,
            motor_speed=body.knee_speed,
            motor_power=1.0,
            has_joint_limits=True,
            min_rotation=body.knee_limits[0],
            max_rotation=body.knee_limits[1],
        )
    modes = np.full(layout.num_polygons, WALKER_COLLISION_MODE)
    modes[: layout.num_static] = TERRAIN_COLLISION_MODE
    active = np.ones(layout.num_polygons, bool)
    active[layout.first_stump : layout.num_static] = False
    sim = sim.replace(
        polygon=sim.polygon.replace(collision_mode=jnp.asarray(modes), active=jnp.asarray(active))
    )
    return motor_power_for_torque(layout, sim)


def motor_power_for_torque(layout: SceneLayout, sim: SimState) -> SimState:
    """Set each joint's jax2d motor power so its largest torque is `body.motor_torque`.

    jax2d applies, per step, an angular impulse of base_motor_power * motor_power * dt *
    axial_mass * tanh(decay * speed_error), axial_mass = 1 / (1/I_a + 1/I_b); the torque
    is that over dt. With base_motor_power = 1 (set in SimParams by the env), motor_power
    = motor_torque / axial_mass caps the torque at motor_torque, as Box2D's
    maxMotorTorque does.
    """
    inv_inertia = sim.polygon.inverse_inertia
    a, b = sim.joint.a_index, sim.joint.b_index
    axial_mass = 1.0 / (inv_inertia[a] + inv_inertia[b])
    power = jnp.where(sim.joint.active, layout.body.motor_torque / axial_mass, 0.0)
    return sim.replace(joint=sim.joint.replace(motor_power=power.astype(jnp.float32)))
