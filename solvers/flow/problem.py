"""Min-cost flow networks: validation and the solver-facing core network.

A ``FlowNetwork`` is what the user gave: node ids with integer supplies (positive = supply,
negative = demand), arcs with integer costs, optional capacities and lower bounds, and optional
node capacities. Every rule is checked here, once, with the field at fault named, so the API,
the CLI and the file readers reject the same networks with the same words.

Solvers never see node capacities or lower bounds: ``CoreNetwork`` removes them with the two
textbook transformations (node splitting, then shifting lower bounds into the supplies) and
gives every arc a finite capacity, so OR-Tools, networkx and the entropic solver all solve the
same plain problem ``min c·x  s.t.  out − in = b,  0 ≤ x ≤ u``. ``solution.check_flow`` checks
a flow against the *original* network with exact integer arithmetic, independently of that
transform.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import InstanceError


class UnboundedCostError(InstanceError):
    """The cost is unbounded below (a negative cycle of uncapacitated arcs): the input's fault,
    so a comparison raises it once instead of once per solver."""


#: Largest |cost| accepted: OR-Tools' cost scaling multiplies costs by about the node count.
MAX_ABS_COST = 10**9
#: Largest |supply|, capacity or lower bound accepted.
MAX_AMOUNT = 10**12
#: Products of costs and flows must stay below this so int64 arithmetic cannot overflow.
INT64_SAFE = 2**62

FieldName = Callable[[int], str]


def _arc_field(k: int) -> str:
    return f"arcs[{k}]"


def _node_field(i: int) -> str:
    return f"nodes[{i}]"


def _is_whole(v: Any) -> bool:
    """An int, or a float with no fractional part; never a bool or text."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return False
    return not isinstance(v, (float, np.floating)) or float(v).is_integer()


# -- integer arrays with the field at fault named ------------------------------------------------
def _shown(value: Any) -> str:
    """A number as an error quotes it: a float as %.6g (1e+300, not its 301 digits),
    an integer whole unless it is very long."""
    if isinstance(value, float):
        return f"{value:.6g}"
    bits = abs(int(value)).bit_length()
    if bits <= 64:
        return str(int(value))
    # str() of a 5,000-digit integer raises (Python's 4,300-digit limit)
    return f"about {'-' if value < 0 else ''}1e+{int(bits * math.log10(2))}"


def _as_int_array(
    values: Any, name: str, item_field: FieldName, *, allow_none: bool = False,
    bound: int = MAX_AMOUNT,
) -> tuple[np.ndarray, np.ndarray]:
    """Values → (int64 array, present-mask). Floats must be whole, booleans and text are refused,
    ``None`` only where ``allow_none``; |value| ≤ ``bound``."""
    if isinstance(values, np.ndarray):
        raw = values
    elif any(isinstance(v, bool) for v in values):
        raw = np.asarray(values, dtype=object)  # so that true/false is refused below
    else:
        try:
            raw = np.asarray(values)
        except (ValueError, OverflowError):
            raw = np.asarray(values, dtype=object)
        if raw.dtype.kind in "US" and raw.ndim == 1:
            # numpy made every entry text ('1', '2', 'x'): keep the entries as given, so the
            # one that is text is named, not the first entry, a number
            raw = np.empty(len(values), dtype=object)
            for k, v in enumerate(values):
                raw[k] = v
        if raw.ndim != 1:  # nested lists: keep one object per entry so the entry is named
            raw = np.empty(len(values), dtype=object)
            for k, v in enumerate(values):
                raw[k] = v
    n = len(raw)
    present = np.ones(n, dtype=bool)
    if raw.dtype.kind == "u" and len(raw) and int(raw.max()) > bound:
        k = int(np.argmax(raw > bound))  # uint64 above 2⁶³ would wrap to a negative int64
        raise InstanceError(item_field(k), f"{name} {int(raw[k])} is larger in magnitude than "
                            f"the supported {bound:.0e}")
    if raw.dtype.kind in "iu":
        out = raw.astype(np.int64)
    elif raw.dtype.kind == "f":
        bad = ~np.isfinite(raw) | (raw != np.round(raw))
        if bad.any():
            k = int(np.argmax(bad))
            raise InstanceError(item_field(k),
                                f"{name} must be an integer, got {float(raw[k])!r}")
        huge = np.abs(raw) > bound  # before the cast: int64 would wrap 1e300
        if huge.any():
            k = int(np.argmax(huge))
            raise InstanceError(item_field(k), f"{name} {raw[k]:.6g} is larger in magnitude "
                                f"than the supported {bound:.0e}")
        out = raw.astype(np.int64)
    else:
        out = np.zeros(n, dtype=np.int64)
        for k, v in enumerate(raw.tolist()):
            if v is None:
                if not allow_none:
                    raise InstanceError(item_field(k), f"{name} is missing")
                present[k] = False
            elif not _is_whole(v):
                raise InstanceError(item_field(k), f"{name} must be an integer, got {v!r}")
            else:
                if abs(int(v)) > bound:
                    raise InstanceError(item_field(k), f"{name} {_shown(v)} is larger in "
                                        f"magnitude than the supported {bound:.0e}")
                out[k] = int(v)
        return out, present
    too_big = (out > bound) | (out < -bound)  # not np.abs: |−2⁶³| wraps to −2⁶³ in int64
    if too_big.any():
        k = int(np.argmax(too_big))
        raise InstanceError(item_field(k), f"{name} {int(out[k])} is larger in magnitude than the "
                            f"supported {bound:.0e}")
    return out, present


