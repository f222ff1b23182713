"""Batched OFT-Sinkhorn on a GPU against OR-Tools on a CPU, in two halves.

The device machine that lends a GPU has no OR-Tools (and cannot install it), so the run is
split, on the *same* networks (``netgen_style(seed·100000 + i, nodes, arcs)``, deterministic):

    # on the GPU machine: entropic flows for each batch size and engine, networkx optima
    python -m benchmarks.flow_gpu device --out DIR [--batches 1000,10000] [--device cuda]
    # here: OR-Tools one network after another, and the repair + certificate + finish of the
    # GPU's entropic flows (saved for the first batch size) to exact optima
    python -m benchmarks.flow_gpu report DIR [--out benchmarks/results/flow_gpu.md]

Engines: ``eager`` (one torch kernel per operation), ``cuda_graph`` (``check_every``
iterations recorded once and replayed), ``compiled`` (``torch.compile`` fuses an iteration)
and ``compiled_graph`` (both). Same settings as ``benchmarks.flow``'s batched run. Each
(engine, batch) is run twice and the second run is timed, so compile and capture time are
reported apart from the solve.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.common import HelpFormatter, check_out, command, integers, parser_for
from benchmarks.flow import exact_from_entropic, machine_info, ortools_optima
from solvers.contract import Budget
from solvers.flow.baselines import NetworkXFlowSolver
from solvers.flow.generate import netgen_style
from solvers.flow.options import SinkhornSettings
from solvers.flow.problem import CoreNetwork
from solvers.flow.sinkhorn import oft_sinkhorn

#: The batched settings of benchmarks.flow (kept in step by a test).
BATCH_SETTINGS = SinkhornSettings(eps_end=4e-3, max_stage_iterations=1000, tol=1e-4)
ENGINES = {
    "eager": {"cuda_graph": False},
    "cuda_graph": {"cuda_graph": True},
    "compiled": {"compile": True, "cuda_graph": False},
    "compiled_graph": {"compile": True, "cuda_graph": True},
}
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "flow_gpu.md"


def networks(count: int, nodes: int, arcs: int, seed: int) -> list[CoreNetwork]:
    """The benchmark's networks, the same on every machine."""
    return [netgen_style(seed * 100_000 + i, nodes, arcs).core() for i in range(count)]


