"""`python -m experiments.bench_ppo`, kept: the script is now
experiments/bench/ppo.py (`acl bench-ppo`)."""

import sys

from experiments.bench.ppo import main

if __name__ == "__main__":
    sys.exit(main())
