"""`python -m experiments.ued_mazes`, kept: the script is now
experiments/papers/ued_mazes.py (`acl ued-mazes`)."""

import sys

from experiments.papers.ued_mazes import main

if __name__ == "__main__":
    sys.exit(main())
