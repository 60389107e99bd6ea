"""The agent protocol and registry; each agent module registers its factory here.

An agent is a host-side object whose methods are pure and jittable; its numbers live in
the state it returns:

    init(key, obs_space, action_space) -> state
    initial_carry(n, tasks) -> carry [n, ...]       (what `act` carries within an episode)
    act(state, obs [N, O], carry, key, deterministic=False) -> (action [N, ...], carry, extras)
    env_action(action) -> the action the env receives
    update(state, batch: Transition [T, N], key) -> (state, metrics)

`initial_carry` is called at every reset with the tasks [n, D'] the episodes start on
(the rollout's) or with None (evaluation): an actor wrapper reads the columns a teacher
appended after the env's task dimensions there (JSRL's guide horizon). An agent may also
define `bind(env, num_envs)` (called once before `init`) when it needs the env itself
(DQN's HER relabelling), and `off_policy = True` when it can learn from actions another
policy chose.
"""

from typing import Any, Protocol, runtime_checkable

import jax

from acl.core.registry import Registry


@runtime_checkable
class Agent(Protocol):
    def init(self, key: jax.Array, obs_space: Any, action_space: Any) -> Any: ...

    def initial_carry(self, n: int, tasks: jax.Array | None = None) -> Any: ...

    def act(
        self, state: Any, obs: jax.Array, carry: Any, key: jax.Array, deterministic: bool = False
    ) -> tuple[jax.Array, Any, Any]: ...

    def env_action(self, action: jax.Array) -> jax.Array: ...

    def update(self, state: Any, batch: Any, key: jax.Array) -> tuple[Any, dict]: ...


AGENTS: Registry[Agent] = Registry("agent")
"""Agent factories, called as factory(**config); each lists its keys in `config_keys`."""
