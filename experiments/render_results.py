"""Writes the results pages from the committed results files, so that no result in the docs is typed by hand.

  python experiments/render_results.py           # writes the files below (and the Atari suite's pages)
  python experiments/render_results.py --check   # writes nothing; exits 1 naming each file that is stale

From experiments/results/<benchmark>.jsonl (the lines workbench/bench/common.py records, oldest first):
- docs/results.md: per benchmark, the newest line of each setting (mode, game or task) with every figure that has a
  target, and then the whole history, one row per line;
- the regions between `<!-- results:NAME -->` and `<!-- /results -->` in README.md and the docs pages: NAME
  `glance` is the "results at a glance" table of the README and the site's home page; NAME
  `json:BENCHMARK[?FIELD=VALUE&...]` is that benchmark's newest lines as printed (one per setting; json_lines says
  how to choose them); NAME `table:BENCHMARK` is its table from the runs TABLES chooses;
- the Atari suite's and the studies' pages (experiments/render_atari_suite.py), the quality-diversity comparison's
  (experiments/render_qd_compare.py).
Lines carried over from the docs, typed there before the results files existed, say so in their `imported` field;
they have no commit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys

import _checkout  # noqa: F401, I001  (this checkout's package first on sys.path)
import render_atari_suite  # noqa: E402
import render_qd_compare  # noqa: E402

from workbench.bench import common  # noqa: E402

ROOT = common.CHECKOUT
RESULTS = _checkout.RESULTS
REGION_PAGES = (
    "README.md",
    "docs/index.md",
    "docs/benchmarks.md",
    "docs/ray.md",
    "docs/learning.md",
    "docs/continuous_control.md",
    "docs/cma.md",
)
# results files (and their -quick forms) with pages of their own
OWN_RENDERER = ("atari_suite", "atari_studies", "run_scores", "qd_compare")
TITLES = {  # benchmark -> (title, the page that explains it)
    "population_inference": ("Population inference", "benchmarks.md#benchmark-population-inference"),
    "emulation": ("Atari emulation", "benchmarks.md#benchmark-emulation"),
    "mujoco": ("MuJoCo physics", "benchmarks.md#benchmark-mujoco"),
    "fused_steps": ("Small MuJoCo generations (fused steps)", "benchmarks.md#benchmark-small-mujoco-generations-fused-steps"),
    "end_to_end": ("End to end", "benchmarks.md#benchmark-end-to-end"),
    "training_runs": ("Training runs against the evaluator", "benchmarks.md#benchmark-training-runs-against-the-evaluator"),
    "soak": ("Long runs (soak)", "benchmarks.md#benchmark-long-runs-soak"),
    "ray_scaling": ("Ray scaling", "ray.md"),
    "learning": ("Learning", "learning.md"),
    "elite_retest": ("Recent elites re-tested", "learning.md#how-far-a-30-episode-test-settles-a-verdict"),
    "bbob": ("COCO's BBOB suite", "cma.md"),
    "distribution_updates": ("The CMA family's updates", "benchmarks.md#benchmark-the-cma-familys-updates"),
    "archive_bookkeeping": ("Quality-diversity archives", "benchmarks.md#benchmark-quality-diversity-archives"),
}
AT_MOST = {"idle_fraction", "bytes_ratio", "rss", "files", "threads"}  # figures whose target is an upper bound
SETTING = ("mode", "game", "model", "actors", "simulations", "algorithm", "preset", "compare", "study", "init_from")
REGION = re.compile(r"(<!-- results:(?P<name>\S+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.S)


# -- reading ----------------------------------------------------------------------------------------------
def load_results(folder: str = RESULTS) -> dict[str, list[dict]]:
    """{benchmark: its lines, oldest first} for every results file in `folder` but those with a page of their own."""
    results = {}
    for name in sorted(os.listdir(folder)):
        stem = name[: -len(".jsonl")]
        if name.endswith(".jsonl") and not stem.startswith(OWN_RENDERER):
            results[stem] = sorted(common.read_lines(os.path.join(folder, name)), key=common.recorded)
    return results


def setting(entry: dict) -> str:
    """What makes two lines of a benchmark comparable: mode, game or task, model, and the like."""
    return json.dumps([entry.get(key) for key in SETTING])


def newest_per_setting(entries: list[dict]) -> list[dict]:
    """The newest line of each setting, in the order the settings first appeared."""
    newest: dict[str, dict] = {}
    for entry in entries:
        newest[setting(entry)] = entry
    return list(newest.values())


def targeted_figures(entry: dict) -> list[tuple[str, float, float]]:
    """(where, value, target) for every figure of the line that has a target: a key of its `targets` (or of
    `targets_large_p128`) found anywhere in it, or the soak's growth figures against its `target`."""
    targets = dict(entry.get("targets") or entry.get("targets_large_p128") or {})
    scope = ("LargeModel", "128") if "targets_large_p128" in entry else ()  # where population_inference's apply
    found = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, inner in value.items():
                if key not in ("targets", "targets_large_p128", "spread", "runs"):
                    walk(inner, path + [str(key)])
        elif path and path[-1] in targets and isinstance(value, (int, float)) and not isinstance(value, bool):
            if all(part in path for part in scope):
                named = [part for part in path if part not in ("results", "tasks")]
                found.append((" ".join(named), float(value), float(targets[path[-1]])))

    walk(entry, [])
    if isinstance(entry.get("target"), (int, float)) and isinstance(entry.get("growth"), dict):
        found += [(f"growth {key}", float(value), float(entry["target"])) for key, value in entry["growth"].items()]
    return found


