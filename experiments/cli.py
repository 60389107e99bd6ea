"""The `--set` and `--seeds` flags of the experiment scripts, declared one way for all.

`--set KEY=VALUE` (repeatable) collects config overrides into `args.overrides`, for
`acl.config.load_config` / `apply_overrides`; `--seeds` is an int (a seed count) or, with
`nargs`, a list of them. Values are checked where they are used (the config's own checks),
so a bad one reads the same from every script."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def add_overrides_argument(
    parser: argparse.ArgumentParser,
    flag: str = "--set",
    *,
    dest: str = "overrides",
    metavar: str = "KEY=VALUE",
    help: str = "override a config key, e.g. loop.num_envs=8",
) -> None:
    """The repeatable `--set KEY=VALUE` config override (into `args.overrides`)."""
    parser.add_argument(flag, dest=dest, action="append", default=[], metavar=metavar, help=help)


def add_seeds_argument(
    parser: argparse.ArgumentParser,
    flag: str = "--seeds",
    *,
    default: Any = None,
    nargs: str | None = None,
    help: str | None = "number of vmapped seeds",
) -> None:
    """`--seeds N`: how many seeds (None: the config's); `nargs="+"`: several counts."""
    parser.add_argument(flag, type=int, nargs=nargs, default=default, help=help)


def restart_with_host_devices(module: str, count: int = 2) -> None:
    """Restart this script (`python -m module`, same arguments) with `count` XLA host
    devices, unless JAX already sees that many. The host platform is split only by a flag
    read when JAX starts, and importing an env starts it, so a config asking for devices
    (`loop.overlap_teacher`) is known too late for this process. Call only from a
    script's own entry (argv from the command line)."""
    import jax

    from acl.loop.devices import HOST_DEVICES_FLAG, HOST_THREADS_VARIABLE, host_threads

    restarted = "ACL_JAX_RESTARTED"  # once: a restart that did not take must not loop
    if len(jax.devices()) >= count or jax.default_backend() != "cpu":
        return
    if os.environ.get(restarted) or jax.process_count() > 1:
        return  # the run's layout then says what is missing
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {HOST_DEVICES_FLAG}={count}".strip()
    env.setdefault(HOST_THREADS_VARIABLE, str(host_threads(count)))
    env[restarted] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]], env)
