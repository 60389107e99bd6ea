"""Stump Tracks rendering to RGB arrays with Pillow (no screen, no pygame).

A TeachMyAgent-like side view: sky, ground at TERRAIN_HEIGHT, the stumps of `state.track`,
the walker's polygons (hull and each leg in its own colour, with outlines), the lidar rays
as red lines to their hit points, the start flag and the finish line, and an optional
caption. The camera follows the hull as TeachMyAgent's does: the view's left edge is at
scroll = hull_x - width / scale / 5 (world units), so the hull centre is always drawn at
pixel column width / 5; y = 0 is the bottom row.

Everything takes one unbatched `StumpTracksState` (pulled to numpy) and returns numpy:

- `render_frame(env, state)` -> uint8 [H, W, 3]
- `save_png(frame, path)`, `save_gif(frames, path, fps)` (from envs.images)
- `rollout_frames(env, policy, key, task, max_steps)` -> (frames, episode return)
- `track_overview(env, tasks, key)` -> one grid image, a thumbnail per task at reset

`python -m envs.stump_tracks_render` rewrites the README figures in experiments/figures/.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from envs.images import save_gif, save_png  # noqa: F401  (re-exported)
from envs.stump_tracks import (
    FINISH_X,
    LIDAR_ANGLES,
    LIDAR_RANGE,
    STUMP_WIDTH,
    TERRAIN_HEIGHT,
    TERRAIN_STEP,
    StumpTracks,
    StumpTracksState,
    lidar,
)
from envs.walkers import SCALE

Color = tuple[int, int, int]


def _rgb(r: float, g: float, b: float) -> Color:
    return (round(255 * r), round(255 * g), round(255 * b))


SKY: Color = _rgb(0.9, 0.9, 1.0)
"""TeachMyAgent's sky."""
GROUND: Color = _rgb(0.4, 0.6, 0.3)
GROUND_LINE: Color = _rgb(0.25, 0.4, 0.2)
STUMP: Color = _rgb(0.55, 0.4, 0.25)
"""Stump fill (a brown no other part uses, so tests can find stumps by colour)."""
STUMP_LINE: Color = _rgb(0.3, 0.2, 0.1)
HULL: Color = _rgb(0.5, 0.4, 0.9)
"""Hull fill and outline, as TeachMyAgent's bipedal walker."""
HULL_LINE: Color = _rgb(0.3, 0.3, 0.5)
LIDAR: Color = (255, 0, 0)
FLAG: Color = _rgb(0.9, 0.2, 0.0)
POLE: Color = (0, 0, 0)
FINISH: Color = (40, 40, 40)
TEXT: Color = (0, 0, 0)

FLAG_X = 3 * TERRAIN_STEP
"""The start flag's pole [units], where BipedalWalker and TeachMyAgent plant it."""
FLAG_HEIGHT = 50 / SCALE


def leg_colors(num_legs: int) -> list[tuple[Color, Color]]:
    """(fill, outline) per leg, TeachMyAgent's shades: lighter for leg 0, darker for the last."""
    shades = np.linspace(-1.0, 1.0, num_legs) if num_legs > 1 else np.zeros(1)
    out = []
    for i in shades:
        fill = _rgb(0.6 - i / 10, 0.3 - i / 10, 0.5 - i / 10)
        line = _rgb(0.4 - i / 10, 0.2 - i / 10, 0.3 - i / 10)
        out.append((fill, line))
    return out


_lidar = jax.jit(lidar)


def _font(size: int) -> ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow < 10.1 or without FreeType: the bitmap font
        return ImageFont.load_default()


def _check_env(env: Any) -> None:
    if not isinstance(env, StumpTracks):
        raise TypeError(f"expected a StumpTracks env, got {type(env).__name__}")


def _host_state(env: StumpTracks, state: Any) -> StumpTracksState:
    """The state as numpy arrays, after checking it is one (unbatched) Stump Tracks state."""
    if not isinstance(state, StumpTracksState):
        raise TypeError(
            f"expected a StumpTracksState (env.reset's second output), got {type(state).__name__}"
        )
    position_shape = np.shape(state.sim.polygon.position)
    expected = (env.layout.num_polygons, 2)
    if np.ndim(state.time) != 0 or position_shape != expected:
        batch = position_shape[: max(len(position_shape) - 2, 0)]
        raise ValueError(
            f"render_frame draws one unbatched state: polygon positions have shape "
            f"{position_shape} (batch {batch}), expected {expected}; "
            "pick one, e.g. jax.tree.map(lambda x: x[i], state)"
        )
    return jax.device_get(state)


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def camera_scroll(hull_x: float, width: int, scale: float = SCALE) -> float:
    """Left edge of the view [units] for a hull at `hull_x`: TeachMyAgent's camera."""
    return float(hull_x) - width / scale / 5


