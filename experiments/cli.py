"""The parser core of every `acl` subcommand (experiments.commands), also behind
`python -m experiments.<script>`.

- `CommandParser`: a subcommand's parser. Its `add_*` methods declare the shared flags
  (`--config`, `--set`, `--preset`, `--seeds`, `--out`, `--no-progress`, `--devices`,
  `--max-minutes`) one way for every command that takes them; its `--help` ends with the
  configs and presets a command accepts and an example.
- Bad input is one line on stderr with exit code 2: an argparse error (`OneLineParser`)
  and, through `one_line_errors`, a `ConfigError` raised by the command.
- `restart_with_host_devices`: the restart with XLA host devices, under `acl ...` as under
  `python -m ...`.

Nothing here imports JAX: `--help` stays fast, and `acl run --coordinator` must start
jax.distributed before anything starts JAX's backend.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from acl.core.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
"""The repository's root (`experiments/..`): config paths resolve from it too."""
CONFIGS = ROOT / "experiments" / "configs"
RUN_CONFIGS = "run"
"""`add_config(catalogue=...)`: every config of one run (no `suite:` or `base:` section)."""
SHARED_FLAGS = (
    "--config",
    "--set",
    "--preset",
    "--seeds",
    "--out",
    "--no-progress",
    "--devices",
    "--max-minutes",
)
"""The flags declared here; each command takes those that apply to it."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (exit code 2), like a config
    error: the usage block it prints first buries the message; --help has the usage."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def write_generated(path: Path, text: str, command: str, check: bool) -> bool:
    """Write a generated page, or with `check` only compare it; returns whether it was
    stale (printed on stderr under `check`, naming the command that regenerates it)."""
    resolved = path.resolve()
    shown = resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else path
    stale = not path.is_file() or path.read_text() != text
    if check:
        if stale:
            print(f"{shown} is out of date: run {command}", file=sys.stderr)
        return stale
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {shown}")
    return stale


def one_line_errors(main: Callable[..., int]) -> Callable[..., int]:
    """Wrap a command's `main`: a `ConfigError` it raises is one line on stderr, exit
    code 2 (the field-naming message, no traceback)."""

    @functools.wraps(main)
    def wrapped(*args, **kwargs) -> int:
        try:
            return main(*args, **kwargs)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2

    return wrapped


def config_path(value: str) -> str:
    """A config given by path, or by its name in experiments/configs/ (`cartpole_random`),
    or by a path from the repository's root (so a command runs from any directory). One
    that exists nowhere stays as given: loading it then says it cannot be read."""
    if Path(value).exists():
        return value
    for candidate in (ROOT / value, CONFIGS / value, CONFIGS / f"{value}.yaml"):
        if candidate.is_file():
            return str(candidate)
    return value


def minutes_budget(minutes: float | None) -> float | None:
    """`--max-minutes` in seconds (None: no budget); ConfigError unless finite and >= 0."""
    if minutes is None:
        return None
    if not (math.isfinite(minutes) and minutes >= 0):
        raise ConfigError(f"--max-minutes must be a finite number >= 0, got {minutes}")
    return 60 * minutes


def _top_level_keys(path: Path) -> set[str]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return set()
    return set(data) if isinstance(data, dict) else set()


def config_names(catalogue: str) -> list[str]:
    """The names of experiments/configs/ in `catalogue`: RUN_CONFIGS, or a glob such as
    "jsrl_*.yaml"."""
    if catalogue == RUN_CONFIGS:
        paths = [p for p in CONFIGS.glob("*.yaml") if not {"suite", "base"} & _top_level_keys(p)]
    else:
        paths = list(CONFIGS.glob(catalogue))
    return sorted(p.stem for p in paths)


def preset_names() -> dict[str, list[str]]:
    """{preset: the configs of experiments/configs/ that have it}."""
    import yaml

    found: dict[str, list[str]] = {}
    for path in sorted(CONFIGS.glob("*.yaml")):
        if "presets" not in _top_level_keys(path):
            continue
        presets = yaml.safe_load(path.read_text())["presets"]
        for name in presets if isinstance(presets, dict) else ():
            found.setdefault(name, []).append(path.stem)
    return found


def _repository_relative(path: str) -> str:
    """`path` as --help shows it: relative to the repository's root when it lies under it."""
    resolved = Path(path)
    if resolved.is_absolute() and resolved.is_relative_to(ROOT):
        return str(resolved.relative_to(ROOT))
    return path


def _indented(text: str) -> str:
    return textwrap.fill(text, width=88, initial_indent="  ", subsequent_indent="    ")


