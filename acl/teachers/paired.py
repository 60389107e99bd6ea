"""PAIRED (Dennis et al. 2020, "Emergent Complexity and Zero-shot Transfer via
Unsupervised Environment Design"): an adversary builds the levels, and its reward is the
regret of the student (the protagonist) against a second student (the antagonist).

The teacher (registered as `paired`, maze only) owns two of the three PPO learners; the
loop's agent is the protagonist.

- Adversary: an agent (`adversary_agent`, "recurrent_ppo" by default: dcd's adversary
  is an LSTM policy) acting in the maze editor (envs/maze/editor.py): goal, then agent,
  then `num_wall_steps` walls, observing the full map, the time step and a noise
  vector (`editor.split_observation`); the env gives its editor
  (`env.level_editor(...)`: a `LevelTaskEnv` that declares `has_level_editor`, the
  maze). `sample(state, key, n)` rolls n editor episodes
  (the run's rollout, `RunContext.play`, for the editor's fixed episode length over the
  n instances), hands out the finished levels as tasks (`env.params_to_task`) and
  keeps the adversary's trajectory [E, n] in the state for its update.
- Antagonist: an agent of the protagonist's kind and kwargs when the loop passes them
  (`student_agent`, `student_kwargs`), otherwise `antagonist_agent` / `antagonist_kwargs`
  ("ppo", PPO's defaults). In `update` it plays the same levels for the same number of
  steps as the protagonist's rollout (`RunContext.play`, batch mode: instance i plays
  tasks[i] throughout) and takes its own agent update on that batch.
- Regret per level (`regret`): max antagonist episode return - mean protagonist episode
  return on the level, clipped at 0 (`clip_regret`, True by default, as in most
  codebases). It is the adversary's reward at the last editor step (the only non-zero
  one); the adversary then takes its agent update on the stored trajectory.

Episode returns per level (`episode_returns`) come from the rollout batches: in batch
mode every instance starts its first episode at step 0, so the return of an episode is
the sum of its rewards since the previous `done` (or the start). Only completed episodes
count. A level where the protagonist or the antagonist completed no episode has no
regret estimate: its regret is 0 (and it counts in `scored_share` of the snapshot as
unscored). With `loop.num_steps >= env.max_episode_steps`, which batch mode requires,
every instance completes at least one episode, so this happens only with hand-made
batches.

Where this departs from the papers, and why:
- The adversary is the agent registry's recurrent PPO, whose encoder on an editor is
  dcd's adversary encoder (acl.agents.recurrent_ppo.GridTimeEncoder): a 3x3 conv with
  128 filters over the map, relu, flattened, beside an `nn.Embed` of the time step
  (num_wall_steps + 3 rows, 10 wide) and the noise vector; then the LSTM (256) and
  heads (one hidden layer of 32 each), as dcd's. It departs from dcd in the map's
  encoding (the editor's one-hot interior, not MiniGrid's 3 channels with the outer
  walls), the embedding (a lookup, dcd a biased linear layer on the one-hot) and the
  heads' activation (the agent's relu, dcd's tanh). Any
  registered agent may be named in `adversary_agent` ("ppo": a feed-forward adversary
  on the flat observation, with the raw time step). Agents that bind to their env
  (recurrent PPO, DQN) need the instance count `num_envs` (= loop.num_envs) at
  construction.
- The adversary's PPO settings default to the UED codebases' PPO (lr 1e-4, 5 epochs, 1
  minibatch, gamma 0.995, GAE lambda 0.98, clip 0.2, entropy 1e-3, value coef 0.5,
  grad-norm 0.5), applied to the keys the chosen agent accepts; `adversary_kwargs`
  override them.
- Learning-rate annealing spans the loop's update count when the loop passes the
  protagonist's kwargs (their `total_updates`); without it the teacher's learners do not
  anneal (an annealing over a guessed count would stop them early).

The state's trajectory and level arrays are sized by the last `sample`; `init` sizes
them for `num_envs` levels (0 when unset). The loop's carry is always a state after a
sample, so its shapes stay fixed either way; with `num_envs` they also match `init`'s
(no second compile of a jitted `sample`).

Everything is jittable and vmappable over seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from acl.agents.base import Agent
from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam, nested
from acl.core.spaces import Box
from acl.core.types import EpisodeReturns, Feedback, Transition, default_info, episode_returns
from acl.teachers.base import (
    TEACHERS,
    AgentMaker,
    AgentRequest,
    RunContext,
    Teacher,
    UpdateContext,
    require_batch_mode,
    run_default,
)
from envs.base import LevelTaskEnv

ADVERSARY_DEFAULTS: dict[str, Any] = {
    "learning_rate": 1e-4,
    "update_epochs": 5,
    "num_minibatches": 1,
    "gamma": 0.995,
    "gae_lambda": 0.98,
    "clip_eps": 0.2,
    "ent_coef": 1e-3,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
    "conv_features": 128,
}
"""REFERENCES' PPO settings of the UED codebases, and dcd's adversary conv width (128
filters); only keys the adversary agent accepts are applied."""


# -- regret ---------------------------------------------------------------------------------


def scored(protagonist: EpisodeReturns, antagonist: EpisodeReturns) -> jax.Array:
    """[N] bool: both students completed an episode on the level."""
    return protagonist.mask.any(0) & antagonist.mask.any(0)


def mean_return(episodes: EpisodeReturns) -> jax.Array:
    """[N] mean completed-episode return per level (0 where none completed)."""
    total = jnp.where(episodes.mask, episodes.returns, 0.0).sum(0)
    return total / jnp.maximum(episodes.mask.sum(0), 1)


def max_return(episodes: EpisodeReturns) -> jax.Array:
    """[N] best completed-episode return per level (0 where none completed)."""
    best = jnp.where(episodes.mask, episodes.returns, -jnp.inf).max(0)
    return jnp.where(episodes.mask.any(0), best, 0.0)


def regret(
    protagonist_returns: EpisodeReturns,
    antagonist_returns: EpisodeReturns,
    clip: bool | jax.Array = True,
) -> jax.Array:
    """PAIRED's regret per level [N]: max antagonist return - mean protagonist return over
    the completed episodes, clipped at 0 when `clip` (may be traced). 0 on levels where
    either student completed no episode."""
    value = max_return(antagonist_returns) - mean_return(protagonist_returns)
    value = jnp.where(clip, jnp.maximum(value, 0.0), value)
    return jnp.where(scored(protagonist_returns, antagonist_returns), value, 0.0)


# -- the editor as a rollout env -------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _EditorRollout:
    """The editor through the rollout's env interface. Its episodes have a fixed length
    that `sample` rolls exactly, so it reports no episode end: the rollout then never
    resets an instance, and the finished levels stay in the returned slots. `sample`
    marks the end in the batch instead."""

    editor: Any
    task_space = Box(low=(0.0,), high=(1.0,), field_name="editor task")
    """A placeholder task per instance: every editor episode starts from the empty map."""

    def params_for_tasks(self, tasks: jax.Array):
        del tasks  # one leafless params pytree serves every instance
        return self.editor.default_params()

    def reset(self, key, params):
        return self.editor.reset(key, params)

    def step(self, key, state, action, params):
        obs, state, reward, _, truncated, info = self.editor.step(key, state, action, params)
        return obs, state, reward, jnp.zeros_like(truncated), truncated, info

    def is_success(self, episode_return: jax.Array) -> jax.Array:
        return jnp.zeros(jnp.shape(episode_return), bool)


# -- the teacher -------------------------------------------------------------------------------


@struct.dataclass
class PAIREDParams:
    """Numeric options (pytree leaves, vmappable): as configured on the teacher
    (`hyper`), as arrays in `default_params()`."""

    clip_regret: jax.Array = hparam(
        True, doc="Clip the regret at 0 (as most codebases do); a bool leaf."
    )


@struct.dataclass
class PAIREDState:
    params: PAIREDParams
    adversary: Any
    """The adversary agent's state."""
    antagonist: Any
    """The antagonist agent's state."""
    adversary_batch: Transition
    """[E, n] the last sample's editor trajectory (E = editor steps); its last step is
    terminated, its rewards 0 until `update` writes the regret there."""
    levels: jax.Array
    """[n, D] the last sample's levels as tasks."""
    key: jax.Array
    """PRNG key of the antagonist's rollouts and the updates (update takes no key)."""
    regret: jax.Array
    """Mean regret over the levels of the last update."""
    protagonist_return: jax.Array
    """Mean over the last update's levels of the protagonist's mean episode return."""
    antagonist_return: jax.Array
    """The same for the antagonist."""
    antagonist_max_return: jax.Array
    """Mean over the levels of the antagonist's best episode return."""
    scored_share: jax.Array
    """Share of the last update's levels where both students completed an episode."""
    adversary_loss: jax.Array
    antagonist_loss: jax.Array
    updates: jax.Array
    """int32 update calls so far."""


