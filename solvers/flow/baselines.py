"""Exact baselines: OR-Tools SimpleMinCostFlow (cost-scaling push-relabel, C++) and networkx
network_simplex (pure Python). Both solve the core network, so node capacities and lower
bounds mean the same thing for them as for the entropic solver. Neither can be interrupted:
each refuses a time limit below its estimate for the network's size, and runs in a child
process stopped at the time limit (``bounded``), as the estimates do not hold for every
network (negative costs on long paths took them 10-150 times longer). Before either, the
network's cost is checked to be bounded (``require_bounded``, on the same clock). Each answer is
then proven optimal by exact potentials (label-correcting on the flow's residual graph,
``prove_optimal``), on the same clock too: ``status`` is ``optimal`` only when that search
finishes, within ``CERTIFY_ROUNDS`` rounds and by the solver's stop; otherwise the answer is the
checked flow with ``status: feasible``, the exact solver's own word in ``stats["status"]`` and
what stopped the proof in ``stats["proof"]``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from solvers.contract import Budget, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import BudgetTooSmallError, NoSolutionError
from solvers.flow.bounded import (
    FLOOR_S,
    INLINE_ARCS,
    INLINE_NODE_ARCS,
    DeadlinePassedError,
    in_place,
    run_bounded,
    stop_at,
)
from solvers.flow.bounded import warm_up as bounded_warm_up
from solvers.flow.cut import blocking_cut
from solvers.flow.dual import (
    UnboundedCostError,
    certificate_from_potentials,
    check_bounded,
    optimal_potentials,
)
from solvers.flow.problem import CoreNetwork, FlowNetwork
from solvers.flow.repair import solve_min_cost_flow
from solvers.flow.solution import (
    Certificate,
    FlowSolution,
    build_flow_solution,
    infeasible_solution,
)

#: Round cap of the optimality proof that follows each baseline (each round is O(arcs)).
CERTIFY_ROUNDS = 2000
#: ``stats["proof"]`` for each way the proof's search can end.
PROOF_OUTCOMES = {"converged": "proven", "round_limit": "round_limit",
                  "negative_cycle": "refuted"}


def prove_optimal(core: CoreNetwork, flow: np.ndarray, cost: int, deadline: float,
                  cancelled: Callable[[], bool] | None = None) -> tuple[Certificate | None, str]:
    """A zero-gap certificate of an exact solver's flow, or None, and what became of the proof:
    ``proven``, ``round_limit`` (not done in ``CERTIFY_ROUNDS`` rounds), ``time_limit``
    (still running at ``deadline``), ``cancelled`` or ``refuted`` (a negative residual cycle).

    Label-correcting on the flow's residual graph, recomputed through the dual bound, so it
    does not trust the solver. It stops at ``deadline`` and on a cancel, as it runs after the
    solver's stop and outside ``wall_time`` (0.6 s and 2,000 rounds on a 100,000-arc chain at
    a 30 s limit).
    """
    res = optimal_potentials(core, flow, max_rounds=CERTIFY_ROUNDS, deadline=deadline,
                             cancelled=cancelled)
    if res.status == "stopped":
        return None, "cancelled" if cancelled is not None and cancelled() else "time_limit"
    if res.status != "converged":
        return None, PROOF_OUTCOMES[res.status]
    cert = certificate_from_potentials(core, -res.labels, cost,
                                       "exact potentials (residual graph)")
    return cert, "proven"


def _finish(net: FlowNetwork, core: CoreNetwork, core_flow: np.ndarray, solver: str,
            started: float, budget: Budget, stats: dict[str, Any],
            progress: ProgressCallback) -> FlowSolution:
    """The exact solver's flow with its optimality proof, both on the solver's clock.

    ``status`` is ``optimal`` only when the proof gave a zero-gap certificate; the solver's
    own word is ``stats["status"]`` and ``stats["proof"]`` says how the proof ended.
    ``wall_time`` includes the proof, as oft_sinkhorn's includes its certificate.
    """
    solve_time = time.perf_counter() - started
    cost = core.cost(core_flow)
    t0 = time.perf_counter()
    cert, proof = prove_optimal(core, core_flow, cost, stop_at(started, budget.time_limit),
                                budget.cancelled)
    wall = time.perf_counter() - started
    stats.update(solve_time=solve_time, certify_time=time.perf_counter() - t0, proof=proof)
    sol = build_flow_solution(net, core.original_flow(core_flow), solver=solver,
                              wall_time=wall, proven_optimal=False, stats=stats,
                              certificate=cert)
    progress(ProgressEvent(solver, wall, 1, float(cost), sol.status))
    return sol


def stopped_at_limit(solver: str, budget: Budget, stop: DeadlinePassedError,
                     size: str) -> NoSolutionError:
    """The refusal of an exact solve stopped at its time limit (or cancelled)."""
    if stop.cancelled:
        return NoSolutionError(f"{solver} was cancelled after {stop.elapsed:.2f} s, before it "
                               "had a flow", more_time_helps=False)
    advice = "" if solver == "oft_sinkhorn" else (
        ", or use oft_sinkhorn, which returns a feasible flow with a certified gap in time")
    return NoSolutionError(
        f"{solver} had not finished {size} when its time limit of "
        f"{max(budget.time_limit, FLOOR_S):g} s ran out; that step cannot be interrupted, so "
        "it was stopped (costs that make long paths cheap can take it far beyond its "
        f"estimate from the size). Raise the time limit{advice}.")


def require_bounded(net: FlowNetwork, solver: str, budget: Budget, started: float) -> None:
    """Refuse a network whose cost is unbounded (``UnboundedCostError``) before it is solved:
    the core network caps uncapacitated arcs, so a solver would return a finite "optimum".

    Runs on the solver's clock (``started``) and stops with it (``stop_at``): it took 1.3 s
    before that clock on a 100,000-arc chain. A check stopped unfinished is a
    ``NoSolutionError``, not a flow whose cost nobody checked was bounded. A network with no
    feasible flow passes, as no flow has any cost: the solver answers ``infeasible`` with its
    cut. The verdict is kept on ``net``, so a comparison checks once. A cancel stops it too
    (a client gone, a job cancelled: 1.3 s on a closed chain went on for nobody).
    """
    if net.__dict__.get("_cost_bounded"):
        return
    try:
        done = check_bounded(net.core(), net.node_ids,
                             deadline=stop_at(started, budget.time_limit),
                             cancelled=budget.cancelled)
    except UnboundedCostError:
        if blocking_cut(net) is None:
            raise
        done = True
    if not done and budget.cancelled():
        raise NoSolutionError(f"{solver} was cancelled after {time.perf_counter() - started:.2f} "
                              "s, while checking that the cost is bounded, before it had a flow",
                              more_time_helps=False)
    if not done:
        raise NoSolutionError(
            f"{solver} had not finished checking that the cost is bounded (no cycle of "
            "uncapacitated arcs of negative cost) when its time limit of "
            f"{max(budget.time_limit, FLOOR_S):g} s ran out, and a flow is not returned "
            "without that check. Raise the time limit, or give the uncapacitated arcs "
            "capacities.")
    object.__setattr__(net, "_cost_bounded", True)


class ORToolsFlowSolver:
    """OR-Tools SimpleMinCostFlow on the core network."""

    name = "ortools_mcf"

    def warm_up(self) -> None:
        """Import OR-Tools and fork one bounded child before any clock starts."""
        bounded_warm_up()

    def solve(self, net: FlowNetwork, budget: Budget,
              progress: ProgressCallback = no_progress, options: Any = None) -> FlowSolution:
        """Exact; ``budget`` and ``options`` do not change the answer (it cannot stop early)."""
        started = time.perf_counter()
        require_bounded(net, self.name, budget, started)
        core = net.core()
        needed = ortools_min_time_limit(core.m)
        if budget.time_limit < needed:
            # it cannot be stopped: a 1M-arc network asked for 0.05 s answered after 2.4 s
            raise BudgetTooSmallError(
                f"ortools_mcf cannot be interrupted and needs about {needed:g} s for {core.m} "
                f"arcs; got {budget.time_limit:g} s. Raise the time limit to at least "
                f"{needed:g} s.", needed=needed)
        try:
            flow = run_bounded(solve_min_cost_flow, (core.n, core.tails, core.heads, core.caps,
                                                     core.costs, core.supplies),
                               deadline=stop_at(started, budget.time_limit),
                               cancelled=budget.cancelled,
                               inline=in_place(3e-6 * core.m, budget.time_limit,
                                               core.m < INLINE_ARCS))
        except DeadlinePassedError as stop:
            raise stopped_at_limit(self.name, budget, stop, f"{core.m} arcs") from None
        if flow is None:
            return infeasible_solution(net, solver=self.name,
                                       wall_time=time.perf_counter() - started,
                                       stats={"status": "INFEASIBLE"})
        return _finish(net, core, flow, self.name, started, budget, {"status": "OPTIMAL"},
                       progress)


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

    def warm_up(self) -> None:
        """Import networkx and fork one bounded child before any clock starts."""
        bounded_warm_up()

    def solve(self, net: FlowNetwork, budget: Budget,
              progress: ProgressCallback = no_progress, options: Any = None) -> FlowSolution:
        """Exact; ``budget`` and ``options`` do not change the answer (it cannot stop early)."""
        started = time.perf_counter()
        require_bounded(net, self.name, budget, started)
        core = net.core()
        needed = min_time_limit(len(core.supplies), core.m)
        if budget.time_limit < needed:
            raise BudgetTooSmallError(
                f"networkx_simplex cannot be interrupted and needs about {needed:g} s for "
                f"{len(core.supplies)} nodes and {core.m} arcs; got {budget.time_limit:g} s. "
                "Raise the time limit or choose ortools_mcf or oft_sinkhorn.", needed=needed)
        try:
            flow = run_bounded(network_simplex, (core.supplies, core.tails, core.heads,
                                                 core.caps, core.costs),
                               deadline=stop_at(started, budget.time_limit),
                               cancelled=budget.cancelled,
                               inline=in_place(3e-8 * len(core.supplies) * core.m,
                                               budget.time_limit,
                                               len(core.supplies) * core.m < INLINE_NODE_ARCS))
        except DeadlinePassedError as stop:
            raise stopped_at_limit(self.name, budget, stop,
                                   f"{len(core.supplies)} nodes and {core.m} arcs") from None
        if flow is None:
            return infeasible_solution(net, solver=self.name,
                                       wall_time=time.perf_counter() - started)
        # network_simplex has no status: a flow back is its optimum
        return _finish(net, core, flow, self.name, started, budget, {"status": "OPTIMAL"},
                       progress)


def network_simplex(supplies: np.ndarray, tails: np.ndarray, heads: np.ndarray,
                    caps: np.ndarray, costs: np.ndarray) -> np.ndarray | None:
    """networkx's network simplex on a MultiDiGraph (parallel arcs kept): the arc flows, or
    None when no feasible flow exists."""
    import networkx as nx

    G = nx.MultiDiGraph()
    G.add_nodes_from((i, {"demand": -int(b)}) for i, b in enumerate(supplies))
    G.add_edges_from(
        (int(t), int(h), k, {"capacity": int(u), "weight": int(c)})
        for k, (t, h, u, c) in enumerate(zip(tails, heads, caps, costs, strict=True)))
    try:
        _, flow_dict = nx.network_simplex(G)
    except nx.NetworkXUnfeasible:
        return None
    return np.fromiter(
        (flow_dict[int(t)][int(h)][k] for k, (t, h) in enumerate(zip(tails, heads,
                                                                       strict=True))),
        dtype=np.int64, count=len(tails))
