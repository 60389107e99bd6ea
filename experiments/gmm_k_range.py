"""`python -m experiments.gmm_k_range`, kept: the script is now
experiments/bench/gmm_k_range.py (`acl gmm-k-range`)."""

import sys

from experiments.bench.gmm_k_range import main

if __name__ == "__main__":
    sys.exit(main())
