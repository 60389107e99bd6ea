"""How hard XLA optimises the programs a test compiles.

The fast suite's programs are tiny and run for milliseconds, so compiling them costs far
more than running them: with XLA's optimisations mostly off (`jax_disable_most_
optimizations`) the fast suite takes about 40% less CPU time. Learning tests (`slow`) and
tests marked `xla_optimized` keep full optimisation: they run long, or compare bits with
a fixture recorded that way. Golden runs always compile with optimisations off, so a
fixture reproduces wherever it is checked or recorded from.
"""

from __future__ import annotations

import contextlib

import jax

FLAG = "jax_disable_most_optimizations"


@contextlib.contextmanager
def compile_effort(low: bool):
    """Compile with XLA's optimisations mostly off (`low`) or fully on, then restore.
    JAX keeps compiled programs per function, not per flag: a program compiled before the
    switch is reused as it was, so switch before building what the test compiles."""
    previous = jax.config.read(FLAG)
    jax.config.update(FLAG, low)
    try:
        yield
    finally:
        jax.config.update(FLAG, previous)
