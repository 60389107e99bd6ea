"""Recurrent PPO: an encoder, an LSTM and actor-critic heads, trained on whole sequences.

The student of the unsupervised-environment-design literature (PAIRED, PLR, ACCEL): on an
env with an egocentric image and a direction (an `envs.base.ImageDirectionObservation`,
the maze's: `image_shape` and `split_observation`) the encoder is a 3x3 conv with 16
filters, relu, flattened, beside a learned 5-dim direction embedding; on a level editor
(an `envs.base.LevelEditorEnv`, envs.maze.editor's: `grid_shape`, `num_time_steps` and
`split_observation` into map, time step and noise) it is PAIRED's
adversary encoder, as dcd's: the same conv over the full map (dcd: 128 filters, PAIRED's
teacher sets them), relu, flattened, beside a learned embedding of the time step (10-dim,
`time_features`) and the noise vector as it is; on an env of categorical codes (an
`envs.base.TokenObservation`, XLand-MiniGrid's: `token_sizes`) it is the MLP on the
one-hot of every code (`TokenEncoder`); elsewhere it is an MLP on the flat
observation. Then an LSTM (256 units) and actor and critic heads (one hidden layer of 32,
relu). Defaults are those papers' PPO: lr 1e-4 annealed, 5 epochs of 1 minibatch, gamma
0.995, GAE lambda 0.98, clip 0.2, entropy 1e-3, value coefficient 0.5, grad-norm 0.5.

Agent contract:
    bind(env, num_envs)                 picks the encoder from the env (before init)
    init(key, obs_space, action_space) -> RecurrentPPOState
    initial_carry(n, tasks) -> LSTM carry (c [n, H], h [n, H]), zeros
    act(state, obs, carry, key, deterministic) -> (action, carry, RecurrentPPOExtras)
    update(state, batch, key, axis_name=None) -> (state, metrics)   (no device axis)

The rollout (acl.loop.rollout.collect) resets an instance's carry to `initial_carry` when its
episode ends; `update` replays each sequence from the carry the rollout had at its first
step (stored in the extras) and resets it to zeros where the previous step was `done`, so
it recomputes exactly the log-probs and values the rollout acted with. Minibatches are
whole sequences (the batch is split along its env axis N). The loss, the learning-rate
schedule, the optimiser step and the no-op on batches with nothing to learn from are
PPO's (acl.agents.ppo).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from acl.agents.base import AGENTS, Agent, refuse_axis
from acl.agents.common import value_spec
from acl.agents.networks import ACTIVATIONS, ActorCritic, _orthogonal, dense
from acl.agents.ppo import (
    ActionDistribution,
    PPOHyperparams,
    PPOUpdateConfig,
    ppo_adam,
    ppo_epochs,
    ppo_loss_terms,
    ppo_training_data,
)
from acl.core import hparams
from acl.core.errors import ConfigError
from acl.core.hparams import hparam
from acl.core.types import Transition, ValueEstimates, ValueSpec
from envs.base import ImageDirectionObservation, LevelEditorEnv, TokenObservation

RECURRENT_PPO_HYPERPARAMS = PPOHyperparams(
    learning_rate=1e-4,
    gamma=0.995,
    gae_lambda=0.98,
    clip_eps=0.2,
    value_clip_eps=0.2,
    ent_coef=1e-3,
    vf_coef=0.5,
    max_grad_norm=0.5,
)
"""The UED papers' PPO (dcd, JaxUED): the defaults of `make_recurrent_ppo`."""

CPU_STUDENT = {"lstm_size": 32}
"""The `cpu` UED student: the published student (conv 16 3x3 + direction embedding,
heads of 32) with an LSTM of 32 units instead of 256, every other key as configured.
On 2 CPU cores, in the published loop (13 x 13 mazes, 32 envs x 256 steps), it trains at
about 6.8x the published student's env steps/s (docs/results/ued_mini.md,
`acl profile-maze-student`). The LSTM is most of the student's
compute: its 256 x 1,024 recurrent matmul at every step, sequential in the rollout and in
every epoch's replay. The published configs keep the published student; the mini-UED
configs (experiments/configs/ued_mini_*.yaml) use this one."""

