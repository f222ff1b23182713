"""Which rule to recommend at which load: the correctly timed rules from a light pool to an
overloaded one.

Every policy schedules the same Poisson streams (held-out seeds) of the classic GOODRL
templates and of the Pegasus DAX files in ../shared/data/workflows, on the 6×4 and 5×5 pools,
at arrival rates from light load to a pool that cannot keep up; each schedule's utilization
and flowtimes are recomputed by the independent checker. The table gives each rule's mean
flowtime above the best rule of its row.

    python -m benchmarks.scheduling_load --workflows 1000 --seeds 5000,5001
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    REPO,
    check_out,
    header_lines,
    headline,
    integers,
    numbers,
    parser_for,
    provenance,
    write_table,
)
from solvers.scheduling.check import check_result, expected_stream
from solvers.scheduling.registry import get_policy
from solvers.scheduling.simulator import Arrivals, parse_pool, simulate
from solvers.scheduling.workflow import Workflow, classic_templates, load_workflows

OUT = REPO / "benchmarks" / "results" / "scheduling_load.md"
PEGASUS = REPO.parent / "shared" / "data" / "workflows"
POLICIES = ("heft_slack", "heft", "eft")
#: Utilization from which the table calls a pool overloaded (as the simulate answer warns).
OVERLOADED = 0.9


def template_sets() -> dict[str, list[Workflow]]:
    sets = {"classic": classic_templates()}
    files = sorted(PEGASUS.glob("*.xml*"))
    if files:
        sets["pegasus"] = load_workflows(files)
    return sets


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for set_name, templates in template_sets().items():
        for pool_text in args.pools:
            pool = parse_pool(pool_text)
            for rate in args.rates:
                flow: dict[str, list[float]] = {p: [] for p in args.policies}
                util: list[float] = []
                for seed in args.seeds:
                    for name in args.policies:
                        res = simulate(templates, pool, Arrivals(args.workflows, (rate,)),
                                       get_policy(name), seed, record=True)
                        stream = expected_stream(len(templates), args.workflows, (rate,), seed)
                        checked = check_result(templates, pool.speeds, res, stream)
                        if not checked.ok:
                            raise SystemExit(f"{name} failed its check: {checked.violations}")
                        flow[name].append(checked.mean_flowtime)
                        util.append(checked.utilization)
                row = {"set": set_name, "pool": pool_text, "rate": rate,
                       "utilization": float(np.mean(util)),
                       "flowtime": {p: float(np.mean(v)) for p, v in flow.items()}}
                rows.append(row)
                print(row, flush=True)
    return rows


def write(rows: list[dict[str, Any]], args: argparse.Namespace, prov: dict[str, Any],
          out: Path) -> None:
    names = list(args.policies)
    lines = ["# Scheduling rules by load", "", *header_lines(prov),
             f"- Streams: {args.workflows} workflows per stream, seeds "
             f"{', '.join(map(str, args.seeds))}; templates: GOODRL's four classic ones, and the "
             "Pegasus DAX files of ../shared/data/workflows (a uniformly drawn template "
             "per arrival); every schedule checked and its flowtimes recomputed by "
             "solvers.scheduling.check", "",
             "Mean flowtime above the best rule of the row (%); the row's best in bold.", "",
             "| templates | pool | rate (/h) | utilization | " + " | ".join(names) + " |",
             "|---|---|---:|---:|" + "---:|" * len(names)]
    worst = {p: {"light": 0.0, "overloaded": 0.0} for p in names}
    for r in rows:
        best = min(r["flowtime"].values())
        band = "overloaded" if r["utilization"] >= OVERLOADED else "light"
        cells = []
        for p in names:
            gap = 100 * (r["flowtime"][p] / best - 1)
            worst[p][band] = max(worst[p][band], gap)
            cells.append(f"**{gap:+.1f}**" if gap < 1e-9 else f"{gap:+.1f}")
        lines.append(f"| {r['set']} | {r['pool']} | {r['rate']:g} | {r['utilization']:.2f} | "
                     + " | ".join(cells) + " |")
    lines += ["", f"Worst gap to the row's best, utilization below {OVERLOADED} and from it:", "",
              "| rule | below | overloaded |", "|---|---:|---:|"]
    lines += [f"| {p} | {w['light']:+.1f} % | {w['overloaded']:+.1f} % |"
              for p, w in worst.items()]
    rows_out = [headline("scheduling", f"by load, utilization {band} (worst row)", p,
                         f"{args.workflows} workflows", w[band], len(rows),
                         "best correctly timed rule of the row")
                for p, w in worst.items() for band in ("light", "overloaded")]
    write_table(out, lines, {"rows": rows, "worst": worst}, prov, rows_out)


def main(argv: list[str] | None = None) -> int:
    p = parser_for("benchmarks.scheduling_load", __doc__)
    p.add_argument("--workflows", type=int, default=1000, help="workflows per stream")
    p.add_argument("--seeds", default="5000,5001", help="comma-separated stream seeds")
    p.add_argument("--rates", default="5.4,20,40,45,55,70,90",
                   help="arrival rates (workflows per hour)")
    p.add_argument("--pools", default="6x4,5x5", help="comma-separated pools")
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    args.seeds = integers(p, "--seeds", args.seeds)
    args.rates = numbers(p, "--rates", args.rates)
    args.pools = args.pools.split(",")
    args.policies = args.policies.split(",")
    if args.workflows < 1:
        p.error("--workflows: at least 1")
    check_out(p, args.out)
    prov = provenance("benchmarks.scheduling_load", argv)
    write(run(args), args, prov, args.out)
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
