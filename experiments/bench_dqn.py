"""`python -m experiments.bench_dqn`, kept: the script is now
experiments/bench/dqn.py (`acl bench-dqn`)."""

import sys

from experiments.bench.dqn import main

if __name__ == "__main__":
    sys.exit(main())
