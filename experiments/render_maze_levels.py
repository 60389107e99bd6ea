"""`python -m experiments.render_maze_levels`, kept: the script is now
experiments/tools/render_maze_levels.py (`acl render-maze-levels`)."""

import sys

from experiments.tools.render_maze_levels import main

if __name__ == "__main__":
    sys.exit(main())
