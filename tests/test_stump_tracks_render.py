"""envs/stump_tracks_render.py: frames drawn where the geometry says, a camera that follows
the hull, PNG / GIF files Pillow reads back, and notebooks/stump_tracks.ipynb end to end.

One reset compile serves every frame test; only the rollout test compiles a step (~15-30 s).
"""

from __future__ import annotations

import io
from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
from PIL import Image

from envs import make_env
from envs import stump_tracks_render as render
from envs.stump_tracks import STUMP_WIDTH, TERRAIN_HEIGHT
from envs.walkers import SCALE
from tests.notebooks import execute, stored_parameters_cell

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "stump_tracks.ipynb"
PPO_RUN = ROOT / "experiments" / "results" / "stump_tracks_ppo"
W, H = 600, 400


@pytest.fixture(scope="module")
def env():
    return make_env("stump_tracks", max_episode_steps=50)


@pytest.fixture(scope="module")
def reset(env):
    jitted = jax.jit(env.reset)

    def at(task, seed=0):
        params = env.task_to_params(jnp.asarray(task, jnp.float32), env.default_params())
        return jitted(jax.random.key(seed), params)[1]

    return at


def _mask(frame, color):
    return np.all(frame == np.asarray(color, np.uint8), axis=-1)


def _erode(mask, pixels: int):
    """Pixels at least `pixels` away (in rows and columns) from the mask's edge."""
    out = mask.copy()
    for _ in range(pixels):
        inner = out.copy()
        inner[1:] &= out[:-1]
        inner[:-1] &= out[1:]
        inner[:, 1:] &= out[:, :-1]
        inner[:, :-1] &= out[:, 1:]
        out = inner
    return out


def _hull_column(frame) -> float:
    rows, cols = np.nonzero(_mask(frame, render.HULL))
    assert cols.size > 100, "hull not drawn"
    return float(cols.mean())


def _shift_walker(env, state, dx: float):
    """The same state with every walker part moved dx units along x."""
    parts = slice(env.layout.hull, env.layout.num_polygons)
    poly = state.sim.polygon
    position = poly.position.at[parts, 0].add(dx)
    return state.replace(sim=state.sim.replace(polygon=poly.replace(position=position)))


def test_frame_shape_dtype_and_content(env, reset):
    state = reset((1.5, 2.0))
    frame = render.render_frame(env, state, caption="task (1.5, 2.0)\nstep 0  return 0.0")
    assert frame.shape == (H, W, 3) and frame.dtype == np.uint8
    for color in (render.SKY, render.GROUND, render.STUMP, render.HULL, render.LIDAR):
        assert _mask(frame, color).any(), color
    last_leg, _ = render.leg_colors(env.body.num_legs)[-1]  # at reset it hides the first
    assert _mask(frame, last_leg).any()
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 8
    assert (frame[H - 10] == render.GROUND).all()  # below the ground line
    assert (frame[5, W - 5] == render.SKY).all()  # top-right corner, clear of the caption
    small = render.render_frame(env, state, width=200, height=120, show_lidar=False)
    assert small.shape == (120, 200, 3) and small.dtype == np.uint8


def test_stumps_have_the_stump_colour_where_the_geometry_puts_them(env, reset):
    state = reset((3.0, 2.0))  # tall stumps (1.4 units = 42 px), 2 units apart
    frame = render.render_frame(env, state, show_lidar=False)
    hull_x = float(env.hull_x(state))
    scroll = hull_x - W / SCALE / 5
    left, height = np.asarray(state.track.left), np.asarray(state.track.height)
    checked = 0
    for x0, h in zip(left, height):
        c0, c1 = (x0 - scroll) * SCALE, (x0 + STUMP_WIDTH - scroll) * SCALE
        if c0 < 0 or c1 > W:
            continue
        top, bottom = H - (TERRAIN_HEIGHT + h) * SCALE, H - TERRAIN_HEIGHT * SCALE
        inner = frame[int(top) + 2 : int(bottom) - 1, int(c0) + 2 : int(c1) - 1]
        assert inner.size and _mask(inner, render.STUMP).all(), (x0, h)
        gap = frame[int(bottom) - 5, int(c1) + 10]  # just right of the stump, above ground
        assert (gap == render.SKY).all(), (x0, gap)
        checked += 1
    assert checked >= 3


def test_lidar_rays_are_drawn_and_stop_at_terrain(env, reset):
    state = reset((3.0, 0.0))  # a wall of stumps: the forward rays hit them
    with_rays = render.render_frame(env, state, show_lidar=True)
    without = render.render_frame(env, state, show_lidar=False)
    red = _mask(with_rays, render.LIDAR)
    assert red.sum() > 200 and not _mask(without, render.LIDAR).any()
    ground_row = int(H - TERRAIN_HEIGHT * SCALE)
    assert not red[ground_row + 2 :].any(), "a ray goes into the ground"
    inside = _erode(_mask(without, render.STUMP), 2)  # 2 px in from the faces rays hit
    assert inside.sum() > 1000
    assert not (red & inside).any(), "a ray goes into a stump"


def test_camera_follows_the_hull(env, reset):
    state = reset((2.0, 1.0))
    columns, stump_columns = [], []
    for dx in (0.0, 1.0, 3.5):
        frame = render.render_frame(env, _shift_walker(env, state, dx), show_lidar=False)
        columns.append(_hull_column(frame))
        stump_columns.append(np.nonzero(_mask(frame, render.STUMP).any(axis=0))[0].min())
    assert np.allclose(columns, W / 5, atol=1.0), columns  # the hull stays put...
    # ...and the terrain scrolls left: the first stump column moves by dx * 30 px (or the
    # stump leaves the view, the next one coming in from the right)
    assert stump_columns[1] == pytest.approx(stump_columns[0] - SCALE, abs=1.5)