def met(where: str, value: float, target: float) -> bool:
    return value <= target if where.split()[-1] in AT_MOST else value >= target


# -- formatting -------------------------------------------------------------------------------------------
def number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and abs(value) < 100 and value != int(value):
        return f"{value:.3g}"
    return f"{value:,.0f}"


def provenance(entry: dict) -> str:
    """When, which mode, which commit, which machine."""
    machine = entry.get("machine") or {}
    where = ", ".join(str(part) for part in (machine.get("cpu"), f"{machine.get('cores')} cores") if part)
    if entry.get("commit"):
        code = f"commit `{entry['commit']}`"
    else:
        code = "carried over from the docs (no commit)" if entry.get("imported") else "no commit recorded"
    return f"{common.recorded(entry)[:10]}, {entry.get('mode', 'full')} run, {code}, {where}"


SETTING_WORDS = {
    "model": "model {}",
    "actors": "{} actors",
    "simulations": "{} simulations",
    "preset": "`{}`",
    "study": "study of {}",
    "init_from": "from {}",
}


def describe_setting(entry: dict) -> str:
    """The line's setting in words (its mode aside): "pong", "64 simulations", "frostbite, ga, `pc`"."""
    parts = []
    for key in SETTING[1:]:
        value = entry.get(key)
        if value in (None, [], ""):
            continue
        if isinstance(value, list):
            value = " / ".join(map(str, value))
            parts.append(f"compare {value}" if key == "compare" else value)
        else:
            parts.append(SETTING_WORDS.get(key, "{}").format(value))
    return ", ".join(parts) or "default settings"


def score(summary: dict | None) -> str:
    return "" if not summary else f"{summary['mean']:,.1f} ± {summary['std']:,.1f}"


def learning_row(entry: dict) -> list[str]:
    """recorded | setting | budget | test score(s) | against the reference."""
    if "results" in entry:  # a comparison or a study: one score per arm
        arms = "; ".join(f"{arm} {score(result.get('test'))}" for arm, result in entry["results"].items())
        budget = entry.get("budget") or {}
        spent = ", ".join(f"{number(v)} {k}" for k, v in budget.items() if v)
        return [common.recorded(entry)[:10], describe_setting(entry), spent, arms, ""]
    if "test_ale_cap" in entry:  # an Atari run
        ratios = ", ".join(f"{number(v)} x {k}" for k, v in (entry.get("ratios") or {}).items())
        return [
            common.recorded(entry)[:10],
            describe_setting(entry),
            f"{number(entry['frames'])} frames, {number(entry['seconds'] / 60)} min",
            score(entry["test_ale_cap"]),
            ratios,
        ]
    reference = ""  # a MuJoCo run, against ARS's threshold
    if entry.get("ars_threshold"):
        reference = f"{number(entry['ratio_to_threshold'])} x ARS's threshold {number(entry['ars_threshold'])}"
        reference += " (met in time)" if entry.get("target_met") else " (not met in time)"
    return [
        common.recorded(entry)[:10],
        describe_setting(entry),
        f"{number(entry['frames'])} steps, {number(entry['seconds'] / 60)} min",
        score(entry.get("test")),
        reference,
    ]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


