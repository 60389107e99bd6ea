"""The files of a run directory that are read back below the run layer: their names and
readers. acl.run.results writes them (and lays out the rest of the directory);
acl.build.load_run_agent rebuilds a run's agent from them.

RUN_DIR/
  config.yaml            the resolved config (`CONFIG_FILE`)
  agent_params.msgpack   the final agent state of every seed (`AGENT_FILE`, flax serialization)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from flax import serialization

from acl.core.errors import ConfigError

CONFIG_FILE = "config.yaml"
AGENT_FILE = "agent_params.msgpack"


def require_finished(run_dir: str | Path) -> None:
    """ConfigError unless `run_dir` holds a finished run's config and agent files."""
    path = Path(run_dir)
    for name in (CONFIG_FILE, AGENT_FILE):
        if not (path / name).is_file():
            raise ConfigError(f"{path} has no {name} (not a finished run)")


def read_config_dict(run_dir: str | Path) -> dict:
    """The run's config.yaml, as the plain dict it was written from."""
    return yaml.safe_load((Path(run_dir) / CONFIG_FILE).read_text())


def read_agent_states(run_dir: str | Path, template: Any) -> Any:
    """The saved agent states, restored into the structure (and dtypes) of `template`."""
    return serialization.from_bytes(template, (Path(run_dir) / AGENT_FILE).read_bytes())
