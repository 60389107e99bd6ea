"""Jump-Start RL (acl.teachers.jsrl): the hand-over from guide to learner in the student's
actor wrapper, the wrapper's masking of guide steps out of PPO's loss, the horizon
curriculum and its random variant, the guides."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from acl.agents.base import Agent
from acl.agents.ppo import PPOExtras, make_ppo
from acl.core.errors import ConfigError
from acl.core.types import Feedback, Transition
from acl.loop.rollout import collect, start_slots
from acl.teachers import TEACHERS
from acl.teachers.jsrl import (
    Guide,
    GuidedActor,
    GuidedExtras,
    JSRLParams,
    JSRLTeacher,
    OracleGuide,
    make_jsrl,
)
from envs.goal_maze import GoalMaze
from tests.teacher_harness import SPACE, check_teacher

KEY = jax.random.PRNGKey(0)
"""Teachers' update key: these teachers keep their own keys and ignore it."""

MAZE = GoalMaze("u_maze", max_episode_steps=6)
"""S and G are 14 steps apart: with a 6-step limit every episode is truncated, so the
hand-over is seen in every episode."""


class StubGuide(Guide):
    """A guide the teacher-only tests never run."""

    def act(self, obs, key):
        return jnp.zeros(obs.shape[:1], jnp.int32)


class AntiOracleAgent(Agent):
    """Always an action the oracle would not take, so the executed action tells who chose
    it: the oracle guide (oracle_action) or this agent (oracle_action + 1 mod 4). It
    learns nothing."""

    def init(self, key, obs_space, action_space):
        return jnp.zeros(())

    def update(self, state, batch, key, axis_name=None):
        return state, {}

    def initial_carry(self, n, tasks=None):
        return jnp.zeros((n, 0))

    def env_action(self, action):
        return action

    def act(self, state, obs, carry, key, deterministic=False):
        return (MAZE.oracle_action(obs) + 1) % 4, carry, ()


def with_horizon(tasks, h):
    """Tasks [..., D] with the guide horizon h [...] appended, as the teacher hands out."""
    return jnp.concatenate([tasks, jnp.asarray(h, jnp.float32)[..., None]], axis=-1)


# -- the actor wrapper: control passes from guide to learner at step h ----------------------


def test_control_passes_from_guide_to_agent_exactly_at_step_h():
    n, steps = 5, 20
    agent = GuidedActor(AntiOracleAgent(), OracleGuide(MAZE), horizon_column=4, mask_guided=True)
    base = jnp.broadcast_to(jnp.asarray(MAZE.task_space.default_task), (n, 4))
    first_h = jnp.array([0, 1, 3, 6, 9], jnp.int32)  # 6, 9: the guide plays whole episodes
    next_h = jax.random.randint(jax.random.PRNGKey(1), (steps, n), 0, 8, jnp.int32)
    next_tasks = with_horizon(jnp.broadcast_to(base, (steps, n, 4)), next_h)

    @jax.jit
    def run():
        tasks = with_horizon(base, first_h)
        slots = start_slots(MAZE, agent, jax.random.PRNGKey(0), tasks, jnp.ones(n, bool))
        _, batch, feedback = collect(
            MAZE,
            agent,
            None,
            slots,
            jax.random.PRNGKey(2),
            next_tasks,
            jnp.ones((steps, n), bool),
            steps,
        )
        return batch, feedback, MAZE.oracle_action(batch.obs)

    batch, feedback, oracle = jax.device_get(run())
    assert isinstance(batch.extras, GuidedExtras)
    action, guided, done = np.asarray(batch.action), np.asarray(batch.extras.guided), batch.done
    assert guided.dtype == bool and guided.shape == (steps, n)
    records_h = np.asarray(feedback.task)[:, 4].reshape(steps, n)
    handed_over = 0
    for i in range(n):
        h, k = int(first_h[i]), 0  # the episode's horizon and its step count
        for t in range(steps):
            expect_guided = k < h
            assert guided[t, i] == expect_guided, (t, i, k, h)
            expected = oracle[t, i] if expect_guided else (oracle[t, i] + 1) % 4
            assert action[t, i] == expected, (t, i, k, h)
            handed_over += int(0 < h == k)
            if done[t, i]:
                assert records_h[t, i] == h  # the feedback names the episode's horizon
                h, k = int(next_h[t, i]), 0
            else:
                k += 1
    assert done.sum() >= 3 * n, "every instance should finish several episodes"
    assert handed_over >= 5, "the test needs episodes where the agent takes over mid-way"


