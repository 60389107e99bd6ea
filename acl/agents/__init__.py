"""Agents: PPO (and later DQN) sharing rollout, GAE, minibatching and networks."""

from acl.agents.base import AGENTS
from acl.agents.ppo import PPO, PPOConfig, PPOHyperparams

__all__ = ["AGENTS", "PPO", "PPOConfig", "PPOHyperparams"]
