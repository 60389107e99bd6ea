"""teachDeepRL's own teachers on its own toy env, timed one process per seed.

The reference side of the toy bandit's speed comparison (`acl toy-bandit` is ours).

    acl bench-teachdeeprl --source DIR [--commit REV] [--settings d2 d3 d2_distractors3 d4]
        [--teachers riac covar_gmm alp_gmm random] [--seeds 3] [--episodes 20000]
        [--score-every 1000] [--venv runs/teachdeeprl_venv] [--timeout SECONDS]
        [--ours runs/toy_bandit/results.json]
        [--out experiments/results/toy_bandit/teachdeeprl_reference.json] [--no-progress]

`--source` is a clone of github.com/flowersteam/teachDeepRL (a work tree or a bare git
directory). Nothing of it enters this repository: its `teachDRL/teachers` and
`teachDRL/toy_env` at `--commit` are unpacked under `--venv`, a virtualenv made there on
the first run with the packages its code imports (REQUIREMENTS). A driver written there
at run time calls the reference's own toy-env entry points (`test_riac`, `test_alpgmm`,
`test_covar_gmm`, `test_random` of `teachDRL/toy_env/toy_env.py`, no gifs, no printing)
on its `ToyEnv`: d dimensions of cubes, the teacher over d + distractors dimensions (the
env ignores the extra ones). Each seed is its own process (`numpy.random.seed(seed)`
first), one after another, with BLAS and OpenMP limited to one thread.

A seed's seconds are the wall time of that entry point: imports and process start are
not counted, and its loop runs `--episodes` + 1 episodes, scoring before each block. Its
CPU time is kept beside it. The JSON holds every seed's seconds and scores, the summary
per (setting, teacher), every package of the virtualenv with its version, the Python,
the reference commit and the machine. The table printed gives the seconds per seed
(mean, min-max) and the final % mastered; with `--ours` (a results.json of `acl
toy-bandit`) also our seconds per seed and the speed-up: the reference's fastest seed
over ours, the least favourable ratio.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from acl.benchmark.timing import processor_model
from acl.core.errors import ConfigError
from acl.run.results import format_table
from experiments.cli import ROOT, CommandParser, one_line_errors
from experiments.papers.toy_bandit import SETTINGS

TEACHERS = ("random", "riac", "alp_gmm", "covar_gmm")
ENTRY_POINTS = {
    "random": "test_random",
    "riac": "test_riac",
    "alp_gmm": "test_alpgmm",
    "covar_gmm": "test_covar_gmm",
}
"""Our teacher names -> the reference's toy-env functions."""
REQUIREMENTS = (
    "numpy==1.26.4",
    "scipy==1.13.1",
    "scikit-learn==1.5.2",
    "gym==0.26.2",
    "treelib==1.7.0",
    "matplotlib==3.9.2",
    "imageio==2.35.1",
    "seaborn==0.13.2",
)
"""What `teachDRL/teachers` and `teachDRL/toy_env` import (its setup.py pins 2019
releases that no longer install on a current Python; numpy < 2 for gym 0.26)."""
REFERENCE_PATHS = ("teachDRL/teachers", "teachDRL/toy_env")
"""The parts of the reference repository that are unpacked and run."""
ONE_THREAD = {
    name: "1"
    for name in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
    )
}
DEFAULT_OUT = ROOT / "experiments" / "results" / "toy_bandit" / "teachdeeprl_reference.json"

DRIVER = '''"""Written by acl bench-teachdeeprl: one seed of a teacher on teachDeepRL's toy env."""
import json
import sys
import time

import numpy as np

source, num_dims, distractors, cubes, teacher, episodes, score_every, seed = sys.argv[1:]
sys.path.insert(0, source)
from teachDRL.toy_env import toy_env  # noqa: E402

env = toy_env.ToyEnv(nb_cubes=int(cubes), nb_dims=int(num_dims))
run = getattr(toy_env, teacher)
np.random.seed(int(seed))
start, cpu_start = time.perf_counter(), time.process_time()
scores = run(
    env,
    int(episodes),
    gif=False,
    nb_dims=int(num_dims) + int(distractors),
    score_step=int(score_every),
    verbose=False,
)
seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
result = {"seconds": seconds, "cpu_seconds": cpu_seconds, "scores": [float(s) for s in scores]}
print("RESULT " + json.dumps(result))
'''

VERSIONS = """import importlib.metadata, json, platform
packages = {d.metadata["Name"]: d.version for d in importlib.metadata.distributions()}
print(json.dumps({"python": platform.python_version(), "packages": dict(sorted(packages.items()))}))
"""


def git_dir(source: Path) -> Path:
    """The git directory of a clone (work tree or bare)."""
    if (source / ".git").exists():
        return source / ".git"
    if (source / "HEAD").is_file() and (source / "objects").is_dir():
        return source
    raise ConfigError(f"--source: {source} is not a git clone of teachDeepRL")