ENCODERS = ("auto", "conv", "mlp")


@dataclass(frozen=True)
class RecurrentPPOConfig(PPOUpdateConfig):
    """Shape-setting and structural options (static)."""

    encoder: str = hparam(
        "auto",
        choices=ENCODERS,
        doc="conv: conv + direction embedding (an env with an image), or conv + time-step "
        "embedding + noise (a level editor); mlp: an MLP on the flat observation; auto: conv "
        "where the bound env has an image or is an editor, the MLP on one-hot codes where it "
        "observes codes (envs.base.TokenObservation).",
    )
    conv_features: int = hparam(16, low=1, doc="Filters of the conv encoder's one layer.")
    conv_kernel_size: int = hparam(3, low=1, doc="Its square kernel (valid padding, stride 1).")
    direction_features: int = hparam(5, low=1, doc="Width of the learned direction embedding.")
    time_features: int = hparam(
        10, low=1, doc="Width of the learned time-step embedding (level editors; dcd's 10)."
    )
    mlp_sizes: tuple[int, ...] = hparam(
        (64,),
        low=1,
        doc="Hidden layers of the MLP encoder (empty: the observation feeds the LSTM as is).",
    )
    lstm_size: int = hparam(
        256,
        low=1,
        doc="LSTM units: 256 is the published UED student, 32 the `cpu` student "
        "(CPU_STUDENT, ~6.8x its env steps/s on 2 CPU cores).",
    )
    head_sizes: tuple[int, ...] = hparam(
        (32,), low=1, doc="Hidden layers of the actor and of the critic head."
    )
    activation: str = hparam(
        "relu",
        choices=tuple(ACTIVATIONS),
        doc="Hidden activation of the MLP encoder and the heads.",
    )
    update_epochs: int = hparam(5, low=1, doc="Passes over each rollout batch (the UED papers' 5).")
    num_minibatches: int = hparam(
        1,
        low=1,
        doc="Minibatches per epoch, each of whole sequences: must divide the number of envs.",
    )


@struct.dataclass
class RecurrentPPOExtras(ValueEstimates):
    """What `act` returns beside the action; stored in the rollout batch. Its values are
    declared (`ValueEstimates`), as PPO's."""

    log_prob: jax.Array
    """[N] log-probability of the action taken."""
    value: jax.Array
    """[N] the critic's value of the observation."""
    carry: tuple[jax.Array, jax.Array]
    """The LSTM carry (c, h), each [N, H], *before* the step: update replays from it."""
    value_spec: ValueSpec | None = None
    """The agent's gamma, GAE lambda and reward scale ([N]), as PPO's."""


@struct.dataclass
class RecurrentPPOState:
    params: dict
    opt_state: optax.OptState
    update_count: jax.Array
    hyper: PPOHyperparams


