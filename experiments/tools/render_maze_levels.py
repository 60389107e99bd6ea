"""Draw a named set of held-out UED mazes in one figure.

    acl render-maze-levels [--out experiments/figures/maze_held_out.png]
    acl render-maze-levels --maze-set maze_mini_held_out
        --out experiments/figures/maze_mini_held_out.png   # the mini-UED protocol's 9 x 9

The default set is the published held-out mazes (envs.maze_levels.EVALUATION), as the
README shows them.
"""

from __future__ import annotations

import sys

from experiments.cli import CommandParser


def parser() -> CommandParser:
    parser = CommandParser(
        "render-maze-levels",
        __doc__,
        examples=("--maze-set maze_mini_held_out --out runs/maze_mini_held_out.png",),
    )
    parser.add_out(default="experiments/figures/maze_held_out.png", help="the PNG")
    parser.add_argument(
        "--maze-set",
        default="maze_held_out",
        help="a named set of envs.maze_levels.NAMED_SETS (maze_held_out, maze_mini_held_out...)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the procedural mazes")
    return parser


def main(argv=None) -> int:
    parser_ = parser()
    args = parser_.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from envs.maze import Maze, level_to_params
    from envs.maze_levels import NAMED_SETS, make_level

    if args.maze_set not in NAMED_SETS:
        parser_.error(f"--maze-set: unknown {args.maze_set!r}; sets: {', '.join(NAMED_SETS)}")
    names = NAMED_SETS[args.maze_set]
    levels = [make_level(name, seed=args.seed) for name in names]
    size = max(max(level.wall_map.shape) for level in levels)
    env = Maze(height=size, width=size)
    cols = min(5, len(names)) if len(names) != 8 else 4
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 3.2 * rows))
    for ax in axes.flat:
        ax.axis("off")
    for ax, name, level in zip(axes.flat, names, levels):
        # Smaller procedural levels are padded with walls to the set's largest size.
        params = level_to_params(level, size, size)
        ax.imshow(env.render_level(params))
        ax.set_title(name)
    fig.tight_layout()
    fig.savefig(args.out, dpi=60)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
