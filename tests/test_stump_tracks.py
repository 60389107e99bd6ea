"""Stump Tracks (envs/stump_tracks.py): env contract, track generation, lidar, falls, stumps
that block, and the success calibration.

Physics is expensive to compile, so every rollout of the file is one program: the module
fixture `runs` resets a batch of scenarios (one row each: a task, a key and a script) and
plays them all in one jitted vmap of a `lax.scan`. A script may, before each `env.step`,
pose the whole walker rigidly (hull position and angle, one velocity for every part) or
only set every part's velocity: that is how the kinematic traverse, the push towards a
stump and the upside-down drop are played. That program compiles with XLA's optimisations
mostly off (`FAST_COMPILE`, in any session), where a walker step runs ~3 ms: so episodes
are short, just long enough for every scenario. Track generation and the lidar need no physics and
are checked against the documented formulas.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.core.errors import ConfigError
from envs import stump_tracks as st
from envs.registry import make_env
from envs.stump_tracks import StumpTracks, StumpTracksParams, Track, generate_track, lidar
from tests.compile_effort import FAST_COMPILE

# Every test here builds Stump Tracks' physics, 30-60 s of compile on 2 cores.
pytestmark = pytest.mark.slow

EPISODE = 120
"""max_episode_steps of the env under test: every scripted rollout is one full episode."""
CLEARANCE = 0.1
"""Gap left under the feet, above the tallest stump, in the kinematic traverse [units]."""
PUSH_SPEED = 5.0
"""Horizontal speed forced on every walker part in the push scenarios [units / s]."""
PUSH_STEPS = 80
"""Long enough to carry the walker 8 units: past the first stump when it is small."""


# -- one compiled program for every rollout --------------------------------------------


@dataclass
class Script:
    """What to do before each of EPISODE steps (numpy arrays, one row per step)."""

    num_motors: int
    action: np.ndarray = field(init=False)
    pose_on: np.ndarray = field(init=False)
    """Pose the walker rigidly: hull at pose[:2], angle pose[2], all parts at `velocity`."""
    pose: np.ndarray = field(init=False)
    velocity_on: np.ndarray = field(init=False)
    """Only set every part's velocity to `velocity` (and its angular velocity to 0)."""
    velocity: np.ndarray = field(init=False)

    def __post_init__(self):
        self.action = np.zeros((EPISODE, self.num_motors), np.float32)
        self.pose_on = np.zeros(EPISODE, bool)
        self.pose = np.zeros((EPISODE, 3), np.float32)
        self.velocity_on = np.zeros(EPISODE, bool)
        self.velocity = np.zeros((EPISODE, 2), np.float32)

    def arrays(self) -> dict:
        return {k: v for k, v in vars(self).items() if isinstance(v, np.ndarray)}


def _set_walker(env: StumpTracks, sim, offsets, script):
    """Apply one step of a script to the walker's parts (polygons hull .. num_polygons - 1)."""
    parts = slice(env.layout.hull, env.layout.num_polygons)
    poly = sim.polygon
    x, y, angle = script["pose"]
    cos, sin = jnp.cos(angle), jnp.sin(angle)
    posed = jnp.stack(
        [
            x + cos * offsets[:, 0] - sin * offsets[:, 1],
            y + sin * offsets[:, 0] + cos * offsets[:, 1],
        ],
        -1,
    )
    pose_on, move = script["pose_on"], script["pose_on"] | script["velocity_on"]
    velocity = jnp.broadcast_to(script["velocity"], offsets.shape)
    return sim.replace(
        polygon=poly.replace(
            position=jnp.where(pose_on, poly.position.at[parts].set(posed), poly.position),
            rotation=jnp.where(pose_on, poly.rotation.at[parts].set(angle), poly.rotation),
            velocity=jnp.where(move, poly.velocity.at[parts].set(velocity), poly.velocity),
            angular_velocity=jnp.where(
                move, poly.angular_velocity.at[parts].set(0.0), poly.angular_velocity
            ),
        )
    )


