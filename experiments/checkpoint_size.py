"""`python -m experiments.checkpoint_size`, kept: the script is now
experiments/bench/checkpoint_size.py (`acl checkpoint-size`)."""

import sys

from experiments.bench.checkpoint_size import main

if __name__ == "__main__":
    sys.exit(main())