# -- the results page -------------------------------------------------------------------------------------
def benchmark_section(benchmark: str, entries: list[dict]) -> list[str]:
    title, page = TITLES.get(benchmark, (benchmark, None))
    lines = [f"## {title}", ""]
    if page:
        lines += [f"What it measures and how to read it: [{page.split('#')[0]}]({page}).", ""]
    if benchmark == "learning":
        header = ["recorded", "setting", "budget", "test score", "against the reference"]
        lines += table(header, [learning_row(e) for e in reversed(entries)]) + [""]
        return lines
    for entry in newest_per_setting(entries)[::-1]:
        lines += [f"**{describe_setting(entry)}**, newest: {provenance(entry)}.", ""]
        figures = targeted_figures(entry)
        if figures:
            rows = [
                [
                    where,
                    number(value),
                    ("<= " if where.split()[-1] in AT_MOST else ">= ") + number(target),
                    "met" if met(where, value, target) else "**not met**",
                ]
                for where, value, target in figures
            ]
            lines += table(["figure", "value", "target", ""], rows) + [""]
    if len(entries) > 1:
        names = sorted({where for entry in entries for where, _, _ in targeted_figures(entry)})
        rows = []
        for entry in reversed(entries):
            values = {where: number(value) for where, value, _ in targeted_figures(entry)}
            rows.append(
                [common.recorded(entry)[:10], describe_setting(entry), entry.get("commit") or ""]
                + [values.get(name, "") for name in names]
            )
        lines += ["History (newest first):", ""] + table(["recorded", "setting", "commit"] + names, rows) + [""]
    return lines


def results_page(results: dict[str, list[dict]]) -> str:
    lines = [
        "# Results files",
        "",
        "Generated by `experiments/render_results.py` from `experiments/results/<benchmark>.jsonl`, the lines the benchmarks "
        "record (`workbench/bench/common.py`: each run appends one, dated, with the commit and the machine); edit neither by "
        "hand. Per benchmark: the newest line of each setting with every figure that has a target, then every line "
        "recorded. Absolute rates on these shared machines swing by 30 % between runs; the ratios, measured in "
        "interleaved rounds, are the result. The Atari suite has [a page of its own](atari_suite.md).",
        "",
    ]
    for benchmark in [b for b in TITLES if b in results] + [b for b in results if b not in TITLES]:
        lines += benchmark_section(benchmark, results[benchmark])
    return "\n".join(lines).rstrip() + "\n"


# -- the regions ------------------------------------------------------------------------------------------
def newest(entries: list[dict], **match) -> dict | None:
    """The newest line whose fields equal `match` (a value of None: the field is absent)."""
    for entry in reversed(entries):
        if all(entry.get(key) == value for key, value in match.items()):
            return entry
    return None


