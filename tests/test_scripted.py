"""Scripted controllers of gymnax task spaces (envs/scripted.py: SCRIPTED,
scripted_success): each masters its default task, an infeasible pendulum fails, shapes,
and the one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest

import envs  # noqa: F401  (registers every env)
from acl.core.errors import ConfigError
from envs.registry import make_env
from envs.scripted import SCRIPTED, scripted_success

BOUNDS = [0.01, 10.01]


def cartpole(**config):
    task = {"length": BOUNDS, "masspole": BOUNDS}
    return make_env("gymnax", id="CartPole-v1", task=task, success_threshold=475, **config)


def pendulum():
    task = {"l": BOUNDS, "m": BOUNDS}
    return make_env("gymnax", id="Pendulum-v1", task=task, success_threshold=-400)


def acrobot(success_threshold: float):
    task = {
        "link_length": {"fields": ["link_length_1", "link_length_2"], "bounds": BOUNDS},
        "link_mass": {"fields": ["link_mass_1", "link_mass_2"], "bounds": BOUNDS},
    }
    return make_env("gymnax", id="Acrobot-v1", task=task, success_threshold=success_threshold)


def test_cartpole_balances_the_default_task_for_the_whole_episode():
    env = cartpole()
    success = scripted_success(env, np.array([env.task_space.default]), episodes=8)
    assert success.tolist() == [1.0]


def test_pendulum_swings_up_the_default_task_and_fails_an_infeasible_one():
    env = pendulum()
    # (l, m) = (1, 1), gymnax's default; (10, 10): gravity torque m g l / 2 = 500 N m
    # against a 2 N m motor.
    tasks = np.array([[1.0, 1.0], [10.0, 10.0]])
    success = scripted_success(env, tasks, episodes=8, seed=3)
    assert success.tolist() == [1.0, 0.0]


def test_pendulum_preset_takes_the_torque_as_a_fraction():
    env = make_env("pendulum")  # actions in [-1, 1], a fraction of max_torque
    assert env.gymnax_id in SCRIPTED
    success = scripted_success(env, np.array([env.task_space.default]), episodes=4)
    assert success.tolist() == [1.0]


def test_acrobot_reaches_the_goal_on_the_default_task():
    # Within the time limit from every start (a return above -500 ends the episode early);
    # the -100 budget from most starts only, the default task sits on that border.
    env = acrobot(success_threshold=-499.5)
    success = scripted_success(env, np.array([env.task_space.default]), episodes=8)
    assert success.tolist() == [1.0]


def test_shares_per_task_in_the_unit_interval():
    env = cartpole()
    tasks = np.array([[0.5, 0.1], [10.0, 10.0], [0.05, 5.0]])
    success = scripted_success(env, tasks, episodes=3, seed=1)
    assert success.shape == (3,)
    assert np.all((success >= 0) & (success <= 1))
    assert np.allclose(success * 3, np.round(success * 3))  # a share of 3 episodes


def test_refusals_are_one_line():
    car = make_env(
        "gymnax", id="MountainCar-v0", task={"force": [0.0005, 0.002]}, success_threshold=-200
    )
    assert car.gymnax_id not in SCRIPTED
    with pytest.raises(ConfigError, match="no scripted controller for gymnax id 'MountainCar-v0'"):
        scripted_success(car, np.array([[0.001]]))
    env = cartpole()
    for tasks, episodes in ((np.zeros((2, 3)), 1), (np.zeros(2), 1), (np.zeros((1, 2)), 0)):
        with pytest.raises(ConfigError) as err:
            scripted_success(env, tasks, episodes=episodes)
        assert "\n" not in str(err.value)
