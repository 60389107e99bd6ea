"""Agents: PPO, recurrent PPO and DQN (+HER) sharing rollout, minibatching and networks."""

from acl.agents.base import AGENTS, Agent
from acl.agents.dqn import DQN, DQNConfig, DQNHyperparams
from acl.agents.ppo import PPO, PPOConfig, PPOHyperparams
from acl.agents.recurrent_ppo import RecurrentPPO, RecurrentPPOConfig

__all__ = [
    "AGENTS",
    "Agent",
    "DQN",
    "DQNConfig",
    "DQNHyperparams",
    "PPO",
    "PPOConfig",
    "PPOHyperparams",
    "RecurrentPPO",
    "RecurrentPPOConfig",
]
