"""XLand-MiniGrid (Nikulin et al. 2024, the `xminigrid` package) with its rulesets as
the UED teachers' levels, offline.

A level is a ruleset alone: a goal, rules that turn tiles into other tiles, and the
initial tiles. The grid is static config (`grid_type`, xminigrid's R1 one room by default,
and `grid_size`, 9: the smallest size xminigrid registers; only registered sizes are
accepted, none is smaller than 9 x 9), and xminigrid's reset places the initial tiles and
the agent at random free cells, facing a random way, at every reset.

Task [5 + 7 R + 2 K] (`rulesets.RulesetLayout`), xminigrid's own integer codes stored as
floats, each in [0, its highest value] (the Box; `task_to_params` rounds and clips):
    task[0:5]            the goal: its id (0..14), then two (tile, colour) pairs;
    task[5:5 + 7 R]      R rules, each its id (0..11) then three (tile, colour) pairs;
    task[5 + 7 R:]       K initial tiles, each (tile 0..12, colour 0..11).
Empty rules (id 0) and tiles ((0, 0)) pad: xminigrid skips both. R and K are the
preset's most (trivial 1 and 5, small 4 and 10, medium 9 and 16, high 18 and 25), in the
generator's slot layout (envs/xland/generator.py). `task_to_params` decodes a task into
xminigrid's `XLandEnvParams` with that `RuleSet`.

Generator (`sample_tasks`, the DR teacher's levels; the random levels of SFL): our JAX
re-implementation of xminigrid's reference generator at the static `preset`'s settings
(trivial, small, medium, high; envs/xland/generator.py says what it draws and where it
departs from the script). `edit_tasks` (ACCEL) re-draws one distractor object or rule
from its own distribution: a Gibbs step, so edited rulesets stay in the generator's
distribution.

Held-out rulesets (envs/xland/held_out.py): `num_held_out` distinct rulesets from a fixed
key, `eval.test_set: xland_held_out`; `sample_tasks` and `edit_tasks` never give one
out. `eval.test_set: benchmark:PATH` evaluates on rulesets of an xminigrid benchmark
file read with `load_benchmark_from_path` (offline).

Dynamics: xminigrid's `reset` and `step` unchanged (tests/test_xland.py plays rulesets
through both and finds the same transitions). Actions Discrete(6): forward, turn right,
turn left, pick up, put down, toggle. The episode ends terminated when the goal is met
(reward 1 - 0.9 t / T, t the steps so far), truncated after T steps (3 x grid_size^2 by
default, xminigrid's); never both. Success = return > 0 (the goal was met).

Observation [V^2 + 4 + 4 R] (V = `view_size`, 5), categorical codes as floats
(`TokenObservation`, `split_observation`): xminigrid's egocentric V x V view (walls hide
nothing, as in xminigrid's XLand), the heading 0..3 (its `DirectionObservationWrapper`),
then the goal (id, two tiles) and each rule (id, three tiles) as the task holds them
(its `RulesAndGoalsObservationWrapper`). A tile, in the view or a rule, is one code,
tile * 12 + colour (`env.tile_code`): a red ball is one token. The student sees the goal
and the rules, so a ruleset is a task to solve in one episode, not a meta-RL trial:
"solved" is one episode's success. Recurrent PPO embeds each code (`TokenEncoder`: the
MLP on the one-hot of every code). What the agent holds is not observed (as in
xminigrid).

Modules: `rulesets` (codes, layout, identity), `generator`, `held_out` (the held-out set,
benchmark files, the named test sets) and `env` (`XLand`).
"""

from envs.xland.env import XLand, registered_sizes
from envs.xland.generator import PRESETS, GeneratorPreset, edit_ruleset, sample_ruleset
from envs.xland.held_out import (
    HELD_OUT_KEY,
    benchmark_tasks,
    held_out_codes,
    load_benchmark_tasks,
)
from envs.xland.rulesets import RulesetLayout, count_rules, count_tiles

__all__ = [
    "HELD_OUT_KEY",
    "PRESETS",
    "GeneratorPreset",
    "RulesetLayout",
    "XLand",
    "benchmark_tasks",
    "count_rules",
    "count_tiles",
    "edit_ruleset",
    "held_out_codes",
    "load_benchmark_tasks",
    "registered_sizes",
    "sample_ruleset",
]