def glance(results: dict[str, list[dict]], suite: list[dict], link) -> str:
    """The "results at a glance" table (README, the site's home page): a handful of rows, each from the newest line
    of its kind. link(page) -> the link."""
    rows = []

    def row(what, result, entries, page):
        dates = [common.recorded(e)[:10] for e in entries if e]
        if result:
            rows.append([what, result, max(dates), f"[{page.split('.')[0].replace('_', ' ')}]({link(page)})"])

    population = newest(results.get("population_inference", []), mode="full")
    if population:
        large = population["results"]["LargeModel"]["128"]
        row(
            "population ops, LargeModel, 128 members",
            f"{large['op_vs_roofline']:.2f} of the memory roofline; {large['op_vs_puretf']:.1f}x the best pure-TF formulation",
            [population],
            "benchmarks.md",
        )
    emulation = [e for e in newest_per_setting(results.get("emulation", [])) if e.get("mode") == "full"]
    if emulation:
        row(
            "Atari emulation ops, 32 emulators, 2 threads",
            "; ".join(
                f"{e['game']}: {e['op_vs_raw_limit']:.2f} of ALE's own loop, {e['op_vs_vector_env']:.2f}x ale-py's vector env"
                for e in emulation
            ),
            emulation,
            "benchmarks.md",
        )
    mujoco = newest(results.get("mujoco", []), mode="full")
    if mujoco:
        row(
            "MuJoCo physics ops, 64 simulations, 2 threads",
            "; ".join(
                f"{task}: {t['op_vs_raw']:.2f} of MuJoCo's C++ loop, {t['op_vs_envpool']:.2f}x EnvPool"
                for task, t in mujoco["tasks"].items()
            ),
            [mujoco],
            "benchmarks.md",
        )
    fused = newest(results.get("fused_steps", []), mode="full")
    if fused:
        row(
            f"MuJoCo evaluator, {fused['task']}, a {fused['episodes']}-episode generation (sep-CMA-ES's)",
            f"{fused['fused_vs_per_step']:.1f}x one Python call per step; {fused['fused_vs_limit']:.2f} of the ops alone",
            [fused],
            "benchmarks.md",
        )
    end_to_end = newest(results.get("end_to_end", []))
    if end_to_end:
        small = end_to_end["results"]["small"]
        row(
            f"end to end, {end_to_end['game'].title()}, SmallModel",
            f"{small['vs_naive']:.1f}x a naive loop; evaluator idle {small['idle_fraction']:.1%}",
            [end_to_end],
            "benchmarks.md",
        )
    learning = results.get("learning", [])
    frostbite = newest(learning, game="frostbite", algorithm="ga", preset="pc", mode="full", compare=None, study=None)
    if frostbite:
        test = frostbite["test_ale_cap"]
        row(
            f"Frostbite, GA `pc`, {frostbite['seconds'] / 3600:.0f} h on {frostbite['cores']} cores "
            f"({frostbite['frames'] / 1e6:.1f}M frames)",
            f"{test['mean']:,.0f} ± {test['std']:,.0f}: "
            f"{frostbite['ratios']['RS 1B']:.1f}x the paper's random search at 1B frames, "
            f"{frostbite['ratios']['GA 1B']:.2f} of its GA at 1B",
            [frostbite],
            "learning.md",
        )
    full = [e for e in suite if e.get("mode") == "full" and not e.get("changes")]
    full = [e for e in full if e["budget_frames"] == render_atari_suite.GOAL_FRAMES] or full  # not a longer one-game run
    if full:  # the games of the newest full suite's signature (the suite page's group of it)
        newest_signature = render_atari_suite.signature_of(full[-1])
        games = {e["game"]: e for e in full if render_atari_suite.signature_of(e) == newest_signature}
        preset = render_atari_suite.preset_label(newest_signature["preset"], newest_signature["preset_revision"])
        done = ", ".join(f"{game} {e['test_ale_cap']['mean']:,.0f}" for game, e in games.items() if e.get("test_ale_cap"))
        left = len(render_atari_suite.PAPER_GAMES) - len(games)
        above, scored = render_atari_suite.games_above(games)
        versus = ", ".join(f"{column} on {len(names)}" for column, names in above.items())
        unsettled = {
            column: sum(render_atari_suite.within_two_standard_errors(e, column) for e in games.values()) for column in above
        }
        row(
            f"Atari suite, {full[-1]['algorithm'].upper()} `{preset}`, {full[-1]['budget_frames'] / 1e6:g}M frames per game",
            done
            + f"; above the paper's {versus} of these {scored}"
            + (
                "; within two standard errors of the paper, so not settled by the test: "
                + ", ".join(f"{column} on {count}" for column, count in unsettled.items())
                if any(unsettled.values())
                else ""
            )
            + (f"; {left} of the paper's games to go" if left > 0 else ""),
            list(games.values()),
            "atari_suite.md",
        )
    scored_path = render_atari_suite.RUN_SCORES
    scored = common.read_lines(scored_path, benchmark="run_scores") if os.path.exists(scored_path) else []
    finals = render_atari_suite.final_scores(suite, scored)
    paper = {e["game"]: e["paper"] for e in suite if e.get("paper")}
    finals = {game: seeds for game, seeds in finals.items() if game in paper}
    if finals:  # score (a): the final elite on 200 fresh episodes, the median over seeds
        import statistics

        medians = {game: statistics.median(seeds.values()) for game, seeds in finals.items()}
        counts = sorted({len(seeds) for seeds in finals.values()})
        above = {c: sum(m > paper[g][c] for g, m in medians.items()) for c in render_atari_suite.LEAD_GOALS}
        row(
            "Atari suite, GA `pc`, 50M frames: final elite on 200 fresh episodes, median over seeds",
            ", ".join(f"{game} {number:,.0f}" for game, number in medians.items())
            + f" ({' or '.join(map(str, counts))} seed{'s' if counts != [1] else ''} of 3); above the paper's "
            + ", ".join(f"{column} on {count}" for column, count in above.items())
            + f" of these {len(medians)} (the goal: "
            + ", ".join(f"{column} on {need}" for column, need in render_atari_suite.LEAD_GOALS.items())
            + " of 9, over 3 seeds)",
            [line for line in scored if line["game"] in finals] or [e for e in suite if e["game"] in finals],
            "atari_suite.md",
        )
    ars = [
        newest(learning, game=task, algorithm="ars", preset="paper")
        for task in ("HalfCheetah-v5", "Hopper-v5", "Walker2d-v5", "Humanoid-v5")
    ]
    ars = [e for e in ars if e]
    if ars:
        met_all = all(e.get("target_met") for e in ars)
        row(
            "MuJoCo, ARS V2-t `paper`",
            ", ".join(f"{e['game'].split('-')[0]} {e['test']['mean']:,.0f} in {e['budget_minutes']:.0f} min" for e in ars)
            + (": ARS's thresholds met" if met_all else ""),
            ars,
            "learning.md",
        )
    return "\n".join(table(["what", "result", "recorded", "page"], rows)) + "\n"


