"""PolyNet against ReLD at equal wall time, on more instances than benchmarks.polynet runs.

The question of issue 8 ("better than ReLD at equal time") comes down to differences of a
tenth of a percent, which 32 instances cannot separate from the instance draw. This runs the
two solvers alone (no OR-Tools, no CVRPTW: ReLD does not model windows) on the first
``--count`` instances of ``benchmarks.reld``'s uniform TSP100 and CVRP100 sets (seed
20260101, the same instances and cached PyVRP references as benchmarks/polynet.py), at each
``--limits`` time limit, order rotated per instance, and reports the paired difference with a
95% bootstrap interval.

    python -m benchmarks.polynet_vs_reld --count 128 --limits 4
        # → benchmarks/results/polynet_vs_reld.md
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.polynet import RESULTS, _gap_cells, _paired, _wins, run_all
from benchmarks.reld import SEED, references, uniform
from benchmarks.routing import machine_info

SOLVERS = ["polynet", "reld"]
REPO = Path(__file__).resolve().parents[1]


def _weights_lines() -> list[str]:
    manifest = json.loads((REPO / "weights" / "MANIFEST.json").read_text())
    return [f"- Weights `{e['file']}`: {e['training_steps']} steps, {e['cpu_minutes']} CPU "
            f"min; validation gap {e['validation']['gap_percent']}%"
            for e in manifest.get("checkpoints", [])
            if e.get("solver") in SOLVERS and e.get("problem") in ("tsp", "cvrp")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=128, help="instances per set (≤ 128)")
    parser.add_argument("--limits", default="4", help="time limits in seconds, comma-separated")
    parser.add_argument("--problems", default="tsp,cvrp")
    parser.add_argument("--out", type=Path, default=RESULTS / "polynet_vs_reld.md")
    args = parser.parse_args(argv)
    if not 2 <= args.count <= 128:
        parser.error("--count: the sets hold 128 instances; give 2 to 128")
    limits = [float(v) for v in args.limits.split(",") if v]
    problems = [p for p in args.problems.split(",") if p]
    if not limits or any(p not in ("tsp", "cvrp") for p in problems):
        parser.error("--limits: at least one; --problems: tsp and/or cvrp")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    info = machine_info()
    lines = ["# PolyNet against ReLD at equal time", "",
             f"- Command: `python -m benchmarks.polynet_vs_reld "
             f"{' '.join(argv if argv is not None else sys.argv[1:])}`".rstrip(),
             f"- Started: {started} (UTC)",
             f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB, CPU "
             f"only, torch with 1 thread per solve; load average at start "
             f"{info['load_average_at_start']}",
             f"- Instances: the first {args.count} of benchmarks/reld.py's uniform sets (seed "
             f"{SEED}); reference PyVRP at 2 s (TSP) / 4 s (CVRP), cached; solver seed 0; "
             "the two solvers one after the other, order rotated per instance.",
             *_weights_lines(), "",
             "Cost difference: polynet's cost minus reld's, in % of reld's, mean over the "
             "instances with a 95% bootstrap interval (negative: polynet better).", "",
             "| set | time limit (s) | polynet gap % | reld gap % | polynet vs reld w/t/l "
             "| polynet − reld % [95% CI] |", "|---|---:|---:|---:|---:|---:|"]
    records: dict[str, Any] = {}
    for problem in problems:
        full = uniform(problem, 100, 128, SEED)
        sets, refs = full[:args.count], references(problem, full, SEED)[:args.count]
        for limit in limits:
            print(f"{problem}100 at {limit:g} s ...", file=sys.stderr, flush=True)
            rows = run_all(sets, SOLVERS, limit)
            records[f"{problem}@{limit:g}"] = {
                s: [{k: v for k, v in r.items() if k != "stats"} for r in rows[s]]
                for s in SOLVERS}
            gaps = {s: _gap_cells(rows[s], refs)[1] for s in SOLVERS}
            lines.append(f"| {problem.upper()}100 ×{args.count} | {limit:g} | "
                         f"{gaps['polynet']} | {gaps['reld']} | "
                         f"{_wins(rows['polynet'], rows['reld'])} | "
                         f"{_paired(rows['polynet'], rows['reld'])} |")
            print(lines[-1], file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(
        {"started": started, "machine": info, "count": args.count, "limits": limits,
         "records": records}, indent=1))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