@pytest.mark.slow
def test_a_reset_without_a_horizon_plays_the_agent_alone():
    """Evaluation resets without tasks: the wrapper is then the agent, key for key."""
    ppo = make_ppo(hidden_sizes=[8])
    agent = GuidedActor(ppo, StubGuide(), horizon_column=4, mask_guided=True)
    state = ppo.init(KEY, MAZE.observation_space(), MAZE.action_space())
    obs = jax.random.uniform(jax.random.PRNGKey(1), (16, 4))
    carry = agent.initial_carry(16)
    assert carry.steps_left is None
    action, _, extras = agent.act(state, obs, carry, jax.random.PRNGKey(2))
    alone, _, alone_extras = ppo.act(state, obs, ppo.initial_carry(16), jax.random.PRNGKey(2))
    np.testing.assert_array_equal(action, alone)
    np.testing.assert_array_equal(extras.log_prob, alone_extras.log_prob)
    # Tasks without the horizon column (the env's own) hand out no horizon either.
    assert agent.initial_carry(3, jnp.zeros((3, 4))).steps_left is None


# -- PPO: guide steps are out of the loss ---------------------------------------------------


def _ppo_batch(rng: np.random.Generator, guided: np.ndarray) -> Transition:
    """A [T, N] batch, each column one episode that starts at t = 0 (guide steps first).
    numpy: building it costs no compilation."""
    t, n = guided.shape
    end = np.zeros((t, n), bool)
    end[-1, 0] = True
    return Transition(
        obs=rng.random((t, n, 4), np.float32),
        action=rng.integers(0, 4, (t, n)).astype(np.int32),
        reward=-np.ones((t, n), np.float32),
        terminated=end,
        done=end,
        next_obs=rng.random((t, n, 4), np.float32),
        loss_mask=np.ones((t, n), bool),
        extras=GuidedExtras(
            PPOExtras(
                log_prob=(np.log(0.25) + 0.1 * rng.standard_normal((t, n))).astype(np.float32),
                value=rng.standard_normal((t, n)).astype(np.float32),
            ),
            guided,
        ),
    )


def _perturb(batch: Transition, where: np.ndarray, rng: np.random.Generator) -> Transition:
    """Every per-step field replaced by other finite values where `where` [T, N] is true."""
    w, w3 = where, where[..., None]
    shape = where.shape
    inner = batch.extras.inner
    return batch.replace(
        obs=np.where(w3, rng.random(batch.obs.shape, np.float32), batch.obs),
        action=np.where(w, (batch.action + 1) % 4, batch.action),
        reward=np.where(w, 3.0 * rng.standard_normal(shape), batch.reward).astype(np.float32),
        next_obs=np.where(w3, rng.random(batch.obs.shape, np.float32), batch.next_obs),
        extras=batch.extras.replace(
            inner=PPOExtras(
                log_prob=np.where(w, inner.log_prob - 0.5, inner.log_prob),
                value=np.where(w, rng.standard_normal(shape), inner.value).astype(np.float32),
            )
        ),
    )


