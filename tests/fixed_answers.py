"""Every solver's answer on a fixed-seed suite, under a counting clock, so a refactor can show
that it changed no answer: `python -m tests.fixed_answers [NAME ...] [--write FILE]`.

Time limits make searches depend on the machine's speed; here ``time.perf_counter`` advances
by ``TICK`` seconds per call instead, so a 2 s limit is the same number of steps on every run.
Each routing solver runs on berlin52, X-n101-k25 and Solomon C101 (seeds 0 and 1); the flow
solvers on a NETGEN network; the scheduling policies on one arrival stream. A line per answer:
its cost and a digest of its routes (flows, flowtimes). `tests/test_fixed_answers.py` keeps the
answers that do not depend on the CPU's floating-point instructions."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from cosolve import Budget, all_specs, load_instance, solve, warm_up
from solvers.flow.io import load_network
from solvers.flow.solve import solve as flow_solve
from solvers.scheduling.registry import policy_names, run_policies
from solvers.scheduling.simulator import Arrivals, parse_pool
from solvers.scheduling.workflow import load_workflows

DATA = Path(__file__).resolve().parent / "data"
INSTANCES = {"tsp": DATA / "berlin52.tsp", "cvrp": DATA / "X-n101-k25.vrp",
             "cvrptw": DATA / "solomon" / "C101.100.10.vrptw"}
FLOW_NETWORK = DATA / "netgen_8_08a.min.gz"
FLOW_SOLVERS = ("ortools_mcf", "networkx_simplex", "oft_sinkhorn")
WORKFLOWS = ("CyberShake_30.xml", "Montage_25.xml")
#: Seconds one perf_counter() call advances the clock: large enough that adaptive chunk sizes
#: (which grow while a chunk seems fast) stay small, so a 2 s limit is a few dozen steps.
TICK = 0.1
TIME_LIMIT = 2.0
SEEDS = (0, 1)


def digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


@contextmanager
def counting_clock() -> Iterator[None]:
    real = time.perf_counter
    now = [1000.0]

    def tick() -> float:
        now[0] += TICK
        return now[0]

    time.perf_counter = tick
    # one ils search: several threads would share the counting clock in whatever order
    # they happen to run
    threads = os.environ.get("COSOLVE_ILS_THREADS")
    os.environ["COSOLVE_ILS_THREADS"] = "1"
    try:
        yield
    finally:
        time.perf_counter = real
        if threads is None:
            del os.environ["COSOLVE_ILS_THREADS"]
        else:
            os.environ["COSOLVE_ILS_THREADS"] = threads


def routing_answers(names: list[str] | None = None) -> dict[str, Any]:
    torch.set_num_threads(1)
    out: dict[str, Any] = {}
    for spec in all_specs():
        if spec.family != "routing" or (names is not None and spec.name not in names):
            continue
        warm_up(spec.name)  # compiles and loads outside the counting clock
        for problem, path in INSTANCES.items():
            if problem not in spec.problems or spec.unavailable_reason(problem):
                continue
            instance = load_instance(path)
            for seed in SEEDS:
                budget = Budget(time_limit=TIME_LIMIT, seed=seed,
                                max_solutions=64 if spec.solution_budget else None)
                try:
                    with counting_clock():
                        sol = solve(instance, spec.name, budget)
                    answer: Any = {"cost": round(float(sol.cost), 6), "routes": digest(sol.routes)}
                except Exception as exc:  # an answer too: the same error before and after
                    answer = {"error": f"{type(exc).__name__}: {exc}"[:200]}
                out[f"{spec.name}/{problem}/{seed}"] = answer
    return out


def flow_answers() -> dict[str, Any]:
    net = load_network(FLOW_NETWORK)
    out: dict[str, Any] = {}
    for name in FLOW_SOLVERS:
        sol = flow_solve(net, name, Budget(time_limit=30))
        out[f"{name}/{FLOW_NETWORK.name}"] = {"cost": float(sol.cost),
                                              "flow": digest([float(x) for x in sol.flow])}
    return out


def scheduling_answers(names: list[str] | None = None) -> dict[str, Any]:
    templates = load_workflows([DATA / "workflows" / name for name in WORKFLOWS])
    rows = run_policies(templates, parse_pool("4x2"), Arrivals(30, (30.0,)),
                        names or policy_names(), seed=3)
    return {f"sched/{r.name}": round(r.result.mean_flowtime, 6) if r.result else r.error
            for r in rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("solvers", nargs="*", help="routing solvers (default: all); 'flow' "
                        "and 'scheduling' select those families")
    parser.add_argument("--write", type=Path, help="also write the answers as JSON")
    args = parser.parse_args(argv)
    families = {"flow", "scheduling"} & set(args.solvers)
    routing = [s for s in args.solvers if s not in families]
    answers: dict[str, Any] = {}
    if routing or not args.solvers:
        answers |= routing_answers(routing or None)
    if "flow" in families or not args.solvers:
        answers |= flow_answers()
    if "scheduling" in families or not args.solvers:
        answers |= scheduling_answers()
    for key, value in answers.items():
        print(key, json.dumps(value, sort_keys=True))
    if args.write:
        args.write.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