def git(gdir: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", f"--git-dir={gdir}", *args], capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise ConfigError(f"git {' '.join(args)} in {gdir}: {out.stderr.strip()}")
    return out.stdout.strip()


def unpack_reference(source: Path, commit: str, venv: Path) -> tuple[Path, str]:
    """The reference's teachers and toy env at `commit`, unpacked under `venv`:
    (the directory to put on sys.path, the full commit hash)."""
    gdir = git_dir(source)
    sha = git(gdir, "rev-parse", "--verify", f"{commit}^{{commit}}")
    target = venv / f"teachdeeprl-{sha[:12]}"
    if not (target / REFERENCE_PATHS[0]).is_dir():
        archive = subprocess.run(
            ["git", f"--git-dir={gdir}", "archive", "--format=tar", sha, *REFERENCE_PATHS],
            capture_output=True,
            check=False,
        )
        if archive.returncode:
            raise ConfigError(f"git archive {sha}: {archive.stderr.decode().strip()}")
        staging = Path(tempfile.mkdtemp(dir=venv))
        with tempfile.TemporaryFile() as tar_file:
            tar_file.write(archive.stdout)
            tar_file.seek(0)
            with tarfile.open(fileobj=tar_file) as tar:
                tar.extractall(staging, filter="data")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target, sha


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_venv(venv: Path, progress: bool) -> Path:
    """The virtualenv's python, made and filled with REQUIREMENTS on first use."""
    python = venv_python(venv)
    marker = venv / "requirements.txt"
    wanted = "\n".join(REQUIREMENTS) + "\n"
    if python.exists() and marker.is_file() and marker.read_text() == wanted:
        return python
    if progress:
        print(f"making the reference's virtualenv in {venv} ...", flush=True)
    if not python.exists():
        # The base interpreter, not this one's venv: the reference's packages stay apart.
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    quiet = [] if progress else ["--quiet"]
    subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", *quiet, *REQUIREMENTS],
        check=True,
    )
    marker.write_text(wanted)
    return python


def reference_versions(python: Path) -> dict:
    """The virtualenv's Python and every package installed in it."""
    # Run from the virtualenv: from the repository, its egg-info would be listed too.
    out = subprocess.run(
        [str(python), "-c", VERSIONS],
        capture_output=True,
        text=True,
        check=True,
        cwd=python.parents[1],
    )
    return json.loads(out.stdout)


