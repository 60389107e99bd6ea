"""`python -m experiments.bench_teachers`, kept: the script is now
experiments/bench/teachers.py (`acl bench-teachers`)."""

import sys

from experiments.bench.teachers import main

if __name__ == "__main__":
    sys.exit(main())
