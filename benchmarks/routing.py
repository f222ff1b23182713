"""Routing benchmark: registered solvers × named instance sets → a markdown table and JSON.

    python -m benchmarks.routing [--sets uniform,tsplib,cvrplib] [--sizes 100,1000,10000]
        [--solvers ortools,pyvrp,nearest_neighbor] [--time-limit 10] [--max-n N]
        [--instances-per-size K] [--seed 0] [--out benchmarks/results/routing.md]
        [--data DIR] [--dry-run]

Every run goes through ``solvers.routing.solve.solve`` (the path the API and the CLI use), so a
figure here is produced exactly as a user would get it. Runs happen strictly one after another,
each in a fresh forked child process: a solver that crashes or overruns its time limit by far
is recorded and killed instead of ending the benchmark, and each run's peak memory is its own.
Results are rewritten after every instance, so an interrupted run still leaves a table.
See benchmarks/README.md for what every column means.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import importlib.metadata
import json
import math
import multiprocessing
import re
import resource
import signal
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    check_out,
    header_lines,
    headline,
    machine_info,
    provenance,
    relative,
    warm_up,
)
from solvers.catalog import get_spec
from solvers.contract import Budget, SolverSpec
from solvers.errors import CosolveError, UnknownSolverError
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_sol, read_tour
from solvers.routing.problem import CVRPInstance, Instance, TSPInstance
from solvers.routing.solve import gap_percent, solve

SETS = ("uniform", "tsplib", "cvrplib")
DEFAULT_SIZES = (100, 1000, 10000)
DEFAULT_SOLVERS = ("ortools", "pyvrp", "nearest_neighbor")
DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "routing.md"

#: Vehicle capacity of the uniform CVRP sets by size (demands are uniform 1–9, mean 5). Other
#: sizes take the capacity of the listed size nearest on a log scale.
UNIFORM_CVRP_CAPACITY = {100: 50, 1000: 200, 10000: 2000}
#: Mixed into the uniform instances' seeds so TSP and CVRP instances differ.
PROBLEM_SEED_CODE = {"tsp": 1, "cvrp": 2}
#: Solvers that finish as soon as they have built a solution, whatever the time limit (used
#: only for the duration estimate).
TIME_LIMIT_IGNORED = frozenset({"nearest_neighbor"})
#: A child that has not answered after factor × limit + slack seconds is killed.
HARD_CAP_FACTOR = 2.0
HARD_CAP_SLACK_S = 120.0

REF_OPTIMUM = "proven optimum (TSPLIB)"
REF_BKS = "best-known (CVRPLIB)"
REF_BEST_OF_RUN = "best of this run"


# -- instances ---------------------------------------------------------------------------
@dataclass
class BenchInstance:
    """One instance of a set: how to get it, its size, and what its gap is measured against."""

    set_name: str
    name: str
    problem: str
    n: int
    load: Callable[[], Instance]
    reference: float | None = None
    reference_source: str = ""
    #: Routes of the reference solution, to re-check the reference under our distance code.
    reference_routes: list[list[int]] | None = None


def uniform_capacity(n: int) -> int:
    """Capacity for a uniform CVRP of ``n`` nodes (see ``UNIFORM_CVRP_CAPACITY``)."""
    nearest = min(UNIFORM_CVRP_CAPACITY, key=lambda size: abs(math.log(size) - math.log(n)))
    return UNIFORM_CVRP_CAPACITY[nearest]


def uniform_instance(problem: str, n: int, index: int, seed: int) -> Instance:
    """A random instance in the unit square, the same on every machine for the same arguments.

    ``n`` counts every node; a CVRP's depot is node 0, itself a uniform point, and its
    ``n − 1`` customers have uniform integer demands 1–9. Distances are exact floats.
    """
    rng = np.random.default_rng([seed, PROBLEM_SEED_CODE[problem], n, index])
    coords = rng.random((n, 2))
    name = f"uniform-{problem}-n{n}-{index}"
    if problem == "tsp":
        return TSPInstance(name=name, coords=coords, distance="exact")
    demands = rng.integers(1, 10, size=n)
    demands[0] = 0
    return CVRPInstance(name=name, coords=coords, distance="exact", demands=demands,
                        capacity=uniform_capacity(n), depot=0)


def uniform_set(sizes: Sequence[int], per_size: int | None, seed: int) -> list[BenchInstance]:
    out: list[BenchInstance] = []
    for problem in ("tsp", "cvrp"):
        for n in sizes:
            count = per_size if per_size is not None else (2 if n <= 100 else 1)
            for index in range(count):
                out.append(BenchInstance(
                    set_name=f"uniform-{problem}-n{n}",
                    name=f"uniform-{problem}-n{n}-{index}",
                    problem=problem,
                    n=n,
                    load=lambda p=problem, n=n, i=index: uniform_instance(p, n, i, seed),
                    reference_source=REF_BEST_OF_RUN,
                ))
    return out


def _strip_suffixes(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".tsp", ".vrp"):
        name = name.removesuffix(suffix)
    return name


def header_dimension(path: Path) -> int | None:
    """DIMENSION from a TSPLIB/CVRPLIB header without parsing the whole (maybe gzipped) file."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="latin-1") as fh:
        for _, line in zip(range(200), fh, strict=False):
            key, _, value = line.partition(":")
            if key.strip().upper() == "DIMENSION":
                return int(value.strip())
            if key.strip().upper().endswith("_SECTION"):
                break
    return None


