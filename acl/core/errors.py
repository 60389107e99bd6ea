"""Errors raised on bad user input, before anything is compiled."""


class ConfigError(ValueError):
    """A config value, name or file is invalid. The message names the field."""
