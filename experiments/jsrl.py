"""`python -m experiments.jsrl`, kept: the script is now
experiments/papers/jsrl.py (`acl jsrl`)."""

import sys

from experiments.papers.jsrl import main

if __name__ == "__main__":
    sys.exit(main())
