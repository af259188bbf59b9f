#!/usr/bin/env bash
# The Atari studies that choose the pc preset's search settings: arms of bench/atari_suite.py (--set changes of
# the pc preset) at equal frames, two seeds, three games, scored on 30 test episodes at the training cap. Lines go
# to bench/results/atari_studies.jsonl, runs to bench/results/atari_runs/ (both committed); a stopped study
# resumes (each run from its newest checkpoint; finished runs are skipped). The page docs/atari_studies.md is
# generated from the lines at the end.
#
#   bench/atari_studies.sh            # every study below, in order
#   PYTHON=.venv/bin/python bench/atari_studies.sh
#
# Study 1, rank-1 mutations: the GA's children as rank-1 perturbations per layer (mutation_rank=1, run through
# the inference op's perturbed mode, perturbed_rank=1) against the paper's full-rank mutations.
# Study 2, half the population: population 100 with the 10 best as parents (the preset's 10 % truncation) against
# 200 and 20: twice the generations in the same frames.
# Study 3, self-adapted mutation power: each child's sigma is its parent's times exp(0.3 N(0, 1)) within
# [sigma/10, 10 sigma] (sigma_adaptation=0.3) against the preset's single sigma.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
STUDY=(--frames 10000000 --no-ale-cap --results bench/results/atari_studies.jsonl --append)
RANK1=(--set mutation_rank=1 --set perturbed_rank=1)
HALF=(--set population_size=100 --set truncation=10)
ADAPTIVE=(--set sigma_adaptation=0.3)

for seed in 0 1; do
  for game in frostbite seaquest asteroids; do
    "$PYTHON" bench/atari_suite.py --games "$game" --seed "$seed" "${STUDY[@]}"
    "$PYTHON" bench/atari_suite.py --games "$game" --seed "$seed" "${STUDY[@]}" "${RANK1[@]}"
  done
done
for seed in 0 1; do
  for game in frostbite seaquest asteroids; do
    "$PYTHON" bench/atari_suite.py --games "$game" --seed "$seed" "${STUDY[@]}" "${HALF[@]}"
  done
done
for seed in 0 1; do
  for game in frostbite seaquest asteroids; do
    "$PYTHON" bench/atari_suite.py --games "$game" --seed "$seed" "${STUDY[@]}" "${ADAPTIVE[@]}"
  done
done
"$PYTHON" bench/render_atari_suite.py --studies
