"""A small seeded generator of feasible min-cost-flow networks in the spirit of NETGEN.

Like NETGEN (Klingman, Napier & Stutz 1974) it picks source and sink nodes, splits the total
supply among them at random, lays a *skeleton* that guarantees feasibility and fills up with
random arcs. Our skeleton is simpler than NETGEN's chains: a directed cycle through all
transshipment nodes, an arc from every source into the cycle and an arc from the cycle to every
sink, each with capacity equal to the total supply, so every supply can reach every demand.
A share of the skeleton arcs gets the maximum cost (NETGEN's "hicost" skeleton), so the cheap
routes go through the random arcs. The same arguments give the same network on every machine,
and the arc count is exactly ``arcs``, so generated networks of one size batch together.
"""

from __future__ import annotations

import math

import numpy as np

from solvers.flow.problem import FlowNetwork


def netgen_style(
    seed: int,
    nodes: int,
    arcs: int | None = None,
    *,
    sources: int | None = None,
    sinks: int | None = None,
    total_supply: int | None = None,
    cost_range: tuple[int, int] = (1, 10_000),
    capacity_range: tuple[int, int] = (1, 1_000),
    hicost_fraction: float = 0.5,
    uncapacitated_fraction: float = 0.0,
    name: str | None = None,
) -> FlowNetwork:
    """A feasible network; defaults follow the NETGEN-8 family of the DIMACS/LEMON suite
    (8 arcs per node, √n sources and sinks, supply 1000·√n, costs 1–10⁴, capacities 1–10³)."""
    root = max(2, round(math.sqrt(nodes)))
    sources = root if sources is None else sources
    sinks = root if sinks is None else sinks
    arcs = 8 * nodes if arcs is None else arcs
    total_supply = 1000 * root if total_supply is None else total_supply
    n_trans = nodes - sources - sinks
    if sources < 1 or sinks < 1 or n_trans < 1:
        raise ValueError("need at least one source, one sink and one transshipment node")
    skeleton = sources + sinks + (n_trans if n_trans > 1 else 0)
    if arcs < skeleton:
        raise ValueError(f"{arcs} arcs cannot hold the {skeleton}-arc skeleton")
    if total_supply < max(sources, sinks):
        raise ValueError("total supply must give every source and sink at least one unit")
    rng = np.random.default_rng([seed, nodes, arcs])
    perm = rng.permutation(nodes)
    src, snk, trans = perm[:sources], perm[sources:sources + sinks], perm[sources + sinks:]

    supplies = np.zeros(nodes, dtype=np.int64)
    supplies[src] = _split(rng, total_supply, sources)
    supplies[snk] = -_split(rng, total_supply, sinks)

    cycle_t = trans if n_trans > 1 else trans[:0]
    cycle_h = np.roll(trans, -1) if n_trans > 1 else trans[:0]
    sk_tails = np.concatenate([src, rng.choice(trans, sinks), cycle_t])
    sk_heads = np.concatenate([rng.choice(trans, sources), snk, cycle_h])
    lo, hi = cost_range
    sk_costs = np.where(rng.random(len(sk_tails)) < hicost_fraction, hi,
                        rng.integers(lo, hi + 1, len(sk_tails)))
    sk_caps = np.full(len(sk_tails), total_supply, dtype=np.int64)

    extra = arcs - len(sk_tails)
    r_tails = rng.integers(0, nodes, extra)
    r_heads = (r_tails + rng.integers(1, nodes, extra)) % nodes  # never a self-loop
    r_costs = rng.integers(lo, hi + 1, extra)
    r_caps = rng.integers(capacity_range[0], capacity_range[1] + 1, extra)

    tails = np.concatenate([sk_tails, r_tails])
    heads = np.concatenate([sk_heads, r_heads])
    costs = np.concatenate([sk_costs, r_costs]).astype(np.int64)
    caps: list[int | None] = np.concatenate([sk_caps, r_caps]).astype(np.int64).tolist()
    order = rng.permutation(arcs)  # do not leave the skeleton recognisable at the front
    if uncapacitated_fraction > 0:
        free = rng.random(arcs) < uncapacitated_fraction
        caps = [None if f else c for c, f in zip(caps, free, strict=True)]
    return FlowNetwork.build(
        name=name or f"netgen-style-n{nodes}-m{arcs}-s{seed}",
        node_ids=np.arange(1, nodes + 1, dtype=np.int64), supplies=supplies,
        tails=tails[order] + 1, heads=heads[order] + 1, costs=costs[order],
        capacities=[caps[k] for k in order],
    )


def _split(rng: np.random.Generator, total: int, parts: int) -> np.ndarray:
    """``total`` split into ``parts`` positive integers, uniformly at random."""
    cuts = np.sort(rng.choice(np.arange(1, total), parts - 1, replace=False)) if parts > 1 else \
        np.zeros(0, dtype=np.int64)
    return np.diff(np.concatenate([[0], cuts, [total]])).astype(np.int64)
