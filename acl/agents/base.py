"""The agent contract and registry; each agent module registers its factory here.

An agent is a host-side object whose methods are pure and jittable; its numbers live in
the state it returns:

    init(key, obs_space, action_space) -> state          (state.hyper: its hyperparameters)
    initial_carry(n, tasks) -> carry [n, ...]       (what `act` carries within an episode)
    act(state, obs [N, O], carry, key, deterministic=False) -> (action [N, ...], carry, extras)
    env_action(action) -> the action the env receives
    update(state, batch: Transition [T, N], key, axis_name=None) -> (state, metrics)

`initial_carry` is called at every reset with the tasks [n, D'] the episodes start on
(the rollout's) or with None (evaluation): an actor wrapper reads the columns a teacher
appended after the env's task dimensions there (JSRL's guide horizon).

Every agent subclasses `Agent`, which declares the optional capabilities with their
defaults, so that no caller has to ask an agent what it can do:

- `bind(env, num_envs)`: called once before `init` by whoever builds the run (the loop,
  a teacher's own learners); the default does nothing. `needs_bind = True` says that
  `init` fails without it (DQN's staging rows and HER's goal functions, recurrent PPO's
  encoder chosen from the env).
- `off_policy = True`: the agent can learn from actions another policy chose (JSRL's
  guide steps stay in DQN's loss and are masked out of PPO's).
- `averages_gradients = True`: `update(..., axis_name=name)` averages its gradients over
  the named device axis (`loop.shard_envs`); an agent without it refuses an axis name.
- `num_minibatches`: the minibatches each epoch splits a batch into (1 by default), which
  a device layout must divide.
- `hyper`: the numeric hyperparameters (a pytree), also found in every state as
  `state.hyper`: a sweep stacks them, and the loop re-initialises a forgotten student
  with the hyperparameters of the one it replaces.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import jax

from acl.core.registry import PluginGroup, Registry


class Agent(abc.ABC):
    """The base every agent subclasses: the required methods and the optional
    capabilities with their defaults (module docstring)."""

    off_policy: ClassVar[bool] = False
    """Learns from actions another policy chose (a JSRL guide's)."""
    averages_gradients: ClassVar[bool] = False
    """`update` takes `axis_name` and averages its gradients over that device axis."""
    needs_bind: ClassVar[bool] = False
    """`init` needs `bind(env, num_envs)` first (the env or the instance count)."""
    hyper: Any = None
    """The numeric hyperparameters `init` puts into the state (`state.hyper`)."""

    @property
    def num_minibatches(self) -> int:
        """Minibatches each epoch of `update` splits a batch into."""
        return 1

    def bind(self, env: Any, num_envs: int) -> None:  # noqa: B027 (a default, not abstract)
        """Learn the env and the instance count, once, before `init`; by default nothing."""

    @abc.abstractmethod
    def init(self, key: jax.Array, obs_space: Any, action_space: Any) -> Any: ...

    @abc.abstractmethod
    def initial_carry(self, n: int, tasks: jax.Array | None = None) -> Any: ...

    @abc.abstractmethod
    def act(
        self, state: Any, obs: jax.Array, carry: Any, key: jax.Array, deterministic: bool = False
    ) -> tuple[jax.Array, Any, Any]: ...

    @abc.abstractmethod
    def env_action(self, action: jax.Array) -> jax.Array: ...

    @abc.abstractmethod
    def update(
        self, state: Any, batch: Any, key: jax.Array, axis_name: str | None = None
    ) -> tuple[Any, dict]: ...


def refuse_axis(agent: Agent, axis_name: str | None) -> None:
    """For agents that do not average gradients over devices: an `axis_name` is an error."""
    if axis_name is not None:
        raise ValueError(
            f"{type(agent).__name__}.update does not average gradients over a device axis "
            f"(averages_gradients is False); got axis_name={axis_name!r}"
        )


AGENTS: Registry[Agent] = Registry(
    "agent",
    PluginGroup(
        "acl_jax.agents",
        declares_keys=True,
        factory="factory(**config) declaring config_keys, e.g. "
        "acl.core.hparams.declare(make_agent, YourConfig, YourHyperparams)",
    ),
)
"""Agent factories, called as factory(**config); each lists its keys in `config_keys`;
plug-ins: entry points of the group `acl_jax.agents` (docs/plugins.md)."""
