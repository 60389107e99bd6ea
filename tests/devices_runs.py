"""The runs of tests/test_devices.py, in a process of its own: XLA's host platform is
split into several CPU devices only by a flag read when JAX starts, so the pytest
process (one device) cannot run them.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python -m tests.devices_runs OUT

writes under OUT one run directory per entry of RUNS (experiments.run on TINY, 2 chunks)
and first_update.npz (`first_update`), compiled as the fast suite compiles
(tests/compile_effort.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

DEVICES = 4
RUNS = {
    # name: (seeds, --devices)
    "one_device": (8, 1),
    "sharded": (6, DEVICES),  # padded to 8 seeds, 2 per device; 2 padding seeds dropped
    "eight": (8, DEVICES),  # 8 seeds, 2 per device, no padding
    "alone": (1, 1),  # seed 0 with no seed beside it
    "shard_envs": (2, DEVICES),  # with loop.shard_envs: 8 instances per seed, 2 per device
}
SHARD_ENVS = ["loop.shard_envs=true", "loop.num_envs=8"]


def first_update(out: Path) -> None:
    """One PPO update on one rollout of 8 instances, on one device and with the instances
    split over DEVICES devices (`axis_name`); writes both params and the initial ones.
    One minibatch: with more, each device would shuffle its own part."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import PartitionSpec

    from acl.build import make_train
    from acl.loop.devices import ENV_AXIS, device_mesh
    from acl.loop.rollout import collect, start_slots
    from tests.conftest import tiny_config

    n = 8
    agent = {"name": "ppo", "num_minibatches": 1, "update_epochs": 2, "hidden_sizes": [16]}
    trainer = make_train(tiny_config(agent=agent, loop={"num_envs": n}))
    env, ppo = trainer.env, trainer.agent
    key = jax.random.PRNGKey(0)
    state = trainer.init_agent(key)
    slots = start_slots(env, ppo, key, env.task_space.sample_uniform(key, n), jnp.ones(n, bool))
    _, batch, _ = jax.jit(lambda s: collect(env, ppo, state, s, key, None, None, 16))(slots)
    one, _ = jax.jit(ppo.update)(state, batch, key)
    split = jax.shard_map(
        lambda part: ppo.update(state, part, key, axis_name=ENV_AXIS),
        mesh=device_mesh(DEVICES, ENV_AXIS),
        in_specs=(PartitionSpec(None, ENV_AXIS),),  # batch [T, N]
        out_specs=PartitionSpec(),
        check_vma=False,
    )
    sharded, _ = jax.jit(split)(batch)
    leaves = {
        name: [np.asarray(x) for x in jax.tree.leaves(s.params)]
        for name, s in (("initial", state), ("one_device", one), ("sharded", sharded))
    }
    np.savez(
        out / "first_update.npz",
        **{f"{name}_{i}": x for name, xs in leaves.items() for i, x in enumerate(xs)},
    )


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
    # First: run after the runs below, its sharded update crashed now and then in XLA
    # 0.10's in-process CPU all-reduce (a segfault in ReduceScatter).
    first_update(out)
    config = out / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    for name, (seeds, devices) in RUNS.items():
        args = ["--config", str(config), "--out", str(out / name), "--no-progress"]
        args += ["--seeds", str(seeds), "--devices", str(devices)]
        args += ["--set", "loop.total_env_steps=512"]
        if name == "shard_envs":
            args += [f"--set={item}" for item in SHARD_ENVS]
        if run.main(args) != 0:
            return 1
    # "sharded" again, stopped after its first evaluation, then resumed from the
    # checkpoint of its padded seeds.
    args = ["--config", str(config), "--out", str(out / "resumed"), "--no-progress"]
    args += ["--seeds", "6", "--devices", str(DEVICES), "--set", "loop.total_env_steps=512"]
    if run.main([*args, "--max-minutes", "0"]) != 0:
        return 1
    if run.main(["--resume", str(out / "resumed"), "--no-progress", "--devices", "2"]) != 2:
        return 1  # another padding: refused
    if run.main(["--resume", str(out / "resumed"), "--no-progress", "--devices", "4"]) != 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
