"""Hyperparameters declared once.

A teacher or an agent declares each config key it takes exactly once, as a dataclass
field made by `hparam`: its default, its type, its bounds and a one-line doc. Everything
else is read from that declaration:

- validation of the values given (`validate`, `validated`, `validate_fields`), with one
  error style: ConfigError("teacher.<key> must be <requirement>, got <value>");
- the keys a registry factory accepts (`config_keys`; `declare` sets the factory's
  `config_keys`, which `acl.config.check_kwargs` reads) and the unknown-key error with a
  "did you mean" (`unknown_key`, `check_keys`, `split`);
- the option pages docs/teachers.md and docs/agents.md (`acl hparams-docs`).

Numeric hyperparameters are fields of a flax `struct.dataclass`: pytree leaves, so a sweep
over them is a vmap (`leaves` makes the configured numbers arrays of the declared dtype).
Static, shape-setting options are fields of a frozen dataclass (a teacher, an agent's
config). A teacher holds its numeric ones as a `nested` params struct, whose keys are then
the teacher's own:

    @struct.dataclass
    class ScheduleParams:
        ramp_iterations: jax.Array = hparam(100, low=1, doc="Updates until ...")

    @dataclass(frozen=True)
    class ScheduleTeacher:
        task_space: Box
        hyper: ScheduleParams = nested(ScheduleParams)

Host side only: nothing here runs inside a trace.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from acl.core.errors import ConfigError

KINDS = ("float", "int", "bool", "choice", "floats", "ints", "any")
"""float, int, bool: one value; choice: one of `choices`; floats, ints: a list (a single
number is a list of one); any: an object passed as it is (an env), not checked."""

DTYPES = {
    "float": jnp.float32,
    "int": jnp.int32,
    "bool": jnp.bool_,
    "floats": jnp.float32,
    "ints": jnp.int32,
}
"""The dtype of each kind's pytree leaf (`leaves`)."""

_SPEC = "hparam"
_NESTED = "hparams_nested"


@dataclass(frozen=True)
class HParam:
    """One hyperparameter's declaration: the metadata of its dataclass field."""

    default: Any
    kind: str
    doc: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    """The bound `low` itself is excluded (> low instead of >= low)."""
    high_open: bool = False
    choices: tuple = ()
    optional: bool = False
    """None is a valid value (its meaning is in `doc`: derived, or the run's)."""
    size: int | None = None
    """floats, ints: the exact number of entries."""
    min_size: int = 0
    """floats, ints: the fewest entries."""

    def bounds(self) -> str:
        """The bounds as text: "[0, 1]", "(0, 1]", "> 0", ">= 1", or ""."""
        low, high = self.low, self.high
        if low is not None and high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"{left}{low:g}, {high:g}{right}"
        if low is not None:
            return f"{'>' if self.low_open else '>='} {low:g}"
        if high is not None:
            return f"{'<' if self.high_open else '<='} {high:g}"
        return ""

    def requirement(self) -> str:
        """What a valid value is, as the end of "teacher.<key> must be ..."."""
        bounds = self.bounds()
        within = f"in {bounds}" if bounds.startswith(("[", "(")) else bounds
        if self.kind == "float":
            # "in [0, 1]", not "a number in [0, 1]": the wording the other checks use.
            text = within or "a number"
        elif self.kind == "int":
            text = f"an integer {within}" if within else "an integer"
        elif self.kind == "bool":
            text = "true or false"
        elif self.kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind in ("floats", "ints"):
            item = "number" if self.kind == "floats" else "integer"
            if self.size is not None:
                text = f"a list of {self.size} {item}s"
            elif self.min_size:
                text = f"a list of at least {self.min_size} {item}{'s' * (self.min_size > 1)}"
            else:
                text = f"a{'n' * (item[0] == 'i')} {item} or a list of {item}s"
            text = f"{text}, each {within}" if within else text
        else:
            text = "anything"
        if not self.optional:
            return text
        return f"{text}, or null" if "," in text else f"{text} or null"

    def check(self, value: Any, name: str) -> Any:
        """`value` in its normal form (float, int, bool, a tuple for list kinds), or a
        ConfigError naming `name` ("teacher.<key>")."""
        if self.kind == "any" or (value is None and self.optional):
            return value
        normal = _normal(self, value)
        if normal is _NOT_FINITE:
            # "must be > 0, got inf" would read as a contradiction: say "finite".
            requirement = self.requirement()
            if self.kind == "float":
                requirement = f"a finite number {requirement}".replace(" a number", "")
            else:
                requirement = f"{requirement}, all finite"
            raise ConfigError(f"{name} must be {requirement.strip()}, got {value!r}")
        if normal is _INVALID:
            hint = ""
            if self.kind == "choice" and isinstance(value, str):
                hint = did_you_mean(value, self.choices)
            raise ConfigError(f"{name} must be {self.requirement()}, got {value!r}{hint}")
        return normal


