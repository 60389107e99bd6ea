"""Re-exports Box, defined in envs/spaces.py (envs imports nothing from acl)."""

from envs.spaces import Box

__all__ = ["Box"]
