"""`experiments.run` as one process of tests/test_multihost.py, compiled as the fast
suite compiles (tests/compile_effort.py), so that the processes and the one-process
reference run the same programs:

    python -m tests.multihost_run --config ... --coordinator 127.0.0.1:PORT ...

Nothing here imports acl before `experiments.run.main`: the library's envs start JAX's
backend, which `--coordinator` must find not yet started.
"""

from __future__ import annotations

import sys

from tests.compile_effort import fusion_emitters_off_for_this_process, set_compile_effort

if __name__ == "__main__":
    fusion_emitters_off_for_this_process()
    set_compile_effort(low=True)
    from experiments import run

    sys.exit(run.main(sys.argv[1:]))
