"""`python -m experiments.run`, kept: the script is now
experiments/tools/run.py (`acl run`)."""

import sys

from experiments.tools.run import main

if __name__ == "__main__":
    sys.exit(main())