def matches(entry: dict, conditions: dict[str, str]) -> bool:
    """Whether the line meets a region's conditions: FIELD=A|B (the field is A or B; a list field's items are
    joined by commas) or FIELD= (the line has no such field)."""
    for field, wanted in conditions.items():
        value = entry.get(field)
        if isinstance(value, list):
            value = ",".join(map(str, value))
        if wanted == "":
            if value not in (None, ""):
                return False
        elif value is None or str(value) not in wanted.split("|"):
            return False
    return True


def json_lines(results: dict[str, list[dict]], spec: str) -> str:
    """A code block of the lines a region names: BENCHMARK[?FIELD=VALUE&...][&lines=all]: the newest line of each
    setting that matches (every matching line with lines=all), as printed."""
    benchmark, _, query = spec.partition("?")
    conditions = dict(part.split("=", 1) for part in query.split("&") if part)
    every = conditions.pop("lines", None) == "all"
    entries = [e for e in results.get(benchmark, []) if matches(e, conditions)]
    entries = entries if every else newest_per_setting(entries)
    if not entries:
        return f"(no line of `experiments/results/{benchmark}.jsonl` matches `{spec}` yet)\n"
    body = "\n".join(json.dumps(entry, separators=(",", ":")) for entry in entries)
    return f"```\n{body}\n```\n"


def population_table(entry: dict) -> list[list[str]]:
    rows = []
    for model, sizes in entry["results"].items():
        for members, r in sizes.items():
            o = r["obs_per_s"]
            rows.append(
                [f"{model.replace('Model', '')}, {members}"]
                + [number(o[k]) for k in ("homogeneous", "puretf", "op_fp32", "op_bf16", "op_lowrank", "roofline")]
                + [f"{number(o['dense_layer_fp32'])} / {number(o['dense_layer_bf16'])}"]
            )
    return rows


def emulation_table(entries: list[dict]) -> list[list[str]]:
    return [
        [e["game"]]
        + [
            number(e[k])
            for k in (
                "raw_ale_fps",
                "op_fps",
                "op_python_fps",
                "vector_env_fps",
                "gymnasium_fps",
                "op_vs_raw_limit",
                "op_vs_vector_env",
            )
        ]
        for e in entries
    ]


def mujoco_table(entry: dict) -> list[list[str]]:
    return [
        [
            task,
            number(t["raw_fps"]),
            number(t["op_fps"]),
            number(t["op_python_fps"]),
            f"{number(t['envpool_sync_fps'])} / {number(t['envpool_async_fps'])}",
            f"{number(t['gymnasium_sync_fps'])} / {number(t['gymnasium_async_fps'])}",
            number(t["op_vs_raw"]),
            number(t["op_vs_envpool"]),
        ]
        for task, t in entry["tasks"].items()
    ]


