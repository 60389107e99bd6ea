"""`python -m experiments.reverse_curriculum`, kept: the script is now
experiments/papers/reverse_curriculum.py (`acl reverse-curriculum`)."""

import sys

from experiments.papers.reverse_curriculum import main

if __name__ == "__main__":
    sys.exit(main())
