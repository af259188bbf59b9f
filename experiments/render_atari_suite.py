"""Writes the Atari suite's page, docs/atari_suite.md, and one small curve per game (docs/atari_suite/<game>.png)
from the suite's results file (experiments/atari_suite.py), so that no number on the page is typed by hand.

  python experiments/render_atari_suite.py [--results experiments/results/atari_suite.jsonl]
  (python experiments/atari_suite.py --render does the same)
  python experiments/render_atari_suite.py --studies   # docs/atari_studies.md from experiments/results/atari_studies.jsonl

Figures go to a folder named after the page (docs/atari_suite/). The page shows, for each way the suite was
run (suite version, algorithm, preset, budget, seed, mode), the newest line of each game: test mean +- std
and median at the training cap and at ALE's 108,000-frame cap, frames, wall time and frames/s, the elite's
training score, the paper's columns with our ratio to each, and from the run's history the elite rounds' share of
its frames and time and the population rounds' tails' share of its time (round_shares).

The studies page compares arms (the --set changes of experiments/atari_suite.py) at equal frames: per game and
budget, each arm's test mean at the training cap per seed, the mean over seeds and the spread, the share of each
run's time spent in its rounds' tails (read from the runs' histories in the folder atari_runs beside the results
file), and one figure per game with every arm's and seed's elite curve.
"""

import argparse
import json
import math
import os
import sys

import _checkout  # noqa: F401, I001  (this checkout's package first on sys.path)

from workbench.bench import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(os.path.dirname(HERE), "docs")
PAGE = os.path.join(DOCS, "atari_suite.md")
COLUMNS = ("DQN", "ES", "A3C", "RS 1B", "GA 1B", "GA 6B")
RESULTS = os.path.join(HERE, "results", "atari_suite.jsonl")  # the suite's committed results file
RUN_SCORES = os.path.join(HERE, "results", "run_scores.jsonl")  # experiments/run_scores.py: runs scored three ways
PROTOCOL_PAGE = os.path.join(DOCS, "protocol.md")
STUDIES = os.path.join(HERE, "results", "atari_studies.jsonl")  # the studies' lines (suite lines with --set)
STUDIES_PAGE = os.path.join(DOCS, "atari_studies.md")
PAPER_GAMES = ("asteroids", "assault", "asterix", "atlantis", "enduro", "frostbite", "gravitar", "seaquest", "venture")
RUNS_FOLDER = {"full": "atari_runs", "quick": "atari_runs-quick", "smoke": "atari_runs"}  # per mode, beside the results file
# what makes lines comparable; preset_revision: which values of the preset (workbench.training.presets)
SIGNATURE = ("suite_version", "algorithm", "preset", "preset_revision", "budget_frames", "seed", "mode", "changes")


def signature_of(entry):
    """A line's SIGNATURE fields (lines made before presets had revisions were made with revision 1)."""
    return {key: entry.get(key, 1 if key == "preset_revision" else None) for key in SIGNATURE}


def preset_label(preset, revision):
    """ "pc", or "pc revision 2" once the preset's values have changed."""
    return preset if revision == 1 else f"{preset} revision {revision}"


def run_name(algorithm, preset, seed, changes, revision=1):
    """The folder of a suite's runs: algorithm, preset (and its revision after the first), the --set changes and the
    seed (not the budget)."""
    preset_part = preset if revision == 1 else f"{preset}-revision{revision}"
    parts = [algorithm, preset_part] + [f"{name}={value}" for name, value in changes.items()] + [f"seed{seed}"]
    return "-".join(str(part).replace(os.sep, "_") for part in parts)


def round_shares(entry, runs):
    """(population tails, elite rounds, elite frames): the shares of the line's generations' time spent in the
    population rounds' tails (slots running dry at the end of a round) and in the elite rounds (all tail: fewer
    episodes than slots), and the share of its frames the elite rounds played, from its run's history in the
    folder `runs`; None when the run is not there."""
    signature = signature_of(entry)
    name = run_name(entry["algorithm"], entry["preset"], entry["seed"], entry.get("changes") or {}, signature["preset_revision"])
    path = os.path.join(runs, name, entry["game"], "history.jsonl")
    if not os.path.exists(path):
        return None
    records = [r for r in common.read_lines(path) if r["generation"] < entry["generations"]]  # a run may go on
    rounds = [phase for r in records for phase in r.get("rounds", [])]
    seconds, frames = sum(r["seconds"] for r in records), sum(phase["frames"] for phase in rounds)
    if not rounds or seconds <= 0 or frames <= 0:
        return None
    population_tail = sum(phase["tail_seconds"] for phase in rounds if phase["phase"] == "population")
    elite = [phase for phase in rounds if phase["phase"] != "population"]
    return population_tail / seconds, sum(p["seconds"] for p in elite) / seconds, sum(p["frames"] for p in elite) / frames