def test_ppo_loss_ignores_guided_steps_but_not_the_agents_own():
    ppo = make_ppo(hidden_sizes=[16], update_epochs=1, num_minibatches=1)
    student = GuidedActor(ppo, StubGuide(), horizon_column=4, mask_guided=True)
    spaces = (MAZE.observation_space(), MAZE.action_space())
    state = jax.jit(lambda key: ppo.init(key, *spaces))(jax.random.PRNGKey(0))
    h = np.array([0, 2, 5, 8])  # column i: guide for its first h[i] of 8 steps
    guided = np.arange(8)[:, None] < h[None, :]
    batch = _ppo_batch(np.random.default_rng(1), guided)
    update = jax.jit(student.update)
    key = jax.random.PRNGKey(2)

    def params_after(batch):
        new, metrics = jax.device_get(update(state, batch, key))
        return jax.tree.leaves(new.params), float(metrics["loss"])

    def largest_change(a, b):
        return max(np.abs(x - y).max() for x, y in zip(a, b))

    base, base_loss = params_after(batch)
    moved, moved_loss = params_after(_perturb(batch, guided, np.random.default_rng(3)))
    for a, b in zip(base, moved):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert moved_loss == pytest.approx(base_loss, rel=1e-6)

    # The same change on one of the agent's own steps does move the update.
    own = np.zeros_like(guided)
    own[6, 1] = True
    assert not guided[6, 1]
    changed, _ = params_after(_perturb(batch, own, np.random.default_rng(3)))
    assert largest_change(base, changed) > 1e-5
    # Marking the guide's steps is what takes them out: unmarked, they move it too.
    perturbed = _perturb(batch, guided, np.random.default_rng(3))
    unmarked = perturbed.replace(extras=perturbed.extras.replace(guided=np.zeros_like(guided)))
    assert largest_change(base, params_after(unmarked)[0]) > 1e-5
    # An off-policy learner (DQN) keeps them: the wrapper leaves its loss mask alone.
    keep = GuidedActor(ppo, StubGuide(), horizon_column=4, mask_guided=False)
    assert (
        largest_change(base, jax.tree.leaves(jax.jit(keep.update)(state, perturbed, key)[0].params))
        > 1e-5
    )


# -- the curriculum ---------------------------------------------------------------------------


def records(returns, h, mask=None) -> Feedback:
    """Finished episodes with these returns, all run with guide horizon h."""
    returns = jnp.asarray(returns, jnp.float32)
    k = returns.shape[0]
    return Feedback(
        task=with_horizon(jnp.zeros((k, SPACE.dim)), jnp.full((k,), h)),
        episode_return=returns,
        success=jnp.zeros((k,), bool),
        length=jnp.ones((k,), jnp.int32),
        mask=jnp.ones((k,), bool) if mask is None else jnp.asarray(mask, bool),
    )


