"""Which mixture sizes a GMM teacher's fits choose on a run's own data.

Also what a narrower k range would cost and change.

    acl gmm-k-range
        [--config experiments/configs/point_reach_unfeasible_alp_gmm.yaml] [--seeds N]
        [--set KEY=VALUE ...] [--k-max 9 5] [--repeats 1] [--out FILE.json]

1. Trains the config (its seeds vmapped, the teacher as configured) and keeps the
   teacher's fit buffer at each of its fits: the points every fit saw.
2. Refits every kept buffer with k in [k_min, K] for each K of `--k-max` (default: the
   teacher's own k_max), with the fit's own key and the teacher's EM settings, all seeds
   vmapped as in the run. Per K: how often each k is chosen (the teacher's criterion),
   the share of fits whose chosen mixture equals the one chosen with the first K (same
   k, parameters within 1e-5), and the median wall time of one vmapped fit, timed apart
   from training.

With the teacher's own k_max first, its row reproduces the run's fits: the refit chosen
mixtures are compared with the run's, as a check (`matches_run`).
"""

from __future__ import annotations

import functools
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from acl.benchmark.timing import report
from acl.build import make_train, run_data
from acl.config import load_config
from acl.teachers.alp_gmm import GMMTeacher
from acl.teachers.gmm import GMM
from experiments.cli import CommandParser


def unwrap(obj):
    """A teacher or its state, without the wrappers (challenge, subspace) around it."""
    while hasattr(obj, "inner"):
        obj = obj.inner
    return obj


