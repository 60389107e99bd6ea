"""The runs of tests/test_devices.py, in a process of its own: XLA's host platform is
split into several CPU devices only by a flag read when JAX starts, so the pytest
process (one device) cannot run them.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python -m tests.devices_runs OUT

writes under OUT one run directory per entry of RUNS (experiments.run on TINY, 2 chunks),
compiled as the fast suite compiles (tests/compile_effort.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

DEVICES = 4
RUNS = {
    # name: (seeds, --devices)
    "one_device": (8, 1),
    "sharded": (8, DEVICES),
    "padded": (6, DEVICES),  # 6 seeds over 4 devices: 2 padding seeds
    "alone": (1, 1),  # seed 0 with no seed beside it
}


def main(argv: list[str]) -> int:
    import jax

    from tests.compile_effort import fusion_emitters_off_for_this_process, set_compile_effort

    fusion_emitters_off_for_this_process()
    set_compile_effort(low=True)
    if jax.device_count() != DEVICES:
        raise SystemExit(
            f"expected {DEVICES} devices (XLA_FLAGS=--xla_force_host_platform_device_count="
            f"{DEVICES}), JAX sees {jax.device_count()}"
        )
    from experiments import run
    from tests.conftest import TINY

    out = Path(argv[0])
    config = out / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    for name, (seeds, devices) in RUNS.items():
        args = ["--config", str(config), "--out", str(out / name), "--no-progress"]
        args += ["--seeds", str(seeds), "--devices", str(devices)]
        args += ["--set", "loop.total_env_steps=512"]
        if run.main(args) != 0:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
