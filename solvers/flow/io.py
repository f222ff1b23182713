"""Reading and writing min-cost-flow files: DIMACS ``.min`` and our JSON form (plain or .gz),
and solutions as DIMACS solution lines (``s COST``, ``f FROM TO FLOW``) or JSON.

DIMACS min-cost flow (the format of the NETGEN/LEMON benchmark files)::

    c comment
    p min NODES ARCS
    n ID SUPPLY            (nodes 1..NODES; positive = supply; omitted nodes have 0)
    a FROM TO LOW CAP COST

Errors in a DIMACS file name the line (``line 37``); errors in JSON name the field
(``arcs[3].capacity``). Lower bounds are supported (the solvers shift them out); DIMACS has no
node capacities, so networks with them are written as JSON only.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import numpy as np

from solvers.errors import InstanceError, InstanceTooLargeError, UnsupportedFormatError
from solvers.flow.problem import FlowNetwork
from solvers.flow.solution import FlowSolution
from solvers.routing.io.documents import load_json
from solvers.routing.io.formats import DEFAULT_MAX_TEXT_BYTES, decode_bytes, read_file_bytes

DIMACS_EXTENSIONS = (".min", ".dimacs", ".inp", ".net")
SOLUTION_EXTENSIONS = (".sol", ".txt", ".json")
#: The most nodes a network may declare (a DIMACS header costs a few bytes, its arrays do not;
#: the largest networks the solvers here finish in minutes have about a million nodes).
MAX_NODES = 10_000_000
#: Arcs any network may have (a caller such as the HTTP layer passes a lower limit).
MAX_ARCS = 200_000_000


# -- formats -----------------------------------------------------------------------------------
def network_format(filename: str) -> str:
    """'dimacs' or 'json' from the extension (optionally .gz), else a clear error."""
    base = filename[:-3] if filename.lower().endswith(".gz") else filename
    ext = Path(base).suffix.lower()
    if ext in DIMACS_EXTENSIONS:
        return "dimacs"
    if ext == ".json":
        return "json"
    other = ("; a routing instance goes to `cosolve solve` or POST /v1/routing/{problem}/solve"
             if ext in (".tsp", ".vrp", ".vrptw") else "")
    raise UnsupportedFormatError(
        "file", f"cannot tell the format of {filename!r}: use .min (DIMACS min-cost flow) or "
        f".json, optionally gzipped (.gz){other}")


def load_network(path: str | Path, max_bytes: int = DEFAULT_MAX_TEXT_BYTES,
                 max_nodes: int = MAX_NODES, max_arcs: int = MAX_ARCS) -> FlowNetwork:
    """Read a network file (.min/.json, optionally .gz)."""
    p = Path(path)
    return parse_network_bytes(read_file_bytes(p, max_bytes), p.name, max_bytes=max_bytes,
                               max_nodes=max_nodes, max_arcs=max_arcs)


def parse_network_bytes(data: bytes, filename: str,
                        max_bytes: int = DEFAULT_MAX_TEXT_BYTES,
                        max_nodes: int = MAX_NODES, max_arcs: int = MAX_ARCS) -> FlowNetwork:
    """A network from the bytes of an uploaded or read file; the extension says the format."""
    fmt = network_format(filename)
    text = decode_bytes(data, filename, max_bytes)
    name = _stem(filename)
    if fmt == "json":
        obj = load_json(text, filename)
        return network_from_dict(obj, default_name=name, max_nodes=max_nodes,
                                 max_arcs=max_arcs)
    return parse_dimacs(text, name=name, max_nodes=max_nodes, max_arcs=max_arcs)


def _check_arc_count(arcs: int, max_arcs: int, field: str) -> None:
    """Refuse more arcs than the caller's limit before they are read: a 58 KB gzipped DIMACS
    file held a million arcs (270 MB to parse), and the decompression cap allows 44 million."""
    if arcs > max_arcs:
        if max_arcs < MAX_ARCS:
            raise InstanceTooLargeError(
                f"{field}: the network has {arcs} arcs; the limit here is {max_arcs}",
                arcs, max_arcs, unit="arcs")
        raise InstanceError(field, f"{arcs} arcs; at most {MAX_ARCS} are supported")


def _check_node_count(nodes: int, max_nodes: int, field: str) -> None:
    """Refuse a node count above the caller's limit before any array is allocated for it (a
    43-byte file can declare 10^11 nodes)."""
    if nodes > max_nodes:
        if max_nodes < MAX_NODES:
            raise InstanceTooLargeError(
                f"{field}: the network has {nodes} nodes; the limit here is {max_nodes}",
                nodes, max_nodes)
        raise InstanceError(field, f"{nodes} nodes; at most {MAX_NODES} are supported")


def _stem(filename: str) -> str:
    name = Path(filename).name
    for suffix in (".gz", ".json", *DIMACS_EXTENSIONS):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or "network"


# -- JSON --------------------------------------------------------------------------------------
def network_from_dict(obj: Any, default_name: str = "network",
                      max_nodes: int = MAX_NODES, max_arcs: int = MAX_ARCS) -> FlowNetwork:
    """Our JSON form::

        {"name": "…", "nodes": [ids] or N (ids 1..N), "supplies": [one per node],
         "arcs": [{"tail": id, "head": id, "cost": c, "capacity": u?, "lower": l?}, …],
         "node_capacities": [one per node or null]?}
    """
    if not isinstance(obj, dict):
        raise InstanceError("network", "a network is a JSON object with nodes, supplies, arcs")
    known = {"name", "problem", "nodes", "supplies", "arcs", "node_capacities"}
    unknown = sorted(set(obj) - known)
    if unknown:
        raise InstanceError(unknown[0], f"unknown field; a network has {', '.join(sorted(known))}")
    problem = obj.get("problem")
    if problem not in (None, "mincostflow"):
        raise InstanceError("problem", f"expected 'mincostflow', got {problem!r}")
    name = obj.get("name") or default_name
    if not isinstance(name, str):
        raise InstanceError("name", "the name must be a string")
    for key in ("nodes", "supplies", "arcs"):
        if key not in obj:
            raise InstanceError(key, "missing")
    nodes = obj["nodes"]
    if isinstance(nodes, float) and nodes.is_integer():  # 3.0, as a JSON body takes it
        nodes = int(nodes)
    if isinstance(nodes, int) and not isinstance(nodes, bool):
        if nodes < 1:
            raise InstanceError("nodes", f"need at least one node, got {nodes}")
        _check_node_count(nodes, max_nodes, "nodes")
        node_ids: Any = np.arange(1, nodes + 1, dtype=np.int64)
    elif isinstance(nodes, list):
        _check_node_count(len(nodes), max_nodes, "nodes")
        node_ids = nodes
    else:
        raise InstanceError("nodes", "give a list of node ids or the number of nodes")
    supplies = obj["supplies"]
    if not isinstance(supplies, list):
        raise InstanceError("supplies", "give a list with one integer per node")
    arcs = obj["arcs"]
    if not isinstance(arcs, list):
        raise InstanceError("arcs", "give a list of {tail, head, cost, capacity?, lower?}")
    _check_arc_count(len(arcs), max_arcs, "arcs")
    tails: list[Any] = []
    heads: list[Any] = []
    costs: list[Any] = []
    caps: list[Any] = []
    lows: list[Any] = []
    arc_keys = {"tail", "head", "cost", "capacity", "lower"}
    for k, arc in enumerate(arcs):
        if not isinstance(arc, dict):
            raise InstanceError(f"arcs[{k}]", "each arc is an object {tail, head, cost, "
                                "capacity?, lower?}")
        extra = sorted(set(arc) - arc_keys)
        if extra:
            raise InstanceError(f"arcs[{k}].{extra[0]}", "unknown field; an arc has tail, head, "
                                "cost, capacity, lower")
        for key in ("tail", "head", "cost"):
            if key not in arc:
                raise InstanceError(f"arcs[{k}].{key}", "missing")
        tails.append(arc["tail"])
        heads.append(arc["head"])
        costs.append(arc["cost"])
        caps.append(arc.get("capacity"))
        lows.append(arc.get("lower", 0))
    node_caps = obj.get("node_capacities")
    if node_caps is not None and not isinstance(node_caps, list):
        raise InstanceError("node_capacities", "give a list with one capacity (or null) per node")
    return FlowNetwork.build(
        name=name, node_ids=node_ids, supplies=supplies, tails=tails, heads=heads, costs=costs,
        capacities=caps, lower=lows, node_capacities=node_caps,
    )


def network_to_dict(net: FlowNetwork) -> dict[str, Any]:
    """The JSON form of a network (round-trips through ``network_from_dict``)."""
    arcs = []
    for k in range(net.m):
        arc: dict[str, Any] = {"tail": int(net.node_ids[net.tails[k]]),
                               "head": int(net.node_ids[net.heads[k]]),
                               "cost": int(net.costs[k])}
        if net.capacitated[k]:
            arc["capacity"] = int(net.capacities[k])
        if net.lower[k]:
            arc["lower"] = int(net.lower[k])
        arcs.append(arc)
    out: dict[str, Any] = {"problem": "mincostflow", "name": net.name,
                           "nodes": net.node_ids.tolist(), "supplies": net.supplies.tolist(),
                           "arcs": arcs}
    if net.has_node_capacities:
        out["node_capacities"] = [int(c) if on else None
                                  for c, on in zip(net.node_capacities, net.node_capacitated,
                                                   strict=True)]
    return out


# -- DIMACS ------------------------------------------------------------------------------------
def parse_dimacs(text: str, name: str = "network", max_nodes: int = MAX_NODES,
                 max_arcs: int = MAX_ARCS) -> FlowNetwork:
    """A DIMACS min-cost-flow network; every error names its line."""
    n_nodes = n_arcs = None
    p_line = 0
    node_lines: dict[int, int] = {}
    supplies: np.ndarray | None = None
    arc_rows: list[str] = []
    arc_lines: list[int] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] == "c":
            continue
        kind = line[0]
        if kind == "a":
            if n_nodes is None:
                raise InstanceError(f"line {lineno}", "arc line before the 'p min' line")
            if len(arc_rows) == max_arcs:  # more arc lines than the 'p' line promised
                _check_arc_count(max_arcs + 1, max_arcs, f"line {lineno}")
            arc_rows.append(line[1:])
            arc_lines.append(lineno)
            continue
        parts = line.split()
        if kind == "p":
            if n_nodes is not None:
                raise InstanceError(f"line {lineno}", f"second 'p' line (the first is line "
                                    f"{p_line})")
            if len(parts) != 4:
                raise InstanceError(f"line {lineno}", "expected 'p min NODES ARCS'")
            if parts[1] != "min":
                raise UnsupportedFormatError(f"line {lineno}", f"this reads min-cost-flow files "
                                             f"('p min'); the file says 'p {parts[1]}'")
            n_nodes = _int_token(parts[2], lineno, "NODES")
            n_arcs = _int_token(parts[3], lineno, "ARCS")
            if n_nodes < 1 or n_arcs < 0:
                raise InstanceError(f"line {lineno}", f"need NODES ≥ 1 and ARCS ≥ 0, got "
                                    f"{n_nodes} and {n_arcs}")
            _check_node_count(n_nodes, max_nodes, f"line {lineno}")
            _check_arc_count(n_arcs, max_arcs, f"line {lineno}")
            p_line = lineno
            supplies = np.zeros(n_nodes, dtype=np.int64)
        elif kind == "n":
            if n_nodes is None or supplies is None:
                raise InstanceError(f"line {lineno}", "node line before the 'p min' line")
            if len(parts) != 3:
                raise InstanceError(f"line {lineno}", "expected 'n ID SUPPLY'")
            node = _int_token(parts[1], lineno, "ID")
            if not 1 <= node <= n_nodes:
                raise InstanceError(f"line {lineno}", f"node {node} is outside 1..{n_nodes}")
            if node in node_lines:
                raise InstanceError(f"line {lineno}", f"node {node} already has a supply (line "
                                    f"{node_lines[node]})")
            node_lines[node] = lineno
            supplies[node - 1] = _bounded_int(parts[2], lineno, "SUPPLY")
        else:
            raise InstanceError(f"line {lineno}", f"unknown line type {kind!r}; DIMACS min-cost "
                                "flow has c, p, n and a lines")
    if n_nodes is None or supplies is None or n_arcs is None:
        raise InstanceError("file", "no 'p min NODES ARCS' line: not a DIMACS min-cost-flow file")
    if len(arc_rows) != n_arcs:
        raise InstanceError(f"line {p_line}", f"the 'p' line announces {n_arcs} arcs, the file "
                            f"has {len(arc_rows)}")
    table = _arc_table(arc_rows, arc_lines)
    low, cap = table[:, 2], table[:, 3]
    bad = np.flatnonzero((cap < low) & (cap >= 0) & (low >= 0))  # negatives: see build
    if len(bad):
        k = int(bad[0])
        raise InstanceError(f"line {arc_lines[k]}", f"capacity {int(cap[k])} is below the lower "
                            f"bound {int(low[k])}")
    lines = np.asarray(arc_lines)
    return FlowNetwork.build(
        name=name, node_ids=np.arange(1, n_nodes + 1, dtype=np.int64), supplies=supplies,
        tails=table[:, 0], heads=table[:, 1], costs=table[:, 4], capacities=cap, lower=low,
        arc_field=lambda k: f"line {int(lines[k])}",
        arc_attr=lambda k, a: f"line {int(lines[k])}",
        node_field=lambda i: f"node {i + 1}", supplies_field="supplies",
    )


def _int_token(token: str, lineno: int, what: str) -> int:
    try:
        return int(token)
    except ValueError:
        pass
    whole = _whole_number(token, lineno, what)
    if whole is None:
        raise InstanceError(f"line {lineno}", f"{what} must be an integer, got {token!r}")
    return whole


def _whole_number(token: str, lineno: int, what: str) -> int | None:
    """A whole number written as a decimal ("10.0", "1e3"), read exactly, as a JSON network
    takes 2.0, so both formats accept the same numbers; None for anything else (10.5, nan,
    x)."""
    try:
        value = Decimal(token)
    except InvalidOperation:
        return None
    if not value.is_finite() or value != value.to_integral_value():
        return None
    if value.copy_abs() >= 2**62:  # before int() expands 1e999999999
        raise InstanceError(f"line {lineno}", f"{what} {token} is out of range")
    return int(value)


def _bounded_int(token: str, lineno: int, what: str) -> int:
    """An integer that fits the int64 arithmetic of the solvers (a supply past it would crash
    the parse with numpy's OverflowError)."""
    value = _int_token(token, lineno, what)
    if abs(value) >= 2**62:
        raise InstanceError(f"line {lineno}", f"{what} {value} is out of range")
    return value


def _fields_per_row(joined: str) -> np.ndarray | None:
    """The number of fields on each row of ``joined`` (rows joined by "\\n"), counted on its
    bytes by numpy so that a 1M-arc file needs no Python loop; None when it is not ASCII."""
    if not joined.isascii():
        return None
    data = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
    # every ASCII space str.split() knows is ≤ 32; a control character that is not one makes
    # int() refuse its field, so the caller falls back to the exact loop anyway
    gap = data <= 32
    starts = ~gap  # a field starts where a non-space follows a space (or the text starts)
    starts[1:] &= gap[:-1]
    first = np.flatnonzero(starts)
    ends = np.flatnonzero(data == 10)  # the "\n" after each row but the last
    return np.diff(np.searchsorted(first, ends), prepend=0, append=len(first))


def _arc_table(rows: list[str], lines: list[int]) -> np.ndarray:
    """The a-lines as an (m, 5) int64 table; fast path for clean files, exact errors otherwise.

    The fast path converts all fields at once, so it first checks that every row has exactly
    five: a 4-field line followed by a 6-field one has the right total and would shift the
    columns silently (line 5's cost read as line 4's)."""
    if not rows:
        return np.zeros((0, 5), dtype=np.int64)
    joined = "\n".join(rows)
    counts = _fields_per_row(joined)
    if counts is not None and bool((counts == 5).all()):  # per row, not in total
        try:
            return np.array(joined.split(), dtype=np.int64).reshape(-1, 5)
        except (ValueError, OverflowError):
            pass  # a token int() refuses: the loop below names its line
    table = np.zeros((len(rows), 5), dtype=np.int64)
    for k, (row, lineno) in enumerate(zip(rows, lines, strict=True)):
        parts = row.split()
        if len(parts) != 5:
            raise InstanceError(f"line {lineno}", "expected 'a FROM TO LOW CAP COST' (5 numbers), "
                                f"got {len(parts)}")
        for j, (token, what) in enumerate(zip(parts, ("FROM", "TO", "LOW", "CAP", "COST"),
                                              strict=True)):
            table[k, j] = _bounded_int(token, lineno, what)
    return table


def dimacs_text(net: FlowNetwork) -> str:
    """The network as DIMACS text. Nodes are renumbered 1..N (a comment maps them back when the
    ids differ); uncapacitated arcs get the network's safe flow bound as capacity."""
    if net.has_node_capacities:
        raise InstanceError("node_capacities", "DIMACS has no node capacities; write this "
                            "network as JSON")
    out = [f"c {net.name}", "c written by cosolve", f"p min {net.n} {net.m}"]
    if not np.array_equal(net.node_ids, np.arange(1, net.n + 1)):
        out.extend(f"c node {i + 1} is id {int(v)}" for i, v in enumerate(net.node_ids))
    bound = net.core().uncap_bound
    out.extend(f"n {i + 1} {int(s)}" for i, s in enumerate(net.supplies) if s != 0)
    caps = np.where(net.capacitated, net.capacities, bound)
    out.extend(f"a {t + 1} {h + 1} {lo} {u} {c}" for t, h, lo, u, c in
               zip(net.tails.tolist(), net.heads.tolist(), net.lower.tolist(), caps.tolist(),
                   net.costs.tolist(), strict=True))
    return "\n".join(out) + "\n"


# -- solutions ---------------------------------------------------------------------------------
def solution_dimacs_text(solution: FlowSolution, net: FlowNetwork) -> str:
    """DIMACS solution lines: ``s COST`` then ``f FROM TO FLOW`` for every arc with flow, in arc
    order, node ids as in the network. An infeasible answer is a comment and ``s infeasible``."""
    out = [f"c network {net.name}", f"c solver {solution.solver}, status {solution.status}"]
    cert = solution.certificate
    if cert is not None:
        out.append(f"c dual bound {cert.dual_bound}, certified gap {cert.gap}")
    if solution.status == "infeasible" or solution.flow is None or solution.cost is None:
        if solution.cut is not None:
            out.append(f"c {solution.cut.message}")
        out.append("s infeasible")
        return "\n".join(out) + "\n"
    out.append(f"s {solution.cost}")
    flow = solution.flow
    ids = net.node_ids
    for k in np.flatnonzero(flow != 0):
        out.append(f"f {int(ids[net.tails[k]])} {int(ids[net.heads[k]])} {int(flow[k])}")
    return "\n".join(out) + "\n"


def parse_json_solution(text: str, net: FlowNetwork) -> tuple[int | None, np.ndarray]:
    """(the stated cost, per-arc flows) from a solution in the JSON that ``flow solve --out
    x.json`` and the API write: ``flow`` holds one integer per arc, in the network's order."""
    doc = load_json(text, "the solution", field="file")
    if not isinstance(doc, dict) or "flow" not in doc:
        raise InstanceError("file", "expected a JSON object with 'flow': one amount per arc "
                            "in the network's arc order (what `cosolve flow solve --out "
                            "x.json` writes)")
    flow = doc["flow"]
    if flow is None:
        raise InstanceError("flow", f"the solution holds no flow (status "
                            f"{doc.get('status', 'unknown')!r}); there is nothing to check")
    if not isinstance(flow, list) or len(flow) != net.m:
        got = f"{len(flow)} values" if isinstance(flow, list) else type(flow).__name__
        raise InstanceError("flow", f"expected a list of {net.m} amounts, one per arc of the "
                            f"network, got {got}; is it a solution of another network?")
    for i, x in enumerate(flow):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or (
                isinstance(x, float) and not x.is_integer()):
            raise InstanceError(f"flow[{i}]", f"expected an integer amount, got {x!r}")
        if abs(x) >= 2**62:  # as for capacities
            raise InstanceError(f"flow[{i}]", f"{x} is out of range")
    cost = doc.get("cost")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not (
            math.isfinite(cost) and float(cost).is_integer())):
        # a stated cost that is not a whole number cannot be checked: say so, do not drop it
        raise InstanceError("cost", f"expected the flow's integer cost (or null), got {cost!r}")
    claimed = None if cost is None else int(cost)
    return claimed, np.asarray([int(x) for x in flow], dtype=np.int64)


