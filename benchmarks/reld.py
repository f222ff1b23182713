"""ReLD benchmark: the shipped weights against OR-Tools at equal time, gaps to PyVRP.

Sets (fixed seeds): 128 uniform TSP100 and 128 uniform CVRP100 instances (CVRP: demands 1–9,
Set-X capacities as in training), CVRPLIB Set X instances with n ≤ 300 from ../shared/data
(gap to the best-known values), a time profile (2 and 4 s on the first 32 instances of each
100-node set), and TSP scaling at 200/500/1,000 nodes. Every instance is
solved by ``reld`` and by ``ortools`` with the same time limit, one after the other, through
the same ``solve`` the service uses. Reference costs on the uniform sets come from PyVRP with
a stated time limit; they are computed once and cached next to the results.

    python -m benchmarks.reld            # → benchmarks/results/reld.md
    python -m benchmarks.reld --phase references   # only compute/cache the references
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.routing import machine_info
from solvers.base import Budget
from solvers.routing.io import load_instance, read_sol
from solvers.routing.problem import CVRPInstance, TSPInstance
from solvers.routing.solve import solve
from training.instances import random_cvrp, random_tsp

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DATA = REPO.parent / "shared" / "data"
SEED = 20260101
REFERENCE_LIMIT = {"tsp": 2.0, "cvrp": 4.0}


def uniform(problem: str, n: int, count: int, seed: int) -> list[TSPInstance | CVRPInstance]:
    rng = np.random.default_rng([seed, n, 1 if problem == "tsp" else 2])
    out: list[TSPInstance | CVRPInstance] = []
    for i in range(count):
        if problem == "tsp":
            out.append(TSPInstance(name=f"tsp{n}-{i}", coords=random_tsp(rng, n)))
        else:
            xy, dem, cap = random_cvrp(rng, n)
            out.append(CVRPInstance(name=f"cvrp{n}-{i}", coords=xy, demands=dem, capacity=cap))
    return out


def references(problem: str, instances: list[Any], seed: int) -> list[float]:
    """PyVRP costs, cached in benchmarks/results/reld_reference_<problem>.json."""
    path = RESULTS / f"reld_reference_{problem}.json"
    cache = json.loads(path.read_text()) if path.exists() else {}
    key = f"seed{seed}-n{instances[0].n}-count{len(instances)}-pyvrp{REFERENCE_LIMIT[problem]}"
    if key not in cache:
        costs = []
        for k, inst in enumerate(instances):
            costs.append(solve(inst, "pyvrp", Budget(time_limit=REFERENCE_LIMIT[problem])).cost)
            print(f"  reference {problem} {k + 1}/{len(instances)}", file=sys.stderr, flush=True)
        cache[key] = costs
        path.write_text(json.dumps(cache))
    return cache[key]


def run_pair(instances: list[Any], time_limit: float) -> dict[str, list[dict[str, Any]]]:
    """reld and ortools on every instance with the same time limit."""
    rows: dict[str, list[dict[str, Any]]] = {"reld": [], "ortools": []}
    for inst in instances:
        for solver in ("reld", "ortools"):
            t0 = time.perf_counter()
            sol = solve(inst, solver, Budget(time_limit=time_limit))
            rows[solver].append({"cost": sol.cost, "feasible": sol.feasible,
                                 "wall": time.perf_counter() - t0})
    return rows


def summarize(rows: list[dict[str, Any]], refs: list[float] | None) -> dict[str, Any]:
    costs = np.array([r["cost"] for r in rows])
    out: dict[str, Any] = {"mean_cost": float(costs.mean()),
                           "feasible": sum(r["feasible"] for r in rows), "runs": len(rows),
                           "mean_wall": float(np.mean([r["wall"] for r in rows]))}
    if refs is not None:
        out["gap"] = float(np.mean((costs - np.array(refs)) / np.array(refs)) * 100)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=128)
    parser.add_argument("--time-limit", type=float, default=1.0,
                        help="seconds per instance for both solvers (100-node sets)")
    parser.add_argument("--more-limits", default="2,4",
                        help="further time limits (s) for a time profile on the 100-node sets")
    parser.add_argument("--more-count", type=int, default=32,
                        help="instances (the first ones of each set) in the time profile")
    parser.add_argument("--x-time-limit", type=float, default=5.0,
                        help="seconds per Set X instance; 0 skips Set X")
    parser.add_argument("--scaling", default="200,500,1000",
                        help="TSP sizes of the scaling table; empty skips it")
    parser.add_argument("--scaling-count", type=int, default=4)
    parser.add_argument("--problems", default="tsp,cvrp",
                        help="which 100-node sets to run (tsp, cvrp or both)")
    parser.add_argument("--phase", choices=["all", "references"], default="all")
    parser.add_argument("--out", type=Path, default=RESULTS / "reld.md")
    args = parser.parse_args(argv)
    problems = [p for p in ("tsp", "cvrp") if p in args.problems.split(",")]
    started = datetime.now(UTC).isoformat(timespec="seconds")
    sets = {p: uniform(p, 100, args.count, SEED) for p in ("tsp", "cvrp")}
    refs = {p: references(p, sets[p], SEED) for p in sets}
    if args.phase == "references":
        return 0
    manifest = json.loads((REPO / "weights" / "MANIFEST.json").read_text())
    lines = ["# ReLD benchmark", "",
             f"- Command: `python -m benchmarks.reld {' '.join(argv or sys.argv[1:])}`".rstrip(),
             f"- Started: {started} (UTC)"]
    info = machine_info()
    lines.append(f"- Machine: {info['cpu']}, {info['cores']} cores, {info['ram_gib']} GiB, "
                 f"CPU only (no GPU); load average at start {info['load_average_at_start']}")
    for entry in manifest.get("checkpoints", []):
        if entry.get("solver") == "reld":
            lines.append(f"- Weights `{entry['file']}`: {entry['training_steps']} steps, "
                         f"{entry['cpu_minutes']} CPU min, {entry['gpu_minutes']} GPU min; "
                         f"validation gap {entry['validation']['gap_percent']}% "
                         f"({entry['validation']['set']}, {entry['validation']['reference']})")
    lines += [f"- Seed {SEED}; both solvers get the same time limit per instance and run one "
              "after the other; costs are recomputed by the instance (float Euclidean on the "
              "uniform sets, EUC_2D on Set X).", "",
              "## Uniform 100-node sets", "",
              f"Reference: PyVRP 0.14, {REFERENCE_LIMIT['tsp']:g} s per TSP and "
              f"{REFERENCE_LIMIT['cvrp']:g} s per CVRP instance.", "",
              "| set | solver | time limit (s) | mean cost | gap to PyVRP % | mean wall (s) "
              "| feasible |", "|---|---|---:|---:|---:|---:|---:|"]
    for problem in problems:
        print(f"{problem}100 ...", file=sys.stderr, flush=True)
        rows = run_pair(sets[problem], args.time_limit)
        for solver in ("reld", "ortools"):
            s = summarize(rows[solver], refs[problem])
            lines.append(f"| {problem.upper()}100 ×{args.count} | {solver} | {args.time_limit:g} "
                         f"| {s['mean_cost']:.4f} | {s['gap']:.2f} | {s['mean_wall']:.2f} "
                         f"| {s['feasible']}/{s['runs']} |")
        wins = sum(a["cost"] < b["cost"] for a, b in zip(rows["reld"], rows["ortools"],
                                                        strict=True))
        lines.append(f"| | reld better than ortools on | | {wins}/{args.count} instances "
                     "| | | |")
    more = [float(v) for v in args.more_limits.split(",") if v]
    if more:
        count = min(args.more_count, args.count)
        lines += ["", f"## Time profile: the first {count} instances of each set", "",
                  "The same solvers with longer limits (the 1 s rows above are on all "
                  f"{args.count}).", "",
                  "| set | time limit (s) | reld gap % | ortools gap % | reld better on "
                  "| reld mean wall (s) |", "|---|---:|---:|---:|---:|---:|"]
        for problem in problems:
            for limit in more:
                print(f"{problem}100 at {limit:g} s ...", file=sys.stderr, flush=True)
                rows = run_pair(sets[problem][:count], limit)
                r = summarize(rows["reld"], refs[problem][:count])
                o = summarize(rows["ortools"], refs[problem][:count])
                wins = sum(a["cost"] < b["cost"] for a, b in zip(rows["reld"], rows["ortools"],
                                                                strict=True))
                lines.append(f"| {problem.upper()}100 ×{count} | {limit:g} | {r['gap']:.2f} "
                             f"| {o['gap']:.2f} | {wins}/{count} | {r['mean_wall']:.2f} |")
    if args.x_time_limit > 0:
        lines += ["", f"## CVRPLIB Set X, n ≤ 300 ({args.x_time_limit:g} s each)", "",
                  "| instance | n | BKS | reld | gap % | ortools | gap % |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        gaps: dict[str, list[float]] = {"reld": [], "ortools": []}
        for path in sorted((DATA / "cvrplib" / "X").glob("*.vrp")):
            inst = load_instance(path)
            if inst.n > 300:
                continue
            _, bks = read_sol(path.with_suffix(".sol"))
            print(f"{inst.name} ...", file=sys.stderr, flush=True)
            rows = run_pair([inst], args.x_time_limit)
            cells = []
            for solver in ("reld", "ortools"):
                cost = rows[solver][0]["cost"]
                gap = (cost - bks) / bks * 100
                gaps[solver].append(gap)
                cells += [f"{cost:.0f}", f"{gap:.2f}"]
            lines.append(f"| {inst.name} | {inst.n} | {bks:.0f} | {' | '.join(cells)} |")
        lines.append(f"| mean | | | | {np.mean(gaps['reld']):.2f} | | "
                     f"{np.mean(gaps['ortools']):.2f} |")
    sizes = [int(v) for v in args.scaling.split(",") if v]
    if sizes:
        lines += ["", "## TSP scaling (uniform; gap of reld relative to ortools at equal time)", "",
                  "| n | instances | time limit (s) | reld mean cost | ortools mean cost "
                  "| reld vs ortools % | reld wall (s) |", "|---:|---:|---:|---:|---:|---:|---:|"]
        for n in sizes:
            limit = max(1.0, n / 100)
            print(f"scaling {n} ...", file=sys.stderr, flush=True)
            rows = run_pair(uniform("tsp", n, args.scaling_count, SEED), limit)
            r, o = summarize(rows["reld"], None), summarize(rows["ortools"], None)
            ratio = (r["mean_cost"] / o["mean_cost"] - 1) * 100
            lines.append(f"| {n} | {args.scaling_count} | {limit:g} | {r['mean_cost']:.4f} | "
                         f"{o['mean_cost']:.4f} | {ratio:+.2f} | {r['mean_wall']:.2f} |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
