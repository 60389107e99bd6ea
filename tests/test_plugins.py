"""Plug-ins from outside the repository (acl.core.registry, docs/plugins.md).

A tiny external distribution, `acl_demo_plugin`, is written into a temporary folder: a
package with an env (a one-step bandit on a 1-D Box) and a teacher, and an
`acl_demo_plugin-0.1.dist-info` whose entry_points.txt declares them in the groups
`acl_jax.envs` and `acl_jax.teachers`. Put on PYTHONPATH it is installed as far as
importlib.metadata can tell, with no pip: one `acl run` subprocess runs it end to end by
its entry-point names. In-process, registries with the built-ins of ENVS and TEACHERS read
the same folder from sys.path: the `package.module:Name` form, the shared teacher harness
on the plug-in teacher, and the one-line errors.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from acl.build import build_components, build_env
from acl.config import parse_config
from acl.core.errors import ConfigError
from acl.core.registry import Registry
from acl.teachers import TEACHERS
from envs import ENVS
from experiments.tools import hparams_docs
from tests.compile_effort import FUSION_EMITTERS_OFF
from tests.conftest import TINY
from tests.distribution import forget_modules, unlisted_plugins, write_distribution
from tests.teacher_harness import check_registered_teacher

PACKAGE = "acl_demo_plugin"

ENV_MODULE = '''
"""A one-step bandit whose task is where the rewarded side begins."""

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import spaces

from acl.core.spaces import Box
from envs.base import TaskEnv


@struct.dataclass
class BanditParams:
    threshold: jax.Array = 0.5


@struct.dataclass
class BanditState:
    time: jax.Array


class OneStepBandit(TaskEnv):
    """One step: action 1 earns 1 when the observed task is above the threshold, action 0
    below it.

    Static config: `scale` multiplies the reward."""

    name = "demo_bandit"
    success_threshold = 0.5
    max_episode_steps = 1

    def __init__(self, scale: float = 1.0):
        self.scale = float(scale)
        self.task_space = Box(low=(0.0,), high=(1.0,), names=("threshold",))
        self.return_bounds = (0.0, self.scale)

    def default_params(self):
        return BanditParams()

    def task_to_params(self, task, base_params):
        return base_params.replace(threshold=task[0])

    def reset(self, key, params):
        obs = jnp.stack([params.threshold, jax.random.uniform(key)])
        return obs, BanditState(time=jnp.int32(0))

    def step(self, key, state, action, params):
        right = (action == 1) == (params.threshold > 0.5)
        reward = jnp.where(right, self.scale, 0.0).astype(jnp.float32)
        obs, state = jnp.zeros(2, jnp.float32), state.replace(time=state.time + 1)
        return obs, state, reward, jnp.bool_(True), jnp.bool_(False), {}

    def observation_space(self):
        return spaces.Box(low=0.0, high=1.0, shape=(2,), dtype=jnp.float32)

    def action_space(self):
        return spaces.Discrete(2)


def not_an_env():
    """Builds a string, not a TaskEnv."""
    return "a string"
'''

TEACHER_MODULE = '''
"""A teacher that draws from the low end of the task space."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from acl.core import hparams
from acl.core.spaces import Box
from acl.core.types import default_info
from acl.teachers.base import Teacher, UpdateContext, class_factory


@struct.dataclass
class LowEndParams:
    share: jax.Array = hparams.hparam(
        0.5, low=0.0, high=1.0, low_open=True, doc="Share of each dimension drawn from."
    )


@struct.dataclass
class LowEndState:
    params: LowEndParams
    episodes: jax.Array


@dataclass(frozen=True)
class LowEnd(Teacher):
    """Tasks uniform in the lowest `share` of every task dimension."""

    task_space: Box
    hyper: LowEndParams = hparams.nested(LowEndParams)

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")

    def default_params(self):
        return hparams.leaves(self.hyper)

    def init(self, key, params):
        return LowEndState(params=params, episodes=jnp.zeros((), jnp.int32))

    def sample(self, state, key, n):
        low, high = self.task_space.low_array, self.task_space.high_array
        unit = jax.random.uniform(key, (n, self.task_space.dim)) * state.params.share
        return state, low + unit * (high - low), default_info(n)

    def update(self, state, key, tasks, feedback, step, context=UpdateContext()):
        return state.replace(episodes=state.episodes + feedback.count.astype(jnp.int32))

    def snapshot(self, state):
        return {"episodes": state.episodes}


