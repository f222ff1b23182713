"""The neural routing solvers at equal wall time: PolyNet, ReLD and OR-Tools, gaps to PyVRP.

Sets (fixed seeds, 128 instances each, the first ``--count`` used): uniform TSP100 and CVRP100
(seed 20260101; CVRP demands 1–9 with Set-X capacities, as in training) and generated
Solomon-style CVRPTW100 (``benchmarks.cvrptw``'s seeds from 20261200). The reference is PyVRP
at 2 s (TSP) / 4 s (CVRP, CVRPTW) per instance, computed once and cached under
benchmarks/cache/. Every solver gets the same time limit per instance, one solve at a time,
the order of the solvers rotated from instance to instance so that load on a shared machine
favours none of them; everything goes through ``solvers.routing.solve.solve``, the path of
the API and the CLI. The first of ``--solvers`` is paired with each other one: the mean
per-instance cost difference with a 95% bootstrap interval, because differences of a tenth
of a percent cannot be told from the instance draw by means alone.

``--polish`` asks the other question: what the final classical descent earns each neural
solver, by running it as shipped and with the descent patched out (its time going back to
the reconstruction) on the same instances.

    python -m benchmarks.neural --limits 1               # → benchmarks/results/neural.md
    python -m benchmarks.neural --polish --count 64 --solvers polynet,reld
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    CACHE,
    RESULTS,
    WARMED,
    check_out,
    check_solvers,
    checkpoint_for,
    header_lines,
    headline,
    numbers,
    parser_for,
    provenance,
    warm_up,
    write_table,
    writes_results,
)
from benchmarks.cvrptw import RANDOM_SEED_BASE
from solvers.contract import Budget
from solvers.errors import NoSolutionError
from solvers.routing.generate import cvrptw_instance, random_cvrp, random_tsp
from solvers.routing.problem import CVRPInstance, RoutingInstance, TSPInstance
from solvers.routing.solve import solve

REPO = Path(__file__).resolve().parents[1]
SEED = 20260101
SET_SIZE = 128
REFERENCE_LIMIT = {"tsp": 2.0, "cvrp": 4.0, "cvrptw": 4.0}
PROBLEMS = ("tsp", "cvrp", "cvrptw")
NEURAL = ("polynet", "reld")


# -- instances and references ------------------------------------------------------------
def uniform(problem: str, n: int, count: int, seed: int) -> list[TSPInstance | CVRPInstance]:
    """The uniform TSP/CVRP set; its first instances do not depend on ``count``."""
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
    not depend on its size (a --count 2 run reads the first 2 of the 128, not fresh, noisy
    references)."""
    path = CACHE / f"reference_{problem}.json"
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
    """PyVRP costs of a uniform set, cached in benchmarks/cache/reference_<problem>.json;
    computed when no cached key covers ``instances``, and stored only when ``write`` (a run
    that publishes into benchmarks/results, see benchmarks.common.writes_results)."""
    n = instances[0].n
    cached = cached_references(problem, n, len(instances), seed)
    if cached is not None:
        return cached
    costs = []
    for k, inst in enumerate(instances):
        costs.append(solve(inst, "pyvrp", Budget(time_limit=REFERENCE_LIMIT[problem])).cost)
        print(f"  reference {problem} {k + 1}/{len(instances)}", file=sys.stderr, flush=True)
    if write:
        path = CACHE / f"reference_{problem}.json"
        cache = json.loads(path.read_text()) if path.exists() else {}
        cache[_cache_key(problem, seed, n, len(instances))] = costs
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cache))
    else:
        print(f"  {problem} references computed for this run only (--out is outside "
              f"{RESULTS}, so the cache is left as it was)", file=sys.stderr, flush=True)
    return costs