class PatchConv(nn.Module):
    """A valid, stride-1 2-D convolution as one matmul over the image's k x k patches:
    image [..., H, W, C] -> [..., H - k + 1, W - k + 1, F].

    nn.Conv's parameters (kernel [k, k, C, F], bias [F]) and values, computed as a
    contraction instead of XLA's convolution: under a vmap over seeds each seed has its
    own kernel, and XLA's CPU backend runs such a batched kernel as a grouped
    convolution several times slower than the batched matmul this becomes."""

    features: int
    kernel_size: int

    @nn.compact
    def __call__(self, image: jax.Array) -> jax.Array:
        k = self.kernel_size
        height, width, channels = image.shape[-3:]
        kernel = self.param("kernel", _orthogonal(np.sqrt(2)), (k, k, channels, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        rows, cols = height - k + 1, width - k + 1
        patches = jnp.stack(
            [image[..., i : i + rows, j : j + cols, :] for i in range(k) for j in range(k)],
            axis=-2,
        )  # [..., rows, cols, k * k, C]
        kernel = kernel.reshape(k * k, channels, self.features)
        return jnp.einsum("...pc,pcf->...f", patches, kernel) + bias


def conv_features(image: jax.Array, features: int, kernel_size: int) -> jax.Array:
    """The encoders' one conv layer: image [..., H, W, C] -> relu(conv), flattened
    [..., F] (valid padding, stride 1). Call it inside a compact module: the conv is that
    module's submodule, named as nn.Conv's would be."""
    conv = PatchConv(features, kernel_size, name="Conv_0")
    return nn.relu(conv(image)).reshape(image.shape[:-3] + (-1,))


class ImageDirectionEncoder(nn.Module):
    """(image [..., V, V, C], direction [...] int) -> features [..., F]."""

    num_directions: int
    conv_features: int = 16
    kernel_size: int = 3
    direction_features: int = 5

    @nn.compact
    def __call__(self, inputs):
        image, direction = inputs
        x = conv_features(image, self.conv_features, self.kernel_size)
        embedding = nn.Embed(self.num_directions, self.direction_features)(direction)
        return jnp.concatenate([x, embedding], axis=-1)


class GridTimeEncoder(nn.Module):
    """PAIRED's adversary encoder (dcd's): (map [..., H, W, C], time step [...] int,
    noise [..., Z]) -> the conv features of the map, the time step's learned embedding
    and the noise, concatenated [..., F].

    Where it departs from dcd: the map is the editor's one-hot grid of the interior
    (H x W x 4: wall, empty, goal, agent), not MiniGrid's 3-channel encoding of the grid
    with its outer wall ring; the time step's embedding is a lookup (`nn.Embed`), dcd's a
    linear layer on its one-hot (the same but for dcd's bias); the conv's width is the
    agent's `conv_features` (PAIRED's teacher sets dcd's 128)."""

    num_time_steps: int
    conv_features: int = 128
    kernel_size: int = 3
    time_features: int = 10

    @nn.compact
    def __call__(self, inputs):
        grid, time, noise = inputs
        x = conv_features(grid, self.conv_features, self.kernel_size)
        time = jnp.clip(time, 0, self.num_time_steps - 1)  # out of range: the last row
        embedding = nn.Embed(self.num_time_steps, self.time_features)(time)
        return jnp.concatenate([x, embedding, noise.astype(x.dtype)], axis=-1)


class TokenEncoder(nn.Module):
    """Categorical codes obs [..., O] (an `envs.base.TokenObservation`) -> features
    [..., F]: the MLP of `hidden_sizes` on the one-hot of every code (position i over its
    own token_sizes[i] values, all concatenated). The first layer is computed as the sum
    of one learned row per position (an embedding lookup), the same product as on the
    one-hot without building it; its rows start normal with variance 2 / O (He's, for O
    active inputs). A code outside its position's values is clipped into them."""

    token_sizes: Sequence[int]
    hidden_sizes: Sequence[int]
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs):
        sizes = np.asarray(self.token_sizes, np.int32)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)
        codes = jnp.clip(jnp.round(obs).astype(jnp.int32), 0, sizes - 1) + offsets
        width = self.hidden_sizes[0]
        init = nn.initializers.normal(stddev=float(np.sqrt(2.0 / len(sizes))))
        table = self.param("embedding", init, (int(sizes.sum()), width))
        bias = self.param("bias", nn.initializers.zeros, (width,))
        x = ACTIVATIONS[self.activation](jnp.take(table, codes, axis=0).sum(axis=-2) + bias)
        for size in self.hidden_sizes[1:]:
            x = ACTIVATIONS[self.activation](dense(size, np.sqrt(2))(x))
        return x


class MLPEncoder(nn.Module):
    """obs [..., O] -> features [..., F] (O itself with no hidden layers)."""

    hidden_sizes: Sequence[int]
    activation: str = "relu"

    @nn.compact
    def __call__(self, obs):
        for size in self.hidden_sizes:
            obs = ACTIVATIONS[self.activation](dense(size, np.sqrt(2))(obs))
        return obs


