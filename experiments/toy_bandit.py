"""`python -m experiments.toy_bandit`, kept: the script is now
experiments/papers/toy_bandit.py (`acl toy-bandit`)."""

import sys

from experiments.papers.toy_bandit import main

if __name__ == "__main__":
    sys.exit(main())
