"""How hard XLA works on the programs a test compiles.

The fast suite's programs are tiny and run for milliseconds, so compiling them costs far
more than running them. Two settings cut that cost, at the price of slower programs:

- `jax_disable_most_optimizations`, a JAX flag set before each test's fixtures by
  tests/conftest.py: fast tests compile with it, learning tests (`slow`) do not.
- XLA's CPU fusion emitters off (`--xla_cpu_use_fusion_emitters=false`). This is a
  process-wide XLA flag, so tests/conftest.py sets it only for a session that runs no
  slow test (`-m "not slow"`): it compiles the tiny training loop about 3x faster and
  runs it about 1.5x slower, which would cost the learning tests more than it saves.

Golden runs, the task pool's slot-layout fixture and the Stump Tracks scenarios pass
`FAST_COMPILE` to their own `jax.jit`, so they compile alike in any
session.
"""

from __future__ import annotations

import contextlib
import os

import jax

FAST_COMPILE = {
    "xla_cpu_use_fusion_emitters": False,
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
}
"""XLA options (`jax.jit(..., compiler_options=...)`) of a program compiled for speed of
compiling: what a fast-only session compiles with."""

FUSION_EMITTERS_OFF = "--xla_cpu_use_fusion_emitters=false"


DISABLE_MOST_OPTIMIZATIONS = "jax_disable_most_optimizations"


def set_compile_effort(low: bool) -> None:
    """Compile with XLA's optimisations mostly off (`low`) or fully on from now on.
    JAX keeps compiled programs per function, not per flag: a program compiled before the
    switch is reused as it was."""
    jax.config.update(DISABLE_MOST_OPTIMIZATIONS, low)


@contextlib.contextmanager
def compile_effort(low: bool):
    """`set_compile_effort(low)` inside the block, the previous setting after it."""
    previous = jax.config.read(DISABLE_MOST_OPTIMIZATIONS)
    set_compile_effort(low)
    try:
        yield
    finally:
        set_compile_effort(previous)


def fusion_emitters_off_for_this_process() -> None:
    """Add the fusion-emitter flag to XLA_FLAGS; it must run before JAX starts its CPU
    backend (the first array op), which reads XLA_FLAGS once."""
    flags = os.environ.get("XLA_FLAGS", "")
    if FUSION_EMITTERS_OFF not in flags.split():
        os.environ["XLA_FLAGS"] = f"{flags} {FUSION_EMITTERS_OFF}".strip()
