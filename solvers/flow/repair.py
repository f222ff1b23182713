"""From an entropic flow to an exactly feasible integer flow, a certified gap, and optimality.

The entropic flow of ``sinkhorn`` is fractional and balanced only to within its tolerance.
Three steps make it exact:

1. **Round** every arc flow to the nearest integer within [0, u]. The imbalance
   ``r = b − (out − in)`` is then an integer vector summing to 0, small when Sinkhorn converged.
2. **Repair**: a min-cost flow (OR-Tools) of the imbalance r on the *residual network* of the
   rounded flow — forward arcs with room ``u − x`` at cost c, backward arcs with flow x at
   cost −c. Adding it gives an exactly feasible integer flow. The residual network is
   restricted to arcs whose reduced cost under the Sinkhorn potentials is at most θ (the
   arcs an ε-optimal flow can use), and widened (θ × 4, then every arc) only if that is
   infeasible. Infeasible with every arc means the network itself has no feasible flow.
3. **Certify**: the Sinkhorn potentials, rounded and lowered where an uncapacitated arc
   needs it (``dual.feasible_potentials``), give the LP dual bound
   ``Σ b_i π_i − Σ_e u_e·max(0, π_i − π_j − c_e)``; ``cost − bound`` is a certified gap.
   The lowering is a search, stopped at the solver's stop (``bounded_sinkhorn_certificate``).
4. **Finish** (optional): price-and-resolve from the warm start. Label-correcting shortest
   paths, started from the Sinkhorn potentials, find exact potentials for the flow restricted
   to the candidate arcs; every other arc is priced, arcs with negative reduced cost join the
   candidates and the restricted problem is re-solved, until no arc prices out. The final
   potentials prove optimality: the certificate is recomputed from them and has gap 0.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.flow.bounded import INLINE_ARCS, DeadlinePassedError, in_place, run_bounded
from solvers.flow.dual import (
    certificate_from_potentials,
    label_correct,
    lower_potentials,
    residual_edges,
)
from solvers.flow.problem import CoreNetwork, node_balance
from solvers.flow.solution import Certificate, InfeasibleNetworkError

#: Reduced-cost threshold of the first candidate set, in units of the final ε (cost units).
CANDIDATE_EPS = 8.0
#: How much the threshold grows when the restricted repair is infeasible.
WIDEN = 4.0
MAX_WIDENINGS = 4


def round_flow(core: CoreNetwork, flow: np.ndarray) -> np.ndarray:
    """Nearest integers within [0, u]."""
    x = np.rint(np.nan_to_num(np.asarray(flow, dtype=np.float64), nan=0.0, posinf=0.0))
    return np.clip(x, 0, core.caps).astype(np.int64)


def reduced_costs(core: CoreNetwork, pi: np.ndarray) -> np.ndarray:
    """c_e − π_tail + π_head (float), the price of sending one unit along each arc."""
    return core.costs - pi[core.tails] + pi[core.heads]


def solve_min_cost_flow(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
               costs: np.ndarray, supplies: np.ndarray) -> np.ndarray | None:
    """OR-Tools min-cost flow; the arc flows, or None when infeasible."""
    from ortools.graph.python import min_cost_flow

    smcf = min_cost_flow.SimpleMinCostFlow()
    if len(tails):
        smcf.add_arcs_with_capacity_and_unit_cost(tails.astype(np.int32), heads.astype(np.int32),
                                                  caps.astype(np.int64), costs.astype(np.int64))
    smcf.set_nodes_supplies(np.arange(n, dtype=np.int32), supplies.astype(np.int64))
    status = smcf.solve()
    if status == smcf.OPTIMAL:
        return np.asarray(smcf.flows(np.arange(len(tails))), dtype=np.int64)
    if status == smcf.INFEASIBLE:
        return None
    raise RuntimeError(f"OR-Tools min-cost flow failed with status {status}")


@dataclass
class RepairResult:
    flow: np.ndarray
    cost: int
    stats: dict[str, Any] = field(default_factory=dict)
    #: Arcs the repair was allowed to change (mask over core arcs); the finish starts there.
    candidates: np.ndarray | None = None


def bounded_min_cost_flow(deadline: float | None, cancelled: Callable[[], bool] | None,
                          n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
                          costs: np.ndarray, supplies: np.ndarray) -> np.ndarray | None:
    """``solve_min_cost_flow`` stopped at ``deadline`` (``bounded.DeadlinePassedError``):
    the OR-Tools call cannot be interrupted, and the repair's estimate of 2 µs an arc ran 8 s
    for an estimated 0.6 s on negative costs. No deadline: in place."""
    return run_bounded(solve_min_cost_flow, (n, tails, heads, caps, costs, supplies),
                       deadline=math.inf if deadline is None else deadline,
                       cancelled=cancelled,
                       inline=deadline is None or in_place(
                           2e-6 * len(tails), deadline - time.perf_counter(),
                           len(tails) < INLINE_ARCS))


def repair(core: CoreNetwork, fractional: np.ndarray, pi: np.ndarray,
           eps_cost: float, deadline: float | None = None,
           cancelled: Callable[[], bool] | None = None) -> RepairResult:
    """Round and repair to an exactly feasible integer flow (see the module docstring).

    Raises ``InfeasibleNetworkError`` when not even the full residual network can carry the
    imbalance, i.e. when the network has no feasible flow, and ``DeadlinePassedError`` when
    the repair's solve was still running at ``deadline``.
    """
    started = time.perf_counter()
    x = round_flow(core, fractional)
    imbalance = core.supplies - node_balance(core.n, core.tails, core.heads, x)
    stats: dict[str, Any] = {
        "rounded_cost": core.cost(x),
        "rounding_imbalance": int(np.abs(imbalance).sum()) // 2,
    }
    rc = reduced_costs(core, pi)
    theta = CANDIDATE_EPS * max(eps_cost, 1e-9)
    widenings = 0
    while True:
        everything = widenings >= MAX_WIDENINGS
        cand = np.ones(core.m, dtype=bool) if everything else rc <= theta
        if not imbalance.any():
            delta = np.zeros(core.m, dtype=np.int64)
            break
        fwd = np.flatnonzero(cand & (x < core.caps))
        bwd = np.flatnonzero(x > 0)
        tails = np.concatenate([core.tails[fwd], core.heads[bwd]])
        heads = np.concatenate([core.heads[fwd], core.tails[bwd]])
        caps = np.concatenate([core.caps[fwd] - x[fwd], x[bwd]])
        costs = np.concatenate([core.costs[fwd], -core.costs[bwd]])
        moved = bounded_min_cost_flow(deadline, cancelled, core.n, tails, heads, caps, costs,
                                      imbalance)
        if moved is not None:
            delta = np.zeros(core.m, dtype=np.int64)
            np.add.at(delta, fwd, moved[: len(fwd)])
            np.subtract.at(delta, bwd, moved[len(fwd):])
            stats["repair_arcs"] = len(tails)
            break
        if everything:
            raise InfeasibleNetworkError("the residual network cannot carry the imbalance")
        widenings += 1
        theta *= WIDEN
    y = x + delta
    stats.update(repair_widenings=widenings, repair_candidates=int(cand.sum()),
                 repair_time=time.perf_counter() - started,
                 repair_changed_arcs=int((delta != 0).sum()))
    return RepairResult(flow=y, cost=core.cost(y), stats=stats, candidates=cand | (x > 0))


def sinkhorn_certificate(core: CoreNetwork, cost: int,
                         potentials: list[np.ndarray]) -> tuple[Certificate, np.ndarray]:
    """The best certificate among candidate real potentials (made integral and feasible).

    Zero potentials are always a candidate: their bound (−Σ u·max(0, −c)) is what an
    unconverged Sinkhorn run has to beat to be worth reporting.
    """
    best = bounded_sinkhorn_certificate(core, cost, potentials)
    assert best is not None  # no deadline, no cancel: every candidate is searched
    return best


def bounded_sinkhorn_certificate(core: CoreNetwork, cost: int, potentials: list[np.ndarray],
                                 deadline: float | None = None,
                                 cancelled: Callable[[], bool] | None = None,
                                 ) -> tuple[Certificate, np.ndarray] | None:
    """``sinkhorn_certificate`` stopped at ``deadline`` (``time.perf_counter()``) or a cancel:
    the best certificate among the candidates made feasible by then, None when none was.

    Making potentials feasible for uncapacitated arcs is a label-correcting search as long as
    their longest path of negative arcs (a 100,000-arc chain: 5,000 rounds, 1.3 s a
    candidate, four candidates), and it came after the solver's stop with no deadline.
    """
    best: tuple[Certificate, np.ndarray] | None = None
    for pi in [*potentials, np.zeros(core.n)]:
        fixed = lower_potentials(core, pi, deadline=deadline, cancelled=cancelled)
        if fixed is None:  # stopped: the rest would stop as soon
            break
        cert = certificate_from_potentials(core, fixed, cost, "sinkhorn potentials")
        if best is None or cert.dual_bound > best[0].dual_bound:
            best = (cert, fixed)
    return best


def _restricted_potentials(core: CoreNetwork, mask: np.ndarray, flow: np.ndarray,
                           pi: np.ndarray, deadline: float | None = None,
                           cancelled: Callable[[], bool] | None = None,
                           ) -> tuple[np.ndarray | None, int, str]:
    """Exact potentials for ``flow`` on the arcs in ``mask`` (None if it is not optimal there
    or the deadline or a cancel came first), the label-correcting rounds, and their status."""
    sub = _subnetwork(core, mask)
    t, h, w = residual_edges(sub, flow[mask])
    res = label_correct(core.n, t, h, w, -pi.astype(np.int64), deadline=deadline,
                        cancelled=cancelled)
    if res.status != "converged":
        return None, res.rounds, res.status
    return -res.labels, res.rounds, res.status


def _subnetwork(core: CoreNetwork, mask: np.ndarray) -> CoreNetwork:
    return CoreNetwork(
        n=core.n, tails=core.tails[mask], heads=core.heads[mask], costs=core.costs[mask],
        caps=core.caps[mask], capacitated=core.capacitated[mask], supplies=core.supplies,
        m_orig=0, lower=np.zeros(0, dtype=np.int64), cost_offset=core.cost_offset,
        origin=core.origin, split_nodes=np.zeros(0, dtype=np.int64),
        uncap_bound=core.uncap_bound,
    )


@dataclass
class FinishResult:
    flow: np.ndarray
    cost: int
    certificate: Certificate | None
    stats: dict[str, Any] = field(default_factory=dict)
    complete: bool = True


def finish(core: CoreNetwork, flow: np.ndarray, candidates: np.ndarray, pi: np.ndarray,
           deadline: float | None = None, max_rounds: int = 50,
           cancelled: Callable[[], bool] | None = None) -> FinishResult:
    """Price-and-resolve to a proven optimum from a feasible flow and warm potentials.

    ``candidates`` must contain the support of ``flow``. Stops early (``complete=False``,
    the flow still feasible) at ``deadline`` or when ``cancelled()`` says so, a re-solve or a
    search for potentials running then included.
    """
    started = time.perf_counter()
    mask = candidates | (flow > 0)
    y = flow.copy()
    pot = np.asarray(pi, dtype=np.int64)
    resolves = 0
    bf_rounds = 0
    need_solve = False
    longest = 0.0  # the longest round so far: a round cannot be interrupted
    for round_no in range(max_rounds):
        round_started = time.perf_counter()
        if round_no == max_rounds - 1 and not mask.all():
            mask = np.ones(core.m, dtype=bool)  # last round: the full problem, still proven
            need_solve = True
        if need_solve:
            idx = np.flatnonzero(mask)
            try:
                sub = bounded_min_cost_flow(deadline, cancelled, core.n, core.tails[idx],
                                            core.heads[idx], core.caps[idx], core.costs[idx],
                                            core.supplies)
            except DeadlinePassedError:
                break  # y is still the last feasible flow

            if sub is None:  # cannot happen: the current flow lives on these arcs
                raise RuntimeError("the restricted problem lost feasibility")
            y = np.zeros(core.m, dtype=np.int64)
            y[idx] = sub
            resolves += 1
        potentials, rounds, status = _restricted_potentials(core, mask, y, pot, deadline,
                                                            cancelled)
        bf_rounds += rounds
        if status == "stopped":
            break  # y is still a feasible flow; it goes back without a certificate
        if potentials is None:
            if need_solve:
                raise RuntimeError("the restricted optimum has a negative residual cycle")
            need_solve = True  # the flow is not optimal on the candidates: re-solve there
            continue
        pot = potentials
        rc = core.costs - pot[core.tails] + pot[core.heads]
        # Outside the candidates the flow is 0: only the forward residual arc exists.
        violators = ~mask & (rc < 0) & (core.caps > 0)
        if not violators.any():
            cost = core.cost(y)
            cert = certificate_from_potentials(core, pot, cost, "exact potentials (finish)")
            return FinishResult(flow=y, cost=cost, certificate=cert, stats={
                "finish_resolves": resolves, "finish_label_rounds": bf_rounds,
                "finish_arcs": int(mask.sum()), "finish_time": time.perf_counter() - started})
        need_solve = True
        mask = mask | violators
        now = time.perf_counter()
        longest = max(longest, now - round_started)
        if deadline is not None and now + longest >= deadline:
            break  # the next round would likely end past the deadline
    return FinishResult(flow=y, cost=core.cost(y), certificate=None, complete=False, stats={
        "finish_resolves": resolves, "finish_label_rounds": bf_rounds,
        "finish_arcs": int(mask.sum()), "finish_time": time.perf_counter() - started})