def end_to_end_table(entries: list[dict]) -> list[list[str]]:
    rows = []
    for model in ("small", "large"):
        for k, entry in enumerate(entries):
            r = entry["results"].get(model)
            if r is None:
                continue
            run = f"{common.recorded(entry)[:10]} ({'AB'[k] if len(entries) == 2 else k + 1})"
            rows.append(
                [f"{model.title()}Model ({r['parameters'] / 1e6:.1f}M parameters), {run}"]
                + [number(r[key]) for key in ("naive_fps", "unpipelined_fps", "pipelined_fps", "roofline_fps")]
                + [number(r["vs_naive"]), number(r["vs_roofline"]), f"{r['idle_fraction']:.1%}"]
            )
    return rows


def soak_table(entries: list[dict]) -> list[list[str]]:
    e = entries[-1]
    rows = [
        ["resident memory (MiB)"]
        + [
            number(v)
            for v in (
                e["rss_mib"]["first"],
                e["rss_mib"]["settled"],
                e["rss_mib_every_10"][10],
                e["rss_mib"]["last"],
                e["rss_mib"]["max"],
            )
        ]
    ]
    for label, key in (
        ("C heap in use (MiB)", "heap_in_use_mib_every_10"),
        ("freed blocks glibc keeps (MiB)", "heap_free_mib_every_10"),
    ):
        samples = e[key]
        rows.append([label] + [number(v) for v in (samples[0], samples[1], samples[10], samples[-1], max(samples[1:]))])
    for label, key in (("open files", "files"), ("threads", "threads")):
        rows.append([label, "", number(e[key]["settled"]), "", number(e[key]["last"]), number(e[key]["max"])])
    growth = ", ".join(f"{name} {value:.1%}" for name, value in e["growth"].items())
    rows.append([f"growth after generation {e['settle']} (target {e['target']:.0%})", growth, "", "", "", ""])
    return rows


def training_runs_table(entries: list[dict]) -> list[list[str]]:
    rows = []
    for entry in entries:
        for game, r in entry["results"].items():
            population, elite = r["rounds"]["population"], r["rounds"]["elite candidate"]
            start = "a fresh population" if r["start"] == "fresh" else "a trained checkpoint"
            rows.append(
                [
                    f"{game.title()}, {r['generations']} generation{'s' * (r['generations'] > 1)} from {start}",
                    number(r["training_fps"]),
                    number(r["evaluator_fps"]),
                    number(r["busy_fps"]),
                    f"**{r['training_vs_evaluator']:.2f}**",
                    f"{population['tail_seconds']:.1f} s of {population['seconds']:.0f} s ({population['tail_share']:.0%})",
                    f"{elite['seconds']:.1f} s, all tail" if elite["busy_seconds"] == 0 else f"{elite['seconds']:.1f} s",
                ]
            )
    return rows


def elite_retest_table(entries: list[dict]) -> list[list[str]]:
    rows = []
    for entry in entries:
        elites = {row["generation"]: row for row in entry["elites"]}
        final, picked = elites[entry["final_generation"]], elites[entry["picked_generation"]]
        reports = [row["report"]["mean"] for row in entry["elites"]]
        own = entry.get("final_own_test")
        rows.append(
            [
                f"{entry['game']}, {entry['run_frames'] / 1e6:.1f}M frames",
                f"{len(elites)} x ({entry['episodes']} + {entry['episodes']})",
                " / ".join(
                    [number(own["mean"]) if own else "not run"]
                    + [number(final[name]["mean"]) for name in ("selection", "report")]
                ),
                number(final["report"]["std"] / math.sqrt(final["report"]["episodes"])),
                f"generation {picked['generation']}: {number(picked['selection']['mean'])} / {number(picked['report']['mean'])}"
                + (" (the final elite)" if picked is final else ""),
                f"**{entry['picked_over_final']:.2f}**" if entry["picked_over_final"] is not None else "",
                f"{number(entry['report_mean_over_elites'])} [{number(min(reports))}, {number(max(reports))}]",
            ]
        )
    return rows


