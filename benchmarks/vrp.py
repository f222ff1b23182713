"""VRP benchmark: the VROOM-format solvers at equal time on the literature's sets, as VROOM
documents, and the memory a 10,000-task document with a matrix takes.

    python -m benchmarks.vrp [--time-limit 5] [--solvers vroom,ortools,pyvrp,ils]
        [--sets solomon,homberger,lilim,mdvrp,solomon_hetero] [--homberger c1_2_1,...]
        [--memory-tasks 10000] [--memory-solvers vroom,pyvrp] [--memory-limit 30]
        [--out benchmarks/results/vrp.md]

Every instance is read by ``solvers.routing.vrp.instances`` into the VROOM document a user
would send (Solomon and Gehring-Homberger with DIMACS rounding, travel times in tenths; Li
and Lim and Cordeau rounded to hundredths), parsed, and solved through
``solvers.routing.vrp.solve.solve_vrp``, the path of the API and the CLI: the plan is checked
by the independent checker and the cost is the checker's, never a solver's. Costs are shown in
the literature's distance units (the document's cost divided by its scale). Gaps: to SINTEF's
hierarchical best known (fewest vehicles, then distance: a distance-only search may beat its
distance with more routes, a negative gap) and, where the data README lists one, to the
distance-only best known under DIMACS rounding, which is exact for these documents. The
heterogeneous variant (Solomon with three vehicle classes and fixed costs) has no reference:
solvers are compared with each other. CVRPLIB's Set X (plain CVRP, EUC_2D matrix with the
coordinates beside it, against the .sol costs) is the set ``ils`` takes. A solver that does
not take a set's features is shown as refused. The memory figure is the peak resident set
size of a fresh process that builds a 10,000-job problem on a random matrix (in memory, not
through JSON) and solves it, read from /proc while it runs.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    RESULTS,
    check_out,
    header_lines,
    headline,
    machine_info,
    numbers,
    parser_for,
    provenance,
    write_table,
)
from solvers.contract import Budget
from solvers.errors import CosolveError
from solvers.routing.vrp import ils as vrp_ils
from solvers.routing.vrp.instances import BenchInstance, gap, load
from solvers.routing.vrp.model import Job, Matrices, Vehicle, VrpProblem
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.solve import VRP_SOLVERS, solve_vrp

SETS = {
    "solomon": ["C101", "C201", "R101", "R201", "RC101", "RC201"],
    "homberger": ["c1_2_1", "r1_2_1", "rc2_2_1", "c1_4_1", "r2_4_1"],
    "lilim": ["lc101", "lc201", "lr101", "lr201", "lrc101", "lrc201"],
    "mdvrp": ["p01", "p02", "p03", "p04", "p05", "p06"],
    "solomon_hetero": ["C101", "C201", "R101", "R201", "RC101", "RC201"],
    "cvrp_x": ["X-n101-k25", "X-n120-k6", "X-n139-k10"],
}
SET_TITLES = {"solomon": "Solomon 100", "homberger": "Gehring-Homberger 200/400",
              "lilim": "Li & Lim 100 (PDPTW)", "mdvrp": "Cordeau MDVRP p01-p06",
              "solomon_hetero": "Solomon 100, mixed fleet",
              "cvrp_x": "CVRPLIB X 101-139 (CVRP)"}
MACHINE_NOTE = "2 cores, shared with other work"


def run_one(bench: BenchInstance, solver: str, limit: float) -> dict[str, Any]:
    """One solve through ``solve_vrp``; a refusal or failure is recorded, not raised."""
    problem = parse_document(bench.document)
    row: dict[str, Any] = {"set": bench.family, "instance": bench.name, "solver": solver,
                           "tasks": problem.task_count}
    t0 = time.perf_counter()
    try:
        result = solve_vrp(problem, solver, Budget(time_limit=limit), seed=0)
    except CosolveError as exc:
        row.update(error=f"{type(exc).__name__}: {exc}", time_s=time.perf_counter() - t0)
        return row
    cost = result.check.cost / bench.scale
    row.update(assigned=problem.task_count - len(result.plan.unassigned),
               routes=len(result.plan.routes), cost=round(cost, 2),
               gap=gap(cost, bench.bks), gap_distance_only=gap(cost, bench.bks_distance_only),
               time_s=round(time.perf_counter() - t0, 2),
               solve_s=round(result.elapsed_s, 2))
    return row


def memory_problem(tasks: int, seed: int = 0) -> Any:
    """A CVRP of ``tasks`` jobs on a random 50 km square, travel times at 10 m/s as the
    matrix, 1 to 9 units each, vehicles of capacity 100 (about 20 jobs a route) at the
    centre, 10% more of them than the load needs."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 50_000, size=(tasks + 1, 2))
    xy[0] = 25_000
    durations = np.empty((tasks + 1, tasks + 1), dtype=np.int64)
    for start in range(0, tasks + 1, 1000):
        block = xy[start:start + 1000]
        d = np.sqrt(((block[:, None, :] - xy[None, :, :]) ** 2).sum(axis=2)) / 10.0
        durations[start:start + 1000] = np.floor(d + 0.5)
    demand = rng.integers(1, 10, size=tasks)
    jobs = tuple(Job(id=k + 1, location_index=k + 1, delivery=(int(demand[k]),), pickup=(0,))
                 for k in range(tasks))
    fleet = int(1.1 * int(demand.sum()) / 100) + 1
    vehicles = tuple(Vehicle(id=v + 1, start_index=0, end_index=0, capacity=(100,))
                     for v in range(fleet))
    return VrpProblem(jobs=jobs, shipments=(), vehicles=vehicles,
                      matrices={"car": Matrices(durations=durations)}, amount_size=1)