def render_frame(
    env: StumpTracks,
    state: StumpTracksState,
    width: int = 600,
    height: int = 400,
    show_lidar: bool = True,
    caption: str | None = None,
    scale: float = SCALE,
) -> np.ndarray:
    """Draw one state: uint8 [height, width, 3] RGB.

    `state` is one unbatched env state (a batch raises ValueError); `scale` is pixels per
    world unit (30, TeachMyAgent's); `caption` (any text, e.g. task, step and return) is
    written in the top-left corner over a white box.
    """
    _check_env(env)
    width = _positive_int(width, "width")
    height = _positive_int(height, "height")
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale!r}")
    s = _host_state(env, state)
    poly = s.sim.polygon
    layout = env.layout
    hull = layout.hull
    hull_pos = np.asarray(poly.position[hull], np.float64)
    scroll = camera_scroll(hull_pos[0], width, scale)
    view_right = scroll + width / scale

    def px(x, y):
        """World [units] -> pixel (column, row) floats; rows grow downwards."""
        return (np.asarray(x) - scroll) * scale, height - np.asarray(y) * scale

    def box(x0, y0, x1, y1):
        (c0, r0), (c1, r1) = px(x0, y1), px(x1, y0)
        return [float(c0), float(r0), float(c1), float(r1)]

    image = Image.new("RGB", (width, height), SKY)
    draw = ImageDraw.Draw(image)
    line = max(1, round(scale / 30))

    # Ground: everything below TERRAIN_HEIGHT (the physics ground spans far past the view).
    draw.rectangle(box(scroll - 1, -1.0, view_right + 1, TERRAIN_HEIGHT), fill=GROUND)

    # Stumps of the whole track that overlap the view.
    left = np.asarray(s.track.left, np.float64)
    tall = np.asarray(s.track.height, np.float64)
    visible = np.isfinite(left) & (left + STUMP_WIDTH >= scroll) & (left <= view_right)
    for x0, h in zip(left[visible], tall[visible]):
        rect = box(x0, TERRAIN_HEIGHT, x0 + STUMP_WIDTH, TERRAIN_HEIGHT + h)
        draw.rectangle(rect, fill=STUMP, outline=STUMP_LINE, width=line)
    c0, r0 = px(scroll - 1, TERRAIN_HEIGHT)
    c1, _ = px(view_right + 1, TERRAIN_HEIGHT)
    draw.line([(float(c0), float(r0)), (float(c1), float(r0))], fill=GROUND_LINE, width=line)

    # Start flag (TeachMyAgent's) and finish line.
    fc, fr = px(FLAG_X, TERRAIN_HEIGHT)
    _, top = px(FLAG_X, TERRAIN_HEIGHT + FLAG_HEIGHT)
    draw.line([(float(fc), float(fr)), (float(fc), float(top))], fill=POLE, width=line)
    pennant = [
        px(FLAG_X, TERRAIN_HEIGHT + FLAG_HEIGHT),
        px(FLAG_X, TERRAIN_HEIGHT + FLAG_HEIGHT - 10 / SCALE),
        px(FLAG_X + 25 / SCALE, TERRAIN_HEIGHT + FLAG_HEIGHT - 5 / SCALE),
    ]
    draw.polygon([(float(c), float(r)) for c, r in pennant], fill=FLAG, outline=POLE)
    fc, fr = px(FINISH_X, TERRAIN_HEIGHT)
    _, top = px(FINISH_X, TERRAIN_HEIGHT + 2 * FLAG_HEIGHT)
    draw.line([(float(fc), float(fr)), (float(fc), float(top))], fill=FINISH, width=2 * line)

    # Lidar: red rays from the hull centre to where each meets terrain.
    if show_lidar:
        fractions = np.asarray(_lidar(jnp.asarray(hull_pos, jnp.float32), s.track))
        for angle, fraction in zip(LIDAR_ANGLES, fractions):
            reach = float(fraction) * LIDAR_RANGE
            end = hull_pos + reach * np.array([math.sin(angle), -math.cos(angle)])
            a, b = px(*hull_pos), px(*end)
            draw.line([(float(a[0]), float(a[1])), (float(b[0]), float(b[1]))], fill=LIDAR)

    # Walker: legs (first leg first, so later legs are in front), then the hull.
    colors = leg_colors(env.body.num_legs)
    parts = []
    for i, (fill, outline) in enumerate(colors):
        parts += [(layout.upper(i), fill, outline), (layout.lower(i), fill, outline)]
    parts.append((hull, HULL, HULL_LINE))
    for index, fill, outline in parts:
        n = int(poly.n_vertices[index])
        local = np.asarray(poly.vertices[index, :n], np.float64)
        angle = float(poly.rotation[index])
        rot = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
        world = np.asarray(poly.position[index], np.float64) + local @ rot.T
        cols, rows = px(world[:, 0], world[:, 1])
        draw.polygon(list(zip(cols.tolist(), rows.tolist())), fill=fill, outline=outline)

    if caption:
        font = _font(max(10, round(14 * min(width / 600, height / 400, 1.0) ** 0.5)))
        left_top = (4, 3)
        bbox = draw.multiline_textbbox(left_top, caption, font=font)
        draw.rectangle([bbox[0] - 3, bbox[1] - 2, bbox[2] + 3, bbox[3] + 2], fill=(255, 255, 255))
        draw.multiline_text(left_top, caption, fill=TEXT, font=font)
    return np.asarray(image, np.uint8)