def groups(entries):
    """{signature (JSON text of its values): {game: newest entry}} in the order the signatures first appear."""
    grouped = {}
    for entry in entries:
        key = json.dumps(list(signature_of(entry).values()), sort_keys=True)
        grouped.setdefault(key, {})[entry["game"]] = entry  # later lines replace earlier ones (--rerun)
    return grouped


def curve_figure(entry, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frames = [point[0] / 1e6 for point in entry["curve"]]
    figure, axes = plt.subplots(figsize=(3.6, 2.4))
    axes.plot(frames, [float("nan") if p[1] is None else p[1] for p in entry["curve"]], "-", lw=1.4, label="elite")
    axes.plot(
        frames, [float("nan") if p[2] is None else p[2] for p in entry["curve"]], "--", lw=0.9, alpha=0.7, label="population mean"
    )
    save_figure(figure, axes, entry["game"], path, legend_size=6)


def save_figure(figure, axes, title, path, legend_size):
    """The suite's and the studies' curves alike: title, frames axis, grid, legend; written to path and closed."""
    import matplotlib.pyplot as plt

    axes.set_title(title, fontsize=9)
    axes.set_xlabel("frames (millions)", fontsize=8)
    axes.tick_params(labelsize=7)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=legend_size)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def number(value):
    return "" if value is None else f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


GOALS = {"RS 1B": 7, "GA 1B": 3}  # the suite's goal: above the paper's column on this many of its nine games
GOAL_FRAMES = 50_000_000  # with this budget per game (a section of another budget is compared with the paper only)
FROSTBITE_GOAL_FRAMES = 100_000_000  # and Frostbite at or above the paper's GA 1B within this many frames


def games_above(games):
    """{column of GOALS: the games, by name, whose score (ours at ALE's cap) is above the paper's}, and how many
    games have ratios."""
    scored = {game: entry["ratios"] for game, entry in games.items() if entry.get("ratios")}
    above = {column: sorted(g for g, ratios in scored.items() if (ratios.get(column) or 0) > 1) for column in GOALS}
    return above, len(scored)


def goals_line(games, goal=True):
    """How many games so far score above the paper's random search and GA at 1B frames (ours at ALE's cap),
    against the goal's counts (goal: the section has the goal's budget), how far the others are (their ratios to
    the paper, the nearest first), and which verdicts a test of this many episodes cannot settle (the paper's score
    within two standard errors of ours)."""
    above, scored = games_above(games)
    sentences = []
    for column, needed in GOALS.items():
        ratios = {game: entry["ratios"].get(column) for game, entry in games.items() if entry.get("ratios")}
        below = sorted((ratio, game) for game, ratio in ratios.items() if ratio is not None and ratio <= 1)
        unsettled = sorted(game for game in ratios if within_two_standard_errors(games[game], column))
        sentences.append(
            f"above {column} on {len(above[column])} of the {scored} games scored"
            + (f" ({', '.join(above[column])})" if above[column] else "")
            + (f", the goal is {needed} of the paper's {len(PAPER_GAMES)}" if goal else "")
            + (
                f"; the others reach {', '.join(f'{game} {ratio_text(ratio)}' for ratio, game in reversed(below))} of it"
                if below
                else ""
            )
            + (f"; within two standard errors of it, so not settled by the test: {', '.join(unsettled)}" if unsettled else "")
        )
    return "Against the paper at 1B frames: " + ". ".join(sentences[:1] + [s[0].upper() + s[1:] for s in sentences[1:]]) + "."


def within_two_standard_errors(entry, column):
    """Whether the paper's score in `column` lies within two standard errors of our test mean at ALE's cap
    (std over the test episodes / sqrt(episodes)): the test cannot tell which is higher."""
    test, paper = entry.get("test_ale_cap"), (entry.get("paper") or {}).get(column)
    if not test or paper is None or not test.get("episodes") or test.get("std") is None:
        return False
    return abs(test["mean"] - paper) <= 2 * test["std"] / math.sqrt(test["episodes"])


