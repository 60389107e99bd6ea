"""acl.core.hparams: one declaration per hyperparameter gives validation, config keys,
unknown-key errors and the docs table."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from acl.agents import AGENTS
from acl.config import check_kwargs, config_keys, parse_config
from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam, nested
from acl.core.spaces import Box
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext, class_factory
from envs import ENVS
from experiments.tools import hparams_docs

SPACE = Box((0.0, -1.0), (2.0, 1.0))


@struct.dataclass
class ToyParams:
    ratio: jax.Array = hparam(0.5, low=0.0, high=1.0, doc="A share.")
    scale: jax.Array = hparam(1.0, low=0.0, low_open=True, doc="Positive.")
    window: jax.Array = hparam(None, kind="int", low=1, doc="Default: derived.")
    derived: jax.Array = None


@dataclasses.dataclass(frozen=True)
class ToyTeacher:
    task_space: Box
    size: int = hparam(3, low=1, doc="A count.")
    criterion: str = hparam("aic", choices=("aic", "bic"), doc="A choice.")
    widths: tuple[int, ...] = hparam((8, 8), low=1, doc="A list.")
    flag: bool = hparam(False, doc="A switch.")
    hyper: ToyParams = nested(ToyParams)

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")


make_toy = class_factory(ToyTeacher)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"ratio": 1.5}, "teacher.ratio must be in [0, 1], got 1.5"),
        ({"scale": 0}, "teacher.scale must be > 0, got 0"),
        ({"size": 0}, "teacher.size must be an integer >= 1, got 0"),
        ({"window": 0}, "teacher.window must be an integer >= 1 or null, got 0"),
        ({"widths": [8, 0]}, "teacher.widths must be an integer or a list of integers, each >= 1"),
        ({"ratio": float("nan")}, "teacher.ratio must be in [0, 1], got nan"),
        ({"scale": float("inf")}, "teacher.scale must be a finite number > 0, got inf"),
        ({"scale": "inf"}, "teacher.scale must be a finite number > 0, got 'inf'"),
    ],
)
def test_a_value_out_of_bounds_names_the_key_and_the_bound(config, message):
    with pytest.raises(ConfigError) as err:
        make_toy(task_space=SPACE, **config)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize(
    "config, message",
    [
        ({"ratio": "half"}, "teacher.ratio must be in [0, 1], got 'half'"),
        ({"ratio": True}, "teacher.ratio must be in [0, 1], got True"),
        ({"size": 2.5}, "teacher.size must be an integer >= 1, got 2.5"),
        ({"flag": 1}, "teacher.flag must be true or false, got 1"),
        ({"criterion": "bik"}, "teacher.criterion must be one of 'aic', 'bic', got 'bik'"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_config_error(config, message):
    with pytest.raises(ConfigError) as err:
        make_toy(task_space=SPACE, **config)
    assert str(err.value).startswith(message)


def test_a_misspelt_choice_suggests_the_closest():
    with pytest.raises(ConfigError, match=r"got 'bik'; did you mean 'bic'\?"):
        make_toy(task_space=SPACE, criterion="bik")


def test_values_take_their_normal_form():
    # YAML 1.1 reads 1e-3 as a string; integral floats are integers; one width is a list.
    toy = make_toy(task_space=SPACE, scale="1e-3", size=4.0, widths=16, window=np.int64(5))
    assert toy.hyper.scale == 1e-3 and isinstance(toy.hyper.scale, float)
    assert toy.size == 4 and isinstance(toy.size, int)
    assert toy.widths == (16,) and toy.hyper.window == 5 and type(toy.hyper.window) is int


def test_unknown_keys_suggest_the_closest_key():
    with pytest.raises(ConfigError, match=r"teacher: unknown config key 'ratoi'; did you mean"):
        make_toy(task_space=SPACE, ratoi=0.2)
    for name, key, close in (("alp_gmm", "fit_rat", "fit_rate"), ("riac", "max_regoins", "")):
        with pytest.raises(ConfigError, match=f"unknown config key '{key}'; did you mean '{close}"):
            TEACHERS.get(name)(task_space=SPACE, **{key: 1})
    with pytest.raises(ConfigError, match=r"agent: unknown config key 'lerning_rate'; did you"):
        AGENTS.get("ppo")(lerning_rate=1e-3)
    # The config layer's check, before any factory runs, reads the same keys.
    with pytest.raises(ConfigError, match=r"teacher: unknown config key 'k_mx'; did you mean"):
        check_kwargs(TEACHERS.get("covar_gmm"), {"k_mx": 3}, "teacher")


def test_keys_are_split_between_the_class_and_its_nested_params():
    assert make_toy.config_keys == {
        "size",
        "criterion",
        "widths",
        "flag",
        "ratio",
        "scale",
        "window",
    }
    assert config_keys(make_toy, skip=("task_space", "context")) == set(make_toy.config_keys)
    toy = make_toy(task_space=SPACE, size=2, ratio=0.25)
    assert toy.size == 2 and toy.hyper == ToyParams(ratio=0.25)


def test_leaves_are_arrays_of_the_declared_dtype():
    params = hparams.leaves(ToyParams(window=7))
    assert params.ratio.dtype == jnp.float32 and params.window.dtype == jnp.int32
    assert params.derived is None
    assert hparams.leaves(ToyParams()).window is None  # left to be derived


def test_a_declaration_with_an_invalid_default_fails_at_import():
    with pytest.raises(ConfigError, match=r"default must be in \[0, 1\], got 2.0"):
        hparam(2.0, low=0.0, high=1.0, doc="Out of its own bounds.")
    with pytest.raises(TypeError, match="give the kind"):
        hparam(None, doc="No kind.")


def test_a_teacher_config_through_the_config_layer():
    config = parse_config(
        {
            "env": "point_reach",
            "teacher": {"name": "riac", "max_region_size": 60, "random_ratio": 0.3},
        }
    )
    from acl.build import build_components

    teacher = build_components(config).teacher
    assert teacher.max_region_size == 60 and teacher.hyper.random_ratio == 0.3
    params = teacher.default_params()
    assert int(params.alp_window) == 60 and float(params.min_region_size) == 3.0


def _built_value(obj, key):
    for holder in (obj, getattr(obj, "hyper", None), getattr(obj, "config", None)):
        if dataclasses.is_dataclass(holder) and key in {f.name for f in dataclasses.fields(holder)}:
            return getattr(holder, key)
    raise AttributeError(key)


@pytest.mark.parametrize("name", ["alp_gmm", "covar_gmm", "riac", "schedule"])
def test_documented_teacher_defaults_are_what_the_factory_builds(name):
    factory = TEACHERS.get(name)
    teacher = factory(task_space=SPACE, context=RunContext())
    for key, declared in factory.hparams.items():
        if declared.default is not None and key != "preset":
            assert _built_value(teacher, key) == declared.default, key


@pytest.mark.parametrize(
    "name", ["dr", "plr", "robust_plr", "accel", "svgg", "random_goal", "paired"]
)
def test_documented_defaults_of_env_teachers_are_what_the_factory_builds(name):
    from acl.build import make_agent
    from acl.loop.rollout import play
    from acl.teachers.paired import PAIREDOptions
    from envs.goal_maze import GoalMaze
    from envs.maze import Maze

    env = GoalMaze() if name in ("svgg", "random_goal") else Maze(height=6, width=6)
    context = RunContext(env=env, play=play, num_envs=2, make_agent=make_agent)
    factory = TEACHERS.get(name)
    teacher = factory(task_space=env.task_space, context=context)
    # PAIRED's factory-only keys build its learners and editor: no teacher field holds them.
    built_from = hparams.specs(PAIREDOptions) if name == "paired" else {}
    for key, declared in factory.hparams.items():
        if declared.default is not None and key not in built_from:
            assert _built_value(teacher, key) == declared.default, key


@pytest.mark.parametrize("name", AGENTS.names())
def test_documented_agent_defaults_are_what_the_factory_builds(name):
    factory = AGENTS.get(name)
    agent = factory()
    for key, declared in factory.hparams.items():
        assert _built_value(agent, key) == declared.default, key


def test_the_option_pages_list_every_registered_key_and_env():
    pages = hparams_docs.pages()
    for page, registry in (("teachers.md", TEACHERS), ("agents.md", AGENTS)):
        for name in registry.names():
            section = pages[page].split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
            keys = config_keys(registry.get(name), skip=hparams_docs.SKIP)
            for key in keys:
                assert f"| `{key}` |" in section, (name, key)
            assert section.count("\n| `") == len(keys), name
    for name in ENVS.names():
        section = pages["envs.md"].split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        assert "| dimension |" in section, name


def test_the_option_pages_are_up_to_date():
    for page, text in hparams_docs.pages().items():
        assert (hparams_docs.DOCS / page).read_text() == text, (
            f"docs/{page} is out of date: run acl hparams-docs"
        )


def test_the_teachers_page_lists_each_presets_settings():
    page = hparams_docs.pages()["teachers.md"]
    sfl = page[page.index("## sfl") : page.index("## spdl")]
    assert "- `maze` (default): the defaults in the table" in sfl
    assert "- `cpu`: `num_batches` 1, `batch_size` 128, `rollout_steps` 512" in sfl
