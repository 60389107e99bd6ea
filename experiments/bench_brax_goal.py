"""`python -m experiments.bench_brax_goal`, kept: the script is now
experiments/bench/brax_goal.py (`acl bench-brax-goal`)."""

import sys

from experiments.bench.brax_goal import main

if __name__ == "__main__":
    sys.exit(main())
