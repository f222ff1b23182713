"""Known solutions as references: the file names that count as one beside an instance,
and their cost, checked and recomputed in the instance's own convention."""

from __future__ import annotations

import zlib
from pathlib import Path

from solvers.errors import InstanceError
from solvers.routing.check import check_solution
from solvers.routing.io.formats import DEFAULT_MAX_TEXT_BYTES, _strip_gz, decode_bytes
from solvers.routing.io.solutions import sol_from_text, tour_from_text, vrp_tour_routes
from solvers.routing.problem import (
    Instance,
    TSPInstance,
)

#: What the known solution shipped beside ``NAME.vrp`` / ``NAME.tsp`` is called: CVRPLIB
#: (and PyVRP's instance collection) ships ``NAME.sol``, TSPLIB ``NAME.opt.tour``.
REFERENCE_SUFFIXES = (".sol", ".opt.tour", ".tour")


def reference_file_names(instance_name: str) -> list[str]:
    """The names a known solution of the instance file ``instance_name`` may have, first
    choice first: ``NAME.sol``, ``NAME.opt.tour``, ``NAME.tour``, each plain then ``.gz``
    (``X-n101-k25.vrp`` -> ``X-n101-k25.sol``, ``kroA100.tsp.gz`` -> ``kroA100.opt.tour``): a
    batch upload pairs its files by this rule, a folder by the same less the plain ``.tour``
    (``sibling_reference_file``)."""
    name, _ = _strip_gz(instance_name)
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return [stem + suffix + gz for suffix in REFERENCE_SUFFIXES for gz in ("", ".gz")]


def reference_stem(filename: str) -> str | None:
    """The instance stem a known solution's file name is for (``kroA100.opt.tour.gz`` ->
    ``kroA100``), or None when the name is not one of a known solution (``.sol``,
    ``.opt.tour``, ``.tour``, optionally ``.gz``; any case)."""
    name, _ = _strip_gz(filename)
    for suffix in REFERENCE_SUFFIXES:  # .opt.tour before .tour
        if name.lower().endswith(suffix):
            return name[: len(name) - len(suffix)]
    return None


def sibling_reference_file(instance_path: str | Path) -> Path | None:
    """The known solution beside an instance file, if there is one: ``NAME.sol`` or
    ``NAME.opt.tour`` (each plain or ``.gz``) for ``NAME.vrp``, ``NAME.tsp.gz`` and so on, so
    that gaps to it are reported without being asked for. A plain ``NAME.tour`` is not taken:
    it is what ``cosolve solve --out`` writes, not a known solution (name one with
    ``--reference-file``; an upload names its own)."""
    path = Path(instance_path)
    for name in reference_file_names(path.name):
        base = _strip_gz(name)[0]
        if base.endswith(".tour") and not base.endswith(".opt.tour"):
            continue
        candidate = path.with_name(name)
        try:
            if candidate != path and candidate.is_file():
                return candidate
        except OSError:  # a name too long to exist (a 250-character stem + .opt.tour)
            continue
    return None


def reference_cost(path: str | Path, instance: Instance) -> float:
    """The cost of the known solution in ``path`` (a CVRPLIB ``.sol`` or LKH-3's tour with the
    depot copied per vehicle for CVRP and CVRPTW, a TSPLIB tour for the TSP), recomputed in
    the instance's own convention after the independent check, so a reference is never a
    number taken on trust. An ``InstanceError`` naming ``reference_file`` says why a file
    cannot serve: unreadable, the wrong kind, or not a feasible solution of this instance (a
    fleet cap included)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InstanceError("reference_file", f"{path.name} cannot be read as a solution: "
                            f"{exc}") from None
    return reference_cost_bytes(data, path.name, instance)


def reference_cost_bytes(data: bytes, filename: str, instance: Instance,
                         max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> float:
    """``reference_cost`` on a file's bytes (plain or gzipped), named ``filename``: a known
    solution uploaded beside its instance is checked without being written anywhere."""
    name = _strip_gz(filename)[0].lower()
    try:
        if name.endswith(".tour"):
            tour = tour_from_text(decode_bytes(data, filename, max_bytes))
            # a CVRP's or CVRPTW's: LKH-3's one tour with the depot copied once per vehicle
            routes = ([tour] if isinstance(instance, TSPInstance) else
                      vrp_tour_routes(tour, instance.n, getattr(instance, "depot", 0)))
        elif name.endswith(".sol"):
            if isinstance(instance, TSPInstance):
                raise InstanceError("reference_file", f"{filename} holds CVRPLIB routes; a "
                                    "TSP reference is a TSPLIB .tour file")
            routes, _ = sol_from_text(decode_bytes(data, filename, max_bytes),
                                      getattr(instance, "depot", 0))
        else:
            raise InstanceError("reference_file", f"{filename}: a reference is a .sol "
                                "(CVRPLIB) or .tour (TSPLIB) file")
    except InstanceError as exc:
        if exc.field == "reference_file":
            raise
        # decode_bytes names "file" (a corrupt gzip, past max_bytes): the fault is this one's
        raise InstanceError("reference_file", exc.message) from None
    except (ValueError, KeyError, IndexError, UnicodeDecodeError, OSError,
            zlib.error, EOFError) as exc:
        raise InstanceError("reference_file", f"{filename} cannot be read as a solution: "
                            f"{exc}") from None
    problems = check_solution(instance, routes)
    if problems:
        raise InstanceError("reference_file", f"{filename} is not a feasible solution of "
                            f"{instance.name}: {'; '.join(problems[:3])}")
    return float(instance.cost(routes))
