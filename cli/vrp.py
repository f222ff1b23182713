"""``cosolve solve`` and ``cosolve compare`` on a VROOM document: a .json whose object has a
``vehicles`` key. The answer is VROOM's output document (with cosolve's check and a reason
for every unassigned task), written with ``--out`` and printed under ``--json``; ``--geojson``
writes the routes as a FeatureCollection.

The commands in ``cli.main`` hand such a file here before reading it as a TSP or CVRP
instance; options of those problems that a VROOM document does not take (a fleet cap, a
reference, drawings) are refused naming the option.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from cli.common import (
    EXIT_INTERRUPTED,
    EXIT_SOLVER_FAILED,
    check_budget,
    check_not_the_input,
    check_parent_folder,
    ctrl_c_before_solving,
    fail,
    first_ctrl_c_cancels,
    json_failures,
    jsonable,
    stdout_console,
)
from jobs.batches import BatchSolvers
from jobs.vrp import (
    REFUSALS,
    VrpComparison,
    compare_vrp,
    is_vroom_document,
    parse,
    read_document,
    summary_cost,
    unassigned_count,
    vroom_file,
)
from solvers.catalog import all_specs
from solvers.contract import Budget
from solvers.errors import CosolveError, InstanceError
from solvers.routing.io.formats import read_file_bytes
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.output import to_geojson
from solvers.routing.vrp.solve import VRP_SOLVERS, VrpResult, check_supported, solve_vrp

F = TypeVar("F", bound=Callable[..., Any])


def vroom_documents(handler: Callable[..., bool]) -> Callable[[F], F]:
    """A command decorator: ``handler`` takes the command's options first and answers a VROOM
    document (True), else the command runs as written (its TSP and CVRP files)."""
    def decorate(command: F) -> F:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            if handler(**kwargs):
                return None
            return command(*args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate


def is_vroom_path(path: Path) -> bool:
    """A .json (or .json.gz) file whose top-level object has ``vehicles``. Unreadable or
    other files are left to the instance reader, which names their fault."""
    name = path.name.lower()
    if not (name.endswith(".json") or name.endswith(".json.gz")) or not path.is_file():
        return False
    try:
        doc = read_document(read_file_bytes(path), path.name)
    except (InstanceError, OSError):
        return False
    return is_vroom_document(doc)


#: The options of `solve` and `compare` for TSP and CVRP files that mean nothing for a VROOM
#: document, by parameter name.
SOLVE_ONLY = {"reference": "--reference", "reference_file": "--reference-file", "svg": "--svg",
              "max_solutions": "--max-solutions", "max_vehicles": "--max-vehicles",
              "show_routes": "--routes"}
COMPARE_ONLY = {"reference": "--reference", "reference_file": "--reference-file",
                "svg": "--svg", "plot": "--plot", "max_vehicles": "--max-vehicles"}


def _refuse_options(given: dict[str, Any], options: dict[str, str]) -> None:
    """Options set that a VROOM document does not take: exit 2 naming the first."""
    for name, option in options.items():
        if given.get(name) not in (None, False):
            fail(f"{option}: not taken with a VROOM document (its vehicles, their capacities "
                 "and the plan are in the document)")


def _load(file: Path) -> VrpProblem:
    try:
        return parse(read_document(read_file_bytes(file), file.name))
    except InstanceError as exc:
        fail(f"{file}: {exc.field}: {exc.message}")
    except OSError as exc:
        fail(f"FILE: cannot read {file}: {exc.strerror or exc}")


def _check_solver(name: str, option: str = "--solver") -> None:
    if name not in VRP_SOLVERS:
        fail(f"{option}: unknown solver {name!r}; the solvers of VROOM documents: "
             f"{', '.join(VRP_SOLVERS)} (`cosolve solvers`)")


def _check_file_option(path: Path | None, option: str, file: Path) -> None:
    if path is None:
        return
    if path.is_dir():
        fail(f"{option}: {path} is a folder; name a file")
    if path.suffix.lower() not in (".json", ".geojson"):
        fail(f"{option}: the answer is written as JSON; name the file *.json"
             + (" or *.geojson" if option == "--geojson" else ""))
    check_parent_folder(option, path)
    check_not_the_input(path, file, option)


def _write(path: Path, doc: Any, option: str) -> None:
    try:
        path.write_text(json.dumps(jsonable(doc), indent=2))
    except OSError as exc:
        fail(f"{option}: cannot write {path}: {exc.strerror or exc}")


def _summary_line(result: VrpResult) -> str:
    summary = result.output.get("summary", {})
    check = result.check
    unassigned = unassigned_count(result)
    reasons = sorted({str(u.get("reason")) for u in result.output.get("unassigned", [])})
    return (f"{result.solver}: cost {summary.get('cost')}, {summary.get('routes', 0)} routes, "
            f"{unassigned} unassigned" + (f" ({', '.join(reasons)})" if unassigned else "")
            + f", duration {summary.get('duration')} s, waiting {summary.get('waiting_time')} s"
            f", feasible={check.feasible}, {result.elapsed_s:.2f} s")


def solved_document(*, file: Path, solver: str, time_limit: float, seed: int, device: str,
                    out: Path | None, geojson: Path | None, as_json: bool, **other: Any) -> bool:
    """``cosolve solve problem.json``: one solver, VROOM's output document; False (nothing
    done) when ``file`` is not a VROOM document, which ``--geojson`` needs. ``other`` holds
    the command's other options: those a document does not take must be unset."""
    if not is_vroom_path(file):
        if geojson is not None:
            fail("--geojson: written for VROOM documents (a .json with vehicles); use --svg "
                 "to draw a TSP or CVRP solution")
        return False
    with json_failures(as_json, file=str(file), solver=solver, time_limit=time_limit,
                       seed=seed, solution=None), ctrl_c_before_solving():
        budget = check_budget(time_limit, seed, device)
        _refuse_options(other, SOLVE_ONLY)
        _check_solver(solver)
        _check_file_option(out, "--out", file)
        _check_file_option(geojson, "--geojson", file)
        problem = _load(file)
        if geojson is not None and problem.locations is None:
            fail("--geojson: the routes are drawn from coordinates, and this document gives "
                 "only matrices")
    with first_ctrl_c_cancels() as cancel, json_failures(
            as_json, file=str(file), solver=solver, time_limit=budget.time_limit,
            seed=budget.seed, solution=None):
        try:
            result = solve_vrp(problem, solver, Budget(time_limit=budget.time_limit,
                                                      seed=budget.seed, cancel=cancel),
                               seed=budget.seed)
        except CosolveError as exc:
            if isinstance(exc, InstanceError):
                fail(f"{file}: {exc.field}: {exc.message}")
            fail(f"solver {solver!r}: {exc}", exc.exit_code)
    document = result.output
    if out is not None:
        _write(out, document, "--out")
    if geojson is not None:
        _write(geojson, to_geojson(problem, result.plan, result.check, result.reasons),
               "--geojson")
    if as_json:
        typer.echo(json.dumps(jsonable(document), indent=2))
    else:
        stdout_console().print(_summary_line(result), markup=False, highlight=False,
                               soft_wrap=True)
        if out is not None:
            stdout_console().print(f"written: {out}", markup=False, highlight=False)
    if cancel.is_set():
        fail("interrupted (Ctrl-C): the answer above is the best found so far",
             EXIT_INTERRUPTED)
    if not result.check.feasible:
        fail(f"solver {solver!r} returned an infeasible plan: "
             + "; ".join(result.check.violations), EXIT_SOLVER_FAILED)
    return True


