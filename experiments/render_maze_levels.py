"""The held-out UED mazes (envs.maze_levels.EVALUATION) in one figure, as the README shows.

python -m experiments.render_maze_levels [--out experiments/figures/maze_held_out.png]
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.render_maze_levels")
    parser.add_argument("--out", default="experiments/figures/maze_held_out.png")
    parser.add_argument("--seed", type=int, default=0, help="seed of the procedural mazes")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from envs.maze import DEFAULT_SIZE, Maze, level_to_params
    from envs.maze_levels import EVALUATION, make_level

    env = Maze()
    cols = 5
    rows = -(-len(EVALUATION) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 3.2 * rows))
    for ax in axes.flat:
        ax.axis("off")
    for ax, name in zip(axes.flat, EVALUATION):
        # Smaller procedural levels are padded with walls to the default maze size.
        params = level_to_params(make_level(name, seed=args.seed), DEFAULT_SIZE, DEFAULT_SIZE)
        ax.imshow(env.render_level(params))
        ax.set_title(name)
    fig.tight_layout()
    fig.savefig(args.out, dpi=60)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
