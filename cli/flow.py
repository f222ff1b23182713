"""``cosolve flow …``: the min-cost-flow endpoints' twins on the command line.

    cosolve flow solve FILE [--solver NAME] [--out FILE.sol|.json] [--tolerance T] [--json]
    cosolve flow compare FILE [--solvers a,b,c] [--json]
    cosolve flow check FILE SOLUTION [--json]

FILE is a DIMACS ``.min`` or a ``.json`` network, optionally gzipped. Solutions are written as
DIMACS solution lines (``s COST``, ``f FROM TO FLOW``) or JSON. Exit codes as everywhere: 0
success, 2 bad input — including an infeasible network, with the cut that proves it on stderr,
as a fleet cap no routing plan meets is, and a comparison every solver refuses (a time limit
too short for all of them), as the routing ``compare``, and a solution ``check`` rejects (or
an empty one) — and 1 a solver failure.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import numpy as np
import typer
from rich.table import Table

from cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_SOLVER_FAILED,
    check_budget,
    check_not_the_input,
    check_parent_folder,
    ctrl_c_before_solving,
    debugging,
    fail,
    json_failures,
    jsonable,
    load_or_fail,
    solver_names,
    stdout_console,
    unknown_solver_message,
)
from cli.display import SolveProgress, format_cost
from solvers.catalog import get_solver, get_spec, specs_for
from solvers.errors import (
    BudgetTooSmallError,
    CosolveError,
    InstanceError,
    InstanceTooLargeError,
    ProblemMismatchError,
    SolverUnavailableError,
    UnknownSolverError,
)
from solvers.flow.io import (
    SOLUTION_EXTENSIONS,
    load_network,
    parse_dimacs_solution,
    parse_json_solution,
    solution_to_dict,
    write_solution_file,
)
from solvers.flow.options import FlowOptions
from solvers.flow.problem import FlowNetwork
from solvers.flow.solution import Certificate, FlowSolution, check_flow
from solvers.flow.solve import PROBLEM, compare, solve
from solvers.routing.io.formats import read_file_bytes

app = typer.Typer(
    name="flow",
    help="Min-cost flow: solve, compare and check (DIMACS .min or JSON networks).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

NETWORK_ARGUMENT = typer.Argument(
    metavar="FILE", help="Network: DIMACS .min or .json, optionally gzipped (.gz).")


def _print_json(obj: Any) -> None:
    import json

    typer.echo(json.dumps(jsonable(obj), indent=2))


def _options(tolerance: float) -> FlowOptions:
    if not (math.isfinite(tolerance) and 0 <= tolerance < 1):
        fail(f"--tolerance: must be a relative gap in [0, 1), got {tolerance:g}")
    return FlowOptions(tolerance=tolerance)


def _check_solver(name: str, net: FlowNetwork, option: str = "--solver") -> None:
    try:
        get_solver(name, problem=PROBLEM, nodes=net.n)
    except UnknownSolverError:  # the flow solvers only, not the routing ones
        fail(f"{option}: {unknown_solver_message(name, 'flow')}")
    except (ProblemMismatchError, InstanceTooLargeError) as exc:
        fail(f"{option}: {exc}")
    except CosolveError as exc:
        fail(f"{option}: {exc}", EXIT_SOLVER_FAILED)


def _check_out(out: Path | None) -> None:
    if out is None:
        return
    if out.is_dir():  # named as a folder, not an "unknown solution extension '(none)'"
        fail(f"--out: {out} is a folder; name a file")
    if out.suffix.lower() not in SOLUTION_EXTENSIONS:
        fail(f"--out: unknown solution extension {out.suffix or '(none)'!r}; use .sol or .txt "
             "(DIMACS solution lines) or .json")
    check_parent_folder("--out", out)


def _solver_failed(name: str, exc: Exception, file: Path) -> NoReturn:
    if isinstance(exc, InstanceError):  # e.g. a negative-cost cycle: named like load errors
        fail(f"{file}: {exc.field}: {exc.message}")
    if isinstance(exc, BudgetTooSmallError):  # bad input, as the routing CLI and HTTP say
        fail(f"--time-limit: {exc}")
    if isinstance(exc, CosolveError):
        fail(f"solver {name!r} failed: {exc}", EXIT_SOLVER_FAILED)
    if debugging():
        raise exc
    fail(f"solver {name!r} failed unexpectedly: {type(exc).__name__}: {exc} (set "
         "COSOLVE_DEBUG=1 for a traceback)", EXIT_SOLVER_FAILED)


def _relative_gap(cert: Certificate) -> str:
    if cert.relative_gap >= 1:  # bound ≤ 0 ≤ cost: a percentage would only mislead
        return "the dual bound proves nothing yet"
    return f"{100 * cert.relative_gap:.4f} %"


def _summary(net: FlowNetwork, sol: FlowSolution, out: Path | None) -> Table:
    table = Table(title=f"{net.name}: {net.n} nodes, {net.m} arcs", title_justify="left",
                  show_header=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("solver", sol.solver)
    table.add_row("status", sol.status)
    table.add_row("cost", format_cost(sol.cost))
    if sol.certificate is not None:
        cert = sol.certificate
        table.add_row("dual bound", f"{cert.dual_bound:,} ({cert.source})")
        table.add_row("certified gap", f"{cert.gap:,} ({_relative_gap(cert)})")
    table.add_row("feasible (checked)", "yes" if sol.feasible else "no")
    for violation in sol.violations[:5]:
        table.add_row("violation", violation)
    table.add_row("wall time", f"{sol.wall_time:.3f} s")
    stats = sol.stats
    if "entropic_cost" in stats:
        table.add_row("entropic cost", f"{stats['entropic_cost']:,.1f} "
                      f"({stats.get('entropic_gap_percent', math.nan):+.4f} % vs final)")
        table.add_row("Sinkhorn", f"{stats['iterations']} iterations, ε down to "
                      f"{stats['eps_schedule'][-1]:.3g}, marginal error "
                      f"{stats['marginal_error']:.1e} ({stats['sinkhorn_stopped']})")
    if sol.cut is not None:
        table.add_row("infeasible", sol.cut.message)
    if out is not None:
        table.add_row("written to", str(out))
    return table


@app.command("solve")
def solve_command(
    file: Annotated[Path, NETWORK_ARGUMENT],
    solver: Annotated[str, typer.Option(help="ortools_mcf, networkx_simplex or "
                                        "oft_sinkhorn.")] = "ortools_mcf",
    out: Annotated[Path | None, typer.Option(
        help="Write the flow: .sol/.txt (DIMACS 's COST' and 'f FROM TO FLOW' lines) or "
        ".json.")] = None,
    time_limit: Annotated[float, typer.Option(help="Wall-clock limit in seconds.")] = 60.0,
    seed: Annotated[int, typer.Option(
        help="Recorded only: no flow solver draws random numbers.")] = 0,
    tolerance: Annotated[float, typer.Option(
        help="Relative optimality gap the answer may keep (certified); 0 = proven optimum."
    )] = 0.0,
    device: Annotated[str, typer.Option(help="torch device for oft_sinkhorn: cpu, cuda, cuda:N "
                                         "or auto.", envvar="COSOLVE_DEVICE")] = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Solve one network with one solver; optionally write the flow."""
    with json_failures(as_json, network=None, solver=solver, status=None, flow=None), \
            ctrl_c_before_solving():
        budget = check_budget(time_limit, seed, device)
        options = _options(tolerance)
        _check_out(out)
        check_not_the_input(out, file)
        net = load_or_fail(file, load_network, "network")
        _check_solver(solver, net)
    enabled = not as_json and sys.stderr.isatty()
    with SolveProgress(time_limit, enabled=enabled) as progress:
        progress.start(solver)
        # a refusal from the solver step (time limit, unbounded cost) prints the document too,
        # so stdout is not empty under --json
        with json_failures(as_json, network=net.describe(), solver=solver, status=None,
                           flow=None):
            try:
                sol = solve(net, solver, budget, progress, options)
            except KeyboardInterrupt:  # an exact solve has no flow to give before its end
                fail("interrupted before the solver had a flow", EXIT_INTERRUPTED)
            except Exception as exc:
                _solver_failed(solver, exc, file)
    # the API's request fields too, as flow compare --json has them
    body = {**solution_to_dict(sol, net), "time_limit": time_limit, "seed": seed,
            "tolerance": tolerance, "out": str(out) if out is not None else None}
    # a file that cannot be written still leaves the flow on stdout under --json
    with json_failures(as_json, **body):
        if out is not None:
            try:
                write_solution_file(out, sol, net)
            except OSError as exc:
                fail(f"--out: cannot write {out}: {exc.strerror or exc}")
    failure: tuple[str, int] | None = None
    if sol.status == "infeasible":  # proven by the cut: the input's fault, exit 2
        failure = (sol.cut.message if sol.cut else "the network has no feasible flow",
                   EXIT_BAD_INPUT)
    elif not sol.feasible:
        failure = (f"solver {solver!r} returned a flow the checker rejects: "
                   + "; ".join(sol.violations), EXIT_SOLVER_FAILED)
    if failure is not None:  # the document says why it exits non-zero, as every --json one
        body["error"] = failure[0]
    if as_json:
        _print_json(body)
    else:
        stdout_console().print(_summary(net, sol, out))
    if failure is not None:
        fail(*failure)


