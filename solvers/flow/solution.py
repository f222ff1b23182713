"""A flow solver's answer: the independent flow checker, the optimality certificate and the
``FlowSolution`` every solver returns, optimal, feasible or infeasible with its blocking cut.

It sits apart from ``problem`` (the network and its validation) so that the answer may name the
cut that proves a network infeasible: ``problem`` ← ``cut`` ← ``solution``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.errors import NoSolutionError
from solvers.flow.cut import BlockingCut, blocking_cut
from solvers.flow.problem import FlowNetwork, exact_dot


# -- checking a flow ---------------------------------------------------------------------------
def check_flow(net: FlowNetwork, flow: Any) -> tuple[int | None, list[str]]:
    """Independently check a flow on the user's network: (exact cost, violations).

    Integer flows only; balance at every node, lower ≤ flow ≤ capacity on every arc, node
    throughput ≤ node capacity, and the cost recomputed from the arcs. The cost is ``None``
    when the flow is not even an integer vector of the right length.
    """
    arr = np.asarray(flow)
    if arr.shape != (net.m,):
        return None, [f"flow has shape {arr.shape}, expected one value per arc ({net.m})"]
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            k = int(np.argmax(~np.isfinite(arr) | (arr != np.round(arr))))
            return None, [f"arcs[{k}]: flow {arr[k]!r} is not an integer"]
    elif arr.dtype.kind not in "iu":
        return None, [f"flow values must be integers, got dtype {arr.dtype}"]
    x = arr.astype(np.int64)
    violations: list[str] = []
    limit = 5

    def add(items: np.ndarray, text: Callable[[int], str], what: str) -> None:
        for k in items[:limit]:
            violations.append(text(int(k)))
        if len(items) > limit:
            violations.append(f"… and {len(items) - limit} more {what}")

    add(np.flatnonzero(x < net.lower),
        lambda k: f"arcs[{k}] ({int(net.node_ids[net.tails[k]])}→"
        f"{int(net.node_ids[net.heads[k]])}): flow {int(x[k])} below its lower bound "
        f"{int(net.lower[k])}", "arcs below their lower bound")
    add(np.flatnonzero(net.capacitated & (x > net.capacities)),
        lambda k: f"arcs[{k}] ({int(net.node_ids[net.tails[k]])}→"
        f"{int(net.node_ids[net.heads[k]])}): flow {int(x[k])} above its capacity "
        f"{int(net.capacities[k])}", "arcs above capacity")
    out = np.zeros(net.n, dtype=np.int64)
    inn = np.zeros(net.n, dtype=np.int64)
    np.add.at(out, net.tails, x)
    np.add.at(inn, net.heads, x)
    bal = out - inn
    add(np.flatnonzero(bal != net.supplies),
        lambda i: f"node {int(net.node_ids[i])}: out − in = {int(bal[i])}, but its supply is "
        f"{int(net.supplies[i])}", "unbalanced nodes")
    through = np.maximum(inn + np.maximum(net.supplies, 0), out + np.maximum(-net.supplies, 0))
    add(np.flatnonzero(net.node_capacitated & (through > net.node_capacities)),
        lambda i: f"node {int(net.node_ids[i])}: throughput {int(through[i])} above its node "
        f"capacity {int(net.node_capacities[i])}", "nodes above capacity")
    return exact_dot(net.costs, x), violations


# -- results -----------------------------------------------------------------------------------
@dataclass
class Certificate:
    """A lower bound on the optimal cost from node potentials, and the gap it certifies.

    ``dual_bound`` is the LP dual value ``Σ b_i π_i − Σ_e u_e·max(0, π_i − π_j − c_e)`` (plus
    the lower-bound offset) at integer potentials that satisfy every uncapacitated arc; it is a
    valid lower bound whatever the potentials, so ``gap = cost − dual_bound`` bounds how far the
    flow can be from optimal. ``gap == 0`` proves optimality.
    """

    dual_bound: int
    gap: int
    source: str

    @property
    def optimal(self) -> bool:
        return self.gap == 0

    @property
    def cost(self) -> int:
        return self.dual_bound + self.gap

    @property
    def relative_gap(self) -> float:
        """``gap / max(|cost|, |dual_bound|)``, in [0, 2]: dividing by the bound alone gave
        meaningless billions while the bound was still 0. It is 1 or more exactly when the bound
        proves nothing relative to the cost yet (bound ≤ 0 ≤ cost)."""
        if self.gap == 0:
            return 0.0
        return self.gap / max(abs(self.cost), abs(self.dual_bound))

    def to_dict(self) -> dict[str, Any]:
        return {"dual_bound": self.dual_bound, "gap": self.gap,
                "relative_gap": self.relative_gap, "optimal": self.optimal,
                "source": self.source}


STATUSES = ("optimal", "feasible", "infeasible")


@dataclass
class FlowSolution:
    """A solver's answer, with the cost recomputed and the flow checked by ``check_flow``.

    ``status`` is ``optimal`` (proven: a zero-gap certificate; the flow solvers never pass
    ``proven_optimal``, as an exact solver's word whose proof did not finish is no proof),
    ``feasible`` (a checked flow, gap bounded by ``certificate``, or unproven when it is None)
    or ``infeasible`` (no flow exists; ``cut`` says why).
    """

    network_name: str
    solver: str
    status: str
    flow: np.ndarray | None
    cost: int | None
    feasible: bool
    violations: list[str]
    wall_time: float
    stats: dict[str, Any] = field(default_factory=dict)
    certificate: Certificate | None = None
    cut: BlockingCut | None = None


def build_flow_solution(
    net: FlowNetwork,
    flow: np.ndarray,
    *,
    solver: str,
    wall_time: float,
    proven_optimal: bool,
    stats: dict[str, Any] | None = None,
    certificate: Certificate | None = None,
) -> FlowSolution:
    """Wrap a solver's flow: recompute its cost and run the independent checker. A flow that
    fails it is never returned (it came back as status "feasible" with ``feasible: false``, a
    contradiction a client reading the status would miss): ``NoSolutionError`` naming the
    solver and what the checker found."""
    cost, violations = check_flow(net, flow)
    if cost is None or violations:
        shown = "; ".join(violations[:3]) or "no cost"
        raise NoSolutionError(f"{solver}'s flow failed the independent check ({shown}"
                              f"{'; …' if len(violations) > 3 else ''}), so it is not "
                              "returned. Try another solver.", field="solver",
                              more_time_helps=False)
    feasible = True
    if certificate is not None and certificate.cost != cost:
        # the gap is to the cost the checker recomputed, not the solver's own figure: a
        # solver whose cost drifted from its flow must not be called optimal on its word
        certificate = Certificate(dual_bound=certificate.dual_bound,
                                  gap=cost - certificate.dual_bound, source=certificate.source)
    optimal = feasible and (proven_optimal or (certificate is not None and certificate.optimal))
    return FlowSolution(
        network_name=net.name, solver=solver,
        status="optimal" if optimal else "feasible",
        flow=np.asarray(flow, dtype=np.int64), cost=cost, feasible=feasible,
        violations=violations, wall_time=wall_time, stats=dict(stats or {}),
        certificate=certificate,
    )


def infeasible_solution(net: FlowNetwork, *, solver: str, wall_time: float,
                        stats: dict[str, Any] | None = None,
                        cut: BlockingCut | None = None) -> FlowSolution:
    """The answer for a network without a feasible flow, with its blocking cut (computed here
    unless the caller already has it). A solver's "infeasible" is never taken on its word:
    when the independent max flow finds no cut (a feasible flow exists), ``NoSolutionError``."""
    if cut is None:
        cut = blocking_cut(net)
    if cut is None:
        raise NoSolutionError(f"{solver} answered that the network has no feasible flow, but "
                              "an independent max flow carries every supply, so one exists; "
                              "its answer is not returned. Try another solver.",
                              field="solver", more_time_helps=False)
    return FlowSolution(network_name=net.name, solver=solver, status="infeasible", flow=None,
                        cost=None, feasible=False, violations=[], wall_time=wall_time,
                        stats=dict(stats or {}), cut=cut)


class InfeasibleNetworkError(Exception):
    """Raised inside a solver when it finds no feasible flow (turned into an answer by solve)."""