_INVALID = object()
_NOT_FINITE = object()
"""Inside the bounds but infinite: NaN or inf would only surface after compiling, as a
non-finite loss."""


def _float(value: Any) -> float | object:
    if isinstance(value, str):
        # YAML 1.1 reads an exponent without a dot (1e-3) as a string.
        try:
            return float(value)
        except ValueError:
            return _INVALID
    if isinstance(value, bool | np.bool_ | list | tuple | dict) or value is None:
        return _INVALID
    array = np.asarray(value)
    if array.ndim == 0 and array.dtype.kind in "iuf":
        return float(array)
    return _INVALID


def as_float(value: Any) -> float | None:
    """A config value as a float (numbers, number strings such as YAML's "1e-3"), or None
    when it is no number; NaN and inf pass through for the caller's finiteness check."""
    x = _float(value)
    return None if x is _INVALID else x


def _int(value: Any) -> int | object:
    if isinstance(value, bool | np.bool_ | str | list | tuple | dict) or value is None:
        return _INVALID
    array = np.asarray(value)
    if array.ndim != 0:
        return _INVALID
    if array.dtype.kind in "iu":
        return int(array)
    if array.dtype.kind == "f" and float(array).is_integer():
        return int(array)
    return _INVALID


def _within(spec: HParam, x: float) -> bool:
    # Written as `not (x >= low)` so that NaN is out of bounds too.
    if spec.low is not None and not (x > spec.low if spec.low_open else x >= spec.low):
        return False
    if spec.high is not None and not (x < spec.high if spec.high_open else x <= spec.high):
        return False
    return True


def _normal(spec: HParam, value: Any) -> Any:
    kind = spec.kind
    if kind == "bool":
        ok = isinstance(value, bool | np.bool_)
        return bool(value) if ok else _INVALID
    if kind == "choice":
        return value if isinstance(value, str) and value in spec.choices else _INVALID
    if kind in ("float", "int"):
        x = (_float if kind == "float" else _int)(value)
        if x is _INVALID or not _within(spec, x):
            return _INVALID
        return x if math.isfinite(x) else _NOT_FINITE
    # floats, ints
    if isinstance(value, list | tuple):
        items = list(value)
    elif hasattr(value, "shape") and np.ndim(value) > 0:
        items = list(np.ravel(np.asarray(value)))
    else:
        items = [value]
    convert = _float if kind == "floats" else _int
    out = tuple(convert(v) for v in items)
    if any(x is _INVALID or not _within(spec, x) for x in out):
        return _INVALID
    if (spec.size is not None and len(out) != spec.size) or len(out) < spec.min_size:
        return _INVALID
    return out if all(math.isfinite(x) for x in out) else _NOT_FINITE


def _kind_of(default: Any, choices: tuple) -> str:
    if choices:
        return "choice"
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, tuple) and all(isinstance(v, int) for v in default):
        return "ints"
    if isinstance(default, tuple):
        return "floats"
    raise TypeError(f"hparam: give the kind of a {type(default).__name__} default ({KINDS})")


