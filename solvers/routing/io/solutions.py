"""Solution files: TSPLIB .tour, CVRPLIB .sol and LKH-3 tours, written and read."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import vrplib

from solvers.errors import InstanceError, UnsupportedFormatError
from solvers.routing.io.documents import (
    _finite_json,
    _fmt_cost,
    check_solution_nodes,
    solution_to_dict,
)
from solvers.routing.io.formats import decode_bytes
from solvers.routing.problem import (
    Instance,
)
from solvers.routing.solution import Solution


def tour_text(solution: Solution, instance: Instance) -> str:
    """A TSPLIB TOUR file: node numbers from 1 (or the instance's own ids), ended by -1."""
    tour = np.asarray(solution.tour, dtype=np.int64)
    labels = instance.node_ids[tour] if instance.node_ids is not None else tour + 1
    return tour_text_for(instance.name, labels.tolist(), solution.cost, solution.distance,
                         solution.solver, indices=tour.tolist())


def tour_text_for(name: str, labels: list[int], cost: float, distance: str, solver: str,
                  indices: list[int] | None = None) -> str:
    """The TOUR file of a tour given as file labels (1-based numbers or ids). TSPLIB's
    TOUR_SECTION holds node numbers 1..n and ends at -1, so labels that are not such a
    permutation (a JSON instance's own ids: 0, negatives, -1 itself) are written as the
    1-based ``indices`` (0-based positions in the instance) and the comment says so."""
    name = " ".join(str(name).split())  # a line break in a name would start a new header
    note = ""
    if sorted(int(v) for v in labels) != list(range(1, len(labels) + 1)):
        if indices is None:
            raise ValueError("a TSPLIB tour needs node numbers 1..n; give the indices")
        labels = [int(v) + 1 for v in indices]
        note = "; nodes numbered 1..n in instance order (the instance's ids are not)"
    lines = [
        f"NAME : {name}.tour",
        f"COMMENT : cost {_fmt_cost(cost)} ({distance}) by {solver}{note}",
        "TYPE : TOUR",
        f"DIMENSION : {len(labels)}",
        "TOUR_SECTION",
        *(str(int(v)) for v in labels),
        "-1",
        "EOF",
    ]
    return "\n".join(lines) + "\n"


def sol_text(solution: Solution, depot: int = 0) -> str:
    """A CVRPLIB .sol file: ``Route #k: ...`` with customers numbered 1..n−1 (depot omitted)."""
    return sol_text_for(solution.routes, solution.cost, depot)


def sol_label(index: int, depot: int) -> int:
    """CVRPLIB's number of the node at 0-based ``index``: the depot is 0 and the customers
    are 1..n−1 in instance order (``index`` itself when the depot comes first, as in every
    CVRPLIB file); without it a customer at index 0 would read as the depot."""
    return index + 1 if index < depot else index


def sol_text_for(routes: list[list[int]], cost: float, depot: int = 0) -> str:
    """The .sol text of routes given as 0-based indices (empty routes dropped)."""
    import tempfile

    nonempty = [[sol_label(v, depot) for v in r] for r in routes if r]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "out.sol"
        vrplib.write_solution(p, nonempty, {"Cost": _fmt_cost(cost)})
        return p.read_text()


def write_solution_file(path: str | Path, solution: Solution, instance: Instance) -> None:
    """Write by extension: .tour (TSP), .sol (CVRP and CVRPTW) or .json.

    Raises (before anything is written) UnsupportedFormatError for another extension,
    InstanceError for a .tour of routes or a .sol of a TSP (CVRPLIB's numbering reads node 0
    as the depot), for a solution that is not one of ``instance`` (``check_solution_nodes``)
    and for a .tour or .sol of a solution without a finite cost (.json writes it as null) or
    of an infeasible one (.json keeps its violations);
    OSError when the file cannot be written."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext not in (".json", ".tour", ".sol"):
        # a CosolveError with its field, not a bare ValueError
        raise UnsupportedFormatError("path", f"cannot write a solution as {path.name!r} "
                                     f"(extension {ext or '(none)'!r}): use .tour, .sol or "
                                     ".json")
    # the file must hold a plan of this instance, checked before anything is written
    check_solution_nodes(solution, instance)
    if ext == ".tour" and solution.problem != "tsp":
        raise InstanceError("path", f"{path.name}: .tour files hold TSP tours; write a "
                            f"{solution.problem.upper()} solution as .sol or .json")
    if ext == ".sol" and solution.problem == "tsp":
        raise InstanceError("path", f"{path.name}: .sol files hold CVRP routes, where node 0 "
                            "is the depot; write a TSP tour as .tour or .json")
    if ext != ".json" and not math.isfinite(solution.cost):
        raise InstanceError("cost", f"{path.name}: the solution's cost is {solution.cost} "
                            f"(infeasible: {'; '.join(solution.violations) or 'no cost'}); "
                            f"{ext} files state a number, write it as .json")
    if ext != ".json" and not solution.feasible:
        # a .tour or .sol has no word for "infeasible": it would read as a solution
        raise InstanceError("path", f"{path.name}: the solution is infeasible "
                            f"({'; '.join(solution.violations[:3]) or 'no reason given'}); "
                            f"{ext} files would read as a solution, write it as .json")
    if ext == ".json":
        document = _finite_json(solution_to_dict(solution, instance))
        path.write_text(json.dumps(document, indent=2, allow_nan=False))
    elif ext == ".tour":
        path.write_text(tour_text(solution, instance))
    else:
        path.write_text(sol_text(solution, getattr(instance, "depot", 0)))


def read_tour(path: str | Path) -> list[int]:
    """A TSPLIB TOUR_SECTION as 0-based indices (for reference tours such as .opt.tour)."""
    return tour_from_text(decode_bytes(Path(path).read_bytes(), Path(path).name))


def tour_from_text(text: str) -> list[int]:
    """``read_tour`` on a file's text, for tours that arrive as bytes (a batch upload)."""
    nodes: list[int] = []
    in_section = False
    for line in text.splitlines():
        s = line.strip()
        if s.upper().startswith("TOUR_SECTION"):
            in_section = True
            continue
        if not in_section or not s:
            continue
        for tok in s.split():
            v = int(tok)
            if v == -1:
                return nodes
            nodes.append(v - 1)
    return nodes


def read_tour_routes(path: str | Path, dimension: int, depot: int = 0) -> list[list[int]]:
    """An LKH-3 vehicle-routing TOUR file as routes of 0-based customers (see
    ``vrp_tour_routes``)."""
    return vrp_tour_routes(read_tour(path), dimension, depot)


def vrp_tour_routes(tour: list[int], dimension: int, depot: int = 0) -> list[list[int]]:
    """An LKH-3 vehicle-routing tour (0-based, as ``tour_from_text`` reads it) as routes.

    LKH-3 solves a VRP with V vehicles as one tour over DIMENSION + V - 1 nodes: the depot
    (``depot + 1``) and its copies, numbered above ``dimension``, mark where routes begin, so
    every such node is a route break and empty routes (two breaks in a row) are dropped.
    """
    routes: list[list[int]] = []
    current: list[int] = []
    for node in tour:
        if node == depot or node >= dimension:
            if current:
                routes.append(current)
            current = []
        else:
            current.append(node)
    if current:
        routes.append(current)
    return routes


def read_sol(path: str | Path, depot: int = 0) -> tuple[list[list[int]], float | None]:
    """A CVRPLIB .sol file (plain or .gz) as routes of 0-based indices and its stated cost;
    ``depot``: the instance's depot index (customer numbers as ``sol_label`` writes them)."""
    return sol_from_text(decode_bytes(Path(path).read_bytes(), Path(path).name), depot)


def sol_from_text(text: str, depot: int = 0) -> tuple[list[list[int]], float | None]:
    """``read_sol`` on a file's text, for solutions that arrive as bytes (a batch upload)."""
    parsed = vrplib.parse.parse_solution(text)
    routes = [[int(v) - 1 if 0 < int(v) <= depot else int(v) for v in r]
              for r in parsed["routes"]]
    cost = parsed.get("cost")
    return routes, float(cost) if cost is not None else None