def parse_dimacs_solution(text: str, net: FlowNetwork) -> tuple[int | None, np.ndarray]:
    """(the ``s`` cost, per-arc flows) from DIMACS solution lines.

    ``f`` lines name arcs by their end nodes; flow on parallel arcs is spread over them
    cheapest first, up to each capacity, which is how an optimal flow would use them.
    """
    claimed: int | None = None
    per_pair: dict[tuple[int, int], int] = defaultdict(int)
    pair_lines: dict[tuple[int, int], int] = {}
    index = {int(v): i for i, v in enumerate(net.node_ids)}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        parts = raw.split()
        if not parts or parts[0] == "c":
            continue
        if parts[0] == "s" and len(parts) == 2:
            if parts[1] == "infeasible":
                raise InstanceError(f"line {lineno}", "the solution says the network is "
                                    "infeasible; there is no flow to read")
            claimed = _int_token(parts[1], lineno, "COST")
        elif parts[0] == "f" and len(parts) == 4:
            u, v, x = (_int_token(p, lineno, w) for p, w in zip(parts[1:], ("FROM", "TO", "FLOW"),
                                                                strict=True))
            if u not in index or v not in index:
                raise InstanceError(f"line {lineno}", f"unknown node {u if u not in index else v}")
            total = per_pair[(index[u], index[v])] + x
            if abs(total) >= 2**62:  # as for capacities; the flows of an arc are added up
                raise InstanceError(f"line {lineno}", f"FLOW {u}→{v} is out of range "
                                    f"({x} on this line)")
            per_pair[(index[u], index[v])] = total
            pair_lines.setdefault((index[u], index[v]), lineno)
        else:
            raise InstanceError(f"line {lineno}", "expected 's COST' or 'f FROM TO FLOW'")
    arcs_of: dict[tuple[int, int], list[int]] = defaultdict(list)
    for k, (t, h) in enumerate(zip(net.tails.tolist(), net.heads.tolist(), strict=True)):
        arcs_of[(t, h)].append(k)
    flow = np.zeros(net.m, dtype=np.int64)
    for pair, total in per_pair.items():
        ks = arcs_of.get(pair)
        if not ks:
            raise InstanceError(f"line {pair_lines[pair]}", f"no arc {int(net.node_ids[pair[0]])}"
                                f"→{int(net.node_ids[pair[1]])} in the network")
        if len(ks) == 1:
            flow[ks[0]] = total
            continue
        ks = sorted(ks, key=lambda k: int(net.costs[k]))
        left = total - sum(int(net.lower[k]) for k in ks)
        for k in ks:
            room = (int(net.capacities[k]) - int(net.lower[k])) if net.capacitated[k] else left
            take = max(0, min(room, left))
            flow[k] = int(net.lower[k]) + take
            left -= take
        flow[ks[0]] += left  # anything left over stays visible to the checker
    return claimed, flow


