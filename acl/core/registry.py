"""`Registry`: a name -> factory map with "did you mean" errors, which the envs, teachers
and agents registries share, and which finds plug-ins from other packages.

A name is one of:
- a built-in, registered by a module of ACL-JAX with `@REGISTRY.register(name)`;
- a plug-in: an entry point of the registry's group (`acl_jax.envs`, `acl_jax.teachers`,
  `acl_jax.agents`) that an installed distribution declares, e.g. in its pyproject.toml

      [project.entry-points."acl_jax.teachers"]
      my_teacher = "my_package.teachers:make_my_teacher"

  The group's entry points are listed once, on the first lookup of a name that is not a
  built-in or on the first `names()`; each plug-in's module is imported on its own first
  lookup, so a plug-in that fails to import troubles only the runs that name it;
- an import path `package.module:Name`, imported on its first lookup (a factory that no
  distribution declares: a module beside the config, on PYTHONPATH). The colon form only:
  a dotted name without one is an unknown name, whose error shows the form.

Plug-ins and import paths are held to the built-ins' contract (`PluginGroup`): what they
name must be a factory (callable; for teachers and agents one that declares
`config_keys`), or a one-line ConfigError names the distribution and the entry point. A
plug-in named like a built-in, or like another distribution's plug-in, is refused with a
one-line ConfigError when the group is listed: a name means one factory on every machine
that has it.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import re
import types
from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from acl.core.errors import ConfigError

T = TypeVar("T")

IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
"""`package.module:Name` (an attribute path after the colon, as in an entry point)."""


@runtime_checkable
class DeclaredFactory(Protocol):
    """A factory that lists the config keys it takes (teachers' and agents' factories:
    `acl.teachers.base.class_factory`, `acl.core.hparams.declare`)."""

    config_keys: Set[str]

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class PluginGroup:
    """Where a registry's plug-ins come from and the contract their factories keep."""

    name: str
    """The entry-point group, e.g. "acl_jax.teachers"."""
    declares_keys: bool = False
    """Factories must declare `config_keys` (`DeclaredFactory`); else a factory's keyword
    parameters are its config keys (an env class's constructor)."""
    factory: str = "a callable"
    """What a factory is, for the error on an entry point that names something else."""


@dataclass(frozen=True)
class PluginSource:
    """Where a plug-in's factory comes from: an entry point of a distribution, or an
    import path named in a config (no distribution)."""

    target: str
    """`package.module:Name`, what is imported."""
    entry_point: str = ""
    """The entry point's name ("" for an import path)."""
    distribution: str = ""
    """The declaring distribution and its version, e.g. "acl-demo-plugin 0.1"."""

    def __str__(self) -> str:
        if not self.entry_point:
            return f"import path {self.target}"
        return f"entry point {self.entry_point} = {self.target} of distribution {self.distribution}"


def _what(obj: Any) -> str:
    """An object named by an entry point, in a few words: "the class pkg.mod.Name"."""
    if isinstance(obj, type):
        return f"the class {obj.__module__}.{obj.__qualname__}"
    if isinstance(obj, types.ModuleType):
        return f"the module {obj.__name__}"
    shown = repr(obj)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"an object of type {type(obj).__name__}: {shown}"


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


