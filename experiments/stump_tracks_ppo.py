"""`python -m experiments.stump_tracks_ppo`, kept: the script is now
experiments/papers/stump_tracks_ppo.py (`acl stump-tracks-ppo`)."""

import sys

from experiments.papers.stump_tracks_ppo import main

if __name__ == "__main__":
    sys.exit(main())
