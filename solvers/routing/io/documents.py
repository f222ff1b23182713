"""Routing instances and solutions as JSON documents: strict parsing (huge integers
named by their path), conversion both ways, and the solution document the API returns."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np

from solvers.errors import InstanceError
from solvers.routing.details import solution_details
from solvers.routing.problem import (
    CVRPInstance,
    CVRPTWInstance,
    Instance,
    TSPInstance,
)
from solvers.routing.solution import Solution


class _LongInt:
    """An integer literal too long for ``int()`` (Python refuses more than
    ``sys.get_int_max_str_digits()`` digits), kept only to say where it is."""

    __slots__ = ("digits",)

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))


def _long_int_path(obj: Any) -> tuple[str, int] | None:
    """Where the first ``_LongInt`` of a parsed document is (``coords[3][0]``; ``""`` for the
    document itself) and its digits; iterative, as the document may be deep."""
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _LongInt):
            return path, value.digits
        if isinstance(value, dict):
            items = [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
        else:
            continue
        stack.extend(reversed(items))
    return None


def load_json(text: str | bytes, filename: str, field: str = "file") -> Any:
    """``json.loads`` whose every failure is an ``InstanceError``: invalid JSON and nesting
    too deep to read (a RecursionError) name ``field``; an integer with too many digits to
    read (a ValueError) names its place in the document (``coords[3][0]``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InstanceError(field, f"{filename} is not valid JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise InstanceError(field, f"{filename} is not UTF-8 text: {exc}") from None
    except RecursionError:
        raise InstanceError(field, f"{filename} nests arrays or objects too deeply to "
                            "read") from None
    except ValueError as exc:  # an integer longer than Python reads
        error = exc
    limit = sys.get_int_max_str_digits()

    def parse_int(digits: str) -> int | _LongInt:
        return _LongInt(digits) if limit and len(digits.lstrip("-")) > limit else int(digits)

    try:
        found = _long_int_path(json.loads(text, parse_int=parse_int))
    except ValueError:
        found = None
    if found is None:
        raise InstanceError(field, f"{filename} cannot be read: {error}")
    path, digits = found
    raise InstanceError(path or field, f"an integer with {digits} digits; numbers may have at "
                        f"most {limit} digits")


def _row_words(exc: InstanceError) -> str:
    """``time_windows[3]: …`` as the file's node 4 (TSPLIB ids count from 1)."""
    rest = exc.field.partition("[")[2]
    index = rest.rstrip("]")
    return f"node {int(index) + 1}: {exc.message}" if index.isdigit() else exc.message


#: Longest instance name a file may carry, as the API's JSON bodies (``name``, 256).
MAX_NAME_LENGTH = 256


def _name(raw: Any, default: str) -> str:
    """The file's own ``name`` (capped), else ``default`` (from the upload's file name, which
    the job store already shortens; a long file name is not the user's mistake)."""
    if not raw:
        return default
    name = str(raw)
    if len(name) > MAX_NAME_LENGTH:
        raise InstanceError("name", f"at most {MAX_NAME_LENGTH} characters, got {len(name)}")
    return name


def instance_from_dict(obj: dict[str, Any], default_name: str = "instance") -> Instance:
    """Our JSON form: ``{"problem": "tsp"|"cvrp"|"cvrptw", "coords" | "distance_matrix", ...}``;
    a CVRPTW adds ``time_windows`` ([earliest, latest] per node) and ``service_times`` (per
    node, or one number for every customer). Without ``problem``: CVRPTW if there are time
    windows, CVRP if there are demands or a capacity, else TSP."""
    obj = dict(obj)
    if "problem" not in obj:
        # a file holding just the instance (as the API's bodies do, where the URL names the
        # problem): its fields say which one
        obj["problem"] = ("cvrptw" if "time_windows" in obj else
                          "cvrp" if "demands" in obj or "capacity" in obj else "tsp")
    problem = str(obj.pop("problem", "")).lower()
    known = {"name", "coords", "distance_matrix", "distance", "ids"}
    if problem in ("cvrp", "cvrptw"):
        known |= {"demands", "capacity", "depot", "max_vehicles"}
    if problem == "cvrptw":
        known |= {"time_windows", "service_times"}
    elif problem not in ("tsp", "cvrp"):
        raise InstanceError("problem", "must be 'tsp', 'cvrp' or 'cvrptw'")
    unknown = sorted(set(obj) - known)
    if unknown:
        raise InstanceError(unknown[0], f"unknown field for a {problem.upper()} instance")
    common = dict(
        name=_name(obj.get("name"), default_name),
        coords=obj.get("coords"),
        distance_matrix=obj.get("distance_matrix"),
        distance=obj.get("distance"),
        node_ids=obj.get("ids"),
    )
    if problem == "tsp":
        return TSPInstance(**common)
    required_fields = ("demands", "capacity") + (("time_windows",) if problem == "cvrptw" else ())
    for required in required_fields:
        if obj.get(required) is None:
            raise InstanceError(required, f"is required for a {problem.upper()} instance")
    if problem == "cvrptw":
        return CVRPTWInstance(
            demands=obj["demands"],
            capacity=obj["capacity"],
            depot=obj.get("depot", 0),
            max_vehicles=obj.get("max_vehicles"),
            time_windows=obj["time_windows"],
            service_times=obj.get("service_times"),
            **common,
        )
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
    if isinstance(instance, CVRPTWInstance):
        out.update(
            time_windows=instance.time_windows.tolist(),
            service_times=instance.service_times.tolist(),
        )
    return out


# -- solutions ---------------------------------------------------------------------------
def _fmt_cost(cost: float) -> str:
    if math.isfinite(cost) and float(cost).is_integer():
        return str(int(cost))
    return f"{cost:.6f}"


def check_solution_nodes(solution: Solution, instance: Instance) -> None:
    """Refuse a solution that is not one of ``instance`` (another problem, or a node index
    outside 0..n−1), with an InstanceError naming ``routes[i]`` (an 8-node tour was
    written against a 5-node instance; an index past the ids raised a bare IndexError)."""
    if solution.problem != instance.problem:
        raise InstanceError("solution", f"a {solution.problem.upper()} solution is not one of "
                            f"this {instance.problem.upper()} instance ({instance.name!r})")
    for i, route in enumerate(solution.routes):
        for v in route:
            if (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                    or not 0 <= v < instance.n):
                raise InstanceError(f"routes[{i}]", f"node {v!r} is not a node index of "
                                    f"{instance.name!r} (0..{instance.n - 1})")


def _finite_json(obj: Any) -> Any:
    """``obj`` with NaN and infinities as None (JSON has no NaN: ``json.dumps`` wrote a bare
    NaN, which no JSON reader takes) and numpy scalars as Python numbers."""
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_json(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def solution_to_dict(solution: Solution, instance: Instance | None = None) -> dict[str, Any]:
    """The JSON form of a solution; with ``instance``, also ``route_details``, ``summary``
    and ``units`` (``solvers.routing.details``), and ``route_ids`` when it has ids. Raises
    InstanceError (``routes[i]``) when a route names a node ``instance`` does not have. The
    cost stays a float (NaN for a hand-built infeasible one); ``write_solution_file`` writes
    it as null."""
    if instance is not None and instance.node_ids is not None:
        check_solution_nodes(solution, instance)
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
    if solution.auto is not None:  # which solver `auto` picked, and the measured reason
        out["auto"] = solution.auto
    if solution.problem == "tsp":  # the tour itself, as the API and the CLI print it
        out["tour"] = solution.routes[0] if solution.routes else []
    if instance is not None and instance.node_ids is not None:
        out["route_ids"] = [instance.node_ids[r].tolist() for r in solution.routes]
    if instance is not None and solution.problem == instance.problem:
        # per route load, distance, duration (and stop times), a summary and the units,
        # recomputed from the instance, never the solver's own figures
        out.update(solution_details(instance, solution.routes) or {})
    return out