def capture_fit_buffers(config, trainer) -> dict[str, np.ndarray]:
    """Trains `config`'s `trainer` and returns what each fit saw and chose, with leading
    axes [fits, seeds]: points [.., P, F], valid [.., P], key (the fit's PRNG key),
    reg_covar, and the run's mixture after the fit (weights, means, covariances)."""
    teacher = unwrap(trainer.teacher)
    if not isinstance(teacher, GMMTeacher):
        raise SystemExit(f"the config's teacher is {type(teacher).__name__}, not a GMM teacher")
    every = teacher.fit_every
    axes = trainer.carry_axes

    def until_fit(carry):
        carry, _ = trainer.run_iterations(carry, every)
        state = unwrap(carry.seed.teacher_state)
        step = carry.iteration - 1  # the last iteration of the call: its update fitted
        return carry, {
            "points": teacher.fit_points(state),
            "valid": state.fit_buffer.valid,
            "key": teacher.fit_key(state, step),
            "reg_covar": state.params.reg_covar,
            "weights": state.gmm.weights,
            "means": state.gmm.means,
            "covariances": state.gmm.covariances,
        }

    step = jax.jit(jax.vmap(until_fit, in_axes=(axes,), out_axes=(axes, 0)))
    carry = trainer.jit_init_seeds()(trainer.seed_keys(), run_data(config, trainer))
    total = trainer.schedule.iterations
    records = []
    for _ in tqdm(range(total // every), desc="training", unit="fit"):
        carry, record = step(carry)
        records.append(jax.device_get(record))
    return {name: np.stack([r[name] for r in records]) for name in records[0]}


def refit(teacher: GMMTeacher, buffers: dict, k_max: int, repeats: int) -> dict:
    """Every kept buffer refitted with k in [teacher.k_min, k_max] (`best_mixture`): the
    chosen mixtures (a GMM with leading axes [fits, seeds], padded to k_max) and the median
    seconds of one vmapped fit."""
    fit = jax.jit(jax.vmap(functools.partial(teacher.best_mixture, k_max=k_max)))
    args = [jnp.asarray(buffers[name]) for name in ("key", "points", "valid", "reg_covar")]
    jax.block_until_ready(fit(*(a[0] for a in args)))
    seconds, chosen = [], []
    for i in tqdm(range(len(args[0])), desc=f"refits, k <= {k_max}", unit="fit"):
        for _ in range(repeats):
            start = time.perf_counter()
            gmm = jax.block_until_ready(fit(*(a[i] for a in args)))
            seconds.append(time.perf_counter() - start)
        chosen.append(jax.device_get(gmm))
    return {
        "gmm": jax.tree.map(lambda *xs: np.stack(xs), *chosen),
        "seconds": statistics.median(seconds),
    }


def same_mixture(a: GMM, b, atol: float = 1e-5) -> np.ndarray:
    """[fits, seeds] bool: the same active components with parameters within atol (the
    two may be padded to different k_max)."""
    width = min(a.weights.shape[-1], b.weights.shape[-1])
    wider = a if a.weights.shape[-1] > width else b
    same = np.all(wider.weights[..., width:] == 0, axis=-1)
    for x, y in zip(
        (a.weights, a.means, a.covariances), (b.weights, b.means, b.covariances), strict=True
    ):
        x, y = x[:, :, :width], y[:, :, :width]
        same &= np.all(np.abs(x - y) <= atol, axis=tuple(range(2, x.ndim)))
    return same


def parser() -> CommandParser:
    parser = CommandParser(
        "gmm-k-range", __doc__, examples=("--k-max 9 5", "--config cartpole_unfeasible_alp_gmm")
    )
    parser.add_config(default="experiments/configs/point_reach_unfeasible_alp_gmm.yaml")
    parser.add_seeds()
    parser.add_overrides()
    parser.add_argument(
        "--k-max", type=int, nargs="+", default=None, help="k ranges to refit (default: own)"
    )
    parser.add_argument("--repeats", type=int, default=1, help="timed calls per fit")
    parser.add_out(default="runs/gmm_k_range.json", help="the JSON")
    return parser


def main(argv=None) -> int:
    parser_ = parser()
    args = parser_.parse_args(argv)
    config = load_config(args.config, args.overrides, num_seeds=args.seeds)
    trainer = make_train(config)
    teacher = unwrap(trainer.teacher)
    k_maxes = args.k_max or [teacher.k_max]
    if min(k_maxes) < teacher.k_min or args.repeats < 1:
        parser_.error(f"--k-max must be >= the teacher's k_min ({teacher.k_min}), --repeats >= 1")

    buffers = capture_fit_buffers(config, trainer)
    run_gmm = GMM(buffers["weights"], buffers["means"], buffers["covariances"])
    refits = {k: refit(teacher, buffers, k, args.repeats) for k in k_maxes}
    first = refits[k_maxes[0]]["gmm"]
    ks = range(teacher.k_min, max(k_maxes) + 1)
    rows, results = [], {}
    for k_max, result in refits.items():
        chosen = np.sum(result["gmm"].weights > 0, axis=-1)  # [fits, seeds]
        counts = {k: int(np.sum(chosen == k)) for k in ks}
        results[k_max] = {
            "seconds_per_fit": result["seconds"],
            "chosen_k_counts": counts,
            "same_as_first": float(np.mean(same_mixture(result["gmm"], first))),
        }
        row = {"k_max": k_max, "fit ms (apart)": f"{1e3 * result['seconds']:.1f}"}
        row.update({f"k={k}": counts[k] for k in ks})
        row["same as k_max first"] = f"{results[k_max]['same_as_first']:.3f}"
        row["matches run"] = ""
        if k_max == teacher.k_max:
            # Fits the run did not keep (no new episodes, too few points) left its mixture.
            matches = float(np.mean(same_mixture(result["gmm"], run_gmm)))
            results[k_max]["matches_run"] = matches
            row["matches run"] = f"{matches:.3f}"
        rows.append(row)
    report(
        "gmm_k_range",
        rows,
        args.out,
        list(range(config.seed, config.seed + config.num_seeds)),
        config=config.to_dict(),
        fits=int(buffers["points"].shape[0]),
        results={str(k): r for k, r in results.items()},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