def tw_references(instances: list[RoutingInstance], write: bool) -> list[float]:
    """PyVRP costs of the generated CVRPTW100 instances, cached per instance name (seed);
    the missing ones are computed, and stored only when ``write``."""
    path = CACHE / "reference_cvrptw.json"
    cache = json.loads(path.read_text()) if path.exists() else {}
    limit = REFERENCE_LIMIT["cvrptw"]
    for k, inst in enumerate(instances):
        key = f"{inst.name}-pyvrp{limit:g}"
        if key not in cache:
            sol = solve(inst, "pyvrp", Budget(time_limit=limit))
            assert sol.feasible, f"PyVRP found no feasible solution for {inst.name}"
            cache[key] = sol.cost
            if write:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(cache, indent=0))
            print(f"  reference cvrptw {k + 1}/{len(instances)}", file=sys.stderr, flush=True)
    return [cache[f"{inst.name}-pyvrp{limit:g}"] for inst in instances]


def instance_set(problem: str, count: int, write: bool) -> tuple[list[Any], list[float]]:
    """The first ``count`` instances of a problem's set and their PyVRP references."""
    if problem == "cvrptw":
        sets = [cvrptw_instance(RANDOM_SEED_BASE + k, n=101) for k in range(count)]
        return sets, tw_references(sets, write)
    full = uniform(problem, 100, SET_SIZE, SEED)
    return full[:count], references(problem, full, SEED, write)[:count]


# -- solving -----------------------------------------------------------------------------
def _one(inst: RoutingInstance, solver: str, limit: float) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        sol = solve(inst, solver, Budget(time_limit=limit, seed=0))
    except NoSolutionError:
        # no plan (a fleet cap every plan broke): an infeasible row, not a crash
        return {"cost": math.inf, "feasible": False, "wall": limit,
                "elapsed": round(time.perf_counter() - t0, 3)}
    # the call's own elapsed time beside the solver's clock: loading and anything else
    # outside the solver shows here
    return {"cost": sol.cost, "feasible": sol.feasible, "wall": sol.wall_time,
            "elapsed": round(time.perf_counter() - t0, 3), "polish": sol.stats.get("polish")}


