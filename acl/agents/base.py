"""The agent registry; each agent module registers its factory here."""

from acl.registry import Registry

AGENTS: Registry = Registry("agent")
"""Agent factories, called as factory(**config); each lists its keys in `config_keys`."""
