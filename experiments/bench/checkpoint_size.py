"""Size of one checkpoint of a config's run (all seeds), without training.

    acl checkpoint-size CONFIG [CONFIG ...] [--preset NAME] [--out FILE.json]

For each config it builds the loop, initialises the carry of every seed, saves it as a
run's checkpoint (acl.run.checkpoint) into a temporary directory and prints the raw bytes of
its arrays beside the size on disk. The carry has the same arrays before and after
training, so the raw bytes are those of every checkpoint of the run; the size on disk may
differ a little once the arrays hold trained values (orbax compresses them).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import jax
import numpy as np

from acl.build import make_train, run_data
from acl.config import load_config
from acl.run.checkpoint import Progress, RunCheckpoints
from acl.run.results import format_table
from experiments.cli import CommandParser, config_path, one_line_errors


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def checkpoint_size(config_path: str, preset: str | None = None) -> dict:
    config = load_config(config_path, preset=preset)
    trainer = make_train(config)
    keys = trainer.seed_keys()
    carry = trainer.jit_init_seeds()(keys, run_data(config, trainer))
    # The last evaluation's metrics are saved too: their shapes, without running a chunk.
    _, metrics = jax.eval_shape(trainer.jit_run_chunk_seeds(), carry)
    metrics = jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), metrics)
    raw = sum(leaf.nbytes for leaf in jax.tree.leaves((carry, metrics)))
    with tempfile.TemporaryDirectory() as folder:
        checkpoints = RunCheckpoints(folder)
        checkpoints.save(carry, metrics, Progress(1, {}, 0.0, 0.0))
        checkpoints.wait()
        checkpoints.close()
        on_disk = folder_bytes(Path(folder))
    return {
        "config": config.name,
        "seeds": config.num_seeds,
        "raw_bytes": raw,
        "bytes_on_disk": on_disk,
    }


def parser() -> CommandParser:
    parser = CommandParser(
        "checkpoint-size", __doc__, examples=("maze_dr ued_mini_plr", "maze_dr --preset cpu")
    )
    parser.add_argument(
        "configs",
        nargs="+",
        type=config_path,
        help="configs: paths or names of experiments/configs/ (acl run --help lists them)",
    )
    parser.add_preset(help="apply the configs' presets.NAME section (listed below)")
    parser.add_out(help="write the rows as JSON (default: print them only)")
    return parser


@one_line_errors
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    rows = [checkpoint_size(path, args.preset) for path in args.configs]
    print(
        format_table(
            [
                {
                    "config": r["config"],
                    "seeds": r["seeds"],
                    "arrays (MB)": f"{r['raw_bytes'] / 1e6:.2f}",
                    "on disk (MB)": f"{r['bytes_on_disk'] / 1e6:.2f}",
                }
                for r in rows
            ],
            ["config", "seeds", "arrays (MB)", "on disk (MB)"],
        )
    )
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
