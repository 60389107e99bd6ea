"""Image files from RGB frames, shared by the env renderers (Pillow; no screen).

- `check_frame(frame)` -> the frame as uint8 [H, W, 3], or ValueError
- `save_png(frame, path)`, `save_gif(frames, path, fps)`
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image


def check_frame(frame: Any, name: str = "frame") -> np.ndarray:
    """`frame` as a numpy uint8 [H, W, 3] array; ValueError naming `name` otherwise."""
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[-1] != 3 or frame.dtype != np.uint8:
        raise ValueError(f"{name} must be uint8 [H, W, 3], got {frame.dtype} {frame.shape}")
    return frame


def _make_parent(path: str | os.PathLike | io.IOBase) -> None:
    if not isinstance(path, io.IOBase):
        os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)


def save_png(frame: np.ndarray, path: str | os.PathLike | io.IOBase) -> None:
    """Write one uint8 [H, W, 3] frame as PNG to a path (parent folders are created) or a
    binary file object."""
    frame = check_frame(frame)
    _make_parent(path)
    Image.fromarray(frame).save(path, format="PNG")


def save_gif(
    frames: Sequence[np.ndarray] | np.ndarray,
    path: str | os.PathLike | io.IOBase,
    fps: float = 25,
) -> None:
    """Write frames (a sequence of, or one array of, uint8 [T, H, W, 3]) as a GIF that
    loops forever. `path` may be a binary file object. Pillow merges a frame identical to
    the one before it into that one (longer duration), so the file can hold fewer frames.
    """
    if isinstance(frames, np.ndarray) and frames.ndim == 4:
        frames = list(frames)
    frames = [check_frame(f, f"frames[{i}]") for i, f in enumerate(frames)]
    if not frames:
        raise ValueError("save_gif needs at least one frame")
    if len({f.shape for f in frames}) != 1:
        raise ValueError(f"frames differ in shape: {sorted({f.shape for f in frames})}")
    if not fps > 0:
        raise ValueError(f"fps must be > 0, got {fps!r}")
    _make_parent(path)
    images = [Image.fromarray(f) for f in frames]
    images[0].save(
        path,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=round(1000 / fps),
        loop=0,
    )