def read_tsplib_optima(path: Path) -> dict[str, float]:
    """``name : value`` lines of TSPLIB's solutions.txt (trailing notes ignored)."""
    optima: dict[str, float] = {}
    for line in path.read_text().splitlines():
        match = re.match(r"\s*(\S+)\s*:\s*(\d+(?:\.\d+)?)", line)
        if match:
            optima[match.group(1)] = float(match.group(2))
    return optima


def tsplib_set(data: Path) -> list[BenchInstance]:
    folder = data / "tsplib"
    optima_file = folder / "solutions.txt"
    optima = read_tsplib_optima(optima_file) if optima_file.exists() else {}
    out = []
    for path in sorted([*folder.glob("*.tsp"), *folder.glob("*.tsp.gz")]):
        name = _strip_suffixes(path)
        opt_tour = folder / "opt_tours" / f"{name}.opt.tour"
        out.append(BenchInstance(
            set_name="tsplib",
            name=name,
            problem="tsp",
            n=header_dimension(path) or 0,
            load=lambda p=path: load_instance(p),
            reference=optima.get(name),
            reference_source=REF_OPTIMUM if name in optima else "",
            reference_routes=[read_tour(opt_tour)] if opt_tour.exists() else None,
        ))
    return sorted(out, key=lambda inst: (inst.n, inst.name))


def cvrplib_set(data: Path) -> list[BenchInstance]:
    out = []
    for sub in ("X", "XXL"):
        folder = data / "cvrplib" / sub
        for path in sorted([*folder.glob("*.vrp"), *folder.glob("*.vrp.gz")]):
            name = _strip_suffixes(path)
            sol = next((p for p in (folder / f"{name}.sol", folder / f"{name}.sol.gz")
                        if p.exists()), None)
            routes, bks = read_sol(sol) if sol is not None else (None, None)
            out.append(BenchInstance(
                set_name=f"cvrplib-{sub}",
                name=name,
                problem="cvrp",
                n=header_dimension(path) or 0,
                load=lambda p=path: load_instance(p),
                reference=bks,
                reference_source=REF_BKS if bks is not None else "",
                reference_routes=routes,
            ))
    return sorted(out, key=lambda inst: (inst.set_name != "cvrplib-X", inst.n, inst.name))


# -- runs --------------------------------------------------------------------------------
@dataclass
class RunRecord:
    """One solver on one instance: a row of the results table."""

    set: str
    instance: str
    problem: str
    n: int
    solver: str
    time_limit: float
    status: str = "pending"  # ok | failed | killed | skipped
    cost: float | None = None
    distance: str | None = None
    reference: float | None = None
    reference_source: str = ""
    gap_percent: float | None = None
    wall_time: float | None = None
    feasible: bool | None = None
    max_rss_mb: float | None = None
    error: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


