"""The ``cosolve`` command line: the HTTP API's twin on the same ``solvers/`` core.

Results go to stdout (a table, or JSON with ``--json``), progress and errors to stderr. Exit
codes: 0 success, 2 bad input (the message names the option, argument or file field at
fault), 1 a solver failure. User mistakes never print a traceback; set ``COSOLVE_DEBUG=1`` to
get one for unexpected solver errors.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib.metadata
import importlib.util
import json
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

try:  # typer 0.2x parses with its own copy of click
    from typer._click import Context
    from typer._click.exceptions import UsageError
except ImportError:  # older typer: click itself
    from click import Context, UsageError  # type: ignore[assignment]

import cli.vrp as vrp_cli
from cli import loaded
from cli.batch import batch, output_stem
from cli.common import (
    DEVICE_OPTION,
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_SOLVER_FAILED,
    check_budget,
    check_not_the_input,
    check_parent_folder,
    ctrl_c_before_solving,
    debugging,
    fail,
    first_ctrl_c_cancels,
    json_failures,
    jsonable,
    load_or_fail,
    make_folder,
    solver_names,
    stdout_console,
    with_fleet,
)
from cli.display import (
    SolveProgress,
    comparison_table,
    routes_table,
    solution_summary,
    solvers_table,
)
from cli.exposure import SLOW_CLIENTS_PROTOCOL, exposure_problem
from cli.flow import app as flow_app
from cli.schedule import app as schedule_app
from jobs.executors import ray_problem
from jobs.settings import Settings, settings_problem
from jobs.store import DataDirError, check_data_dir
from solvers.catalog import all_specs, get_solver, get_spec, specs_for, warm_up
from solvers.contract import Budget
from solvers.device import torch_device_name
from solvers.errors import (
    BudgetTooSmallError,
    CosolveError,
    InstanceError,
    NoSolutionError,
    ProblemMismatchError,
    SolverUnavailableError,
    UnknownSolverError,
)
from solvers.routing.auto import AUTO, Choice, choose, rule_for
from solvers.routing.io.documents import solution_to_dict
from solvers.routing.io.formats import load_instance
from solvers.routing.io.references import reference_cost, sibling_reference_file
from solvers.routing.io.solutions import write_solution_file
from solvers.routing.problem import Instance
from solvers.routing.render import comparison_plot_svg, solution_svg
from solvers.routing.solution import Solution
from solvers.routing.solve import REFUSALS, Comparison, ComparisonRow, gap_percent
from solvers.routing.solve import compare as compare_solvers
from solvers.routing.solve import solve as solve_instance
from solvers.tuning import check_tuning

SOLUTION_EXTENSIONS = (".tour", ".sol", ".json")
INSTANCE_ARGUMENT = typer.Argument(
    metavar="FILE", help="Instance: .tsp, .vrp, .vrptw or .json, optionally gzipped (.gz)."
)

class _CosolveGroup(TyperGroup):
    """Under ``--json`` a usage error (an unknown option, a bad or missing value) prints a
    JSON document with the error on stdout too, as every other refusal does, so a script
    reads each outcome from stdout. Click still prints
    the usage and the error on stderr and exits 2."""

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        ctx.meta[_JSON_USAGE_ERRORS] = "--json" in args  # shared by the subcommands' contexts
        with _usage_error_as_json(ctx):
            return super().parse_args(ctx, args)

    def invoke(self, ctx: Context) -> Any:
        with _usage_error_as_json(ctx):
            return super().invoke(ctx)


_JSON_USAGE_ERRORS = "cosolve.json_usage_errors"


@contextmanager
def _usage_error_as_json(ctx: Context) -> Iterator[None]:
    try:
        yield
    except UsageError as exc:
        if ctx.meta.pop(_JSON_USAGE_ERRORS, False):  # once, however deep the subcommand
            _print_json({"error": exc.format_message()})
        raise


app = typer.Typer(
    name="cosolve",
    cls=_CosolveGroup,
    help="Solve routing (TSP, CVRP, CVRPTW), min-cost flow and workflow scheduling problems "
    "with the registered solvers, as the HTTP service does.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click formatting: usage errors stay short lines instead of boxed panels.
    rich_markup_mode=None,
)


# -- shared helpers ----------------------------------------------------------------------






def _show_progress(as_json: bool) -> bool:
    return not as_json and sys.stderr.isatty()


def _print_json(obj: Any) -> None:
    typer.echo(json.dumps(jsonable(obj), indent=2))






def _check_reference(reference: float | None) -> None:
    if reference is not None and not (math.isfinite(reference) and reference > 0):
        fail(f"--reference: must be a positive cost, got {reference:g}")


ROUTES_OPTION = typer.Option(
    "--routes", help="Also print a table of the routes: stops, load / capacity, distance, "
    "duration (and waiting with time windows); --json always carries them.")


def _print_routes(plan: dict[str, Any], show: bool) -> None:
    """``--routes``: the per-route table under the summary (none for a plan that cannot be
    read against the instance; its violations are shown above)."""
    table = routes_table(plan) if show else None
    if table is not None:
        stdout_console().print(table)


REFERENCE_FILE_OPTION = typer.Option(
    help="A known solution of the instance (.sol: CVRPLIB routes; .tour: a TSPLIB tour, or "
    "LKH-3's tour of a CVRP or CVRPTW with the depot copied per vehicle): "
    "checked, its cost recomputed and reported as the reference. Without it (and without "
    "--reference), NAME.sol or NAME.opt.tour beside the instance file is used "
    "when there is one; --reference-file none turns that off.")


def _reference(reference: float | None, reference_file: str | None, file: Path,
               instance: Instance) -> tuple[float | None, str | None]:
    """The reference cost and where it came from: ``--reference``, the file named by
    ``--reference-file`` (its fault is the user's: exit 2), or a known solution found beside
    the instance (a fault there is only a warning: nobody asked for it)."""
    if reference is not None:
        if reference_file is not None:
            fail("--reference-file: give --reference or --reference-file, not both")
        return reference, "--reference"
    if reference_file is not None and reference_file.lower() == "none":
        return None, None
    path = Path(reference_file) if reference_file is not None else sibling_reference_file(file)
    if path is None:
        return None, None
    if reference_file is not None and not path.is_file():
        fail(f"--reference-file: {path} is not a file")
    try:
        return reference_cost(path, instance), str(path)
    except (InstanceError, OSError) as exc:
        message = exc.message if isinstance(exc, InstanceError) else str(exc)
        if reference_file is not None:
            fail(f"--reference-file: {message}")
        typer.echo(f"warning: not used as the reference: {message}", err=True)
        return None, None


def _check_out_path(out: Path | None, instance: Instance) -> None:
    """Refuse a solution file we could not write *before* spending the time limit."""
    if out is None:
        return
    if out.is_dir():  # named as a folder, not an "unknown solution extension '(none)'"
        fail(f"--out: {out} is a folder; name a file")
    ext = out.suffix.lower()
    if ext not in SOLUTION_EXTENSIONS:
        fail(f"--out: unknown solution extension {ext or '(none)'!r}; use "
              f"{', '.join(SOLUTION_EXTENSIONS)}")
    if ext == ".tour" and instance.problem != "tsp":
        fail(f"--out: .tour files hold TSP tours; write this {instance.problem.upper()} "
              "solution as .sol or .json")
    if ext == ".sol" and instance.problem == "tsp":  # CVRPLIB's: 0 would read as the depot
        fail("--out: .sol files hold CVRP routes (0 is the depot); write a TSP tour as .tour "
             "or .json")
    check_parent_folder("--out", out)


def _check_svg_file(svg: Path | None, option: str = "--svg") -> None:
    """Refuse a drawing we could not write before spending the time limit."""
    if svg is None:
        return
    if svg.suffix.lower() != ".svg":
        fail(f"{option}: the drawing is written as SVG; name the file *.svg, got "
             f"{svg.name!r}")
    check_parent_folder(option, svg)
    if svg.is_dir():
        fail(f"{option}: {svg} is a folder; name a file")


def _write_svg(path: Path, instance: Instance, solution: Solution, option: str,
               reference: float | None = None) -> None:
    _write_text(path, solution_svg(instance, solution, reference=reference), option)


def _write_text(path: Path, text: str, option: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        fail(f"{option}: cannot write {path}: {exc.strerror or exc}")


def _unknown(name: str, problem: str) -> str:
    """An unknown solver's message, listing the solvers of this problem only, as the API's
    404 does."""
    known = ", ".join(s.name for s in specs_for(problem))
    return f"unknown solver {name!r}; the {problem} solvers: {known} (`cosolve solvers`)"


def _check_solver(name: str, instance: Instance, time_limit: float) -> None:
    """Unknown names, wrong problems, oversized instances and a time limit below the
    solver's start-up are input mistakes (exit 2)."""
    try:
        get_solver(name, problem=instance.problem, nodes=instance.n, time_limit=time_limit,
                   has_coordinates=instance.coords is not None)
    except UnknownSolverError:
        fail(f"--solver: {_unknown(name, instance.problem)}")
    except BudgetTooSmallError as exc:
        fail(f"--time-limit: {exc}")
    except InstanceError as exc:  # e.g. a distance matrix for a solver that reads coordinates
        fail(f"solver {name!r} cannot take this instance: {exc}")
    except CosolveError as exc:  # the solver's limits (exit 2), or the environment (exit 1)
        fail(f"--solver: {exc}", exc.exit_code)


def _auto_choice(solver: str, instance: Instance, time_limit: float,
                 max_solutions: int | None) -> tuple[str, Choice | None]:
    """The solver to run and, under ``--solver auto``, the choice that picked it; when no
    solver in its order can take the request, the preferred one's reason, as for a name."""
    if solver != AUTO:
        return solver, None
    if max_solutions is not None:  # it may pick a solver that counts time only
        fail("--max-solutions: name the solver (polynet); --solver auto takes a time limit "
             "only")
    try:
        choice = choose(instance, time_limit)
        return choice.picked, choice
    except CosolveError:
        rule = rule_for(instance.problem, instance.n,
                        getattr(instance, "max_vehicles", None) is not None, time_limit)
        _check_solver(rule.solvers[0], instance, time_limit)  # fails naming the option
        raise


def _warm_up(names: list[str]) -> None:
    """Load the solvers (imports, weights, compiled kernels) before any clock starts; callers
    run it under ``ctrl_c_before_solving``."""
    for name in names:
        warm_up(name)


def _run_solver(name: str, instance: Instance, budget: Budget, progress: SolveProgress,
                as_json: bool = False) -> Solution:
    """The solve, its failures as one line (and, under ``--json``, a JSON document on stdout
    too, so a script reads every outcome the same way)."""
    def failed(message: str, code: int) -> NoReturn:
        if as_json:
            _print_json({"instance": instance.describe(), "solver": name,
                         "time_limit": budget.time_limit, "seed": budget.seed,
                         "interrupted": budget.cancelled(), "solution": None,
                         "error": message})
        fail(message, code)

    try:
        return solve_instance(instance, name, budget, progress)
    except InstanceError as exc:  # the instance lacks what this solver needs: the input's
        failed(f"solver {name!r} cannot take this instance: {exc}", EXIT_BAD_INPUT)
    except NoSolutionError as exc:
        if budget.cancelled():
            failed(f"interrupted: solver {name!r} had no solution yet ({exc})",
                   EXIT_INTERRUPTED)
        if exc.proven:  # no plan exists (e.g. none meets the fleet cap): the input's fault
            failed(f"{name}: {exc.field}: {exc}", EXIT_BAD_INPUT)
        failed(f"solver {name!r} failed: {exc}", EXIT_SOLVER_FAILED)
    except CosolveError as exc:
        if budget.cancelled():
            failed(f"interrupted: solver {name!r} had no solution yet ({exc})",
                   EXIT_INTERRUPTED)
        failed(f"solver {name!r} failed: {exc}", EXIT_SOLVER_FAILED)
    except Exception as exc:
        if debugging():
            raise
        failed(f"solver {name!r} failed unexpectedly: {type(exc).__name__}: {exc} "
               "(set COSOLVE_DEBUG=1 for a traceback)", EXIT_SOLVER_FAILED)


def _version_callback(value: bool) -> None:
    if value:
        try:
            version = importlib.metadata.version("cosolve")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown (not installed)"
        typer.echo(f"cosolve {version}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version_callback, is_eager=True,
                     help="Print the version and exit."),
    ] = False,
) -> None:
    """Solve routing, min-cost flow and workflow scheduling problems with the registered
    solvers."""
    loaded()  # Ctrl-C is a KeyboardInterrupt again: each command says what it stopped
    try:  # the solvers' COSOLVE_* variables, for every command (a typo was a traceback)
        check_tuning()
    except ValueError as exc:
        if not {"--help", "-h"} & set(sys.argv[1:]):  # help prints whatever the environment
            fail(str(exc))


