"""`python -m experiments.svgg`, kept: the script is now
experiments/papers/svgg.py (`acl svgg`)."""

import sys

from experiments.papers.svgg import main

if __name__ == "__main__":
    sys.exit(main())