class Registry(Generic[T]):
    """Maps names to factories; `get` suggests the closest names for a typo. With a
    `PluginGroup`, installed distributions' entry points of that group are names too
    (module docstring)."""

    def __init__(self, kind: str, plugins: PluginGroup | None = None):
        self.kind = kind
        self.plugins = plugins
        self._factories: dict[str, Callable[..., T]] = {}
        """The built-ins."""
        self._loaded: dict[str, Callable[..., T]] = {}
        """The plug-ins and import paths imported so far."""
        self._sources: dict[str, PluginSource] = {}
        """Every plug-in and import path looked up so far, loaded or listed."""
        self._entry_points: dict[str, importlib.metadata.EntryPoint] | None = None
        """The group's entry points by name, once listed (None: not yet)."""

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorator(factory: Callable[..., T]) -> Callable[..., T]:
            if name in self._factories:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            if self._entry_points is not None and name in self._entry_points:
                # A plug-in's module registering its own entry point's name, or a built-in
                # registered after the group was listed: either way two sources for a name.
                raise ConfigError(
                    f"{self.kind} '{name}' is registered by a module and declared as "
                    f"{self._sources[name]}: a plug-in registers through its entry point alone"
                )
            self._factories[name] = factory
            return factory

        return decorator

    def names(self) -> list[str]:
        """Every name: the built-ins and the installed plug-ins (lists the group)."""
        return sorted(set(self._factories) | set(self._listed()))

    def builtin_names(self) -> list[str]:
        """The names ACL-JAX registers itself, whatever is installed beside it."""
        return sorted(self._factories)

    def source(self, name: str) -> PluginSource | None:
        """Where plug-in or import path `name` comes from; None for a built-in (or a
        name not looked up)."""
        return None if name in self._factories else self._sources.get(name)

    def describe(self, name: str) -> str:
        """`name` for an error message: "teacher 'x'", and where it comes from when an
        entry point declares it."""
        source = self.source(name)
        if source is None or not source.entry_point:
            return f"{self.kind} '{name}'"
        return f"{self.kind} '{name}' ({source})"

    def check(self, name: str, field: str | None = None) -> None:
        """Raise ConfigError if `name` is unknown, naming the config field and close
        matches, or if its plug-in fails to import or names no factory."""
        self._load(name, field)

    def get(self, name: str, field: str | None = None) -> Callable[..., T]:
        return self._load(name, field)

    def make(self, name: str, **kwargs) -> T:
        return self.get(name)(**kwargs)

    def __contains__(self, name: str) -> bool:
        """Whether `get(name)` finds a name (an import path: whether it imports)."""
        if name in self._factories or name in self._loaded:
            return True
        if isinstance(name, str) and IMPORT_PATH.fullmatch(name):
            try:
                self._load(name)
            except ConfigError:
                return False
            return True
        return name in self._listed()

    def _listed(self) -> dict[str, importlib.metadata.EntryPoint]:
        """The group's entry points by name, listed once; a clash is a ConfigError."""
        if self._entry_points is not None:
            return self._entry_points
        found: dict[str, importlib.metadata.EntryPoint] = {}
        sources: dict[str, PluginSource] = {}
        group = (
            () if self.plugins is None else importlib.metadata.entry_points(group=self.plugins.name)
        )
        for entry_point in group:
            name = entry_point.name
            dist = entry_point.dist
            source = PluginSource(
                target=entry_point.value,
                entry_point=name,
                distribution=f"{dist.name} {dist.version}" if dist is not None else "(unknown)",
            )
            if name in self._factories:
                raise ConfigError(self._clash(name, source))
            if name in sources:
                raise ConfigError(
                    f"{self.kind} plug-in '{name}' is declared twice: {sources[name]}, and "
                    f"{source}; a name means one {self.kind}"
                )
            found[name], sources[name] = entry_point, source
        self._sources.update(sources)
        self._entry_points = found
        return found

    def _clash(self, name: str, source: PluginSource) -> str:
        return (
            f"{self.kind} plug-in '{name}' ({source}) is named like the built-in "
            f"{self.kind} '{name}': rename the entry point"
        )

    def _load(self, name: str, field: str | None = None) -> Callable[..., T]:
        """The factory of `name`: a built-in, or a plug-in or import path imported on
        its first lookup and checked against the group's contract."""
        if name in self._factories:
            return self._factories[name]
        if name in self._loaded:
            return self._loaded[name]
        where = f"{field}: " if field else ""
        if isinstance(name, str) and IMPORT_PATH.fullmatch(name):
            source = PluginSource(target=name)
            entry_point = importlib.metadata.EntryPoint(
                name=name, value=name, group=self.plugins.name if self.plugins else ""
            )
        elif name in self._listed():
            source, entry_point = self._sources[name], self._entry_points[name]
        else:
            raise ConfigError(where + self._unknown(name))
        self._sources[name] = source
        try:
            factory = entry_point.load()
        except Exception as err:  # a plug-in's import may raise anything
            raise ConfigError(
                f"{where}{self.describe(name)} failed to import: {_one_line(err)}"
            ) from None
        self._check_factory(name, factory, where)
        self._loaded[name] = factory
        return factory

    def _check_factory(self, name: str, factory: Any, where: str) -> None:
        declares_keys = self.plugins is not None and self.plugins.declares_keys
        if callable(factory) and (not declares_keys or isinstance(factory, DeclaredFactory)):
            return
        wanted = self.plugins.factory if self.plugins is not None else "a callable"
        raise ConfigError(
            f"{where}{self.describe(name)} is not a {self.kind} factory: it names "
            f"{_what(factory)}; a {self.kind} factory is {wanted}"
        )

    def _unknown(self, name: str) -> str:
        names = self.names()
        close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        if isinstance(name, str) and "." in name and ":" not in name:
            hint += " (a factory in a module is named package.module:Name)"
        return f"unknown {self.kind} '{name}'{hint} (known: {', '.join(names)})"