def solution_to_dict(solution: FlowSolution, net: FlowNetwork | None = None) -> dict[str, Any]:
    """The JSON form of a solution (flow aligned with the network's arcs)."""
    out: dict[str, Any] = {
        "network": solution.network_name,
        "solver": solution.solver,
        "status": solution.status,
        "feasible": solution.feasible,
        "cost": solution.cost,
        "violations": list(solution.violations),
        "wall_time": solution.wall_time,
        "flow": solution.flow.tolist() if solution.flow is not None else None,
        "certificate": solution.certificate.to_dict() if solution.certificate else None,
        "infeasibility": solution.cut.to_dict() if solution.cut else None,
        "stats": solution.stats,
    }
    if net is not None:
        out["nodes"], out["arcs"] = net.n, net.m
    return out


def jsonable(obj: Any) -> Any:
    """Plain JSON values: numpy scalars become Python numbers, NaN and ±inf become null."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_solution_file(path: str | Path, solution: FlowSolution, net: FlowNetwork) -> None:
    """``.json`` → JSON; anything else (``.sol``, ``.txt``) → DIMACS solution lines."""
    p = Path(path)
    if p.suffix.lower() == ".json":
        p.write_text(json.dumps(jsonable(solution_to_dict(solution, net)), indent=2) + "\n")
    else:
        p.write_text(solution_dimacs_text(solution, net))
