#!/usr/bin/env bash
# A BBOB run split by function group (experiments/bbob.py --functions), so that a long one (dimension 40 takes about
# 1.5 hours per algorithm on 2 cores) finishes group by group: each group is packed as an archive of its own and
# skipped when asked again; a stopped group runs again from its first problem. The page merges the groups; a group
# runs by every algorithm before the next, so that the pairs the page compares fill in together.
#
#   experiments/bbob_groups.sh 40 cma-es pycma sep-cma-es pycma-sep      # PYTHON=.venv/bin/python by default
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
dimensions=$1
shift
for functions in 1-5 6-9 10-14 15-19 20-24; do  # BBOB's five function groups, each by every algorithm in turn
  for algorithm in "$@"; do
    "$PYTHON" experiments/bbob.py "$algorithm" --dimensions "$dimensions" --functions "$functions"
  done
done