def _rollout(env: StumpTracks, state, params, script):
    """One scripted episode from a reset state: per-step outputs, each [EPISODE, ...]."""
    hull, parts = env.layout.hull, slice(env.layout.hull, env.layout.num_polygons)
    # Where each part sits relative to the hull at reset (legs straight down, level).
    offsets = state.sim.polygon.position[parts] - state.sim.polygon.position[hull]

    def body(state, inputs):
        key, step_script = inputs
        state = state.replace(sim=_set_walker(env, state.sim, offsets, step_script))
        obs, state, reward, terminated, truncated, info = env.step(
            key, state, step_script["action"], params
        )
        out = dict(
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            fell=info["fell"],
            hull_x=env.hull_x(state),
        )
        return state, out

    keys = jax.random.split(jax.random.PRNGKey(0), EPISODE)
    _, out = jax.lax.scan(body, state, (keys, script))
    return out


def _episode_end(out) -> int:
    """Index of the step that ended the episode (the last step if none did)."""
    done = np.asarray(out["terminated"]) | np.asarray(out["truncated"])
    return int(np.argmax(done)) if done.any() else EPISODE - 1


def _episode_return(out) -> float:
    return float(np.asarray(out["reward"], np.float64)[: _episode_end(out) + 1].sum())


@pytest.fixture(scope="module")
def env():
    return StumpTracks(max_episode_steps=EPISODE)


@pytest.fixture(scope="module")
def runs(env):
    """Every scenario of the file, reset and rolled out in one batch: name -> results."""
    return _play_scenarios(env)


def _play_scenarios(env: StumpTracks) -> dict:
    rows = {
        # name: (task, reset seed)
        "traverse": ((2.0, 1.0), 0),
        "half": ((2.0, 1.0), 0),
        "idle": ((0.0, 6.0), 1),
        "blocked": ((9.0, 6.0), 2),
        "flat_push": ((0.0, 6.0), 2),
        "upside_down": ((0.0, 6.0), 3),
        "random_a": ((1.5, 3.0), 4),
        "random_b": ((1.5, 3.0), 4),
        "random_c": ((1.5, 3.0), 5),
    }
    names = list(rows)
    tasks = jnp.array([rows[n][0] for n in names], jnp.float32)
    keys = jnp.stack([jax.random.PRNGKey(rows[n][1]) for n in names])
    params = env.params_for_tasks(tasks)
    obs0, states = jax.jit(jax.vmap(env.reset), compiler_options=FAST_COMPILE)(keys, params)
    tallest = np.asarray(states.track.height).max(axis=1)

    scripts = {n: Script(env.body.num_motors) for n in names}
    stance = st.TERRAIN_HEIGHT + env.body.stance_height
    # Kinematic traverse: a straight line from START_X to past FINISH_X (or to halfway,
    # then held there), level, the feet CLEARANCE above the tallest stump.
    line = np.linspace(st.START_X, st.FINISH_X + 1.0, EPISODE - 50)
    for name, end in (("traverse", line[-1]), ("half", (st.START_X + st.FINISH_X) / 2)):
        s = scripts[name]
        x = np.minimum(np.pad(line, (0, EPISODE - line.size), mode="edge"), end)
        s.pose_on[:] = True
        s.pose[:, 0] = x
        s.pose[:, 1] = stance + tallest[names.index(name)] + CLEARANCE
        s.velocity[:-1, 0] = np.diff(x) * st.FPS
    for name in ("blocked", "flat_push"):
        scripts[name].velocity_on[:PUSH_STEPS] = True
        scripts[name].velocity[:PUSH_STEPS, 0] = PUSH_SPEED
    # Upside down, the hull's box 0.05 into the ground, legs in the air.
    flip = scripts["upside_down"]
    flip.pose_on[0] = True
    flip.pose[0] = (st.START_X, st.TERRAIN_HEIGHT + env.body.hull[1] / 2 - 0.05, math.pi)
    actions = np.random.default_rng(0).uniform(-1, 1, (EPISODE, env.body.num_motors))
    for name in ("random_a", "random_b", "random_c"):
        scripts[name].action[:] = actions

    arrays = [scripts[n].arrays() for n in names]
    batch = {k: np.stack([a[k] for a in arrays]) for k in arrays[0]}
    rollout = jax.jit(
        jax.vmap(lambda s, p, b: _rollout(env, s, p, b)), compiler_options=FAST_COMPILE
    )
    out = jax.device_get(rollout(states, params, batch))
    results = {}
    for i, name in enumerate(names):
        row = {k: v[i] for k, v in out.items()}
        row["task"] = np.asarray(tasks[i])
        row["obs0"] = np.asarray(obs0[i])
        row["track"] = jax.tree.map(lambda a, i=i: np.asarray(a[i]), states.track)
        row["hull0"] = np.asarray(states.sim.polygon.position[i, env.layout.hull])
        results[name] = row
    results["_raw"] = out
    return results