@dataclass(frozen=True, eq=False)
class PAIREDTeacher(Teacher):
    """PAIRED's adversary and antagonist; see the module docstring."""

    task_space: Box
    env: Any
    """The maze the students play (`envs.maze.Maze`)."""
    editor: Any
    """Its level editor (`env.level_editor`)."""
    play: Any
    """The run's rollout: `play(env, agent, agent_state, tasks, num_steps, reset_key,
    rollout_key) -> (slots, Transition [T, N])` (acl.loop.rollout.play)."""
    adversary: Any
    """The adversary agent (acts in `editor`)."""
    antagonist: Any
    """The antagonist agent (acts in `env`)."""
    snapshot_levels: int = hparam(4, low=0, doc="Levels of the last batch `snapshot` returns.")
    hyper: PAIREDParams = nested(PAIREDParams)
    num_levels: int = 0
    """Levels per sample the state is sized for at `init` (the loop's num_envs)."""

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")

    @property
    def _editor_env(self) -> _EditorRollout:
        return _EditorRollout(self.editor)

    def default_params(self) -> PAIREDParams:
        return hparams.leaves(self.hyper)

    def init(self, key: jax.Array, params: PAIREDParams) -> PAIREDState:
        adv_key, ant_key, key = jax.random.split(key, 3)
        adversary = self.adversary.init(
            adv_key, self.editor.observation_space(), self.editor.action_space()
        )
        antagonist = self.antagonist.init(
            ant_key, self.env.observation_space(), self.env.action_space()
        )
        # No levels yet: zeros shaped like `num_levels` levels (a one-level trace's shapes).
        n = self.num_levels
        one = jax.eval_shape(lambda k: self._build(adversary, k, 1)[1], key)
        empty = jax.tree.map(lambda s: jnp.zeros(s.shape[:1] + (n,) + s.shape[2:], s.dtype), one)
        zero = jnp.zeros((), jnp.float32)
        return PAIREDState(
            params=params,
            adversary=adversary,
            antagonist=antagonist,
            adversary_batch=empty,
            levels=jnp.zeros((n, self.task_space.dim), jnp.float32),
            key=key,
            regret=zero,
            protagonist_return=zero,
            antagonist_return=zero,
            antagonist_max_return=zero,
            scored_share=zero,
            adversary_loss=zero,
            antagonist_loss=zero,
            updates=jnp.zeros((), jnp.int32),
        )

    def _build(self, adversary_state, key: jax.Array, n: int):
        """n editor episodes: (levels as tasks [n, D], adversary Transition [E, n])."""
        reset_key, roll_key = jax.random.split(key)
        steps = self.editor.max_episode_steps
        slots, batch = self.play(
            self._editor_env,
            self.adversary,
            adversary_state,
            jnp.zeros((n, 1)),
            steps,
            reset_key,
            roll_key,
        )
        # The editor's last step is a real end (the editor itself reports it terminated).
        last = jnp.arange(steps)[:, None] == steps - 1
        batch = batch.replace(terminated=batch.terminated | last, done=batch.done | last)
        levels = jax.vmap(self.editor.level)(slots.env_state)
        return self.env.params_to_task(levels).astype(jnp.float32), batch

    def sample(self, state: PAIREDState, key: jax.Array, n: int):
        """n adversary-built levels as tasks [n, D]; the trajectory stays in the state."""
        tasks, batch = self._build(state.adversary, key, n)
        state = state.replace(adversary_batch=batch, levels=tasks)
        return state, tasks, default_info(n)

    def update(
        self,
        state: PAIREDState,
        key: jax.Array,
        tasks: jax.Array,
        feedback: Feedback,
        step: jax.Array,
        context: UpdateContext = UpdateContext(),
    ) -> PAIREDState:
        """Regret of the protagonist's rollout [T, n] (`context.rollout`) on `tasks`
        [n, D] (the last sample's levels) against the antagonist's; both teacher learners
        update. The per-level returns come from the rollout, not `feedback`."""
        rollout = context.rollout
        if rollout is None:
            raise ValueError("paired: update needs the protagonist's rollout")
        n = tasks.shape[0]
        if rollout.reward.shape[1] != n or state.adversary_batch.reward.shape[1] != n:
            raise ValueError(
                f"paired: update got {n} tasks, a rollout of {rollout.reward.shape[1]} "
                f"instances and {state.adversary_batch.reward.shape[1]} sampled levels; "
                "they must match (batch mode, one sample per update)"
            )
        num_steps = rollout.reward.shape[0]
        key, reset_key, roll_key, ant_key, adv_key = jax.random.split(state.key, 5)
        _, ant_batch = self.play(
            self.env, self.antagonist, state.antagonist, tasks, num_steps, reset_key, roll_key
        )
        protagonist = episode_returns(rollout.reward, rollout.done)
        antagonist = episode_returns(ant_batch.reward, ant_batch.done)
        level_regret = regret(protagonist, antagonist, state.params.clip_regret)
        antagonist_state, ant_metrics = self.antagonist.update(state.antagonist, ant_batch, ant_key)
        # The regret is the adversary's one reward, at its last (terminal) step.
        adv_batch = state.adversary_batch
        adv_batch = adv_batch.replace(reward=adv_batch.reward.at[-1].set(level_regret))
        adversary_state, adv_metrics = self.adversary.update(state.adversary, adv_batch, adv_key)
        return state.replace(
            adversary=adversary_state,
            antagonist=antagonist_state,
            adversary_batch=adv_batch,
            key=key,
            regret=level_regret.mean(),
            protagonist_return=mean_return(protagonist).mean(),
            antagonist_return=mean_return(antagonist).mean(),
            antagonist_max_return=max_return(antagonist).mean(),
            scored_share=scored(protagonist, antagonist).mean(dtype=jnp.float32),
            adversary_loss=jnp.asarray(adv_metrics["loss"], jnp.float32),
            antagonist_loss=jnp.asarray(ant_metrics["loss"], jnp.float32),
            updates=state.updates + 1,
        )

    def snapshot(self, state: PAIREDState) -> dict:
        """The last update's regret and returns; the first `snapshot_levels` levels of the
        last batch ([L, D] tasks) and statistics of the whole batch."""
        params = jax.vmap(self.env.task_to_params)(state.levels)
        path = jax.vmap(self.env.shortest_path_length)(params)
        solvable = path >= 0
        count = max(state.levels.shape[0], 1)  # static
        return {
            "regret": state.regret,
            "protagonist_return": state.protagonist_return,
            "antagonist_return": state.antagonist_return,
            "antagonist_max_return": state.antagonist_max_return,
            "scored_share": state.scored_share,
            "adversary_loss": state.adversary_loss,
            "antagonist_loss": state.antagonist_loss,
            "levels": state.levels[: self.snapshot_levels],
            "num_walls": params.wall_map.sum((-2, -1)).sum() / count,
            "solvable_share": solvable.sum() / count,
            "path_length": jnp.where(solvable, path, 0).sum() / jnp.maximum(solvable.sum(), 1),
        }


