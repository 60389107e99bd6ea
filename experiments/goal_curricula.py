"""`python -m experiments.goal_curricula`, kept: the script is now
experiments/papers/goal_curricula.py (`acl goal-curricula`)."""

import sys

from experiments.papers.goal_curricula import main

if __name__ == "__main__":
    sys.exit(main())