# -- contract ----------------------------------------------------------------------------


def test_registered_and_spaces_follow_the_body():
    classic = make_env("stump_tracks")
    spider = make_env("stump_tracks", body="spider", max_episode_steps=5)
    assert isinstance(classic, StumpTracks) and isinstance(spider, StumpTracks)
    assert spider.body.name == "spider" and spider.max_episode_steps == 5
    assert classic.max_episode_steps == 2000
    for env, motors, obs in ((classic, 4, 24), (spider, 8, 34)):
        space = env.action_space()
        assert space.shape == (motors,) and space.dtype == jnp.float32
        assert np.all(np.asarray(space.low) == -1.0) and np.all(np.asarray(space.high) == 1.0)
        assert env.observation_space().shape == (obs,)
        assert env.observation_space().dtype == jnp.float32
    # The spider's reset and step agree with its spaces (traced only, not compiled).
    params = spider.default_params()
    obs, state = jax.eval_shape(spider.reset, jax.random.PRNGKey(0), params)
    assert obs.shape == (34,) and obs.dtype == jnp.float32
    action = jnp.zeros(8, jnp.float32)
    out = jax.eval_shape(spider.step, jax.random.PRNGKey(0), state, action, params)
    obs, _, reward, terminated, truncated, _ = out
    assert obs.shape == (34,) and obs.dtype == jnp.float32
    assert (reward.shape, reward.dtype) == ((), jnp.float32)
    assert (terminated.shape, terminated.dtype) == ((), jnp.bool_)
    assert (truncated.shape, truncated.dtype) == ((), jnp.bool_)


def test_task_space_and_challenge_bounds():
    env = make_env("stump_tracks")
    space = env.task_space
    assert space.names == ("stump_height", "stump_spacing")
    np.testing.assert_allclose(space.low, (0.0, 0.0))
    np.testing.assert_allclose(space.high, (3.0, 6.0))
    np.testing.assert_allclose(env.unfeasible_bounds.high, (9.0, 6.0))
    np.testing.assert_allclose(env.trivial_bounds.low, (-3.0, 0.0))
    assert env.return_bounds[0] < env.success_threshold == 230.0 < env.return_bounds[1]
    assert bool(env.is_success(jnp.float32(230.5))) and not bool(env.is_success(jnp.float32(230)))


def test_bad_config_is_a_config_error():
    with pytest.raises(ConfigError, match="body"):
        StumpTracks(body="hexapod")
    with pytest.raises(ConfigError, match="body"):
        make_env("stump_tracks", body="hexapod")
    for bad in (0, -3, 2.0, True):
        with pytest.raises(ConfigError, match="num_stump_slots"):
            StumpTracks(num_stump_slots=bad)
    with pytest.raises(ConfigError, match="max_episode_steps"):
        make_env("stump_tracks", max_episode_steps=0)
    with pytest.raises(ConfigError, match="solver_iterations"):
        StumpTracks(solver_iterations=0)


def test_params_for_tasks_gives_each_row_its_own_track(env):
    tasks = jnp.array([[0.0, 6.0], [3.0, 6.0], [3.0, 0.5], [-3.0, 2.0]])
    params = env.params_for_tasks(tasks)
    np.testing.assert_allclose(params.stump_height, tasks[:, 0])
    np.testing.assert_allclose(params.stump_spacing, tasks[:, 1])
    # The same key for every row: only the task tells the tracks apart.
    keys = jnp.stack([jax.random.PRNGKey(0)] * 4)
    tracks = jax.jit(jax.vmap(generate_track))(keys, params)
    mean_height = [float(np.mean(h[: int(c)])) for h, c in zip(tracks.height, tracks.count)]
    assert mean_height[1] > mean_height[0] + 1.0  # mu = 3 vs mu = 0
    np.testing.assert_allclose(mean_height[3], st.MIN_STUMP_HEIGHT * st.TERRAIN_STEP, rtol=1e-5)
    assert int(tracks.count[2]) > int(tracks.count[1])  # closer stumps: more of them
    np.testing.assert_allclose(
        tracks.left[2, 1] - tracks.left[2, 0], st.STUMP_WIDTH + 0.5, rtol=1e-5
    )