def skip_reason(spec: SolverSpec, problem: str, n: int) -> str | None:
    """Why a solver cannot take this instance (checked before starting a process)."""
    if problem not in spec.problems:
        return f"skipped: {spec.name} does not solve {problem}"
    reason = spec.unavailable_reason()
    if reason is not None:
        return f"skipped: unavailable ({reason})"
    limit = spec.max_nodes.get(problem)
    if limit is not None and n > limit:
        return f"skipped: n={n:,} is above {spec.name}'s max_nodes {limit:,}"
    return None


def _child_solve(conn: Connection, instance: Instance, solver: str, budget: Budget) -> None:
    """Runs in the forked child: solve, then send the solution (or the error) back."""
    # Ctrl-C is the driver's to handle: it kills this child and writes the partial table.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    payload: dict[str, Any] = {}
    start = time.perf_counter()
    try:
        payload["solution"] = solve(instance, solver, budget)
    except CosolveError as exc:
        payload["error"] = str(exc)
    except Exception as exc:  # any solver crash becomes a recorded row
        last = traceback.extract_tb(exc.__traceback__)[-1]
        payload["error"] = (f"{type(exc).__name__}: {exc} "
                            f"(at {Path(last.filename).name}:{last.lineno})")
    payload["wall_time"] = time.perf_counter() - start
    payload["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    conn.send(payload)
    conn.close()


def run_isolated(instance: Instance, solver: str, budget: Budget,
                 hard_cap: float) -> dict[str, Any]:
    """Solve in a forked child; kill it if it has not answered within ``hard_cap`` seconds.

    Returns the child's payload (``solution`` or ``error``, ``wall_time``, ``max_rss_mb``), or
    ``{"killed": why}`` / ``{"crashed": why}`` when there is no payload.
    """
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child_solve, args=(sender, instance, solver, budget),
                        daemon=True)
    child.start()
    sender.close()
    try:
        if receiver.poll(hard_cap):
            try:
                return receiver.recv()
            except EOFError:
                child.join(5)
                return {"crashed": f"the solver process died (exit code {child.exitcode})"}
        return {"killed": f"no result within the hard cap of {hard_cap:g} s; the process was "
                          "killed"}
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receiver.close()


def run_one(inst: BenchInstance, instance: Instance | None, load_error: str, spec: SolverSpec,
            args: argparse.Namespace) -> RunRecord:
    record = RunRecord(set=inst.set_name, instance=inst.name, problem=inst.problem, n=inst.n,
                       solver=spec.name, time_limit=args.time_limit,
                       reference=inst.reference, reference_source=inst.reference_source)
    reason = skip_reason(spec, inst.problem, inst.n)
    if reason is not None:
        record.status, record.error = "skipped", reason
        return record
    if instance is None:
        record.status, record.error = "failed", f"could not load the instance: {load_error}"
        return record
    hard_cap = HARD_CAP_FACTOR * args.time_limit + HARD_CAP_SLACK_S
    result = run_isolated(instance, spec.name, Budget(args.time_limit, args.seed), hard_cap)
    record.max_rss_mb = result.get("max_rss_mb")
    record.wall_time = result.get("wall_time")
    if "killed" in result:
        record.status, record.error, record.wall_time = "killed", result["killed"], hard_cap
        return record
    if "crashed" in result:
        record.status, record.error = "failed", result["crashed"]
        return record
    if "error" in result:
        record.status, record.error = "failed", result["error"]
        return record
    solution = result["solution"]
    record.status = "ok"
    record.cost = solution.cost if math.isfinite(solution.cost) else None
    record.distance = solution.distance
    record.feasible = solution.feasible
    record.stats = _brief_stats(solution.stats)
    if not solution.feasible:
        record.error = "infeasible: " + "; ".join(solution.violations)
    return record


def _brief_stats(stats: dict[str, Any]) -> dict[str, Any]:
    keep = ("iterations", "solutions_seen", "status", "first_solution", "first_solution_time",
            "model", "build_time", "integer_scale", "method")
    return {k: stats[k] for k in keep if k in stats}


