"""`python -m experiments.evaluate`, kept: the script is now
experiments/tools/evaluate.py (`acl evaluate`)."""

import sys

from experiments.tools.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