Policy = Callable[[jax.Array, jax.Array], jax.Array]


_JIT_CACHE: dict[tuple[int, str, int], tuple[Any, Any, Callable]] = {}
_JIT_CACHE_SIZE = 8


def _jitted(env: StumpTracks, kind: str, policy: Policy | None) -> Callable:
    """env.reset, or one policy + env step, jitted once per (env, policy) and reused, so
    later rollouts (any task: params are an argument) skip the compile."""
    cache_key = (id(env), kind, id(policy))
    hit = _JIT_CACHE.get(cache_key)
    if hit is not None and hit[0] is env and hit[1] is policy:
        return hit[2]
    if kind == "reset":
        fn = jax.jit(env.reset)
    else:

        def step(state, obs, key, params):
            policy_key, step_key = jax.random.split(key)
            action = policy(obs, policy_key)
            obs, state, reward, terminated, truncated, _ = env.step(step_key, state, action, params)
            return state, obs, reward, terminated | truncated

        fn = jax.jit(step)
    while len(_JIT_CACHE) >= _JIT_CACHE_SIZE:
        _JIT_CACHE.pop(next(iter(_JIT_CACHE)))
    _JIT_CACHE[cache_key] = (env, policy, fn)  # holding env and policy keeps their ids unique
    return fn


def _task_caption(task: np.ndarray) -> str:
    names = ("height", "spacing")
    return "  ".join(f"{n} {v:.2f}" for n, v in zip(names, np.asarray(task).tolist()))


def _task_array(env: StumpTracks, task: Any) -> jax.Array:
    task = jnp.asarray(task, jnp.float32)
    if task.shape != (env.task_space.dim,):
        raise ValueError(f"task must have shape ({env.task_space.dim},), got {task.shape}")
    return task


def rollout_frames(
    env: StumpTracks,
    policy: Policy,
    key: jax.Array,
    task: Any,
    max_steps: int | None = None,
    every: int = 2,
    width: int = 600,
    height: int = 400,
    show_lidar: bool = True,
) -> tuple[list[np.ndarray], float]:
    """Run one episode of `policy` on `task` and draw it: (frames, episode return).

    `policy(obs [obs_size], key) -> action [motors]` must be jittable; it runs with the env
    step inside one jitted function, compiled on the first call for this (env, policy) and
    reused for later calls (any task, key or length). The episode stops at termination,
    truncation or after `max_steps` steps (default env.max_episode_steps). A frame (uint8
    [H, W, 3], captioned with the task, step and return so far) is drawn at reset, every
    `every` steps, and at the last step.
    """
    _check_env(env)
    every = _positive_int(every, "every")
    max_steps = _positive_int(max_steps or env.max_episode_steps, "max_steps")
    task = _task_array(env, task)
    params = env.task_to_params(task, env.default_params())
    reset_key, key = jax.random.split(key)
    obs, state = _jitted(env, "reset", None)(reset_key, params)
    step = _jitted(env, "step", policy)
    label = _task_caption(np.asarray(task))

    def frame(t, ret):
        caption = f"{label}\nstep {t}  return {ret:.1f}"
        return render_frame(env, state, width, height, show_lidar, caption)

    frames = [frame(0, 0.0)]
    total = 0.0
    for t in range(1, max_steps + 1):
        key, step_key = jax.random.split(key)
        state, obs, reward, done = step(state, obs, step_key, params)
        total += float(reward)
        done = bool(done)
        if t % every == 0 or done or t == max_steps:
            frames.append(frame(t, total))
        if done:
            break
    return frames, total