def spec(
    default: Any,
    *,
    doc: str,
    kind: str | None = None,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    choices: Iterable = (),
    optional: bool | None = None,
    size: int | None = None,
    min_size: int = 0,
) -> HParam:
    """An `HParam`; the arguments are `hparam`'s. For keys that are no field (a preset)."""
    choices = tuple(choices)
    kind = kind or _kind_of(default, choices)
    if kind not in KINDS:
        raise ValueError(f"hparam kind must be one of {KINDS}, got {kind!r}")
    optional = default is None if optional is None else optional
    declared = HParam(
        default, kind, doc, low, high, low_open, high_open, choices, optional, size, min_size
    )
    # A declaration whose own default is invalid is a bug: fail at import, not in a run.
    declared.check(default, "default")
    return declared


def hparam(default: Any, *, doc: str, **declaration) -> Any:
    """A dataclass field declaring one hyperparameter.

    default: its value when not configured (None: derived or the run's, said in `doc`;
        it then also accepts None).
    doc: one line for the docs table.
    kind: one of KINDS; inferred from the default (bool, int, float, a tuple of ints or
        floats; `choices` given: "choice") unless the default is None.
    low, high: inclusive bounds of a number, or of each entry of a list; low_open,
        high_open make them exclusive.
    choices: the allowed values of a "choice".
    optional: accept None although the default is not None.
    size, min_size: the exact and the fewest entries of a list.
    """
    return dataclasses.field(
        default=default, metadata={_SPEC: spec(default, doc=doc, **declaration)}
    )


def nested(cls: type) -> Any:
    """A dataclass field holding an instance of `cls` (a params struct): `cls`'s keys
    become the holder's own (`specs`, `split`, `validate`)."""
    return dataclasses.field(default_factory=cls, metadata={_NESTED: cls})


def specs(cls: Any) -> dict[str, HParam]:
    """Key -> declaration of every hyperparameter of the dataclass `cls` (or instance),
    in field order, with the keys of its `nested` fields."""
    out: dict[str, HParam] = {}
    for f in dataclasses.fields(cls):
        if _SPEC in f.metadata:
            found = {f.name: f.metadata[_SPEC]}
        elif _NESTED in f.metadata:
            found = specs(f.metadata[_NESTED])
        else:
            continue
        for key in found:
            if key in out:
                raise TypeError(f"{cls}: hyperparameter {key!r} is declared twice")
        out.update(found)
    return out


def leaf_specs(obj: Any) -> dict[str, HParam]:
    """Key -> declaration of the hyperparameters of `obj` (a dataclass or an instance)
    that are pytree leaves: the fields of a flax struct, and those of a holder's `nested`
    params structs. The keys a vmap can sweep (acl.run.sweep); the others are static."""
    own = getattr(obj, "_flax_dataclass", False)
    out: dict[str, HParam] = {}
    for f in dataclasses.fields(obj):
        if own and _SPEC in f.metadata:
            out[f.name] = f.metadata[_SPEC]
        elif _NESTED in f.metadata:
            out.update(leaf_specs(f.metadata[_NESTED]))
    return out


def config_keys(*classes: Any) -> frozenset[str]:
    """The config keys declared by `classes` together."""
    keys: set[str] = set()
    for cls in classes:
        declared = specs(cls)
        if keys & set(declared):
            raise TypeError(f"{sorted(keys & set(declared))} declared by two classes")
        keys |= set(declared)
    return frozenset(keys)


def did_you_mean(key: str, allowed: Iterable[str]) -> str:
    """ "; did you mean 'x'?" for the closest of `allowed`, or ""."""
    close = difflib.get_close_matches(key, sorted(allowed), n=2, cutoff=0.5)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""


def unknown_key(field_name: str, key: str, allowed: Iterable[str]) -> ConfigError:
    """The error for a config key that `field_name` (config, loop, teacher...) lacks."""
    return ConfigError(f"{field_name}: unknown config key '{key}'{did_you_mean(key, allowed)}")


