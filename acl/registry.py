"""Re-exports Registry, defined in envs/registry.py (envs imports nothing from acl)."""

from envs.registry import Registry

__all__ = ["Registry"]
