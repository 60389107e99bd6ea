"""Re-run the test set with a run directory's saved final policy.

    acl evaluate RUN_DIR [--episodes-per-task N]

Prints % mastered per seed (mean ± SE) beside the figure the training run recorded.
"""

from __future__ import annotations

import sys

import jax
import numpy as np

from acl.config import parse_config
from acl.core.errors import ConfigError
from acl.loop.evaluation import evaluate
from acl.run.results import RunDir, format_table, mean_se
from experiments.cli import CommandParser


def evaluate_run(run_path: str, episodes_per_task: int | None = None) -> dict:
    """Rebuild the run's env and agent, load its final parameters, evaluate every seed."""
    from acl.build import make_train

    run_dir = RunDir(run_path)
    config = parse_config(run_dir.read_config_dict())
    trainer = make_train(config)
    _, agent_state = run_dir.load_agents(trainer.env, trainer.agent)
    episodes = episodes_per_task or config.eval.episodes_per_task

    @jax.jit
    def eval_all(states):
        return jax.vmap(
            lambda s: evaluate(
                trainer.env,
                trainer.agent,
                s,
                trainer.evaluation.test_tasks,
                trainer.evaluation.key,
                episodes,
            )
        )(states)

    result = jax.device_get(eval_all(agent_state))
    mastered = np.asarray(result.pct_mastered)
    returns = np.asarray(result.mean_return)
    m_mean, m_se = mean_se(mastered)
    r_mean, r_se = mean_se(returns)
    return {
        "pct_mastered_per_seed": mastered.tolist(),
        "mean_return_per_seed": returns.tolist(),
        "pct_mastered_mean": m_mean,
        "pct_mastered_se": m_se,
        "mean_return_mean": r_mean,
        "mean_return_se": r_se,
    }


def parser() -> CommandParser:
    parser = CommandParser("evaluate", __doc__, examples=("runs/make_run/alp_gmm",))
    parser.add_argument("run_dir", help="a finished run directory (agent_params.msgpack)")
    parser.add_argument(
        "--episodes-per-task",
        type=int,
        default=None,
        help="episodes per test task (default: the run's eval.episodes_per_task)",
    )
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        figures = evaluate_run(args.run_dir, args.episodes_per_task)
    except (ConfigError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    summary = RunDir(args.run_dir).read_summary()
    rows = [
        {
            "source": "summary.json (training run)",
            "% mastered": f"{summary['final_pct_mastered_mean']:.2f} ± "
            f"{summary['final_pct_mastered_se']:.2f}",
            "test return": f"{summary['final_mean_return_mean']:.2f}",
        },
        {
            "source": "re-evaluated",
            "% mastered": f"{figures['pct_mastered_mean']:.2f} ± {figures['pct_mastered_se']:.2f}",
            "test return": f"{figures['mean_return_mean']:.2f}",
        },
    ]
    print(format_table(rows, list(rows[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
