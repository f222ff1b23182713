"""What `cosolve batch` is given: PATH... (instance files and folders of them, problems
mixed) and ``--solver`` (one name or auto for every file, or one per problem kind), each
mistake exit 2 naming the option before any file is solved."""

from __future__ import annotations

from pathlib import Path

from cli.common import EXIT_SOLVER_FAILED, fail, family_solvers, unknown_solver_message
from cli.vrp import vrp_only
from jobs.batches import BatchSolvers, is_instance_name, parse_batch_solvers
from solvers.catalog import get_spec
from solvers.errors import CosolveError, UnknownSolverError
from solvers.routing.auto import AUTO


def scan_folder(folder: Path) -> tuple[list[Path], int]:
    """Instance files directly inside ``folder`` sorted by name, and how many other files
    were ignored (subfolders are not counted)."""
    # an instance-named entry that is not a regular file (a dangling link, a FIFO) is kept,
    # to be listed as rejected with the reason rather than vanish from the summary
    files = sorted((p for p in folder.iterdir() if p.is_file() or (
        is_instance_name(p.name) and not p.is_dir())), key=lambda p: p.name)
    instances = [p for p in files if is_instance_name(p.name)]
    return instances, len(files) - len(instances)


def other_files(count: int) -> str:
    return f"{count} other file{'' if count == 1 else 's'}"


def check_inputs(paths: list[Path], out: Path) -> tuple[list[Path], int]:
    """The instance files of PATH...: a folder's (sorted by name, other files counted as
    ignored) and files named one by one, each once; OUT made."""
    files: list[Path] = []
    ignored = 0
    for path in paths:
        if not path.exists() and not path.is_symlink():
            fail(f"PATH: no such file or folder: {path}")
        if not path.is_dir():
            if not is_instance_name(path.name):
                fail(f"PATH: {path} is not an instance file (.tsp, .vrp, .vrptw, .json, "
                     "optionally .gz)")
            files.append(path)
            continue
        if out.resolve() == path.resolve():
            fail("--out: must differ from each folder of PATH, or the solutions written there "
                 "would be read as instances on the next run")
        try:
            found, others = scan_folder(path)
        except OSError as exc:
            fail(f"PATH: cannot read {path}: {exc.strerror or exc}")
        files += found
        ignored += others
    files = list({p.absolute(): p for p in files}.values())  # a file named twice runs once
    if not files:
        fail(f"PATH: no instance files (.tsp, .vrp, .vrptw, .json, optionally .gz) in "
             f"{' '.join(map(str, paths))}"
             + (f" ({other_files(ignored)} ignored)" if ignored else ""))
    if out.exists() and not out.is_dir():
        fail(f"--out: {out} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out: cannot create {out}: {exc.strerror or exc}")
    return files, ignored


def check_solvers(text: str, max_solutions: int | None) -> BatchSolvers:
    """``--solver``: one name (or auto) for every file, or one per problem kind."""
    try:
        solvers = parse_batch_solvers(text)
    except UnknownSolverError as exc:  # the routing solvers only, not the min-cost flow ones
        fail(f"--solver: {unknown_solver_message(exc.name, 'routing')}")
    except CosolveError as exc:
        fail(f"--solver: {exc}")
    for solver in solvers.names:
        if solver == AUTO:
            if max_solutions is not None:
                fail("--max-solutions: name the solver (polynet); auto takes a time limit only")
            continue
        if vrp_only(solver):  # its files are VROOM documents, checked as they are read
            continue
        try:
            spec = get_spec(solver)
        except UnknownSolverError:
            fail(f"--solver: {unknown_solver_message(solver, 'routing')}")
        if spec.family != "routing":
            # refused once here, or every file would be rejected one by one
            fail(f"--solver: solver {solver!r} does not solve routing problems (TSP, CVRP, "
                 f"CVRPTW); the routing solvers: {', '.join(family_solvers('routing'))}")
        if max_solutions is not None and not spec.solution_budget:  # as `cosolve solve`
            fail(f"--max-solutions: solver {solver!r} takes a time limit only")
        reason = spec.unavailable_reason()
        if reason is not None:  # the environment, not the input: like `cosolve solve`, exit 1
            fail(f"--solver: solver {solver!r} is unavailable: {reason}", EXIT_SOLVER_FAILED)
    return solvers