def test_batched_rollout_matches_the_spaces(env, runs):
    out = runs["_raw"]
    batch = len(runs) - 1
    obs_space = env.observation_space()
    assert out["obs"].shape == (batch, EPISODE) + obs_space.shape
    assert out["obs"].dtype == obs_space.dtype == np.float32
    assert out["reward"].shape == (batch, EPISODE) and out["reward"].dtype == np.float32
    for name in ("terminated", "truncated"):
        assert out[name].shape == (batch, EPISODE) and out[name].dtype == np.bool_
    assert np.all(np.isfinite(out["obs"])) and np.all(np.isfinite(out["reward"]))
    for row in (runs["idle"], runs["blocked"]):
        assert row["obs0"].shape == obs_space.shape and row["obs0"].dtype == np.float32
    # Different tasks in one batch: different tracks and different observations.
    tall, flat = runs["blocked"], runs["flat_push"]
    assert tall["track"].height[0] > 3.0 > flat["track"].height[0]
    assert not np.allclose(tall["obs0"], flat["obs0"])  # the lidar sees the tall stump
    assert not np.allclose(tall["obs"][10], flat["obs"][10])


def test_truncation_exactly_at_max_episode_steps(runs):
    half = runs["half"]  # held up in the air until the time limit: never ends otherwise
    assert not half["terminated"].any()
    assert half["truncated"].tolist() == [False] * (EPISODE - 1) + [True]


def test_same_key_and_task_give_the_same_episode(env, runs):
    a, b, c = runs["random_a"], runs["random_b"], runs["random_c"]
    np.testing.assert_array_equal(a["obs0"], b["obs0"])
    np.testing.assert_array_equal(a["obs"], b["obs"])
    np.testing.assert_array_equal(a["reward"], b["reward"])
    # The key matters (track and initial push), so the equality above is not vacuous.
    assert not np.allclose(a["track"].height, c["track"].height)
    assert not np.array_equal(a["obs"][:5], c["obs"][:5])
    # Separate calls agree too.
    reset = jax.jit(env.reset)
    params = env.task_to_params(jnp.array([1.5, 3.0]), env.default_params())
    obs1, state1 = reset(jax.random.PRNGKey(4), params)
    obs2, state2 = reset(jax.random.PRNGKey(4), params)
    np.testing.assert_array_equal(obs1, obs2)
    np.testing.assert_allclose(obs1, a["obs0"], rtol=1e-6)
    np.testing.assert_array_equal(state1.track.height, state2.track.height)


# -- track generation ---------------------------------------------------------------------


# Jitted: eagerly, every jnp op of the generator would compile a program of its own.
@functools.partial(jax.jit, static_argnames="num_keys")
def _tracks(mu: float, spacing: float, num_keys: int = 1) -> Track:
    params = StumpTracksParams(stump_height=jnp.float32(mu), stump_spacing=jnp.float32(spacing))
    keys = jax.random.split(jax.random.PRNGKey(11), num_keys)
    return jax.vmap(generate_track, (0, None))(keys, params)


def _real_heights(tracks: Track) -> np.ndarray:
    """Heights of the real stumps of every track, in TERRAIN_STEP units."""
    h = [np.asarray(hh[: int(c)]) for hh, c in zip(tracks.height, tracks.count)]
    return np.concatenate(h) / st.TERRAIN_STEP


@pytest.mark.parametrize("mu", [0.7, 1.5, 3.0])
def test_stump_heights_are_normal_around_the_task_mean(mu):
    heights = _real_heights(_tracks(mu, 0.0, num_keys=40))
    n = heights.size
    assert n > 5000
    # Five standard errors: a wrong mean or std by 0.01 terrain steps fails.
    assert abs(heights.mean() - mu) < 5 * st.STUMP_HEIGHT_STD / math.sqrt(n)
    assert abs(heights.std() - st.STUMP_HEIGHT_STD) < 5 * st.STUMP_HEIGHT_STD / math.sqrt(2 * n)