# -- the factory -------------------------------------------------------------------------------


def _make_agent(
    role: str,
    agent: Any,
    kwargs: dict | None,
    make_agent: AgentMaker | None,
    env,
    num_envs: int | None,
    total_updates: int | None,
    defaults: dict | None = None,
) -> Agent:
    """The `role` learner (adversary, antagonist): a registered agent's name, built by the
    run's `make_agent` with `defaults` for the keys it accepts and `kwargs` over them,
    annealing over `total_updates` (none when unknown); or an `Agent`, used as it is.
    Bound to `env` (an agent that needs binding needs `num_envs`)."""
    if isinstance(agent, str):
        if kwargs is None:
            kwargs = {}
        if not isinstance(kwargs, dict):
            raise ConfigError(f"teacher.{role}_kwargs must be a mapping, got {kwargs!r}")
        if make_agent is None:
            raise ConfigError(
                f"teacher.{role}_agent: a named agent needs the run's agent builder "
                "(RunContext.make_agent; acl.build.make_agent outside a run)"
            )
        defaults = dict(defaults or {})
        if total_updates is not None:
            defaults["total_updates"] = int(total_updates)
        elif "total_updates" not in kwargs:
            # An annealing over a guessed count would stop the learner early.
            defaults["anneal_lr"] = False
        agent = make_agent(
            AgentRequest(
                name=agent,
                kwargs=kwargs,
                defaults=defaults,
                name_field=f"teacher.{role}_agent",
                kwargs_field=f"teacher.{role}_kwargs",
            )
        )
    else:
        if not isinstance(agent, Agent):
            raise ConfigError(
                f"teacher.{role}_agent: an agent name or an Agent (acl.agents.base), with "
                f"init, initial_carry, act, env_action and update; got {agent!r}"
            )
        if kwargs:
            raise ConfigError(f"teacher.{role}_kwargs: only for a named agent, got {kwargs!r}")
    if num_envs is not None:
        agent.bind(env, int(num_envs))
    elif agent.needs_bind:
        raise ConfigError(
            f"teacher.{role}_agent: {type(agent).__name__} binds to its env and needs "
            "the instance count (teacher.num_envs = loop.num_envs)"
        )
    return agent


