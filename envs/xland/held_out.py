"""The held-out rulesets of XLand-MiniGrid, and xminigrid's own benchmark files.

Held-out set: the first `count` distinct rulesets (by `RulesetLayout.identity`: the same
goal, rules and initial tiles up to order) of our generator's draws from the keys
fold_in(PRNGKey(HELD_OUT_KEY), i), i = 0, 1, 2, ... (`held_out_codes`). The first
`MAX_HELD_OUT` of each preset are committed (held_out_rulesets.npz, written by
`acl xland-generator --write-held-out`; tests/test_xland.py regenerates and compares
them), so a run reads them instead of compiling the generator, and a smaller set is a
prefix of a larger one. The env keeps training away from its set: its `sample_tasks`
redraws every ruleset whose identity is a held-out one's, and its `edit_tasks` undoes an
edit that makes one, so no teacher can hand out a held-out ruleset.

Benchmark files: `load_benchmark_tasks(env, path)` reads a file of xminigrid's
(`xminigrid.benchmarks.load_benchmark_from_path`: the bz2 pickle that `load_benchmark`
downloads and caches, e.g. ~/.xland_minigrid/high_1m_v3) with no network access, and
`benchmark_tasks` turns its rulesets into the env's tasks: the non-empty rules and tiles
of each, in their order, padded with empty ones to the env's R and K. A file's rulesets
are compacted, not in the generator's slot layout, so they are for evaluation
(`eval.test_set: benchmark:PATH`), not for ACCEL's edits; training does not avoid them.

Both register as the env's named test sets (envs.registry.TEST_SETS, `eval.test_set`):
`xland_held_out` (the env's `num_held_out` held-out rulesets), or `benchmark:PATH`
(`num_held_out` rulesets of the file, drawn without replacement with `eval.seed`).
"""

from __future__ import annotations

import functools
import io
from importlib import resources
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from acl.core.errors import ConfigError
from envs.registry import TEST_SETS
from envs.xland.generator import PRESETS, sample_ruleset
from envs.xland.rulesets import RULE_LEN, RulesetLayout

HELD_OUT_KEY = 20_240_611
"""The seed of the held-out stream (jax.random.PRNGKey), never used for training."""
MAX_HELD_OUT = 512
"""Held-out rulesets committed per preset: the most `num_held_out` may be."""
HELD_OUT_FILE = "held_out_rulesets.npz"
"""Beside this module: one uint8 array [MAX_HELD_OUT, D] per preset, keyed by name."""
HELD_OUT_SET = "xland_held_out"
BENCHMARK_PREFIX = "benchmark:"
_BATCH = 256


@functools.cache
def committed_held_out(preset: str, count: int) -> np.ndarray:
    """[count, D] int32: the first `count` committed held-out rulesets of `preset`."""
    if count > MAX_HELD_OUT:
        raise ConfigError(f"env.num_held_out must be <= {MAX_HELD_OUT}, got {count}")
    data = resources.files("envs.xland").joinpath(HELD_OUT_FILE).read_bytes()
    with np.load(io.BytesIO(data)) as arrays:
        return arrays[preset][:count].astype(np.int32)


def write_held_out_file(path: str | Path) -> None:
    """Generate every preset's `MAX_HELD_OUT` held-out rulesets and save them at `path`."""
    arrays = {name: held_out_codes(name, MAX_HELD_OUT).astype(np.uint8) for name in PRESETS}
    np.savez_compressed(path, **arrays)


def held_out_codes(preset: str, count: int) -> np.ndarray:
    """[count, D] int32: the held-out rulesets of `preset` generated anew (module
    docstring), in the preset's slot layout. Host side; compiles the generator."""
    layout = PRESETS[preset].layout()
    draw = jax.jit(jax.vmap(lambda i: sample_ruleset(_held_out_key(i), PRESETS[preset])))
    identity = jax.jit(jax.vmap(layout.identity))
    kept: list[np.ndarray] = []
    seen: set[bytes] = set()
    start = 0
    with jax.ensure_compile_time_eval():
        while len(kept) < count:
            indices = jnp.arange(start, start + _BATCH)
            codes = np.asarray(draw(indices))
            identities = np.asarray(identity(codes))
            for row, ident in zip(codes, identities, strict=True):
                if ident.tobytes() not in seen and len(kept) < count:
                    seen.add(ident.tobytes())
                    kept.append(row)
            start += _BATCH
    return np.stack(kept).astype(np.int32)


def _held_out_key(index: jax.Array) -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(HELD_OUT_KEY), index)


@functools.cache
def held_out_identities(preset: str, count: int) -> np.ndarray:
    """[count, D] int32: `RulesetLayout.identity` of each held-out ruleset."""
    layout = PRESETS[preset].layout()
    with jax.ensure_compile_time_eval():
        identities = jax.jit(jax.vmap(layout.identity))(committed_held_out(preset, count))
        return np.asarray(identities)


def matches(identities: jax.Array, held_out: np.ndarray) -> jax.Array:
    """identities [n, D], held-out identities [M, D] -> [n] bool: which are held out."""
    if held_out.shape[0] == 0:
        return jnp.zeros(identities.shape[0], bool)
    same = identities[:, None, :] == jnp.asarray(held_out)[None, :, :]
    return same.all(axis=-1).any(axis=-1)


