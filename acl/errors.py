"""Re-exports ConfigError, defined in envs/errors.py (envs imports nothing from acl)."""

from envs.errors import ConfigError

__all__ = ["ConfigError"]
