#!/usr/bin/env bash
# The published UED protocol on a lent GPU, as one prepared script of at most 8 minutes.
#
#   bash experiments/gpu_ued_check.sh [OUT]          # OUT: runs/ued_gpu by default
#   JAXUED_MAZE_PLR=path/to/jaxued/examples/maze_plr.py bash experiments/gpu_ued_check.sh
#
# 1. Records the JAX version and devices there (they may differ from the pin).
# 2. Runs DR and robust PLR at the published settings (experiments/configs/maze_{dr,
#    robust_plr}.yaml: 13 x 13, 32 envs x 256 steps, the published student, 10 seeds)
#    for UED_GPU_MINUTES each (default 2.5, compile included), then prints the env steps
#    reached, the steps/s and the projected time of the full 30,000 updates
#    (experiments.ued_mazes --max-minutes).
# 3. With JAXUED_MAZE_PLR (JaxUED's examples/maze_plr.py and the jaxued package
#    installed), times its whole loop for JAXUED_UPDATES updates (default 500, one
#    evaluation every 250), patched on the fly where it calls JAX functions removed since
#    (jax.tree_map), with wandb disabled: the wall time beside ours, for the ratio.
set -uo pipefail
OUT=${1:-runs/ued_gpu}
MINUTES=${UED_GPU_MINUTES:-2.5}
UPDATES=${JAXUED_UPDATES:-500}
mkdir -p "$OUT"

python - "$OUT/versions.json" <<'PY'
import json, sys
import jax
info = {"jax": jax.__version__, "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()]}
print(info)
open(sys.argv[1], "w").write(json.dumps(info, indent=1))
PY

python -m experiments.ued_mazes --methods dr robust_plr --max-minutes "$MINUTES" \
    --seeds 10 --out "$OUT" --no-progress 2>&1 | tee "$OUT/ours.log"

if [ -n "${JAXUED_MAZE_PLR:-}" ]; then
    sed -e 's/jax\.tree_map(/jax.tree_util.tree_map(/g' "$JAXUED_MAZE_PLR" > "$OUT/maze_plr_patched.py"
    start=$(date +%s.%N)
    WANDB_MODE=disabled timeout 150 python "$OUT/maze_plr_patched.py" --num_updates "$UPDATES" \
        --eval_freq 250 --checkpoint_save_interval 0 --seed 0 > "$OUT/jaxued.log" 2>&1
    status=$?
    end=$(date +%s.%N)
    python - "$start" "$end" "$UPDATES" "$status" "$OUT/jaxued.json" <<'PY'
import json, sys
start, end, updates, status = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seconds = end - start
info = {"updates": updates, "exit_status": status, "wall_seconds": seconds,
        "env_steps_per_second": updates * 32 * 256 / seconds if status == 0 else None,
        "note": "one seed, compile and 2 evaluations included"}
print("JaxUED maze_plr.py:", info)
open(sys.argv[5], "w").write(json.dumps(info, indent=1))
PY
fi
