"""`python -m experiments.bit_flip`, kept: the script is now
experiments/papers/bit_flip.py (`acl bit-flip`)."""

import sys

from experiments.papers.bit_flip import main

if __name__ == "__main__":
    sys.exit(main())
