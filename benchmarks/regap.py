"""Gaps of stored results to the current PyVRP reference cache, without solving anything again.

The PolyNet/ReLD benchmarks store every solve's cost in their JSON (``records``) and take the
gap to PyVRP from a cache (``reld_reference_{tsp,cvrp}.json``, PyVRP at 2 s / 4 s on the
uniform sets). When that cache is recomputed (2026-12-04: the CVRP one held four PyVRP runs
19–31 % above a fresh run and was 0.27 % weaker at the median, so every CVRP100 gap read about
1 % too low), the published gaps are recomputed from the stored costs with this:

    python -m benchmarks.regap benchmarks/results/polynet_vs_reld.json [...]

It prints, per file, set and solver, the mean and median gap (%) over the instances the file
holds (the first N of the 128), and the mean with its 95 % bootstrap interval.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import parser_for
from benchmarks.reld import REFERENCE_LIMIT, RESULTS, SEED

#: The cache key of the uniform 100-node sets the benchmarks use (benchmarks.reld.references).
COUNT, NODES = 128, 100


def reference(problem: str) -> list[float]:
    """The cached PyVRP costs of the first 128 uniform ``problem`` instances."""
    cache = json.loads((RESULTS / f"reld_reference_{problem}.json").read_text())
    return cache[f"seed{SEED}-n{NODES}-count{COUNT}-pyvrp{REFERENCE_LIMIT[problem]}"]


def solver_runs(records: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(set, solver, runs) for every TSP/CVRP set of a results file's records: keys such as
    ``cvrp@4`` (polynet_vs_reld) or ``cvrp`` (polynet), each solver's runs in instance order."""
    out: list[tuple[str, str, list[dict[str, Any]]]] = []
    if not isinstance(records, dict):  # e.g. cvrptw.json's list of rows
        return out
    for key, by_solver in records.items():
        if key.split("@")[0] not in ("tsp", "cvrp") or not isinstance(by_solver, dict):
            continue
        for solver, runs in by_solver.items():
            if isinstance(runs, list):
                out.append((key, solver, runs))
    return out


def bootstrap_interval(values: list[float], seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    data = np.asarray(values)
    means = data[rng.integers(0, len(data), (10_000, len(data)))].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def regap(path: Path) -> list[str]:
    """Markdown rows: file, set, solver, instances, mean gap [95% CI], median gap."""
    body = json.loads(path.read_text())
    records = body.get("records", body)
    rows = []
    for key, solver, runs in solver_runs(records):
        refs = reference(key.split("@")[0])
        gaps = [100.0 * (run["cost"] / ref - 1.0) for run, ref in zip(runs, refs, strict=False)
                if run.get("cost") is not None and run.get("feasible", True)]
        if not gaps:
            continue
        lo, hi = bootstrap_interval(gaps)
        rows.append(f"| {path.name} | {key} | {solver} | {len(gaps)} | "
                    f"{statistics.fmean(gaps):+.2f} [{lo:+.2f}, {hi:+.2f}] | "
                    f"{statistics.median(gaps):+.2f} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.regap", __doc__)
    parser.add_argument("files", nargs="+", type=Path, help="results JSON files")
    args = parser.parse_args(argv)
    # QA sweep: a missing file or a .md was a traceback, a file without TSP/CVRP records
    # printed a bare header; each is now a one-line error (exit 2) before any output
    rows: list[str] = []
    for path in args.files:
        if not path.is_file():
            parser.error(f"files: no file {path}")
        try:
            found = regap(path)
        except (ValueError, AttributeError, KeyError, TypeError):
            parser.error(f"files: {path} is not a results JSON with 'records' (give the "
                         ".json beside a report)")
        if not found:
            parser.error(f"files: no TSP/CVRP records in {path}")
        rows += found
    print("| file | set | solver | instances | mean gap % [95% CI] | median gap % |")
    print("|---|---|---|---:|---:|---:|")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
