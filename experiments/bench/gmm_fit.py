"""What one ALP-GMM fit costs: EM iterations times the cost of one iteration.

    acl bench-gmm-fit [--seeds 1 4 16 64] [--repeats 20] [--out FILE.json]

For each seed count S, `fit_gmms` (k = 2..9, one init, 150 points of 3 features: the
`make run` config's fits) runs vmapped over S seeds on clustered synthetic data:
- as the teacher runs it (sklearn's tol 1e-3, at most 100 iterations);
- with tol 0 and 20, then 60 iterations, whose difference gives the cost of one EM
  iteration at S seeds, and what a fit costs besides (init, selection).
It also reports the iterations the fits needed: the loop runs until the slowest of the
S x 8 mixtures has converged (a vmapped while_loop), so the mean over mixtures is what an
ideal scheme that stops each mixture on its own would pay.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from acl.run.results import format_table
from acl.teachers.gmm import fit_gmms
from experiments.cli import CommandParser

POINTS, FEATURES, K_MIN, K_MAX = 150, 3, 2, 9


def clustered_points(num_seeds: int, seed: int = 0) -> jax.Array:
    """[S, POINTS, FEATURES]: 4 tight clusters per seed in the unit cube."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(size=(num_seeds, 4, FEATURES))
    labels = rng.integers(0, 4, size=(num_seeds, POINTS))
    points = np.take_along_axis(centres, labels[..., None].repeat(FEATURES, -1), 1)
    return jnp.asarray(points + 0.05 * rng.normal(size=points.shape), jnp.float32)


def time_fit(num_seeds: int, max_iter: int, tol: float, repeats: int) -> tuple[float, np.ndarray]:
    """(seconds per vmapped fit, iterations [S, K_count])."""
    points = clustered_points(num_seeds)
    mask = jnp.ones(points.shape[:2], bool)
    keys = jax.random.split(jax.random.PRNGKey(0), num_seeds)
    fit = jax.jit(jax.vmap(lambda k, p, m: fit_gmms(k, p, m, K_MIN, K_MAX, 1, max_iter, 1e-6, tol)))
    fits = jax.block_until_ready(fit(keys, points, mask))
    start = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(fit(keys, points, mask))
    return (time.perf_counter() - start) / repeats, np.asarray(fits.n_iter)[..., 0]


def bench(num_seeds: int, repeats: int) -> dict:
    seconds, iterations = time_fit(num_seeds, 100, 1e-3, repeats)
    short, _ = time_fit(num_seeds, 20, 0.0, repeats)
    long, _ = time_fit(num_seeds, 60, 0.0, repeats)
    per_iteration = (long - short) / 40
    return {
        "seeds": num_seeds,
        "fit_ms": 1e3 * seconds,
        "em_iteration_ms": 1e3 * per_iteration,
        "other_ms": 1e3 * (short - 20 * per_iteration),
        "iterations_max": int(iterations.max()),
        "iterations_mean": float(iterations.mean()),
    }


def parser() -> CommandParser:
    parser = CommandParser("bench-gmm-fit", __doc__, examples=("--seeds 1 16 --repeats 5",))
    parser.add_seeds(nargs="+", default=[1, 4, 16, 64], help="seed counts S, one row each")
    parser.add_argument("--repeats", type=int, default=20, help="timed fits; the median counts")
    parser.add_out(help="write the rows as JSON (default: print them only)")
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    rows = [bench(s, args.repeats) for s in args.seeds]
    print(
        format_table(
            [
                {
                    "seeds": r["seeds"],
                    "fit (ms)": f"{r['fit_ms']:.1f}",
                    "EM iteration (ms)": f"{r['em_iteration_ms']:.3f}",
                    "per seed (ms)": f"{r['em_iteration_ms'] / r['seeds']:.3f}",
                    "other (ms)": f"{r['other_ms']:.1f}",
                    "iterations: max": r["iterations_max"],
                    "mean": f"{r['iterations_mean']:.1f}",
                }
                for r in rows
            ],
            [
                "seeds",
                "fit (ms)",
                "EM iteration (ms)",
                "per seed (ms)",
                "other (ms)",
                "iterations: max",
                "mean",
            ],
        )
    )
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