def frostbite_goal_line(entries):
    """Every Frostbite test (at ALE's cap) of the preset's full runs within FROSTBITE_GOAL_FRAMES, fewest frames first,
    each against the paper's GA 1B; None before there is one. Each test is listed, not the best of them: the best of
    several noisy tests would overstate what a run reaches."""
    runs = [
        e
        for e in entries
        if e["game"] == "frostbite"
        and e["mode"] == "full"
        and not e.get("changes")
        and e["budget_frames"] <= FROSTBITE_GOAL_FRAMES
        and e.get("test_ale_cap")
    ]
    if not runs:
        return None
    tests = [
        f"{e['test_ale_cap']['mean']:,.0f} after {e['frames'] / 1e6:.1f}M frames "
        f"({preset_label(e['preset'], signature_of(e)['preset_revision'])}, {e['budget_frames'] / 1e6:g}M budget), "
        f"{ratio_text(e['ratios']['GA 1B'])} of it"
        for e in sorted(runs, key=lambda e: e["frames"])
    ]
    reached = sum(e["test_ale_cap"]["mean"] >= e["paper"]["GA 1B"] for e in runs)  # the means: ratios are rounded
    return (
        f"Frostbite within {FROSTBITE_GOAL_FRAMES / 1e6:g}M frames (the goal: at or above the paper's GA 1B, "
        f"{runs[0]['paper']['GA 1B']:,.0f}): "
        + "; ".join(tests)
        + ". "
        + (f"{reached} of these {len(runs)} tests reach it." if reached else "Not reached.")
    )


LEAD_GOALS = {"RS 1B": 8, "GA 1B": 3}  # the three-seed table: the median over seeds of score (a) above the paper's
LEAD_SEEDS = (0, 1, 2)


def final_scores(suite_entries, scored):
    """{game: {seed: score (a)}} of the pc preset's GA runs at 50M frames (full mode, no changes): the suite's lines of
    version 3 carry it (scores.final); runs of earlier versions get it from experiments/run_scores.py's lines of their run
    folder at the 50M-frame budget. Score (a): the final elite's mean over 200 fresh episodes at the training cap."""
    result = {}
    for game in PAPER_GAMES:
        for seed in LEAD_SEEDS:
            lines = [
                e
                for e in suite_entries
                if e["game"] == game and e.get("seed") == seed and e.get("suite_version", 0) >= 3 and e.get("mode") == "full"
                and e["budget_frames"] == GOAL_FRAMES and not e.get("changes") and e["algorithm"] == "ga" and e["preset"] == "pc"
                and e.get("scores")
            ]  # fmt: skip
            run = f"experiments/results/{RUNS_FOLDER['full']}/{run_name('ga', 'pc', seed, {})}/{game}"
            rescored = [
                line
                for line in scored
                if line["run"] == run and line["rule"] == "budget" and line["mark"] == GOAL_FRAMES and line["mode"] == "full"
            ]
            if lines:
                result.setdefault(game, {})[seed] = lines[-1]["scores"]["final"]["mean"]
            elif rescored:
                result.setdefault(game, {})[seed] = rescored[-1]["final"]["mean"]
    return result


