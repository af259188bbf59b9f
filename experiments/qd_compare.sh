#!/bin/bash
# The quality-diversity comparison (experiments/qd_compare.py): every method, 3 seeds, Walker2d (20,000 episodes) then
# Ant (10,000: its episodes run the whole 1,000 steps), seed by seed so that every method has a run early. A finished
# run is skipped; a stopped one resumes.  Usage: experiments/qd_compare.sh [METHOD ...]
cd "$(dirname "$0")/.." || exit 1
PYTHON=${PYTHON:-python}
METHODS=${*:-map-elites cma-me ribs-map-elites ribs-cma-me cma-mae ribs-cma-mae nsr-es}
for task_episodes in Walker2d-v5:20000 Ant-v5:10000; do
  task=${task_episodes%%:*}
  episodes=${task_episodes##*:}
  for seed in 0 1 2; do
    for method in $METHODS; do
      echo "== $method $task seed $seed ($episodes episodes)"
      TF_CPP_MIN_LOG_LEVEL=2 $PYTHON experiments/qd_compare.py "$method" --task "$task" --seed "$seed" --episodes "$episodes" || exit 1
    done
  done
done