# -- commands ----------------------------------------------------------------------------
@app.command("solvers")
def list_solvers(
    problem: Annotated[
        str | None, typer.Option(help="Only solvers for this problem (tsp, cvrp, cvrptw, "
                                 "mincostflow).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List the registered solvers, their size limits and whether they can run here."""
    if problem is not None and problem.lower() == "vrp":  # the solvers of VROOM documents
        return vrp_cli.list_vrp_solvers(as_json)
    if problem is None:
        specs = all_specs()
    else:
        known = sorted({p for s in all_specs() for p in s.problems})
        if problem.lower() not in known:  # under --json a document too
            with json_failures(as_json, problem=problem, solvers=[]):
                fail(f"--problem: unknown problem {problem!r}; known problems: "
                     f"{', '.join(known)}")
        problem = problem.lower()
        specs = specs_for(problem)
    if as_json:
        _print_json([
            {
                "name": s.name,
                "family": s.family,
                "problems": list(s.problems),
                "kind": s.kind,
                "max_nodes": s.max_nodes,
                "needs_weights": s.needs_weights,
                "solution_budget": s.solution_budget,
                "needs_coordinates": s.needs_coordinates,
                "available": s.unavailable_reason(problem) is None,
                "unavailable_reason": s.unavailable_reason(problem),
                "description": s.description,
            }
            for s in specs
        ])
        return
    stdout_console().print(solvers_table(specs, problem))


def _with_fleet(instance: Instance, max_vehicles: int | None) -> Instance:
    """``--max-vehicles`` as the instance's fleet cap; a mistake exits 2 naming it."""
    try:
        return with_fleet(instance, max_vehicles)
    except InstanceError as exc:
        fail(str(exc))


@app.command("solve")
@vrp_cli.vroom_documents(vrp_cli.solved_document)  # a .json with vehicles: VROOM's format
def solve(
    file: Annotated[Path, INSTANCE_ARGUMENT],
    solver: Annotated[str, typer.Option(
        help="Solver name (see `cosolve solvers`), or auto: picked by problem and size from "
        "the measured table (docs/routing.md).")],
    time_limit: Annotated[float, typer.Option(help="Wall-clock limit in seconds.")] = 10.0,
    seed: Annotated[int, typer.Option(
        help="Seeds the solver's random choices; a search the time limit stops may still "
        "vary (nearest_neighbor and polynet with --max-solutions repeat exactly).")] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Write the solution: .tour (TSP), .sol or .json.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    show_routes: Annotated[bool, ROUTES_OPTION] = False,
    reference: Annotated[
        float | None, typer.Option(help="Known optimum or best-known cost, to report a gap.")
    ] = None,
    reference_file: Annotated[str | None, REFERENCE_FILE_OPTION] = None,
    svg: Annotated[
        Path | None, typer.Option(help="Write a drawing of the solution to this .svg file.")
    ] = None,
    max_solutions: Annotated[
        int | None, typer.Option(help="A budget in solutions, for solvers that take one "
                                 "(polynet): stop after decoding this many (rounded up to a "
                                 "whole pass over the symmetries decoded together, at most 7 "
                                 "more), or at the time limit if that comes first.")
    ] = None,
    max_vehicles: Annotated[
        int | None, typer.Option(help="CVRP and CVRPTW: at most this many vehicles, in place "
                                 "of the file's VEHICLES if it has one.")
    ] = None,
    device: Annotated[str, DEVICE_OPTION] = "cpu",
    geojson: Annotated[Path | None, vrp_cli.GEOJSON_OPTION] = None,
) -> None:
    """Solve one instance with one solver and report cost, feasibility and time."""
    with json_failures(as_json, instance=None, solver=solver, time_limit=time_limit, seed=seed,
                       solution=None), ctrl_c_before_solving():
        budget = check_budget(time_limit, seed, device)
        if max_solutions is not None:
            if max_solutions < 1:
                fail(f"--max-solutions: must be at least 1, got {max_solutions}")
            try:
                takes = get_spec(solver).solution_budget
            except UnknownSolverError:
                takes = True  # the solver check below names it, with the problem's solvers
            if not takes:
                fail(f"--max-solutions: solver {solver!r} takes a time limit only")
            budget = dataclasses.replace(budget, max_solutions=max_solutions)
        _check_reference(reference)
        instance = _with_fleet(load_or_fail(file, load_instance), max_vehicles)
        reference, reference_source = _reference(reference, reference_file, file, instance)
        _check_out_path(out, instance)
        check_not_the_input(out, file)
        check_not_the_input(svg, file, "--svg")
        _check_svg_file(svg)
        solver, choice = _auto_choice(solver, instance, time_limit, max_solutions)
        _check_solver(solver, instance, time_limit)
        _warm_up([solver])  # imports and weights before the clock starts, as the server

    with first_ctrl_c_cancels() as cancel, \
            SolveProgress(time_limit, enabled=_show_progress(as_json)) as progress:
        budget = dataclasses.replace(budget, cancel=cancel)
        progress.start(solver)
        solution = _run_solver(solver, instance, budget, progress, as_json)
    interrupted = cancel.is_set()
    if choice is not None:
        solution.auto = choice.to_dict()

    gap = gap_percent(solution.cost, reference)
    # an infeasible plan is not written as .tour/.sol, which would read as a solution (the
    # failure below says so); .json keeps it with its violations
    unwritten = (out is not None and not solution.feasible
                 and out.suffix.lower() in (".tour", ".sol"))
    if unwritten:
        out = None
    document = {
        "instance": instance.describe(),
        "time_limit": time_limit,
        "seed": seed,
        "reference": reference,
        "reference_source": reference_source,
        "gap_percent": gap,
        "out": str(out) if out is not None else None,
        "svg": str(svg) if svg is not None else None,
        "interrupted": interrupted,
        "solution": solution_to_dict(solution, instance),
    }
    # a file that cannot be written still leaves the solution on stdout under --json (a
    # full disk must not throw away a long solve)
    with json_failures(as_json, **document):
        if out is not None:
            try:
                write_solution_file(out, solution, instance)
            except OSError as exc:
                if not as_json:  # the table still shows the solve, not lost with the file
                    stdout_console().print(solution_summary(
                        instance, solution, time_limit, reference, gap, None,
                        reference_source))
                fail(f"--out: cannot write {out}: {exc.strerror or exc}")
        if svg is not None:
            _write_svg(svg, instance, solution, "--svg", reference)
    if as_json:
        _print_json(document)
    else:
        if choice is not None:  # one line: which solver and the measured reason
            stdout_console().print(f"auto picked {choice.picked}: {choice.reason}",
                                   markup=False, highlight=False, soft_wrap=True)
        stdout_console().print(solution_summary(instance, solution, time_limit, reference, gap,
                                         str(out) if out is not None else None,
                                         reference_source))
        _print_routes(document["solution"], show_routes)
    if interrupted:
        fail(f"interrupted (Ctrl-C): the solution above is the best {solver} found in "
             f"{solution.wall_time:.1f} s of the {time_limit:g} s asked for", EXIT_INTERRUPTED)
    if not solution.feasible:
        fail(f"solver {solver!r} returned an infeasible solution: "
             + "; ".join(solution.violations)
             + (" (--out: not written, a .tour or .sol would read as a solution; a .json "
                "keeps it with its violations)" if unwritten else ""), EXIT_SOLVER_FAILED)


def _plan_fields(solution: Solution | None, instance: Instance) -> dict[str, Any]:
    """A comparison row's plan, to check or keep, not only its cost: the routes, and per
    route load, distance, duration (CVRPTW stop times), totals and units; null without one."""
    plan = solution_to_dict(solution, instance) if solution is not None else {}
    return {key: plan.get(key) for key in ("routes", "route_details", "summary", "units")}


def _check_compare_outputs(file: Path, svg: Path | None, plot: Path | None) -> None:
    """``--svg`` a folder (made if missing), ``--plot`` an .svg file beside a folder we can
    make: refused before any solver runs."""
    if svg is not None and svg.exists() and not svg.is_dir():
        fail(f"--svg: {svg} is a file; give a folder for the charts")
    if svg is not None:
        make_folder("--svg", svg)
    if plot is not None:
        check_not_the_input(plot, file, "--plot")
        _check_svg_file(plot, "--plot")


def _draw_comparison(comparison: Comparison, file: Path, svg: Path | None, plot: Path | None,
                     drawings: dict[str, str]) -> None:
    """Each row's drawing into ``svg`` (recorded in ``drawings`` as it is written, so a
    failure part way still lists those) and the cost-over-time chart to ``plot``."""
    if svg is not None:
        for row in comparison.rows:
            if row.solution is not None:
                path = svg / f"{output_stem(file.name)}_{row.solver}.svg"
                _write_svg(path, comparison.instance, row.solution, "--svg",
                           comparison.reference)
                drawings[row.solver] = str(path)
    if plot is not None:
        _write_text(plot, comparison_plot_svg(comparison), "--plot")


def _compare_names(solvers: str | None, instance: Instance) -> list[str]:
    """The solvers a comparison runs: those named (each checked against the instance's
    problem, as `solve --solver` and the API check), or every available one."""
    if solvers is None:
        return [s.name for s in specs_for(instance.problem) if s.available]
    names = solver_names(solvers, "ortools,pyvrp")
    for name in names:
        if name == AUTO:  # its row runs the solver auto picks, named in the row
            continue
        try:
            spec = get_spec(name)
        except UnknownSolverError:
            fail(f"--solvers: {_unknown(name, instance.problem)}")
        if instance.problem not in spec.problems:
            mismatch = ProblemMismatchError(name, instance.problem, list(spec.problems))
            fail(f"--solvers: {mismatch}")
    return names


def _compare_row(row: ComparisonRow, instance: Instance,
                 drawings: dict[str, str]) -> dict[str, Any]:
    """One solver's row of `compare --json`."""
    solution = row.solution
    return {
        "solver": row.solver,
        "cost": row.cost,
        "gap_to_best": row.gap_to_best,
        "gap_to_reference": row.gap_to_reference,
        "wall_time": None if isinstance(row.refusal, REFUSALS) else row.elapsed,
        "feasible": row.feasible,
        "violations": solution.violations if solution else [],
        "error": row.error,
        "distance": solution.distance if solution else instance.distance,
        "stats": solution.stats if solution else {},
        "auto": solution.auto if solution else None,  # auto's pick, and why
        # the plan itself, with per route figures, totals and units
        **_plan_fields(solution, instance),
        "svg": drawings.get(row.solver),
        # the best cost over time: [[elapsed s, best], ...], never increasing
        "progress": [list(point) for point in row.progress],
    }


def _compare_failure(comparison: Comparison, names: list[str],
                     interrupted: bool) -> tuple[str, int] | None:
    """Why `compare` exits non-zero, and with which code, or None."""
    if interrupted:
        skipped = names[len(comparison.rows):]
        return (f"interrupted (Ctrl-C): {comparison.rows[-1].solver!r} stopped early with "
                "its best so far" + (f"; not run: {', '.join(skipped)}" if skipped else ""),
                EXIT_INTERRUPTED)
    if comparison.refusal is not None:  # the input's fault: exit 2, as `solve` does ...
        # ... but solvers that cannot run here (missing weights) exit 1, as `solve` does too
        unavailable = isinstance(comparison.refusal, SolverUnavailableError)
        return (comparison.refusal_message(),
                EXIT_SOLVER_FAILED if unavailable else EXIT_BAD_INPUT)
    if comparison.best_solver is None:
        return ("no solver produced a feasible solution", EXIT_SOLVER_FAILED)
    return None


@app.command("compare")
@vrp_cli.vroom_documents(vrp_cli.compared_document)
def compare(
    file: Annotated[Path, INSTANCE_ARGUMENT],
    solvers: Annotated[
        str | None,
        typer.Option(help="Comma-separated solver names; default: every available solver "
                          "for the instance's problem."),
    ] = None,
    time_limit: Annotated[float, typer.Option(help="Wall-clock limit per solver, seconds.")] = 10.0,
    seed: Annotated[int, typer.Option(
        help="Seeds every solver's random choices; a search the time limit stops may "
        "still vary.")] = 0,
    reference: Annotated[
        float | None, typer.Option(help="Known optimum or best-known cost, to report gaps.")
    ] = None,
    reference_file: Annotated[str | None, REFERENCE_FILE_OPTION] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    svg: Annotated[
        Path | None, typer.Option(help="Write a drawing of each solver's solution into this "
                                  "folder, as <instance>_<solver>.svg.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Write one chart of every solver's best cost over "
                                  "time to this .svg file (its folder is created).")
    ] = None,
    max_vehicles: Annotated[
        int | None, typer.Option(help="CVRP and CVRPTW: at most this many vehicles, in place "
                                 "of the file's VEHICLES if it has one.")
    ] = None,
    device: Annotated[str, DEVICE_OPTION] = "cpu",
) -> None:
    """Run several solvers one after another on one instance with the same budget."""
    with json_failures(as_json, instance=None, time_limit=time_limit, seed=seed,
                       reference=reference, best_solver=None, interrupted=False, rows=[]), \
            ctrl_c_before_solving():
        budget = check_budget(time_limit, seed, device)
        _check_reference(reference)
        instance = _with_fleet(load_or_fail(file, load_instance), max_vehicles)
        reference, reference_source = _reference(reference, reference_file, file, instance)
        _check_compare_outputs(file, svg, plot)
        names = _compare_names(solvers, instance)
        _warm_up(names)  # equal time means equal search time: no solver loads inside it
    with first_ctrl_c_cancels() as cancel, \
            SolveProgress(time_limit, enabled=_show_progress(as_json)) as progress:
        comparison = compare_solvers(instance, names,
                                     dataclasses.replace(budget, cancel=cancel), reference,
                                     progress)
    interrupted = cancel.is_set()

    drawings: dict[str, str] = {}

    def document() -> dict[str, Any]:
        return {
            "instance": instance.describe(),
            "time_limit": time_limit,
            "seed": seed,
            "reference": reference,
            "reference_source": reference_source,
            "best_solver": comparison.best_solver,
            "interrupted": interrupted,
            "rows": [_compare_row(row, instance, drawings) for row in comparison.rows],
            "plot": str(plot) if plot is not None else None,
        }

    # a drawing that cannot be written still leaves the results on stdout under --json
    with json_failures(as_json, **document()):
        _draw_comparison(comparison, file, svg, plot, drawings)
    failure = _compare_failure(comparison, names, interrupted)
    if as_json:  # a failure's reason is in the document too, as the README says
        _print_json({**document(), **({"error": failure[0]} if failure else {})})
    else:
        stdout_console().print(comparison_table(comparison, reference_source))
    if failure is not None:
        typer.echo(f"error: {failure[0]}", err=True)
        raise typer.Exit(failure[1])


app.command("batch")(batch)
app.add_typer(flow_app, name="flow")
app.add_typer(schedule_app, name="schedule")


#: Seconds a stopping server waits for open responses. A client following a job's events
#: holds its response open until the job ends, so without a bound Ctrl-C waited for the
#: job (an hour for a 3,600 s one); the jobs themselves are re-queued and resume on restart.
#: The Makefile and the Dockerfile pass the same figure.
GRACEFUL_SHUTDOWN_S = 5


class LogFormat(enum.Enum):
    """``cosolve serve --log-format``."""

    text = "text"
    json = "json"


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=1, max=65535)] = 8000,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="Serve on a non-loopback --host without API keys (refused "
        "otherwise).")] = False,
    log_format: Annotated[LogFormat | None, typer.Option(
        help="Log lines as text, or one JSON object per line (COSOLVE_LOG_FORMAT; "
        "default text).")] = None,
) -> None:
    """Run the HTTP API (app.main:app) with uvicorn."""
    import os

    if log_format is not None:  # the app reads its settings from the environment
        os.environ["COSOLVE_LOG_FORMAT"] = log_format.value
    if importlib.util.find_spec("app.main") is None:
        fail("the HTTP API module app.main is missing from this installation",
              EXIT_SOLVER_FAILED)
    import socket

    import uvicorn
    from pydantic import ValidationError

    # The COSOLVE_* settings are checked before uvicorn starts: a bad value (or a GPU that is
    # not there) is one line naming the variable, not a traceback from the app's start-up.
    try:
        settings = Settings()
    except ValidationError as exc:
        fail(settings_problem(exc))
    exposed = exposure_problem(host, settings, insecure)
    if exposed is not None:
        fail(exposed)
    if settings.executor == "ray":
        problem = ray_problem(settings.ray_address)
        if problem is not None:
            fail(problem)
    try:
        torch_device_name(settings.device)
    except ValueError as exc:
        fail(f"COSOLVE_DEVICE: {exc}")
    try:  # a file, a read-only folder or a damaged database would be a traceback after the
        # warm-up, and a second server on the same folder would take over the first one's jobs
        check_data_dir(Path(settings.data_dir))
    except DataDirError as exc:
        fail(f"COSOLVE_DATA_DIR: {exc}")
    try:  # a busy port or an unknown host is the caller's to fix: say so, exit 2
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        fail(f"--host/--port: cannot listen on {host}:{port}: {exc.strerror or exc}")
    uvicorn.run("app.main:app", host=host, port=port,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S, http=SLOW_CLIENTS_PROTOCOL)


__all__ = ["app"]


if __name__ == "__main__":  # `python -m cli.main serve` in the Docker image
    app()