def run_seed(
    python: Path,
    driver: Path,
    source_dir: Path,
    setting: str,
    teacher: str,
    seed: int,
    episodes: int,
    score_every: int,
    timeout: float | None,
) -> dict:
    """One seed in its own process: {"seconds", "process_seconds", "scores"} or an error."""
    config = SETTINGS[setting]
    env = {**os.environ, **ONE_THREAD, "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}
    env.pop("PYTHONPATH", None)
    args = [
        str(python),
        str(driver),
        str(source_dir),
        str(config["num_dims"]),
        str(config["num_distractors"]),
        "10",
        ENTRY_POINTS[teacher],
        str(episodes),
        str(score_every),
        str(seed),
    ]
    start = time.perf_counter()
    try:
        done = subprocess.run(
            args,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
            cwd=driver.parent,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s"}
    process_seconds = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {done.returncode}: {' | '.join(tail)}"}
    result = json.loads(lines[-1][len("RESULT ") :])
    return {**result, "process_seconds": process_seconds}


def summarise(runs: list[dict]) -> dict:
    seconds = [r["seconds"] for r in runs if "seconds" in r]
    finals = [r["scores"][-1] for r in runs if "scores" in r]
    return {
        "seeds_done": len(seconds),
        "seeds_failed": len(runs) - len(seconds),
        "seconds_per_seed": float(np.mean(seconds)) if seconds else None,
        "seconds_min": float(np.min(seconds)) if seconds else None,
        "seconds_max": float(np.max(seconds)) if seconds else None,
        "cpu_seconds_per_seed": float(np.mean([r["cpu_seconds"] for r in runs if "seconds" in r]))
        if seconds
        else None,
        "final_mean": float(np.mean(finals)) if finals else None,
    }


def ours_seconds(path: Path | None) -> dict[tuple[str, str], float]:
    """(setting, teacher) -> our seconds per seed, from an `acl toy-bandit` results.json
    (default options only)."""
    if path is None:
        return {}
    if not path.is_file():
        raise ConfigError(f"--ours: no file at {path}")
    results = json.loads(path.read_text())["results"]
    return {
        (r["setting"], r["teacher"]): r["seconds_per_seed"] for r in results if not r["options"]
    }


def table(summary: list[dict], ours: dict) -> str:
    rows = []
    for s in summary:
        row = {
            "setting": s["setting"],
            "teacher": s["teacher"],
            "seeds": f"{s['seeds_done']}"
            + (f" ({s['seeds_failed']} failed)" * bool(s["seeds_failed"])),
            "s/seed (reference)": "-"
            if s["seconds_per_seed"] is None
            else f"{s['seconds_per_seed']:.1f} ({s['seconds_min']:.1f}-{s['seconds_max']:.1f})",
            "final % mastered": "-" if s["final_mean"] is None else f"{s['final_mean']:.1f}",
        }
        if ours:
            mine = ours.get((s["setting"], s["teacher"]))
            row["s/seed (ours)"] = "-" if mine is None else f"{mine:.3f}"
            row["speed-up vs fastest reference seed"] = (
                "-"
                if mine is None or s["seconds_min"] is None
                else f"{s['seconds_min'] / mine:.0f}x"
            )
        rows.append(row)
    return format_table(rows, list(rows[0]) if rows else [])


def machine() -> dict:
    return {
        "processor": processor_model(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def parser() -> CommandParser:
    parser = CommandParser(
        "bench-teachdeeprl",
        __doc__,
        examples=(
            "--source ../teachDeepRL --settings d2 --teachers riac --seeds 1 --episodes 2000 "
            "--out runs/teachdeeprl_smoke.json",
            "--source ../teachDeepRL --ours runs/toy_bandit/results.json",
        ),
    )
    parser.add_argument(
        "--source", required=True, help="a git clone of github.com/flowersteam/teachDeepRL"
    )
    parser.add_argument("--commit", default="HEAD", help="the reference's revision to run")
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["d2", "d3", "d2_distractors3", "d4"],
        choices=list(SETTINGS),
        help="toy-bandit settings, as `acl toy-bandit` names them",
    )
    parser.add_argument(
        "--teachers",
        nargs="+",
        default=["riac", "covar_gmm", "alp_gmm"],
        choices=TEACHERS,
        help="the reference's teachers to time",
    )
    parser.add_seeds(default=3, help="seeds per (setting, teacher), one process each")
    parser.add_argument("--episodes", type=int, default=20_000, help="episodes per seed")
    parser.add_argument(
        "--score-every", type=int, default=1_000, help="episodes between two scores"
    )
    parser.add_argument(
        "--venv",
        default="runs/teachdeeprl_venv",
        help="the reference's virtualenv and unpacked code (made on first use)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds before a seed's process is stopped and counted as failed (default: none)",
    )
    parser.add_argument(
        "--ours", default=None, help="an `acl toy-bandit` results.json: adds our s/seed"
    )
    parser.add_out(default=str(DEFAULT_OUT), help="the JSON")
    parser.add_no_progress(help="no line per seed")
    return parser


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.seeds < 1 or args.episodes < 1 or args.score_every < 1:
        raise ConfigError("--seeds, --episodes and --score-every must be >= 1")
    ours = ours_seconds(None if args.ours is None else Path(args.ours))
    venv = Path(args.venv).resolve()
    venv.mkdir(parents=True, exist_ok=True)
    source_dir, commit = unpack_reference(Path(args.source), args.commit, venv)
    python = ensure_venv(venv, not args.no_progress)
    driver = venv / "toy_driver.py"
    driver.write_text(DRIVER)
    versions = reference_versions(python)
    machine_info = machine()

    runs, summary = [], []
    for setting in args.settings:
        for teacher in args.teachers:
            seeds = []
            for seed in range(args.seeds):
                result = run_seed(
                    python,
                    driver,
                    source_dir,
                    setting,
                    teacher,
                    seed,
                    args.episodes,
                    args.score_every,
                    args.timeout,
                )
                record = {"setting": setting, "teacher": teacher, "seed": seed, **result}
                seeds.append(record)
                if not args.no_progress:
                    what = (
                        f"{result['seconds']:.1f} s, final {result['scores'][-1]:.1f}"
                        if "seconds" in result
                        else result["error"]
                    )
                    print(f"{setting:16s} {teacher:10s} seed {seed}: {what}", flush=True)
            runs += seeds
            summary.append({"setting": setting, "teacher": teacher, **summarise(seeds)})

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "protocol": {
            "episodes": args.episodes,
            "score_every": args.score_every,
            "seeds": args.seeds,
            "cubes_per_dim": 10,
            "settings": {name: SETTINGS[name] for name in args.settings},
            "one_process_per_seed": True,
            "threads": ONE_THREAD,
        },
        "reference": {
            "repository": "github.com/flowersteam/teachDeepRL",
            "commit": commit,
            "entry_points": {
                t: f"teachDRL/toy_env/toy_env.py:{ENTRY_POINTS[t]}" for t in args.teachers
            },
        },
        "versions": versions,
        "machine": machine_info,
        "summary": summary,
        "runs": runs,
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
    print()
    print(table(summary, ours))
    shown = out.resolve()
    print(f"\nwritten: {shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else out}")
    return 0 if all(s["seeds_failed"] == 0 for s in summary) else 1


if __name__ == "__main__":
    raise SystemExit(main())
