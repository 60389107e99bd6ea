"""Bit-exact recordings, one per CPU they were recorded on.

XLA compiles for the CPU it runs on (its instruction set and LLVM's tuning for that
model), so the same program and seed give bit-identical results on one CPU and results
a few ulp apart on another; after a few updates the runs drift apart. A bit-exact
fixture therefore pins a program on the CPUs it was recorded on:

    fixtures/golden/plr.npz                    the reference recording
    fixtures/golden/cpus/<cpu>/plr.npz         the same code recorded on another CPU

A check passes when the run equals any recording of the fixture bit for bit: a change
of behaviour cannot reproduce another CPU's bytes by chance, so accepting any of them
is as strict as knowing which CPU this is. A CPU with no recording of its own can only
match by luck: record it (`--add-cpu` in tests/golden.py) from a commit whose reference
recording still passes elsewhere, i.e. before changing the code.

A recording knows its CPU: from the `cpu` entry that recordings now store, or from its
`cpus/<cpu>/` folder. References recorded before that have no entry, and their CPU is
unknown. When every recording of a fixture names a CPU and none is this one, nothing
can be checked here bit for bit (`foreign_only`): a change of behaviour re-recorded on
one CPU cannot be recorded on the others from the same session.
"""

from __future__ import annotations

import hashlib
import platform
import re
from pathlib import Path

CPUS = "cpus"
"""The folder beside a reference recording that holds the other CPUs' recordings."""


def cpu_tag() -> str:
    """This CPU as a folder name: its model, slugged, and a hash of its feature flags
    (the same model name may hide other instruction sets under virtualisation)."""
    model, flags = platform.processor() or platform.machine(), ""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and value.strip():
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = " ".join(sorted(value.split()))
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") or "cpu"
    return f"{slug}-{hashlib.sha1(flags.encode()).hexdigest()[:8]}"


def this_cpu_path(reference: Path) -> Path:
    """Where this CPU's recording of `reference` lives."""
    return reference.parent / CPUS / cpu_tag() / reference.name


def recordings(reference: Path) -> list[Path]:
    """Every recording of `reference`: this CPU's first when it has one, then the
    reference, then the other CPUs'."""
    others = sorted((reference.parent / CPUS).glob(f"*/{reference.name}"))
    own = this_cpu_path(reference)
    first = [own] if own.exists() else []
    rest = [reference] if reference.exists() else []
    return first + rest + [p for p in others if p != own]


def recorded_on(path: Path, stored: str | None) -> str | None:
    """The CPU a recording was made on: its stored `cpu` entry, else its `cpus/<cpu>/`
    folder, else None (a reference recorded before recordings stored their CPU)."""
    if stored:
        return stored
    return path.parent.name if path.parent.parent.name == CPUS else None


def foreign_only(cpus: list[str | None]) -> str | None:
    """A reason when the recordings' CPUs (`recorded_on` of each) are all known and none is
    this CPU, so no recording can be reproduced here bit for bit; else None."""
    here = cpu_tag()
    if not cpus or None in cpus or here in cpus:
        return None
    return (
        f"recorded on {', '.join(sorted(set(cpus)))} only, and this CPU is {here}: "
        "record it here with --add-cpu on a commit whose recording passes on its own CPU"
    )