def steps_budget_runs(entries: list[dict]) -> list[dict]:
    """The full MuJoCo runs budgeted in steps alone (experiments/cma_mujoco.sh) that kept their policies across the
    normalisation's merges (preserve_policy: the runs from before it are superseded), the newest of each task,
    algorithm and seed, and the runs of ARS on the same tasks that set the budgets (in minutes, its threshold's
    target)."""
    runs = [e for e in entries if e.get("mode") == "full" and e.get("ars_threshold") is not None]
    newest = {}
    for entry in runs:
        preserved = (entry.get("observation_normalization") or {}).get("preserve_policy")
        if entry.get("budget_steps") and entry.get("budget_minutes") is None and preserved:
            newest[(entry["game"], entry["algorithm"], entry.get("seed"))] = entry
    tasks = {game for game, _, _ in newest}
    anchors = {}  # the newest ARS run per task in its target minutes
    for entry in runs:
        if entry["algorithm"] == "ars" and entry["game"] in tasks and entry.get("budget_minutes") == entry.get("target_minutes"):
            anchors[entry["game"]] = entry
    return list(anchors.values()) + list(newest.values())


def steps_budget_table(entries: list[dict]) -> list[list[str]]:
    """One row per task and algorithm: every seed's test on fresh episodes, their median, and how many seeds passed
    ARS's threshold on the test (and when, in training)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for entry in entries:
        groups.setdefault((entry["game"], entry["algorithm"]), []).append(entry)
    order = list(dict.fromkeys(e["game"] for e in entries))
    rows = []
    for (game, algorithm), runs in sorted(groups.items(), key=lambda item: (order.index(item[0][0]), item[0][1] != "ars")):
        runs.sort(key=lambda e: e.get("seed") or 0)
        threshold = runs[0]["ars_threshold"]
        means = [e["test"]["mean"] for e in runs]
        reached = [e["threshold_reached_in_training_steps"] for e in runs]
        budget = runs[0].get("budget_steps") or runs[0]["frames"]
        seeds = "ARS's run (seed 0)" if algorithm == "ars" else ", ".join(str(e.get("seed")) for e in runs)
        rows.append(
            [
                f"{game}, threshold {number(threshold)}",
                f"{number(budget / 1e6)}M steps" + (f" ({number(runs[0]['budget_minutes'])} min)" if algorithm == "ars" else ""),
                f"`{algorithm}`",
                seeds,
                " / ".join(number(m) for m in means),
                f"**{number(statistics.median(means))}**",
                f"{sum(m >= threshold for m in means)} of {len(means)}",
                " / ".join("never" if r is None else f"{r / 1e6:.1f}M" for r in reached),
            ]
        )
    return rows


def newest_per_game_full(entries: list[dict]) -> list[dict]:
    """The newest full line of each game, in the order the games first appear."""
    newest_of = {}
    for entry in entries:
        if entry.get("mode") == "full":
            newest_of[entry["game"]] = entry
    return list(newest_of.values())


def newest_full(entries: list[dict]) -> list[dict]:
    return newest_per_setting([e for e in entries if e.get("mode") == "full"])


def two_newest_quick(entries: list[dict]) -> list[dict]:
    return [e for e in entries if e.get("mode") == "quick"][-2:]


TABLES = {  # a region table:NAME: (its header, rows from the lines chosen, how the lines are chosen)
    "cma_mujoco": (
        [
            "task, ARS's threshold",
            "budget (ARS's steps in its target minutes)",
            "algorithm",
            "seeds",
            "test per seed (100 fresh episodes)",
            "median",
            "seeds over the threshold",
            "training first reached it",
        ],
        steps_budget_table,
        steps_budget_runs,
    ),
    "elite_retest": (
        [
            "game, run",
            "elites x (selection + report episodes)",
            "final elite: run's test / selection set / report set",
            "its report set's standard error",
            "picked on the selection set: selection / report",
            "picked / final, report set",
            "elites on the report set: mean [lowest, highest]",
        ],
        elite_retest_table,
        newest_per_game_full,
    ),
    "population_inference": (
        [
            "model, P",
            "shared weights",
            "best pure TF",
            "custom op fp32",
            "bf16 weights",
            "low-rank children",
            "roofline",
            "dense layer fp32 / bf16",
        ],
        lambda entries: population_table(entries[-1]),
        newest_full,
    ),
    "emulation": (
        [
            "game",
            "ALE's own loop x 2 threads (limit)",
            "our ops, in-graph loop",
            "our ops from Python (`AtariBatch`)",
            "ale-py `AtariVectorEnv`",
            "Gymnasium `ALE/...-v5` loop",
            "ops / limit",
            "ops / vector env",
        ],
        emulation_table,
        newest_full,
    ),
    "mujoco": (
        [
            "task",
            "limit (C++ loop x 2)",
            "our ops, in-graph loop",
            "our ops from Python (`MujocoBatch`)",
            "EnvPool sync / async",
            "Gymnasium sync / async vector env",
            "ops / limit",
            "ops / EnvPool",
        ],
        lambda entries: mujoco_table(entries[-1]),
        newest_full,
    ),
    "training_runs": (
        [
            "game, generations",
            "training run",
            "evaluator loop",
            "busy phase",
            "training / evaluator",
            "population round: tail",
            "elite round",
        ],
        training_runs_table,
        lambda entries: [e for e in entries if e.get("mode") == "full"],
    ),
    "soak": (
        ["", "first generation", "generation 10", "100", "last", "max after 10"],
        soak_table,
        lambda entries: [e for e in entries if e.get("mode") == "full"][-1:],
    ),
    "end_to_end": (
        [
            "model, run",
            "naive: Gymnasium + one Keras model per member",
            "ours, 1 sub-population x 32 slots",
            "ours, default: 2 x 16, pipelined",
            "roofline",
            "vs naive",
            "vs roofline",
            "idle",
        ],
        end_to_end_table,
        two_newest_quick,
    ),
}


TABLE_SOURCES = {"cma_mujoco": "learning"}  # a table named for what it shows -> the results file it reads


def results_table(results: dict[str, list[dict]], benchmark: str) -> str:
    """The benchmark's table from the runs its entry in TABLES chooses, with when and which commit."""
    header, rows_of, choose = TABLES[benchmark]
    source = TABLE_SOURCES.get(benchmark, benchmark)
    entries = choose(results.get(source, []))
    if not entries:
        return f"(no run of the kind this table shows in `experiments/results/{source}.jsonl` yet)\n"
    lines = table(header, rows_of(entries))
    runs = list(dict.fromkeys(provenance(e) for e in entries))  # the runs the rows come from, each said once
    return "\n".join(lines) + "\n\n" + "; ".join(runs) + ".\n"


