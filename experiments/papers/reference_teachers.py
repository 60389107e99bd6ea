"""teachDeepRL's teacher logic in numpy, run on the toy bandit.

The reference our JAX teachers are measured against beyond the 3 seeds of its own code.

    acl reference-teachers [--teachers covar_gmm alp_gmm riac]
        [--dims 2 3] [--seeds 8] [--episodes 20000] [--score-every 1000]
        [--out runs/reference_teachers.json] [--no-progress]

A re-implementation (not a copy) of teachDeepRL's `CovarGMM`, `ALPGMM` and `RIAC` and of its
`ToyEnv`, which `envs.toy_bandit` follows; sklearn's GaussianMixture is the mixture fit, as
in the reference. What is kept exactly as the reference has it:

- Covar-GMM: every `fit_rate` (250) episodes, mixtures with k in 2..10 are fitted afresh
  (sklearn defaults: k-means init, reg_covar 1e-6, tol 1e-3, 100 iterations, one init, a
  new random state each fit) on the last 250 (task, relative time, reward) rows, raw
  units; the i-th episode of a window has time i / 250. The lowest AIC wins. Sampling: a
  uniform task until 250 episodes, then with probability 0.2; otherwise a Gaussian chosen
  in proportion to max(0, cov(time, reward)) (uniformly when all are 0), a draw from it,
  the task coordinates clipped to [0, 1].
- ALP-GMM: the same schedule and defaults on (task, ALP) rows, one fixed random state for
  every fit (the reference builds its mixtures with random_state=seed); ALP = |reward -
  reward of the nearest earlier task| once more than 5 tasks are stored (all of them,
  exact nearest neighbour); a Gaussian chosen in proportion to its mean ALP.
- RIAC: a region tree with at most 200 (reward, task) pairs per leaf; a full leaf tries
  50 random axis-aligned cuts (both halves >= 10 pairs, each >= 1/15 of every range),
  keeps the last best |ALP1 - ALP2| score (a tie with 0 counts), else drops its 50 oldest
  pairs; sampling 70% uniform in an ALP-chosen region, 20% uniform, 10% a mutation (std
  0.1) of the worst task of an ALP-chosen region. Quirks kept: every node (not only the
  leaves) is a region to sample, new children keep the ALPs of the last attempted cut
  until a task lands in them, and a region that dropped pairs keeps an unbounded buffer.

Run seeds one after another (BLAS and OpenMP limited to one thread); the seconds per seed
are this numpy code's, not teachDeepRL's.
"""

from __future__ import annotations

import itertools
import json
import time
import warnings
from collections import deque
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from experiments.cli import CommandParser

TEACHER_NAMES = ("covar_gmm", "alp_gmm", "riac")
POTENTIAL_KS = tuple(range(2, 11))
FIT_RATE = 250
RANDOM_TASK_RATIO = 0.2


class ToyEnv:
    """teachDeepRL's toy bandit: n^d cubes of competence 0..100 (see `envs.toy_bandit`)."""

    def __init__(self, num_dims: int, cubes_per_dim: int = 10):
        self.num_dims = num_dims
        self.competence = np.zeros((cubes_per_dim,) * num_dims, np.int64)
        # The reference's float64 bin edges k * (1 / n); bins closed on the left, the
        # last one on both sides.
        self.edges = np.arange(1, cubes_per_dim) * (1.0 / cubes_per_dim)
        offsets = [o for o in itertools.product((0, 1), repeat=num_dims) if any(o)]
        self.offsets = np.array(offsets, np.int64)

    def episode(self, task: np.ndarray) -> float:
        p = np.asarray(task, np.float64)[: self.num_dims]
        if np.any((p < 0.0) | (p > 1.0)):
            raise ValueError(f"task out of bounds: {task}")
        cube = np.searchsorted(self.edges, p, side="right")
        if np.all(cube == 0):
            learnable = True
        else:
            previous = np.maximum(cube - self.offsets, 0)
            previous = previous[np.any(previous != cube, axis=1)]
            learnable = bool(np.any(self.competence[tuple(previous.T)] >= 75))
        index = tuple(cube)
        if learnable:
            self.competence[index] = min(self.competence[index] + 1, 100)
        return self.competence[index] / 100.0

    def pct_mastered(self) -> float:
        return 100.0 * float(np.mean(self.competence > 75))