def _networkx_optimum(args: tuple[int, int, int]) -> int:

    seed, nodes, arcs = args
    sol = NetworkXFlowSolver().solve(netgen_style(seed, nodes, arcs), Budget(time_limit=600))
    assert sol.status == "optimal" and sol.cost is not None
    return int(sol.cost)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def device_half(args: argparse.Namespace) -> int:
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    batches, engines = args.batches, args.engines
    count = max(batches)
    t0 = time.perf_counter()
    cores = networks(count, args.nodes, args.arcs, args.seed)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    jobs = [(args.seed * 100_000 + i, args.nodes, args.arcs) for i in range(count)]
    with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
        optima = np.array(list(pool.map(_networkx_optimum, jobs, chunksize=64)), dtype=float)
    nx_s = time.perf_counter() - t0
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    record: dict[str, Any] = {
        "command": args.command,
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpu": platform.processor() or platform.machine(),
                    "cores": os.cpu_count(), "gpu": gpu, "torch": torch.__version__,
                    "python": platform.python_version()},
        "nodes": args.nodes, "arcs": args.arcs, "seed": args.seed, "device": args.device,
        "settings": asdict(BATCH_SETTINGS), "generate_s": gen_s,
        "networkx_parallel_s": nx_s, "networkx_workers": os.cpu_count(), "runs": [],
        "scaling": [],
    }

    def save() -> None:
        (out / "flow_gpu.json").write_text(json.dumps(record, indent=1) + "\n")

    save()
    for engine in engines:
        cfg = replace(BATCH_SETTINGS, **ENGINES[engine])
        for b in batches:
            row: dict[str, Any] = {"engine": engine, "batch": b}
            try:
                _sync(args.device)
                t0 = time.perf_counter()
                oft_sinkhorn(cores[:b], cfg, device=args.device)  # compile / capture / warm
                _sync(args.device)
                row["first_run_s"] = time.perf_counter() - t0
                t0 = time.perf_counter()
                res = oft_sinkhorn(cores[:b], cfg, device=args.device)
                _sync(args.device)
                row["wall_s"] = time.perf_counter() - t0
            except Exception as exc:  # recorded; the other engines still run
                row["error"] = f"{type(exc).__name__}: {exc}"[:500]
                record["runs"].append(row)
                save()
                print(engine, b, row["error"], flush=True)
                continue
            gap = 100.0 * (res.primal_cost - optima[:b]) / optima[:b]
            row.update({
                "networks_per_s": b / row["wall_s"], "iterations": res.iterations,
                "stopped": res.stopped,
                "ms_per_iteration": 1e3 * row["wall_s"] / max(1, res.iterations),
                "max_marginal_error": float(res.marginal_error.max()),
                "mean_marginal_error": float(res.marginal_error.mean()),
                "entropic_gap_mean_abs_pct": float(np.abs(gap).mean()),
                "entropic_gap_max_abs_pct": float(np.abs(gap).max()),
                "entropic_within_1pct": int((np.abs(gap) <= 1.0).sum()),
            })
            record["runs"].append(row)
            save()
            print(f"{engine:15s} B={b:6d} {row['wall_s']:.2f} s "
                  f"({row['networks_per_s']:.0f}/s, {res.iterations} it, first "
                  f"{row['first_run_s']:.1f} s)", flush=True)
            if engine == engines[0] and b == batches[0]:
                np.savez_compressed(out / "entropic.npz", flow=res.flow,
                                    row=res.row_potentials, col=res.col_potentials,
                                    final_eps=res.final_eps, optima=optima[:b])
    # Cost of one iteration against the batch size: a fixed 20 iterations per stage.
    for engine in engines:
        fixed = replace(SinkhornSettings(eps_end=0.05, tol=0.0, stage_tol=0.0,
                                         max_stage_iterations=20), **ENGINES[engine])
        for b in sorted({1, 10, 100, 1000, *batches}):
            if b > count:
                continue
            try:
                oft_sinkhorn(cores[:b], fixed, device=args.device)
                _sync(args.device)
                r = oft_sinkhorn(cores[:b], fixed, device=args.device)
            except Exception as exc:
                record["scaling"].append({"engine": engine, "batch": b,
                                          "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            record["scaling"].append({
                "engine": engine, "batch": b,
                "ms_per_iteration": 1e3 * r.wall_time / r.iterations,
                "edges_per_s": b * args.arcs * r.iterations / r.wall_time})
            save()
    # Single large networks with the API's ε schedule and stopping rules, eager and with
    # compile + CUDA graph (the API itself uses the CUDA graph alone): entropic flows only.
    for n in args.sizes:
        net = netgen_style(args.seed, n)
        opt = _networkx_optimum((args.seed, n, net.m))
        for engine in ("eager", "compiled_graph"):
            cfg = replace(SinkhornSettings(), **ENGINES[engine])
            row = {"engine": engine, "nodes": n, "arcs": net.m}
            try:
                t0 = time.perf_counter()
                oft_sinkhorn([net.core()], cfg, device=args.device)
                _sync(args.device)
                row["first_run_s"] = time.perf_counter() - t0
                res = oft_sinkhorn([net.core()], cfg, device=args.device)
            except Exception as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"[:300]
            else:
                row.update({"wall_s": res.wall_time, "iterations": res.iterations,
                            "stopped": res.stopped,
                            "marginal_error": float(res.marginal_error.max()),
                            "entropic_gap_pct": float(100 * (res.primal_cost[0] - opt) / opt)})
            record.setdefault("single", []).append(row)
            save()
            print("single", row, flush=True)
    record["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    save()
    return 0


def report_half(args: argparse.Namespace) -> int:

    rec = json.loads((args.dir / "flow_gpu.json").read_text())
    with np.load(args.dir / "entropic.npz") as npz:  # decompressed once, not per access
        saved = {k: npz[k] for k in npz.files}
    count = max(r["batch"] for r in rec["runs"])
    cores = networks(count, rec["nodes"], rec["arcs"], rec["seed"])
    # OR-Tools, one network after another, on this machine's CPU (as benchmarks.flow times it),
    # after one untimed solve that loads the library
    ortools_optima(cores[:1])
    optima, ortools_s = ortools_optima(cores)
    nx_optima = saved["optima"]
    agree = int(sum(int(a) == int(b) for a, b in zip(optima, nx_optima, strict=False)))
    # Exactness of the GPU's entropic flows: rounding, repair, certificate, finish (CPU).
    first = len(saved["flow"])
    exact = exact_from_entropic(cores[:first], saved["flow"], saved["row"], saved["col"],
                                saved["final_eps"], optima[:first])
    repaired_opt, finished_opt = exact["repair_optimal"], exact["finished_optimal"]
    cert_gaps, exact_s = exact["certified_gaps_pct"], exact["seconds"]
    here = machine_info()
    ort_rate = count / ortools_s
    m = rec["machine"]
    lines = [
        "# Batched OFT-Sinkhorn on a GPU against OR-Tools on a CPU",
        "",
        f"- Device half: `{rec['command']}` on {m['gpu']} ({m['cores']} CPU cores, torch "
        f"{m['torch']}, Python {m['python']}), started {rec['started']} UTC",
        f"- Report half: `python -m benchmarks.flow_gpu report {args.dir}` on "
        f"{here['cpu']}, {here['cores']} cores (load average "
        f"{', '.join(map(str, here['load_average_at_start']))}); "
        + ", ".join(f"{k} {v}" for k, v in here["versions"].items()),
        f"- Networks: `netgen_style(seed·100000 + i, {rec['nodes']}, {rec['arcs']})`, seed "
        f"{rec['seed']}, i < {count} (the same on both machines); OFT-Sinkhorn settings "
        + ", ".join(f"{k}={v}" for k, v in rec["settings"].items()) + ".",
        "- OR-Tools has no build on the GPU machine's image, so its time is measured here, on "
        "the same networks, one after another, as `benchmarks.flow` does; the two times come "
        "from different machines (stated above). networkx's optima, computed there in "
        f"{rec['networkx_parallel_s']:.1f} s on {rec['networkx_workers']} processes, agree "
        f"with OR-Tools' on {agree} of {len(nx_optima)} networks.",
        "- Each (engine, batch) ran twice; the table times the second run (*first run* "
        "includes compilation or graph capture).",
        "",
        f"OR-Tools SimpleMinCostFlow on this CPU: {count:,} networks in {ortools_s:.2f} s = "
        f"**{ort_rate:,.0f} networks/s**.",
        "",
        "| engine | batch | entropic flows (s) | networks / s | × OR-Tools | iterations | "
        "ms / iteration | first run (s) | mean / max \\|entropic gap\\| % | within 1 % | "
        "max marg. err | error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rec["runs"]:
        if "error" in r:
            lines.append(f"| {r['engine']} | {r['batch']:,} | – | – | – | – | – | – | – | – | "
                         f"– | {r['error']} |")
            continue
        lines.append(
            f"| {r['engine']} | {r['batch']:,} | {r['wall_s']:.2f} | "
            f"{r['networks_per_s']:,.0f} | {r['networks_per_s'] / ort_rate:.2f} | "
            f"{r['iterations']:,} ({r['stopped']}) | {r['ms_per_iteration']:.3f} | "
            f"{r['first_run_s']:.1f} | {r['entropic_gap_mean_abs_pct']:.3f} / "
            f"{r['entropic_gap_max_abs_pct']:.3f} | {r['entropic_within_1pct']:,} | "
            f"{r['max_marginal_error']:.1e} |  |")
    lines += [
        "",
        f"Exact answers from the GPU's entropic flows (first engine, batch {first:,}), on this "
        f"CPU: rounding + repair + certificate + finish took {exact_s:.2f} s "
        f"({first / exact_s:,.0f} networks/s); repair alone reached the optimum on "
        f"{repaired_opt:,} of {first:,}, after the finish {finished_opt:,} of {first:,} equal "
        f"OR-Tools' optimum with a zero-gap certificate; certified gap after repair (Sinkhorn "
        f"dual bound) mean {float(np.mean(cert_gaps)):.3f} %.",
        "",
        "One iteration against the batch size (a fixed 20 iterations per stage):",
        "",
        "| engine | batch | ms / iteration | edges / s |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {s['engine']} | {s['batch']:,} | {s['ms_per_iteration']:.3f} | "
              f"{s['edges_per_s']:,.0f} |" for s in rec["scaling"] if "error" not in s]
    if rec.get("single"):
        lines += [
            "",
            "Single networks, the API's ε schedule and stopping rules (eager, and with "
            "compile + CUDA graph, which the API does not use: it runs the CUDA graph alone), "
            "entropic flows only "
            "(`netgen_style(seed, n)`; gap to networkx's optimum; *first run* includes "
            "compilation and capture):",
            "",
            "| nodes | arcs | engine | entropic flow (s) | first run (s) | iterations | "
            "entropic gap % | marg. err | error |",
            "|---:|---:|---|---:|---:|---:|---:|---:|---|",
        ]
        for r in rec["single"]:
            if "error" in r:
                lines.append(f"| {r['nodes']:,} | {r['arcs']:,} | {r['engine']} | – | – | – | "
                             f"– | – | {r['error']} |")
                continue
            lines.append(
                f"| {r['nodes']:,} | {r['arcs']:,} | {r['engine']} | {r['wall_s']:.2f} | "
                f"{r['first_run_s']:.1f} | {r['iterations']:,} ({r['stopped']}) | "
                f"{r['entropic_gap_pct']:+.3f} | {r['marginal_error']:.1e} |  |")
    args.out.write_text("\n".join(lines) + "\n")
    summary = {"device": rec, "ortools_s": ortools_s, "ortools_networks_per_s": ort_rate,
               "networkx_agree": agree, "repair_finish_s": exact_s,
               "repair_optimal": repaired_opt, "finished_optimal": finished_opt,
               "certified_gap_mean_pct": float(np.mean(cert_gaps)), "report_machine": here}
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    print(f"wrote {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = parser_for("benchmarks.flow_gpu", __doc__)
    sub = parser.add_subparsers(dest="half", required=True)
    dev = sub.add_parser("device", help="entropic flows on the GPU (no OR-Tools needed)",
                         formatter_class=HelpFormatter)
    dev.add_argument("--out", type=Path, required=True, default=argparse.SUPPRESS,
                     help="folder for the raw results (required)")
    dev.add_argument("--batches", default="1000,10000", help="batch sizes (networks)")
    dev.add_argument("--engines", default=",".join(ENGINES), help="engines to time")
    dev.add_argument("--sizes", default="1000,5000,20000",
                     help="single networks timed with the default settings; empty skips")
    dev.add_argument("--nodes", type=int, default=100, help="nodes per batched network")
    dev.add_argument("--arcs", type=int, default=800, help="arcs per batched network")
    dev.add_argument("--seed", type=int, default=0, help="seed of the networks")
    dev.add_argument("--device", default="cuda", help="torch device")
    rep = sub.add_parser("report", help="OR-Tools and exact repair here; writes the table",
                         formatter_class=HelpFormatter)
    rep.add_argument("dir", type=Path, help="the device half's --out folder")
    rep.add_argument("--out", type=Path, default=DEFAULT_OUT,
                     help="markdown report; the summary goes beside it as .json")
    args = parser.parse_args(argv)
    args.command = command("benchmarks.flow_gpu", argv)
    # Regression: bad options were tracebacks, and a missing --out folder crashed the report
    # at its very end
    if args.half == "device":
        args.batches = integers(dev, "--batches", args.batches, positive=True)
        args.sizes = integers(dev, "--sizes", args.sizes, positive=True, allow_empty=True)
        args.engines = [e for e in args.engines.split(",") if e]
        unknown = [e for e in args.engines if e not in ENGINES]
        if unknown or not args.engines:
            dev.error(f"--engines: any of {', '.join(ENGINES)}; got {args.engines!r}")
        return device_half(args)
    missing = [f for f in ("flow_gpu.json", "entropic.npz") if not (args.dir / f).is_file()]
    if missing:
        rep.error(f"dir: no {', '.join(missing)} in {args.dir} (the device half's --out)")
    check_out(rep, args.out)
    return report_half(args)


if __name__ == "__main__":
    raise SystemExit(main())
