"""Exact baselines: OR-Tools SimpleMinCostFlow (cost-scaling push-relabel, C++) and networkx
network_simplex (pure Python). Both solve the core network, so node capacities and lower
bounds mean the same thing for them as for the entropic solver; neither can be interrupted,
so they ignore the time limit. Each answer is independently certified optimal by exact
potentials (label-correcting on the flow's residual graph) when that search finishes within
``CERTIFY_ROUNDS`` rounds.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from solvers.base import Budget, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import BudgetTooSmallError
from solvers.flow.dual import certify_optimal
from solvers.flow.problem import (
    CoreNetwork,
    FlowNetwork,
    FlowSolution,
    build_flow_solution,
    infeasible_solution,
)

#: Round cap of the optimality proof that follows each baseline (each round is O(arcs)).
CERTIFY_ROUNDS = 2000


def _finish(net: FlowNetwork, core: CoreNetwork, core_flow: np.ndarray, solver: str,
            started: float, stats: dict[str, Any], progress: ProgressCallback) -> FlowSolution:
    solve_time = time.perf_counter() - started
    cost = core.cost(core_flow)
    t0 = time.perf_counter()
    cert = certify_optimal(core, core_flow, cost, "exact potentials (residual graph)",
                           max_rounds=CERTIFY_ROUNDS)
    stats.update(solve_time=solve_time, certify_time=time.perf_counter() - t0)
    progress(ProgressEvent(solver, time.perf_counter() - started, 1, float(cost), "optimal"))
    return build_flow_solution(net, core.original_flow(core_flow), solver=solver,
                               wall_time=solve_time, proven_optimal=True, stats=stats,
                               certificate=cert)


class ORToolsFlowSolver:
    """OR-Tools SimpleMinCostFlow on the core network."""

    name = "ortools_mcf"

    def solve(self, net: FlowNetwork, budget: Budget,
              progress: ProgressCallback = no_progress, options: Any = None) -> FlowSolution:
        """Exact; ``budget`` and ``options`` do not change the answer (it cannot stop early)."""
        from ortools.graph.python import min_cost_flow

        started = time.perf_counter()
        core = net.core()
        needed = ortools_min_time_limit(core.m)
        if budget.time_limit < needed:
            # QA sweep: a 1M-arc network asked to finish in 0.05 s answered after 2.4 s
            raise BudgetTooSmallError(
                f"ortools_mcf cannot be interrupted and needs about {needed:g} s for {core.m} "
                f"arcs; got {budget.time_limit:g} s. Raise the time limit to at least "
                f"{needed:g} s.", needed=needed)
        smcf = min_cost_flow.SimpleMinCostFlow()
        if core.m:
            smcf.add_arcs_with_capacity_and_unit_cost(
                core.tails.astype(np.int32), core.heads.astype(np.int32), core.caps, core.costs)
        smcf.set_nodes_supplies(np.arange(core.n, dtype=np.int32), core.supplies)
        status = smcf.solve()
        stats: dict[str, Any] = {"status": status.name}
        if status == smcf.INFEASIBLE:
            return infeasible_solution(net, solver=self.name,
                                       wall_time=time.perf_counter() - started, stats=stats)
        if status != smcf.OPTIMAL:
            raise RuntimeError(f"OR-Tools SimpleMinCostFlow returned {status.name}")
        flow = np.asarray(smcf.flows(np.arange(core.m)), dtype=np.int64)
        return _finish(net, core, flow, self.name, started, stats, progress)


def min_time_limit(nodes: int, arcs: int) -> float:
    """A time limit networkx's network simplex can keep (it cannot stop early), from nodes ×
    arcs: NETGEN-style networks on the 2-core machine took 9-80 ns per node·arc (2,000 nodes
    and 40,000 arcs: 0.9 s), a random one with negative costs 39 ns (5,000 × 200,000: 39 s,
    which a 0.3 s request used to wait for). 30 ns, rounded up; none below 0.5 s."""
    needed = 3e-8 * nodes * arcs
    return 0.0 if needed < 0.5 else math.ceil(needed * 10) / 10


def ortools_min_time_limit(arcs: int) -> float:
    """A time limit OR-Tools' SimpleMinCostFlow and the optimality proof after it can keep
    (neither stops early): random 5,000-node networks on the 2-core machine took 1.6-2.6 s
    solved and proven at 1,000,000 arcs and 0.3-0.4 s at 200,000. 3 µs per arc, rounded up;
    none below 0.5 s."""
    needed = 3e-6 * arcs
    return 0.0 if needed < 0.5 else math.ceil(needed * 10) / 10


class NetworkXFlowSolver:
    """networkx.network_simplex on a MultiDiGraph of the core network (parallel arcs kept)."""

    name = "networkx_simplex"

    def solve(self, net: FlowNetwork, budget: Budget,
              progress: ProgressCallback = no_progress, options: Any = None) -> FlowSolution:
        """Exact; ``budget`` and ``options`` do not change the answer (it cannot stop early)."""
        import networkx as nx

        started = time.perf_counter()
        core = net.core()
        needed = min_time_limit(len(core.supplies), core.m)
        if budget.time_limit < needed:
            raise BudgetTooSmallError(
                f"networkx_simplex cannot be interrupted and needs about {needed:g} s for "
                f"{len(core.supplies)} nodes and {core.m} arcs; got {budget.time_limit:g} s. "
                "Raise the time limit or choose ortools_mcf or oft_sinkhorn.", needed=needed)
        G = nx.MultiDiGraph()
        G.add_nodes_from((i, {"demand": -int(b)}) for i, b in enumerate(core.supplies))
        G.add_edges_from(
            (int(t), int(h), k, {"capacity": int(u), "weight": int(c)})
            for k, (t, h, u, c) in enumerate(zip(core.tails, core.heads, core.caps, core.costs,
                                                 strict=True))
        )
        try:
            _, flow_dict = nx.network_simplex(G)
        except nx.NetworkXUnfeasible:
            return infeasible_solution(net, solver=self.name,
                                       wall_time=time.perf_counter() - started)
        flow = np.fromiter(
            (flow_dict[int(t)][int(h)][k] for k, (t, h) in enumerate(zip(core.tails, core.heads,
                                                                           strict=True))),
            dtype=np.int64, count=core.m)
        return _finish(net, core, flow, self.name, started, {}, progress)
