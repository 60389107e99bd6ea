"""Challenge transforms: each does what it claims, and all of a teacher's challenges share
one compiled program."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from acl.agents.ppo import make_ppo
from acl.build import build_components, challenge_data, make_challenge, make_train
from acl.config import ChallengeSpec
from acl.core.errors import ConfigError
from acl.core.spaces import Box
from acl.core.types import default_info
from acl.loop.train import Components
from acl.teachers import TEACHERS
from acl.teachers.base import RunContext, Teacher, UpdateContext
from acl.teachers.challenge import (
    NUM_INTERVALS,
    rugged_permutation,
    teacher_space,
    to_env,
    to_teacher,
    with_challenge,
)
from acl.teachers.jsrl import Guide, GuidedActor
from envs import make_env
from envs.base import TaskEnv
from tests.conftest import tiny_config

CARTPOLE = make_env("cartpole")


def test_bounds_challenges_map_the_unit_cube_onto_the_declared_boxes():
    for name, box in [
        ("default", CARTPOLE.task_space),
        ("unfeasible", CARTPOLE.unfeasible_bounds),
        ("trivial", CARTPOLE.trivial_bounds),
    ]:
        ch = make_challenge(CARTPOLE, ChallengeSpec(name))
        np.testing.assert_allclose(to_env(ch, jnp.zeros(3)), box.low, rtol=1e-6)
        np.testing.assert_allclose(to_env(ch, jnp.ones(3)), box.high, rtol=1e-6)
        middle = to_env(ch, jnp.full(3, 0.5))
        np.testing.assert_allclose(middle, (np.array(box.low) + box.high) / 2, rtol=1e-6)
    # The unfeasible space is CartPole's with forces up to 5000 N.
    assert CARTPOLE.unfeasible_bounds.high[2] == 5000.0


def test_an_env_without_declared_bounds_has_no_unfeasible_challenge():
    class Bare(TaskEnv):
        """A task env that declares no challenge bounds (TaskEnv's None)."""

        name = "bare"
        task_space = Box(low=(0.0,), high=(1.0,))

    with pytest.raises(ConfigError, match="declares no unfeasible_bounds"):
        make_challenge(Bare(), ChallengeSpec("unfeasible"))
    with pytest.raises(ConfigError, match="challenge must be one of"):
        ChallengeSpec("rugd")
    with pytest.raises(ConfigError, match="expert must be one of"):
        ChallengeSpec("default", expert="medium")


def test_rugged_map_is_a_seeded_bijection_that_shuffles_intervals():
    perm = rugged_permutation(3, seed=0)
    assert perm.shape == (3, NUM_INTERVALS)
    for row in perm:
        assert sorted(row) == list(range(NUM_INTERVALS))
        assert not np.array_equal(row, np.arange(NUM_INTERVALS)), "identity permutation"
    np.testing.assert_array_equal(perm, rugged_permutation(3, seed=0))
    assert not np.array_equal(perm, rugged_permutation(3, seed=1))

    ch = make_challenge(CARTPOLE, ChallengeSpec("rugged"), seed=0)
    np.testing.assert_array_equal(ch.interval_perm, perm)
    u = jax.random.uniform(jax.random.PRNGKey(0), (4096, 3))
    tasks = to_env(ch, u)
    assert bool(CARTPOLE.task_space.contains(tasks).all())
    # Injective and onto: teacher -> env -> teacher and env -> teacher -> env are identities.
    np.testing.assert_allclose(to_teacher(ch, tasks), u, atol=1e-5)
    true = CARTPOLE.task_space.sample_uniform(jax.random.PRNGKey(1), 4096)
    np.testing.assert_allclose(to_env(ch, to_teacher(ch, true)), true, rtol=1e-5, atol=1e-4)
    # Teacher interval j of each dimension lands in true interval perm[d, j].
    low, high = np.array(CARTPOLE.task_space.low), np.array(CARTPOLE.task_space.high)
    true_interval = np.floor((np.asarray(tasks) - low) / (high - low) * NUM_INTERVALS)
    teacher_interval = np.floor(np.asarray(u) * NUM_INTERVALS).astype(int)
    for d in range(3):
        np.testing.assert_array_equal(true_interval[:, d], perm[d][teacher_interval[:, d]])
    # Not the identity map: most points move.
    identity = make_challenge(CARTPOLE, ChallengeSpec("default"))
    moved = np.abs(np.asarray(tasks - to_env(identity, u))).max(axis=1) > 1e-3
    assert moved.mean() > 0.9


def test_expert_priors():
    high = make_challenge(CARTPOLE, ChallengeSpec("unfeasible", expert="high"))
    assert bool(high.use_prior)
    # Centred on the env's easy (default) task, in teacher coordinates; std 10% of range.
    np.testing.assert_allclose(
        to_env(high, high.prior_mean), CARTPOLE.task_space.default_task, rtol=1e-5
    )
    np.testing.assert_allclose(high.prior_std, 0.1)
    low = make_challenge(CARTPOLE, ChallengeSpec("default", expert="low"), seed=3)
    assert bool(low.use_prior)
    assert np.all((low.prior_mean >= 0.25) & (low.prior_mean <= 0.75))
    other = make_challenge(CARTPOLE, ChallengeSpec("default", expert="low"), seed=4)
    assert not np.allclose(low.prior_mean, other.prior_mean)
    assert not bool(make_challenge(CARTPOLE, ChallengeSpec("default")).use_prior)


def test_teacher_space_is_the_unit_cube_with_the_env_default_inside():
    space = teacher_space(CARTPOLE.task_space)
    assert space.low == (0.0, 0.0, 0.0) and space.high == (1.0, 1.0, 1.0)
    ch = make_challenge(CARTPOLE, ChallengeSpec("default"))
    np.testing.assert_allclose(
        to_env(ch, space.default_task), CARTPOLE.task_space.default_task, rtol=1e-5
    )


class StillGuide(Guide):
    def act(self, obs, key):
        return jnp.zeros(obs.shape[:1], jnp.int32)


def test_the_wrapper_declares_what_its_teacher_can_do():
    space = teacher_space(CARTPOLE.task_space)
    challenge = make_challenge(CARTPOLE, ChallengeSpec("default", expert="high"))

    def challenged(name: str, **config):
        inner = TEACHERS.get(name)(task_space=space, context=RunContext(), **config)
        return inner, with_challenge(inner, CARTPOLE.task_space)

    # A teacher that takes a prior gets the challenge's, one that takes none keeps its params.
    inner, teacher = challenged("alp_gmm")
    assert teacher.configured_teacher is inner and inner.takes_prior
    assert bool(teacher.params_for(challenge).inner.use_prior)
    inner, teacher = challenged("random")
    assert teacher.configured_teacher is inner and not inner.takes_prior
    assert teacher.params_for(challenge).inner == inner.default_params()
    # The student wrapper is the inner teacher's (none for the challenge itself).
    student = make_ppo()
    assert teacher.wrap_student(student) is student
    _, guided = challenged("jsrl", guide=StillGuide(), guide_horizon=3)
    wrapped = guided.wrap_student(student)
    assert isinstance(wrapped, GuidedActor) and wrapped.agent is student


# -- in the loop ------------------------------------------------------------------------

CORNERS = jnp.array([[0.1, 0.3, 0.6], [0.9, 0.55, 0.2], [0.4, 0.8, 0.95]], jnp.float32)


@struct.dataclass
class WitnessState:
    only_own_tasks: jax.Array
    records: jax.Array


@dataclass(frozen=True)
class WitnessTeacher(Teacher):
    """Hands out three fixed teacher-space points, and checks every feedback task is one."""

    task_space: Box

    def default_params(self):
        return ()

    def init(self, key, params):
        return WitnessState(jnp.asarray(True), jnp.zeros((), jnp.int32))

    def sample(self, state, key, n):
        return state, CORNERS[jax.random.randint(key, (n,), 0, 3)], default_info(n)

    def update(self, state, key, tasks, feedback, step, context=UpdateContext()):
        distance = jnp.abs(feedback.task[:, None, :] - CORNERS[None]).max(-1).min(-1)
        own = jnp.all(jnp.where(feedback.mask, distance == 0.0, True))
        return WitnessState(state.only_own_tasks & own, state.records + feedback.count)

    def snapshot(self, state):
        return {"records": state.records}


@pytest.mark.slow
def test_the_teacher_never_sees_an_env_task_and_the_env_gets_the_true_one():
    config = tiny_config(num_seeds=2)
    base = build_components(config)
    space = base.env.task_space
    witness = with_challenge(WitnessTeacher(teacher_space(space)), space)
    trainer = make_train(config, Components(base.env, witness, base.agent))
    ch = make_challenge(trainer.env, ChallengeSpec("rugged"), seed=0)
    carry = trainer.jit_init_seeds()(trainer.seed_keys(), challenge_data(trainer, ch))
    carry, metrics = trainer.jit_run_chunk_seeds()(carry)
    state = carry.seed.teacher_state.inner
    assert int(state.records.min()) > 0
    assert bool(state.only_own_tasks.all()), "the teacher saw a task it did not hand out"
    # Each instance runs the true task of its teacher-space point, which rides along in
    # the task's last three columns.
    slots = carry.seed.slots
    unit = slots.task[..., 3:]
    true = to_env(ch, unit)
    np.testing.assert_allclose(slots.task[..., :3], true, rtol=1e-6)
    np.testing.assert_allclose(slots.params.length, true[..., 0], rtol=1e-6)
    np.testing.assert_allclose(slots.params.force_mag, true[..., 2], rtol=1e-6)
    assert not np.allclose(
        slots.params.force_mag,
        to_env(make_challenge(trainer.env, ChallengeSpec("default")), unit)[..., 2],
    )
    # Logged tasks are the env's.
    assert bool(CARTPOLE.task_space.contains(metrics.tasks).all())
    logged = np.asarray(metrics.tasks).reshape(-1, 3)
    expected = np.asarray(to_env(ch, CORNERS))
    assert np.abs(logged[:, None, :] - expected[None]).max(-1).min(-1).max() < 1e-3


@pytest.mark.slow  # compiles the challenged loop: ~30-40 s on 2 cores
def test_forgetting_reinitialises_the_student_every_n_iterations():
    trainer = make_train(tiny_config(num_seeds=1), challenged=True)
    counts = {}
    for reset_every, name in [(0, "default"), (2, "forgetting")]:
        ch = make_challenge(trainer.env, ChallengeSpec(name), reset_every=reset_every)
        carry = trainer.jit_init_seeds()(trainer.seed_keys(), challenge_data(trainer, ch))
        carry, _ = trainer.jit_run_chunk_seeds()(carry)
        counts[name] = int(carry.seed.agent_state.update_count[0])
    # 4 iterations per chunk: re-inits after iterations 2 and 4 leave 0 updates.
    assert counts == {"default": 4, "forgetting": 0}


@pytest.mark.slow  # every challenge of a teacher compiled: about 45 s
def test_every_challenge_of_a_teacher_shares_one_compiled_program():
    trainer = make_train(tiny_config(teacher="alp_gmm", num_seeds=2), challenged=True)
    init, run_chunk = trainer.jit_init_seeds(), trainer.jit_run_chunk_seeds()
    results = {}
    for spec in [
        ChallengeSpec("default"),
        ChallengeSpec("unfeasible", expert="high"),
        ChallengeSpec("rugged"),
    ]:
        ch = make_challenge(trainer.env, spec, seed=0, reset_every=2)
        carry, metrics = run_chunk(init(trainer.seed_keys(), challenge_data(trainer, ch)))
        results[spec.key] = float(metrics.eval_pct_mastered.mean())
        # The bootstrap draws from the expert prior only where one is given.
        use_prior = carry.seed.teacher_state.inner.params.use_prior
        assert bool(use_prior.all()) == (spec.expert == "high")
    assert init._cache_size() == 1 and run_chunk._cache_size() == 1
    # The shared challenge keeps the forgetting branch a real cond under the seed vmap.
    ch = make_challenge(trainer.env, ChallengeSpec("forgetting"), reset_every=2)
    carry = jax.eval_shape(init, trainer.seed_keys(), challenge_data(trainer, ch))
    assert " cond[" in str(jax.make_jaxpr(run_chunk)(carry))


@pytest.mark.slow  # compiles the challenged loop with batched challenges: ~35-50 s
def test_challenges_can_also_be_batched_in_one_vmap():
    trainer = make_train(tiny_config(num_seeds=1), challenged=True)
    specs = [ChallengeSpec("default"), ChallengeSpec("trivial"), ChallengeSpec("rugged")]
    chs = [challenge_data(trainer, make_challenge(trainer.env, s)) for s in specs]
    batched = jax.tree.map(lambda *x: jnp.stack(x), *chs)
    keys = jnp.repeat(trainer.seed_keys(), 3, axis=0)
    carry = trainer.jit_init_seeds(data_axis=0)(keys, batched)
    carry, metrics = trainer.jit_run_chunk_seeds(data_axis=0)(carry)
    assert metrics.eval_pct_mastered.shape == (3,)
    # Each run equals the same challenge run on its own.
    init, run_chunk = trainer.jit_init_seeds(), trainer.jit_run_chunk_seeds()
    for i, ch in enumerate(chs):
        _, alone_metrics = run_chunk(init(trainer.seed_keys(), ch))
        np.testing.assert_allclose(
            alone_metrics.train_return[0], metrics.train_return[i], rtol=1e-5
        )