@dataclass(frozen=True)
class PAIREDOptions:
    """The keys `make_paired` builds the editor and the two learners from."""

    adversary_agent: Any = hparam(
        "recurrent_ppo",
        kind="any",
        doc="The adversary: a registered agent's name (dcd's is an LSTM policy) or an "
        "agent object.",
    )
    adversary_kwargs: dict | None = hparam(
        None,
        kind="any",
        doc="A named adversary's config keys, over the UED codebases' PPO settings "
        "(ADVERSARY_DEFAULTS) where it takes them.",
    )
    antagonist_agent: Any = hparam(
        None,
        kind="any",
        doc="The antagonist: a registered agent's name or an agent object; default: the "
        "protagonist's agent, else ppo.",
    )
    antagonist_kwargs: dict | None = hparam(
        None,
        kind="any",
        doc="A named antagonist's config keys; default: the protagonist's when it copies "
        "the protagonist's agent.",
    )
    num_wall_steps: int | None = hparam(
        None,
        kind="int",
        low=0,
        doc="Walls the adversary places per level; default: the editor's (dcd's 50).",
    )
    noise_dim: int | None = hparam(
        None,
        kind="int",
        low=1,
        doc="Size of the adversary's noise vector; default: the editor's (50).",
    )
    num_envs: int | None = hparam(
        None,
        kind="int",
        low=1,
        doc="Levels per sample, which learners that bind to their env need; default: "
        "the run's loop.num_envs (a config may repeat it, not change it).",
    )

    def __post_init__(self):
        hparams.validate_fields(self, "teacher")