def finish_instance(inst: BenchInstance, records: list[RunRecord]) -> None:
    """Set each row's gap once every solver has run (uniform sets need all of them)."""
    feasible = [r for r in records if r.feasible and r.cost is not None]
    if inst.reference_source == REF_BEST_OF_RUN:
        best = min((r.cost for r in feasible), default=None)  # type: ignore[type-var]
        for r in records:
            r.reference = best
    for r in feasible:
        r.gap_percent = gap_percent(r.cost, r.reference)  # type: ignore[arg-type]
        if (r.reference_source == REF_OPTIMUM and r.reference is not None
                and r.cost is not None and r.cost < r.reference - 1e-6):
            r.error = "cost below the proven optimum: check the distance convention"


def check_reference(inst: BenchInstance, instance: Instance) -> str | None:
    """Recompute the reference solution's cost with our distance code; a note if it differs."""
    if inst.reference is None or not inst.reference_routes:
        return None
    try:
        recomputed = instance.cost(inst.reference_routes)
    except Exception as exc:  # a broken reference file: reported, not fatal
        return f"{inst.name}: could not recompute the reference solution ({exc})"
    if abs(recomputed - inst.reference) > 1e-6 * max(1.0, inst.reference):
        return (f"{inst.name}: the reference solution recomputes to {recomputed:g}, "
                f"not the stated {inst.reference:g}")
    return None


# -- report ------------------------------------------------------------------------------
def summarize(records: list[RunRecord]) -> list[dict[str, Any]]:
    """Per set and solver: runs, feasible runs, mean gap and mean wall time."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for r in records:
        groups.setdefault((r.set, r.solver), []).append(r)
    out = []
    for (set_name, solver), rows in groups.items():
        ran = [r for r in rows if r.status != "skipped"]
        gaps = [r.gap_percent for r in ran if r.gap_percent is not None]
        walls = [r.wall_time for r in ran if r.status == "ok" and r.wall_time is not None]
        out.append({
            "set": set_name,
            "solver": solver,
            "instances": len(rows),
            "runs": len(ran),
            "feasible": sum(1 for r in ran if r.feasible),
            "with_gap": len(gaps),
            "mean_gap_percent": statistics.fmean(gaps) if gaps else None,
            "mean_wall_time": statistics.fmean(walls) if walls else None,
            "skipped": len(rows) - len(ran),
            "failed": sum(1 for r in ran if r.status in ("failed", "killed")),
        })
    return out


def _cell(value: Any) -> str:
    text = "–" if value is None or value == "" else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "–"
    if float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.{digits}f}"


def render_markdown(meta: dict[str, Any], records: list[RunRecord], planned: int) -> str:
    m = meta["machine"]
    s = meta["settings"]
    v = m["versions"]
    done = sum(1 for r in records if r.status != "pending")
    lines = ["# Routing benchmark", ""]
    if done < planned:
        lines += [f"**Partial results: {done} of {planned} rows so far.**", ""]
    lines += [
        *header_lines(meta["provenance"]),
        f"- Finished: {meta.get('finished') or 'not yet'}; {m['ram_gib']} GiB RAM, {m['os']}; "
        f"load average at start {', '.join(map(str, m['load_average_at_start']))}",
        f"- Software: Python {m['python']}, OR-Tools {v['ortools']}, PyVRP {v['pyvrp']}, "
        f"numpy {v['numpy']}, vrplib {v['vrplib']}, cosolve {v['cosolve']}",
        f"- Settings: time limit {s['time_limit']:g} s per run; seed {s['seed']}; "
        f"sets {', '.join(s['sets'])}; uniform sizes {', '.join(map(str, s['sizes']))} "
        f"({s['instances_per_size_text']}); solvers {', '.join(s['solvers'])}; "
        f"max n for public instances {s['max_n'] or 'none'}; hard cap "
        f"{HARD_CAP_FACTOR:g} × limit + {HARD_CAP_SLACK_S:g} s",
        "- Runs: one at a time, each in a fresh child process forked from the driver, "
        "which warmed every solver up (imports, weights, compiled kernels) before the first "
        "run; wall time is measured around the solve call inside the child.",
        f"- Data: `{s['data']}`",
        "- References: TSPLIB proven optima (`tsplib/solutions.txt`), CVRPLIB best-known "
        "values (`Cost` line of the `.sol` files); uniform sets use the best feasible cost of "
        "this run, so their best solver shows +0 %.",
        "- Distances: uniform sets use exact float Euclidean distances in the unit square; "
        "TSPLIB and CVRPLIB files use their own EUC_2D (nearest-integer) convention.",
    ]
    for note in meta.get("notes", []):
        lines.append(f"- Note: {note}")
    lines += ["", "## Summary per set and solver", "",
              "| set | solver | runs | feasible | mean gap % | gaps over | mean wall (s) | "
              "skipped | failed |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in summarize([r for r in records if r.status != "pending"]):
        lines.append(
            f"| {row['set']} | {row['solver']} | {row['runs']} | {row['feasible']} | "
            f"{_pct(row['mean_gap_percent'])} | {row['with_gap']} | "
            f"{_num(row['mean_wall_time'])} | {row['skipped']} | {row['failed']} |"
        )
    lines += ["", "## All runs", "",
              "| set | instance | n | solver | time limit (s) | cost | distance | reference | "
              "reference source | gap % | wall (s) | feasible | max RSS (MB) | error |",
              "|---|---|---:|---|---:|---:|---|---:|---|---:|---:|---|---:|---|"]
    for r in records:
        if r.status == "pending":
            continue
        lines.append("| " + " | ".join(_cell(x) for x in (
            r.set, r.instance, r.n, r.solver, f"{r.time_limit:g}", _num(r.cost, 4), r.distance,
            _num(r.reference, 4), r.reference_source, _pct(r.gap_percent),
            _num(r.wall_time), {True: "yes", False: "no", None: "–"}[r.feasible],
            _num(r.max_rss_mb, 0), r.error,
        )) + " |")
    return "\n".join(lines) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


FAMILY = {"tsplib": "TSP", "cvrplib-X": "CVRP", "cvrplib-XXL": "CVRP"}
REFERENCE = {"proven optimum (TSPLIB)": "proven optimum", "best-known (CVRPLIB)": "best-known",
             "best of this run": "best of this run"}


def headline_rows(meta: dict[str, Any], summary: list[dict[str, Any]],
                  runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean gap per set and solver at the run's time limit (sets with a fixed reference, and
    the uniform sets against the best of the run)."""
    source = {r["set"]: r.get("reference_source", "") for r in runs}
    rows = []
    for s in summary:
        family = FAMILY.get(s["set"], "TSP" if "-tsp-" in s["set"] else "CVRP")
        if s.get("mean_gap_percent") is None:
            continue
        rows.append(headline(family, s["set"], s["solver"],
                             f"{meta['settings']['time_limit']:g} s", s["mean_gap_percent"],
                             s["with_gap"], REFERENCE.get(source.get(s["set"], ""), "")))
    return rows


