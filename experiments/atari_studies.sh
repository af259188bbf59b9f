#!/usr/bin/env bash
# The Atari studies that choose the pc preset's search settings: arms of experiments/atari_suite.py (--set changes of
# the pc preset) at equal frames, two seeds, three games. Lines go to experiments/results/atari_studies.jsonl, runs to
# experiments/results/atari_runs/ (both committed); a stopped study resumes (each run from its newest checkpoint;
# finished runs are skipped). The page docs/atari_studies.md is generated from the lines at the end.
#
#   experiments/atari_studies.sh 4          # one study (1-7); PYTHON=.venv/bin/python by default
#
# Studies 1-3 were made with suite version 2 (the final elite tested on 30 episodes at the training cap); running
# them again now would make version-3 lines (200 test episodes) beside them. Study 4 on, each study first scores
# the preset's own runs at its budget on 200 episodes (the preset's runs of seed 0 went on to 50M frames; the
# suite scores the elite of the generation the study's budget ended, without training), then runs its arm.
#
# Study 1, rank-1 mutations: the GA's children as rank-1 perturbations per layer (mutation_rank=1, run through
# the inference op's perturbed mode, perturbed_rank=1) against the paper's full-rank mutations.
# Study 2, half the population: population 100 with the 10 best as parents (the preset's 10 % truncation) against
# 200 and 20: twice the generations in the same frames.
# Study 3, self-adapted mutation power: each child's sigma is its parent's times exp(0.3 N(0, 1)) within
# [sigma/10, 10 sigma] (sigma_adaptation=0.3) against the preset's single sigma.
# Study 4, a large random first generation: generation 0 draws 1,000 random networks instead of 200 and plays
# them at most 2,500 frames each (initial_population=1000, initial_episode_frames=2500: at most 2.5M frames, 5 %
# of a 50M-frame budget on any game); its 5 best are re-evaluated at the full cap as elite candidates and its 20
# best are the first parents; from generation 1 on the run is the preset's.
# Study 5, progressive episode caps: population rounds play shorter episodes (generation 1 at half the mean length
# of generation 0's episodes, each later generation 1.2 times longer, never shorter than the elite's episodes, up
# to the 20,000-frame cap; progressive_caps=1.2); elite candidates always play at the full cap.
# Study 6, cheaper elite selection: 3 elite candidates x 3 episodes instead of the preset's 5 x 5, both arms with
# study 5's progressive caps (adopted; study 5's arm is study 6's baseline).
# Study 7, the CMA family on Atari: sep-CMA-ES, SNES and CR-FM-NES (the `cma` preset group's Atari settings: the
# GA's population, sigma_init 0.005, the seeded network as the initial mean, the mean played once a generation)
# against the pc GA at equal frames. It chooses nothing: it is reported whatever it shows.
#
# The decision rule of studies 1-6, set before their results: an arm replaces the preset's setting when its mean
# over seeds of the final elite's test mean is ahead of the preset's on at least two of the three games and more
# than 10 % behind on none.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
GAMES=(frostbite seaquest asteroids)
RESULTS=(--results experiments/results/atari_studies.jsonl --append)
STUDY=(--frames 10000000 --no-ale-cap --scores final "${RESULTS[@]}")

arm() {  # arm SEEDS... -- CHANGES...: every game and seed of one arm
  local seeds=() changes=()
  while [ "$1" != "--" ]; do seeds+=("$1"); shift; done
  shift
  changes=("$@")
  for seed in "${seeds[@]}"; do
    for game in "${GAMES[@]}"; do
      "$PYTHON" experiments/atari_suite.py --games "$game" --seed "$seed" "${STUDY[@]}" "${changes[@]}"
    done
  done
}

case "${1:-}" in
  1) arm 0 1 -- && arm 0 1 -- --set mutation_rank=1 --set perturbed_rank=1 ;;
  2) arm 0 1 -- && arm 0 1 -- --set population_size=100 --set truncation=10 ;;
  3) arm 0 1 -- && arm 0 1 -- --set sigma_adaptation=0.3 ;;
  4) arm 0 1 -- && arm 0 1 -- --set initial_population=1000 --set initial_episode_frames=2500 ;;
  5) arm 0 1 -- && arm 0 1 -- --set progressive_caps=1.2 ;;
  6) arm 0 1 -- --set progressive_caps=1.2 && arm 0 1 -- --set progressive_caps=1.2 --set elite_candidates=3 --set elite_episodes=3 ;;
  7) arm 0 1 -- && arm 0 1 -- --algo sep-cma-es && arm 0 1 -- --algo snes && arm 0 1 -- --algo cr-fm-nes ;;
  *) echo "usage: $0 STUDY (1-7)" >&2; exit 2 ;;
esac
"$PYTHON" experiments/render_atari_suite.py --studies
