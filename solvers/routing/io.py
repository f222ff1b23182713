"""Reading and writing routing files: TSPLIB .tsp, CVRPLIB .vrp (plain or .gz), our JSON form,
and solutions as TSPLIB .tour, CVRPLIB .sol or JSON.

Instances are parsed by ``vrplib``; we only decide what a parsed file means (problem type,
distance convention) and reject what we cannot honour with a clear error rather than a wrong
cost. Edge weights are never expanded to a matrix for coordinate files, so 100K-node files
load in about a second.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import vrplib
from vrplib.parse import parse_vrplib

from solvers.errors import InstanceError, UnsupportedFormatError
from solvers.routing.problem import (
    COORD_CONVENTIONS,
    CVRPInstance,
    Instance,
    Solution,
    TSPInstance,
)

SUPPORTED_EDGE_WEIGHT_TYPES = ("EUC_2D", "CEIL_2D", "ATT", "EXPLICIT")
SUPPORTED_EXPLICIT_FORMATS = ("FULL_MATRIX", "LOWER_ROW")
#: Refuse to decompress more than this (a guard against gzip bombs).
DEFAULT_MAX_TEXT_BYTES = 512 * 1024 * 1024


# -- text --------------------------------------------------------------------------------
def _strip_gz(name: str) -> tuple[str, bool]:
    lower = name.lower()
    if lower.endswith(".gz"):
        return name[:-3], True
    return name, False


def decode_bytes(data: bytes, filename: str, max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> str:
    """Bytes of a (possibly gzipped) text file as text, with a clear error when corrupt."""
    _, gz = _strip_gz(filename)
    if gz or data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                raw = fh.read(max_bytes + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise InstanceError("file", f"{filename} is not a readable gzip file ({exc})") from None
        if len(raw) > max_bytes:
            raise InstanceError("file", f"{filename} decompresses to more than {max_bytes} bytes")
        data = raw
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        try:
            return data.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes any byte
            raise InstanceError("file", f"{filename} is not a text file") from None


def instance_format(filename: str) -> str:
    """'tsplib' for .tsp/.vrp, 'json' for .json (optionally .gz); else a clear error."""
    base, _ = _strip_gz(filename)
    ext = Path(base).suffix.lower()
    if ext in (".tsp", ".vrp"):
        return "tsplib"
    if ext == ".json":
        return "json"
    raise UnsupportedFormatError(
        "file",
        f"cannot tell the format of {filename!r}: use .tsp (TSPLIB), .vrp (CVRPLIB) or .json, "
        "optionally gzipped (.gz)",
    )


# -- reading -----------------------------------------------------------------------------
def load_instance(path: str | Path, max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> Instance:
    """Read a .tsp, .vrp or .json instance file (plain or .gz)."""
    path = Path(path)
    return parse_instance_bytes(path.read_bytes(), path.name, max_bytes=max_bytes)


def parse_instance_bytes(
    data: bytes, filename: str, max_bytes: int = DEFAULT_MAX_TEXT_BYTES
) -> Instance:
    """Parse an uploaded or read file by its name's extension."""
    fmt = instance_format(filename)
    text = decode_bytes(data, filename, max_bytes=max_bytes)
    if fmt == "json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InstanceError("file", f"{filename} is not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise InstanceError("file", "a JSON instance must be an object")
        return instance_from_dict(obj, default_name=Path(_strip_gz(filename)[0]).stem)
    return parse_tsplib_text(text, default_name=Path(_strip_gz(filename)[0]).stem)


def _header(text: str) -> dict[str, str]:
    """The ``KEY : value`` lines before the first section, so that what we cannot honour is
    refused with a clear message before vrplib sees the data."""
    head: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if s.upper().endswith("_SECTION") or s.upper() == "EOF":
            break
        key, sep, value = s.partition(":")
        if sep:
            head[key.strip().upper()] = value.strip()
    return head


def _check_supported(head: dict[str, str]) -> None:
    ewt = head.get("EDGE_WEIGHT_TYPE", "").upper()
    if not ewt:
        raise InstanceError("file", "not a TSPLIB/CVRPLIB file: no EDGE_WEIGHT_TYPE line")
    if ewt not in SUPPORTED_EDGE_WEIGHT_TYPES:
        raise UnsupportedFormatError(
            "EDGE_WEIGHT_TYPE",
            f"EDGE_WEIGHT_TYPE {ewt} is not supported; supported: "
            f"{', '.join(SUPPORTED_EDGE_WEIGHT_TYPES)}",
        )
    fmt = head.get("EDGE_WEIGHT_FORMAT", "").upper()
    if ewt == "EXPLICIT" and fmt not in SUPPORTED_EXPLICIT_FORMATS:
        raise UnsupportedFormatError(
            "EDGE_WEIGHT_FORMAT",
            f"EDGE_WEIGHT_FORMAT {fmt or '(missing)'} is not supported; supported: "
            f"{', '.join(SUPPORTED_EXPLICIT_FORMATS)}",
        )


