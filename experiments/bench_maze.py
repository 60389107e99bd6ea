"""`python -m experiments.bench_maze`, kept: the script is now
experiments/bench/maze.py (`acl bench-maze`)."""

import sys

from experiments.bench.maze import main

if __name__ == "__main__":
    sys.exit(main())
