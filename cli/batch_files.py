"""The files `cosolve batch` keeps in OUT: each file's solution (``<stem>.tour`` or
``<stem>.sol``, then ``<stem>.json``), written so that an interrupted run never leaves half a
file, and the rules by which a rerun takes a saved solution as done (same settings, same
input, routes that still pass the independent check).
"""

from __future__ import annotations

import json
import math
import os
import uuid
from contextlib import suppress
from pathlib import Path
from typing import Any

from cli.common import with_fleet
from jobs.batches import sol_text, tour_text
from jobs.vrp import VRP_PROBLEM
from solvers.routing.check import check_solution
from solvers.routing.io.documents import instance_to_dict
from solvers.routing.io.formats import parse_instance_bytes


def atomic_write(path: Path, text: str) -> None:
    """Temp file + rename, so an interrupted run never leaves half a solution behind."""
    # a short name of its own: ".<name>.<pid>.tmp" passed the file system's 255 bytes for a
    # long file name whose outputs themselves fit
    tmp = path.with_name(f".cosolve-{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with suppress(FileNotFoundError):
            tmp.unlink()


def read_done(out: Path, stem: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The solution a previous run left in ``OUT/<stem>.json``, if it is complete, feasible
    and was solved with the same ``settings`` (solver, time limit, seed: another run's answer
    must not be reported under this run's settings); anything else is solved again."""
    path = out / f"{stem}.json"
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(payload, dict) or payload.get("feasible") is not True:
        return None
    if payload.get("partial") or not payload.get("routes"):
        return None
    if payload.get("batch") != settings:
        return None
    return payload


def solution_file(stem: str, problem: str, payload: dict[str, Any]) -> tuple[str, str]:
    """(name, text) of the solution file for a saved payload: ``<stem>.tour`` for a TSP,
    ``<stem>.sol`` (CVRPLIB) for CVRP and CVRPTW."""
    cost = payload.get("cost")
    cost = float("nan") if cost is None else float(cost)
    if problem == "tsp":
        return f"{stem}.tour", tour_text(payload, cost)
    return f"{stem}.sol", sol_text(payload, cost)


def write_outputs(out: Path, stem: str, problem: str, payload: dict[str, Any]) -> list[str]:
    """Write ``<stem>.tour`` (TSP) or ``<stem>.sol`` (CVRP), then ``<stem>.json``.

    The JSON goes last because its presence is what marks the file done for a re-run. An
    infeasible plan (e.g. OR-Tools' with customers dropped under a fleet cap) gets the JSON
    only, with its violations, and an earlier run's .tour/.sol of that file is removed: a
    .tour or .sol has no word for "infeasible" and would read as a solution (the HTTP
    download refuses it too).
    """
    if problem == VRP_PROBLEM:  # VROOM's output document is the whole answer
        atomic_write(out / f"{stem}.json", json.dumps(payload))
        return [f"{stem}.json"]
    solution_name, text = solution_file(stem, problem, payload)
    if payload.get("feasible") is False:
        (out / solution_name).unlink(missing_ok=True)
        atomic_write(out / f"{stem}.json", json.dumps(payload))
        return [f"{stem}.json"]
    atomic_write(out / solution_name, text)
    atomic_write(out / f"{stem}.json", json.dumps(payload))
    return [solution_name, f"{stem}.json"]


def recheck_done(data: bytes, filename: str, out: Path, stem: str,
                 payload: dict[str, Any], max_vehicles: int | None = None) -> bool:
    """A saved solution is reported again only after the independent checker passes its
    routes on the input as it is now and its cost is recomputed to the saved one (an edited
    ``<stem>.json`` is solved again). A missing or edited ``.tour``/``.sol`` is written again
    from the checked routes. True when all holds. ``max_vehicles``: the fleet cap the batch
    solves with, checked as well."""
    try:
        instance = with_fleet(parse_instance_bytes(data, filename), max_vehicles)
        routes = [[int(v) for v in r] for r in payload["routes"]]
        if payload.get("problem") != instance.problem or check_solution(instance, routes):
            return False
        cost = instance.cost(routes)
        if not math.isclose(cost, float(payload["cost"]), rel_tol=1e-9, abs_tol=1e-9):
            return False
        if not _labels_match(instance, routes, payload):
            return False
        name, text = solution_file(stem, instance.problem, payload)
        try:
            current = (out / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current != text:
            atomic_write(out / name, text)
    except Exception:  # whatever is wrong with what a previous run left, solve again
        return False
    return True


def _labels_match(instance: Any, routes: list[list[int]], payload: dict[str, Any]) -> bool:
    """Whether the saved fields the .tour/.sol is written from besides the routes (the route
    ids, the depot) are the instance's: an edited depot numbered a customer 0, CVRPLIB's
    depot, in a rewritten .sol reported as already solved."""
    ids = instance.node_ids
    expected = [ids[r].tolist() for r in routes] if ids is not None else None
    if payload.get("route_ids") != expected:
        return False
    return instance.problem == "tsp" or payload.get("depot", 0) == instance.depot


def batch_settings(solver: str, time_limit: float, seed: int,
                   input_sha256: str | None, max_vehicles: int | None = None,
                   max_solutions: int | None = None) -> dict[str, Any]:
    """What a solution in OUT was solved with, and from which input (written into
    ``<stem>.json`` as ``batch``): a rerun skips the file only when all of it still holds.
    ``max_vehicles`` and ``max_solutions`` are there only when given, so solutions from runs
    without them still count as done."""
    settings: dict[str, Any] = {"solver": solver, "time_limit": time_limit, "seed": seed,
                                "input_sha256": input_sha256}
    if max_vehicles is not None:
        settings["max_vehicles"] = max_vehicles
    if max_solutions is not None:
        settings["max_solutions"] = max_solutions
    return settings


def job_input(data: bytes, filename: str, max_vehicles: int | None) -> tuple[str, bytes]:
    """(file name, bytes) a job is stored with: the file itself, or with ``--max-vehicles``
    the capped instance as JSON named after the whole file (``X-n101-k25.vrp.json``), as the
    API stores an upload with a ``max_vehicles`` field."""
    if max_vehicles is None:
        return filename, data
    instance = with_fleet(parse_instance_bytes(data, filename), max_vehicles)
    name = filename[:-3] if filename.lower().endswith(".gz") else filename
    return f"{name}.json", json.dumps(instance_to_dict(instance)).encode()