@pytest.mark.slow
def test_rollout_frames_gif_and_png(env, tmp_path):
    def policy(obs, key):
        return jax.random.uniform(key, (env.body.num_motors,), minval=-1.0, maxval=1.0)

    frames, ret = render.rollout_frames(
        env, policy, jax.random.key(3), (1.0, 3.0), max_steps=6, every=2
    )
    assert len(frames) == 4  # reset, steps 2, 4, 6
    assert all(f.shape == (H, W, 3) and f.dtype == np.uint8 for f in frames)
    assert np.isfinite(ret)
    for frame in frames:  # the camera keeps the hull at a fifth of the width
        assert abs(_hull_column(frame) - W / 5) < 8
    assert all(not np.array_equal(a, b) for a, b in zip(frames, frames[1:]))
    step = render._jitted(env, "step", policy)
    more, _ = render.rollout_frames(env, policy, jax.random.key(4), (3.0, 0.5), 3, every=5)
    assert len(more) == 2  # reset and the last step
    assert render._jitted(env, "step", policy) is step  # one compile for both tasks

    gif = tmp_path / "sub" / "rollout.gif"
    render.save_gif(frames, gif, fps=25)
    with Image.open(gif) as image:
        assert image.format == "GIF" and image.n_frames == len(frames)
        assert image.info.get("loop") == 0 and image.info.get("duration") == 40
        assert image.size == (W, H)
    buffer = io.BytesIO()
    render.save_gif(np.stack(frames), buffer)
    assert Image.open(io.BytesIO(buffer.getvalue())).n_frames == len(frames)

    png = tmp_path / "frame.png"
    render.save_png(frames[0], png)
    with Image.open(png) as image:
        assert image.format == "PNG"
        assert np.array_equal(np.asarray(image.convert("RGB")), frames[0])  # lossless


def test_track_overview_grid(env):
    tasks = [(0.0, 6.0), (3.0, 0.0), (9.0, 2.0)]
    grid = render.track_overview(
        env, tasks, jax.random.key(0), columns=2, thumb_width=180, thumb_height=80
    )
    assert grid.shape == (2 * 84 + 4, 2 * 184 + 4, 3) and grid.dtype == np.uint8
    second = grid[4:84, 188:368]  # (3, 0): a wall of stumps
    assert _mask(second, render.STUMP).sum() > 500
    assert (grid[88:, 188:] == 255).all()  # the empty fourth cell stays white


def test_bad_inputs_raise_clear_errors(env, reset):
    state = reset((1.0, 1.0))
    batched = jax.tree.map(lambda x: np.stack([x, x]), state)  # jnp would compile per leaf
    with pytest.raises(ValueError, match="unbatched"):
        render.render_frame(env, batched)
    with pytest.raises(TypeError, match="StumpTracksState"):
        render.render_frame(env, {"sim": state.sim})
    with pytest.raises(TypeError, match="StumpTracks env"):
        render.render_frame(make_env("cartpole"), state)
    with pytest.raises(ValueError, match="width"):
        render.render_frame(env, state, width=0)
    with pytest.raises(ValueError, match=r"uint8 \[H, W, 3\]"):
        render.save_png(np.zeros((4, 4, 3), np.float32), io.BytesIO())
    with pytest.raises(ValueError, match="at least one frame"):
        render.save_gif([], io.BytesIO())
    with pytest.raises(ValueError, match="differ in shape"):
        render.save_gif([np.zeros((4, 4, 3), np.uint8), np.zeros((5, 4, 3), np.uint8)], "x.gif")
    with pytest.raises(ValueError, match="tasks must have shape"):
        render.track_overview(env, [1.0, 2.0], jax.random.key(0))


def test_leg_colors_are_distinct():
    for legs in (1, 2, 4):
        fills = [fill for fill, _ in render.leg_colors(legs)]
        assert len(set(fills)) == legs
        assert render.HULL not in fills and render.STUMP not in fills


def _shown(nb) -> tuple[str, list[str]]:
    """What the notebook printed, and the MIME type of every output."""
    outputs = [output for cell in nb.cells for output in cell.get("outputs", [])]
    text = "\n".join(o["text"] for o in outputs if o.get("output_type") == "stream")
    return text, [mime for o in outputs for mime in o.get("data", {})]


def test_notebook_is_stored_with_the_committed_walker():
    params = stored_parameters_cell(NOTEBOOK)
    assert "ACL_NOTEBOOK_STEPS" in params.source
    assert 'PPO_RUN_DIR = "experiments/results/stump_tracks_ppo"' in params.source
    text, mimes = _shown(nbformat.read(NOTEBOOK, as_version=4))
    assert "policy shown: PPO walker of experiments/results/stump_tracks_ppo" in text
    assert mimes.count("image/png") == 2 and mimes.count("image/gif") == 1


# slow: executing the notebook compiles a walker rollout (about a minute on 2 cores).
@pytest.mark.slow
@pytest.mark.parametrize("cwd", [ROOT / "notebooks"], ids=["notebooks-dir"])
def test_notebook_executes(monkeypatch, cwd):
    monkeypatch.setenv("ACL_NOTEBOOK_STEPS", "8")
    nb = execute(NOTEBOOK, cwd, timeout=240, reads=PPO_RUN)
    text, mimes = _shown(nb)
    assert "policy shown: PPO walker of experiments/results/stump_tracks_ppo" in text
    assert "overview (" in text and "lidar fractions:" in text
    assert "returns of reset seeds 0-3:" in text
    assert mimes.count("image/png") == 2  # task grid, lidar frame
    assert mimes.count("image/gif") == 1  # the rollout
