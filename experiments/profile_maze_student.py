"""`python -m experiments.profile_maze_student`, kept: the script is now
experiments/bench/profile_maze_student.py (`acl profile-maze-student`)."""

import sys

from experiments.bench.profile_maze_student import main

if __name__ == "__main__":
    sys.exit(main())