def exact_dot(a: np.ndarray, b: np.ndarray) -> int:
    """Σ a·b of two integer arrays as an exact Python int (int64 when it provably fits)."""
    if len(a) == 0:
        return 0
    bound = float(np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    if bound < INT64_SAFE:
        return int(a.astype(np.int64) @ b.astype(np.int64))
    return int(np.dot(a.astype(object), b.astype(object)))


def node_balance(n: int, tails: np.ndarray, heads: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """out − in per node, in exact int64 (np.bincount would go through float64)."""
    bal = np.zeros(n, dtype=np.int64)
    np.add.at(bal, tails, flow)
    np.subtract.at(bal, heads, flow)
    return bal


# -- the network ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class FlowNetwork:
    """A directed network as the user gave it; build it with ``FlowNetwork.build``."""

    name: str
    node_ids: np.ndarray
    supplies: np.ndarray
    tails: np.ndarray
    heads: np.ndarray
    costs: np.ndarray
    capacities: np.ndarray
    capacitated: np.ndarray
    lower: np.ndarray
    node_capacities: np.ndarray
    node_capacitated: np.ndarray

    @property
    def n(self) -> int:
        return len(self.node_ids)

    @property
    def m(self) -> int:
        return len(self.tails)

    @property
    def total_supply(self) -> int:
        return int(self.supplies[self.supplies > 0].sum())

    @property
    def has_node_capacities(self) -> bool:
        return bool(self.node_capacitated.any())

    @property
    def has_lower_bounds(self) -> bool:
        return bool((self.lower != 0).any())

    def describe(self) -> dict[str, Any]:
        """A short summary for tables and JSON."""
        return {
            "name": self.name,
            "nodes": self.n,
            "arcs": self.m,
            "total_supply": self.total_supply,
            "uncapacitated_arcs": int((~self.capacitated).sum()),
            "node_capacities": int(self.node_capacitated.sum()),
            "lower_bounds": int((self.lower != 0).sum()),
        }

    @classmethod
    def build(
        cls,
        *,
        name: str,
        node_ids: Sequence[Any] | np.ndarray,
        supplies: Sequence[Any] | np.ndarray,
        tails: Sequence[Any] | np.ndarray,
        heads: Sequence[Any] | np.ndarray,
        costs: Sequence[Any] | np.ndarray,
        capacities: Sequence[Any] | np.ndarray | None = None,
        lower: Sequence[Any] | np.ndarray | None = None,
        node_capacities: Sequence[Any] | np.ndarray | None = None,
        arc_field: FieldName = _arc_field,
        node_field: FieldName = _node_field,
        supplies_field: str = "supplies",
        arc_attr: Callable[[int, str], str] | None = None,
    ) -> FlowNetwork:
        """Check every rule and build the network. Node ids are the user's integers; arcs name
        them by id. ``capacities`` entries may be ``None`` (uncapacitated), as may
        ``node_capacities`` entries. ``arc_field``/``node_field`` say how errors name an arc
        or a node (``arcs[3]`` in JSON, ``line 37`` in a DIMACS file)."""
        attr = arc_attr or (lambda k, a: f"{arc_field(k)}.{a}")
        ids, _ = _as_int_array(node_ids, "node id", node_field, bound=2**62)
        n = len(ids)
        if n == 0:
            raise InstanceError("nodes", "the network has no nodes")
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
        if len(dup):
            first, second = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
            raise InstanceError(node_field(second), f"node id {int(ids[second])} appears twice "
                                f"({node_field(first)} and {node_field(second)})")

        if len(supplies) != n:
            raise InstanceError(supplies_field, f"{len(supplies)} supplies for {n} nodes; give "
                                "one integer per node (positive = supply, negative = demand)")
        sup, _ = _as_int_array(supplies, "supply", lambda i: f"{supplies_field}[{i}]")
        total = int(sup.sum())
        if total != 0:
            pos, neg = int(sup[sup > 0].sum()), int(-sup[sup < 0].sum())
            raise InstanceError(
                supplies_field,
                f"unbalanced: total supply {pos} ≠ total demand {neg} (supplies sum to "
                f"{total}); supplies must sum to 0 (positive = supply, negative = demand)",
            )

        m = len(tails)
        for what, seq in (("heads", heads), ("costs", costs)):
            if len(seq) != m:
                raise InstanceError("arcs", f"{len(seq)} {what} for {m} arcs")
        t_ids, _ = _as_int_array(tails, "tail", lambda k: attr(k, "tail"), bound=2**62)
        h_ids, _ = _as_int_array(heads, "head", lambda k: attr(k, "head"), bound=2**62)
        t = _lookup(sorted_ids, order, t_ids, lambda k: attr(k, "tail"))
        h = _lookup(sorted_ids, order, h_ids, lambda k: attr(k, "head"))
        loops = np.flatnonzero(t == h)
        if len(loops):
            k = int(loops[0])
            raise InstanceError(arc_field(k), f"self-loop on node {int(t_ids[k])}: an arc from a "
                                "node to itself moves no flow; remove it")
        c, _ = _as_int_array(costs, "cost", lambda k: attr(k, "cost"), bound=MAX_ABS_COST)

        cap, capped, low = _arc_bounds(capacities, lower, m, attr)
        ncap, ncapped = _node_capacities(node_capacities, n)

        net = cls(name=name, node_ids=ids, supplies=sup, tails=t, heads=h, costs=c,
                  capacities=np.where(capped, cap, 0), capacitated=capped, lower=low,
                  node_capacities=np.where(ncapped, ncap, 0), node_capacitated=ncapped)
        _check_magnitudes(net)
        return net

    def core(self) -> CoreNetwork:
        """The plain network the solvers see (computed once per network)."""
        cached = self.__dict__.get("_core")
        if cached is None:
            cached = CoreNetwork.from_network(self)
            object.__setattr__(self, "_core", cached)
        return cached


def _arc_bounds(capacities: Sequence[Any] | np.ndarray | None,
               lower: Sequence[Any] | np.ndarray | None, m: int,
               attr: Callable[[int, str], str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(capacities, capacitated mask, lower bounds) of ``m`` arcs: capacities ≥ 0 where given,
    0 ≤ lower ≤ capacity."""
    if capacities is None:
        cap = np.zeros(m, dtype=np.int64)
        capped = np.zeros(m, dtype=bool)
    else:
        if len(capacities) != m:
            raise InstanceError("arcs", f"{len(capacities)} capacities for {m} arcs")
        cap, capped = _as_int_array(capacities, "capacity", lambda k: attr(k, "capacity"),
                                    allow_none=True)
        neg = np.flatnonzero(capped & (cap < 0))
        if len(neg):
            k = int(neg[0])
            raise InstanceError(attr(k, "capacity"), f"negative capacity {int(cap[k])}; "
                                "capacities are ≥ 0 (leave it out for an uncapacitated arc)")
    if lower is None:
        low = np.zeros(m, dtype=np.int64)
    else:
        if len(lower) != m:
            raise InstanceError("arcs", f"{len(lower)} lower bounds for {m} arcs")
        low, _ = _as_int_array(lower, "lower bound", lambda k: attr(k, "lower"))
        bad = np.flatnonzero(low < 0)
        if len(bad):
            k = int(bad[0])
            raise InstanceError(attr(k, "lower"), f"negative lower bound {int(low[k])}")
        over = np.flatnonzero(capped & (low > cap))
        if len(over):
            k = int(over[0])
            raise InstanceError(attr(k, "lower"), f"lower bound {int(low[k])} is above the "
                                f"capacity {int(cap[k])}")
    return cap, capped, low


def _node_capacities(node_capacities: Sequence[Any] | np.ndarray | None, n: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(node capacities, capacitated mask) of ``n`` nodes, each ≥ 0 where given."""
    if node_capacities is None:
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    if len(node_capacities) != n:
        raise InstanceError("node_capacities", f"{len(node_capacities)} node capacities "
                            f"for {n} nodes; give one per node (null = none)")
    ncap, ncapped = _as_int_array(node_capacities, "node capacity",
                                  lambda i: f"node_capacities[{i}]", allow_none=True)
    neg = np.flatnonzero(ncapped & (ncap < 0))
    if len(neg):
        i = int(neg[0])
        raise InstanceError(f"node_capacities[{i}]", f"negative node capacity "
                            f"{int(ncap[i])}")
    return ncap, ncapped


def _lookup(sorted_ids: np.ndarray, order: np.ndarray, query: np.ndarray,
            item_field: FieldName) -> np.ndarray:
    """Map node ids to 0-based indices; an unknown id names its arc."""
    pos = np.searchsorted(sorted_ids, query)
    pos_c = np.minimum(pos, len(sorted_ids) - 1)
    missing = np.flatnonzero(sorted_ids[pos_c] != query)
    if len(missing):
        k = int(missing[0])
        raise InstanceError(item_field(k), f"unknown node id {int(query[k])}; it is not in the "
                            "network's node list")
    return order[pos_c].astype(np.int64)


def _check_magnitudes(net: FlowNetwork) -> None:
    """Costs × flows must fit int64 (OR-Tools and the exact checker rely on it)."""
    bound = uncapacitated_bound(net.supplies, net.capacities[net.capacitated],
                                net.node_capacities[net.node_capacitated], net.lower)
    cmax = int(np.abs(net.costs).max()) if net.m else 0
    if (bound >= INT64_SAFE or cmax * bound >= INT64_SAFE
            or cmax * (net.n + 2) * 2 >= INT64_SAFE):
        raise InstanceError("arcs", f"costs up to {cmax} times flows up to {bound} could exceed "
                            "64-bit integers; scale the costs or the amounts down")


def uncapacitated_bound(supplies: np.ndarray, capacities: np.ndarray,
                        node_capacities: np.ndarray, lower: np.ndarray) -> int:
    """A flow bound that an optimal flow respects on every uncapacitated arc.

    If no cycle of uncapacitated arcs has negative cost, some optimal flow decomposes into
    supply-to-demand paths (total ``Σ b⁺`` plus what lower bounds shift) and negative cycles,
    each through a capacitated arc, so no arc carries more than this sum.
    """
    return (exact_sum(supplies[supplies > 0]) + exact_sum(capacities)
            + exact_sum(node_capacities) + exact_sum(lower) + 1)


def exact_sum(a: np.ndarray) -> int:
    """Σ a as an exact Python int: numpy's int64 sum wraps silently (9.3M arcs of capacity
    10¹² once summed to a negative bound and a feasible network was reported infeasible)."""
    if len(a) == 0:
        return 0
    if float(np.abs(a).astype(np.float64).sum()) < INT64_SAFE:
        return int(a.astype(np.int64).sum())
    return int(sum(int(v) for v in a))


# -- the core network the solvers see -------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class CoreNetwork:
    """``min c·x, out − in = b, 0 ≤ x ≤ u`` on 0-based nodes, every capacity finite.

    The first ``m_orig`` arcs are the user's arcs (same order); then one arc per capacitated
    node, from its in-half to its out-half. Uncapacitated arcs get ``uncap_bound`` as capacity
    (valid once ``check_bounded`` passes) and stay marked in ``capacitated``.
    """

    n: int
    tails: np.ndarray
    heads: np.ndarray
    costs: np.ndarray
    caps: np.ndarray
    capacitated: np.ndarray
    supplies: np.ndarray
    m_orig: int
    lower: np.ndarray
    cost_offset: int
    #: Original node index of every core node (both halves of a split node map to it).
    origin: np.ndarray
    #: Original node index of every split arc (arcs m_orig…).
    split_nodes: np.ndarray
    uncap_bound: int

    @property
    def m(self) -> int:
        return len(self.tails)

    @classmethod
    def from_network(cls, net: FlowNetwork) -> CoreNetwork:
        n, m = net.n, net.m
        split = np.flatnonzero(net.node_capacitated)
        out_half = np.arange(n, dtype=np.int64)
        out_half[split] = n + np.arange(len(split), dtype=np.int64)
        tails = out_half[net.tails]  # arcs leave a split node from its out-half …
        heads = net.heads.copy()  # … and enter its in-half (the original index)
        supplies = np.zeros(n + len(split), dtype=np.int64)
        supplies[:n] = net.supplies
        # A split node's demand sits on its out-half, its supply on its in-half, so the split
        # arc carries max(in, out): the node's throughput.
        demand_split = split[net.supplies[split] < 0]
        supplies[out_half[demand_split]] = net.supplies[demand_split]
        supplies[demand_split] = 0
        # Lower bounds: x = lower + x', so the tail supplies `lower` less and the head more.
        np.subtract.at(supplies, tails, net.lower)
        np.add.at(supplies, heads, net.lower)
        bound = uncapacitated_bound(net.supplies, net.capacities[net.capacitated],
                                    net.node_capacities[split], net.lower)
        caps = np.where(net.capacitated, net.capacities - net.lower, bound)
        all_tails = np.concatenate([tails, split.astype(np.int64)])
        all_heads = np.concatenate([heads, out_half[split]])
        origin = np.concatenate([np.arange(n, dtype=np.int64), split.astype(np.int64)])
        return cls(
            n=n + len(split), tails=all_tails, heads=all_heads,
            costs=np.concatenate([net.costs, np.zeros(len(split), dtype=np.int64)]),
            caps=np.concatenate([caps, net.node_capacities[split]]).astype(np.int64),
            capacitated=np.concatenate([net.capacitated, np.ones(len(split), dtype=bool)]),
            supplies=supplies, m_orig=m, lower=net.lower.copy(),
            cost_offset=exact_dot(net.costs, net.lower), origin=origin,
            split_nodes=split.astype(np.int64), uncap_bound=bound,
        )

    def original_flow(self, core_flow: np.ndarray) -> np.ndarray:
        """The user's arc flows from a core flow."""
        return np.asarray(core_flow[: self.m_orig], dtype=np.int64) + self.lower

    def from_original(self, flow: np.ndarray) -> np.ndarray:
        """A core flow from the user's arc flows (split arcs carry the node throughput)."""
        x = np.zeros(self.m, dtype=np.int64)
        x[: self.m_orig] = np.asarray(flow, dtype=np.int64) - self.lower
        if self.m > self.m_orig:
            # Balance at each out-half: split flow = out-flow − supply of the out-half.
            bal = node_balance(self.n, self.tails, self.heads, x)
            out_halves = self.heads[self.m_orig:]
            x[self.m_orig:] = bal[out_halves] - self.supplies[out_halves]
        return x

    def cost(self, core_flow: np.ndarray) -> int:
        """Exact cost of a core flow in the user's terms (lower-bound flow included)."""
        return exact_dot(self.costs, np.asarray(core_flow, dtype=np.int64)) + self.cost_offset