class RecurrentActorCritic(nn.Module):
    """Encoder -> LSTM -> actor and critic heads, in three methods so the encoder and the
    heads run over a whole [T, N] sequence at once and only the LSTM steps in a scan."""

    encoder: nn.Module
    lstm_size: int
    action_dim: int
    discrete: bool
    head_sizes: Sequence[int]
    activation: str

    def setup(self):
        # Flax's default recurrent init is a batched QR under a vmap over seeds: see
        # networks._orthogonal.
        self.cell = nn.OptimizedLSTMCell(self.lstm_size, recurrent_kernel_init=_orthogonal(1.0))
        self.heads = ActorCritic(self.action_dim, self.discrete, self.head_sizes, self.activation)

    def __call__(self, carry, inputs):
        """One step (for init): -> (carry, (out, value, log_std))."""
        carry = self.recur(carry, self.encode(inputs))
        return carry, self.policy(carry[1])

    def encode(self, inputs):
        return self.encoder(inputs)

    def recur(self, carry, features):
        """LSTM carry (c, h) [..., H] and features [..., F] -> the next carry."""
        return self.cell(carry, features)[0]

    def policy(self, hidden):
        """hidden [..., H] -> (out [..., A], value [...], log_std [..., A] or None)."""
        return self.heads(hidden)


def episode_starts(done: jax.Array) -> jax.Array:
    """done [T, N] -> [T, N] bool: the previous step ended an episode, so the rollout
    started this step from a fresh carry. Step 0 continues the stored carry."""
    return jnp.concatenate([jnp.zeros_like(done[:1]), done[:-1]]).astype(bool)


def _reset_where(start: jax.Array, carry):
    """Zero the carry of the instances where start [N] is true."""
    return jax.tree.map(lambda c: jnp.where(start[:, None], jnp.zeros_like(c), c), carry)


def _env_major(tree):
    """[T, N, ...] <-> [N, T, ...]."""
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), tree)


