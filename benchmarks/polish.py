"""What the final classical polish earns the neural solvers, at equal wall time.

``reld`` and ``polynet`` end every plan with a classical descent
(``solvers/routing/classical/descent.py``: 2-opt + Or-opt for the TSP; relocate, swap and 2-opt* for
CVRP; for CVRPTW the windows-keeping relocation, 2-opt*, swap and reversal descent). This
runs each solver as shipped and with the polish patched out (its time going back to the
reconstruction, as before the polish existed), one after the other, order rotated per
instance, and reports the paired cost difference with a 95% bootstrap interval, so the
README can say which part of a result is the model's and which the classical moves'.
TSP100 and CVRP100 on ``benchmarks.reld``'s uniform sets (seed 20260101), CVRPTW100 on
benchmarks/polynet.py's generated instances.

    python -m benchmarks.polish --count 64 --limits 1
        # → benchmarks/results/polish.md
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import solvers.routing.neural.polynet as polynet_module
import solvers.routing.neural.reld as reld_module
from benchmarks.common import (
    RESULTS,
    WARMED,
    check_out,
    command,
    numbers,
    parser_for,
    warm_up,
    writes_results,
)
from benchmarks.cvrptw import RANDOM_SEED_BASE
from benchmarks.polynet import _gap_cells, _paired, _wins
from benchmarks.polynet_vs_reld import instance_set, write_report
from benchmarks.reld import SEED
from benchmarks.routing import machine_info
from solvers.contract import Budget
from solvers.routing.solve import solve

SOLVERS = ("polynet", "reld")
PROBLEMS = ("tsp", "cvrp", "cvrptw")


def _unpolished(instance: Any, routes: list[list[int]], deadline: float) -> dict[str, Any]:
    return {"routes": routes, "factor": 1.0, "gain_percent": 0.0, "seconds": 0.0}


def _unpolished_tour(instance: Any, tour: list[int], deadline: float) -> dict[str, Any]:
    return {"tour": tour, "factor": 1.0, "gain_percent": 0.0, "seconds": 0.0}


def _no_keep(n: int, remaining: float) -> float:
    return 0.0


_PATCHED = {"polish": _unpolished, "POLISH_SHARE": 0.0, "POLISH_SHARE_TW": 0.0,
            "polish_tour": _unpolished_tour, "tour_polish_keep": _no_keep}


@contextlib.contextmanager
def polish_off() -> Iterator[None]:
    """The solvers without the final descent and without the time kept for it."""
    saved = [(m, {k: getattr(m, k) for k in _PATCHED if hasattr(m, k)})
             for m in (reld_module, polynet_module)]
    try:
        for module, originals in saved:
            for k in originals:
                setattr(module, k, _PATCHED[k])
        yield
    finally:
        for module, originals in saved:
            for k, v in originals.items():
                setattr(module, k, v)


def run_pair(instances: list[Any], solver: str, limit: float) -> dict[str, list[dict[str, Any]]]:
    """``solver`` with and without the polish on every instance, order rotated."""
    rows: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    for k, inst in enumerate(instances):
        for variant in (("on", "off") if k % 2 == 0 else ("off", "on")):
            with polish_off() if variant == "off" else contextlib.nullcontext():
                sol = solve(inst, solver, Budget(time_limit=limit, seed=0))
            rows[variant].append({"cost": sol.cost, "feasible": sol.feasible,
                                  "wall": sol.wall_time,
                                  "polish": sol.stats.get("polish")})
        print(f"  {solver} {inst.name} done {time.strftime('%H:%M:%S')}", file=sys.stderr,
              flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.polish", __doc__)
    parser.add_argument("--count", type=int, default=64, help="instances per set (2 to 128)")
    parser.add_argument("--limits", default="1", help="time limits in seconds, comma-separated")
    parser.add_argument("--problems", default="tsp,cvrp,cvrptw", help="any of tsp, cvrp, cvrptw")
    parser.add_argument("--solvers", default="polynet,reld", help="any of polynet, reld")
    parser.add_argument("--out", type=Path, default=RESULTS / "polish.md",
                        help="markdown report, the records beside it as .json; only a report "
                             "inside benchmarks/results adds to the reference caches there")
    args = parser.parse_args(argv)
    if not 2 <= args.count <= 128:
        parser.error("--count: the sets hold 128 instances; give 2 to 128")
    limits = numbers(parser, "--limits", args.limits)  # QA sweep: 'abc' was a traceback
    problems = [p for p in args.problems.split(",") if p]
    solvers = [s for s in args.solvers.split(",") if s]
    if not problems or any(p not in PROBLEMS for p in problems):
        parser.error("--problems: any of tsp, cvrp, cvrptw")
    if not solvers or any(s not in SOLVERS for s in solvers):
        parser.error("--solvers: any of polynet, reld")
    check_out(parser, args.out)
    write = writes_results(args.out)
    warm_up(solvers)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    info = machine_info()
    lines = ["# The final classical polish of the neural solvers, at equal time", "",
             f"- Command: `{command('benchmarks.polish', argv)}`",
             f"- Started: {started} (UTC)",
             f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB, CPU "
             f"only, torch with 1 thread per solve; load average at start "
             f"{info['load_average_at_start']}",
             f"- Instances: the first {args.count} of benchmarks/reld.py's uniform TSP100 "
             f"and CVRP100 (seed {SEED}) and of benchmarks/polynet.py's generated CVRPTW100 "
             f"(seeds from {RANDOM_SEED_BASE}); reference PyVRP at 2 s (TSP) / 4 s, cached; "
             "solver seed 0; with and without the polish one after the other, order rotated "
             f"per instance; {WARMED}.",
             "",
             "Cost difference: the shipped solver's cost minus its cost without the polish "
             "(whose time then goes to the reconstruction), in % of the latter, mean over the "
             "instances both solved feasibly, with a 95% bootstrap interval (negative: the "
             "polish helps). Polish time: the descent's own seconds, mean and largest.",
             "", "| set | solver | time limit (s) | gap with polish % | gap without % "
             "| with vs without w/t/l | with − without % [95% CI] | polish time mean / max (ms) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    records: dict[str, Any] = {}
    for problem in problems:
        sets, refs = instance_set(problem, args.count, write)
        for limit in limits:
            for solver in solvers:
                print(f"{solver} {problem}100 at {limit:g} s ...", file=sys.stderr, flush=True)
                rows = run_pair(sets, solver, limit)
                records[f"{solver}:{problem}@{limit:g}"] = rows
                gaps = {v: _gap_cells(rows[v], refs)[1] for v in rows}
                secs = [1000 * r["polish"]["seconds"] for r in rows["on"] if r["polish"]]
                timing = (f"{sum(secs) / len(secs):.1f} / {max(secs):.1f}" if secs else "–")
                lines.append(f"| {problem.upper()}100 ×{args.count} | {solver} | {limit:g} | "
                             f"{gaps['on']} | {gaps['off']} | "
                             f"{_wins(rows['on'], rows['off'])} | "
                             f"{_paired(rows['on'], rows['off'])} | {timing} |")
                print(lines[-1], file=sys.stderr, flush=True)
    write_report(args.out, lines, {"started": started, "machine": info, "count": args.count,
                                   "limits": limits, "records": records})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
