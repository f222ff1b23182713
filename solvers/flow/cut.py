"""Infeasibility proofs: a blocking cut from one max-flow on the super-source/sink network.

A network has a feasible flow iff the max flow from a super source (an arc of capacity b_i to
every supply node) to a super sink (capacity −b_i from every demand node) saturates every
supply. When it does not, the source side S of a minimum cut satisfies
``Σ_{i∈S} b_i > u(δ⁺(S))``: the nodes of S must ship out more than the arcs leaving S can
carry. That set is the explanation we return; it costs one OR-Tools max flow.
"""

from __future__ import annotations

import numpy as np

from solvers.flow.problem import BlockingCut, CoreNetwork, FlowNetwork


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
    # that the listed nodes' supplies add up to net_supply as sent (QA sweep: nodes {1, 2}
    # "have a net supply of 3" with supplies 3 and -3, node 2's demand past its capacity).
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
    # named add up to ``capacity`` as sent (QA sweep: an arc of capacity 2 and lower bound 1
    # counted 1); arcs entering the set force their lower bounds in (``forced``).
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
