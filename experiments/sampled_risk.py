"""`python -m experiments.sampled_risk`, kept: the script is now
experiments/tools/risk.py (`acl risk`)."""

import sys

from experiments.tools.risk import main

if __name__ == "__main__":
    sys.exit(main())