make_low_end = class_factory(LowEnd)
'''

ENTRY_POINTS = """
[acl_jax.envs]
demo_bandit = acl_demo_plugin.envs:OneStepBandit

[acl_jax.teachers]
low_end = acl_demo_plugin.teachers:make_low_end
"""

BROKEN_PACKAGE = "acl_demo_broken"
"""A second distribution, of plug-ins that break the contract."""

BROKEN_MODULES = {
    "broken.py": """raise ImportError("the demo plug-in's broken module")\n""",
    "teachers.py": "from acl_demo_plugin.teachers import LowEnd\n\nNOT_A_FACTORY = 3\n",
}

BROKEN_ENTRY_POINTS = """
[acl_jax.teachers]
demo_broken = acl_demo_broken.broken:make
demo_not_factory = acl_demo_broken.teachers:NOT_A_FACTORY
demo_class = acl_demo_broken.teachers:LowEnd
"""


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory) -> Path:
    return write_distribution(
        tmp_path_factory.mktemp("plugin"),
        PACKAGE,
        "0.1",
        ENTRY_POINTS,
        {"envs.py": ENV_MODULE, "teachers.py": TEACHER_MODULE},
    )


@pytest.fixture
def on_path(plugin_dir, monkeypatch):
    """The distribution on sys.path, its modules forgotten after the test."""
    monkeypatch.syspath_prepend(str(plugin_dir))
    yield plugin_dir
    forget_modules(PACKAGE)


@pytest.fixture
def broken_on_path(on_path, tmp_path, monkeypatch):
    """The demo distribution and the broken one on sys.path."""
    write_distribution(tmp_path, BROKEN_PACKAGE, "0.2", BROKEN_ENTRY_POINTS, BROKEN_MODULES)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    forget_modules(BROKEN_PACKAGE)


@pytest.fixture
def fresh_registries(monkeypatch):
    """The shared registries as before any plug-in was listed, restored after the test."""
    unlisted_plugins(monkeypatch)


def copy_of(registry: Registry) -> Registry:
    """A registry with `registry`'s built-ins and group, which lists the entry points anew."""
    copy = Registry(registry.kind, registry.plugins)
    for name in registry.builtin_names():
        copy.register(name)(registry.get(name))
    return copy


def test_the_plugin_runs_end_to_end_through_the_cli(plugin_dir, tmp_path):
    config = {
        **TINY,
        "name": "plugin",
        "env": {"name": "demo_bandit", "scale": 2.0},
        "teacher": {"name": "low_end", "share": 0.25},
        "loop": {"num_envs": 4, "num_steps": 16, "total_env_steps": 64, "eval_every": 64},
        "num_seeds": 1,
    }
    path = tmp_path / "plugin.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "run"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(plugin_dir), env.get("PYTHONPATH")) if p)
    # Compiled for speed of compiling, as the fast suite's own programs (compile_effort).
    env["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "1"
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {FUSION_EMITTERS_OFF}".strip()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "acl"), "run", "--config", str(path)]
        + ["--out", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = csv.DictReader((out / "metrics.csv").open())
    assert int(row["env_steps"]) == 64, row
    # One-step episodes earn 0 or the static config's scale, 2.0: the env ran as configured.
    assert 0.0 <= float(row["train_return"]) <= 2.0, row
    recorded = yaml.safe_load((out / "config.yaml").read_text())
    assert recorded["env"]["name"] == "demo_bandit" and recorded["teacher"]["share"] == 0.25
    # The plug-in teacher's snapshot: it was told of every one of the 64 episodes.
    assert int(np.load(out / "teacher" / "eval_0000.npz")["episodes"].sum()) == 64


def test_the_registries_list_plugins_beside_the_builtins(on_path):
    envs, teachers = copy_of(ENVS), copy_of(TEACHERS)
    assert "demo_bandit" in envs.names() and "demo_bandit" not in envs.builtin_names()
    assert {"low_end", "random"} <= set(teachers.names())
    assert "low_end" in teachers and "nope" not in teachers
    factory = teachers.get("low_end", "teacher.name")
    assert teachers.get("low_end") is factory  # imported once
    assert teachers.source("low_end").distribution == "acl_demo_plugin 0.1"
    assert teachers.describe("low_end") == (
        "teacher 'low_end' (entry point low_end = acl_demo_plugin.teachers:make_low_end "
        "of distribution acl_demo_plugin 0.1)"
    )
    assert teachers.source("random") is None and teachers.describe("random") == "teacher 'random'"


def test_the_import_path_form_names_a_factory_no_distribution_declares(on_path):
    teachers, envs = copy_of(TEACHERS), copy_of(ENVS)
    factory = teachers.get("acl_demo_plugin.teachers:make_low_end", "teacher.name")
    assert factory.config_keys == {"share"}
    env = envs.get("acl_demo_plugin.envs:OneStepBandit", "env.name")(scale=3.0)
    assert env.return_bounds == (0.0, 3.0)
    # A config names it, no distribution declares it: no name to list.
    assert "acl_demo_plugin.teachers:make_low_end" not in teachers.names()


def test_a_config_naming_import_paths_builds(on_path, fresh_registries):
    config = parse_config(
        {
            **TINY,
            "env": {"name": "acl_demo_plugin.envs:OneStepBandit"},
            "teacher": {"name": "acl_demo_plugin.teachers:make_low_end", "share": 0.5},
        }
    )
    components = build_components(config)
    assert type(components.env).__name__ == "OneStepBandit"
    assert type(components.teacher).__name__ == "LowEnd"
    assert components.teacher.hyper.share == 0.5


def test_the_teacher_harness_checks_the_plugin_teacher(on_path, fresh_registries):
    state = check_registered_teacher(
        "low_end", {"share": 0.5}, env="demo_bandit", rounds=3, num_seeds=2
    )
    assert int(state.episodes) > 0


@pytest.mark.parametrize(
    "name, message",
    [
        (
            "demo_broken",
            "teacher.name: teacher 'demo_broken' (entry point demo_broken = "
            "acl_demo_broken.broken:make of distribution acl_demo_broken 0.2) failed to "
            "import: ImportError: the demo plug-in's broken module",
        ),
        (
            "demo_not_factory",
            "teacher.name: teacher 'demo_not_factory' (entry point demo_not_factory = "
            "acl_demo_broken.teachers:NOT_A_FACTORY of distribution acl_demo_broken 0.2) is "
            "not a teacher factory: it names an object of type int: 3; a teacher factory is "
            "factory(task_space, context=None, **config) declaring config_keys",
        ),
        (
            "demo_class",
            "teacher.name: teacher 'demo_class' (entry point demo_class = "
            "acl_demo_broken.teachers:LowEnd of distribution acl_demo_broken 0.2) is not a "
            "teacher factory: it names the class acl_demo_plugin.teachers.LowEnd;",
        ),
        (
            "acl_demo_plugin.teachers:make_nothing",
            "teacher.name: teacher 'acl_demo_plugin.teachers:make_nothing' failed to import: "
            "AttributeError: module 'acl_demo_plugin.teachers' has no attribute 'make_nothing'",
        ),
        (
            "acl_demo_plugin.nowhere:make",
            "teacher.name: teacher 'acl_demo_plugin.nowhere:make' failed to import: "
            "ModuleNotFoundError: No module named 'acl_demo_plugin.nowhere'",
        ),
        ("low_ends", "teacher.name: unknown teacher 'low_ends'; did you mean 'low_end'"),
        (
            "acl_demo_plugin.teachers.make_low_end",
            "(a factory in a module is named package.module:Name)",
        ),
    ],
    ids=["import", "not-a-factory", "a-class", "no-attribute", "no-module", "typo", "dotted"],
)
def test_a_bad_plugin_is_one_line_naming_its_distribution(broken_on_path, name, message):
    teachers = copy_of(TEACHERS)
    with pytest.raises(ConfigError) as err:
        teachers.get(name, "teacher.name")
    text = str(err.value)
    assert "\n" not in text and message in text, text
    if "unknown" in text:
        # Every name is known, the plug-ins' and the built-ins'.
        known = text.split("(known: ")[1]
        assert all(n in known for n in ("low_end", "demo_broken", "alp_gmm")), text


def test_a_plugin_that_builds_the_wrong_thing_is_one_line(broken_on_path, fresh_registries):
    config = parse_config({**TINY, "env": {"name": "acl_demo_plugin.envs:not_an_env"}})
    with pytest.raises(ConfigError) as err:
        build_env(config)
    assert str(err.value) == (
        "env.name: env 'acl_demo_plugin.envs:not_an_env' built a str object, not an instance "
        "of envs.base.TaskEnv"
    )


def test_a_plugin_named_like_a_builtin_is_refused(on_path, tmp_path, monkeypatch):
    write_distribution(
        tmp_path,
        "acl_demo_clash",
        "2.0",
        "[acl_jax.teachers]\nrandom = acl_demo_plugin.teachers:make_low_end\n",
        {},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    teachers = copy_of(TEACHERS)
    assert teachers.get("random") is TEACHERS.get("random")  # a built-in lists nothing
    with pytest.raises(ConfigError) as err:
        teachers.get("randm", "teacher.name")
    assert str(err.value) == (
        "teacher plug-in 'random' (entry point random = acl_demo_plugin.teachers:"
        "make_low_end of distribution acl_demo_clash 2.0) is named like the built-in "
        "teacher 'random': rename the entry point"
    )


def test_the_option_pages_document_plugins_only_when_asked(
    on_path, fresh_registries, tmp_path, monkeypatch
):
    # One built-in env beside the plug-in's: building every env for the pages takes seconds.
    monkeypatch.setattr(ENVS, "_factories", {"cartpole": ENVS.get("cartpole")})
    committed = hparams_docs.pages()
    assert "demo_bandit" not in committed["envs.md"] and "low_end" not in committed["teachers.md"]

    assert hparams_docs.main(["--plugins", "--out", str(tmp_path)]) == 0
    teachers = (tmp_path / "teachers.md").read_text()
    section = teachers.split("\n## low_end\n", 1)[1].split("\n## ", 1)[0]
    assert "entry point `low_end` (`acl_demo_plugin.teachers:make_low_end`)" in section
    assert "distribution acl_demo_plugin 0.1" in section
    assert "| `share` | float | `0.5` | (0, 1] |" in section
    envs = (tmp_path / "envs.md").read_text()
    assert "\n## cartpole\n" in envs
    bandit = envs.split("\n## demo_bandit\n", 1)[1]
    assert "| `threshold` |" in bandit and "| `scale` | `1.0` |" in bandit
    with pytest.raises(SystemExit):
        hparams_docs.main(["--plugins"])  # docs/ documents the built-ins alone
