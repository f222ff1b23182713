"""Infeasibility proofs: a blocking cut from one max-flow on the super-source/sink network.

A network has a feasible flow iff the max flow from a super source (an arc of capacity b_i to
every supply node) to a super sink (capacity −b_i from every demand node) saturates every
supply. When it does not, the source side S of a minimum cut satisfies
``Σ_{i∈S} b_i > u(δ⁺(S))``: the nodes of S must ship out more than the arcs leaving S can
carry. That set is the explanation we return; it costs one OR-Tools max flow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.flow.problem import CoreNetwork, FlowNetwork


@dataclass
class BlockingCut:
    """Why no feasible flow exists: a node set whose net supply exceeds what can leave it.

    ``nodes`` (user ids) hold ``net_supply`` more units than they consume, but the arcs leaving
    the set (``arcs``, user arc indices) and the node capacities inside it (``node_capacities``,
    user ids) let at most ``capacity`` units out (the arcs' capacities as sent). With lower
    bounds, ``net_supply`` includes the flow that the arcs entering the set (``lower_arcs``)
    force into it, ``forced`` units, so the nodes' own supplies sum to ``net_supply − forced``.
    A node with a capacity can be cut through: ``inflow_nodes`` have only their inflow side
    in the set (their demand lies past their capacity, outside), ``outflow_nodes`` only their
    outflow side (their supply lies before their capacity, outside); neither counts in
    ``net_supply``.
    """

    nodes: list[int]
    net_supply: int
    capacity: int
    arcs: list[int]
    node_capacities: list[int]
    forced: int = 0
    lower_arcs: list[int] = field(default_factory=list)
    inflow_nodes: list[int] = field(default_factory=list)
    outflow_nodes: list[int] = field(default_factory=list)

    @property
    def message(self) -> str:
        shown = ", ".join(str(v) for v in self.nodes[:10])
        more = f" and {len(self.nodes) - 10} more" if len(self.nodes) > 10 else ""
        sides = []
        for ids, side, what, where in ((self.inflow_nodes, "inflow", "demand", "past"),
                                       (self.outflow_nodes, "outflow", "supply", "before")):
            if ids:
                one = len(ids) == 1
                its = "its" if one else "their"
                listed = ", ".join(map(str, ids[:10])) + (" …" if len(ids) > 10 else "")
                sides.append(f"the {side} side of node{'' if one else 's'} {listed} ({its} "
                             f"{what} {'lies' if one else 'lie'} {where} {its} node capacity, "
                             "outside the set)")
        subject = f"nodes {{{shown}{more}}}" + "".join(f" and {s}" for s in sides)
        ways = [f"{len(self.arcs)} arc{'s' if len(self.arcs) != 1 else ''}"]
        if self.node_capacities:
            caps = ", ".join(map(str, self.node_capacities[:10]))
            ways.append(f"the node capacit{'ies' if len(self.node_capacities) > 1 else 'y'} "
                        f"of node{'s' if len(self.node_capacities) > 1 else ''} {caps}")
        forced = ""
        if self.lower_arcs:
            # the supply a client can check against the network it sent: a net supply of 1
            # for nodes whose supplies sum to -3 says that 4 units are forced in
            arcs = ", ".join(map(str, self.lower_arcs[:10]))
            extra = len(self.lower_arcs) - 10
            more_arcs = f" and {extra} more" if extra > 0 else ""
            forced = (f" (their supplies sum to {self.net_supply - self.forced}; the lower "
                      f"bounds of arc{'s' if len(self.lower_arcs) > 1 else ''} {arcs}{more_arcs} "
                      f"force {self.forced} more in)")
        units = "unit" if abs(self.net_supply) == 1 else "units"
        return (f"no feasible flow: {subject} have a net supply of "
                f"{self.net_supply} {units}{forced}, but at most {self.capacity} can leave them "
                f"(through {' and '.join(ways)})")

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "net_supply": self.net_supply, "capacity": self.capacity,
                "arcs": self.arcs, "node_capacities": self.node_capacities,
                "forced": self.forced, "lower_arcs": self.lower_arcs,
                "inflow_nodes": self.inflow_nodes, "outflow_nodes": self.outflow_nodes,
                "message": self.message}


def max_flow_value(core: CoreNetwork) -> tuple[int, np.ndarray]:
    """(max flow from the supplies to the demands, source-side mask over core nodes)."""
    from ortools.graph.python import max_flow

    n = core.n
    source, sink = n, n + 1
    sup = np.flatnonzero(core.supplies > 0)
    dem = np.flatnonzero(core.supplies < 0)
    tails = np.concatenate([core.tails, np.full(len(sup), source), dem]).astype(np.int32)
    heads = np.concatenate([core.heads, sup, np.full(len(dem), sink)]).astype(np.int32)
    # Uncapacitated arcs carry core.uncap_bound ≥ total supply: never the bottleneck.
    caps = np.concatenate([core.caps, core.supplies[sup], -core.supplies[dem]]).astype(np.int64)
    smf = max_flow.SimpleMaxFlow()
    smf.add_arcs_with_capacity(tails, heads, caps)
    status = smf.solve(source, sink)
    if status != smf.OPTIMAL:
        raise RuntimeError(f"OR-Tools max flow failed with status {status}")
    side = np.zeros(n + 2, dtype=bool)
    side[np.asarray(smf.get_source_side_min_cut(), dtype=np.int64)] = True
    return int(smf.optimal_flow()), side[:n]


def blocking_cut(net: FlowNetwork) -> BlockingCut | None:
    """The cut that proves ``net`` infeasible, or None when a feasible flow exists."""
    core = net.core()
    value, in_s = max_flow_value(core)
    if value >= int(core.supplies[core.supplies > 0].sum()):
        return None
    leaving = np.flatnonzero(in_s[core.tails] & ~in_s[core.heads])
    user_arcs = leaving[leaving < core.m_orig]
    split_arcs = leaving[leaving >= core.m_orig]
    n = len(net.node_ids)
    # A node with a capacity is two core nodes (in-half i, out-half n + j): its supply sits on
    # the in-half, its demand on the out-half. A node whose halves fall on both sides of the cut
    # counts toward the set's net supply with only the half inside, so it is listed with the
    # set's nodes only when that half holds all of its supply or demand; otherwise apart, so
    # that the listed nodes' supplies add up to net_supply as sent (nodes {1, 2} with supplies
    # 3 and -3 do not "have a net supply of 3" when node 2's demand lies past its capacity).
    inflow_only: list[int] = []
    outflow_only: list[int] = []
    whole = in_s[:n].copy()
    for j, i in enumerate(core.split_nodes.tolist()):
        inside_in, inside_out = bool(in_s[i]), bool(in_s[n + j])
        if inside_in and not inside_out and net.supplies[i] < 0:
            inflow_only.append(i)
            whole[i] = False
        elif inside_out and not inside_in:
            if net.supplies[i] > 0:
                outflow_only.append(i)
            else:
                whole[i] = True
    nodes = np.flatnonzero(whole)
    capped_nodes = core.split_nodes[split_arcs - core.m_orig]
    # The core network shifts lower bounds out (x = lower + x'): a leaving arc carries
    # capacity − lower and its tail supplies lower less. Both are put back, so that the arcs
    # named add up to ``capacity`` as sent (an arc of capacity 2 and lower bound 1 counts 2,
    # not 1); arcs entering the set force their lower bounds in (``forced``).
    user = np.arange(core.m_orig)
    tail_in, head_in = in_s[core.tails[user]], in_s[core.heads[user]]
    lower_arcs = np.flatnonzero(head_in & ~tail_in & (net.lower > 0))
    forced = int(net.lower[lower_arcs].sum())
    lower_out = int(net.lower[user_arcs].sum())
    return BlockingCut(
        nodes=[int(net.node_ids[i]) for i in nodes],
        net_supply=int(core.supplies[in_s].sum()) + lower_out,
        capacity=int(core.caps[leaving].sum()) + lower_out,
        arcs=[int(k) for k in user_arcs],
        node_capacities=[int(net.node_ids[i]) for i in capped_nodes],
        forced=forced,
        lower_arcs=[int(k) for k in lower_arcs],
        inflow_nodes=[int(net.node_ids[i]) for i in inflow_only],
        outflow_nodes=[int(net.node_ids[i]) for i in outflow_only],
    )
