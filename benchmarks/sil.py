"""SIL benchmark: neural reconstruction alone (`sil`), with classical local search (`sil_ls`),
the classical local search alone (`ils`, TSP only) and OR-Tools at the same time limit, from 1K
to 100K nodes.

Sections (each run is a separate process so peak memory is per run; results accumulate in
--out's .json, benchmarks/results/sil.json by default, and its table, sil.md, is rebuilt each
time; nothing is written until a run has succeeded):

* ``tsp1k``  – uniform TSP1K instances (fixed seed), gap to the uniform reference length
  0.7128·√n + 0.58 (a fit to the LKH-3 averages of the SIL paper, within 0.1% at 1K–100K).
* ``tsplib`` – pr1002, pr2392 and usa13509 from --data (../shared/data), gap to the proven
  optima.
* ``tsp10k`` – one uniform 10K instance, gap to the uniform reference.
* ``large``  – a 100K-node TSP file and a 100K-node CVRP file (capacity 2000, demands 1–9)
  written to var/bench/ and solved from the file; the cost-over-time curve is drawn beside
  --out (benchmarks/results/sil_100k_<problem>.svg).
* ``cvrp``   – uniform CVRP at 1K/5K/10K nodes (capacities 250/500/1000 as in the paper):
  cost against OR-Tools at the same time limit; and CVRPLIB's Leuven1 (3,001 nodes) against
  its best-known value.
* ``paired`` – does the model help the search? ``sil_ls`` against ``ils`` at equal time on
  TSPLIB pr2392 and usa13509 (proven optima) and uniform 10K/20K/50K/100K (the LKH-3 fit),
  every instance with each of --seeds, the two solvers alternating; budgets scaled to size
  (PAIRED_PLAN, times --budget-scale). The table gives per band the mean paired difference
  with a 95% t-interval over the instance×seed pairs, and wins / losses.

    python -m benchmarks.sil tsp1k --count 32 --time-limit 10
    python -m benchmarks.sil large --time-limit 600 --solvers sil,sil_ls
    python -m benchmarks.sil tsp1k --count 1 --time-limit 1 --solvers ils --out /tmp/sil.md
    python -m benchmarks.sil paired --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    CACHE,
    DATA,
    RESULTS,
    check_out,
    check_solvers,
    checkpoint_for,
    checkpoints,
    header_lines,
    headline,
    machine_info,
    parser_for,
    provenance,
)
from benchmarks.routing import read_tsplib_optima
from solvers.catalog import get_solver
from solvers.contract import Budget
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_sol
from solvers.routing.solve import solve
from solvers.tuning import tuning_problem

REPO = Path(__file__).resolve().parents[1]
WORK = CACHE / "sil"  # the generated instance files
SEED = 20261130
SCALE = 1_000_000  # uniform instances are written as integers in [0, 1e6]² with EUC_2D
TSPLIB_FILES = ("pr1002.tsp", "pr2392.tsp", "usa13509.tsp.gz")
#: The files of ``--data`` each section reads (checked before anything runs).
DATA_FILES = {"tsplib": ("tsplib/solutions.txt", *(f"tsplib/{f}" for f in TSPLIB_FILES)),
              "paired": ("tsplib/solutions.txt", "tsplib/pr2392.tsp", "tsplib/usa13509.tsp.gz"),
              "cvrp": ("cvrplib/XXL/Leuven1.vrp.gz", "cvrplib/XXL/Leuven1.sol.gz")}


#: The paired study's bands: (band, instance count, seconds per run). TSPLIB and 10K get 30 s,
#: 20K and 50K 60 s, 100K 120 s: long enough that both solvers are past their start at every
#: size, short enough that the whole study fits in about 45 minutes of one core.
PAIRED_PLAN = (("TSPLIB pr2392 + usa13509", 2, 30.0), ("TSP10K uniform", 2, 30.0),
               ("TSP20K uniform", 2, 60.0), ("TSP50K uniform", 1, 60.0),
               ("TSP100K uniform", 1, 120.0))
PAIRED_SOLVERS = ("ils", "sil_ls")


def reference_length(n: int) -> float:
    """LKH-3-fitted optimal length for n uniform points in the unit square."""
    return 0.7128 * math.sqrt(n) + 0.58


# -- instance files ----------------------------------------------------------------------------

def write_uniform(problem: str, n: int, seed: int, capacity: int = 0) -> Path:
    """A TSPLIB/CVRPLIB file of n uniform points (scaled to SCALE, EUC_2D), cached."""
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"uniform_{problem}{n}_s{seed}.{'tsp' if problem == 'tsp' else 'vrp'}"
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    xy = np.rint(rng.random((n, 2)) * SCALE).astype(np.int64)
    lines = [f"NAME : {path.stem}", f"TYPE : {problem.upper()}", f"DIMENSION : {n}",
             "EDGE_WEIGHT_TYPE : EUC_2D"]
    if problem == "cvrp":
        lines.append(f"CAPACITY : {capacity}")
    lines.append("NODE_COORD_SECTION")
    lines += [f"{i + 1} {x} {y}" for i, (x, y) in enumerate(xy)]
    if problem == "cvrp":
        demand = rng.integers(1, 10, n)
        demand[0] = 0
        lines.append("DEMAND_SECTION")
        lines += [f"{i + 1} {d}" for i, d in enumerate(demand)]
        lines += ["DEPOT_SECTION", "1", "-1"]
    lines.append("EOF")
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)
    return path


# -- one run in a child process -----------------------------------------------------------------

def run_child(path: str, solver: str, limit: float, seed: int) -> dict[str, Any]:
    """Read the file, solve, check; report cost, wall, peak RSS and the cost curve."""

    warm = getattr(get_solver(solver), "warm_up", None)
    if warm is not None:  # as the service does at start-up
        warm()
    t0 = time.perf_counter()
    instance = load_instance(path, max_bytes=1 << 30)
    read_s = time.perf_counter() - t0
    curve: list[tuple[float, float]] = []

    def progress(event: Any) -> None:
        if event.best_cost is not None and math.isfinite(event.best_cost):
            curve.append((round(event.elapsed, 2), float(event.best_cost)))

    sol = solve(instance, solver, Budget(time_limit=limit, seed=seed), progress)
    stats = {k: v for k, v in sol.stats.items() if k != "length_history"}
    return {"file": Path(path).name, "n": instance.n, "problem": instance.problem,
            "solver": solver, "time_limit": limit, "cost": sol.cost,
            "feasible": sol.feasible, "violations": sol.violations[:3],
            "routes": len(sol.routes), "wall_s": round(sol.wall_time, 2),
            "read_s": round(read_s, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "curve": curve, "stats": stats}


def run(path: Path, solver: str, limit: float, seed: int = 0) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.sil", "child", str(path), solver, str(limit),
           str(seed)]
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                          timeout=limit * 3 + 300, check=False)
    if proc.returncode != 0:
        return {"file": path.name, "solver": solver, "time_limit": limit, "error":
                proc.stderr.strip().splitlines()[-1:] or ["failed"],
                "process_s": round(time.time() - t0, 1)}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = round(time.time() - t0, 1)
    return out


# -- sections -------------------------------------------------------------------------------------

def section_runs(args: argparse.Namespace) -> list[tuple[str, Path, float | None]]:
    """(set name, file, reference cost) for the chosen section."""
    if args.section == "tsp1k":
        return [("TSP1K uniform", write_uniform("tsp", 1000, SEED + i),
                 reference_length(1000) * SCALE) for i in range(args.count)]
    if args.section == "tsp10k":
        return [("TSP10K uniform", write_uniform("tsp", 10_000, SEED),
                 reference_length(10_000) * SCALE)]
    if args.section == "tsplib":
        optima = read_tsplib_optima(args.data / "tsplib" / "solutions.txt")
        return [("TSPLIB 1K–13.5K", args.data / "tsplib" / f, optima.get(f.split(".")[0]))
                for f in TSPLIB_FILES]
    if args.section == "large":
        return [("TSP100K uniform", write_uniform("tsp", 100_000, SEED),
                 reference_length(100_000) * SCALE),
                ("CVRP100K uniform", write_uniform("cvrp", 100_000, SEED, 2000), None)]
    if args.section == "cvrp":

        leuven = args.data / "cvrplib" / "XXL" / "Leuven1.vrp.gz"
        _, bks = read_sol(args.data / "cvrplib" / "XXL" / "Leuven1.sol.gz")
        return [(f"CVRP{n // 1000}K uniform", write_uniform("cvrp", n, SEED, cap), None)
                for n, cap in ((1000, 250), (5000, 500), (10_000, 1000))] + [
                    ("CVRPLIB XXL Leuven1 (3,001 nodes)", leuven, bks)]
    raise SystemExit(f"unknown section {args.section}")


def paired_runs(args: argparse.Namespace) -> list[tuple[str, Path, float | None, float]]:
    """(band, file, reference cost, seconds) of the paired study, after --only."""
    out: list[tuple[str, Path, float | None, float]] = []
    optima = read_tsplib_optima(args.data / "tsplib" / "solutions.txt")
    for band, count, seconds in PAIRED_PLAN:
        if args.only not in band:
            continue
        limit = round(seconds * args.budget_scale, 2)
        if band.startswith("TSPLIB"):
            out += [(band, args.data / "tsplib" / f, optima.get(f.split(".")[0]), limit)
                    for f in ("pr2392.tsp", "usa13509.tsp.gz")]
            continue
        n = int(band.split("K")[0].removeprefix("TSP")) * 1000
        out += [(band, write_uniform("tsp", n, SEED + i), reference_length(n) * SCALE, limit)
                for i in range(count)]
    return out


def _threads() -> str:
    """The thread settings every child ran with, for the meta line."""
    return (f"COSOLVE_TORCH_THREADS={os.environ.get('COSOLVE_TORCH_THREADS', '1')}, "
            f"COSOLVE_ILS_THREADS={os.environ.get('COSOLVE_ILS_THREADS', 'auto')}")


def run_paired(args: argparse.Namespace, argv: list[str]) -> int:
    """Every (instance, seed) solved by ils and sil_ls one after the other (the order flips
    with the seed so that a drift in the machine's load falls on both), each run merged into
    --out's ``paired`` rows as soon as it ends."""
    meta = (f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, seeds {args.seeds}, budget scale "
            f"{args.budget_scale:g}, {_threads()}, load average at start "
            f"{os.getloadavg()[0]:.2f}, machine "
            f"{json.dumps(machine_info(('torch', 'ortools', 'numba')))}")
    ok = 0
    found = checkpoints(PAIRED_SOLVERS)
    for band, path, ref, limit in paired_runs(args):
        for seed in args.seeds:
            order = PAIRED_SOLVERS if seed % 2 == 0 else PAIRED_SOLVERS[::-1]
            for solver in order:
                load = os.getloadavg()[0]
                r = run(path, solver, limit, seed)
                r.update(band=band, reference=ref, seed=seed, load_1m=round(load, 2))
                _stamp(r, found)
                print(json.dumps({k: v for k, v in r.items() if k not in ("curve", "stats")}),
                      flush=True)
                if "error" in r and not ok:
                    continue
                first, ok = not ok, ok + 1

                def add(data: dict[str, Any], r: dict[str, Any] = r, first: bool = first,
                        ) -> None:
                    if first:
                        data.setdefault("meta", {})["paired"] = meta
                        data.setdefault("provenance", {})["paired"] = {
                            **provenance("benchmarks.sil", argv, solvers=PAIRED_SOLVERS),
                            "section": "paired"}
                    r.pop("curve", None)
                    key = (r.get("file"), r["solver"], r["seed"], r["time_limit"])
                    data["paired"] = [x for x in data.get("paired", []) if (
                        x.get("file"), x["solver"], x["seed"], x["time_limit"]) != key] + [r]

                merge(args.out, add)
    if not ok:
        print(f"no run succeeded; {args.out} left as it was", file=sys.stderr)
        return 1
    return 0


def paired_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (band, budget): both solvers' mean gaps and the paired differences sil_ls − ils
    (percentage points of gap) with a 95% t-interval over instance×seed pairs."""
    from scipy import stats as st  # only the table needs it

    cost: dict[tuple[str, float, str, int, str], dict[str, Any]] = {}
    for r in rows:
        if r.get("feasible") and r.get("reference"):
            cost[(r["band"], r["time_limit"], str(r["file"]), r["seed"], r["solver"])] = r
    rank = {band: i for i, (band, _, _) in enumerate(PAIRED_PLAN)}
    bands = sorted({k[:2] for k in cost}, key=lambda b: (rank.get(b[0], 99), b))
    out = []
    for band, limit in bands:
        pairs = []
        for (b, t, f, seed, solver), r in sorted(cost.items()):
            other = cost.get((b, t, f, seed, "ils"))
            if (b, t) == (band, limit) and solver == "sil_ls" and other is not None:
                pairs.append((_gap(other["cost"], other["reference"]),
                              _gap(r["cost"], r["reference"]), r, other))
        if not pairs:
            continue
        d = np.array([s - i for i, s, _, _ in pairs])
        half = (float(st.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d)))
                if len(d) > 1 else None)
        out.append({"band": band, "limit": limit, "pairs": pairs, "diff": float(d.mean()),
                    "half": half, "wins": int((d < 0).sum()), "losses": int((d > 0).sum()),
                    "ils": float(np.mean([p[0] for p in pairs])),
                    "sil_ls": float(np.mean([p[1] for p in pairs])),
                    "files": len({p[2]["file"] for p in pairs}),
                    "seeds": sorted({p[2]["seed"] for p in pairs}),
                    "load": float(np.mean([p[2].get("load_1m", 0) for p in pairs]
                                          + [p[3].get("load_1m", 0) for p in pairs]))})
    return out


def render_paired(rows: list[dict[str, Any]]) -> list[str]:
    """The paired study's table (and per-pair lines), empty when it has not run."""
    summary = paired_summary(rows)
    if not summary:
        return []
    out = ["## sil_ls against ils at equal time (paired)", "",
           "Each instance solved with each seed by both solvers, one after the other; "
           "difference = sil_ls gap − ils gap in percentage points (negative: the model "
           "helps), 95% t-interval over the instance×seed pairs; wins / losses count the "
           "pairs where sil_ls is shorter / longer. Load = mean 1-minute load average at "
           "the runs' starts (2 cores; above 1.5 the machine was shared with other work).",
           "", "| band | budget (s) | instances × seeds | ils gap | sil_ls gap | "
           "sil_ls − ils (points) | 95% CI | sil_ls wins / losses | load |",
           "|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        ci = ("–" if s["half"] is None else
              f"[{s['diff'] - s['half']:+.3f}, {s['diff'] + s['half']:+.3f}]")
        out.append(f"| {s['band']} | {s['limit']:g} | {s['files']} × {len(s['seeds'])} | "
                   f"{s['ils']:.3f}% | {s['sil_ls']:.3f}% | {s['diff']:+.3f} | {ci} | "
                   f"{s['wins']} / {s['losses']} | {s['load']:.2f} |")
    out += ["", "| band | file | seed | ils gap | sil_ls gap | sil_ls kicks / ils kicks |",
            "|---|---|---|---|---|---|"]
    for s in summary:
        for i, g, r, o in s["pairs"]:
            out.append(f"| {s['band']} | {r['file']} | {r['seed']} | {i:.3f}% | {g:.3f}% | "
                       f"{r['stats'].get('kicks', '–')} / {o['stats'].get('kicks', '–')} |")
    return [*out, ""]


def _reference_name(set_name: str) -> str:
    if set_name.startswith("TSPLIB"):
        return "proven optimum"
    return "0.7128·√n + 0.58 (LKH-3 fit)"


def _stamp(run: dict[str, Any], found: list[dict[str, Any]]) -> None:
    """Names in a learned solver's run the checkpoint it loaded (one of ``found``)."""
    checkpoint = checkpoint_for(found, run["solver"], run.get("problem", "tsp"))
    if checkpoint is not None:
        run["checkpoint"] = checkpoint


def _checkpoint_of(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The checkpoint a group of runs loaded, when they all loaded the same one (None for the
    classical solvers, and for a group mixed across checkpoints, which wants a rerun)."""
    seen = {json.dumps(r.get("checkpoint"), sort_keys=True) for r in runs}
    return runs[0].get("checkpoint") if len(seen) == 1 else None


def paired_headline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leaderboard rows for the paired bands (set names end in "paired")."""
    out = []
    for s in paired_summary(rows):
        for k, solver in enumerate(PAIRED_SOLVERS):
            # pairs hold (ils gap, sil_ls gap, sil_ls run, ils run)
            runs = [p[3 - k] for p in s["pairs"]]
            out.append(headline("TSP", f"{s['band']}, paired", solver, f"{s['limit']:g} s",
                                s[solver], len(s["pairs"]), _reference_name(s["band"]),
                                _checkpoint_of(runs)))
    return out


def runs_headline(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leaderboard rows for the TSP sets: per set, solver and time limit, the mean gap of the
    feasible runs. The CVRP sections compare costs with OR-Tools; benchmarks.cvrp keeps the
    CVRP leaderboard."""
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = {}
    for r in runs:
        if (r.get("problem", "tsp") == "tsp" and r.get("reference") and r.get("feasible")
                and "cost" in r):
            groups.setdefault((r["set"], r["solver"], r["time_limit"]), []).append(r)
    out = []
    for (set_name, solver, limit), rs in sorted(groups.items()):
        gaps = [_gap(r["cost"], r["reference"]) for r in rs]
        out.append(headline("TSP", set_name, solver, f"{limit:g} s", float(np.mean(gaps)),
                            len(rs), _reference_name(set_name), _checkpoint_of(rs)))
    return out


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """Sections may run in parallel processes; they merge into one results file. The lock
    lives in the git-ignored cache, keyed by the results path (beside the results it was a
    stray file in benchmarks/results/, which holds only tables and their data)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha1(str(out.resolve()).encode()).hexdigest()[:12]
    with open(CACHE / f".sil-{key}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def merge(out: Path, update: Any) -> dict[str, Any]:
    """Re-read the results, apply ``update(data)``, write them back; all under the lock."""
    with _locked(out):
        data = load_results(out)
        update(data)
        save_results(out, data)
    return data


def load_results(out: Path) -> dict[str, Any]:
    path = out.with_suffix(".json")
    return json.loads(path.read_text()) if path.exists() else {"runs": [], "meta": {}}


def save_results(out: Path, data: dict[str, Any]) -> None:
    """The runs to ``out``'s .json, the table to its .md (atomically: a reader never sees
    half a file)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    data["headline"] = runs_headline(data.get("runs", [])) + paired_headline(
        data.get("paired", []))
    for path, text in ((out.with_suffix(".json"), json.dumps(data, indent=1) + "\n"),
                       (out.with_suffix(".md"), render(data))):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)


def _gap(cost: float | None, ref: float | None) -> float | None:
    if cost is None or ref is None or not math.isfinite(cost):
        return None
    return 100 * (cost / ref - 1)


def _fmt(x: float | None, digits: int = 2, suffix: str = "") -> str:
    return "–" if x is None else f"{x:.{digits}f}{suffix}"


INTRO = (
    "Does the SIL model earn its place on a CPU? Every solver here has one core and the same "
    "time limit; each run is its own process (peak RSS per run), reads the file, solves "
    "through the service's `solve`, and its solution is checked by independent code.",
    "",
    "- `sil`: the model alone. A start tour (the model's greedy tour over the 100 nearest "
    "candidates where it fits in a quarter of the limit, else random insertion), then SIL's "
    "parallel local reconstruction until the limit, keeping every rebuilt segment that is "
    "shorter. On CVRP the same TSP model rebuilds segments of the routes chained into one "
    "tour (split back into routes exactly) and segments inside each route.",
    "- `sil_ls`: the same, with classical moves: 2-opt + Or-opt on the start and after every "
    "round (on CVRP also the relocate / swap / 2-opt* descent between routes), and after "
    "every round as long again of `ils`'s annealed kicks.",
    "- `ils`: the classical part alone, from random insertion: 2-opt + Or-opt, then annealed "
    "double-bridge kicks (TSP) or the descent with ruin-and-recreate kicks (CVRP) for the "
    "whole limit, one search at a time (`--ils-threads 1`).",
    "- `ortools`, `pyvrp`: the baselines at the same limit.",
    "",
    "Gaps are to 0.7128·√n + 0.58 on uniform TSP (unit square; a fit to the LKH-3 averages "
    "in the SIL paper, within 0.1% at 1K–100K), to the proven optima on TSPLIB, and to the "
    "best-known value on Leuven1; uniform CVRP has no reference, so its column is the cost "
    "over OR-Tools'. The start gap is that of the start tour; the rounds column counts "
    "reconstruction rounds for `sil` / `sil_ls` and kicks for `ils` (kicks kept on CVRP). "
    "Each section's line below gives its command, date, commit, machine, thread settings, "
    "and the checkpoint behind the learned rows.")


#: The order of the sets in the table, small TSP to large CVRP, whatever order they ran in.
SET_ORDER = ("TSP1K uniform", "TSPLIB 1K–13.5K", "TSP10K uniform", "TSP100K uniform",
             "CVRP1K uniform", "CVRPLIB XXL Leuven1 (3,001 nodes)", "CVRP5K uniform",
             "CVRP10K uniform", "CVRP100K uniform")


def _set_rank(name: str) -> tuple[int, str]:
    return (SET_ORDER.index(name) if name in SET_ORDER else len(SET_ORDER), name)


def render(data: dict[str, Any]) -> str:
    runs = data["runs"]
    out = ["# SIL benchmark", "", *INTRO, ""]
    for key, meta in sorted(data.get("meta", {}).items()):
        out.append(f"- `{key}`: {meta}")
    out.append("")
    runs_of = data.get("provenance", {})
    for key in sorted(runs_of):
        out += header_lines(runs_of[key])
    out.append("")
    sets: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        sets.setdefault(r["set"], []).append(r)
    for name, rs in sorted(sets.items(), key=lambda item: _set_rank(item[0])):
        out += [f"## {name}", "", "| solver | time limit (s) | instances | feasible | mean gap "
                "| mean start gap | mean wall (s) | max peak RSS (MB) | cost / OR-Tools |",
                "|---|---|---|---|---|---|---|---|---|"]
        groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
        for r in rs:
            groups.setdefault((r["solver"], r["time_limit"]), []).append(r)
        ortools = {(r["file"], r["time_limit"]): r.get("cost") for r in rs
                   if r["solver"] == "ortools" and "cost" in r}
        for (solver, limit), g in sorted(groups.items()):
            ok = [r for r in g if r.get("feasible")]
            gaps = [x for x in (_gap(r["cost"], r.get("reference")) for r in ok) if x is not None]
            starts = [x for x in (_gap(r["stats"].get("start_length"), r.get("reference"))
                                  for r in ok) if x is not None]
            ratios = [r["cost"] / ortools[(r["file"], limit)] for r in ok
                      if ortools.get((r["file"], limit))]
            out.append("| " + " | ".join([
                solver, f"{limit:g}", str(len(g)), str(len(ok)),
                _fmt(float(np.mean(gaps)) if gaps else None, 2, "%"),
                _fmt(float(np.mean(starts)) if starts and solver != "ortools" else None, 2,
                     "%"),
                _fmt(float(np.mean([r["wall_s"] for r in ok])) if ok else None, 1),
                str(max((r.get("peak_rss_mb", 0) for r in ok), default="–")),
                _fmt(float(np.mean(ratios)) if ratios else None, 4)]) + " |")
            for r in g:
                if "error" in r:
                    out.append(f"|  ↳ {r['file']} failed: {r['error']} | | | | | | | | |")
        if len(rs) <= 12:
            out += ["", "| file | solver | cost | gap | rounds | wall (s) | peak RSS (MB) |",
                    "|---|---|---|---|---|---|---|"]
            for r in rs:
                if "cost" in r:
                    rounds = r["stats"].get("rounds", r["stats"].get(
                        "kicks", r["stats"].get("kicks_kept", "–")))
                    out.append(f"| {r['file']} | {r['solver']} | {r['cost']:.0f} | "
                               f"{_fmt(_gap(r['cost'], r.get('reference')), 2, '%')} | "
                               f"{rounds} | {r['wall_s']} | "
                               f"{r.get('peak_rss_mb', '–')} |")
        out.append("")
    out += render_paired(data.get("paired", []))
    return "\n".join(out) + "\n"


def curve_svg(runs: list[dict[str, Any]], title: str) -> str:
    """A small line chart of cost over time, one line per solver."""
    w, h, pad = 640, 360, 60
    pts = [(t, c) for r in runs for t, c in r.get("curve", [])]
    if not pts:
        return ""
    t_max = max(t for t, _ in pts) or 1.0
    c_lo, c_hi = min(c for _, c in pts), max(c for _, c in pts)
    span = (c_hi - c_lo) or 1.0
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]

    def xy(t: float, c: float) -> str:
        return (f"{pad + (w - 2 * pad) * t / t_max:.1f},"
                f"{h - pad - (h - 2 * pad) * (c - c_lo) / span:.1f}")

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w / 2}" y="20" text-anchor="middle">{title}</text>',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
             f'<text x="{w / 2}" y="{h - 20}" text-anchor="middle">seconds '
             f'(0–{t_max:.0f})</text>',
             f'<text x="{pad - 5}" y="{pad}" text-anchor="end">{c_hi:.4g}</text>',
             f'<text x="{pad - 5}" y="{h - pad}" text-anchor="end">{c_lo:.4g}</text>']
    for i, r in enumerate(runs):
        curve = r.get("curve", [])
        if not curve:
            continue
        colour = colours[i % len(colours)]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                     + " ".join(xy(t, c) for t, c in curve) + '"/>')
        parts.append(f'<text x="{w - pad - 150}" y="{pad + 16 * i}" fill="{colour}">'
                     f'{r["solver"]} ({r["time_limit"]:g} s)</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The options, checked before anything runs or is written (before: a typo in
    --solvers added an error row to the committed results, and a missing data folder
    crashed after the header line had been written)."""
    parser = parser_for("benchmarks.sil", __doc__)
    parser.add_argument("section", choices=["tsp1k", "tsp10k", "tsplib", "large", "cvrp",
                                            "paired", "render"],
                        help="which set to run; render only rebuilds --out's table from its "
                             "JSON")
    parser.add_argument("--count", type=int, default=32, help="instances of tsp1k")
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--solvers", default="sil,sil_ls,ils,ortools",
                        help="comma-separated solver names")
    parser.add_argument("--only", default="",
                        help="run only the section's sets whose name contains this text "
                             "(e.g. CVRP)")
    parser.add_argument("--out", type=Path, default=RESULTS / "sil.md",
                        help="results path: the table goes to it with .md, the runs (which "
                             "accumulate over invocations) with .json, the 100K curves "
                             "beside it")
    parser.add_argument("--seeds", default="0,1,2",
                        help="paired: comma-separated solver seeds, each run on every instance")
    parser.add_argument("--budget-scale", type=float, default=1.0,
                        help="paired: multiplies every band's seconds (for a quick try)")
    parser.add_argument("--ils-threads", default="1",
                        help="CVRP searches ils runs at once (COSOLVE_ILS_THREADS); 1 by "
                             "default, so that every solver here has one core")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="folder holding tsplib/ and cvrplib/ (sections tsplib and cvrp)")
    args = parser.parse_args(argv)
    if args.section == "render":
        if not args.out.with_suffix(".json").is_file():
            parser.error(f"--out: no {args.out.with_suffix('.json')} to render")
        return args
    args.solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    if not args.solvers:
        parser.error("--solvers: give at least one solver")
    check_solvers(parser, args.solvers)
    if args.count < 1:
        parser.error("--count: at least 1")
    try:
        args.seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    except ValueError:
        parser.error("--seeds: comma-separated integers")
    if not args.seeds:
        parser.error("--seeds: give at least one seed")
    if not (math.isfinite(args.budget_scale) and args.budget_scale > 0):
        parser.error("--budget-scale: a positive number")
    if not (math.isfinite(args.time_limit) and args.time_limit > 0):
        parser.error("--time-limit: a positive number of seconds")
    missing = [f for f in DATA_FILES.get(args.section, ()) if not (args.data / f).is_file()]
    if missing:
        parser.error(f"--data: {args.section} needs {', '.join(missing)} under {args.data}")
    wrong = tuning_problem("COSOLVE_ILS_THREADS", args.ils_threads)
    if wrong:
        parser.error(f"--ils-threads: {wrong}")
    check_out(parser, args.out)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "child":
        print(json.dumps(run_child(argv[1], argv[2], float(argv[3]), int(argv[4]))))
        return 0
    args = parse_args(argv)
    if args.section == "render":
        merge(args.out, lambda data: None)
        return 0
    os.environ["COSOLVE_ILS_THREADS"] = args.ils_threads  # the children read it
    if args.section == "paired":
        return run_paired(args, argv)
    solvers = args.solvers
    meta = (f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, seed {SEED}, solvers {solvers}, "
            f"{_threads()}, machine "
            f"{json.dumps(machine_info(('torch', 'ortools', 'numba')))}")
    meta_key = f"{args.section} @ {args.time_limit:g}s"
    # Nothing is written until a run has succeeded: the meta line and any failed rows before
    # it wait here (before: a run that crashed or only failed rewrote the results).
    pending: list[dict[str, Any]] = []
    data: dict[str, Any] | None = None
    found = checkpoints(solvers)
    for set_name, path, ref in section_runs(args):
        if args.only not in set_name:
            continue
        for solver in solvers:
            r = run(path, solver, args.time_limit)
            r["set"], r["reference"] = set_name, ref
            _stamp(r, found)
            pending.append(r)
            print(json.dumps({k: v for k, v in r.items() if k not in ("curve", "stats")}),
                  flush=True)
            if data is None and "error" in r:
                continue

            def add(data: dict[str, Any], rows: list[dict[str, Any]] = pending,
                    first: bool = data is None) -> None:
                if first:
                    data.setdefault("meta", {})[meta_key] = meta
                    data.setdefault("provenance", {})[meta_key] = {
                        **provenance("benchmarks.sil", argv, solvers=solvers),
                        "section": meta_key}
                for r in rows:
                    data["runs"] = [x for x in data["runs"] if not (
                        x.get("file") == r.get("file") and x["solver"] == r["solver"]
                        and x["time_limit"] == r["time_limit"])] + [r]

            data = merge(args.out, add)
            pending = []
        if args.section == "large" and data is not None:
            these = [x for x in data["runs"] if x.get("file") == path.name]
            svg = args.out.parent / (f"{args.out.stem}_100k_"
                                     f"{path.suffix[1:].replace('vrp', 'cvrp')}.svg")
            svg.write_text(curve_svg(these, f"{path.stem}: cost over time (2 CPU cores)"))
    if data is None:
        print(f"no run succeeded; {args.out} left as it was", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
