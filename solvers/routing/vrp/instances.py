"""Readers that turn the routing literature's benchmark files into VROOM documents.

Solomon and Gehring-Homberger VRPTW (Solomon's text format), Li and Lim's pickup and delivery
with time windows, and Cordeau's multi-depot VRP are the sets VROOM itself is measured on
(CVRPLIB's Set X, a plain CVRP with coordinates, is the part the ``ils`` solver takes);
reading them into the same JSON documents users send lets every VRP solver be compared on them
through the one path users take (parse, solve, check).

VROOM works in integers, so Euclidean distances become an integer matrix of travel times at a
stated ``scale`` (units per unit of distance), and windows and service times are multiplied by
it. Two roundings: ``"dimacs"`` (scale 10, each arc truncated to one decimal,
``floor(10·d)``), the convention of the DIMACS 2021 VRPTW challenge and of the distance-only
best-known values in the data READMEs, so gaps to those are exact; and ``"nearest"`` (scale
100, rounded to the nearest), close to the unrounded double-precision distances of SINTEF's
tables and Cordeau's solutions. A document's cost (VROOM's default: the travel time) divided
by ``scale`` is the distance in the literature's units.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: The shared benchmark data next to the repository, as ``benchmarks.common.DATA`` (see its
#: README.md for sources and reference values).
DATA_DIR = Path(__file__).resolve().parents[3].parent / "shared" / "data"
SCALES = {"dimacs": 10, "nearest": 100}
#: Vehicle classes of the heterogeneous variant: (share of the capacity, fixed cost in units of
#: distance); the fleet is cycled through them, so each class has a third of the vehicles.
HETEROGENEOUS_CLASSES = ((0.5, 20.0), (1.0, 40.0), (1.5, 60.0))


@dataclass(frozen=True)
class BenchInstance:
    """A benchmark file as a VROOM document, with its reference values in distance units.

    ``bks`` is the hierarchical best known (fewest vehicles first, then distance: SINTEF's
    tables; for MDVRP, the best public value), ``bks_vehicles`` its route count, and
    ``bks_distance_only`` the distance-only best known under DIMACS rounding where the
    README lists one; None where there is none (the heterogeneous variant)."""

    name: str
    family: str
    document: dict[str, Any]
    scale: int
    rounding: str
    bks: float | None = None
    bks_vehicles: int | None = None
    bks_distance_only: float | None = None

    @property
    def tasks(self) -> int:
        return len(self.document.get("jobs", [])) + 2 * len(self.document.get("shipments", []))


def _matrix(xy: np.ndarray, rounding: str) -> list[list[int]]:
    """The integer travel-time matrix of planar points under ``rounding``."""
    d = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(axis=2))
    scaled = d * SCALES[rounding]
    # 1e-9: a distance such as 0.3 must not floor to 2 through binary representation
    m = np.floor(scaled + 1e-9) if rounding == "dimacs" else np.floor(scaled + 0.5)
    return m.astype(np.int64).tolist()


def _rows(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines() if line.strip()]


def read_solomon(path: Path | str, rounding: str = "dimacs") -> dict[str, Any]:
    """A Solomon or Gehring-Homberger text file as a VROOM document: K identical vehicles of
    capacity Q at the depot (location 0) within its horizon, one job per customer (its
    delivery, service time and window), and the travel-time matrix."""
    path = Path(path)
    rows = _rows(path)
    head = next(i for i, r in enumerate(rows) if r[0].upper() == "NUMBER")
    fleet, capacity = int(rows[head + 1][0]), int(rows[head + 1][1])
    first = next(i for i, r in enumerate(rows) if r[0].upper() == "CUST")
    table = np.array([[float(x) for x in r[:7]] for r in rows[first + 1:]], dtype=np.float64)
    s = SCALES[rounding]
    horizon = [int(table[0, 4]) * s, int(table[0, 5]) * s]
    vehicles = [{"id": k + 1, "start_index": 0, "end_index": 0, "capacity": [capacity],
                 "time_window": horizon} for k in range(fleet)]
    jobs = [{"id": int(r[0]), "location_index": i, "delivery": [int(r[3])],
             "service": int(r[6]) * s, "time_windows": [[int(r[4]) * s, int(r[5]) * s]]}
            for i, r in enumerate(table) if i > 0]
    return {"vehicles": vehicles, "jobs": jobs,
            "matrices": {"car": {"durations": _matrix(table[:, 1:3], rounding)}}}


def read_lilim(path: Path | str, rounding: str = "nearest") -> dict[str, Any]:
    """A Li and Lim PDPTW file as a VROOM document: one shipment per pickup-delivery pair
    (its amount, both steps' windows and service times), K vehicles of capacity Q at the
    depot within its horizon."""
    rows = _rows(Path(path))
    fleet, capacity = int(rows[0][0]), int(rows[0][1])
    table = np.array([[float(x) for x in r[:9]] for r in rows[1:]], dtype=np.float64)
    s = SCALES[rounding]
    horizon = [int(table[0, 4]) * s, int(table[0, 5]) * s]

    def step(i: int) -> dict[str, Any]:
        r = table[i]
        return {"id": int(r[0]), "location_index": i, "service": int(r[6]) * s,
                "time_windows": [[int(r[4]) * s, int(r[5]) * s]]}

    index = {int(r[0]): i for i, r in enumerate(table)}
    shipments = [{"amount": [int(r[3])], "pickup": step(i), "delivery": step(index[int(r[8])])}
                 for i, r in enumerate(table) if i > 0 and int(r[7]) == 0]
    vehicles = [{"id": k + 1, "start_index": 0, "end_index": 0, "capacity": [capacity],
                 "time_window": horizon} for k in range(fleet)]
    return {"vehicles": vehicles, "shipments": shipments,
            "matrices": {"car": {"durations": _matrix(table[:, 1:3], rounding)}}}


def read_cordeau(path: Path | str, rounding: str = "nearest") -> dict[str, Any]:
    """A Cordeau MDVRP file as a VROOM document: m vehicles at each depot (starting and
    ending there), the depot's capacity, a job per customer; a route-duration limit becomes
    VROOM's ``max_travel_time``, which counts travel only, so a file with both a limit and
    service times is refused (``ValueError``) rather than read into another problem."""
    rows = _rows(Path(path))
    kind, per_depot, n, depots = (int(x) for x in rows[0][:4])
    if kind != 2:
        raise ValueError(f"{path}: type {kind} is not a multi-depot VRP (type 2)")
    limits = [(int(float(r[0])), int(r[1])) for r in rows[1:1 + depots]]
    nodes = rows[1 + depots:1 + depots + n + depots]
    xy = np.array([[float(r[1]), float(r[2])] for r in nodes], dtype=np.float64)
    s = SCALES[rounding]
    jobs = []
    for i, r in enumerate(nodes[:n]):
        jobs.append({"id": int(r[0]), "location_index": i, "delivery": [int(r[4])],
                     "service": int(float(r[3])) * s})
    vehicles = []
    for d, (duration, capacity) in enumerate(limits):
        if duration > 0 and any(j["service"] for j in jobs):
            raise ValueError(f"{path}: a route-duration limit with service times is not "
                             "VROOM's max_travel_time (travel only)")
        for k in range(per_depot):
            v: dict[str, Any] = {"id": d * per_depot + k + 1, "start_index": n + d,
                                 "end_index": n + d, "capacity": [capacity]}
            if duration > 0:
                v["max_travel_time"] = duration * s
            vehicles.append(v)
    return {"vehicles": vehicles, "jobs": jobs,
            "matrices": {"car": {"durations": _matrix(xy, rounding)}}}


def read_cvrplib(path: Path | str) -> dict[str, Any]:
    """A CVRPLIB EUC_2D file (Uchoa et al.'s Set X) as a VROOM document: the travel-time
    matrix is the file's distance (Euclidean rounded to the nearest integer, the convention of
    its best-known costs), the coordinates go beside it (``location``), and the fleet is
    ⌈1.1·k⌉ + 2 vehicles for the k of the file's name (X files cap no fleet)."""
    path = Path(path)
    lines = path.read_text().splitlines()
    head: dict[str, str] = {}
    sections: dict[str, list[list[str]]] = {}
    current = None
    for line in lines:
        parts = line.split()
        if not parts or parts[0] == "EOF":
            continue
        if parts[0].endswith("_SECTION"):
            current = parts[0]
            sections[current] = []
        elif ":" in line and current is None:
            key, _, value = line.partition(":")
            head[key.strip()] = value.strip()
        elif current is not None:
            sections[current].append(parts)
    if head.get("EDGE_WEIGHT_TYPE") != "EUC_2D":
        raise ValueError(f"{path}: only EUC_2D files are read")
    xy = np.array([[float(r[1]), float(r[2])] for r in sections["NODE_COORD_SECTION"]])
    demand = [int(r[1]) for r in sections["DEMAND_SECTION"]]
    depot = int(sections["DEPOT_SECTION"][0][0]) - 1
    d = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(axis=2))
    k = int(re.search(r"-k(\d+)", path.stem).group(1))  # type: ignore[union-attr]
    where = [float(xy[depot, 0]), float(xy[depot, 1])]
    vehicles = [{"id": v + 1, "start_index": depot, "end_index": depot, "start": where,
                 "end": where, "capacity": [int(head["CAPACITY"])]}
                for v in range(math.ceil(1.1 * k) + 2)]
    jobs = [{"id": i + 1, "location_index": i, "location": [float(x), float(y)],
             "delivery": [demand[i]]} for i, (x, y) in enumerate(xy) if i != depot]
    return {"vehicles": vehicles, "jobs": jobs,
            "matrices": {"car": {"durations": np.floor(d + 0.5).astype(np.int64).tolist()}}}