def lead_figure(medians, seeds, paper, path):
    """Per game, the median of score (a) over seeds as a ratio to the paper's RS 1B and GA 1B (the seeds as dots)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.5, 2.9))
    for offset, (column, colour) in zip((-0.15, 0.15), (("RS 1B", "C0"), ("GA 1B", "C1"))):
        for n, game in enumerate(medians):
            k = PAPER_GAMES.index(game)
            reference = paper[game][column]
            axes.scatter([k + offset] * len(seeds[game]), [v / reference for v in seeds[game]], s=9, color=colour, alpha=0.5)
            axes.scatter([k + offset], [medians[game] / reference], s=42, marker="D", color=colour,
                         label=f"median / {column}" if n == 0 else None)  # fmt: skip
    axes.axhline(1.0, color="black", lw=0.8)
    axes.set_xticks(range(len(PAPER_GAMES)), PAPER_GAMES, fontsize=7)
    axes.set_xlim(-0.5, len(PAPER_GAMES) - 0.5)
    axes.set_ylim(bottom=0)
    axes.set_ylabel("ours / the paper's", fontsize=8)
    axes.tick_params(labelsize=7)
    axes.grid(alpha=0.3, axis="y")
    axes.legend(fontsize=7)
    axes.set_title("Final elite, 200 fresh episodes, 50M frames (dots: seeds) against the paper's 1B frames", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def lead_lines(suite_entries, scored, figures):
    """The page's first section: the picture and the compact table of score (a), median over seeds, against the
    paper's RS 1B and GA 1B, and the goal's sentence; [] before any game has score (a)."""
    import statistics

    seeds = final_scores(suite_entries, scored)
    paper = {e["game"]: e["paper"] for e in suite_entries if e.get("paper")}
    seeds = {game: values for game, values in seeds.items() if game in paper}
    if not seeds:
        return []
    medians = {game: statistics.median(values.values()) for game, values in seeds.items()}
    lead_figure(medians, {g: list(v.values()) for g, v in seeds.items()}, paper, os.path.join(figures, "lead.png"))
    lines = [
        f"![score (a) against the paper]({os.path.basename(figures)}/lead.png)",
        "",
        "| game | ours: final elite, 200 episodes (median) | seeds | RS 1B | GA 1B | / RS 1B | / GA 1B |",
        "|---|---|---|---|---|---|---|",
    ]
    for game, median in medians.items():
        rs, ga = paper[game]["RS 1B"], paper[game]["GA 1B"]
        lines.append(
            f"| {game} | {number(median)} | "
            + ", ".join(f"{number(v)} ({s})" for s, v in sorted(seeds[game].items()))
            + f" | {number(rs)} | {number(ga)} | {ratio_text(median / rs)} | {ratio_text(median / ga)} |"
        )
    counts = {column: sorted(g for g, m in medians.items() if m > paper[g][column]) for column in LEAD_GOALS}
    seed_count = sorted({len(v) for v in seeds.values()})
    lines += [
        "",
        f"Score (a), the final elite at 50M frames on 200 fresh episodes, median over "
        f"{' or '.join(str(n) for n in seed_count)} seed{'s' if seed_count != [1] else ''} of the "
        f"{len(LEAD_SEEDS)} the goal asks for, on {len(medians)} of the {len(PAPER_GAMES)} games: "
        + "; ".join(
            f"above {column} on {len(games)} (goal {LEAD_GOALS[column]}" + (f": {', '.join(games)})" if games else ")")
            for column, games in counts.items()
        )
        + ".",
        "",
    ]
    return lines


def ratio_text(ratio):
    """Two decimals, or three where two would round a shortfall up to 1.00."""
    return f"{ratio:.3f}" if ratio < 1 <= round(ratio, 2) else f"{ratio:.2f}"


def render(results_path, page=PAGE):
    """Writes the page and its figures (in a folder beside it named after it); returns the page's path."""
    entries = common.read_lines(results_path)
    figures = os.path.splitext(page)[0]
    os.makedirs(figures, exist_ok=True)
    scored = common.read_lines(RUN_SCORES, benchmark="run_scores") if os.path.exists(RUN_SCORES) else []
    lines = ["# The Deep GA paper's Atari table on this machine", ""]
    lines += lead_lines(entries, scored, figures)
    lines += seed_lines(entries, figures)
    lines += [
        "## Method",
        "",
        "Generated by `experiments/render_atari_suite.py` from "
        f"`{os.path.relpath(results_path, os.path.dirname(HERE))}` (the JSON lines of `experiments/atari_suite.py`); "
        "edit neither by hand. Scores are test means over fresh episodes (deep-ga protocol: up to 30 no-ops, "
        "the final elite; 30 episodes in a full run of suite version 2, 200 from version 3) "
        "at the training cap and at ALE's 108,000-frame cap; the "
        "paper's columns and our ratio to each (ours at ALE's cap / theirs) come from "
        "[protocol](protocol.md). RS and GA were trained for 1B (or 6B) frames there. Hours are the time the "
        "generations took (the sum over the run's history: a stopped and resumed run counts only the time it "
        "ran, not the tests) and frames/s is frames over that time; the suite shared the 2 cores with other work "
        "(tests, benchmarks, studies) for much of it, so these are wall times, not the machine's speed, which is "
        "on the [benchmarks](benchmarks.md) page. From each run's history: the share of its frames and of its time the "
        "elite rounds took (the elite candidates' re-evaluation episodes, every generation), and the share of its time "
        "the population rounds spent in their tails (slots running dry at the end of a round).",
        "",
    ]
    for key, games in groups(entries).items():
        signature = dict(zip(SIGNATURE, json.loads(key)))
        changes = "".join(f", {name}={value}" for name, value in (signature["changes"] or {}).items())
        first = next(iter(games.values()))
        lines += [
            f"## {signature['algorithm']}, preset {preset_label(signature['preset'], signature['preset_revision'])}{changes}, "
            f"{signature['budget_frames']:,} frames "
            f"per game (seed {signature['seed']}, {signature['mode']} mode)",
            "",
            f"Machine: {first['machine']['cores']} cores ({first['machine']['cpu']}); newest line per game.",
            "",
            "| game | test (training cap) | median | test (108k cap) | median | frames | hours | frames/s | "
            "elite (training) | " + " | ".join(f"/ {c}" for c in COLUMNS) + " | elite rounds: frames / time "
            "| population tails: time | date, commit |",
            "|---|---|---|---|---|---|---|---|---|" + "---|" * len(COLUMNS) + "---|---|---|",
        ]
        runs = os.path.join(os.path.dirname(os.path.abspath(results_path)), RUNS_FOLDER[signature["mode"]])
        for game, entry in sorted(games.items()):
            short, long = entry["test_training_cap"], entry["test_ale_cap"] or dict(mean=None, std=None, median=None)
            ratios = [entry["ratios"].get(c) for c in COLUMNS]
            lines.append(
                f"| {game} | {number(short['mean'])} ± {number(short['std'])} | {number(short['median'])} | "
                + (f"{number(long['mean'])} ± {number(long['std'])} | " if long["mean"] is not None else "not run | ")
                + f"{number(long['median'])} | "
                f"{entry['frames'] / 1e6:.1f}M | {entry['seconds'] / 3600:.2f} | {number(entry['frames_per_second'])} | "
                f"{number(entry['final_elite_training'])} | "
                + " | ".join("" if r is None else f"{r:.2f}" for r in ratios)
                + f" | {rounds_cells(round_shares(entry, runs))}"
                + f" | {common.recorded(entry)[:10]}, {entry['commit'] or 'not recorded'} |"
            )
        lines += ["", goals_line(games, goal=signature["budget_frames"] == GOAL_FRAMES), ""]
        for game, entry in sorted(games.items()):
            name = (
                "-".join(
                    str(part)
                    for part in [
                        signature["algorithm"],
                        signature["preset"],
                        *(f"{k}={v}" for k, v in (signature["changes"] or {}).items()),
                        signature["budget_frames"],
                        f"seed{signature['seed']}",
                        game,
                    ]
                )
                + ".png"
            )
            curve_figure(entry, os.path.join(figures, name))
            lines.append(f"![{game}]({os.path.basename(figures)}/{name})")
        lines.append("")
    frostbite = frostbite_goal_line(entries)
    if frostbite:
        lines += ["## Frostbite's own goal", "", frostbite, ""]
    if scored:
        lines += rescored_lines(scored, entries)
    with open(page, "w") as f:
        f.write("\n".join(lines))
    return page


