"""`python -m experiments.bench_stump_tracks`, kept: the script is now
experiments/bench/stump_tracks.py (`acl bench-stump-tracks`)."""

import sys

from experiments.bench.stump_tracks import main

if __name__ == "__main__":
    sys.exit(main())
