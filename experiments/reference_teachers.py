"""`python -m experiments.reference_teachers`, kept: the script is now
experiments/papers/reference_teachers.py (`acl reference-teachers`)."""

import sys

from experiments.papers.reference_teachers import main

if __name__ == "__main__":
    sys.exit(main())
