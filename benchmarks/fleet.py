"""CVRP with a tight fleet: each solver on CVRPLIB X instances whose ``max_vehicles`` is the
best-known plan's route count, at equal time limits and several seeds.

    python -m benchmarks.fleet --limits 2,10 --seeds 0,1,2
    python -m benchmarks.fleet --instances X-n101-k25 --solvers ils --limits 1 --seeds 0 \
        --out /tmp/fleet.md

The X files state no fleet; the best-known plans use the fewest routes the capacity allows
or one more, so a cap at their count is tight. Solvers that cannot meet it answer with an
error, which the table shows. Each solver is warmed up before its first timed solve. Writes
--out (results/fleet.md by default) and its .json twin.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DATA,
    RESULTS,
    WARMED,
    check_out,
    check_solvers,
    header_lines,
    headline,
    integers,
    machine_info,
    numbers,
    parser_for,
    provenance,
    warm_up,
    write_table,
)
from solvers.contract import Budget
from solvers.errors import CosolveError
from solvers.routing.check import check_solution
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_sol
from solvers.routing.problem import CVRPInstance
from solvers.routing.solve import solve

INSTANCES = "X-n101-k25,X-n176-k26,X-n289-k60"


def capped(folder: Path, name: str, fewer: int = 0) -> tuple[CVRPInstance, int, float]:
    """The instance with ``max_vehicles`` = the best-known plan's route count less
    ``fewer``, that cap and the best-known cost; ``folder`` holds CVRPLIB's X files."""
    inst = load_instance(folder / f"{name}.vrp")
    routes, bks = read_sol(folder / f"{name}.sol", depot=inst.depot)
    assert isinstance(inst, CVRPInstance) and bks is not None
    fleet = len(routes) - fewer
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


def headline_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean gap to the best-known cost per solver and time limit over every instance and
    seed, feasible runs only."""
    out = []
    for limit in dict.fromkeys(r["limit"] for r in rows):
        for solver in dict.fromkeys(r["solver"] for r in rows):
            ok = [r for r in rows if r["limit"] == limit and r["solver"] == solver
                  and "cost" in r and r["feasible"]]
            gaps = [100 * (r["cost"] / r["bks"] - 1) for r in ok]
            out.append(headline("CVRP", "CVRPLIB X, fleet capped", solver, f"{limit:g} s",
                                sum(gaps) / len(gaps) if gaps else None, len(gaps),
                                "best-known"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.fleet", __doc__)
    parser.add_argument("--instances", default=INSTANCES,
                        help="comma-separated CVRPLIB X names (each needs its .vrp and .sol)")
    parser.add_argument("--solvers", default="ils,pyvrp,ortools",
                        help="comma-separated solver names")
    parser.add_argument("--limits", default="2,10", help="time limits in seconds")
    parser.add_argument("--seeds", default="0,1,2", help="solver seeds")
    parser.add_argument("--fewer", type=int, default=0,
                        help="cap the fleet this many vehicles below the best-known plan's "
                             "route count (that plan is then out of reach; the gap stays to "
                             "its cost)")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="folder holding cvrplib/X/")
    parser.add_argument("--out", type=Path, default=RESULTS / "fleet.md",
                        help="markdown table; the rows go beside it as .json")
    args = parser.parse_args(argv)
    # Regression: bad options and missing files were tracebacks; now one line, exit 2, and
    # before anything runs
    names = [x.strip() for x in args.instances.split(",") if x.strip()]
    solvers = [x.strip() for x in args.solvers.split(",") if x.strip()]
    limits = numbers(parser, "--limits", args.limits)
    seeds = integers(parser, "--seeds", args.seeds)
    if not names or not solvers:
        parser.error("--instances, --solvers: give at least one")
    if args.fewer < 0:
        parser.error(f"--fewer: must be 0 or more, got {args.fewer}")
    check_solvers(parser, solvers, problem="cvrp")
    folder = args.data / "cvrplib" / "X"
    missing = [f"{n}{ext}" for n in names for ext in (".vrp", ".sol")
               if not (folder / f"{n}{ext}").is_file()]
    if missing:
        parser.error(f"--instances: no {', '.join(missing)} in {folder}")
    check_out(parser, args.out)
    warm_up(solvers)
    prov = provenance("benchmarks.fleet", argv)
    rows = []
    for name in names:
        inst, fleet, bks = capped(folder, name, args.fewer)
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
        *header_lines(prov),
        f"- Finished: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine "
        f"{json.dumps(machine_info())}; COSOLVE_TORCH_THREADS="
        f"{os.environ.get('COSOLVE_TORCH_THREADS', '1')}",
        "- Instances: CVRPLIB X with `max_vehicles` = the best-known plan's route count"
        + (f" less {args.fewer} (the best-known plan does not fit)" if args.fewer else "")
        + "; gap to the best-known cost; seeds as listed; one solve at a time in one process, "
        f"{WARMED}",
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
    write_table(args.out, lines, {"rows": rows}, prov, headline_rows(rows))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