def test_curriculum_lowers_h_when_the_threshold_is_met_and_not_otherwise():
    teacher = JSRLTeacher(
        SPACE,
        guide=StubGuide(),
        guide_horizon=10,
        n_stages=5,
        window=4,
        return_bounds=(0.0, 1.0),
        hyper=JSRLParams(tolerance=0.1),
    )
    assert [int(teacher.horizon(s)) for s in range(6)] == [10, 8, 6, 4, 2, 0]
    update = jax.jit(teacher.update)
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())

    def step(state, returns, h, mask=None):
        # Each batch has 8 slots; the unused ones are masked with garbage in them.
        returns = list(returns)
        valid = [True] * len(returns) if mask is None else list(mask)
        pad = 8 - len(returns)
        fb = records(returns + [np.nan] * pad, h, valid + [False] * pad)
        return update(state, KEY, fb.task, fb, jnp.int32(0))

    def h_handed_out(state):
        _, tasks, _ = teacher.sample(state, jax.random.PRNGKey(1), 6)
        values = set(np.asarray(tasks[:, SPACE.dim]).astype(int).tolist())
        assert len(values) == 1
        return values.pop()

    assert h_handed_out(state) == 10
    state = step(state, [0.5, 0.5, 0.5], h=10)  # 3 of 4: the window is not full yet
    assert int(state.stage) == 0 and h_handed_out(state) == 10
    state = step(state, [0.5, 1.0], h=10, mask=[True, False])  # full; no best yet: advance
    assert int(state.stage) == 1 and h_handed_out(state) == 8
    assert bool(state.has_best) and float(state.best) == pytest.approx(0.5)
    assert int(state.window.count) == 0

    state = step(state, [1.0] * 4, h=10)  # late episodes of the previous stage: ignored
    assert int(state.stage) == 1 and int(state.window.count) == 0
    state = step(state, [0.3] * 4, h=8)  # full window, 0.3 < best - tolerance = 0.4
    assert int(state.stage) == 1 and h_handed_out(state) == 8
    state = step(state, [0.3] * 4, h=8)
    assert int(state.stage) == 1
    state = step(state, [0.45] * 4, h=8)  # the window slides: 0.45 >= 0.4
    assert int(state.stage) == 2 and h_handed_out(state) == 6
    assert float(state.best) == pytest.approx(0.5)  # max(best, 0.45)

    # More records than the window in one update: the last four count.
    state = step(state, [0.0, 0.0, 0.0, 0.45, 0.45, 0.45, 0.45], h=6)
    assert int(state.stage) == 3
    state = step(state, [0.45, 0.45, 0.45, 0.45, 0.0], h=4)
    assert int(state.stage) == 3
    snapshot = teacher.snapshot(state)
    assert float(snapshot["window_return"]) == pytest.approx(0.3375)  # the last four
    assert float(snapshot["guide_steps"]) == 4.0

    for h in (4, 2, 0, 0, 0):  # through the last stage, and no further
        state = step(state, [0.9] * 4, h=h)
    assert int(state.stage) == 5 and h_handed_out(state) == 0
    assert float(state.best) == pytest.approx(0.9)


def test_tolerance_is_a_fraction_of_the_return_range():
    teacher = make_jsrl(MAZE.task_space, env=MAZE, tolerance=0.1, return_bounds=(-6.0, 0.0))
    assert float(teacher.default_params().tolerance) == pytest.approx(0.6)
    assert teacher.guide_horizon == 14  # the oracle's path length from S to G


def test_random_variant_draws_h_uniformly_per_episode():
    horizon = 7
    teacher = JSRLTeacher(SPACE, guide=StubGuide(), guide_horizon=horizon, variant="random")
    state = teacher.init(jax.random.PRNGKey(0), teacher.default_params())
    n = 40_000
    state, tasks, _ = jax.jit(teacher.sample, static_argnums=2)(state, jax.random.PRNGKey(1), n)
    h = np.asarray(tasks[:, SPACE.dim])
    np.testing.assert_array_equal(h, np.round(h))  # whole steps
    h = h.astype(np.int32)
    assert h.min() == 0 and h.max() == horizon
    counts = np.bincount(h, minlength=horizon + 1)
    p = 1.0 / (horizon + 1)
    se = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(counts - n * p) < 5 * se), counts
    np.testing.assert_allclose(
        tasks[:, : SPACE.dim], np.broadcast_to(SPACE.default_task, (n, SPACE.dim))
    )
    assert float(teacher.snapshot(state)["guide_steps"]) == pytest.approx(h.mean(), rel=1e-5)
    # The random variant never runs a curriculum.
    state = teacher.update(state, KEY, tasks[:8], records([1.0] * 8, 3), jnp.int32(0))
    assert int(state.stage) == 0 and int(state.episodes_seen) == 8


@pytest.mark.parametrize("variant", ["curriculum", "random"])
def test_passes_teacher_harness(variant):
    check_teacher(
        lambda space: make_jsrl(
            space, guide=StubGuide(), guide_horizon=6, n_stages=3, window=8, variant=variant
        )
    )