class RecurrentPPO(Agent):
    """PPO with an LSTM policy, discrete (categorical) or continuous (diagonal Gaussian)."""

    needs_bind = True
    """`bind` picks the encoder from the env and checks the sequences' minibatches."""

    def __init__(
        self,
        config: RecurrentPPOConfig = RecurrentPPOConfig(),
        hyper: PPOHyperparams = RECURRENT_PPO_HYPERPARAMS,
    ):
        self.config = hparams.validated(config, "agent")
        self.hyper = hparams.validated(hyper, "agent")
        self.image_env = None
        self.editor_env = None
        self.token_env = None
        self.network: RecurrentActorCritic | None = None
        self.actions: ActionDistribution | None = None

    @property
    def num_minibatches(self) -> int:
        return self.config.num_minibatches

    # -- set-up (host side) --------------------------------------------------------------

    def bind(self, env, num_envs: int) -> None:
        """Read the env's image layout, or its editor layout (for the conv encoders), and
        check that the `num_envs` sequences split into the minibatches."""
        if num_envs % self.config.num_minibatches:
            raise ConfigError(
                f"agent.num_minibatches ({self.config.num_minibatches}) must divide "
                f"loop.num_envs ({num_envs}): recurrent PPO's minibatches are whole sequences"
            )
        has_image = isinstance(env, ImageDirectionObservation)
        is_editor = isinstance(env, LevelEditorEnv)
        if self.config.encoder == "conv" and not (has_image or is_editor):
            raise ConfigError(
                "agent.encoder=conv needs an env with an image observation "
                "(envs.base.ImageDirectionObservation) or a level editor "
                f"(envs.base.LevelEditorEnv); '{env.name}' is neither"
            )
        conv = self.config.encoder != "mlp"
        self.image_env = env if conv and has_image else None
        self.editor_env = env if conv and is_editor and not has_image else None
        codes = self.config.encoder == "auto" and isinstance(env, TokenObservation)
        self.token_env = env if codes and not (has_image or is_editor) else None
        if self.token_env is not None and not self.config.mlp_sizes:
            raise ConfigError(
                f"agent.mlp_sizes: the encoder of {env.name!r}'s codes needs at least one "
                "layer (its first layer embeds the codes)"
            )

    def _build(self, obs_space, action_space) -> None:
        c = self.config
        if c.encoder == "conv" and self.image_env is None and self.editor_env is None:
            raise ConfigError("agent.encoder=conv: bind(env, num_envs) the agent before init")
        if self.editor_env is not None:
            encoder = GridTimeEncoder(
                num_time_steps=int(self.editor_env.num_time_steps),
                conv_features=c.conv_features,
                kernel_size=c.conv_kernel_size,
                time_features=c.time_features,
            )
        elif self.image_env is not None:
            # The flat observation is the image, then a one-hot direction
            # (envs.base.ImageDirectionObservation).
            image_size = int(np.prod(self.image_env.image_shape))
            encoder = ImageDirectionEncoder(
                num_directions=int(obs_space.shape[-1]) - image_size,
                conv_features=c.conv_features,
                kernel_size=c.conv_kernel_size,
                direction_features=c.direction_features,
            )
        elif self.token_env is not None:
            encoder = TokenEncoder(self.token_env.token_sizes, c.mlp_sizes, c.activation)
        else:
            encoder = MLPEncoder(c.mlp_sizes, c.activation)
        self.actions = ActionDistribution(action_space)
        self.network = RecurrentActorCritic(
            encoder,
            c.lstm_size,
            self.actions.dim,
            self.actions.discrete,
            c.head_sizes,
            c.activation,
        )
        self.obs_shape = tuple(obs_space.shape)

    def _inputs(self, obs: jax.Array):
        """The encoder's input: obs [..., O], (image [..., V, V, C], direction [...]), or
        an editor's (map [..., H, W, C], time step [...], noise [..., Z])."""
        if self.editor_env is not None:
            grid, time, noise = self.editor_env.split_observation(obs)
            return grid, time.astype(jnp.int32), noise
        if self.image_env is None:
            return obs
        image, direction = self.image_env.split_observation(obs)
        if direction.ndim > image.ndim - 3:  # one-hot rather than an index
            direction = jnp.argmax(direction, -1)
        return image, direction.astype(jnp.int32)

    # -- the agent -----------------------------------------------------------------------

    def init(self, key: jax.Array, obs_space, action_space) -> RecurrentPPOState:
        if self.network is None:
            self._build(obs_space, action_space)
        obs = jnp.zeros((1,) + self.obs_shape)
        params = self.network.init(key, self.initial_carry(1), self._inputs(obs))
        return RecurrentPPOState(
            params=params,
            opt_state=ppo_adam.init(params),
            update_count=jnp.zeros((), jnp.int32),
            hyper=self.hyper,
        )

    def initial_carry(self, n: int, tasks: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
        """The LSTM carry (c [n, H], h [n, H]) of a fresh episode: zeros (`tasks` unused)."""
        zeros = jnp.zeros((n, self.config.lstm_size))
        return zeros, zeros

    def env_action(self, action: jax.Array) -> jax.Array:
        """The action the env receives: Gaussian samples are clipped to its bounds."""
        return self.actions.env_action(action)

    def act(self, state: RecurrentPPOState, obs, carry, key: jax.Array, deterministic=False):
        """obs [N, *obs_shape], carry ([N, H], [N, H]) -> action [N] or [N, A], the next
        carry, RecurrentPPOExtras [N]."""
        features = self.network.apply(state.params, self._inputs(obs), method="encode")
        next_carry = self.network.apply(state.params, carry, features, method="recur")
        out, value, log_std = self.network.apply(state.params, next_carry[1], method="policy")
        action, log_prob = self.actions.sample(out, log_std, key, deterministic)
        spec = value_spec(state.hyper, value.shape[0])
        extras = RecurrentPPOExtras(log_prob=log_prob, value=value, carry=carry, value_spec=spec)
        return action, next_carry, extras

    def replay(self, params, carry, obs: jax.Array, starts: jax.Array):
        """Run the network over sequences as the rollout did.

        carry ([N, H], [N, H]) before step 0; obs [T, N, *obs_shape]; starts [T, N] bool
        (`episode_starts(batch.done)`): the carry is zeroed before these steps.

        Returns (carries after each step, ([T, N, H], [T, N, H]); out [T, N, A];
        value [T, N]; log_std [T, N, A] or None).
        """
        features = self.network.apply(params, self._inputs(obs), method="encode")

        def step(carry, xs):
            x, start = xs
            carry = self.network.apply(params, _reset_where(start, carry), x, method="recur")
            return carry, carry

        _, carries = jax.lax.scan(step, carry, (features, starts))
        out, value, log_std = self.network.apply(params, carries[1], method="policy")
        return carries, out, value, log_std

    def _bootstrap_values(self, params, carries, next_obs: jax.Array) -> jax.Array:
        """V(next_obs[t]) [T, N], one more LSTM step from the carry after step t: the
        final observation of an episode is still that episode's, so no reset."""
        features = self.network.apply(params, self._inputs(next_obs), method="encode")
        hidden = self.network.apply(params, carries, features, method="recur")[1]
        return self.network.apply(params, hidden, method="policy")[1]

    def _loss(self, params, hyper: PPOHyperparams, mb: dict):
        steps = _env_major({k: v for k, v in mb.items() if k != "carry"})
        _, out, value, log_std = self.replay(params, mb["carry"], steps["obs"], steps["start"])
        log_prob, entropy = self.actions.log_prob_entropy(out, log_std, steps["action"])
        return ppo_loss_terms(
            log_prob, entropy, value, steps, hyper, self.config.normalize_advantages
        )

    def update(
        self,
        state: RecurrentPPOState,
        batch: Transition,
        key: jax.Array,
        axis_name: str | None = None,
    ):
        """One PPO update on a [T, N] rollout: obs [T, N, *obs_shape], action [T, N] (or
        [T, N, A]), extras.carry ([T, N, H], [T, N, H]) of which step 0 seeds the replay.
        No device axis (`averages_gradients` is False).

        Returns (state, metrics of scalars)."""
        refuse_axis(self, axis_name)
        h = state.hyper
        first_carry = jax.tree.map(lambda c: c[0], batch.extras.carry)
        starts = episode_starts(batch.done)
        carries, *_ = self.replay(state.params, first_carry, batch.obs, starts)
        next_values = self._bootstrap_values(state.params, carries, batch.next_obs)
        # Env-major, so shuffled minibatches hold whole sequences with their first carry.
        sequences = _env_major({**ppo_training_data(batch, next_values, h), "start": starts})
        sequences["carry"] = first_carry
        params, opt_state, update_count, metrics = ppo_epochs(
            key,
            state.params,
            state.opt_state,
            sequences,
            lambda params, mb: self._loss(params, h, mb),
            h,
            state.update_count,
            self.config,
        )
        new_state = state.replace(
            params=params,
            opt_state=opt_state,
            update_count=update_count,
        )
        return new_state, metrics


def make_recurrent_ppo(**kwargs) -> RecurrentPPO:
    """Build recurrent PPO from flat config keys: RecurrentPPOConfig fields and
    PPOHyperparams fields (unset ones take RECURRENT_PPO_HYPERPARAMS)."""
    config, hyper = hparams.split(kwargs, RecurrentPPOConfig, PPOHyperparams, field_name="agent")
    return RecurrentPPO(RecurrentPPOConfig(**config), RECURRENT_PPO_HYPERPARAMS.replace(**hyper))


AGENTS.register("recurrent_ppo")(
    hparams.declare(
        make_recurrent_ppo,
        RecurrentPPOConfig,
        PPOHyperparams,
        defaults=dataclasses.asdict(RECURRENT_PPO_HYPERPARAMS),
    )
)
