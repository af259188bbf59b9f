#!/usr/bin/env bash
# The CMA family on MuJoCo against ARS: each strategy trains a linear policy (the `paper` preset of the cma group:
# every state normalised, as ARS's, sigma_init 0.03 from zero) on HalfCheetah, Hopper, Walker2d and Humanoid for
# the environment steps ARS V2-t took here in the minutes it met its threshold in (docs/learning.md: 10, 30, 60
# and 120 minutes), three seeds, and its final policy is scored on 100 fresh episodes against ARS's threshold
# (experiments/learning.py; its JSON lines go to experiments/results/learning.jsonl). Budgets are in steps, so a
# busy machine changes the wall time, not the result, and a stopped run resumes from its newest checkpoint; a run
# whose line is in learning.jsonl (or whose folder has the `done` marker) is skipped.
#
#   experiments/cma_mujoco.sh [ALGORITHM ...]      # default: sep-cma-es cr-fm-nes cma-es; PYTHON=.venv/bin/python
#   SEEDS="0" TASKS="HalfCheetah-v5" experiments/cma_mujoco.sh sep-cma-es
#
# CMA-ES (a full covariance) refuses Humanoid's 5,933 parameters and skips it. Runs go to
# experiments/results/cma_mujoco/TASK-ALGORITHM-seedS (not committed: their lines are).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
ALGORITHMS=("$@")
[ ${#ALGORITHMS[@]} -gt 0 ] || ALGORITHMS=(sep-cma-es cr-fm-nes cma-es)
read -r -a SEED_LIST <<< "${SEEDS:-0 1 2}"
read -r -a TASK_LIST <<< "${TASKS:-HalfCheetah-v5 Hopper-v5 Walker2d-v5 Humanoid-v5}"
declare -A STEPS=(  # ARS V2-t's steps in its target minutes on this machine (docs/learning.md)
  [HalfCheetah-v5]=24440000
  [Hopper-v5]=20959449
  [Walker2d-v5]=73738993
  [Humanoid-v5]=46099913
)
recorded() {  # recorded TASK ALGORITHM SEED STEPS: its JSON line is in learning.jsonl already (a finished run with
  # the preset's preserve_policy: the lines of runs from before it, whose policies the normalisation moved, do not count)
  "$PYTHON" - "$@" <<'PY'
import json, sys
task, algorithm, seed, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
try:
    lines = [json.loads(line) for line in open("experiments/results/learning.jsonl") if line.strip()]
except FileNotFoundError:
    lines = []
wanted = (task, algorithm, "paper", seed, steps, True)
sys.exit(0 if any((e.get("game"), e.get("algorithm"), e.get("preset"), e.get("seed"), e.get("budget_steps"),
                   (e.get("observation_normalization") or {}).get("preserve_policy")) == wanted
                  for e in lines) else 1)
PY
}
for seed in "${SEED_LIST[@]}"; do
  for task in "${TASK_LIST[@]}"; do
    for algorithm in "${ALGORITHMS[@]}"; do
      if [ "$algorithm" = cma-es ] && [ "$task" = Humanoid-v5 ]; then
        continue
      fi
      out="experiments/results/cma_mujoco/$task-$algorithm-seed$seed"
      if [ -f "$out/done" ] || recorded "$task" "$algorithm" "$seed" "${STEPS[$task]}"; then
        echo "$out: done already" >&2
        continue
      fi
      "$PYTHON" experiments/learning.py --game "$task" --algo "$algorithm" --preset paper --frames "${STEPS[$task]}" \
        --seed "$seed" --out "$out"
      touch "$out/done"
    done
  done
done