def proportional_choice(rng: np.random.Generator, values) -> int:
    """An index drawn in proportion to `values`; uniform when they sum to 0."""
    values = np.asarray(values, np.float64)
    if np.sum(values) == 0:
        return int(rng.integers(len(values)))
    return int(rng.choice(len(values), p=values / np.sum(values)))


def uniform_task(rng: np.random.Generator, dim: int) -> np.ndarray:
    return rng.uniform(0.0, 1.0, dim).astype(np.float32)


def fit_best_gmm(points: np.ndarray, random_states) -> GaussianMixture:
    """Mixtures for every k in POTENTIAL_KS with sklearn's defaults; the lowest AIC."""
    fits = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for k, state in zip(POTENTIAL_KS, random_states, strict=True):
            fits.append(GaussianMixture(k, covariance_type="full", random_state=state).fit(points))
    return fits[int(np.argmin([g.aic(points) for g in fits]))]


def covar_gmm_points(tasks: np.ndarray, rewards: np.ndarray, fit_rate: int = FIT_RATE):
    """The reference's fit rows after len(tasks) episodes (a multiple of fit_rate): the last
    fit_rate (task, time, reward), the i-th episode of the window at time i / fit_rate."""
    n = len(tasks)
    times = (np.arange(n) % fit_rate) / fit_rate
    rows = np.column_stack([np.asarray(tasks, np.float64), times, rewards])
    return rows[-fit_rate:]


class CovarGMM:
    """teachDeepRL's Covar-GMM logic."""

    def __init__(self, rng: np.random.Generator, dim: int, fit_rate: int = FIT_RATE):
        self.rng, self.dim, self.fit_rate = rng, dim, fit_rate
        self.tasks: list[np.ndarray] = []
        self.rewards: list[float] = []
        self.gmm: GaussianMixture | None = None

    def update(self, task: np.ndarray, reward: float) -> None:
        self.tasks.append(task)
        self.rewards.append(reward)
        n = len(self.tasks)
        if n >= self.fit_rate and n % self.fit_rate == 0:
            window = slice(n - self.fit_rate, n)
            points = covar_gmm_points(self.tasks[window], self.rewards[window], self.fit_rate)
            # The reference leaves sklearn on the global numpy state: a new init each fit.
            states = self.rng.integers(2**31, size=len(POTENTIAL_KS))
            self.gmm = fit_best_gmm(points, states)

    def sample_task(self) -> np.ndarray:
        if len(self.tasks) < self.fit_rate or self.rng.random() < RANDOM_TASK_RATIO:
            return uniform_task(self.rng, self.dim)
        lp = np.maximum(self.gmm.covariances_[:, -2, -1], 0.0)
        idx = proportional_choice(self.rng, lp)
        draw = self.rng.multivariate_normal(self.gmm.means_[idx], self.gmm.covariances_[idx])
        return np.clip(draw[:-2], 0.0, 1.0).astype(np.float32)


class ALPGMM:
    """teachDeepRL's ALP-GMM logic."""

    def __init__(self, rng: np.random.Generator, dim: int, fit_rate: int = FIT_RATE):
        self.rng, self.dim, self.fit_rate = rng, dim, fit_rate
        # The reference fits every mixture with random_state=seed: the same inits each fit.
        self.states = [int(rng.integers(42, 424242))] * len(POTENTIAL_KS)
        self.history_tasks = np.empty((1024, dim))
        self.history_rewards = np.empty(1024)
        self.stored = 0
        self.rows: list[np.ndarray] = []
        self.gmm: GaussianMixture | None = None

    def alp(self, task: np.ndarray, reward: float) -> float:
        """|reward - reward of the nearest stored task| once more than 5 are stored."""
        alp, n = 0.0, self.stored
        if n > 5:
            nearest = int(np.argmin(np.sum((self.history_tasks[:n] - task) ** 2, axis=1)))
            alp = abs(reward - self.history_rewards[nearest])
        if n == len(self.history_rewards):
            # Amortised growth: the full history is searched every episode.
            self.history_tasks = np.concatenate([self.history_tasks, self.history_tasks])
            self.history_rewards = np.concatenate([self.history_rewards, self.history_rewards])
        self.history_tasks[n], self.history_rewards[n] = task, reward
        self.stored = n + 1
        return alp

    def update(self, task: np.ndarray, reward: float) -> None:
        self.rows.append(np.r_[np.asarray(task, np.float64), self.alp(task, reward)])
        n = len(self.rows)
        if n >= self.fit_rate and n % self.fit_rate == 0:
            self.gmm = fit_best_gmm(np.asarray(self.rows[-self.fit_rate :]), self.states)

    def sample_task(self) -> np.ndarray:
        if len(self.rows) < self.fit_rate or self.rng.random() < RANDOM_TASK_RATIO:
            return uniform_task(self.rng, self.dim)
        idx = proportional_choice(self.rng, self.gmm.means_[:, -1])
        draw = self.rng.multivariate_normal(self.gmm.means_[idx], self.gmm.covariances_[idx])
        return np.clip(draw[:-1], 0.0, 1.0).astype(np.float32)