def check_keys(kwargs: Mapping, allowed: Iterable[str], field_name: str) -> None:
    """Raise `unknown_key` for the first key of `kwargs` not in `allowed`."""
    allowed = set(allowed)
    for key in kwargs:
        if key not in allowed:
            raise unknown_key(field_name, key, allowed)


def _arguments(cls: type, kwargs: Mapping) -> dict:
    out = {}
    for f in dataclasses.fields(cls):
        if _SPEC in f.metadata and f.name in kwargs:
            out[f.name] = kwargs[f.name]
        elif _NESTED in f.metadata:
            inner = f.metadata[_NESTED]
            out[f.name] = inner(**_arguments(inner, kwargs))
    return out


def split(kwargs: Mapping, *classes: type, field_name: str) -> list[dict]:
    """Flat config keys as constructor arguments, one dict per class (the keys of its
    `nested` fields gathered into an instance); an unknown key raises `unknown_key`.
    Values are passed on as given: the classes validate them."""
    check_keys(kwargs, config_keys(*classes), field_name)
    return [_arguments(cls, kwargs) for cls in classes]


def validate(obj: Any, field_name: str) -> dict:
    """The declared fields of the dataclass instance `obj` in normal form, by name (a
    `nested` field: its instance, validated), or a ConfigError naming
    `field_name.<key>`."""
    out = {}
    for f in dataclasses.fields(obj):
        if _SPEC in f.metadata:
            out[f.name] = f.metadata[_SPEC].check(getattr(obj, f.name), f"{field_name}.{f.name}")
        elif _NESTED in f.metadata:
            out[f.name] = validated(getattr(obj, f.name), field_name)
    return out


def validated(obj: Any, field_name: str) -> Any:
    """A copy of `obj` with its declared fields validated and in normal form."""
    return dataclasses.replace(obj, **validate(obj, field_name))


def validate_fields(obj: Any, field_name: str) -> None:
    """`validate` in place, for the `__post_init__` of a frozen dataclass."""
    for name, value in validate(obj, field_name).items():
        object.__setattr__(obj, name, value)


def leaves(params: Any) -> Any:
    """`params` (a struct of configured numbers) with each declared field an array of its
    kind's dtype (`DTYPES`); None (left to be derived) stays None."""
    arrays = {}
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        if _SPEC in f.metadata and value is not None:
            arrays[f.name] = jnp.asarray(value, DTYPES[f.metadata[_SPEC].kind])
    return params.replace(**arrays)


def declare(
    factory: Any,
    *classes: type,
    extra: Mapping[str, HParam] | None = None,
    defaults: Mapping | None = None,
) -> Any:
    """Give a registry factory its keys: `factory.config_keys` (read by
    `acl.config.check_kwargs`) and `factory.hparams`, key -> HParam for the docs table,
    with the defaults the factory applies (`defaults`, e.g. its default preset's) in place
    of the declared ones. `extra`: keys no class declares (the factory's own `preset`).
    Returns `factory`."""
    table: dict[str, HParam] = {}
    for source in [*(specs(c) for c in classes), dict(extra or {})]:
        for key, declared in source.items():
            if key in table:
                raise TypeError(f"{getattr(factory, '__name__', factory)}: {key!r} declared twice")
            table[key] = declared
    for key, value in (defaults or {}).items():
        table[key] = dataclasses.replace(table[key], default=value)
    factory.hparams = table
    factory.config_keys = frozenset(table)
    return factory


__all__ = [
    "DTYPES",
    "HParam",
    "KINDS",
    "check_keys",
    "config_keys",
    "declare",
    "did_you_mean",
    "hparam",
    "leaf_specs",
    "leaves",
    "nested",
    "spec",
    "specs",
    "split",
    "unknown_key",
    "validate",
    "validate_fields",
    "validated",
]