@app.command("compare")
def compare_command(
    file: Annotated[Path, NETWORK_ARGUMENT],
    solvers: Annotated[str | None, typer.Option(
        help="Comma-separated solver names; default: every available flow solver.")] = None,
    time_limit: Annotated[float, typer.Option(help="Wall-clock limit per solver.")] = 60.0,
    seed: Annotated[int, typer.Option(
        help="Recorded only: no flow solver draws random numbers.")] = 0,
    tolerance: Annotated[float, typer.Option(help="Relative gap oft_sinkhorn may keep.")] = 0.0,
    device: Annotated[str, typer.Option(help="torch device for oft_sinkhorn: cpu, cuda, cuda:N "
                                         "or auto.", envvar="COSOLVE_DEVICE")] = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Run several solvers one after another on one network and check they agree."""
    with json_failures(as_json, network=None, time_limit=time_limit, tolerance=tolerance,
                       best_solver=None, rows=[]), ctrl_c_before_solving():
        budget = check_budget(time_limit, seed, device)
        options = _options(tolerance)
        net = load_or_fail(file, load_network, "network")
        if solvers is None:
            names = [s.name for s in specs_for(PROBLEM) if s.available]
        else:
            names = solver_names(solvers, "ortools_mcf,oft_sinkhorn")
            for name in names:
                try:
                    spec = get_spec(name)
                except UnknownSolverError:
                    fail(f"--solvers: {unknown_solver_message(name, 'flow')}")
                if PROBLEM not in spec.problems:
                    fail(f"--solvers: solver {name!r} does not solve min-cost flow")
    enabled = not as_json and sys.stderr.isatty()
    # a refusal from the solver step (an unbounded cost) prints the document too
    with SolveProgress(time_limit, enabled=enabled) as progress, \
            json_failures(as_json, network=net.describe(), time_limit=time_limit,
                          tolerance=tolerance, best_solver=None, rows=[]):
        try:
            result = compare(net, names, budget, progress, options)
        except KeyboardInterrupt:  # said, with a document under --json, as every exit 130
            fail("interrupted before every solver had run", EXIT_INTERRUPTED)
        except Exception as exc:
            _solver_failed(",".join(names), exc, file)
    cut = next((r.solution.cut for r in result.rows
                if r.solution is not None and r.solution.cut is not None), None)
    failure: tuple[str, int] | None = None
    if result.infeasible:  # the cut's words, as `flow solve` gives them
        failure = (cut.message if cut else "the network has no feasible flow", EXIT_BAD_INPUT)
    elif result.refusal is not None:  # the input's fault: exit 2, as the routing `compare`
        # (solvers that cannot run here exit 1, as there)
        unavailable = isinstance(result.refusal, SolverUnavailableError)
        failure = (result.refusal_message(),
                   EXIT_SOLVER_FAILED if unavailable else EXIT_BAD_INPUT)
    elif result.best_solver is None:
        failure = ("no solver produced a feasible flow", EXIT_SOLVER_FAILED)
    elif result.agree is False:
        failure = ("solvers that proved optimality disagree on the optimal cost (or a checked "
                   "flow costs less than a proven optimum)", EXIT_SOLVER_FAILED)
    if as_json:
        # the API's fields (seed, violations, the top-level infeasibility), the network
        # described as `flow solve --json` does
        _print_json({
            "network": net.describe(), "time_limit": time_limit, "seed": seed,
            "tolerance": tolerance,
            "best_solver": result.best_solver, "best_cost": result.best_cost,
            "agree": result.agree,
            "infeasibility": cut.to_dict() if cut is not None else None,
            "rows": [{
                "solver": r.solver,
                "status": r.solution.status if r.solution else None,
                "cost": r.solution.cost if r.solution else None,
                "gap_to_best": r.gap_to_best,
                "wall_time": r.solution.wall_time if r.solution else None,
                "feasible": bool(r.solution and r.solution.feasible),
                "certificate": (r.solution.certificate.to_dict()
                                if r.solution and r.solution.certificate else None),
                "infeasibility": r.solution.cut.to_dict() if r.solution and r.solution.cut
                else None,
                "violations": r.solution.violations if r.solution else [],
                "error": r.error,
                "stats": r.solution.stats if r.solution else {},
            } for r in result.rows],
            # a failure's reason is in the document too, as the routing `compare` gives it
            **({"error": failure[0]} if failure else {}),
        })
    else:
        table = Table(title=f"{net.name}: {net.n} nodes, {net.m} arcs", title_justify="left")
        for col in ("solver", "status", "cost", "gap to best", "certified gap", "wall (s)",
                    "note"):
            table.add_column(col, justify="right" if col in ("cost", "wall (s)") else "left")
        for r in result.rows:
            sol = r.solution
            cert = sol.certificate if sol else None
            note = r.error or ""
            if sol and "entropic_cost" in sol.stats:
                note = (f"entropic {sol.stats['entropic_cost']:,.0f} "
                        f"({sol.stats['entropic_gap_percent']:+.3f} %), "
                        f"{sol.stats['iterations']} it")
            if sol and sol.cut:
                note = sol.cut.message
            table.add_row(r.solver, sol.status if sol else "error",
                          format_cost(sol.cost if sol else None),
                          "–" if r.gap_to_best is None else f"{r.gap_to_best:,}",
                          "–" if cert is None else f"{cert.gap:,}",
                          "–" if sol is None else f"{sol.wall_time:.3f}", note)
        stdout_console().print(table)
        if result.agree is not None:
            stdout_console().print("the proven optima agree on the cost" if result.agree
                                   else "the solvers DISAGREE on the optimal cost")
        elif result.best_solver is not None:
            stdout_console().print("no solver proved optimality, so there is no optimum to "
                                   "agree on")
    if failure is not None:
        fail(*failure)


def _has_parallel_arcs(net: FlowNetwork) -> bool:
    pairs = net.tails.astype(np.int64) * max(net.n, 1) + net.heads.astype(np.int64)
    return len(np.unique(pairs)) < len(pairs)


def _no_solution_lines(text: str) -> bool:
    """Nothing but blank lines and ``c`` comments: an empty solution file."""
    return all(not parts or parts[0] == "c" for parts in map(str.split, text.splitlines()))


@app.command("check")
def check_command(
    file: Annotated[Path, NETWORK_ARGUMENT],
    solution: Annotated[Path, typer.Argument(
        metavar="SOLUTION", help="DIMACS solution lines (s, f), or the .json that "
        "`flow solve --out` writes.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a line.")] = False,
) -> None:
    """Check a solution against a network: balance, capacities, and the stated cost. A flow
    that fails is the input's fault, exit 2, as an unreadable one; so is an empty file,
    unless the network has no supplies (its zero flow is then a fair answer)."""
    with json_failures(as_json, network=None, solution=str(solution), feasible=None, cost=None,
                       stated_cost=None, violations=[]):
        net = load_or_fail(file, load_network, "network")
    with json_failures(as_json, network=net.describe(), solution=str(solution), feasible=None,
                       cost=None, stated_cost=None, violations=[]):
        try:
            text = read_file_bytes(solution).decode("utf-8-sig")
        except InstanceError as exc:
            fail(f"SOLUTION: {exc.message}")
        except OSError as exc:
            fail(f"SOLUTION: cannot read {solution}: {exc.strerror or exc}")
        except UnicodeDecodeError:
            fail(f"SOLUTION: {solution} is not a text file of DIMACS solution lines ('s COST', "
                 "'f FROM TO FLOW') or JSON; gzipped and binary files are not read here")
        # an empty file would be checked as the zero flow, almost always a mistake
        if _no_solution_lines(text) and np.any(net.supplies):
            fail(f"SOLUTION: {solution} is empty (no 's COST' or 'f FROM TO FLOW' line); as the "
                 "zero flow it could not meet the network's supplies")
        is_dimacs = not (solution.suffix.lower() == ".json" or text.lstrip().startswith("{"))
        try:
            if not is_dimacs:
                claimed, flow = parse_json_solution(text, net)
            else:
                claimed, flow = parse_dimacs_solution(text, net)
        except InstanceError as exc:
            fail(f"{solution}: {exc.field}: {exc.message}")
    cost, violations = check_flow(net, flow)
    feasible = cost is not None and not violations
    if claimed is not None and cost is not None and claimed != cost:
        note = ""
        if is_dimacs and _has_parallel_arcs(net):
            note = ("; the network has parallel arcs, which DIMACS 'f FROM TO FLOW' lines "
                    "cannot tell apart (their flow was spread cheapest first): check the .json "
                    "that `flow solve --out x.json` writes instead")
        violations.append(f"the file states cost {claimed}, the flow costs {cost}{note}")
    for violation in violations:
        typer.echo(f"violation: {violation}", err=True)
    document = {"network": net.describe(), "solution": str(solution), "feasible": feasible,
                "cost": cost, "stated_cost": claimed, "violations": violations}
    if violations:  # the flow given is at fault: bad input (exit 2), as a network or option is
        with json_failures(as_json, **document):
            fail(f"{solution}: {len(violations)} problem(s) found")
    if as_json:
        _print_json(document)
    else:
        typer.echo(f"ok: feasible flow of cost {cost}")