def parse_tsplib_text(text: str, default_name: str = "instance") -> Instance:
    """Interpret a TSPLIB/CVRPLIB text parsed by vrplib as a TSP or CVRP instance."""
    _check_supported(_header(text))
    try:
        data = parse_vrplib(text, compute_edge_weights=False)
    except Exception as exc:  # vrplib raises bare ValueError/IndexError on malformed text
        raise InstanceError("file", f"could not parse the file: {exc}") from None
    return _from_vrplib(data, default_name)


def _from_vrplib(data: dict[str, Any], default_name: str) -> Instance:
    name = str(data.get("name") or default_name)
    problem_type = str(data.get("type", "")).upper().split()[0] if data.get("type") else ""
    ewt = str(data.get("edge_weight_type", "")).upper()
    coords = data.get("node_coord")
    matrix = None
    if ewt == "EXPLICIT":
        # vrplib expands explicit weights (FULL_MATRIX, LOWER_ROW) even without compute.
        matrix = data.get("edge_weight")
        if matrix is None or np.ndim(matrix) != 2:
            raise InstanceError("EDGE_WEIGHT_SECTION", "could not read the explicit matrix")
        distance = None
    else:
        if coords is None:
            raise InstanceError("NODE_COORD_SECTION", f"{ewt} needs a NODE_COORD_SECTION")
        distance = ewt
    dim = data.get("dimension")
    n = len(coords) if coords is not None else len(matrix) if matrix is not None else None
    if dim is not None and n is not None and int(dim) != n:
        raise InstanceError("DIMENSION", f"DIMENSION is {dim} but the file lists {n} nodes")

    common = dict(name=name, coords=coords, distance_matrix=matrix, distance=distance)
    if problem_type in ("TSP", "ATSP") or (problem_type == "" and "demand" not in data):
        return TSPInstance(**common)
    if problem_type == "CVRP":
        depots = np.asarray(data.get("depot", [0])).ravel()
        if depots.size != 1:
            raise UnsupportedFormatError(
                "DEPOT_SECTION", f"exactly one depot is supported, the file lists {depots.size}"
            )
        if "demand" not in data:
            raise InstanceError("DEMAND_SECTION", "a CVRP file needs a DEMAND_SECTION")
        if "capacity" not in data:
            raise InstanceError("CAPACITY", "a CVRP file needs a CAPACITY")
        vehicles = data.get("vehicles")
        return CVRPInstance(
            demands=data["demand"],
            capacity=data["capacity"],
            depot=int(depots[0]),
            max_vehicles=int(vehicles) if vehicles is not None else None,
            **common,
        )
    raise UnsupportedFormatError(
        "TYPE", f"TYPE {problem_type or '(missing)'} is not supported; supported: TSP, CVRP"
    )


def instance_from_dict(obj: dict[str, Any], default_name: str = "instance") -> Instance:
    """Our JSON form: ``{"problem": "tsp"|"cvrp", "coords" | "distance_matrix", ...}``."""
    obj = dict(obj)
    problem = str(obj.pop("problem", "")).lower()
    known = {"name", "coords", "distance_matrix", "distance", "ids"}
    if problem == "cvrp":
        known |= {"demands", "capacity", "depot", "max_vehicles"}
    elif problem != "tsp":
        raise InstanceError("problem", "must be 'tsp' or 'cvrp'")
    unknown = sorted(set(obj) - known)
    if unknown:
        raise InstanceError(unknown[0], f"unknown field for a {problem.upper()} instance")
    common = dict(
        name=str(obj.get("name") or default_name),
        coords=obj.get("coords"),
        distance_matrix=obj.get("distance_matrix"),
        distance=obj.get("distance"),
        node_ids=obj.get("ids"),
    )
    if problem == "tsp":
        return TSPInstance(**common)
    for required in ("demands", "capacity"):
        if obj.get(required) is None:
            raise InstanceError(required, "is required for a CVRP instance")
    return CVRPInstance(
        demands=obj["demands"],
        capacity=obj["capacity"],
        depot=obj.get("depot", 0),
        max_vehicles=obj.get("max_vehicles"),
        **common,
    )


