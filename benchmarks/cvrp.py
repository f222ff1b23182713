"""CVRP at equal time, paired: ``ils`` against ``pyvrp`` on CVRPLIB's Set X by size band,
on the Belgium instances (Arnold, Gendreau and Sorensen) and on one uniform instance of
100,000 customers.

    python -m benchmarks.cvrp [--limit 20] [--seeds 0] [--sets x,belgium,uniform]

Every instance runs both solvers one after the other (ils first, then pyvrp, per seed), each
in a fresh child process forked from the driver, with the same seed and wall-clock limit, so
a machine shared with other work slows both alike. Gaps are to the best-known cost of
CVRPLIB's ``.sol`` files. The uniform instance (``solvers.routing.generate.random_cvrp``,
fixed seed) has no reference: its row gives ``ils``'s cost, routes and memory (PyVRP builds
an n × n matrix, 80 GB at that size, and is not run there).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    RESULTS,
    header_lines,
    headline,
    integers,
    machine_info,
    numbers,
    parser_for,
    provenance,
    relative,
    warm_up,
    write_table,
)
from benchmarks.routing import run_isolated
from solvers.contract import Budget
from solvers.routing.generate import random_cvrp
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_sol
from solvers.routing.problem import CVRPInstance
from solvers.tuning import tuning_problem

SOLVERS = ("ils", "pyvrp")
BANDS = ((100, 300), (300, 600), (600, 1001))
BELGIUM = ("Leuven1", "Antwerp1", "Brussels1")
UNIFORM_SEED = 2026
REFERENCE = "best-known (CVRPLIB .sol)"


def band_of(n: int) -> str:
    """The size band of an instance of n nodes (depot included), in customers."""
    for lo, hi in BANDS:
        if lo <= n - 1 < hi or (lo <= n < hi):
            return f"{lo}-{min(hi, 1000)}"
    return "other"


def _run(instance: Any, solver: str, limit: float, seed: int) -> dict[str, Any]:
    """One solve in a child process: cost, routes, wall time and memory, or the error."""
    result = run_isolated(instance, solver, Budget(limit, seed), 2 * limit + 120)
    row: dict[str, Any] = {"solver": solver, "seed": seed, "limit": limit,
                           "wall": result.get("wall_time"), "rss_mb": result.get("max_rss_mb")}
    if "solution" in result:
        sol = result["solution"]
        row.update(cost=float(sol.cost) if math.isfinite(sol.cost) else None,
                   feasible=bool(sol.feasible), routes=len([r for r in sol.routes if r]),
                   threads=int((sol.stats or {}).get("threads", 1)))
    else:
        row["error"] = result.get("error") or result.get("killed") or result.get("crashed")
    return row


def _paired(name: str, path: Path, sol: Path, limit: float, seeds: Sequence[int],
            tag: str) -> list[dict[str, Any]]:
    instance = load_instance(path)
    _, bks = read_sol(sol)
    rows = []
    for seed in seeds:
        for solver in SOLVERS:
            row = _run(instance, solver, limit, seed)
            row.update(set=tag, instance=name, n=instance.n, reference=bks,
                       gap=(100 * (row["cost"] / bks - 1) if row.get("cost") and bks
                            and row.get("feasible") else None))
            print(f"{tag:8} {name:14} {solver:6} seed {seed} cost {row.get('cost')} "
                  f"gap {_pct(row['gap'])} wall {row['wall']:.1f}", flush=True)
            rows.append(row)
    return rows


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean gap per set (Set X per band) and solver, with ils's wins against pyvrp on the
    same instance and seed."""
    out = []
    groups = sorted({(r["set"], r["band"]) for r in rows if r["set"] != "uniform"})
    for tag, band in groups:
        mine = [r for r in rows if (r["set"], r["band"]) == (tag, band)]
        pairs: dict[tuple[str, int], dict[str, float]] = {}
        for r in mine:
            if r["gap"] is not None:
                pairs.setdefault((r["instance"], r["seed"]), {})[r["solver"]] = r["gap"]
        both = [p for p in pairs.values() if len(p) == 2]
        wins = sum(p["ils"] < p["pyvrp"] - 1e-9 for p in both)
        losses = sum(p["ils"] > p["pyvrp"] + 1e-9 for p in both)
        for solver in SOLVERS:
            gaps = [r["gap"] for r in mine if r["solver"] == solver and r["gap"] is not None]
            out.append({"set": tag, "band": band, "solver": solver, "runs": len(gaps),
                        "mean_gap": _mean(gaps), "ils_wins": wins, "ils_losses": losses,
                        "ties": len(both) - wins - losses})
    return out


