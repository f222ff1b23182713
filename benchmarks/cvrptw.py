"""CVRPTW benchmark: the time-window solvers on Solomon's 100-customer instances against
LKH-3's best-known tours, and on generated Solomon-style instances.

    python -m benchmarks.cvrptw [--time-limit 10] [--solvers ortools,pyvrp,nearest_neighbor]
        [--random 4] [--seed 0] [--data ../shared/data] [--out benchmarks/results/cvrptw.md]

Solomon files are LKH-3's (SCALE 10, FLOOR_2D): costs are in tenths, so C101's 8273 is the
827.3 of the literature's one-decimal truncated distances. Each reference is LKH-3's tour
recomputed by our own instance and checked by our checker before it is used, so a gap is
never measured against a number we cannot reproduce. The fleet is the file's VEHICLES (a
hard cap). Every run goes through ``solvers.routing.solve.solve``, the path of the API and
the CLI, one after another in this process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    RESULTS,
    WARMED,
    check_data,
    check_out,
    check_solvers,
    header_lines,
    headline,
    machine_info,
    parser_for,
    provenance,
    warm_up,
    write_table,
)
from solvers.contract import Budget
from solvers.errors import CosolveError
from solvers.routing.generate import cvrptw_instance
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_tour_routes
from solvers.routing.problem import CVRPTWInstance
from solvers.routing.solution import build_solution
from solvers.routing.solve import gap_percent, solve

#: Seeds of the generated instances: RANDOM_SEED_BASE + k.
RANDOM_SEED_BASE = 20261200


def solomon_set(data: Path) -> list[tuple[CVRPTWInstance, int]]:
    """The Solomon instances with their LKH-3 cost, each verified by recomputing its tour."""
    out = []
    for tour in sorted((data / "solomon").glob("*.tour")):
        stem = ".".join(tour.name.split(".")[:3])
        inst = load_instance(tour.with_name(stem + ".vrptw"))
        assert isinstance(inst, CVRPTWInstance)
        stated = int(tour.name.split(".")[3])
        check = build_solution(inst, read_tour_routes(tour, inst.n, inst.depot),
                               solver="LKH-3", wall_time=0.0)
        if not check.feasible or check.cost != stated:
            raise SystemExit(f"{tour.name}: LKH-3 tour recomputes to {check.cost} "
                             f"(feasible={check.feasible}), not {stated}")
        out.append((inst, stated))
    return out


def run(inst: CVRPTWInstance, solver: str, time_limit: float, seed: int) -> dict[str, Any]:
    try:
        sol = solve(inst, solver, Budget(time_limit=time_limit, seed=seed))
    except CosolveError as exc:
        return {"solver": solver, "error": str(exc), "feasible": False, "cost": None}
    return {"solver": solver, "cost": sol.cost, "feasible": sol.feasible,
            "violations": sol.violations, "routes": sum(1 for r in sol.routes if r),
            "wall": round(sol.wall_time, 2)}


def _cell(row: dict[str, Any], reference: float | None) -> tuple[str, str, float | None]:
    """The cost and gap cells, and the unrounded gap for the means (before: the means
    were taken over the 2-decimal strings)."""
    if row.get("cost") is None:
        return "error", "–", None
    cost = f"{row['cost']:.0f}" if float(row["cost"]).is_integer() else f"{row['cost']:.4f}"
    if not row["feasible"]:
        return f"{cost} (infeasible: {'; '.join(row['violations'])[:60]})", "–", None
    gap = gap_percent(row["cost"], reference)
    return cost, ("–" if gap is None else f"{gap:.2f}"), gap


def headline_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Mean gap per set and solver over the feasible runs (Solomon: to LKH-3's tours;
    generated: to the best feasible row of each instance)."""
    rows = []
    for set_name, label, reference in (("solomon", "Solomon 100", "LKH-3"),
                                       ("generated", "generated CVRPTW100",
                                        "best of this run")):
        mine = [r for r in data["records"] if r["set"] == set_name]
        for solver in dict.fromkeys(r["solver"] for r in mine):
            ok = [r for r in mine if r["solver"] == solver and r.get("feasible")
                  and r.get("cost") is not None]
            gaps = [100 * (r["cost"] - r["reference"]) / r["reference"] for r in ok]
            rows.append(headline("CVRPTW", label, solver, f"{data['time_limit']:g} s",
                                 float(np.mean(gaps)) if gaps else None, len(gaps),
                                 reference))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.cvrptw", __doc__)
    parser.add_argument("--time-limit", type=float, default=10.0,
                        help="seconds per solver and instance")
    parser.add_argument("--solvers", default="ortools,pyvrp,nearest_neighbor",
                        help="comma-separated solver names")
    parser.add_argument("--random", type=int, default=4,
                        help="generated CVRPTW100 instances (gap to the best row)")
    parser.add_argument("--seed", type=int, default=0, help="solver seed")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="folder holding solomon/ (LKH-3's CVRPTW files and tours)")
    parser.add_argument("--out", type=Path, default=RESULTS / "cvrptw.md",
                        help="markdown report; the records go beside it as .json")
    args = parser.parse_args(argv)
    # Regression: --time-limit -1 was a traceback, --solvers bogus a table of error cells with
    # exit 0, a missing --data an empty Solomon table with exit 0
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    if not solvers:
        parser.error("--solvers: give at least one solver")
    check_solvers(parser, solvers, problem="cvrptw")
    if not args.time_limit > 0:
        parser.error("--time-limit: a positive number of seconds")
    if args.random < 0 or args.seed < 0:
        parser.error("--random, --seed: 0 or more")
    check_data(parser, args.data, "solomon/*.tour", "Solomon tours")
    check_out(parser, args.out)
    warm_up(solvers)
    prov = provenance("benchmarks.cvrptw", argv)
    info = machine_info()
    lines = ["# CVRPTW benchmark", "", *header_lines(prov),
             f"- Machine: {info['ram_gib']} GiB, CPU only; load average at start "
             f"{info['load_average_at_start']}",
             f"- Versions: {json.dumps(info['versions'])}",
             f"- Settings: {args.time_limit:g} s per solver and instance, solver seed "
             f"{args.seed}, solvers one after another, {WARMED}; OR-Tools = "
             "PATH_CHEAPEST_ARC + guided local search with a time dimension and droppable "
             "customers; PyVRP = its default iterated local search; nearest_neighbor = our "
             "time-oriented greedy (a floor).",
             "",
             "## Solomon 100-customer instances (LKH-3 CVRPTW files)", "",
             "Costs in SCALE units (FLOOR_2D on coordinates × 10, i.e. tenths of the "
             "literature's truncated distances); fleet = the file's VEHICLES. Reference: "
             "LKH-3's best tour, recomputed and checked here.", "",
             "| instance | vehicles | LKH-3 | "
             + " | ".join(f"{s} | gap %" for s in solvers) + " |",
             "|---|---:|---:|" + "---:|---:|" * len(solvers)]
    records: list[dict[str, Any]] = []
    gaps: dict[str, list[float]] = {s: [] for s in solvers}
    for inst, ref in solomon_set(args.data):
        cells = []
        for solver in solvers:
            print(f"{inst.name} {solver} ...", file=sys.stderr, flush=True)
            row = run(inst, solver, args.time_limit, args.seed)
            records.append({"set": "solomon", "instance": inst.name, "reference": ref, **row})
            cost, gap, value = _cell(row, ref)
            if value is not None:
                gaps[solver].append(value)
            cells += [cost, gap]
        lines.append(f"| {inst.name} | {inst.max_vehicles} | {ref} | {' | '.join(cells)} |")
    lines.append("| mean gap (feasible runs) | | | " + " | ".join(
        f"| {np.mean(g):.2f} ({len(g)})" if g else "| –" for g in gaps.values()) + " |")
    if args.random > 0:
        lines += ["", f"## Generated Solomon-style CVRPTW100 ({args.random} instances)", "",
                  "`training.instances.cvrptw_instance(seed)` with seeds "
                  f"{RANDOM_SEED_BASE}…{RANDOM_SEED_BASE + args.random - 1}: uniform unit-square "
                  "coordinates, demands 1–9, Set-X capacities, windows built around a feasible "
                  "reference solution, service 0.1, float Euclidean distances (= travel "
                  "times). Gap to the best feasible row of each instance.", "",
                  "| instance | " + " | ".join(f"{s} | gap %" for s in solvers) + " |",
                  "|---|" + "---:|---:|" * len(solvers)]
        rgaps: dict[str, list[float]] = {s: [] for s in solvers}
        for k in range(args.random):
            inst = cvrptw_instance(RANDOM_SEED_BASE + k, n=101)
            rows = []
            for solver in solvers:
                print(f"{inst.name} {solver} ...", file=sys.stderr, flush=True)
                rows.append(run(inst, solver, args.time_limit, args.seed))
            feasible = [r["cost"] for r in rows if r["feasible"]]
            best = min(feasible) if feasible else None
            cells = []
            for row in rows:
                records.append({"set": "generated", "instance": inst.name, "reference": best,
                                **row})
                cost, gap, value = _cell(row, best)
                if value is not None:
                    rgaps[row["solver"]].append(value)
                cells += [cost, gap]
            lines.append(f"| {inst.name} | {' | '.join(cells)} |")
        lines.append("| mean gap (feasible runs) | " + " | ".join(
            f"| {np.mean(g):.2f} ({len(g)})" if g else "| –" for g in rgaps.values()) + " |")
    data = {"machine": info, "time_limit": args.time_limit, "seed": args.seed,
            "records": records}
    write_table(args.out, lines, data, prov, headline_rows(data))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