def test_is_registered_and_gets_the_env_from_the_loop():
    from acl.build import build_components
    from tests.conftest import tiny_config

    config = tiny_config(env={"name": "goal_maze"}, teacher={"name": "jsrl", "window": 4})
    teacher = build_components(config).teacher
    assert isinstance(teacher, JSRLTeacher) and isinstance(teacher.guide, OracleGuide)
    assert teacher.return_bounds == (-50.0, 0.0)
    assert TEACHERS.get("jsrl") is make_jsrl


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(), "oracle guide needs an env"),
        (dict(env=MAZE, variant="reverse"), "variant"),
        (dict(env=MAZE, guide="expert"), "oracle or saved"),
        (dict(env=MAZE, guide="saved"), "guide_run"),
        (dict(env=MAZE, guide="saved", guide_run="runs/x"), "RunContext.load_agent"),
        (dict(env=MAZE, guide_epsilon=1.5), "guide_epsilon"),
        (dict(env=MAZE, n_stages=0), "n_stages"),
        (dict(env=MAZE, window=-1), "window"),
        (dict(env=MAZE, tolerance=-0.1), "tolerance"),
        (dict(env=MAZE, base_task=(0.5, 0.5)), "base_task"),
        (dict(env=MAZE, base_task=(0.5, 0.5, 2.0, 0.5)), "outside"),
        (dict(guide=StubGuide()), "guide_horizon"),
        (dict(guide=object(), guide_horizon=3), "act"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        make_jsrl(MAZE.task_space, **kwargs)


def test_saved_run_guide_missing(tmp_path):
    from acl.build import load_run_agent_state

    with pytest.raises(ConfigError, match="not a finished run"):
        make_jsrl(
            MAZE.task_space,
            env=MAZE,
            load_agent=load_run_agent_state,
            guide="saved",
            guide_run=str(tmp_path),
        )


# -- guides -----------------------------------------------------------------------------------


def test_oracle_guide_follows_shortest_paths_and_its_noise_is_uniform():
    cells = MAZE.goal_grid()  # every free cell, as (x, y)
    pairs = np.random.default_rng(0).integers(0, len(cells), (4000, 2))
    obs = jnp.asarray(np.concatenate([cells[pairs[:, 0]], cells[pairs[:, 1]]], axis=1))

    def act(epsilon):
        guide = OracleGuide(MAZE, epsilon)
        return np.asarray(jax.jit(guide.act)(obs, jax.random.PRNGKey(2)))

    exact = act(0.0)
    np.testing.assert_array_equal(exact, MAZE.oracle_action(obs))
    differs = (act(0.4) != exact).mean()
    assert differs == pytest.approx(0.4 * 3 / 4, abs=0.03)  # a random action is right 1/4


@pytest.mark.slow
def test_saved_agent_guide_plays_the_saved_greedy_policy(tmp_path):
    from acl.build import make_train, run_context
    from acl.run.results import RunDir
    from tests.conftest import tiny_config

    config = tiny_config(env={"name": "goal_maze", "max_episode_steps": 12})
    trainer = make_train(config)
    states = jax.jit(jax.vmap(trainer.init_agent))(trainer.seed_keys())  # two seeds, untrained
    run = RunDir(tmp_path)
    run.write_config(config.to_dict(), [0, 1])
    run.save_agent(jax.device_get(states))

    env = trainer.env
    # The run's context reads the run directory (acl.build.load_run_agent_state).
    context = run_context(config, env)
    teacher = make_jsrl(
        env.task_space, context, guide="saved", guide_run=str(tmp_path), guide_seed=1
    )
    assert teacher.guide_horizon == 12  # the env's episode-length limit
    obs = jax.random.uniform(jax.random.PRNGKey(0), (64, 4))
    seed_1 = jax.tree.map(lambda x: x[1], states)
    greedy, _, _ = jax.jit(trainer.agent.act, static_argnums=4)(
        seed_1, obs, trainer.agent.initial_carry(64), None, True
    )
    played = jax.jit(teacher.guide.act)(obs, jax.random.PRNGKey(3))
    np.testing.assert_array_equal(played, greedy)
    with pytest.raises(ConfigError, match="guide_seed"):
        make_jsrl(env.task_space, context, guide="saved", guide_run=str(tmp_path), guide_seed=2)


# -- the loop ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_loop_runs_the_guide_and_the_teacher_sees_its_returns():
    """At stage 0 the oracle plays the whole episode (h = H = 14 steps to the goal): every
    episode returns -13, which becomes the first best; then h drops."""
    from acl.build import make_train
    from tests.conftest import tiny_config

    config = tiny_config(
        env={"name": "goal_maze", "max_episode_steps": 20},
        teacher={"name": "jsrl", "window": 4},
        loop={"num_envs": 4, "num_steps": 16, "total_env_steps": 256, "eval_every": 256},
        num_seeds=1,
    )
    trainer = make_train(config)
    assert isinstance(trainer.agent, GuidedActor) and isinstance(trainer.agent.guide, OracleGuide)
    carry = trainer.init(jax.random.PRNGKey(0))
    carry, _ = jax.jit(lambda c: trainer.run_iterations(c, 2))(carry)
    snapshot = jax.device_get(trainer.teacher.snapshot(carry.seed.teacher_state))
    assert bool(snapshot["has_best"]) and int(snapshot["stage"]) >= 1
    assert float(snapshot["best_return"]) == -13.0
    assert float(snapshot["guide_steps"]) < 14


# -- the experiment ---------------------------------------------------------------------------


def test_experiment_config_builds_every_method_without_compiling():
    from acl.config import load_yaml
    from experiments.papers.jsrl import COMMAND, make_trainer, parse

    config = parse(load_yaml(COMMAND.default_config))
    teachers = {}
    for method in config.methods:
        trainer, task, distance = make_trainer(config, method)
        teachers[method] = trainer.teacher
        np.testing.assert_allclose(task, trainer.env.task_space.default_task)
    assert distance == 16  # four_rooms: S to G through two doors
    assert teachers["jsrl"].variant == "curriculum" and teachers["jsrl"].guide_horizon == 16
    assert teachers["jsrl_random"].variant == "random"
    assert getattr(teachers["scratch"], "guide", None) is None  # the loop as without JSRL
    with pytest.raises(ConfigError, match="unknown method"):
        parse({"methods": ["jsrl", "nope"], "base": {"env": "goal_maze"}})
    with pytest.raises(ConfigError, match="goal_maze"):
        parse({"base": {"env": "cartpole"}})
    with pytest.raises(ConfigError, match="per method"):
        parse({"base": {"env": "goal_maze"}, "jsrl": {"variant": "random"}})


@pytest.mark.slow  # two methods x two seeds x 300k steps: 3-6 min on 2 cores
def test_jsrl_learns_the_hard_task_where_scratch_ppo_does_not(tmp_path, capsys):
    """The learner alone from S: JSRL's (oracle guide, curriculum) succeeds, scratch PPO's
    does not (seeds 0 and 1; both fail from scratch at this budget)."""
    import json

    from experiments.papers.jsrl import main

    argv = ["--methods", "jsrl", "scratch", "--seeds", "2", "--out", str(tmp_path)]
    # The README's budget, where JSRL has settled (0.96 over 8 seeds); at 200k it is still
    # climbing through 0.5, where the last bit of a float decides the assertion.
    argv += ["--set", "base.loop.total_env_steps=300000", "--no-progress"]
    assert main(argv) == 0
    assert "vs scratch" in capsys.readouterr().out
    assert {p.name for p in tmp_path.iterdir()} >= {"results.json", "table.md", "curves.png"}
    results = {
        r["method"]: r for r in json.loads((tmp_path / "results.json").read_text())["results"]
    }
    jsrl = np.asarray(results["jsrl"]["sampled_success"])[:, -1]
    scratch = np.asarray(results["scratch"]["sampled_success"])[:, -1]
    assert jsrl.min() >= 0.5, jsrl
    assert scratch.max() <= 0.1, scratch
    assert np.asarray(results["jsrl"]["guide_steps"])[:, -1].max() < 16  # the curriculum moved