def run_all(instances: list[RoutingInstance], solvers: list[str],
            limit: float) -> dict[str, list[dict[str, Any]]]:
    """Every solver on every instance, the order rotated per instance."""
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in solvers}
    for k, inst in enumerate(instances):
        for j in range(len(solvers)):
            solver = solvers[(k + j) % len(solvers)]
            rows[solver].append(_one(inst, solver, limit))
        print(f"  {inst.name} done {time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)
    return rows


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
    """The neural solvers without the final descent and without the time kept for it."""
    import solvers.routing.neural.search as search_module

    saved = [(m, {k: getattr(m, k) for k in _PATCHED if hasattr(m, k)})
             for m in (search_module,)]
    try:
        for module, originals in saved:
            for k in originals:
                setattr(module, k, _PATCHED[k])
        yield
    finally:
        for module, originals in saved:
            for k, v in originals.items():
                setattr(module, k, v)


def run_polish_pair(instances: list[Any], solver: str,
                    limit: float) -> dict[str, list[dict[str, Any]]]:
    """``solver`` with ("on") and without ("off") the polish on every instance, rotated."""
    rows: dict[str, list[dict[str, Any]]] = {"on": [], "off": []}
    for k, inst in enumerate(instances):
        for variant in (("on", "off") if k % 2 == 0 else ("off", "on")):
            with polish_off() if variant == "off" else contextlib.nullcontext():
                rows[variant].append(_one(inst, solver, limit))
        print(f"  {solver} {inst.name} done {time.strftime('%H:%M:%S')}", file=sys.stderr,
              flush=True)
    return rows


# -- statistics and the table ------------------------------------------------------------
def gap_percent(rows: list[dict[str, Any]], refs: list[float]) -> float | None:
    """Mean gap (%) to the references over the instances solved feasibly."""
    gaps = [(r["cost"] - ref) / ref * 100 for r, ref in zip(rows, refs, strict=False)
            if r["feasible"]]
    return float(np.mean(gaps)) if gaps else None


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def wins(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str:
    """'w/t/l' of a against b (infeasible loses to feasible)."""
    def key(r: dict[str, Any]) -> tuple[bool, float]:
        return (not r["feasible"], r["cost"])

    w = sum(key(x) < key(y) for x, y in zip(a, b, strict=True))
    t = sum(key(x) == key(y) for x, y in zip(a, b, strict=True))
    return f"{w}/{t}/{len(a) - w - t}"


def paired(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str:
    """Mean per-instance difference of a's cost from b's, in % of b's, with a 95% bootstrap
    interval (10,000 resamples of the instances, fixed seed), over the instances both solved
    feasibly: an interval that excludes 0 says which solver is better beyond the noise of
    the instance draw; w/t/l alone does not."""
    d = np.array([(x["cost"] - y["cost"]) / y["cost"] * 100
                  for x, y in zip(a, b, strict=True) if x["feasible"] and y["feasible"]])
    if len(d) < 2:
        return "–"
    rng = np.random.default_rng(0)
    means = d[rng.integers(0, len(d), (10_000, len(d)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return f"{d.mean():+.2f} [{lo:+.2f}, {hi:+.2f}]"


def _set_name(problem: str, count: int) -> str:
    return f"{problem.upper()}100 ×{count}"


def _reference_name(problem: str) -> str:
    return f"PyVRP {REFERENCE_LIMIT[problem]:g} s"


def solver_lines(data: dict[str, Any]) -> list[str]:
    """Gap per set, time limit and solver, then the first solver paired with the others."""
    refs = data["references"]
    lines = ["| set | time limit (s) | solver | gap to PyVRP % | feasible | mean wall (s) "
             "| run |", "|---|---:|---|---:|---:|---:|---:|"]
    pairs = ["| set | time limit (s) | pair | w/t/l | first − second % [95% CI] |",
             "|---|---:|---|---:|---:|"]
    for s in data["sections"]:
        if s["kind"] != "solvers":
            continue
        ref = refs[s["problem"]][:s["count"]]
        for solver, rows in s["records"].items():
            wall = np.mean([r["wall"] for r in rows])
            feasible = sum(r["feasible"] for r in rows)
            lines.append(f"| {_set_name(s['problem'], s['count'])} | {s['limit']:g} | {solver} "
                         f"| {_pct(gap_percent(rows, ref))} | {feasible}/{len(rows)} "
                         f"| {wall:.2f} | {s['source'] + 1} |")
        names = list(s["records"])
        for other in names[1:]:
            a, b = s["records"][names[0]], s["records"][other]
            pairs.append(f"| {_set_name(s['problem'], s['count'])} | {s['limit']:g} "
                         f"| {names[0]} vs {other} | {wins(a, b)} | {paired(a, b)} |")
    return [*lines, "", *pairs]


def polish_lines(data: dict[str, Any]) -> list[str]:
    refs = data["references"]
    lines = ["| set | solver | time limit (s) | gap with polish % | gap without % "
             "| with vs without w/t/l | with − without % [95% CI] | polish time mean / max (ms) "
             "| run |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in data["sections"]:
        if s["kind"] != "polish":
            continue
        ref = refs[s["problem"]][:s["count"]]
        on, off = s["records"]["on"], s["records"]["off"]
        secs = [1000 * r["polish"]["seconds"] for r in on if r.get("polish")]
        timing = f"{sum(secs) / len(secs):.1f} / {max(secs):.1f}" if secs else "–"
        lines.append(f"| {_set_name(s['problem'], s['count'])} | {s['solver']} "
                     f"| {s['limit']:g} | {_pct(gap_percent(on, ref))} "
                     f"| {_pct(gap_percent(off, ref))} | {wins(on, off)} | {paired(on, off)} "
                     f"| {timing} | {s['source'] + 1} |")
    return lines


def render(data: dict[str, Any]) -> list[str]:
    """The markdown table of a results JSON: one header line pair per run that filled it,
    the run column of each row naming which."""
    prov = data["provenance"]
    prov = prov if isinstance(prov, list) else [prov]
    lines = ["# Neural routing solvers at equal time", ""]
    for k, p in enumerate(prov, 1):
        lines += [f"Run {k}:", *header_lines(p), ""]
    lines += [f"Instances: the first N of 128 uniform TSP100 and CVRP100 (seed {SEED}) and of "
              f"the generated CVRPTW100 (seeds from {RANDOM_SEED_BASE}); reference PyVRP at "
              "2 s (TSP) / 4 s (CVRP, CVRPTW) per instance; solver seed 0; solvers one after "
              f"another, order rotated per instance; {WARMED}. CPU only, torch with one "
              "thread per solve.", ""]
    if any(s["kind"] == "solvers" for s in data["sections"]):
        lines += ["## Gap to PyVRP at equal time", "", *solver_lines(data), ""]
    if any(s["kind"] == "polish" for s in data["sections"]):
        lines += ["## What the final polish adds", "",
                  "The shipped solver against itself without the final classical descent "
                  "(whose time then goes to the reconstruction); negative: the polish helps.",
                  "", *polish_lines(data), ""]
    return lines


def headline_rows(data: dict[str, Any], provs: list[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    """Per set, time limit and solver, the gap of the last run that measured it, with the
    checkpoint that run loaded (``provs``: the runs, in ``source`` order)."""
    latest: dict[tuple[str, float, str], dict[str, Any]] = {}
    for s in data["sections"]:
        if s["kind"] != "solvers":
            continue
        ref = data["references"][s["problem"]][:s["count"]]
        found = provs[s["source"]].get("checkpoints", [])
        for solver, rows in s["records"].items():
            latest[(s["problem"], s["limit"], solver)] = headline(
                "neural", _set_name(s["problem"], s["count"]), solver, f"{s['limit']:g} s",
                gap_percent(rows, ref), len(rows), _reference_name(s["problem"]),
                checkpoint_for(found, solver, s["problem"]))
    return list(latest.values())


def _strip(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {k: [{f: v for f, v in r.items() if v is not None} for r in rs]
            for k, rs in rows.items()}


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.neural", __doc__)
    parser.add_argument("--count", type=int, default=SET_SIZE,
                        help="instances per set (2 to 128, the first of each set)")
    parser.add_argument("--limits", default="1", help="time limits in seconds, comma-separated")
    parser.add_argument("--problems", default="tsp,cvrp,cvrptw", help="any of tsp, cvrp, cvrptw")
    parser.add_argument("--solvers", default="polynet,reld,ortools",
                        help="registered solvers; the first is paired with each other one")
    parser.add_argument("--polish", action="store_true",
                        help="each neural solver of --solvers with and without its final polish")
    parser.add_argument("--out", type=Path, default=RESULTS / "neural.md",
                        help="markdown table, its data beside it as .json; only a table inside "
                             "benchmarks/results adds to the reference caches")
    args = parser.parse_args(argv)
    if not 2 <= args.count <= SET_SIZE:
        parser.error("--count: the sets hold 128 instances; give 2 to 128")
    limits = numbers(parser, "--limits", args.limits)
    problems = [p for p in args.problems.split(",") if p]
    if not problems or any(p not in PROBLEMS for p in problems):
        parser.error("--problems: any of tsp, cvrp, cvrptw")
    solvers = [s for s in args.solvers.split(",") if s]
    if not solvers:
        parser.error("--solvers: give at least one solver")
    check_solvers(parser, solvers)
    if args.polish and (set(solvers) - set(NEURAL)):
        parser.error("--solvers: with --polish, any of polynet, reld")
    check_out(parser, args.out)
    write = writes_results(args.out)
    warm_up(solvers)
    prov = provenance("benchmarks.neural", argv, solvers=solvers)
    data: dict[str, Any] = {"sections": [], "references": {}}
    for problem in problems:
        sets, refs = instance_set(problem, args.count, write)
        data["references"][problem] = refs
        for limit in limits:
            print(f"{problem}100 at {limit:g} s ...", file=sys.stderr, flush=True)
            if args.polish:
                for solver in solvers:
                    data["sections"].append({
                        "source": 0, "kind": "polish", "problem": problem, "limit": limit,
                        "count": args.count, "solver": solver,
                        "records": _strip(run_polish_pair(sets, solver, limit))})
            else:
                data["sections"].append({
                    "source": 0, "kind": "solvers", "problem": problem, "limit": limit,
                    "count": args.count, "records": _strip(run_all(sets, solvers, limit))})
    data["provenance"] = [prov]
    lines = render(data)
    del data["provenance"]
    write_table(args.out, lines, data, [prov], headline_rows(data, [prov]))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