def make_paired(
    task_space: Box,
    context: RunContext | None = None,
    env=None,
    student_agent: str | None = None,
    student_kwargs: dict | None = None,
    play=None,
    make_agent: AgentMaker | None = None,
    **config,
) -> PAIREDTeacher:
    """PAIREDTeacher from config keys (module docstring). A run's `context` gives the
    env, the instance count (`num_envs`, which a config may repeat but not change) and the
    protagonist (`student_agent` / `student_kwargs`: its agent name and kwargs,
    `total_updates` included), the rollout (`play`) and the builder of named agents
    (`make_agent`; acl.build.make_agent outside a run), unless given. `adversary_agent`
    and `antagonist_agent` name registered agents (acl.agents.AGENTS) or are `Agent`s
    (then without kwargs). `num_wall_steps` and `noise_dim` default to the editor's."""
    args, options = hparams.split(config, PAIREDTeacher, PAIREDOptions, field_name="teacher")
    # The learners are built before the teacher: its own keys are checked first.
    for key, declared in hparams.specs(PAIREDTeacher).items():
        if key in config:
            declared.check(config[key], f"teacher.{key}")
    options = PAIREDOptions(**options)
    num_envs = options.num_envs
    require_batch_mode(context, "paired")
    env = run_default(context, "env", env)
    play = run_default(context, "play", play)
    make_agent = run_default(context, "make_agent", make_agent)
    if context is not None:
        if context.num_envs is not None:
            if num_envs is not None and num_envs != context.num_envs:
                raise ConfigError(
                    f"teacher.num_envs ({num_envs}) must equal loop.num_envs "
                    f"({context.num_envs}), or be left out"
                )
            num_envs = context.num_envs
        if context.student is not None and student_agent is None:
            student_agent = context.student.agent
            student_kwargs = dict(context.student.kwargs)
    if not (isinstance(env, LevelTaskEnv) and env.has_level_editor):
        got = "no env" if env is None else type(env).__name__
        raise ConfigError(
            f"teacher paired builds maze levels: it needs env maze (a LevelTaskEnv with a "
            f"level_editor, has_level_editor), got {got}"
        )
    if task_space.dim != env.task_dim:
        raise ConfigError(
            f"teacher paired: the task space has {task_space.dim} dimensions, the maze's "
            f"levels {env.task_dim} (a challenge's unit cube cannot hold levels)"
        )
    if student_kwargs is not None and not isinstance(student_kwargs, dict):
        raise ConfigError(f"teacher.student_kwargs must be a mapping, got {student_kwargs!r}")
    editor = env.level_editor(num_wall_steps=options.num_wall_steps, noise_dim=options.noise_dim)
    total_updates = (student_kwargs or {}).get("total_updates")
    antagonist_agent, antagonist_kwargs = options.antagonist_agent, options.antagonist_kwargs
    if antagonist_agent is None:
        # Same kind and settings as the protagonist when the loop says what that is.
        antagonist_agent = student_agent or "ppo"
        if antagonist_kwargs is None and student_agent is not None:
            antagonist_kwargs = {
                k: v for k, v in (student_kwargs or {}).items() if k != "total_updates"
            }
    antagonist = _make_agent(
        "antagonist",
        antagonist_agent,
        antagonist_kwargs,
        make_agent,
        env,
        num_envs,
        total_updates,
    )
    adversary = _make_agent(
        "adversary",
        options.adversary_agent,
        options.adversary_kwargs,
        make_agent,
        editor,
        num_envs,
        total_updates,
        ADVERSARY_DEFAULTS,
    )
    if play is None:
        raise ConfigError(
            "teacher paired rolls out its own learners: it needs the run's rollout "
            "(RunContext.play, or play=acl.loop.rollout.play outside a run)"
        )
    return PAIREDTeacher(
        task_space=task_space,
        env=env,
        editor=editor,
        play=play,
        adversary=adversary,
        antagonist=antagonist,
        num_levels=num_envs or 0,
        **args,
    )


hparams.declare(make_paired, PAIREDTeacher, PAIREDOptions)

TEACHERS.register("paired")(make_paired)

__all__ = [
    "ADVERSARY_DEFAULTS",
    "EpisodeReturns",
    "PAIREDOptions",
    "PAIREDParams",
    "PAIREDState",
    "PAIREDTeacher",
    "episode_returns",
    "make_paired",
    "max_return",
    "mean_return",
    "regret",
    "scored",
]
