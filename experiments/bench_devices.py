"""`python -m experiments.bench_devices`, kept: the script is now
experiments/bench/devices.py (`acl bench-devices`)."""

import sys

# tests/test_devices.py imports default_counts from here.
from experiments.bench.devices import default_counts, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
