"""PolyNet against ReLD at equal wall time, on more instances than benchmarks.polynet runs.

The question of issue 8 ("better than ReLD at equal time") comes down to differences of a
tenth of a percent, which 32 instances cannot separate from the instance draw. This runs
PolyNet and one opponent alone on the first ``--count`` instances of each set, at each
``--limits`` time limit, order rotated per instance, and reports the paired difference with a
95% bootstrap interval. TSP100 and CVRP100 on ``benchmarks.reld``'s uniform sets (seed
20260101, the instances and cached PyVRP references of benchmarks/polynet.py); CVRPTW100 on
benchmarks/polynet.py's generated instances. The opponent is ReLD (on CVRPTW, which ReLD does
not model, the reld solver's one-strategy reduction of PolyNet's model) unless
``--opponent`` names another solver (OR-Tools for the CVRPTW target).

    python -m benchmarks.polynet_vs_reld --count 128 --limits 4
        # → benchmarks/results/polynet_vs_reld.md
    python -m benchmarks.polynet_vs_reld --problems cvrptw --limits 1,2,4 \
        --out benchmarks/results/polynet_vs_reld_cvrptw.md
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import (
    RESULTS,
    WARMED,
    check_out,
    check_solvers,
    command,
    numbers,
    parser_for,
    warm_up,
    writes_results,
)
from benchmarks.cvrptw import RANDOM_SEED_BASE
from benchmarks.polynet import _gap_cells, _paired, _wins, run_all, tw_references
from benchmarks.reld import SEED, references, uniform
from benchmarks.routing import machine_info
from solvers.routing.generate import cvrptw_instance

SOLVERS = ["polynet", "reld"]  # whose weights the report lists
PROBLEMS = ("tsp", "cvrp", "cvrptw")
REPO = Path(__file__).resolve().parents[1]


def instance_set(problem: str, count: int, write: bool) -> tuple[list[Any], list[float]]:
    """The first ``count`` instances of a problem's 100-node benchmark set and their cached
    PyVRP references: benchmarks.reld's uniform TSP/CVRP sets, benchmarks/polynet.py's
    generated CVRPTW100; references missing from the caches are stored only when ``write``
    (a run publishing into benchmarks/results: QA sweep)."""
    if problem == "cvrptw":
        sets = [cvrptw_instance(RANDOM_SEED_BASE + k, n=101) for k in range(count)]
        return sets, tw_references(sets, write)
    full = uniform(problem, 100, 128, SEED)
    return full[:count], references(problem, full, SEED, write)[:count]


def write_report(out: Path, lines: list[str], payload: dict[str, Any]) -> None:
    """The markdown table to ``out``, the raw records beside it as .json, the table to stdout."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1))
    print("\n".join(lines))


def _weights_lines() -> list[str]:
    manifest = json.loads((REPO / "weights" / "MANIFEST.json").read_text())
    return [f"- Weights `{e['file']}`: {e['training_steps']} steps, {e['cpu_minutes']} CPU "
            f"min; validation gap {e['validation']['gap_percent']}%"
            for e in manifest.get("checkpoints", [])
            if e.get("solver") in SOLVERS]


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.polynet_vs_reld", __doc__)
    parser.add_argument("--count", type=int, default=128, help="instances per set (2 to 128)")
    parser.add_argument("--limits", default="4", help="time limits in seconds, comma-separated")
    parser.add_argument("--problems", default="tsp,cvrp", help="any of tsp, cvrp, cvrptw")
    parser.add_argument("--opponent", default="reld", help="the solver PolyNet is paired with")
    parser.add_argument("--out", type=Path, default=RESULTS / "polynet_vs_reld.md",
                        help="markdown report, the records beside it as .json; only a report "
                             "inside benchmarks/results adds to the reference caches there")
    args = parser.parse_args(argv)
    if not 2 <= args.count <= 128:
        parser.error("--count: the sets hold 128 instances; give 2 to 128")
    # QA sweep: --limits abc / 0 and --opponent bogus were tracebacks
    limits = numbers(parser, "--limits", args.limits)
    problems = [p for p in args.problems.split(",") if p]
    if not problems or any(p not in PROBLEMS for p in problems):
        parser.error("--problems: any of tsp, cvrp, cvrptw")
    check_solvers(parser, [args.opponent], "--opponent")
    if args.opponent == "polynet":
        parser.error("--opponent: another solver than polynet")
    check_out(parser, args.out)
    write = writes_results(args.out)
    warm_up(["polynet", args.opponent])
    started = datetime.now(UTC).isoformat(timespec="seconds")
    info = machine_info()
    sets_used = " and ".join(
        (["benchmarks/reld.py's uniform sets (seed " f"{SEED})"] if set(problems) - {"cvrptw"}
         else [])
        + (["benchmarks/polynet.py's generated CVRPTW100 (seeds from "
            f"{RANDOM_SEED_BASE})"] if "cvrptw" in problems else []))
    title = "ReLD" if args.opponent == "reld" else args.opponent
    lines = [f"# PolyNet against {title} at equal time", "",
             f"- Command: `{command('benchmarks.polynet_vs_reld', argv)}`",
             f"- Started: {started} (UTC)",
             f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB, CPU "
             f"only, torch with 1 thread per solve; load average at start "
             f"{info['load_average_at_start']}",
             f"- Instances: the first {args.count} of {sets_used}; reference PyVRP at 2 s "
             "(TSP) / 4 s (CVRP, CVRPTW), cached; solver seed 0; the two solvers one after "
             f"the other, order rotated per instance; {WARMED}.",
             *_weights_lines(), "",
             "Cost difference: polynet's cost minus the opponent's, in % of the opponent's, "
             "mean over the instances both solved feasibly, with a 95% bootstrap interval "
             "(negative: polynet better). Gaps are to PyVRP (TSP 2 s, CVRP and CVRPTW 4 s).",
             "", "| set | opponent | time limit (s) | polynet gap % | opponent gap % "
             "| polynet vs opponent w/t/l | polynet − opponent % [95% CI] |",
             "|---|---|---:|---:|---:|---:|---:|"]
    records: dict[str, Any] = {}
    for problem in problems:
        other = args.opponent
        sets, refs = instance_set(problem, args.count, write)
        for limit in limits:
            print(f"{problem}100 at {limit:g} s ...", file=sys.stderr, flush=True)
            rows = run_all(sets, ["polynet", other], limit)
            records[f"{problem}@{limit:g}"] = {
                s: [{k: v for k, v in r.items() if k != "stats"} for r in rows[s]]
                for s in rows}
            gaps = {s: _gap_cells(rows[s], refs)[1] for s in rows}
            lines.append(f"| {problem.upper()}100 ×{args.count} | {other} | {limit:g} | "
                         f"{gaps['polynet']} | {gaps[other]} | "
                         f"{_wins(rows['polynet'], rows[other])} | "
                         f"{_paired(rows['polynet'], rows[other])} |")
            print(lines[-1], file=sys.stderr, flush=True)
    write_report(args.out, lines, {"started": started, "machine": info, "count": args.count,
                                   "limits": limits, "records": records})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