def render(meta: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    s = meta["settings"]
    m = meta["machine"]
    lines = ["# CVRP: ils against pyvrp at equal time", "",
             *header_lines(meta["provenance"]),
             f"- Finished: {meta['finished'] or 'running'}",
             f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM; load "
             f"average at start {_loads(meta)}"
             + (" (shared with other work: both solvers saw the same load, one run at a "
                "time, alternating)" if _shared(meta) else ""),
             f"- Settings: Set X {s['limit']:g} s per run, Belgium {s['belgium_limit']:g} s, "
             f"uniform {s['uniform_n']:,} customers {s['uniform_limit']:g} s "
             f"(generate.random_cvrp, seed {UNIFORM_SEED}); seeds {s['seeds']}; "
             f"sets {', '.join(s['sets'])}",
             f"- Data: `{s['data']}`; reference: {REFERENCE}",
             f"- Cores: {_cores(rows)}", "",
             "## Mean gap per set and solver", "",
             "| set | band (customers) | solver | runs | mean gap % | ils better / worse / "
             "level (paired) |", "|---|---|---|---:|---:|---|"]
    for g in summary(rows):
        lines.append(f"| {g['set']} | {g['band']} | {g['solver']} | {g['runs']} | "
                     f"{_pct(g['mean_gap'])} | {g['ils_wins']} / {g['ils_losses']} / "
                     f"{g['ties']} |")
    lines += ["", "## All runs", "",
              "| set | instance | n | solver | seed | limit (s) | cost | reference | gap % | "
              "routes | wall (s) | max RSS (MB) | error |",
              "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        cost = "–" if r.get("cost") is None else f"{r['cost']:.6g}"
        lines.append(f"| {r['set']} | {r['instance']} | {r['n']} | {r['solver']} | "
                     f"{r['seed']} | {r['limit']:g} | {cost} | {r.get('reference') or '–'} | "
                     f"{_pct(r['gap'])} | {r.get('routes', '–')} | "
                     f"{(r['wall'] or 0):.1f} | {(r['rss_mb'] or 0):.0f} | "
                     f"{r.get('error') or ''} |")
    return lines


def _sections(meta: dict[str, Any]) -> list[dict[str, Any]]:
    prov = meta["provenance"]
    return prov if isinstance(prov, list) else [prov]


def _loads(meta: dict[str, Any]) -> str:
    """The load average at the start of each run the table holds, named by its sets when
    there are several."""
    sections = _sections(meta)
    return "; ".join(
        ", ".join(map(str, p.get("load", meta["machine"]["load_average_at_start"])))
        + (f" ({p['section']})" if len(sections) > 1 else "") for p in sections)


def _shared(meta: dict[str, Any]) -> bool:
    return any(p.get("load", meta["machine"]["load_average_at_start"])[0] > 1.5
               for p in _sections(meta))


def _cores(rows: list[dict[str, Any]]) -> str:
    """What each solver ran on: ils's searches (one thread each), pyvrp's single thread."""
    threads = sorted({r["threads"] for r in rows if r["solver"] == "ils" and "threads" in r})
    used = "/".join(map(str, threads)) or "–"
    return (f"ils {used} thread(s) (COSOLVE_ILS_THREADS), one search each: on the whole "
            "plan exchanging the best below 1,000 customers a thread, else each on its own "
            "region of the plan (solvers/routing/classical/regions.py); pyvrp 1 thread")


def headlines(meta: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Leaderboard rows: each solver's mean gap over all of Set X and over Belgium."""
    out = []
    s = meta["settings"]
    for tag, limit in (("X", s["limit"]), ("belgium", s["belgium_limit"])):
        for solver in SOLVERS:
            gaps = [r["gap"] for r in rows if r["set"] == tag and r["solver"] == solver
                    and r["gap"] is not None]
            if gaps:
                # the instances this solver answered (pyvrp refuses Brussels1's 15,001 nodes)
                solved = {r["instance"] for r in rows if r["set"] == tag
                          and r["solver"] == solver and r["gap"] is not None}
                out.append(headline("CVRP", "cvrplib-X" if tag == "X" else "cvrplib-Belgium",
                                    solver, f"{limit:g} s", _mean(gaps), len(solved),
                                    REFERENCE))
    return out


_TAGS = {"x": "X", "belgium": "belgium", "uniform": "uniform"}
#: The settings a set's runs depend on: a set's rows are carried into a later run's table
#: only when these agree.
_DEPENDS = {"x": ("limit",), "belgium": ("belgium_limit",),
            "uniform": ("uniform_n", "uniform_limit")}


def earlier(out: Path, meta: dict[str, Any], sets: list[str]) -> list[dict[str, Any]]:
    """The runs of the sets this run leaves out, from the table at ``out`` when they were
    made with the same seeds, threads and limits (a Belgium run after a Set X run makes one
    table of both); their commands join this run's in the header, each named by its sets."""
    path = out.with_suffix(".json")
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    old, new = data.get("settings", {}), meta["settings"]
    carried = [name for name in old.get("sets", []) if name not in sets
               and all(old.get(k) == new[k] for k in ("seeds", "ils_threads",
                                                      *_DEPENDS[name]))]
    rows = [r for r in data.get("runs", []) if r["set"] in {_TAGS[c] for c in carried}]
    if not rows:
        return []
    provs = data["provenance"] if isinstance(data["provenance"], list) else [
        {**data["provenance"], "section": ", ".join(old["sets"]),
         "load": data["machine"]["load_average_at_start"]}]
    kept = []
    for p in provs:
        left = [c for c in p["section"].split(", ") if c in carried]
        if left:
            kept.append({**p, "section": ", ".join(left)})
    meta["provenance"] = [*kept, {**meta["provenance"], "section": ", ".join(sets),
                                  "load": meta["machine"]["load_average_at_start"]}]
    meta["settings"]["sets"] = [c for c in _TAGS if c in {*carried, *sets}]
    return rows


def write(out: Path, meta: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    for r in rows:
        r["band"] = band_of(r["n"]) if r["set"] == "X" else r["set"]
    write_table(out, render(meta, rows), {"settings": meta["settings"], "machine":
                                          meta["machine"], "runs": rows},
                meta["provenance"], headlines(meta, rows))


def main(argv: Sequence[str] | None = None) -> int:
    parser = parser_for("benchmarks.cvrp", __doc__)
    parser.add_argument("--limit", default="20", help="seconds per Set X run")
    parser.add_argument("--belgium-limit", default="120", help="seconds per Belgium run")
    parser.add_argument("--uniform-n", type=int, default=100_000, help="uniform customers")
    parser.add_argument("--uniform-limit", default="60", help="seconds for the uniform run")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds")
    parser.add_argument("--sets", default="x,belgium,uniform", help="x, belgium, uniform")
    parser.add_argument("--instances", default="", help="Set X names to run (default all)")
    parser.add_argument("--ils-threads", default="auto",
                        help="COSOLVE_ILS_THREADS for the ils runs (auto: the CPUs available)")
    parser.add_argument("--data", type=Path, default=DATA, help="shared data folder")
    parser.add_argument("--out", type=Path, default=RESULTS / "cvrp.md")
    args = parser.parse_args(argv)
    limit = numbers(parser, "--limit", args.limit)[0]
    belgium_limit = numbers(parser, "--belgium-limit", args.belgium_limit)[0]
    uniform_limit = numbers(parser, "--uniform-limit", args.uniform_limit)[0]
    seeds = integers(parser, "--seeds", args.seeds)
    sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    if not set(sets) <= {"x", "belgium", "uniform"}:
        parser.error(f"--sets: choose from x, belgium, uniform; got {args.sets!r}")
    wrong = tuning_problem("COSOLVE_ILS_THREADS", args.ils_threads)
    if wrong:  # else the children would fall back to auto without a word
        parser.error(f"--ils-threads: {wrong}")
    os.environ["COSOLVE_ILS_THREADS"] = args.ils_threads  # the forked children read it
    meta = {"provenance": provenance("benchmarks.cvrp", argv), "machine": machine_info(),
            "finished": None,
            "settings": {"limit": limit, "belgium_limit": belgium_limit,
                         "uniform_n": args.uniform_n, "uniform_limit": uniform_limit,
                         "seeds": seeds, "sets": sets, "data": relative(args.data),
                         "ils_threads": args.ils_threads}}
    warm_up(SOLVERS)
    rows = earlier(args.out, meta, sets)
    wanted = {s for s in args.instances.split(",") if s}
    if "x" in sets:
        folder = args.data / "cvrplib" / "X"
        for path in sorted(folder.glob("*.vrp"), key=lambda p: int(p.stem.split("-")[1][1:])):
            if wanted and path.stem not in wanted:
                continue
            rows += _paired(path.stem, path, path.with_suffix(".sol"), limit, seeds, "X")
            write(args.out, meta, rows)
    if "belgium" in sets:
        folder = args.data / "cvrplib" / "XXL"
        for name in BELGIUM:
            rows += _paired(name, folder / f"{name}.vrp.gz", folder / f"{name}.sol.gz",
                            belgium_limit, seeds, "belgium")
            write(args.out, meta, rows)
    if "uniform" in sets:
        coords, demands, capacity = random_cvrp(np.random.default_rng(UNIFORM_SEED),
                                                args.uniform_n + 1)
        inst = CVRPInstance(coords=coords, demands=demands, capacity=capacity)
        row = _run(inst, "ils", uniform_limit, seeds[0])
        row.update(set="uniform", instance=f"uniform-{args.uniform_n}", n=inst.n,
                   reference=None, gap=None)
        print(f"uniform ils cost {row.get('cost')} wall {row['wall']:.1f} "
              f"rss {row['rss_mb']:.0f} MB", flush=True)
        rows.append(row)
    meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    write(args.out, meta, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
