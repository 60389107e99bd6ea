"""`python -m experiments.bench_gmm_fit`, kept: the script is now
experiments/bench/gmm_fit.py (`acl bench-gmm-fit`)."""

import sys

from experiments.bench.gmm_fit import main

if __name__ == "__main__":
    sys.exit(main())
