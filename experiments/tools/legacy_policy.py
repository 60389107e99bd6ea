"""The committed Stump Tracks PPO policy, from its earlier file into today's run directory.

    python -m experiments.tools.legacy_policy experiments/results/stump_tracks_ppo OUT

`experiments/results/stump_tracks_ppo/policy.msgpack` predates the run-directory format:
it holds the best seed's network params and observation normalisation, nothing else. Its
param tree is the one today's PPO builds (same names, same shapes), so nothing is renamed
or reshaped: `convert` writes OUT as a one-seed run directory (config.yaml, provenance.json,
agent_params.msgpack) that `acl.run.results.RunDir.load_agents` and
`experiments.papers.stump_tracks_ppo.load_policy(OUT, 0)` read.

What the old file lacks is filled, not recovered: the Adam moments are a fresh init's
(zero) and the update count is summary.json's `updates`. They do not change the policy;
they make OUT unfit to resume the training from.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LEGACY_FILE = "policy.msgpack"
USAGE = "python -m experiments.tools.legacy_policy LEGACY_DIR OUT"


def convert(legacy_dir: str | Path, out: str | Path) -> Path:
    """Writes the policy of `legacy_dir` (policy.msgpack, config.yaml, checkpoint.json,
    summary.json) as a one-seed run directory `out`; returns `out`."""
    import jax
    import jax.numpy as jnp
    from flax import serialization

    from acl.build import build_components
    from acl.config import load_config, replace_config
    from acl.run.results import RunDir

    legacy = Path(legacy_dir)
    seed = json.loads((legacy / "checkpoint.json").read_text())["seed"]
    updates = json.loads((legacy / "summary.json").read_text())["updates"]
    config = replace_config(load_config(legacy / "config.yaml"), seed=seed, num_seeds=1)
    components = build_components(config)
    env, agent = components.env, components.agent
    agent.bind(env, config.loop.num_envs)
    fresh = agent.init(jax.random.PRNGKey(seed), env.observation_space(), env.action_space())
    saved = serialization.msgpack_restore((legacy / LEGACY_FILE).read_bytes())
    state = fresh.replace(
        params=serialization.from_state_dict(fresh.params, saved["params"]),
        obs_norm=serialization.from_state_dict(fresh.obs_norm, saved["obs_norm"]),
        update_count=jnp.asarray(updates, jnp.int32),
    )
    run = RunDir(out)
    run.write_config(config.to_dict(), [seed])
    run.save_agent(jax.tree.map(lambda leaf: jnp.asarray(leaf)[None], state))  # [1 seed, ...]
    return run.path


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2
    print("run directory:", convert(*args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
