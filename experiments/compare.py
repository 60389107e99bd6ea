"""`python -m experiments.compare`, kept: the script is now
experiments/tools/compare.py (`acl compare`)."""

import sys

from experiments.tools.compare import main

if __name__ == "__main__":
    sys.exit(main())