def seed_lines(suite_entries, figures):
    """The page's section on every seed of the pc preset's 50M-frame runs made by suite version 3 (the three-seed
    table): per game the three scores of each seed and their medians, and one figure per game with every seed's
    curve; [] before there is such a line."""
    import statistics

    runs = {}
    for e in suite_entries:
        if (e.get("suite_version", 0) >= 3 and e.get("mode") == "full" and e["budget_frames"] == GOAL_FRAMES
                and not e.get("changes") and e["algorithm"] == "ga" and e["preset"] == "pc" and e.get("scores")):  # fmt: skip
            runs.setdefault(e["game"], {})[e["seed"]] = e  # the newest line of each seed
    if not runs:
        return []
    lines = [
        "## Every seed: the three scores",
        "",
        "The pc preset's runs of suite version 3 at 50M frames: per game each seed's (a) final elite on 200 fresh "
        "episodes, (b) best elite, unbiased, (c) the paper's way (biased upward), with the generation scored in "
        "brackets, then the median over seeds (the paper's statistic over its 5 runs) and its ratios to the paper.",
        "",
        "| game | seed | (a) final elite | (b) best elite, unbiased | (c) the paper's way | (a) / RS 1B | (a) / GA 1B |",
        "|---|---|---|---|---|---|---|",
    ]

    def cell(score):
        return "not scored" if score is None else f"{number(score['mean'])} ({score['generation']})"

    for game in [g for g in PAPER_GAMES if g in runs] + sorted(set(runs) - set(PAPER_GAMES)):
        seeds = runs[game]
        paper = next(iter(seeds.values())).get("paper") or {}
        for seed, entry in sorted(seeds.items()):
            scores = entry["scores"]
            cells = " | ".join(cell(scores[key]) for key in ("final", "best", "paper_way"))
            lines.append(f"| {game} | {seed} | {cells} | | |")
        medians = {
            key: statistics.median(e["scores"][key]["mean"] for e in seeds.values())
            if all(e["scores"][key] for e in seeds.values()) else None
            for key in ("final", "best", "paper_way")
        }  # fmt: skip
        ratios = [
            "" if not paper.get(c) else ratio_text(medians["final"] / paper[c]) for c in ("RS 1B", "GA 1B")
        ]  # fmt: skip
        lines.append(
            f"| **{game}** | **median of {len(seeds)}** | **{number(medians['final'])}** | {number(medians['best'])} "
            f"| {number(medians['paper_way'])} | {ratios[0]} | {ratios[1]} |"
        )
    lines.append("")
    for game, seeds in runs.items():
        name = f"seeds-{game}.png"
        seeds_figure(game, seeds, os.path.join(figures, name))
        lines.append(f"![{game}, every seed]({os.path.basename(figures)}/{name})")
    return lines + [""]