class Region:
    """A box [low, high] (closed, float32) with its (reward, task) pairs."""

    def __init__(self, low, high, rewards: deque, tasks: deque, alp: float):
        self.low, self.high = low, high
        self.rewards, self.tasks, self.alp = rewards, tasks, alp
        self.children: list[Region] = []

    def contains(self, task: np.ndarray) -> bool:
        return bool(np.all(task >= self.low) and np.all(task <= self.high))


class RIAC:
    """teachDeepRL's RIAC logic, default parameters."""

    def __init__(self, rng: np.random.Generator, dim: int, max_region_size: int = 200):
        self.rng, self.dim, self.maxlen = rng, dim, max_region_size
        self.minlen = max_region_size / 20
        self.min_width = 1 / 15
        self.discard = int(max_region_size / 4)
        self.split_attempts = 50
        low, high = np.zeros(dim, np.float32), np.ones(dim, np.float32)
        self.regions = [Region(low, high, self._pairs(), self._pairs(), 0.0)]
        self.sampled = 0

    def _pairs(self) -> deque:
        return deque(maxlen=self.maxlen + 1)

    def compute_alp(self, rewards) -> float:
        """|mean of the older half - mean of the newer half| of the last maxlen rewards."""
        if len(rewards) <= 2:
            return 0.0
        window = min(len(rewards), self.maxlen)
        half = int(window / 2)
        r = np.asarray(rewards)
        return float(abs(r[-window:-half].mean() - r[-half:].mean()))

    def update(self, task: np.ndarray, reward: float) -> None:
        touched, to_split = [], []

        def add(region: Region) -> None:
            if not region.contains(task):
                return
            touched.append(region)
            for child in region.children:
                add(child)
            region.tasks.append(task.copy())
            region.rewards.append(reward)
            if not region.children and len(region.rewards) > self.maxlen:
                to_split.append(region)

        add(self.regions[0])
        if to_split:
            self.split(to_split[0])
        for region in touched:
            region.alp = self.compute_alp(region.rewards)

    def split(self, region: Region) -> None:
        tasks, rewards = np.asarray(region.tasks), np.asarray(region.rewards)
        best, best_score, alps = None, 0.0, (0.0, 0.0)
        for _ in range(self.split_attempts):
            # Redraw until both halves hold minlen pairs (the reference loops unguarded).
            for _ in range(10_000):
                dim = int(self.rng.integers(self.dim))
                cut = np.float32(self.rng.uniform(region.low[dim], region.high[dim]))
                high1, low2 = region.high.copy(), region.low.copy()
                high1[dim], low2[dim] = cut, cut
                valid = bool(
                    np.all(high1 - region.low >= self.min_width)
                    and np.all(region.high - low2 >= self.min_width)
                )
                first = np.all((tasks >= region.low) & (tasks <= high1), axis=1)
                if first.sum() >= self.minlen and (~first).sum() >= self.minlen:
                    break
            alps = (self.compute_alp(rewards[first]), self.compute_alp(rewards[~first]))
            # The reference's score multiplies by len() of a [rewards, tasks] pair: 2 * 2.
            score = 4 * abs(alps[0] - alps[1])
            if score >= best_score and valid:
                best_score, best = score, (dim, cut, first)
        if best is None:
            # Drop the oldest quarter; the reference's new deques have no maxlen.
            region.rewards = deque(list(region.rewards)[self.discard :])
            region.tasks = deque(list(region.tasks)[self.discard :])
            return
        dim, cut, first = best
        high1, low2 = region.high.copy(), region.low.copy()
        high1[dim], low2[dim] = cut, cut
        halves = ((first, region.low, high1, alps[0]), (~first, low2, region.high, alps[1]))
        for side, low, high, alp in halves:
            child = Region(low.copy(), high.copy(), self._pairs(), self._pairs(), alp)
            child.rewards.extend(rewards[side].tolist())
            child.tasks.extend(list(tasks[side]))
            region.children.append(child)
            self.regions.append(child)

    def _region_task(self, region: Region) -> np.ndarray:
        return self.rng.uniform(region.low, region.high).astype(np.float32)

    def sample_task(self) -> np.ndarray:
        mode = self.rng.random()
        alps = [r.alp for r in self.regions]
        if mode < 0.1 and self.sampled > 0:
            region = self.regions[proportional_choice(self.rng, alps)]
            worst = region.tasks[int(np.argmin(region.rewards))]
            task = self.rng.normal(np.asarray(worst, np.float64), 0.1)
            task = np.clip(task, region.low + 1e-5, region.high - 1e-5)
        elif mode < 0.3:
            task = self._region_task(self.regions[0])
        else:
            task = self._region_task(self.regions[proportional_choice(self.rng, alps)])
        self.sampled += 1
        return np.asarray(task, np.float32)


