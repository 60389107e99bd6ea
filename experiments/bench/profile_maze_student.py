"""Where the maze student's time goes; the `cpu` student beside the published one.

    acl profile-maze-student [--students published cpu] [--repeats 5]
        [--iterations 2] [--config experiments/configs/maze_dr.yaml] [--seeds 1]
        [--set K=V ...] [--quick] [--out runs/profile_maze_student.json]

Each student trains in the same loop, the published one (`--config`, default
experiments/configs/maze_dr.yaml: 13 x 13 mazes, DR, 32 envs x 256 steps, `--seeds`
vmapped seeds), with only the network changed: `published` is the config's own student
(conv 16 + direction embedding, LSTM 256), `cpu` the same with
`acl.agents.recurrent_ppo.CPU_STUDENT` (an LSTM of 32).

The parts of one loop iteration, each jitted apart and timed (median of `--repeats`
calls; compile apart), one seed:
  env       the 256 x 32 env steps alone (uniform random actions, resets included)
  rollout   the rollout with the student acting: env steps plus the student's forward
            pass, one LSTM step at a time ("acting" = rollout - env)
  replay    the update's first pass: the student over the whole [256, 32] batch
  backward  one forward and backward pass through the student over the batch (the
            gradient of a sum of its outputs, the shape of one PPO minibatch here)
  update    the whole PPO update: replay, advantages, then `update_epochs` epochs of
            `num_minibatches` Adam steps ("epochs" = update - replay)
and `loop`: env steps/s of whole loop iterations (teacher, rollout, update; all seeds,
no evaluation), the best of `--repeats` (acl.benchmark.timing.training_throughput), with
the ratio of each student's to the first's. The table is printed and written as JSON.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax

from acl.benchmark.timing import median_call, random_action_rollout, report, training_throughput
from experiments.cli import CONFIGS, CommandParser

DEFAULT_CONFIG = CONFIGS / "maze_dr.yaml"


def student_overrides(name: str) -> list[str]:
    """`--set` overrides that turn the config's (published) student into `name`."""
    from acl.agents.recurrent_ppo import CPU_STUDENT

    return [] if name == "published" else [f"agent.{k}={v}" for k, v in CPU_STUDENT.items()]


def profile_parts(trainer, repeats: int) -> dict:
    """Milliseconds of each part of one iteration, for the trainer's first seed."""
    from acl.agents.recurrent_ppo import episode_starts
    from acl.benchmark.timing import uniform_actions
    from acl.loop.rollout import collect

    env, agent = trainer.env, trainer.agent
    n, steps = trainer.schedule.num_envs, trainer.schedule.num_steps
    carry = trainer.jit_init_seeds()(trainer.seed_keys(1))
    first = lambda x: x[0]  # noqa: E731
    agent_state = jax.tree.map(first, carry.seed.agent_state)
    slots = jax.tree.map(first, carry.seed.slots)
    key = jax.random.PRNGKey(0)

    start, env_only = random_action_rollout(
        env.reset, env.step, slots.params, uniform_actions(env.action_space(), n), steps
    )
    env_states = jax.jit(start)(key)
    rollout = jax.jit(lambda s, sl, k: collect(env, agent, s, sl, k, None, None, steps))
    batch = rollout(agent_state, slots, key)[1]

    def replay(params, batch):
        first_carry = jax.tree.map(first, batch.extras.carry)
        _, out, value, _ = agent.replay(params, first_carry, batch.obs, episode_starts(batch.done))
        return out.sum() + value.sum()

    parts = {
        "env": (jax.jit(env_only), (env_states, key)),
        "rollout": (rollout, (agent_state, slots, key)),
        "replay": (jax.jit(replay), (agent_state.params, batch)),
        "backward": (jax.jit(jax.grad(replay)), (agent_state.params, batch)),
        "update": (jax.jit(agent.update), (agent_state, batch, key)),
    }
    times = {}
    for name, (fn, args) in parts.items():
        jax.block_until_ready(fn(*args))  # compile
        times[name] = 1000 * median_call(fn, *args, repeats=repeats)
    return times


def profile_student(name: str, args: argparse.Namespace) -> dict:
    from acl.build import make_train
    from acl.config import load_config

    overrides = list(args.overrides) + student_overrides(name)
    config = load_config(args.config, overrides, args.seeds)
    trainer = make_train(config)
    ms = profile_parts(trainer, args.repeats)
    loop = training_throughput(trainer, args.iterations, repeats=args.repeats)
    iteration = ms["rollout"] + ms["update"]
    return {
        "student": name,
        "lstm": trainer.agent.config.lstm_size,
        "env ms": round(ms["env"], 1),
        "acting ms": round(ms["rollout"] - ms["env"], 1),
        "replay ms": round(ms["replay"], 1),
        "backward ms": round(ms["backward"], 1),
        "epochs ms": round(ms["update"] - ms["replay"], 1),
        "rollout %": round(100 * ms["rollout"] / iteration, 1),
        "update %": round(100 * ms["update"] / iteration, 1),
        "loop steps/s": round(loop["steps_per_second"]),
        "compile s": round(loop["compile_seconds"], 1),
    }


def parser() -> CommandParser:
    parser = CommandParser(
        "profile-maze-student", __doc__, examples=("--quick", "--students cpu --seeds 4")
    )
    parser.add_argument(
        "--students",
        nargs="+",
        default=["published", "cpu"],
        help="published (the config's), cpu (acl.agents.recurrent_ppo.CPU_STUDENT)",
    )
    parser.add_config(default=str(DEFAULT_CONFIG), catalogue="maze_*.yaml")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls; the median counts")
    parser.add_argument("--iterations", type=int, default=2, help="loop iterations per call")
    parser.add_seeds(help="vmapped seeds of the loop measure (default 1)")
    parser.add_overrides()
    parser.add_argument("--quick", action="store_true", help="a tiny loop: checks, no figures")
    parser.add_out(default="runs/profile_maze_student.json", help="the JSON")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    parser_ = parser()
    args = parser_.parse_args(argv)
    unknown = set(args.students) - {"published", "cpu"}
    if unknown:
        parser_.error(f"--students: unknown {sorted(unknown)}; choose from published, cpu")
    if args.repeats < 1 or args.iterations < 1:
        parser_.error("--repeats and --iterations must be >= 1")
    if args.seeds is None:
        args.seeds = 1
    if args.quick:
        args.repeats, args.iterations = 1, 1
        args.overrides = list(args.overrides) + [
            "loop.num_envs=2",
            "loop.num_steps=8",
            "env.max_episode_steps=8",
            "agent.update_epochs=1",
        ]
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = [profile_student(name, args) for name in args.students]
    for row in rows:
        row["ratio"] = round(row["loop steps/s"] / rows[0]["loop steps/s"], 2)
    report(
        "profile_maze_student",
        rows,
        args.out,
        seeds=list(range(args.seeds)),
        config=Path(args.config).name,
        overrides=list(args.overrides),
        backend=jax.default_backend(),
        note="ms per iteration part, one seed; loop steps/s over all seeds, compile apart",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
