"""The goal-only view (acl.teachers.subspace): an inner teacher over some task dimensions,
the others fixed at a base task."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from acl.core.errors import ConfigError
from acl.core.types import Feedback, default_info
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext, Teacher, UpdateContext
from acl.teachers.subspace import SubspaceTeacher, make_subspace, sub_space
from envs.point_maze import PointMaze

MAZE = PointMaze("s_maze", invalid_goal="keep")


@struct.dataclass
class SeenState:
    last_task: jax.Array
    last_tasks: jax.Array
    env_tasks: jax.Array
    """Its last tasks through its update's `context.env_tasks`."""


@dataclass(frozen=True)
class RecordingTeacher(Teacher):
    """Hands out the sub-box's upper corner; keeps what its update was given."""

    task_space: object

    def default_params(self):
        return None

    def init(self, key, params):
        d = self.task_space.dim
        return SeenState(jnp.zeros((4, d)), jnp.zeros((4, d)), jnp.zeros((4, 4)))

    def sample(self, state, key, n):
        return (
            state,
            jnp.broadcast_to(self.task_space.high_array, (n, self.task_space.dim)),
            (default_info(n)),
        )

    def update(self, state, key, tasks, feedback, step, context=UpdateContext()):
        env_tasks = context.env_tasks(tasks)
        return state.replace(last_task=feedback.task, last_tasks=tasks, env_tasks=env_tasks)

    def snapshot(self, state):
        return {}


def test_goal_only_view_fixes_the_start_and_projects_feedback():
    space = MAZE.task_space
    dims = (2, 3)
    inner = RecordingTeacher(sub_space(space, dims))
    base = (0.15, 0.15, 0.5, 0.5)
    teacher = SubspaceTeacher(space, inner, dims, base)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    state, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), 4)
    np.testing.assert_allclose(tasks[:, :2], np.broadcast_to(base[:2], (4, 2)))
    np.testing.assert_allclose(tasks[:, 2:], np.ones((4, 2)))
    played = jnp.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]] * 2)
    records = Feedback(
        task=played,
        episode_return=jnp.zeros(4),
        success=jnp.zeros(4, bool),
        length=jnp.ones(4, jnp.int32),
        mask=jnp.ones(4, bool),
    )
    after = teacher.update(state, None, tasks, records, jnp.int32(0))
    np.testing.assert_allclose(after.inner.last_task, played[:, 2:])
    np.testing.assert_allclose(after.inner.last_tasks, tasks[:, 2:])
    # The inner teacher's map onto env tasks puts its coordinates back on the base task,
    # then through the map the view itself was given (a challenge's, say).
    np.testing.assert_allclose(after.inner.env_tasks, tasks)
    doubled = UpdateContext(env_tasks=lambda env_tasks: 2 * env_tasks)
    after = teacher.update(state, None, tasks, records, jnp.int32(0), doubled)
    np.testing.assert_allclose(after.inner.env_tasks, 2 * tasks)


def test_registered_alp_gmm_over_goals_keeps_the_default_start():
    context = RunContext(return_bounds=MAZE.return_bounds)
    teacher = TEACHERS.get("subspace")(
        task_space=MAZE.task_space, context=context, teacher="alp_gmm", dims=["goal_x", "goal_y"]
    )
    assert type(teacher.inner).__name__ == "ALPGMMTeacher"
    assert teacher.inner.task_space.names == ("goal_x", "goal_y")
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    _, tasks, _ = jax.jit(teacher.sample, static_argnums=2)(state, jax.random.PRNGKey(1), 256)
    start = np.asarray(MAZE.task_space.default[:2])
    np.testing.assert_allclose(tasks[:, :2], np.broadcast_to(start, (256, 2)))
    goals = np.asarray(tasks[:, 2:])
    assert goals.min() >= 0.0 and goals.max() <= 1.0 and goals.std(axis=0).min() > 0.2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(dims=["goal_z"]), "no task dimension named 'goal_z'"),
        (dict(dims=[4]), "not a dimension index"),
        (dict(dims=[2, 2]), "repeats"),
        (dict(dims=[]), "non-empty"),
        (dict(dims=[2], teacher="subspace"), "inner teacher"),
        (dict(dims=[2], base_task=[0.5]), "base_task"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        make_subspace(MAZE.task_space, RunContext(), **kwargs)
