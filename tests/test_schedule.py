"""The scripted easy-to-hard schedule: the growing box, bad config (the harness runs it
in tests/test_teachers.py, with a ramp short enough to grow within it)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.teachers import TEACHERS
from tests.teacher_harness import feedback

SPACE = Box(low=(0.0, -1.0), high=(2.0, 1.0))


def make(**kwargs):
    return TEACHERS.get("schedule")(task_space=SPACE, **kwargs)


def test_box_grows_linearly_to_the_whole_space():
    teacher = make(start_low=(0.0, 0.5), start_high=(0.1, 0.5), ramp_iterations=4)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    records = feedback(np.zeros((2, 2)), [0.0, 0.0])
    highs = []
    for _ in range(6):
        low, high = teacher.box(state)
        highs.append(np.asarray(high))
        _, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), 500)
        assert np.all((tasks >= low) & (tasks <= high))
        state = teacher.update(state, jax.random.PRNGKey(2), tasks, records, 0)
    np.testing.assert_allclose(highs[0], [0.2, 0.0], atol=1e-6)
    np.testing.assert_allclose(highs[2], [1.1, 0.5], atol=1e-6)  # halfway
    np.testing.assert_allclose(highs[4], [2.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(highs[5], highs[4])  # stays on the whole space
    np.testing.assert_allclose(teacher.box(state)[0], [0.0, -1.0], atol=1e-6)
    assert int(teacher.snapshot(state)["episodes_seen"]) == 12


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"start_high": (0.1,)}, "start_high has 1 entries"),
        ({"start_high": (0.1, 1.5)}, r"in \[0, 1\]"),
        ({"start_low": (0.5, 0.0), "start_high": (0.1, 1.0)}, "must be <="),
        ({"ramp_iterations": 0}, "ramp_iterations"),
    ],
)
def test_bad_config(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        make(**kwargs)