def test_stump_heights_are_floored_at_0_05():
    floor = st.MIN_STUMP_HEIGHT
    heights = _real_heights(_tracks(0.0, 0.0, num_keys=40))
    assert heights.min() == pytest.approx(floor, rel=1e-5)
    at_floor = np.isclose(heights, floor, rtol=1e-5, atol=0)
    # P(N(0, 0.1) < 0.05) = Phi(0.5) = 0.691
    p = 0.5 * (1 + math.erf(0.5 / math.sqrt(2)))
    assert abs(at_floor.mean() - p) < 5 * math.sqrt(p * (1 - p) / heights.size)
    assert heights[~at_floor].min() > floor
    for mu in (-3.0, -0.5):  # the trivial challenge's negative means: all smallest stumps
        np.testing.assert_allclose(_real_heights(_tracks(mu, 2.0, 4)), floor, rtol=1e-5)


@pytest.mark.parametrize("spacing", [-1.0, 0.0, 0.005, 0.5, 2.37, 6.0])
def test_stumps_are_laid_from_the_start_pad_to_the_track_end(spacing):
    track = jax.tree.map(lambda a: np.asarray(a[0]), _tracks(1.0, spacing))
    count = int(track.count)
    gap = max(st.MIN_SPACING, spacing)
    assert count == math.ceil((st.TRACK_END - st.FIRST_STUMP_X) / (st.STUMP_WIDTH + gap))
    left = track.left[:count]
    assert left[0] == pytest.approx(st.FIRST_STUMP_X, abs=1e-5)
    np.testing.assert_allclose(np.diff(left), st.STUMP_WIDTH + gap, atol=1e-4)
    assert left[-1] < st.TRACK_END <= left[-1] + st.STUMP_WIDTH + gap + 1e-4
    # Padding past the last stump: nowhere, and flat.
    assert np.all(np.isinf(track.left[count:])) and np.all(track.height[count:] == 0)
    assert np.all(track.height[:count] > 0)


# -- lidar --------------------------------------------------------------------------------


def _track(stumps: list[tuple[float, float]]) -> Track:
    """A hand-made track: (left edge, height) per stump."""
    left = np.full(st.MAX_STUMPS, np.inf, np.float32)
    height = np.zeros(st.MAX_STUMPS, np.float32)
    for i, (x, h) in enumerate(stumps):
        left[i], height[i] = x, h
    return Track(left=jnp.asarray(left), height=jnp.asarray(height), count=jnp.int32(len(stumps)))


ANGLES = 1.5 * np.arange(10) / 10
_lidar = jax.jit(lidar)
"""The lidar as the env runs it, compiled once (eagerly, each jnp op compiles apart)."""


def test_lidar_on_flat_ground():
    for above in (0.5, 2.5333):
        fractions = np.asarray(_lidar(jnp.array([20.0, st.TERRAIN_HEIGHT + above]), _track([])))
        expected = np.minimum(1.0, above / np.cos(ANGLES) / st.LIDAR_RANGE)
        np.testing.assert_allclose(fractions, expected, rtol=1e-4)
        assert fractions.shape == (st.NUM_LIDAR,)
    assert 0 < expected.min() and expected.max() == 1.0  # some rays out of range


def test_lidar_sees_a_tall_stump_in_front_and_the_top_of_one_below():
    above, ahead = 2.5, 1.2
    origin = np.array([30.0, st.TERRAIN_HEIGHT + above])
    # A wall of a stump starting `ahead` in front of the hull, and a tall one behind it.
    stumps = [(origin[0] - 3.0, 6.0), (origin[0] + ahead, 6.0)]
    fractions = np.asarray(_lidar(jnp.asarray(origin), _track(stumps)))
    to_ground = above / np.cos(ANGLES)
    with np.errstate(divide="ignore"):
        to_face = np.where(ANGLES > 0, ahead / np.sin(ANGLES), np.inf)
    expected = np.minimum(1.0, np.minimum(to_ground, to_face) / st.LIDAR_RANGE)
    assert np.sum(to_face < to_ground) >= 5  # the forward rays really hit the face
    np.testing.assert_allclose(fractions, expected, rtol=1e-4)
    # A low stump right under the hull: the downward ray stops at its top.
    low = [(origin[0] - st.STUMP_WIDTH / 2, 0.8)]
    down = float(_lidar(jnp.asarray(origin), _track(low))[0])
    assert down == pytest.approx((above - 0.8) / st.LIDAR_RANGE, rel=1e-4)