TEACHERS = {"covar_gmm": CovarGMM, "alp_gmm": ALPGMM, "riac": RIAC}


def run_seed(name: str, num_dims: int, seed: int, episodes: int, score_every: int) -> list:
    """% mastered after every score_every episodes of one seed."""
    rng = np.random.default_rng([seed, num_dims, TEACHER_NAMES.index(name)])
    env = ToyEnv(num_dims)
    teacher = TEACHERS[name](rng, num_dims)
    scores = []
    for episode in range(1, episodes + 1):
        task = teacher.sample_task()
        teacher.update(task, env.episode(task))
        if episode % score_every == 0:
            scores.append(env.pct_mastered())
    return scores


def parser() -> CommandParser:
    parser = CommandParser(
        "reference-teachers", __doc__, examples=("--dims 3", "--teachers alp_gmm --seeds 3")
    )
    parser.add_argument(
        "--teachers",
        nargs="+",
        default=list(TEACHER_NAMES),
        choices=TEACHER_NAMES,
        help="reference teachers (default: all)",
    )
    parser.add_argument(
        "--dims", nargs="+", type=int, default=[2, 3], help="task dimensions of the bandit"
    )
    parser.add_seeds(default=8, help="seeds per teacher, run one after another")
    parser.add_argument("--episodes", type=int, default=20_000, help="episodes per seed")
    parser.add_argument(
        "--score-every", type=int, default=1_000, help="episodes between two scores"
    )
    parser.add_out(default="runs/reference_teachers.json", help="the JSON")
    parser.add_no_progress()
    return parser


def main(argv=None) -> int:
    from threadpoolctl import threadpool_limits
    from tqdm import tqdm

    from acl.run.results import mean_se, provenance

    args = parser().parse_args(argv)

    runs = [(d, name) for d in args.dims for name in args.teachers]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    protocol = {"episodes": args.episodes, "score_every": args.score_every, "cubes_per_dim": 10}
    record = {"protocol": protocol, "provenance": provenance(list(range(args.seeds)))}
    results = []
    bar = tqdm(total=len(runs) * args.seeds, unit="seed", disable=args.no_progress)
    with threadpool_limits(1), bar:
        for d, name in runs:
            scores, seconds = [], []
            for seed in range(args.seeds):
                bar.set_description(f"{name} d={d} seed {seed}")
                start = time.perf_counter()
                scores.append(run_seed(name, d, seed, args.episodes, args.score_every))
                seconds.append(time.perf_counter() - start)
                bar.update()
            final = [s[-1] for s in scores]
            mean, se = mean_se(final)
            results.append(
                {
                    "teacher": name,
                    "d": d,
                    "seeds": args.seeds,
                    "final_mean": mean,
                    "final_se": se,
                    "final_per_seed": final,
                    "seconds_per_seed": float(np.mean(seconds)),
                    "scores": scores,
                }
            )
            # Written after every (teacher, d): an interrupted run keeps what it finished.
            out.write_text(json.dumps({**record, "results": results}, indent=2))
            bar.write(f"{name:10s} d={d}  {mean:5.1f} ± {se:4.1f}  {np.mean(seconds):.1f} s/seed")

    header = "| teacher | d | final % mastered | seeds | s/seed |"
    rows = [
        f"| {r['teacher']} | {r['d']} | {r['final_mean']:.1f} ± {r['final_se']:.1f} "
        f"| {r['seeds']} | {r['seconds_per_seed']:.1f} |"
        for r in results
    ]
    print("\n".join([header, "|---|---|---|---|---|", *rows]))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
