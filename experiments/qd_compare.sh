#!/bin/bash
# The quality-diversity comparison (experiments/qd_compare.py), 3 seeds per task: first the core methods (our
# MAP-Elites and CMA-ME and pyribs's) on Walker2d (20,000 episodes) and Ant (10,000: its episodes run the whole
# 1,000 steps), then CMA-MAE (ours and pyribs's) and NSR-ES on both. A finished run is skipped; a stopped one
# resumes.  Usage: [SEEDS="3 4"] [TASKS=Ant-v5] experiments/qd_compare.sh [METHOD ...]   (the given methods on both
# tasks instead; SEEDS and TASKS narrow or widen the seeds and the tasks)
cd "$(dirname "$0")/.." || exit 1
PYTHON=${PYTHON:-python}
SEEDS=${SEEDS:-0 1 2}
TASKS=${TASKS:-Walker2d-v5 Ant-v5}
run_all() {  # run_all "METHODS": every method on both tasks, seed by seed
  for task in $TASKS; do
    case $task in Walker2d-v5) episodes=20000 ;; Ant-v5) episodes=10000 ;; *) echo "unknown task $task" >&2; exit 2 ;; esac
    for seed in $SEEDS; do
      for method in $1; do
        echo "== $method $task seed $seed ($episodes episodes)"
        TF_CPP_MIN_LOG_LEVEL=2 $PYTHON experiments/qd_compare.py "$method" --task "$task" --seed "$seed" --episodes "$episodes" || exit 1
      done
    done
  done
}
if [ $# -gt 0 ]; then
  run_all "$*"
else
  run_all "map-elites cma-me ribs-map-elites ribs-cma-me"
  run_all "cma-mae ribs-cma-mae nsr-es"
fi