def heterogeneous_variant(document: dict[str, Any], scale: int) -> dict[str, Any]:
    """A Solomon document with a mixed fleet: the vehicles cycle through
    ``HETEROGENEOUS_CLASSES`` (half, the same and one and a half times the capacity, with a
    fixed cost growing with size, in distance units times ``scale``), the travel time still
    the cost per unit; there is no published reference for it, so solvers are compared with
    each other."""
    out = json.loads(json.dumps(document))
    for k, v in enumerate(out["vehicles"]):
        share, fixed = HETEROGENEOUS_CLASSES[k % len(HETEROGENEOUS_CLASSES)]
        v["capacity"] = [max(1, round(c * share)) for c in v["capacity"]]
        v["costs"] = {"fixed": int(fixed * scale), "per_hour": 3600}
    return out


def readme_row(readme: Path, first_cell: str) -> dict[str, str]:
    """The row of the README's first table whose first cell is ``first_cell`` (its cells
    by column title); an empty dict when there is none."""
    header: list[str] | None = None
    for line in readme.read_text().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif cells and cells[0] == first_cell and len(cells) == len(header):
            return dict(zip(header, cells, strict=True))
    return {}


def _number(text: str | None) -> float | None:
    match = re.search(r"\d+(?:\.\d+)?", text or "")
    return float(match.group()) if match else None