def fill_regions(text: str, page: str, results: dict, suite: list[dict]) -> str:
    """The page's text with every results region rendered again."""
    in_docs = page.startswith("docs/")

    def link(target):
        return target if in_docs else f"docs/{target}"

    def render(match):
        name = match.group("name")
        if name == "glance":
            body = glance(results, suite, link)
        elif name.startswith("json:"):
            body = json_lines(results, name.split(":", 1)[1])
        elif name.startswith("table:") and name.split(":", 1)[1] in TABLES:
            body = results_table(results, name.split(":", 1)[1])
        else:
            raise ValueError(f"{page}: unknown results region {name!r}")
        return match.group(1) + body + match.group(4)

    return REGION.sub(render, text)


# -- writing ----------------------------------------------------------------------------------------------
def rendered(root: str = ROOT) -> dict[str, str]:
    """{path relative to the checkout: its text as rendered now} for every file this script writes (the Atari
    suite's pages aside)."""
    results = load_results(os.path.join(root, "experiments", "results"))
    suite_file = os.path.join(root, "experiments", "results", "atari_suite.jsonl")
    suite = common.read_lines(suite_file) if os.path.exists(suite_file) else []
    files = {"docs/results.md": results_page(results)}
    for page in REGION_PAGES:
        with open(os.path.join(root, page)) as f:
            files[page] = fill_regions(f.read(), page, results, suite)
    return files


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale file")
    args = parser.parse_args(argv)
    stale = []
    try:
        files = rendered()
    except (OSError, ValueError) as error:  # a corrupt results file, an unknown region: named, no traceback
        sys.exit(f"render_results: {error}")
    for page, text in files.items():
        path = os.path.join(ROOT, page)
        current = open(path).read() if os.path.exists(path) else None
        if current == text:
            continue
        stale.append(page)
        if not args.check:
            with open(path, "w") as f:
                f.write(text)
    if args.check:
        if stale:
            sys.exit("stale (run python experiments/render_results.py): " + ", ".join(stale))
        return
    render_atari_suite.main([])
    render_atari_suite.main(["--studies"])
    render_qd_compare.main([])
    print("written: " + (", ".join(stale) if stale else "nothing changed"), file=sys.stderr)


if __name__ == "__main__":
    main()
