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

import json
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    RESULTS,
    WARMED,
    check_out,
    command,
    integers,
    numbers,
    parser_for,
    warm_up,
    writes_results,
)
from benchmarks.routing import machine_info
from solvers.contract import Budget
from solvers.routing.generate import random_cvrp, random_tsp
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_sol
from solvers.routing.problem import CVRPInstance, TSPInstance
from solvers.routing.solve import solve

REPO = Path(__file__).resolve().parents[1]
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


def _cache_key(problem: str, seed: int, n: int, count: int) -> str:
    return f"seed{seed}-n{n}-count{count}-pyvrp{REFERENCE_LIMIT[problem]}"


def cached_references(problem: str, n: int, count: int, seed: int) -> list[float] | None:
    """The cached PyVRP costs of the first ``count`` instances of ``uniform(problem, n, ...,
    seed)``: a key with at least as many instances serves, since a set's first instances do
    not depend on its size (QA sweep: a --count 2 run computed fresh, noisy references
    instead of reading the first 2 of the published count128)."""
    path = RESULTS / f"reld_reference_{problem}.json"
    cache = json.loads(path.read_text()) if path.exists() else {}
    exact = cache.get(_cache_key(problem, seed, n, count))
    if exact is not None:
        return list(exact)
    limit = re.escape(str(REFERENCE_LIMIT[problem]))
    pattern = re.compile(rf"seed{seed}-n{n}-count(\d+)-pyvrp{limit}")
    larger = sorted((int(m.group(1)), key) for key in cache
                    if (m := pattern.fullmatch(key)) and int(m.group(1)) >= count)
    return list(cache[larger[0][1]][:count]) if larger else None


def references(problem: str, instances: list[Any], seed: int, write: bool) -> list[float]:
    """PyVRP costs, cached in benchmarks/results/reld_reference_<problem>.json; computed when
    no cached key covers ``instances``, and stored only when ``write`` (a run that publishes
    into benchmarks/results, see benchmarks.common.writes_results: QA sweep)."""
    n = instances[0].n
    cached = cached_references(problem, n, len(instances), seed)
    if cached is not None:
        return cached
    costs = []
    for k, inst in enumerate(instances):
        costs.append(solve(inst, "pyvrp", Budget(time_limit=REFERENCE_LIMIT[problem])).cost)
        print(f"  reference {problem} {k + 1}/{len(instances)}", file=sys.stderr, flush=True)
    if write:
        path = RESULTS / f"reld_reference_{problem}.json"
        cache = json.loads(path.read_text()) if path.exists() else {}
        cache[_cache_key(problem, seed, n, len(instances))] = costs
        path.write_text(json.dumps(cache))
    else:
        print(f"  {problem} references computed for this run only (--out is outside "
              f"{RESULTS}, so the cache is left as it was)", file=sys.stderr, flush=True)
    return costs


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


def set_x(data: Path) -> list[Path]:
    """CVRPLIB Set X files with n ≤ 300 (and a .sol beside them) under ``data``."""
    return [p for p in sorted((data / "cvrplib" / "X").glob("*.vrp"))
            if p.with_suffix(".sol").is_file() and load_instance(p).n <= 300]


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.reld", __doc__)
    parser.add_argument("--count", type=int, default=128, help="instances per 100-node set")
    parser.add_argument("--time-limit", type=float, default=1.0,
                        help="seconds per instance for both solvers (100-node sets)")
    parser.add_argument("--more-limits", default="2,4",
                        help="further time limits (s) for a time profile on the 100-node sets; "
                             "empty skips it")
    parser.add_argument("--more-count", type=int, default=32,
                        help="instances (the first ones of each set) in the time profile")
    parser.add_argument("--x-time-limit", type=float, default=5.0,
                        help="seconds per Set X instance; 0 skips Set X")
    parser.add_argument("--scaling", default="200,500,1000",
                        help="TSP sizes of the scaling table; empty skips it")
    parser.add_argument("--scaling-count", type=int, default=4,
                        help="instances per size of the scaling table")
    parser.add_argument("--problems", default="tsp,cvrp",
                        help="which 100-node sets to run (tsp, cvrp or both)")
    parser.add_argument("--phase", choices=["all", "references"], default="all",
                        help="references: only compute and cache the PyVRP references")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="folder holding cvrplib/X/ (Set X)")
    parser.add_argument("--out", type=Path, default=RESULTS / "reld.md",
                        help="markdown report; only a report inside benchmarks/results adds "
                             "to the reference caches there")
    args = parser.parse_args(argv)
    # QA sweep: options checked before a run of an hour, not by a crash or a nan table
    problems = [p for p in ("tsp", "cvrp") if p in args.problems.split(",")]
    if set(args.problems.split(",")) - {"tsp", "cvrp", ""}:
        parser.error("--problems: tsp, cvrp or both")
    if args.count < 1 or args.more_count < 1 or args.scaling_count < 1:
        parser.error("--count, --more-count, --scaling-count: at least 1")
    if not (args.time_limit > 0 and args.x_time_limit >= 0):
        parser.error("--time-limit: positive; --x-time-limit: 0 or more")
    more = numbers(parser, "--more-limits", args.more_limits, allow_empty=True)
    sizes = integers(parser, "--scaling", args.scaling, positive=True, allow_empty=True)
    x_files = set_x(args.data) if args.x_time_limit > 0 and args.phase == "all" else []
    if args.x_time_limit > 0 and args.phase == "all" and not x_files:
        parser.error(f"--data: no CVRPLIB Set X instance with n ≤ 300 (cvrplib/X/*.vrp and "
                     f".sol) under {args.data}; --x-time-limit 0 skips Set X")
    check_out(parser, args.out)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    sets = {p: uniform(p, 100, args.count, SEED) for p in problems}
    refs = {p: references(p, sets[p], SEED, writes_results(args.out)) for p in sets}
    if args.phase == "references":
        return 0
    warm_up(["reld", "ortools"])
    manifest = json.loads((REPO / "weights" / "MANIFEST.json").read_text())
    lines = ["# ReLD benchmark", "",
             f"- Command: `{command('benchmarks.reld', argv)}`",
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
              f"after the other, {WARMED}; costs are recomputed by the instance (float "
              "Euclidean on the uniform sets, EUC_2D on Set X).", "",
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
        for path in x_files:
            inst = load_instance(path)
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