def memory_child(solver: str, tasks: int, limit: float) -> dict[str, Any]:
    """Run in a fresh process: build, solve, report the peak RSS (MiB) after building and
    after solving."""
    t0 = time.perf_counter()
    problem = memory_problem(tasks)
    built_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out: dict[str, Any] = {"solver": solver, "tasks": tasks, "limit_s": limit,
                           "build_s": round(build_s, 1), "rss_built_mib": round(built_mib)}
    try:
        result = solve_vrp(problem, solver, Budget(time_limit=limit), seed=0)
        out.update(assigned=tasks - len(result.plan.unassigned),
                   routes=len(result.plan.routes), cost=result.check.cost)
    except CosolveError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["time_s"] = round(time.perf_counter() - t0, 1)
    out["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return out


def _peak_kib(pid: int) -> int | None:
    """The process's peak resident set (VmHWM) so far, in KiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def run_memory(solver: str, tasks: int, limit: float, wall: float) -> dict[str, Any]:
    """``memory_child`` in a fresh, niced process (so one solver's peak is not another's),
    its peak RSS read from /proc while it runs; stopped after ``wall`` seconds (a solver
    that does not keep its time limit on this size), with the peak reached by then."""
    cmd = ["nice", "-n", "10", sys.executable, "-m", "benchmarks.vrp", "--memory-child",
           solver, "--memory-tasks", str(tasks), "--memory-limit", str(limit)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    started, peak = time.perf_counter(), 0
    while proc.poll() is None and time.perf_counter() - started < wall:
        peak = max(peak, _peak_kib(proc.pid) or 0)
        time.sleep(0.5)
    if proc.poll() is None:
        proc.kill()
        proc.communicate()
        return {"solver": solver, "tasks": tasks, "limit_s": limit,
                "peak_rss_mib": round(peak / 1024), "time_s": round(wall),
                "error": f"stopped after {wall:g} s of wall time (no answer by then)"}
    out, err = proc.communicate()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"solver": solver, "tasks": tasks, "limit_s": limit,
                "error": (err.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def summarise(rows: list[dict[str, Any]], solvers: list[str]) -> list[dict[str, Any]]:
    """Per set and solver: instances solved, tasks assigned, mean cost and gaps, mean time."""
    out = []
    for family in SETS:
        for solver in solvers:
            mine = [r for r in rows if r["set"] == family and r["solver"] == solver]
            if not mine:
                continue
            ok = [r for r in mine if "error" not in r]
            out.append({
                "set": family, "solver": solver, "instances": len(mine), "solved": len(ok),
                "assigned": sum(r["assigned"] for r in ok), "tasks": sum(r["tasks"] for r in ok),
                "mean_cost": _mean([r["cost"] for r in ok]),
                "mean_gap": _mean([r["gap"] for r in ok if r["gap"] is not None]),
                "mean_gap_distance_only": _mean([r["gap_distance_only"] for r in ok
                                                 if r["gap_distance_only"] is not None]),
                "mean_time_s": _mean([r["time_s"] for r in ok]),
                "refused": next((r["error"] for r in mine if "error" in r), None)})
    return out


def _refusal(error: str | None) -> str:
    """A registry refusal in a few words: the features the solver does not take."""
    match = re.search(r"problems with ([^;]+);", error or "")
    return f"refused: takes no {match.group(1)}" if match else str(error)[:90]


def table(rows: list[dict[str, Any]], summary: list[dict[str, Any]],
          memory: list[dict[str, Any]], limit: float, prov: dict[str, Any]) -> list[str]:
    lines = ["# VRP solvers on VROOM documents at equal time", "", *header_lines(prov),
             f"- Machine load: {MACHINE_NOTE}; every solve at {limit:g} s, one after another; "
             "vroom runs 2 threads, the others 1",
             "- Time: wall time of the whole `solve_vrp` call (solve, check, reasons, "
             "output); cost: the checker's, in the literature's distance units", "",
             "## Summary (mean over the set's instances)", "",
             "| set | solver | solved | tasks assigned | mean cost | gap % (SINTEF / best "
             "public) | gap % (distance-only, DIMACS) | mean time s |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for s in summary:
        if s["solved"] == 0:
            lines.append(f"| {SET_TITLES[s['set']]} | {s['solver']} | 0/{s['instances']} | – "
                         f"| {_refusal(s['refused'])} | | | |")
            continue
        lines.append(
            f"| {SET_TITLES[s['set']]} | {s['solver']} | {s['solved']}/{s['instances']} "
            f"| {s['assigned']}/{s['tasks']} | {_fmt(s['mean_cost'])} | {_fmt(s['mean_gap'])} "
            f"| {_fmt(s['mean_gap_distance_only'])} | {_fmt(s['mean_time_s'])} |")
    lines += ["", "## Per instance", "",
              "| set | instance | solver | assigned | routes | cost | gap % | gap % "
              "(dist.-only) | time s |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['set']} | {r['instance']} | {r['solver']} | – | – | "
                         f"{_refusal(r['error'])} | | | {_fmt(r['time_s'])} |")
            continue
        lines.append(f"| {r['set']} | {r['instance']} | {r['solver']} "
                     f"| {r['assigned']}/{r['tasks']} | {r['routes']} | {r['cost']:.2f} "
                     f"| {_fmt(r['gap'])} | {_fmt(r['gap_distance_only'])} | {r['time_s']:.2f} |")
    if memory:
        n = memory[0]["tasks"]
        lines += ["", f"## Memory: {n:,} tasks with a matrix", "",
                  "A fresh process per solver builds the problem (a random 50 km square, an "
                  f"int64 travel-time matrix of {(n + 1) ** 2 * 8 / 2**20:,.0f} MiB, vehicles "
                  "of capacity 100 for jobs of 1 to 9) and solves it; peak RSS of the whole "
                  "process, read from /proc while it runs. Time: building, solving, checking "
                  "and the reasons, so a solver's start-up that its time limit cannot "
                  "interrupt shows here; a run still going at the wall limit is stopped, with "
                  "the peak it had reached.",
                  "", "| solver | tasks | limit s | RSS after building MiB | peak RSS MiB | "
                  "time s | assigned | routes |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for m in memory:
            if "error" in m and "rss_built_mib" not in m:
                lines.append(f"| {m['solver']} | {m['tasks']} | {m['limit_s']:g} | – "
                             f"| {m.get('peak_rss_mib', '–')} | {m.get('time_s', '–')} "
                             f"| {m['error'][:80]} | |")
                continue
            lines.append(f"| {m['solver']} | {m['tasks']} | {m['limit_s']:g} "
                         f"| {m['rss_built_mib']} | {m['peak_rss_mib']} | {m['time_s']} "
                         f"| {m.get('assigned', m.get('error', '–'))} | {m.get('routes', '–')} |")
    return lines


#: The reference of each set's headline gap.
REFERENCES = {"solomon": "distance-only BKS, DIMACS rounding",
              "homberger": "distance-only BKS, DIMACS rounding",
              "lilim": "SINTEF BKS (fewest vehicles first)",
              "mdvrp": "best public (Cordeau .res, vroom-scripts)",
              "cvrp_x": "CVRPLIB .sol BKS"}


def headlines(summary: list[dict[str, Any]], limit: float) -> list[dict[str, Any]]:
    """The leaderboard rows: each solver's mean gap per set with a reference (the
    distance-only one where the set has it, which a distance-minimising search is judged
    by); the mixed-fleet variant has none and gives no row."""
    out = []
    for s in summary:
        if not s["solved"] or s["set"] not in REFERENCES:
            continue
        distance_only = s["mean_gap_distance_only"]
        out.append(headline("VRP", SET_TITLES[s["set"]], s["solver"], f"{limit:g} s",
                            distance_only if distance_only is not None else s["mean_gap"],
                            s["solved"], REFERENCES[s["set"]]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.vrp", __doc__)
    parser.add_argument("--time-limit", default="5", help="seconds per solve")
    parser.add_argument("--solvers", default="vroom,ortools,pyvrp,ils")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--homberger", default=",".join(SETS["homberger"]),
                        help="Gehring-Homberger instances to run")
    parser.add_argument("--memory-tasks", type=int, default=10_000)
    parser.add_argument("--memory-solvers", default="vroom,pyvrp",
                        help="solvers whose peak memory is measured ('' for none)")
    parser.add_argument("--memory-limit", type=float, default=30.0,
                        help="seconds per memory solve")
    parser.add_argument("--memory-wall", type=float, default=300.0,
                        help="wall seconds after which a memory run is stopped")
    parser.add_argument("--memory-child", default=None, help=argparse_hidden())
    parser.add_argument("--out", type=Path, default=RESULTS / "vrp.md")
    args = parser.parse_args(argv)
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child, args.memory_tasks, args.memory_limit)))
        return 0
    limit = numbers(parser, "--time-limit", args.time_limit)[0]
    solvers = [s for s in args.solvers.split(",") if s]
    unknown = [s for s in solvers if s not in VRP_SOLVERS]
    solvers = [s for s in solvers if s in VRP_SOLVERS]
    if unknown:
        print(f"not registered, skipped: {', '.join(unknown)}", file=sys.stderr)
    sets = [s for s in args.sets.split(",") if s]
    bad = [s for s in sets if s not in SETS]
    if bad:
        parser.error(f"--sets: unknown {bad}; known: {', '.join(SETS)}")
    check_out(parser, args.out)
    prov = provenance("benchmarks.vrp", argv)
    prov["machine"] = {**prov["machine"], **machine_info(("ortools", "pyvrp", "pyvroom",
                                                          "numpy")), "note": MACHINE_NOTE}
    _warm(solvers)
    rows = []
    for family in sets:
        names = args.homberger.split(",") if family == "homberger" else SETS[family]
        for name in names:
            bench = load(family, name)
            for solver in solvers:
                row = run_one(bench, solver, limit)
                rows.append(row)
                print(json.dumps(row), flush=True)
    memory = [run_memory(s, args.memory_tasks, args.memory_limit, args.memory_wall)
              for s in args.memory_solvers.split(",") if s]
    for m in memory:
        print(json.dumps(m), flush=True)
    summary = summarise(rows, solvers)
    heads = headlines(summary, limit)
    write_table(args.out, table(rows, summary, memory, limit, prov),
                {"rows": rows, "summary": summary, "memory": memory}, prov, heads)
    print(f"wrote {args.out}")
    return 0


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


def _warm(solvers: list[str]) -> None:
    """Import each solver's library before the first timed solve (outside every clock)."""
    for s in solvers:
        if s == "pyvrp":
            import pyvrp  # noqa: F401
        elif s == "ortools":
            from ortools.constraint_solver import pywrapcp  # noqa: F401
        elif s == "vroom":
            import vroom  # noqa: F401
        elif s == "ils":
            vrp_ils.warm_up()


if __name__ == "__main__":
    raise SystemExit(main())