def _row(row: Any) -> dict[str, Any]:
    result = row.result
    return {"solver": row.solver,
            "cost": summary_cost(result) if result else None,
            "unassigned": unassigned_count(result) if result else None,
            "feasible": row.feasible,
            "violations": list(result.check.violations) if result else [],
            "wall_time": row.elapsed, "error": row.error,
            "progress": row.progress,
            "solution": result.output if result else None}


def _table(comparison: VrpComparison) -> str:
    lines = [f"{'solver':<10} {'cost':>12} {'unassigned':>10} {'feasible':>8} {'time (s)':>8}"]
    for row in comparison.rows:
        result = row.result
        cost = summary_cost(result) if result else None
        lines.append(f"{row.solver:<10} {'–' if cost is None else cost:>12} "
                     f"{'–' if result is None else unassigned_count(result):>10} "
                     f"{'yes' if row.feasible else 'no':>8} {row.elapsed:>8.2f}"
                     + (f"  {row.error}" if row.error else ""))
    lines.append(f"best: {comparison.best_solver or 'none'}")
    return "\n".join(lines)


def compared_document(*, file: Path, solvers: str | None, time_limit: float, seed: int,
                      device: str, as_json: bool, **other: Any) -> bool:
    """``cosolve compare problem.json``: several solvers at equal time; False (nothing done)
    when ``file`` is not a VROOM document. ``other`` as for ``solved_document``."""
    if not is_vroom_path(file):
        return False
    with json_failures(as_json, file=str(file), time_limit=time_limit, seed=seed,
                       best_solver=None, rows=[]), ctrl_c_before_solving():
        budget = check_budget(time_limit, seed, device)
        _refuse_options(other, COMPARE_ONLY)
        names = ([n.strip() for n in solvers.split(",") if n.strip()] if solvers
                 else list(VRP_SOLVERS))
        if len(set(names)) != len(names):
            fail(f"--solvers: a solver is named twice in {solvers!r}")
        for name in names:
            _check_solver(name, "--solvers")
        problem = _load(file)
    with first_ctrl_c_cancels() as cancel:
        comparison = compare_vrp(problem, names, Budget(time_limit=budget.time_limit,
                                                        seed=budget.seed, cancel=cancel))
    document = {"file": str(file), "time_limit": budget.time_limit, "seed": budget.seed,
                "tasks": problem.task_count, "vehicles": len(problem.vehicles),
                "best_solver": comparison.best_solver, "interrupted": cancel.is_set(),
                "rows": [_row(r) for r in comparison.rows]}
    refusal = comparison.refusal
    if as_json:
        extra = {"error": comparison.refusal_message()} if refusal is not None else {}
        typer.echo(json.dumps(jsonable({**document, **extra}), indent=2))
    else:
        stdout_console().print(_table(comparison), markup=False, highlight=False,
                               soft_wrap=True)
    if cancel.is_set():
        fail("interrupted (Ctrl-C)", EXIT_INTERRUPTED)
    if refusal is not None:
        typer.echo(f"error: {comparison.refusal_message()}", err=True)
        raise typer.Exit(refusal.exit_code if isinstance(refusal, REFUSALS) else 1)
    if comparison.best_solver is None:
        typer.echo("error: no solver produced a feasible plan", err=True)
        raise typer.Exit(EXIT_SOLVER_FAILED)
    return True


