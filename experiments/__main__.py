"""`python -m experiments` is the `acl` command (experiments.commands)."""

import sys

from experiments.commands import main

sys.exit(main())