def test_observation_ends_with_the_lidar(env, runs):
    idle = runs["idle"]  # default task: the first stump is beyond every ray at reset
    above = idle["hull0"][1] - st.TERRAIN_HEIGHT
    assert above == pytest.approx(env.body.stance_height, abs=1e-4)
    expected = np.minimum(1.0, above / np.cos(ANGLES) / st.LIDAR_RANGE)
    np.testing.assert_allclose(idle["obs0"][-st.NUM_LIDAR :], expected, rtol=1e-4)
    tall = runs["blocked"]
    computed = _lidar(jnp.asarray(tall["hull0"]), jax.tree.map(jnp.asarray, tall["track"]))
    np.testing.assert_allclose(tall["obs0"][-st.NUM_LIDAR :], computed, rtol=1e-6)
    assert tall["obs0"][-1] < 1.0 == expected[-1]  # the farthest ray meets the tall stump


# -- falls, stumps and the success calibration -------------------------------------------


def test_hull_on_the_ground_ends_the_episode_with_minus_100(runs):
    row = runs["upside_down"]
    assert bool(row["terminated"][0]) and bool(row["fell"][0])
    assert not bool(row["truncated"][0])
    assert float(row["reward"][0]) == -100.0
    # Control: posed upright in the traverse, the hull never counts as touching terrain.
    assert not runs["traverse"]["fell"][: _episode_end(runs["traverse"]) + 1].any()


def test_a_stump_taller_than_the_legs_blocks_the_walker(env, runs):
    blocked, flat = runs["blocked"], runs["flat_push"]
    stump_left, stump_height = blocked["track"].left[0], blocked["track"].height[0]
    assert stump_height > env.body.leg_length + env.body.hull[1]  # taller than the walker
    assert stump_left == pytest.approx(st.FIRST_STUMP_X)
    # The same push carries the walker over the small stumps of the flat task ...
    assert flat["hull_x"].max() > stump_left + st.STUMP_WIDTH + 1.0
    # ... but leaves it behind the tall stump for the whole episode.
    assert blocked["hull_x"].max() < stump_left
    assert blocked["hull_x"][PUSH_STEPS - 1] > st.START_X + 1.0  # it was pushed up to it


def test_kinematic_traverse_to_the_finish_is_a_success(env, runs):
    row = runs["traverse"]
    end = _episode_end(row)
    assert bool(row["terminated"][end]) and not row["fell"][: end + 1].any()
    assert row["hull_x"][end] > st.FINISH_X and row["hull_x"][end - 1] <= st.FINISH_X
    ret = _episode_return(row)
    assert ret >= 230 and bool(env.is_success(jnp.float32(ret)))
    # The return is the documented shaping, 130 / 30 per unit from the start (level hull:
    # no angle cost), less a small cost of motors holding still under zero actions.
    shaping = st.SHAPING_PER_UNIT * (row["hull_x"][end] - st.START_X)
    assert shaping - 5.0 <= ret <= shaping + 0.1
    # The feet really cleared stumps of mean height 2.
    assert row["track"].height.max() > 1.5 * st.TERRAIN_STEP


def test_kinematic_traverse_to_halfway_fails(env, runs):
    row = runs["half"]
    assert not row["terminated"].any() and bool(row["truncated"][-1])
    ret = _episode_return(row)
    middle = (st.START_X + st.FINISH_X) / 2
    assert row["hull_x"][-1] == pytest.approx(middle, abs=0.1)
    shaping = st.SHAPING_PER_UNIT * (middle - st.START_X)  # 182: it really got halfway
    assert shaping - 5.0 <= ret <= shaping + 0.5
    assert ret < 230 and not bool(env.is_success(jnp.float32(ret)))


def test_doing_nothing_scores_well_below_success(runs):
    row = runs["idle"]
    assert _episode_return(row) < 100.0
    assert row["hull_x"].max() < st.START_X + 5.0