class CommandParser(OneLineParser):
    """The parser of `acl <command>`: the command's docstring as its description, the
    shared flags it takes declared by the `add_*` methods below, and an epilog listing the
    configs (`--config`), the presets (`--preset`) and `examples`, each a command line
    after `acl <command>`. No abbreviations: `--seed 3` would silently run three seeds."""

    def __init__(self, command: str, doc: str | None, *, examples: tuple[str, ...]):
        super().__init__(
            prog=f"acl {command}",
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )
        self.command = command
        self.examples = examples
        self.catalogue: str | None = None
        self.takes_preset = False

    def format_help(self) -> str:
        # The epilog reads experiments/configs/, so only --help pays for it.
        lines = []
        if self.catalogue is not None:
            names = config_names(self.catalogue)
            lines += ["configs (--config NAME or a path; experiments/configs/NAME.yaml):"]
            lines += [_indented(", ".join(names) or "(none)"), ""]
        if self.takes_preset:
            lines += ["presets (--preset NAME, a config's presets.NAME section):"]
            lines += [
                _indented(f"{name}: {', '.join(configs)}")
                for name, configs in preset_names().items()
            ]
            lines += [""]
        lines += ["examples:"] + [f"  {self.prog} {example}".rstrip() for example in self.examples]
        self.epilog = "\n".join(lines)
        return super().format_help()

    # -- the shared flags ------------------------------------------------------------------

    def add_config(
        self,
        *,
        default: str | None = None,
        catalogue: str = RUN_CONFIGS,
        group: argparse._MutuallyExclusiveGroup | None = None,
        help: str = "YAML config: a path or a name of experiments/configs/",
    ) -> None:
        """`--config`: a path, a name of experiments/configs/ or a path from the repository's
        root (`config_path`); `catalogue` (RUN_CONFIGS or a glob) is what --help lists."""
        self.catalogue = catalogue
        target = self if group is None else group
        target.add_argument("--config", type=config_path, default=default, help=help)

    def add_overrides(
        self,
        *,
        aliases: tuple[str, ...] = (),
        metavar: str = "KEY=VALUE",
        help: str = "override a config key (repeatable), e.g. loop.num_envs=8",
    ) -> None:
        """`--set KEY=VALUE` (repeatable) into `args.overrides`, for `acl.config.load_config`
        / `apply_overrides`; values are checked where they are used, so a bad one reads the
        same from every command."""
        self.add_argument(
            "--set",
            *aliases,
            dest="overrides",
            action="append",
            default=[],
            metavar=metavar,
            help=help,
        )

    def add_preset(
        self,
        *,
        aliases: tuple[str, ...] = (),
        help: str = "apply the config's presets.NAME section before --set (listed below)",
    ) -> None:
        """`--preset NAME` into `args.preset` (None: none)."""
        self.takes_preset = True
        self.add_argument("--preset", *aliases, dest="preset", default=None, help=help)

    def add_seeds(
        self,
        *,
        default: int | list[int] | None = None,
        nargs: str | None = None,
        aliases: tuple[str, ...] = (),
        help: str = "number of vmapped seeds (default: the config's)",
    ) -> None:
        """`--seeds N` (None: the config's); `nargs="+"`: several seed counts."""
        self.add_argument(
            "--seeds", *aliases, dest="seeds", type=int, nargs=nargs, default=default, help=help
        )

    def add_out(
        self,
        *,
        default: str | None = None,
        required: bool = False,
        help: str = "where the outputs go",
    ) -> None:
        """`--out PATH` into `args.out`; --help shows a default under the repository's root
        relative to it (no machine path)."""
        shown = f" (default {_repository_relative(default)})" if default is not None else ""
        self.add_argument("--out", default=default, required=required, help=help + shown)

    def add_no_progress(self, help: str = "hide the progress bar") -> None:
        """`--no-progress` into `args.no_progress`."""
        self.add_argument("--no-progress", action="store_true", help=help)

    def add_devices(
        self,
        *,
        nargs: str | None = None,
        help: str = "split the seeds over this many devices (default: all)",
    ) -> None:
        """`--devices N` (None: all); `nargs="+"`: several device counts."""
        self.add_argument("--devices", type=int, nargs=nargs, default=None, help=help)

    def add_max_minutes(
        self,
        *,
        aliases: tuple[str, ...] = (),
        help: str = "wall-clock budget, compile included: no evaluation starts after it",
    ) -> None:
        """`--max-minutes M` into `args.max_minutes` (None: no budget); `minutes_budget`
        checks it."""
        self.add_argument(
            "--max-minutes", *aliases, dest="max_minutes", type=float, default=None, help=help
        )


def restart_with_host_devices(count: int = 2) -> None:
    """Restart this process with `count` XLA host devices, unless JAX already sees that
    many: the same command line (`sys.orig_argv`: `acl run ...` or `python -m
    experiments.run ...`) under the flag. The host platform is split only by a flag read
    when JAX starts, and importing an env starts it, so a config asking for devices
    (`loop.overlap_teacher`) is known too late for this process. Call only when the
    command's arguments came from the command line (argv None), never in-process."""
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
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