def track_overview(
    env: StumpTracks,
    tasks: Any,
    key: jax.Array,
    columns: int | None = None,
    thumb_width: int = 360,
    thumb_height: int = 120,
    scale: float = 12.0,
) -> np.ndarray:
    """A grid of thumbnails, one per task at reset (same key, so same noise): uint8 RGB.

    `tasks` [N, 2] (stump height, spacing), laid out row by row in `columns` columns
    (default ceil(sqrt(N))); each thumbnail is thumb_height x thumb_width pixels at
    `scale` pixels per unit (12 shows 30 units of track), captioned with its task.
    The image is [rows * (thumb_height + 4) + 4, columns * (thumb_width + 4) + 4, 3].
    """
    _check_env(env)
    tasks = np.asarray(tasks, np.float32)
    if tasks.ndim != 2 or tasks.shape[1] != env.task_space.dim or len(tasks) == 0:
        raise ValueError(f"tasks must have shape [N, {env.task_space.dim}], got {tasks.shape}")
    columns = _positive_int(columns or math.ceil(math.sqrt(len(tasks))), "columns")
    rows = math.ceil(len(tasks) / columns)
    pad = 4
    grid = np.full(
        (rows * (thumb_height + pad) + pad, columns * (thumb_width + pad) + pad, 3),
        255,
        np.uint8,
    )
    reset = _jitted(env, "reset", None)
    for n, task in enumerate(tasks):
        params = env.task_to_params(jnp.asarray(task), env.default_params())
        _, state = reset(key, params)
        thumb = render_frame(
            env,
            state,
            thumb_width,
            thumb_height,
            show_lidar=False,
            caption=_task_caption(task),
            scale=scale,
        )
        r, c = divmod(n, columns)
        y, x = pad + r * (thumb_height + pad), pad + c * (thumb_width + pad)
        grid[y : y + thumb_height, x : x + thumb_width] = thumb
    return grid


FIGURE_TASK = (1.5, 2.0)
OVERVIEW_HEIGHTS = (0.0, 1.0, 2.0, 3.0, 9.0)
OVERVIEW_SPACINGS = (0.0, 2.0, 4.0, 6.0)


def main(argv: Sequence[str] | None = None) -> None:
    """Write the README figures: `stump_tracks_frame.png` (the classic walker on task
    (1.5, 2.0) with lidar, after 6 steps spreading its hips so both legs show) and
    `stump_tracks_tasks.png` (heights 0-3 and the unfeasible 9 x spacings 0-6)."""
    import argparse

    from envs.registry import make_env

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", default="experiments/figures", help="output folder")
    args = parser.parse_args(argv)
    env = make_env("stump_tracks")
    params = env.task_to_params(jnp.asarray(FIGURE_TASK, jnp.float32), env.default_params())
    _, state = jax.jit(env.reset)(jax.random.key(0), params)
    step = jax.jit(env.step)
    spread = jnp.array([1.0, 0.0, -1.0, 0.0], jnp.float32)  # hips apart, knees held
    for _ in range(6):
        _, state, *_ = step(jax.random.key(0), state, spread, params)
    caption = f"Stump Tracks: {_task_caption(np.asarray(FIGURE_TASK))}"
    path = os.path.join(args.out, "stump_tracks_frame.png")
    save_png(render_frame(env, state, caption=caption), path)
    print("wrote", path)
    tasks = [(h, s) for h in OVERVIEW_HEIGHTS for s in OVERVIEW_SPACINGS]
    grid = track_overview(env, tasks, jax.random.key(0), columns=len(OVERVIEW_SPACINGS))
    path = os.path.join(args.out, "stump_tracks_tasks.png")
    save_png(grid, path)
    print("wrote", path)


if __name__ == "__main__":
    main()