def _distance_only(cell: str | None) -> float | None:
    """'10 / 827.3 (...)' -> 827.3: the cost after the route count."""
    match = re.match(r"\s*\d+\s*/\s*(\d+(?:\.\d+)?)", cell or "")
    return float(match.group(1)) if match else None


def _sintef_csv(path: Path, name: str) -> tuple[float | None, int | None]:
    with path.open() as f:
        for row in csv.DictReader(f):
            if row["instance"].lower() == name.lower():
                return float(row["distance"]), int(row["routes"])
    return None, None


def load(family: str, name: str, data_dir: Path | str = DATA_DIR) -> BenchInstance:
    """One benchmark instance by set and name, e.g. ``load("solomon", "C101")``,
    ``load("homberger", "r1_2_1")``, ``load("lilim", "lc101")``, ``load("mdvrp", "p01")``,
    ``load("solomon_hetero", "R101")``, ``load("cvrp_x", "X-n101-k25")``."""
    data = Path(data_dir)
    if family in ("solomon", "solomon_hetero"):
        folder = data / "solomon_txt"
        path = folder / f"{name.upper()}.txt"
        doc = read_solomon(path)
        scale = SCALES["dimacs"]
        if family == "solomon_hetero":
            return BenchInstance(name, family, heterogeneous_variant(doc, scale), scale,
                                 "dimacs")
        bks = json.loads((folder / "vroom-scripts_VRPTW_BKS.json").read_text())
        entry = bks.get(name.upper(), {})
        row = readme_row(folder / "README.md", path.name)
        return BenchInstance(name, family, doc, scale, "dimacs", entry.get("best_known_cost"),
                             entry.get("solved_with_vehicles"),
                             _distance_only(row.get(
                                 "distance-only BKS, DIMACS rounding (routes / cost)")))
    if family == "homberger":
        folder = data / "homberger"
        path = folder / f"{name.lower()}.txt"
        distance, routes = _sintef_csv(folder / "vrp-benchmarks_tables.csv", name)
        row = readme_row(folder / "README.md", path.name)
        return BenchInstance(name, family, read_solomon(path), SCALES["dimacs"], "dimacs",
                             distance, routes, _distance_only(row.get(
                                 "distance-only BKS, DIMACS rounding (routes / cost)")))
    if family == "lilim":
        folder = data / "lilim"
        distance, routes = _sintef_csv(folder / "vrp-benchmarks_tables.csv", name)
        return BenchInstance(name, family, read_lilim(folder / f"{name.lower()}.txt"),
                             SCALES["nearest"], "nearest", distance, routes)
    if family == "mdvrp":
        folder = data / "mdvrp"
        row = readme_row(folder / "README.md", f"{name} (+ {name}.res)")
        routes = re.search(r"\((\d+)\)", row.get("`.res` value (routes)", ""))
        return BenchInstance(name, family, read_cordeau(folder / name), SCALES["nearest"],
                             "nearest", _number(row.get("best public value")),
                             int(routes.group(1)) if routes else None)
    if family == "cvrp_x":
        path = data / "cvrplib" / "X" / f"{name}.vrp"
        cost = re.search(r"Cost\s+(\d+(?:\.\d+)?)", path.with_suffix(".sol").read_text())
        routes = path.with_suffix(".sol").read_text().count("Route #")
        return BenchInstance(name, family, read_cvrplib(path), 1, "EUC_2D",
                             float(cost.group(1)) if cost else None, routes)
    raise ValueError(f"unknown benchmark set {family!r}: solomon, solomon_hetero, homberger, "
                     "lilim, mdvrp or cvrp_x")


def gap(cost: float, reference: float | None) -> float | None:
    """Percent above ``reference`` (None without one)."""
    if reference is None or not math.isfinite(cost) or reference <= 0:
        return None
    return 100.0 * (cost - reference) / reference