def write_results(out: Path, meta: dict[str, Any], records: list[RunRecord],
                  planned: int) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(out, render_markdown(meta, records, planned))
    done = [r for r in records if r.status != "pending"]
    runs = [asdict(r) for r in done]
    summary = summarize(done)
    payload = {"provenance": meta["provenance"],
               "headline": headline_rows(meta, summary, runs),
               "meta": meta, "summary": summary, "runs": runs}
    _write_atomic(out.with_suffix(".json"), json.dumps(_jsonable(payload), indent=1))


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# -- command line ------------------------------------------------------------------------
def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.routing",
        description="Benchmark the routing solvers on uniform random and public instances.")
    parser.add_argument("--sets", default=",".join(SETS),
                        help="comma-separated sets: uniform, tsplib, cvrplib (default: all)")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="node counts of the uniform sets (default: 100,1000,10000)")
    parser.add_argument("--solvers", default=",".join(DEFAULT_SOLVERS),
                        help="comma-separated solver names (default: %(default)s)")
    parser.add_argument("--time-limit", type=float, default=10.0,
                        help="seconds per run (default: 10)")
    parser.add_argument("--max-n", type=int, default=None,
                        help="skip public instances with more nodes than this")
    parser.add_argument("--instances-per-size", type=int, default=None,
                        help="uniform instances per size (default: 2 for n<=100, 1 above)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the uniform instances and of every solver (default: 0)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="markdown output; the JSON goes beside it (default: %(default)s)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="shared data folder with tsplib/ and cvrplib/ (default: %(default)s)")
    parser.add_argument("--dry-run", action="store_true",
                        help="list the planned runs and the time estimate, solve nothing")
    args = parser.parse_args(argv)

    args.sets = _csv(args.sets)
    unknown = sorted(set(args.sets) - set(SETS))
    if unknown or not args.sets:
        parser.error(f"--sets: unknown set(s) {unknown}; choose from {', '.join(SETS)}")
    try:
        args.sizes = [int(x) for x in _csv(args.sizes)]
    except ValueError:
        parser.error(f"--sizes: give whole numbers, e.g. 100,1000; got {args.sizes!r}")
    if "uniform" in args.sets and (not args.sizes or min(args.sizes) < 3):
        parser.error("--sizes: every size must be at least 3 nodes")
    args.solvers = list(dict.fromkeys(_csv(args.solvers)))
    if not args.solvers:
        parser.error("--solvers: give at least one solver")
    for name in args.solvers:
        try:
            get_spec(name)
        except UnknownSolverError as exc:
            parser.error(f"--solvers: {exc}")
    if not (math.isfinite(args.time_limit) and args.time_limit > 0):
        parser.error("--time-limit: must be a positive number of seconds")
    if args.instances_per_size is not None and args.instances_per_size < 1:
        parser.error("--instances-per-size: must be at least 1")
    if args.seed < 0:
        parser.error("--seed: must be a non-negative integer")
    if {"tsplib", "cvrplib"} & set(args.sets) and not args.data.is_dir():
        parser.error(f"--data: {args.data} is not a folder")
    # Regression: a data folder without the set's files gave '0 instances', an empty table and
    # exit 0
    for name, patterns in (("tsplib", ("tsplib/*.tsp", "tsplib/*.tsp.gz")),
                           ("cvrplib", ("cvrplib/X/*.vrp", "cvrplib/XXL/*.vrp.gz"))):
        if name in args.sets and not any(any(args.data.glob(p)) for p in patterns):
            parser.error(f"--data: set {name} has no instances ({', '.join(patterns)}) under "
                         f"{args.data}")
    # Regression: --out x.json wrote the table there, then overwrote it with the JSON
    if args.out.suffix == ".json":
        args.out = args.out.with_suffix(".md")
    if not args.dry_run:
        check_out(parser, args.out)
    return args