GEOJSON_OPTION = typer.Option(
    "--geojson", help="VROOM documents: also write the routes as GeoJSON (a FeatureCollection: "
    "a LineString per route, a Point per task with its arrival and load) to this file.")


def list_vrp_solvers(as_json: bool) -> None:
    """``cosolve solvers --problem vrp``: the solvers of VROOM documents and the parts of the
    model each takes (the neural solvers keep to TSP, CVRP and CVRPTW)."""
    rows = [{"name": name, "vrp_features": sorted(entry.features),
             "description": entry.description} for name, entry in VRP_SOLVERS.items()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        stdout_console().print(f"{row['name']:<10} {', '.join(row['vrp_features'])}",
                               markup=False, highlight=False, soft_wrap=True)


# -- `cosolve batch` -------------------------------------------------------------------------
def vrp_only(name: str) -> bool:
    """A solver of VROOM documents that solves no TSP or CVRP file (vroom)."""
    return name in VRP_SOLVERS and name not in {spec.name for spec in all_specs()}


def batch_document(filename: str, data: bytes, solvers: BatchSolvers,
                   max_vehicles: int | None, max_solutions: int | None
                   ) -> tuple[str | None, int | None, str | None] | None:
    """A batch's file that holds a VROOM document: (its solver, its task count, None), or
    with the reason it is rejected last; None for any other file (read as TSP or CVRP)."""
    doc = vroom_file(filename, data)
    if doc is None:
        return None
    solver = solvers.default
    if solver is None:
        return None, None, ("a VROOM document takes one solver for the whole batch "
                            f"(--solver NAME), not one per problem kind ({solvers.text})")
    if solver not in VRP_SOLVERS:
        return solver, None, (f"solver {solver!r} takes no VROOM documents; those that do: "
                              f"{', '.join(VRP_SOLVERS)}")
    if max_vehicles is not None or max_solutions is not None:
        option = "--max-vehicles" if max_vehicles is not None else "--max-solutions"
        return solver, None, f"{option} is not taken by a VROOM document"
    try:
        problem = parse(doc)
        check_supported(problem, solver)
    except InstanceError as exc:
        return solver, None, f"{exc.field}: {exc.message}"
    except CosolveError as exc:
        return solver, problem.task_count, str(exc)
    return solver, problem.task_count, None