def instance_to_dict(instance: Instance) -> dict[str, Any]:
    """The JSON form of an instance (inverse of ``instance_from_dict``)."""
    out: dict[str, Any] = {"problem": instance.problem, "name": instance.name}
    if instance.matrix is not None:
        out["distance_matrix"] = instance.matrix.tolist()
        if instance.coords is not None:
            out["coords"] = instance.coords.tolist()
    else:
        assert instance.coords is not None
        out["coords"] = instance.coords.tolist()
        out["distance"] = instance.distance
    if instance.node_ids is not None:
        out["ids"] = instance.node_ids.tolist()
    if isinstance(instance, CVRPInstance):
        out.update(
            demands=instance.demands.tolist(),
            capacity=instance.capacity,
            depot=instance.depot,
            max_vehicles=instance.max_vehicles,
        )
    return out


# -- solutions ---------------------------------------------------------------------------
def _fmt_cost(cost: float) -> str:
    if math.isfinite(cost) and float(cost).is_integer():
        return str(int(cost))
    return f"{cost:.6f}"


def solution_to_dict(solution: Solution, instance: Instance | None = None) -> dict[str, Any]:
    out = {
        "problem": solution.problem,
        "instance": solution.instance_name,
        "solver": solution.solver,
        "cost": solution.cost,
        "distance": solution.distance,
        "feasible": solution.feasible,
        "violations": solution.violations,
        "wall_time": solution.wall_time,
        "routes": solution.routes,
        "stats": solution.stats,
    }
    if instance is not None and instance.node_ids is not None:
        out["route_ids"] = [instance.node_ids[r].tolist() for r in solution.routes]
    return out


def tour_text(solution: Solution, instance: Instance) -> str:
    """A TSPLIB TOUR file: node numbers from 1 (or the instance's own ids), ended by -1."""
    tour = np.asarray(solution.tour, dtype=np.int64)
    labels = instance.node_ids[tour] if instance.node_ids is not None else tour + 1
    return tour_text_for(instance.name, labels.tolist(), solution.cost, solution.distance,
                         solution.solver)


def tour_text_for(name: str, labels: list[int], cost: float, distance: str, solver: str) -> str:
    """The TOUR file of a tour already given as file labels (1-based numbers or ids)."""
    lines = [
        f"NAME : {name}.tour",
        f"COMMENT : cost {_fmt_cost(cost)} ({distance}) by {solver}",
        "TYPE : TOUR",
        f"DIMENSION : {len(labels)}",
        "TOUR_SECTION",
        *(str(int(v)) for v in labels),
        "-1",
        "EOF",
    ]
    return "\n".join(lines) + "\n"


def sol_text(solution: Solution) -> str:
    """A CVRPLIB .sol file: ``Route #k: ...`` with 0-based node indices (depot omitted)."""
    return sol_text_for(solution.routes, solution.cost)


def sol_text_for(routes: list[list[int]], cost: float) -> str:
    """The .sol text of routes given as 0-based indices (empty routes dropped)."""
    import tempfile

    nonempty = [r for r in routes if r]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "out.sol"
        vrplib.write_solution(p, nonempty, {"Cost": _fmt_cost(cost)})
        return p.read_text()


def write_solution_file(path: str | Path, solution: Solution, instance: Instance) -> None:
    """Write by extension: .tour (TSP), .sol (CVRP) or .json."""
    path = Path(path)
    ext = path.suffix.lower()
    if ext == ".json":
        path.write_text(json.dumps(solution_to_dict(solution, instance), indent=2))
    elif ext == ".tour":
        if solution.problem != "tsp":
            raise ValueError(".tour files hold TSP tours; write a CVRP solution as .sol or .json")
        path.write_text(tour_text(solution, instance))
    elif ext == ".sol":
        path.write_text(sol_text(solution))
    else:
        raise ValueError(f"unknown solution extension {ext!r}: use .tour, .sol or .json")


def read_tour(path: str | Path) -> list[int]:
    """A TSPLIB TOUR_SECTION as 0-based indices (for reference tours such as .opt.tour)."""
    text = decode_bytes(Path(path).read_bytes(), Path(path).name)
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


def read_sol(path: str | Path) -> tuple[list[list[int]], float | None]:
    """A CVRPLIB .sol file (plain or .gz) as routes of 0-based indices and its stated cost."""
    text = decode_bytes(Path(path).read_bytes(), Path(path).name)
    parsed = vrplib.parse.parse_solution(text)
    routes = [[int(v) for v in r] for r in parsed["routes"]]
    cost = parsed.get("cost")
    return routes, float(cost) if cost is not None else None


__all__ = [
    "COORD_CONVENTIONS",
    "instance_format",
    "instance_from_dict",
    "instance_to_dict",
    "load_instance",
    "parse_instance_bytes",
    "read_sol",
    "read_tour",
    "sol_text",
    "solution_to_dict",
    "tour_text",
    "write_solution_file",
]
