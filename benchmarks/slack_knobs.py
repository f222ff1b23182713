"""How much `heft_slack`'s two hand-set knobs leave on the table, scenario by scenario.

    nice -n 10 python -m benchmarks.slack_knobs [--workflows 1000] [--seeds 5000,5001]

GOODRL imitates `heft_slack` and reproduces it; whether a learned policy could beat the rule
by adapting it to the load is bounded by how much the rule gains when its knobs are tuned for
each scenario with hindsight: the minimum task length that may take a slower VM
(`min_seconds`, default 20 s on the fastest VM) and how many speed types down it may go
(`steps`, default 2). Runs the grid below on the scheduling benchmark's six scenarios and
streams (same seeds, so every difference is paired) and writes
benchmarks/results/slack_knobs.md.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import check_out, command, integers, parser_for
from benchmarks.routing import machine_info
from benchmarks.scheduling import SCENARIOS, scenario_label
from solvers.scheduling.heuristics import SLACK_MIN_SECONDS, SLACK_STEPS, HEFTSlack
from solvers.scheduling.simulator import Arrivals, parse_pool, simulate
from training.goodrl import classic_templates

OUT = Path(__file__).resolve().parent / "results" / "slack_knobs.md"
MIN_SECONDS = (5.0, 10.0, 20.0, 40.0, 80.0)
STEPS = (1, 2, 3, 5)
Knobs = tuple[float, int]


def run(workflows: int, seeds: list[int]) -> dict[str, dict[Knobs, list[float]]]:
    """Mean flowtime per scenario, knob setting and seed."""
    templates = classic_templates()
    grid = [(m, s) for m in MIN_SECONDS for s in STEPS]
    out: dict[str, dict[Knobs, list[float]]] = {}
    for pool, rates in SCENARIOS:
        label = scenario_label(pool, rates)
        out[label] = {}
        for knobs in grid:
            out[label][knobs] = [
                simulate(templates, parse_pool(pool), Arrivals(workflows, rates),
                         HEFTSlack(*knobs), seed).mean_flowtime for seed in seeds]
        print(f"{label}: done", file=sys.stderr, flush=True)
    return out


def _delta(res: dict[Knobs, list[float]], knobs: Knobs) -> float:
    """Mean over seeds of the paired change against the default knobs, in %."""
    default = np.array(res[SLACK_MIN_SECONDS, SLACK_STEPS])
    return float(100 * np.mean(np.array(res[knobs]) / default - 1))


def write(meta: dict[str, Any], res: dict[str, dict[Knobs, list[float]]], out: Path) -> None:
    m = meta["machine"]
    default = (SLACK_MIN_SECONDS, SLACK_STEPS)
    lines = [
        "# heft_slack's knobs, tuned per scenario with hindsight",
        "",
        f"- Command: `{meta['command']}`",
        f"- Started: {meta['started']} (UTC); finished: {meta['finished']}",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['os']} (flowtimes are simulated: "
        "they do not depend on the machine)",
        f"- Settings: {meta['workflows']} workflows per stream, seeds "
        f"{', '.join(map(str, meta['seeds']))} (the scheduling benchmark's held-out streams), "
        "GOODRL's four classic templates; every setting schedules the same streams",
        f"- Grid: min_seconds {', '.join(f'{v:g}' for v in MIN_SECONDS)} × steps "
        f"{', '.join(map(str, STEPS))}; default {default[0]:g} s, {default[1]} steps",
        "",
        "## Per scenario: the default and the best and worst settings (change in mean "
        "flowtime, paired over seeds; negative is better)",
        "",
        "| scenario | default mean flowtime (s) | best setting | change % | worst setting "
        "| change % |",
        "|---|---:|---|---:|---|---:|",
    ]
    for label, by_knobs in res.items():
        deltas = {k: _delta(by_knobs, k) for k in by_knobs}
        best = min(deltas, key=deltas.__getitem__)
        worst = max(deltas, key=deltas.__getitem__)
        lines.append(f"| {label} | {np.mean(by_knobs[default]):,.2f} | {best[0]:g} s, "
                     f"{best[1]} | {deltas[best]:+.3f} | {worst[0]:g} s, {worst[1]} | "
                     f"{deltas[worst]:+.3f} |")
    lines += ["", "## Mean change over the six scenarios (%)", "",
              "| min_seconds | " + " | ".join(f"steps {s}" for s in STEPS) + " |",
              "|---:|" + "---:|" * len(STEPS)]
    for ms in MIN_SECONDS:
        cells = [f"{np.mean([_delta(r, (ms, s)) for r in res.values()]):+.3f}" for s in STEPS]
        lines.append(f"| {ms:g} s | " + " | ".join(cells) + " |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = parser_for("benchmarks.slack_knobs", __doc__)
    parser.add_argument("--workflows", type=int, default=1000, help="workflows per stream")
    parser.add_argument("--seeds", default="5000,5001", help="comma-separated stream seeds")
    parser.add_argument("--out", type=Path, default=OUT, help="markdown report")
    args = parser.parse_args(argv)
    seeds = integers(parser, "--seeds", args.seeds)  # QA sweep: 'abc' was a traceback
    if args.workflows < 1:
        parser.error("--workflows: at least 1")
    check_out(parser, args.out)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    machine = machine_info()
    res = run(args.workflows, seeds)
    meta = {"command": command("benchmarks.slack_knobs", argv),
            "started": started, "finished": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": machine, "workflows": args.workflows, "seeds": seeds}
    write(meta, res, args.out)
    print(f"wrote {os.path.relpath(args.out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