def draw_avoiding(draw, key: jax.Array, n: int, dim: int, excluded) -> jax.Array:
    """n draws [n, dim] of `draw(keys [n]) -> [n, dim]`, none of them `excluded(rows
    [n, dim]) -> [n] bool`: every excluded one is drawn again, with keys folded from
    `key` and the attempt, until none is (jittable; a lax.while_loop)."""

    def again(state):
        rows, bad, attempt = state
        fresh = draw(jax.random.split(jax.random.fold_in(key, attempt), n))
        rows = jnp.where(bad[:, None], fresh, rows)
        return rows, excluded(rows), attempt + 1

    start = (jnp.zeros((n, dim), jnp.int32), jnp.ones(n, bool), jnp.int32(0))
    rows, _, _ = jax.lax.while_loop(lambda state: state[1].any(), again, start)
    return rows


def benchmark_tasks(
    goals: np.ndarray, rules: np.ndarray, init_tiles: np.ndarray, layout: RulesetLayout
) -> np.ndarray:
    """A benchmark's arrays (xminigrid's `Benchmark`: goals [M, 5], rules [M, R', 7],
    init_tiles [M, K', 2]) -> tasks [M, D] float32 in `layout`: each ruleset's non-empty
    rules and tiles first, in order, then empty ones up to R and K. ConfigError if a
    ruleset has more rules or tiles than the layout holds."""
    goals = np.asarray(goals).astype(np.int64)
    rules = np.asarray(rules).astype(np.int64)
    tiles = np.asarray(init_tiles).astype(np.int64)
    if goals.ndim != 2 or rules.ndim != 3 or tiles.ndim != 3 or rules.shape[-1] != RULE_LEN:
        raise ConfigError(
            f"a benchmark needs goals [M, 5], rules [M, R, 7] and init_tiles [M, K, 2]; got "
            f"{goals.shape}, {rules.shape}, {tiles.shape}"
        )
    rules = _compacted(rules, rules[..., 0] != 0, layout.num_rules, "rules")
    tiles = _compacted(tiles, np.any(tiles != 0, axis=-1), layout.num_tiles, "initial tiles")
    count = goals.shape[0]
    flat = np.concatenate([goals, rules.reshape(count, -1), tiles.reshape(count, -1)], axis=1)
    return flat.astype(np.float32)


def _compacted(rows: np.ndarray, present: np.ndarray, size: int, what: str) -> np.ndarray:
    """rows [M, S, C] -> [M, size, C]: the present rows first (stable), zeros after."""
    most = int(present.sum(axis=1).max(initial=0))
    if most > size:
        raise ConfigError(
            f"a benchmark ruleset has {most} {what}; the env's preset holds {size} "
            "(choose env.preset with room for them: trivial < small < medium < high)"
        )
    order = np.argsort(~present, axis=1, kind="stable")
    rows = np.take_along_axis(rows * present[..., None], order[..., None], axis=1)
    out = np.zeros((rows.shape[0], size, rows.shape[2]), rows.dtype)
    width = min(size, rows.shape[1])
    out[:, :width] = rows[:, :width]
    return out


def load_benchmark_tasks(env, path: str | Path, count: int | None = None, seed: int = 0):
    """xminigrid's benchmark file at `path` -> (ruleset indices [M], tasks [M, D] float32
    for `env`): all its rulesets, or `count` drawn without replacement with `seed`.
    Reads the file only (xminigrid.benchmarks.load_benchmark_from_path); no network."""
    from xminigrid.benchmarks import load_benchmark_from_path

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no xminigrid benchmark file at {str(path)!r}")
    benchmark = load_benchmark_from_path(str(path))
    total = int(np.shape(benchmark.goals)[0])
    indices = np.arange(total)
    if count is not None and count < total:
        indices = np.sort(np.random.default_rng(seed).choice(total, count, replace=False))
    tasks = benchmark_tasks(
        np.asarray(benchmark.goals)[indices],
        np.asarray(benchmark.rules)[indices],
        np.asarray(benchmark.init_tiles)[indices],
        env.layout,
    )
    return indices, tasks


@TEST_SETS.register("xland")
def xland_test_set(env, spec, seed: int = 0) -> tuple[tuple[str, ...], np.ndarray]:
    """`eval.test_set` of xland: `xland_held_out` or `benchmark:PATH` (module docstring)
    -> (names [M], tasks [M, D] float32)."""
    if spec == HELD_OUT_SET:
        tasks = env.held_out_tasks()
        return tuple(f"held_out_{i:04d}" for i in range(len(tasks))), tasks
    if isinstance(spec, str) and spec.startswith(BENCHMARK_PREFIX):
        path = Path(spec[len(BENCHMARK_PREFIX) :])
        indices, tasks = load_benchmark_tasks(env, path, env.num_held_out, seed)
        return tuple(f"{path.name}_{i}" for i in indices), tasks
    raise ConfigError(
        f"eval.test_set: unknown xland set {spec!r}; use {HELD_OUT_SET!r} or "
        f"'{BENCHMARK_PREFIX}PATH' (an xminigrid benchmark file)"
    )
