"""Min-cost-flow benchmark: OR-Tools, networkx and OFT-Sinkhorn on NETGEN-style and DIMACS
networks, plus a batched OFT-Sinkhorn run against OR-Tools → a markdown table and JSON.

    python -m benchmarks.flow [--sizes 100,500,1000,2000,5000] [--time-limit 120]
        [--batch 1000] [--batch-nodes 100] [--batch-arcs 800] [--seed 0]
        [--out benchmarks/results/flow.md] [--data DIR] [--device cpu]

Every single-network run goes through ``solvers.flow.solve.solve`` (the path of the API and
the CLI), one at a time, in this process. Reported per run: the final cost and its gap to the
optimum (exact solvers: proven by their certificate); for OFT-Sinkhorn also the cost of the
entropic flow *before* any rounding (fractional, balanced to within its marginal error), the
cost after rounding + repair (exactly feasible, before the finish) and the gap certified by the
Sinkhorn potentials at that point. The batched run solves ``--batch`` networks of one size as
one torch batch, then repairs and finishes each network; its throughput is compared with
OR-Tools solving the same networks one after another on the CPU.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.common import check_out, check_solvers, command, integers, parser_for
from benchmarks.routing import machine_info as routing_machine_info
from solvers.contract import Budget
from solvers.flow.generate import netgen_style
from solvers.flow.io import load_network
from solvers.flow.options import FlowOptions, SinkhornSettings
from solvers.flow.problem import FlowNetwork
from solvers.flow.repair import finish, repair, sinkhorn_certificate, solve_min_cost_flow
from solvers.flow.sinkhorn import oft_sinkhorn
from solvers.flow.solve import solve

DEFAULT_SIZES = (100, 500, 1000, 2000, 5000)
DEFAULT_SOLVERS = ("ortools_mcf", "networkx_simplex", "oft_sinkhorn")
EXACT_NAMES = {"ortools_mcf": "OR-Tools", "networkx_simplex": "networkx"}
DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "flow.md"
#: Known optima of the DIMACS files (../shared/data/README.md).
DIMACS_OPTIMA = {"netgen_8_08a": 142_274_536, "netgen_8_10a": 369_269_289}
#: The batched run trades accuracy for time: a coarser final ε and fewer iterations per stage
#: (the repair and the finish restore exactness).
BATCH_SETTINGS = SinkhornSettings(eps_end=4e-3, max_stage_iterations=1000, tol=1e-4)


@dataclass
class Row:
    set: str
    instance: str
    nodes: int
    arcs: int
    solver: str
    optimum: int | None
    optimum_source: str
    status: str = ""
    cost: int | None = None
    gap_pct: float | None = None
    wall_s: float | None = None
    entropic_gap_pct: float | None = None
    repaired_gap_pct: float | None = None
    certified_gap_pct: float | None = None
    sinkhorn_s: float | None = None
    iterations: int | None = None
    marginal_error: float | None = None
    error: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


def _pct(value: float, reference: int | None) -> float | None:
    if reference is None or reference == 0:
        return None
    return 100.0 * (value - reference) / abs(reference)


def machine_info() -> dict[str, Any]:
    """The shared machine header plus the GPU, if any."""
    info = routing_machine_info(("torch", "ortools", "networkx", "numpy", "cosolve"))
    info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return info


# -- single networks -------------------------------------------------------------------------
def run_network(set_name: str, net: FlowNetwork, optimum: int | None, source: str,
                solvers: list[str], time_limit: float, device: str) -> list[Row]:
    rows = []
    for solver in solvers:
        row = Row(set_name, net.name, net.n, net.m, solver, optimum, source)
        started = time.perf_counter()
        try:
            sol = solve(net, solver, Budget(time_limit=time_limit, device=device),
                        options=FlowOptions())
        except Exception as exc:  # recorded, the benchmark goes on
            row.error = f"{type(exc).__name__}: {exc}"
            row.wall_s = time.perf_counter() - started
            rows.append(row)
            continue
        # The solver's own wall time: for the exact solvers the solve call alone (their
        # optimality proof by label-correcting is not counted: wall_time includes it now, so
        # stats.solve_time), for oft_sinkhorn everything.
        row.wall_s = sol.stats.get("solve_time", sol.wall_time)
        row.status, row.cost = sol.status, sol.cost
        if not sol.feasible:
            row.error = "; ".join(sol.violations) or sol.status
        if sol.cost is not None:
            row.gap_pct = _pct(sol.cost, optimum)
        st = sol.stats
        if "entropic_cost" in st:
            row.entropic_gap_pct = _pct(st["entropic_cost"], optimum)
            row.repaired_gap_pct = _pct(st["repaired_cost"], optimum)
            cert = st["repair_certificate"]  # None when its search was stopped
            row.certified_gap_pct = (100.0 * cert["relative_gap"] if cert is not None
                                     else None)
            row.sinkhorn_s = st["sinkhorn_time"]
            row.iterations = st["iterations"]
            row.marginal_error = st["marginal_error"]
        row.stats = {k: v for k, v in st.items() if k not in ("stages",)}
        rows.append(row)
        print(f"  {net.name:28s} {solver:17s} {row.status:10s} cost {row.cost} "
              f"({row.wall_s:.2f} s)", flush=True)
    # Generated networks have no published optimum: the exact solvers' agreed cost is it.
    if optimum is None:
        agreed = [r for r in rows if r.solver != "oft_sinkhorn" and r.status == "optimal"]
        exact = {r.cost for r in agreed}
        if len(exact) == 1:
            ref = exact.pop()
            # Regression: the label named networkx when only OR-Tools had run
            source = " = ".join(EXACT_NAMES.get(r.solver, r.solver) for r in agreed)
            for r in rows:
                r.optimum, r.optimum_source = ref, f"{source} (certified)"
                if r.cost is not None:
                    r.gap_pct = _pct(r.cost, ref)
                if r.stats.get("entropic_cost") is not None:
                    r.entropic_gap_pct = _pct(r.stats["entropic_cost"], ref)
                    r.repaired_gap_pct = _pct(r.stats["repaired_cost"], ref)
    return rows


# -- the batched run ---------------------------------------------------------------------------
def ortools_optima(cores: list[Any]) -> tuple[list[int], float]:
    """OR-Tools' optimum of each network, one after another: the CPU baseline of the batched
    runs, and its wall time in seconds."""
    t0 = time.perf_counter()
    optima = []
    for c in cores:
        flow = solve_min_cost_flow(c.n, c.tails, c.heads, c.caps, c.costs, c.supplies)
        assert flow is not None
        optima.append(c.cost(flow))
    return optima, time.perf_counter() - t0


def exact_from_entropic(cores: list[Any], flows: np.ndarray, row_potentials: np.ndarray,
                        col_potentials: np.ndarray, final_eps: np.ndarray,
                        optima: list[int]) -> dict[str, Any]:
    """Each network's entropic flow made exact as ``oft_sinkhorn`` does it (rounding, repair,
    Sinkhorn certificate, finish), on the CPU: how many reach the optimum, and how fast."""
    t0 = time.perf_counter()
    repaired_opt = finished_opt = 0
    cert_gaps = []
    for i, core in enumerate(cores):
        pot = 0.5 * (row_potentials[i] + col_potentials[i])
        rep = repair(core, flows[i], pot, float(final_eps[i]))
        cert, pi = sinkhorn_certificate(core, rep.cost, [row_potentials[i], col_potentials[i],
                                                         pot])
        cert_gaps.append(100.0 * cert.relative_gap)
        repaired_opt += rep.cost == optima[i]
        fin = finish(core, rep.flow, rep.candidates, pi)
        finished_opt += (fin.cost == optima[i] and fin.certificate is not None
                         and fin.certificate.gap == 0)
    return {"repair_optimal": repaired_opt, "finished_optimal": finished_opt,
            "certified_gaps_pct": cert_gaps, "seconds": time.perf_counter() - t0}


def batched_run(count: int, nodes: int, arcs: int, seed: int, device: str) -> dict[str, Any]:
    """``count`` networks of one size: OR-Tools one by one vs OFT-Sinkhorn as one batch."""
    t0 = time.perf_counter()
    nets = [netgen_style(seed * 100_000 + i, nodes, arcs) for i in range(count)]
    cores = [n.core() for n in nets]
    gen_s = time.perf_counter() - t0

    optima, ortools_s = ortools_optima(cores)
    opt = np.array(optima, dtype=np.float64)

    result = oft_sinkhorn(cores, BATCH_SETTINGS, device=device)
    sinkhorn_s = result.wall_time
    entropic_gap = 100.0 * (result.primal_cost - opt) / opt

    exact = exact_from_entropic(cores, result.flow, result.row_potentials,
                                result.col_potentials, result.final_eps, optima)
    repaired_opt, finished_opt = exact["repair_optimal"], exact["finished_optimal"]
    cert_gaps, exact_s = exact["certified_gaps_pct"], exact["seconds"]

    # Per-iteration cost against the batch size (a fixed iteration count, no convergence test).
    fixed = SinkhornSettings(eps_end=0.05, tol=0.0, stage_tol=0.0, max_stage_iterations=20)
    scaling = []
    for b in sorted({1, 10, 100, count}):
        if b > count:
            continue
        r = oft_sinkhorn(cores[:b], fixed, device=device)
        scaling.append({"batch": b, "ms_per_iteration": 1e3 * r.wall_time / r.iterations,
                        "edges_per_s": b * arcs * r.iterations / r.wall_time})
    return {
        "count": count, "nodes": nodes, "arcs": arcs, "seed": seed, "device": device,
        "settings": asdict(BATCH_SETTINGS), "generate_s": gen_s,
        "ortools_s": ortools_s, "ortools_networks_per_s": count / ortools_s,
        "sinkhorn_s": sinkhorn_s, "sinkhorn_networks_per_s": count / sinkhorn_s,
        "sinkhorn_iterations": result.iterations, "sinkhorn_stopped": result.stopped,
        "stages": result.stages,
        "max_marginal_error": float(result.marginal_error.max()),
        "mean_marginal_error": float(result.marginal_error.mean()),
        "entropic_gap_mean_pct": float(entropic_gap.mean()),
        "entropic_gap_mean_abs_pct": float(np.abs(entropic_gap).mean()),
        "entropic_gap_max_abs_pct": float(np.abs(entropic_gap).max()),
        "entropic_within_1pct": int((np.abs(entropic_gap) <= 1.0).sum()),
        "certified_gap_mean_pct": float(np.mean(cert_gaps)),
        "repair_optimal": int(repaired_opt), "finished_optimal": int(finished_opt),
        "repair_finish_s": exact_s,
        "end_to_end_networks_per_s": count / (sinkhorn_s + exact_s),
        "scaling": scaling,
    }


# -- report ------------------------------------------------------------------------------------
def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:+.{digits}f}" if digits else f"{value:.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _secs(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}" if value < 10 else f"{value:.1f}"


def write_report(out: Path, meta: dict[str, Any], rows: list[Row],
                 batch: dict[str, Any] | None) -> None:
    m = meta["machine"]
    lines = [
        "# Min-cost flow benchmark",
        "",
        f"- Command: `{meta['command']}`",
        f"- Started: {meta['started']} (UTC); finished: {meta.get('finished', 'running')}",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['os']}; load average at start "
        f"{', '.join(map(str, m['load_average_at_start']))}, at the end "
        f"{', '.join(map(str, meta.get('load_average_at_end', [])))} (the machine was shared "
        "with other jobs: wall times are upper bounds)",
        "- GPU: " + (m["gpu"] or "none in this session — every figure below is CPU-only; "
                     "the batched GPU runs are benchmarks/flow_gpu.py's "
                     "(benchmarks/results/flow_gpu.md)"),
        "- Software: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
        + f", Python {m['python']}",
        f"- Settings: time limit {meta['time_limit']:g} s per run; seed {meta['seed']}; "
        f"device {meta['device']}; OFT-Sinkhorn defaults: "
        + ", ".join(f"{k}={v}" for k, v in meta["sinkhorn_defaults"].items()),
        "- Generated networks: `solvers.flow.generate.netgen_style(seed, n)` — NETGEN-8 "
        "family shape (8 arcs per node, √n sources and sinks, supply 1000·√n, costs 1–10⁴, "
        "capacities 1–10³, a feasibility skeleton of which half has the maximum cost).",
        "- DIMACS: `mincostflow/netgen_8_08a.min.gz`, `netgen_8_10a.min.gz` from "
        f"`{meta['data']}` (LEMON NETGEN-8, optima from the data README).",
        "",
        "Columns: *gap* = final cost vs optimum; for oft_sinkhorn *entropic* = cost of the "
        "fractional entropic flow before rounding (balanced to within *marg. err*, a fraction "
        "of the total supply), *repaired* = exactly feasible integer flow after rounding + "
        "residual repair, before the finish, *certified* = (repaired cost − dual bound from "
        "the Sinkhorn potentials) / max(|repaired cost|, |bound|). The final oft_sinkhorn "
        "flow comes from the "
        "price-and-resolve finish and is proven optimal by exact potentials. *wall* is the "
        "solver's own wall time: the whole pipeline for oft_sinkhorn, the solve call for the "
        "exact solvers (their independent optimality proof is not counted).",
        "",
        "| set | instance | nodes | arcs | solver | status | cost | optimum | gap % | "
        "entropic gap % | repaired gap % | certified gap % | wall (s) | Sinkhorn (s) | "
        "iterations | marg. err | error |",
        "|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.set} | {r.instance} | {r.nodes:,} | {r.arcs:,} | {r.solver} | {r.status} | "
            f"{_f(r.cost)} | {_f(r.optimum)} | {_f(r.gap_pct)} | {_f(r.entropic_gap_pct)} | "
            f"{_f(r.repaired_gap_pct)} | {_f(r.certified_gap_pct)} | {_secs(r.wall_s)} | "
            f"{_secs(r.sinkhorn_s)} | {_f(r.iterations)} | "
            f"{'–' if r.marginal_error is None else f'{r.marginal_error:.1e}'} | {r.error} |")
    if batch is not None:
        b = batch
        lines += [
            "",
            f"## Batched: {b['count']:,} networks of {b['nodes']} nodes / {b['arcs']} arcs "
            f"({b['device']})",
            "",
            f"Networks `netgen_style(seed·100000 + i, {b['nodes']}, {b['arcs']})`, i < "
            f"{b['count']}; OFT-Sinkhorn as one batch with " + ", ".join(
                f"{k}={v}" for k, v in b["settings"].items()) + ".",
            "",
            "| what | time (s) | networks / s |",
            "|---|---:|---:|",
            f"| OR-Tools SimpleMinCostFlow, one after another (CPU) | {b['ortools_s']:.2f} | "
            f"{b['ortools_networks_per_s']:,.0f} |",
            f"| OFT-Sinkhorn batch, entropic flows only ({b['device']}) | {b['sinkhorn_s']:.1f} "
            f"| {b['sinkhorn_networks_per_s']:,.1f} |",
            f"| + rounding, repair, certificate and finish per network (CPU) | "
            f"{b['repair_finish_s']:.2f} | – |",
            f"| OFT-Sinkhorn end to end (exact optima) | "
            f"{b['sinkhorn_s'] + b['repair_finish_s']:.1f} | "
            f"{b['end_to_end_networks_per_s']:,.1f} |",
            "",
            f"- Iterations: {b['sinkhorn_iterations']:,} ({b['sinkhorn_stopped']}); marginal "
            f"error mean {b['mean_marginal_error']:.1e}, max {b['max_marginal_error']:.1e}.",
            f"- Entropic cost vs optimum: mean {b['entropic_gap_mean_pct']:+.3f} %, mean |gap| "
            f"{b['entropic_gap_mean_abs_pct']:.3f} %, max |gap| "
            f"{b['entropic_gap_max_abs_pct']:.3f} %; within 1 %: "
            f"{b['entropic_within_1pct']:,} of {b['count']:,}.",
            f"- Certified gap after repair (Sinkhorn dual bound): mean "
            f"{b['certified_gap_mean_pct']:.3f} %.",
            f"- Repair alone reached the optimum on {b['repair_optimal']:,} of {b['count']:,}; "
            f"after the finish {b['finished_optimal']:,} of {b['count']:,} equal OR-Tools' "
            "optimum with a zero-gap certificate.",
            "",
            "Cost of one iteration against the batch size (same networks, fixed iteration "
            "count):",
            "",
            "| batch | ms / iteration | edges / s |",
            "|---:|---:|---:|",
        ]
        lines += [f"| {s['batch']:,} | {s['ms_per_iteration']:.2f} | {s['edges_per_s']:,.0f} |"
                  for s in b["scaling"]]
    out.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.flow", __doc__)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="node counts of the generated networks; empty skips them")
    parser.add_argument("--solvers", default=",".join(DEFAULT_SOLVERS),
                        help="comma-separated flow solver names")
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated networks")
    parser.add_argument("--batch", type=int, default=1000, help="0 skips the batched run")
    parser.add_argument("--batch-nodes", type=int, default=100,
                        help="nodes per network of the batched run")
    parser.add_argument("--batch-arcs", type=int, default=800,
                        help="arcs per network of the batched run")
    parser.add_argument("--device", default="cpu", help="torch device of OFT-Sinkhorn")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="folder holding mincostflow/ (DIMACS files; skipped if missing)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="markdown report; the rows go beside it as .json")
    args = parser.parse_args(argv)
    # Regression: --solvers bogus and --sizes abc were tracebacks, a missing --out folder a
    # crash after the first network
    sizes = integers(parser, "--sizes", args.sizes, positive=True, allow_empty=True)
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    if not solvers:
        parser.error("--solvers: give at least one solver")
    check_solvers(parser, solvers, problem="mincostflow")
    if not args.time_limit > 0 or args.batch < 0:
        parser.error("--time-limit: positive; --batch: 0 or more")
    check_out(parser, args.out)
    meta: dict[str, Any] = {
        "command": command("benchmarks.flow", argv),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info(), "time_limit": args.time_limit, "seed": args.seed,
        "device": args.device, "data": str(args.data),
        "sinkhorn_defaults": asdict(SinkhornSettings()),
    }
    rows: list[Row] = []
    batch: dict[str, Any] | None = None

    def save() -> None:
        write_report(args.out, meta, rows, batch)
        args.out.with_suffix(".json").write_text(json.dumps(
            {"meta": meta, "rows": [asdict(r) for r in rows], "batch": batch}, indent=1,
            default=lambda o: o.item() if hasattr(o, "item") else str(o)) + "\n")

    # Warm-up: import OR-Tools, networkx and torch before anything is timed.
    warm = netgen_style(0, 20, 60)
    for solver in solvers:
        solve(warm, solver, Budget(time_limit=10, device=args.device))
    for n in sizes:
        print(f"generated n={n}", flush=True)
        net = netgen_style(args.seed, n)
        rows += run_network(f"netgen-style-n{n}", net, None, "", solvers, args.time_limit,
                            args.device)
        save()
    for name, optimum in DIMACS_OPTIMA.items():
        path = args.data / "mincostflow" / f"{name}.min.gz"
        if not path.exists():
            print(f"missing {path}; skipped", flush=True)
            continue
        print(f"dimacs {name}", flush=True)
        rows += run_network("dimacs-netgen-8", load_network(path), optimum,
                            "published optimum", solvers, args.time_limit, args.device)
        save()
    if args.batch > 0:
        print(f"batched: {args.batch} networks of {args.batch_nodes} nodes", flush=True)
        batch = batched_run(args.batch, args.batch_nodes, args.batch_arcs, args.seed,
                            args.device)
    meta["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    meta["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    save()
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
