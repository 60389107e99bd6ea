"""One run over several processes (hosts): JAX's multi-controller runtime.

Every process runs the same program on its own devices; `jax.devices()` then lists all
processes' devices, and acl.loop.devices lays the seeds over all of them. Only process 0
writes the run directory (`writes_run_dir`; the others get a `SilentRunDir`); every
process ends with the same summary.

`initialize_processes` must run before anything starts JAX's backend, which importing
an env does (gymnax builds arrays at import): this module imports nothing of acl or
envs at its top, and a CLI that takes the flags imports the library after the call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax


def _config_error(message: str) -> Exception:
    from acl.core.errors import ConfigError  # imports the envs: only once we are failing

    return ConfigError(message)


def initialize_processes(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
) -> None:
    """`jax.distributed.initialize`: with a coordinator `HOST:PORT`, the process count and
    this process's id, or with none of them, JAX's own detection of the cluster (SLURM,
    Open MPI, Kubernetes...). Must precede any other use of JAX in the process."""
    given = [x is not None for x in (coordinator, num_processes, process_id)]
    if any(given) and not all(given):
        raise _config_error(
            "coordinator, num_processes and process_id go together (or give none of "
            "them, for JAX's detection of the cluster)"
        )
    if num_processes is not None and not 0 <= process_id < num_processes:
        raise _config_error(
            f"process_id must be in [0, {num_processes}) for {num_processes} processes, "
            f"got {process_id}"
        )
    # CPU devices of different processes need a collectives library to meet at all
    # (gathering results); GPUs use NCCL whatever this says.
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator, num_processes=num_processes, process_id=process_id
    )


def writes_run_dir() -> bool:
    """Whether this process writes the run directory: process 0 only."""
    return jax.process_index() == 0


class SilentRunDir:
    """The run directory as a process other than 0 sees it: it has the path, and every
    write (any method call) is skipped, so that the run's code needs no branch."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __getattr__(self, name: str) -> Any:
        def skip(*args: Any, **kwargs: Any) -> None:
            return None

        return skip


def agreed(flag: bool) -> bool:
    """True on every process if `flag` is True on any: a decision to stop (a signal, a
    time limit) that every process must take at the same chunk, or the others would wait
    forever at the next collective. One process: `flag` itself, no communication."""
    if jax.process_count() == 1:
        return bool(flag)
    import numpy as np
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.asarray(flag, np.int32))))
