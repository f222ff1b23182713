"""CVRP with a tight fleet: each solver on CVRPLIB X instances whose ``max_vehicles`` is the
best-known plan's route count, at equal time limits and several seeds.

    python -m benchmarks.fleet --limits 2,10 --seeds 0,1,2

The X files state no fleet; the best-known plans use the fewest routes the capacity allows
or one more, so a cap at their count is tight. Solvers that cannot meet it answer with an
error, which the table shows. Writes results/fleet.md and results/fleet.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.routing import machine_info
from solvers.base import Budget
from solvers.errors import CosolveError
from solvers.routing.check import check_solution
from solvers.routing.io import load_instance, read_sol
from solvers.routing.problem import CVRPInstance
from solvers.routing.solve import solve

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cvrplib" / "X"
RESULTS = Path(__file__).resolve().parent / "results"
INSTANCES = "X-n101-k25,X-n176-k26,X-n289-k60"


def capped(name: str) -> tuple[CVRPInstance, int, float]:
    """The instance with ``max_vehicles`` = the best-known plan's route count, that count and
    the best-known cost."""
    inst = load_instance(DATA / f"{name}.vrp")
    routes, bks = read_sol(DATA / f"{name}.sol", depot=inst.depot)
    assert isinstance(inst, CVRPInstance) and bks is not None
    fleet = len(routes)
    return (CVRPInstance(coords=inst.coords, demands=inst.demands, capacity=inst.capacity,
                         depot=inst.depot, distance=inst.distance, name=inst.name,
                         max_vehicles=fleet), fleet, bks)


def run(inst: CVRPInstance, solver: str, limit: float, seed: int) -> dict[str, Any]:
    """One solve, its cost checked independently; an error is a row too."""
    t0 = time.perf_counter()
    try:
        sol = solve(inst, solver, Budget(time_limit=limit, seed=seed))
    except CosolveError as err:
        return {"error": str(err)[:160], "wall_s": round(time.perf_counter() - t0, 2)}
    routes = [r for r in sol.routes if r]
    violations = check_solution(inst, routes)
    return {"cost": inst.cost(routes), "routes": len(routes), "feasible": not violations,
            "wall_s": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", default=INSTANCES)
    parser.add_argument("--solvers", default="ils,pyvrp,ortools")
    parser.add_argument("--limits", default="2,10")
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args(argv)
    names = [x for x in args.instances.split(",") if x]
    solvers = [x for x in args.solvers.split(",") if x]
    limits = [float(x) for x in args.limits.split(",")]
    seeds = [int(x) for x in args.seeds.split(",")]
    started = datetime.now(UTC)
    rows = []
    for name in names:
        inst, fleet, bks = capped(name)
        for limit in limits:
            for solver in solvers:
                for seed in seeds:
                    r = run(inst, solver, limit, seed)
                    r.update(instance=name, fleet=fleet, bks=bks, solver=solver,
                             limit=limit, seed=seed)
                    print(json.dumps(r), flush=True)
                    rows.append(r)
    lines = [
        "# CVRP with a tight fleet",
        "",
        f"- Command: `python -m benchmarks.fleet {' '.join(argv or sys.argv[1:])}`",
        f"- Started: {started:%Y-%m-%d %H:%M} UTC; finished: {datetime.now(UTC):%H:%M} UTC",
        f"- Machine: {json.dumps(machine_info())}; COSOLVE_TORCH_THREADS="
        f"{os.environ.get('COSOLVE_TORCH_THREADS', '1')}",
        "- Instances: CVRPLIB X with `max_vehicles` = the best-known plan's route count; gap "
        "to the best-known cost; seeds as listed; one solve at a time in one process",
        "",
        "| instance (fleet) | time limit (s) | solver | mean gap % | per seed gap % | "
        "routes | errors |",
        "|---|---:|---|---:|---|---|---:|",
    ]
    for name in names:
        for limit in limits:
            for solver in solvers:
                mine = [r for r in rows if r["instance"] == name and r["limit"] == limit
                        and r["solver"] == solver]
                ok = [r for r in mine if "cost" in r and r["feasible"]]
                gaps = [100 * (r["cost"] / r["bks"] - 1) for r in ok]
                mean = f"{sum(gaps) / len(gaps):.2f}" if gaps else "–"
                per = ", ".join(f"{g:.2f}" for g in gaps) or "–"
                used = ", ".join(str(r["routes"]) for r in ok) or "–"
                errors = len(mine) - len(ok)
                lines.append(f"| {name} ({mine[0]['fleet']}) | {limit:g} | {solver} | {mean} "
                             f"| {per} | {used} | {errors} |")
    errs = [r for r in rows if "error" in r]
    if errs:
        lines += ["", "Errors:", ""] + [f"- {r['instance']} {r['solver']} {r['limit']:g} s "
                                        f"seed {r['seed']}: {r['error']}" for r in errs]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "fleet.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "fleet.json").write_text(json.dumps(rows, indent=1) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