def plan(args: argparse.Namespace) -> tuple[list[BenchInstance], list[str]]:
    """The instances to run, in order, and the public instances left out by --max-n."""
    instances: list[BenchInstance] = []
    if "uniform" in args.sets:
        instances += uniform_set(args.sizes, args.instances_per_size, args.seed)
    public: list[BenchInstance] = []
    if "tsplib" in args.sets:
        public += tsplib_set(args.data)
    if "cvrplib" in args.sets:
        public += cvrplib_set(args.data)
    left_out = []
    for inst in public:
        if args.max_n is not None and inst.n > args.max_n:
            left_out.append(f"{inst.name} (n={inst.n:,})")
        else:
            instances.append(inst)
    return instances, left_out


def estimate_seconds(instances: list[BenchInstance], specs: list[SolverSpec],
                     time_limit: float) -> tuple[int, float]:
    """Runs that will start and a rough duration: the limit for each time-bound run."""
    runs, seconds = 0, 0.0
    for inst in instances:
        for spec in specs:
            if skip_reason(spec, inst.problem, inst.n) is None:
                runs += 1
                seconds += 1.0 if spec.name in TIME_LIMIT_IGNORED else time_limit + 0.5
    return runs, seconds


def _preload_solver_libraries(solvers: Sequence[str]) -> None:
    """Import the solver packages and warm every solver up once in the driver so forked
    children do not pay for it inside their clock (before: on a fresh checkout the first ils
    run took 41 s at a 1 s limit, numba compiling in the child)."""
    for module in ("ortools.constraint_solver.pywrapcp", "pyvrp", "scipy.spatial"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    warm_up(solvers)


def _progress_line(index: int, total: int, r: RunRecord) -> str:
    head = f"[{index}/{total}] {r.set} {r.instance} n={r.n} {r.solver}"
    if r.status == "skipped":
        return f"{head}: {r.error}"
    if r.status != "ok":
        return f"{head}: {r.status.upper()} after {_num(r.wall_time)} s: {r.error}"
    gap = (f", gap {r.gap_percent:+.3f} % vs {r.reference_source}"
           if r.gap_percent is not None else "")
    flag = "" if r.feasible else " INFEASIBLE"
    return (f"{head}: cost {_num(r.cost, 4)}{gap}, wall {_num(r.wall_time)} s, "
            f"{_num(r.max_rss_mb, 0)} MB{flag}")


def main(argv: Sequence[str] | None = None) -> int:
    """Plan, run one solver at a time, and rewrite the results after every instance."""
    args = parse_args(argv)
    specs = [get_spec(name) for name in args.solvers]
    instances, left_out = plan(args)
    runs, seconds = estimate_seconds(instances, specs, args.time_limit)
    planned = len(instances) * len(specs)
    print(f"{len(instances)} instances × {len(specs)} solvers = {planned} rows; {runs} runs "
          f"will start; estimated {seconds / 60:.1f} min plus start-up and model building",
          flush=True)
    if left_out:
        print(f"left out by --max-n {args.max_n}: {', '.join(left_out)}", flush=True)
    if args.dry_run:
        for inst in instances:
            for spec in specs:
                why = skip_reason(spec, inst.problem, inst.n)
                print(f"  {inst.set_name:<20} {inst.name:<24} n={inst.n:<7} {spec.name:<18}"
                      f"{why or ''}")
        return 0

    meta: dict[str, Any] = {
        "provenance": provenance("benchmarks.routing", argv),
        "finished": None,
        "machine": machine_info(),
        "settings": {
            "time_limit": args.time_limit,
            "seed": args.seed,
            "sets": args.sets,
            "sizes": args.sizes,
            "instances_per_size": args.instances_per_size,
            "instances_per_size_text": (f"{args.instances_per_size} per size"
                                        if args.instances_per_size is not None
                                        else "2 instances for n <= 100, 1 above"),
            "solvers": args.solvers,
            "max_n": args.max_n,
            "data": relative(args.data),
            "uniform_cvrp_capacity": UNIFORM_CVRP_CAPACITY,
            "hard_cap": f"{HARD_CAP_FACTOR:g} × time limit + {HARD_CAP_SLACK_S:g} s",
        },
        "notes": [f"left out by --max-n: {', '.join(left_out)}"] if left_out else [],
    }
    _preload_solver_libraries(args.solvers)
    records: list[RunRecord] = []
    index = 0
    reference_checks = [0, 0]  # reference solutions that recompute to the stated value / not
    try:
        for inst in instances:
            instance: Instance | None = None
            load_error = ""
            try:
                instance = inst.load()
                inst.n = instance.n
            except (CosolveError, OSError, ValueError) as exc:
                load_error = str(exc)
            if instance is not None and inst.reference_routes:
                note = check_reference(inst, instance)
                reference_checks[0 if note is None else 1] += 1
                if note:
                    meta["notes"].append(note)
                    print(f"note: {note}", flush=True)
            group = []
            for spec in specs:
                index += 1
                record = run_one(inst, instance, load_error, spec, args)
                group.append(record)
                records.append(record)
                if inst.reference_source != REF_BEST_OF_RUN:
                    finish_instance(inst, [record])
                print(_progress_line(index, planned, record), flush=True)
            finish_instance(inst, group)
            if inst.reference_source == REF_BEST_OF_RUN and group and group[0].reference:
                best = min((r for r in group if r.gap_percent is not None),
                           key=lambda r: r.gap_percent)  # type: ignore[arg-type,return-value]
                print(f"    best of this run: {_num(best.cost, 4)} by {best.solver}", flush=True)
            write_results(args.out, meta, records, planned)
    except KeyboardInterrupt:
        meta["notes"].append("interrupted by the user (Ctrl-C); the table is partial")
        write_results(args.out, meta, records, planned)
        print(f"\ninterrupted; partial results in {args.out}", file=sys.stderr)
        return 130
    meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    if sum(reference_checks):
        meta["notes"].append(
            f"{reference_checks[0]} of {sum(reference_checks)} reference solutions (TSPLIB "
            ".opt.tour, CVRPLIB .sol) recompute to their stated value with our distance code")
    write_results(args.out, meta, records, planned)
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
