"""`python -m experiments.benchmark`, kept: the script is now
experiments/tools/benchmark.py (`acl benchmark`)."""

import sys

from experiments.tools.benchmark import main

if __name__ == "__main__":
    sys.exit(main())