def seeds_figure(game, seeds, path):
    """One game's elite and population-mean curves, every seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(3.6, 2.4))
    for k, (seed, entry) in enumerate(sorted(seeds.items())):
        frames = [point[0] / 1e6 for point in entry["curve"]]
        axes.plot(frames, [float("nan") if p[1] is None else p[1] for p in entry["curve"]], "-", color=f"C{k}", lw=1.3,
                  label=f"elite, seed {seed}")  # fmt: skip
        axes.plot(frames, [float("nan") if p[2] is None else p[2] for p in entry["curve"]], "--", color=f"C{k}", lw=0.8,
                  alpha=0.6)  # fmt: skip
    save_figure(figure, axes, f"{game} (dashed: population mean)", path, legend_size=6)


def paper_code_scores(page=PROTOCOL_PAGE):
    """{game: {"10M": text, ...}} of the table of the Deep GA paper's own code at 10M, 25M and 50M frames on the
    protocol page (cells as written there: a range over runs, or one run's score)."""
    with open(page) as f:
        lines = f.read().splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("| game | 10M | 25M | 50M |"))
    table = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0]] = dict(zip(("10M", "25M", "50M"), cells[1:]))
    return table


def rescored_lines(scored, suite_entries, seed_runs="experiments/results/atari_runs/ga-pc-seed0/"):
    """The page's section on the seed-0 runs scored three ways (experiments/run_scores.py lines of the runs in seed_runs:
    at the suite's 50M-frame budget, and at the marks of the paper code's logs)."""
    newest = {}
    for line in scored:
        if line["mode"] == "full" and line["run"].startswith(seed_runs):
            newest[(line["game"], line["rule"], line["mark"], line["final_only"])] = line
    paper = {e["game"]: e["paper"] for e in suite_entries if e.get("paper")}
    thirty = {e["game"]: e["test_training_cap"]["mean"] for e in suite_entries if e["budget_frames"] == GOAL_FRAMES}
    lines = [
        "## The nine seed-0 runs scored three ways",
        "",
        "From `experiments/results/run_scores.jsonl` (`experiments/run_scores.py`; the method is on the "
        "[protocol page](protocol.md#how-the-paper-scored-a-run)): each run of the table above as its 50M-frame budget "
        "ended it, (a) the final elite on 200 fresh episodes, (b) the best of the run's elites chosen on a selection set "
        "and reported on 200 other episodes, (c) the paper's way, the highest 200-episode selection-set mean among the "
        "elites, biased upward. All at the training cap of 20,000 frames; the generation scored is in brackets. The "
        "30-episode test is the table's. Ratios are to the paper's RS 1B and GA 1B.",
        "",
        "| game | (a) final elite | (b) best elite, unbiased | (c) the paper's way (biased) | 30-episode test "
        "| RS 1B | GA 1B | (a) / RS 1B | (a) / GA 1B | (b) / GA 1B | (c) / GA 1B |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = 0
    for game in PAPER_GAMES:
        full = newest.get((game, "budget", GOAL_FRAMES, False))
        final = full or newest.get((game, "budget", GOAL_FRAMES, True))
        if final is None:
            continue
        rows += 1
        columns = paper.get(game, {})
        rs, ga = columns.get("RS 1B"), columns.get("GA 1B")

        def cell(score):
            if score is None:
                return "not yet scored"
            return f"{number(score['mean'])} ± {number(score['std'])} ({score['generation']})"

        def ratio(score, column):
            return "" if score is None or not column else f"{score['mean'] / column:.2f}"

        best, paper_way = (full["best"], full["paper_way"]) if full else (None, None)
        lines.append(
            f"| {game} | {cell(final['final'])} | {cell(best)} | {cell(paper_way)} | {number(thirty.get(game))} "
            f"| {number(rs)} | {number(ga)} | {ratio(final['final'], rs)} | {ratio(final['final'], ga)} "
            f"| {ratio(best, ga)} | {ratio(paper_way, ga)} |"
        )
    if not rows:
        return []
    code = paper_code_scores()
    marks = sorted((key for key in newest if key[1] == "before"), key=lambda key: (PAPER_GAMES.index(key[0]), key[2]))
    if marks:
        lines += [
            "",
            "Per frame against the paper's own GA code (its logs: the elite of the last generation before each mark on "
            "200 episodes, [protocol](protocol.md#the-papers-own-ga-code-at-10m-25m-and-50m-frames)); ours the same way, "
            "score (a) of the last generation that ended before the mark:",
            "",
            "| game | frames | ours: final elite, 200 episodes (generation, frames) | the paper's code |",
            "|---|---|---|---|",
        ]
        for key in marks:
            line = newest[key]
            label = f"{key[2] / 1e6:g}M"
            lines.append(
                f"| {key[0]} | {label} | {number(line['final']['mean'])} ± {number(line['final']['std'])} "
                f"({line['generation']}, {line['frames'] / 1e6:.1f}M) | {code.get(key[0], {}).get(label, '')} |"
            )
    return lines + [""]


def arm_label(entry):
    """ "ga, pc" or "ga, pc + mutation_rank=1, perturbed_rank=1": the algorithm, the preset (with its revision after
    the first) and the changes."""
    changes = ", ".join(f"{name}={value}" for name, value in (entry.get("changes") or {}).items())
    preset = preset_label(entry["preset"], signature_of(entry)["preset_revision"])
    return f"{entry['algorithm']}, {preset}" + (f" + {changes}" if changes else "")


def study_groups(entries):
    """{(test episodes, game, budget): {arm label: {seed: newest entry}}}, in the order they first appear: arms are
    compared on tests of equal length only (the suite's version 2 tested the final elite on 30 episodes, version 3 on
    200)."""
    grouped = {}
    for entry in entries:
        arms = grouped.setdefault((entry["test_training_cap"]["episodes"], entry["game"], entry["budget_frames"]), {})
        arms.setdefault(arm_label(entry), {})[entry["seed"]] = entry
    return grouped


def study_figure(game, budget, arms, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(4.8, 2.8))
    styles = ("-", "--", ":", "-.")
    for number_, (label, seeds) in enumerate(arms.items()):
        colour = f"C{number_}"
        for k, (seed, entry) in enumerate(sorted(seeds.items())):
            frames = [point[0] / 1e6 for point in entry["curve"]]
            axes.plot(
                frames,
                [float("nan") if p[1] is None else p[1] for p in entry["curve"]],
                styles[k % 4],
                color=colour,
                marker="o",
                markersize=2.5,
                lw=1.2,
                label=f"{label} (seed {seed})",
            )
    save_figure(figure, axes, f"{game}, {budget / 1e6:g}M frames: elite's training score", path, legend_size=5.5)


def study_summary(grouped):
    """Markdown lines: per changed arm, each game's mean over seeds against its baseline's, and on how many games the
    arm is ahead. An arm's baseline is the arm whose changes are the largest proper subset of its own (a study whose
    both arms carry an adopted change compares them), else the unchanged preset. An arm wins a game when its mean over
    seeds is higher, and clearly when even its lowest seed is above the baseline's highest."""
    import statistics

    def changes_of(seeds):
        return set(next(iter(seeds.values())).get("changes", {}).items())

    verdicts = {}
    for (episodes, game, budget), arms in grouped.items():
        for label, seeds in arms.items():
            own = changes_of(seeds)
            if not own:
                continue
            preset = label.split(" + ")[0]
            bases = [other for other in arms if other.split(" + ")[0] == preset and changes_of(arms[other]) < own]
            if not bases:
                continue
            base = max(bases, key=lambda other: len(changes_of(arms[other])))
            ours = [e["test_training_cap"]["mean"] for e in seeds.values()]
            theirs = [e["test_training_cap"]["mean"] for e in arms[base].values()]
            means = (statistics.fmean(ours), statistics.fmean(theirs))
            verdicts.setdefault((episodes, label), []).append(
                (game, budget, base, *means, min(ours) > max(theirs), len(ours), len(theirs))
            )
    if not verdicts:
        return []
    lines = [
        "## Summary",
        "",
        "| arm | game, frames | test episodes | arm (mean over seeds) | baseline | baseline (mean over seeds) | arm / baseline "
        "| seeds (arm, baseline) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (episodes, label), rows in verdicts.items():
        for game, budget, base, ours, theirs, clearly, n_ours, n_theirs in rows:
            ratio = f"{ours / theirs:.2f}" if theirs > 0 else "n/a"
            lines.append(
                f"| {label} | {game}, {budget / 1e6:g}M | {episodes} | {number(ours)} | {base} | {number(theirs)} | {ratio}"
                f"{' (every seed ahead)' if clearly else ''} | {n_ours}, {n_theirs} |"
            )
        ahead = sum(1 for row in rows if row[3] > row[4])
        lines.append(f"| **{label}** | **ahead on {ahead} of {len(rows)} games** | | | | | | |")
    return lines + [""]


def tails_cell(shares):
    """The studies' cell of round_shares: time in the population rounds' tails / in the elite rounds."""
    return "not recorded" if shares is None else f"{shares[0]:.0%} / {shares[1]:.0%}"


def rounds_cells(shares):
    """The suite's two cells of round_shares: the elite rounds' share of frames / of time, the population tails'."""
    return "not recorded | not recorded" if shares is None else f"{shares[2]:.0%} / {shares[1]:.0%} | {shares[0]:.0%}"


def render_studies(results_path=STUDIES, page=STUDIES_PAGE):
    """Writes the studies page and its figures (in a folder beside it named after it); returns the page's path. The
    runs are read from the folder atari_runs beside the results file (experiments/atari_suite.py's)."""
    import statistics

    runs = os.path.join(os.path.dirname(os.path.abspath(results_path)), RUNS_FOLDER["full"])

    entries = common.read_lines(results_path)
    figures = os.path.splitext(page)[0]
    os.makedirs(figures, exist_ok=True)
    lines = [
        "# Atari studies: settings compared at equal frames",
        "",
        "Generated by `experiments/render_atari_suite.py --studies` from "
        f"`{os.path.relpath(results_path, os.path.dirname(HERE))}` (lines of `experiments/atari_suite.py` with "
        "`--set` changes); edit neither by hand. Each arm is the preset with its changes; each cell is the final "
        "elite's test mean at the training cap over fresh episodes (deep-ga protocol), one per seed, then the "
        "mean over seeds and, in brackets, the lowest and highest seed. Frames are the budget; a run stops at "
        "the end of the generation that reaches it.",
        "",
    ]
    grouped = study_groups(entries)
    lines += study_summary(grouped)
    for (episodes, game, budget), arms in grouped.items():
        lines += [
            f"## {game}, {budget:,} frames, {episodes} test episodes",
            "",
            "| arm | test mean per seed | mean over seeds [lowest, highest] | frames | frames/s | elite (training) per seed "
            "| time in tails: population rounds / elite rounds |",
            "|---|---|---|---|---|---|---|",
        ]
        for label, seeds in arms.items():
            ordered = [seeds[seed] for seed in sorted(seeds)]
            means = [e["test_training_cap"]["mean"] for e in ordered]
            lines.append(
                f"| {label} | "
                + ", ".join(f"{number(m)} (seed {e['seed']})" for m, e in zip(means, ordered))
                + f" | {number(statistics.fmean(means))} [{number(min(means))}, {number(max(means))}] | "
                + ", ".join(f"{e['frames'] / 1e6:.1f}M" for e in ordered)
                + " | "
                + ", ".join(number(e["frames_per_second"]) for e in ordered)
                + " | "
                + ", ".join(number(e["final_elite_training"]) for e in ordered)
                + " | "
                + ", ".join(tails_cell(round_shares(e, runs)) for e in ordered)
                + " |"
            )
        name = f"{game}-{budget}.png" if episodes == 30 else f"{game}-{budget}-{episodes}.png"
        study_figure(game, budget, arms, os.path.join(figures, name))
        lines += ["", f"![{game}]({os.path.basename(figures)}/{name})", ""]
    with open(page, "w") as f:
        f.write("\n".join(lines))
    return page


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", action="store_true", help="the studies page (default results and page change)")
    parser.add_argument(
        "--results",
        type=common.path_text,
        help="the JSON-lines file (default experiments/results/atari_suite.jsonl; --studies: "
        "experiments/results/atari_studies.jsonl)",
    )
    parser.add_argument(
        "--page",
        type=common.path_text,
        help="the page to write (figures go to a folder beside it; default "
        "docs/atari_suite.md, --studies: docs/atari_studies.md)",
    )
    args = parser.parse_args(argv)
    results = args.results or (STUDIES if args.studies else RESULTS)
    if not os.path.exists(results):
        parser.error(f"--results {results} does not exist")
    write = render_studies if args.studies else render
    print(write(results, args.page or (STUDIES_PAGE if args.studies else PAGE)), file=sys.stdout)


if __name__ == "__main__":
    main()
