"""``cosolve batch``: solve every instance file of a folder on the server's job executors.

The command is a thin client of the job layer rather than a loop over ``solve``: jobs go into
a ``JobStore`` under ``OUT/.cosolve`` and run on the same executors as the API (a local process
pool or Ray), so a crashing solver cannot take the command down and the files solve in
parallel. Each finished file's solution is copied out of the store as ``OUT/<stem>.json`` plus
a ``.tour`` (TSP) or ``.sol`` (CVRP) as soon as it is final, the ``.json`` last: a feasible
``.json`` therefore means "done", which is what makes a re-run (after Ctrl-C, a crash or a
failure) solve only the files still missing.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from cli.batch_files import (
    atomic_write,
    batch_settings,
    job_input,
    read_done,
    recheck_done,
    write_outputs,
)
from cli.batch_inputs import check_inputs, check_solvers, other_files
from cli.common import (
    DEVICE_OPTION,
    EXIT_INTERRUPTED,
    EXIT_SOLVER_FAILED,
    check_device,
    check_time_limit,
    fail,
    json_failures,
    jsonable,
    stdout_console,
    with_fleet,
)
from cli.display import format_cost, format_gap
from cli.vrp import batch_document
from jobs.batches import (
    GAP_COLUMN,
    BatchSolverError,
    BatchSolvers,
    kind_totals,
    kind_totals_text,
    markdown_table,
    output_stem,
    overall_cost,
    summary_columns,
)
from jobs.executors import Executor, make_executor
from jobs.store import (
    FAILED,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    JobRecord,
    JobStore,
    StorageError,
    StoredSolutionError,
)
from solvers.catalog import get_solver
from solvers.contract import MAX_SEED
from solvers.cpus import available_cpus
from solvers.errors import CosolveError, InstanceError
from solvers.routing.auto import resolve
from solvers.routing.io.formats import parse_instance_bytes, read_file_bytes
from solvers.routing.io.references import reference_cost, sibling_reference_file
from solvers.routing.problem import Instance
from solvers.routing.solve import gap_percent

#: Row states besides the store's own (succeeded, failed, cancelled).
REJECTED = "rejected"
ALREADY_SOLVED = "already_solved"
INTERRUPTED = "interrupted"

STORE_FOLDER = ".cosolve"
SUMMARY_FILE = "summary.md"
#: How often the command reads the store while jobs run, in seconds.
POLL_S = 0.2
#: Finished jobs stay in OUT/.cosolve this long; older ones are purged when a batch starts.
STORE_TTL_S = 30 * 24 * 3600.0
#: After Ctrl-C, how long to wait for running jobs to act on their cancel, in seconds.
CANCEL_GRACE_S = 1.5


@dataclass
class BatchRow:
    """One input file's fate; the summary table, ``summary.md`` and ``--json`` all show it."""

    file: str
    stem: str
    state: str
    nodes: int | None = None
    problem: str | None = None
    #: the file's solver: the batch's for its kind, then the one ``auto`` picked once solved
    solver: str | None = None
    cost: float | None = None
    feasible: bool | None = None
    wall_time: float | None = None
    error: str | None = None
    job_id: str | None = None
    outputs: list[str] = field(default_factory=list)
    #: The input file's sha256: a rerun skips the file only while it is unchanged.
    input_sha256: str | None = None
    #: A known solution found beside the file (NAME.sol, NAME.opt.tour), its cost once checked
    #: and recomputed (None when it could not serve: ``reference_note`` says why).
    reference_file: str | None = None
    reference: float | None = None
    reference_note: str | None = None

    @property
    def ok(self) -> bool:
        """Counts as solved: a feasible solution exists in OUT (new or from a previous run)."""
        return self.state in (SUCCEEDED, ALREADY_SOLVED) and self.feasible is True

    @property
    def gap(self) -> float | None:
        """Percent above the known solution beside the file, for a solved file."""
        if not self.ok or self.reference is None or self.cost is None:
            return None
        return gap_percent(self.cost, self.reference)


@dataclass
class _Pending:
    """A file accepted for solving: its row and where to read the job input from (read again
    at submission rather than held, so a folder of large files does not pile up in memory)."""

    row: BatchRow
    path: Path


# -- preparing ---------------------------------------------------------------------------
#: The longest file name most file systems take, in bytes.
MAX_NAME_BYTES = 255
#: More worker processes than this is a typo, not a plan.
MAX_WORKERS = 1024


def _check_options(solver: str, time_limit: float, seed: int, workers: int | None,
                   executor: str, ray_address: str | None,
                   max_vehicles: int | None = None, max_solutions: int | None = None,
                   ) -> tuple[int, BatchSolvers]:
    """Every option mistake is exit 2 naming the option, before any file is read."""
    check_time_limit(time_limit)
    if not 0 <= seed <= MAX_SEED:
        fail(f"--seed: must be an integer in [0, {MAX_SEED}], got {seed}")
    if max_vehicles is not None and max_vehicles < 1:
        fail(f"--max-vehicles: must be at least 1, got {max_vehicles}")
    if max_solutions is not None and max_solutions < 1:
        fail(f"--max-solutions: must be at least 1, got {max_solutions}")
    if executor not in ("local", "ray"):
        fail(f"--executor: must be 'local' or 'ray', got {executor!r}")
    if ray_address is not None and executor != "ray":
        fail("--ray-address: only used with --executor ray")
    if workers is None:
        workers = max(1, available_cpus() - 1)  # a container's quota, not the host's cores
    elif not 1 <= workers <= MAX_WORKERS:
        fail(f"--workers: must be in [1, {MAX_WORKERS}], got {workers}")
    return workers, check_solvers(solver, max_solutions)


def prepare(files: list[Path], out: Path, solvers: BatchSolvers, time_limit: float,
            seed: int, max_vehicles: int | None = None,
            max_solutions: int | None = None) -> tuple[list[BatchRow], list[_Pending]]:
    """Sort the files into already solved, rejected (with the reason) and to solve.

    Each file is parsed and its solver checked here, so a file the solver cannot take (or a
    TSP file, or a fleet cap the file cannot have, under ``--max-vehicles``) is reported at
    once and never becomes a job; one bad file does not stop the others. Each file's solver
    is the one ``solvers`` gives its problem kind (``auto`` checked as the one it picks).
    """
    rows: list[BatchRow] = []
    pending: list[_Pending] = []
    owners: dict[str, str] = {}
    for path in files:
        stem = output_stem(path.name)
        row = BatchRow(file=path.name, stem=stem, state=REJECTED)
        rows.append(row)
        if stem in owners:
            row.error = (f"its outputs would overwrite those of {owners[stem]} "
                         f"(both are named {stem}); rename one of them")
            continue
        if len(f"{stem}.json".encode()) > MAX_NAME_BYTES:
            row.error = (f"the name of its outputs ({stem}.json) would be longer than the "
                         f"{MAX_NAME_BYTES} bytes a file name may have; shorten the file name")
            continue
        if not path.is_file():  # never opened: a FIFO would block the run
            row.error = ("a link to nothing" if path.is_symlink() and not path.exists()
                         else "not a regular file") + "; not read"
            continue
        try:
            data = read_file_bytes(path)
        except InstanceError as exc:
            row.error = exc.message
            continue
        except OSError as exc:
            row.error = f"cannot read the file: {exc.strerror or exc}"
            continue
        row.input_sha256 = hashlib.sha256(data).hexdigest()
        done = next((found for name in solvers.names if (found := read_done(
            out, stem, batch_settings(name, time_limit, seed, row.input_sha256, max_vehicles,
                                      max_solutions))) is not None
                     and solvers.for_problem(found.get("problem", "")) == name), None)
        if done is not None and recheck_done(data, path.name, out, stem, done, max_vehicles):
            owners[stem] = path.name
            row.state = ALREADY_SOLVED
            row.problem, row.solver = done.get("problem"), done.get("solver")
            row.nodes = done.get("nodes")
            row.cost = done.get("cost")
            row.feasible = True
            row.wall_time = done.get("wall_time")
            row.outputs = [f"{stem}.{'tour' if row.problem == 'tsp' else 'sol'}",
                           f"{stem}.json"]
            _attach_reference(row, path, data, None, max_vehicles)
            continue
        document = batch_document(path.name, data, solvers, max_vehicles, max_solutions)
        if document is not None:  # a VROOM document: its solver and tasks, or why not
            row.problem, (row.solver, row.nodes, row.error) = "vrp", document
            if row.error is None:
                owners[stem], row.state = path.name, QUEUED
                pending.append(_Pending(row, path))
            continue
        try:
            instance = parse_instance_bytes(data, path.name)
            row.problem, row.nodes = instance.problem, instance.n
            instance = with_fleet(instance, max_vehicles)
            row.solver = solvers.for_problem(instance.problem)
            if row.solver is None:
                raise BatchSolverError(solvers.missing(instance.problem))
            get_solver(resolve(row.solver, instance, time_limit), problem=instance.problem,
                       nodes=instance.n, time_limit=time_limit,
                       has_coordinates=instance.coords is not None)
        except CosolveError as exc:
            row.error = str(exc)
        except OSError as exc:
            row.error = f"cannot read the file: {exc.strerror or exc}"
        except Exception as exc:  # a malformed file must not stop the other files
            row.error = f"could not read the instance: {type(exc).__name__}: {exc}"
        else:  # only a file that will have outputs claims its stem (a bad one does not)
            owners[stem] = path.name
            row.state = QUEUED
            pending.append(_Pending(row, path))
            _attach_reference(row, path, data, instance, max_vehicles)
    return rows, pending


def _attach_reference(row: BatchRow, path: Path, data: bytes, instance: Instance | None,
                      max_vehicles: int | None) -> None:
    """The known solution beside the file (CVRPLIB's NAME.sol, TSPLIB's NAME.opt.tour), if
    any, checked and costed in the instance's convention: the summary's gap to it. One that
    is not a feasible solution of the instance (under ``--max-vehicles`` too) is left out,
    with the reason in ``reference_note`` and a warning on stderr."""
    found = sibling_reference_file(path)
    if found is None:
        return
    row.reference_file = found.name
    try:
        if instance is None:  # an already solved file: parsed only when it has a reference
            instance = with_fleet(parse_instance_bytes(data, path.name), max_vehicles)
        row.reference = reference_cost(found, instance)
    except (CosolveError, OSError) as exc:
        row.reference_note = (f"{found.name} not used as the reference: "
                              f"{exc.message if isinstance(exc, InstanceError) else exc}")
        typer.echo(f"warning: {row.file}: {row.reference_note}", err=True)


# -- running -----------------------------------------------------------------------------
class _BatchProgress:
    """Files done / total, elapsed time and the number running, on stderr; draws nothing
    when disabled (``--json``, or stderr is not a terminal)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self._progress = Progress(
            TextColumn("[bold]solving"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TextColumn("files"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[running]} running"),
            console=Console(stderr=True),
            transient=True,
            disable=not enabled,
        )
        self._task: TaskID = self._progress.add_task("batch", total=total, running=0)

    def update(self, done: int, running: int) -> None:
        self._progress.update(self._task, completed=done, running=running)

    @contextmanager
    def shown(self) -> Iterator[_BatchProgress]:
        self._progress.start()
        try:
            yield self
        finally:
            self._progress.stop()


def _job_time(job: JobRecord) -> float | None:
    """Start to finish of a job without a solution (a solved one reports the solver's own
    wall time, the same figure an already-solved file shows from its JSON)."""
    if job.finished_at is not None and job.started_at is not None:
        return job.finished_at - job.started_at
    return None


def collect(store: JobStore, job: JobRecord, row: BatchRow, out: Path,
            max_vehicles: int | None = None) -> None:
    """Copy a final job into its row, and its solution out of the store into OUT.

    The row's state is set last, so a Ctrl-C while the files are written leaves the row
    not final (reported as interrupted) rather than claiming outputs that are not there.
    """
    row.cost = job.cost
    row.feasible = job.feasible
    row.wall_time = _job_time(job)
    row.error = job.error
    if job.state != SUCCEEDED:
        row.state = job.state  # failed, or cancelled by a Ctrl-C: partial is not an answer
        return
    try:
        payload = store.read_solution(job.id, job.attempt)
    except StoredSolutionError as exc:
        row.state, row.error = FAILED, str(exc)
        return
    if payload is None:
        row.state, row.error = FAILED, "the job succeeded but its solution file is missing"
        return
    row.wall_time = payload.get("wall_time", row.wall_time)
    row.solver = payload.get("solver", row.solver)  # the one auto picked, if it chose
    if row.feasible is False:
        row.error = "infeasible: " + "; ".join(payload.get("violations") or ["(no reason)"])
    payload["batch"] = batch_settings(job.solver, job.time_limit, job.seed, row.input_sha256,
                                      max_vehicles, job.max_solutions)
    try:
        row.outputs = write_outputs(out, row.stem, job.problem, payload)
    except OSError as exc:
        row.state, row.error = FAILED, f"cannot write to {out}: {exc.strerror or exc}"
        return
    row.state = SUCCEEDED


def run_jobs(store: JobStore, executor: Executor, pending: list[_Pending], solver: str,
             time_limit: float, seed: int, rejected: list[BatchRow], out: Path,
             show_progress: bool, max_vehicles: int | None = None,
             max_solutions: int | None = None) -> bool:
    """Submit the files as one batch and poll the store until every job is final.

    Returns False when Ctrl-C stopped it: jobs not yet final are then cancelled (a queued one
    at once, a running one at its solver's next check) and their rows say ``interrupted``.
    """
    batch_id = store.create_batch(solver, time_limit, len(pending),
                                  [{"filename": r.file, "error": r.error} for r in rejected],
                                  max_vehicles, max_solutions)
    waiting: dict[str, BatchRow] = {}
    progress = _BatchProgress(len(pending), show_progress)
    try:
        with progress.shown():
            for item in pending:
                row = item.row
                try:
                    filename, data = job_input(item.path.read_bytes(), row.file, max_vehicles)
                except OSError as exc:  # removed or locked since it was checked
                    row.state, row.error = FAILED, f"cannot read the file: {exc.strerror or exc}"
                    continue
                except CosolveError as exc:  # changed since it was checked
                    row.state, row.error = FAILED, str(exc)
                    continue
                try:
                    job = store.create(problem=row.problem or "", solver=row.solver or solver,
                                       time_limit=time_limit, seed=seed, filename=filename,
                                       data=data, nodes=row.nodes or 0, batch_id=batch_id,
                                       max_vehicles=max_vehicles, max_solutions=max_solutions)
                except StorageError as exc:  # a full disk under the work folder
                    row.state, row.error = FAILED, str(exc)
                    continue
                row.job_id = job.id
                waiting[job.id] = row
                executor.submit(job)
            while waiting:
                jobs, _ = store.list(batch_id=batch_id, limit=len(pending) + 1)
                running = 0
                for job in jobs:
                    if job.id in waiting and job.final:
                        collect(store, job, waiting.pop(job.id), out, max_vehicles)
                    elif job.id in waiting and job.state == RUNNING:
                        running += 1
                progress.update(len(pending) - len(waiting), running)
                if waiting:
                    time.sleep(POLL_S)
    except KeyboardInterrupt:
        # Every row not yet final: still waiting, never submitted, or stopped mid-collect.
        _interrupt(store, [item.row for item in pending if item.row.state == QUEUED], out,
                   max_vehicles)
        return False
    return True


def _interrupt(store: JobStore, rows: list[BatchRow], out: Path,
               max_vehicles: int | None = None) -> None:
    """Cancel the jobs of ``rows``, give the workers a moment to act on it, and keep any job
    that ended on its own meanwhile; the rest are reported as interrupted.

    A queued job is cancelled at once; a running one stops at its solver's next check. The
    short wait lets that happen (and lets the Ray executor's pump threads pass the cancel on
    to their tasks) before the executor is shut down; a second Ctrl-C skips it.
    """
    job_ids = [row.job_id for row in rows if row.job_id is not None]
    for job_id in job_ids:
        store.request_cancel(job_id)
    deadline = time.monotonic() + CANCEL_GRACE_S
    with suppress(KeyboardInterrupt):
        while time.monotonic() < deadline:
            if all(job is None or job.final for job in map(store.get, job_ids)):
                break
            time.sleep(POLL_S)
    for row in rows:
        job = store.get(row.job_id) if row.job_id is not None else None
        if job is not None and job.state in (SUCCEEDED, FAILED):
            collect(store, job, row, out, max_vehicles)  # it ended on its own, not the cancel
        if row.state not in (SUCCEEDED, FAILED):
            row.state, row.error = INTERRUPTED, "interrupted by Ctrl-C; run again to solve it"


def _start_executor(kind: str, store: JobStore, workers: int,
                    ray_address: str | None, device: str = "cpu") -> tuple[Executor, bool]:
    """The executor, and whether this command started Ray (so it should stop it again)."""
    started_ray = False
    if kind == "ray":
        try:
            import ray
        except ImportError:
            fail("--executor: ray needs Ray: pip install 'cosolve[ray]'", EXIT_SOLVER_FAILED)
        started_ray = not ray.is_initialized()
    try:
        executor = make_executor(kind, store, workers=workers, ttl_s=STORE_TTL_S,
                                 ray_address=ray_address, device=device)
    except Exception as exc:  # Ray cannot connect, a pool cannot start: not the user's input
        fail(f"--executor {kind}: cannot start: {type(exc).__name__}: {exc}", EXIT_SOLVER_FAILED)
    return executor, started_ray


def _stop_executor(executor: Executor, started_ray: bool) -> None:
    executor.shutdown()
    if started_ray:
        import ray

        ray.shutdown()


# -- reporting ---------------------------------------------------------------------------
def _fmt_time(seconds: float | None) -> str:
    return "–" if seconds is None else f"{seconds:.2f}"


def _fmt_feasible(row: BatchRow) -> str:
    return "–" if row.feasible is None else ("yes" if row.feasible else "no")


def totals(rows: list[BatchRow], ignored: int) -> dict[str, Any]:
    """Counts per state, and the costs of the feasible solutions per problem kind
    (``by_problem``); ``total_cost`` only when every solved file is of one kind."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
    gaps = [r.gap for r in rows if r.gap is not None]
    by_problem = kind_totals((r.problem, r.cost if r.ok and r.cost is not None
                              and math.isfinite(r.cost) else None, r.gap) for r in rows)
    return {
        "files": len(rows),
        "solved": sum(1 for r in rows if r.ok),
        "states": counts,
        # the known solutions beside the files are read, not ignored
        "ignored_files": ignored - sum(1 for r in rows if r.reference_file is not None),
        "total_cost": overall_cost(by_problem),
        "with_reference": len(gaps),
        "mean_gap_percent": sum(gaps) / len(gaps) if gaps else None,
        "by_problem": by_problem,
    }


def totals_line(summary: dict[str, Any]) -> str:
    """One line under the table: files per state, ignored files, total cost."""
    parts = [f"{n} {state.replace('_', ' ')}" for state, n in summary["states"].items()]
    line = f"{summary['files']} files: " + ", ".join(parts)
    ignored = summary["ignored_files"]
    if ignored:
        line += f"; {other_files(ignored)} ignored"
    solved = [k for k in summary.get("by_problem", {}).values() if k["solved"]]
    line += (f"; total cost {format_cost(summary['total_cost'])}" if len(solved) <= 1 else
             f"; total cost per problem: {kind_totals_text(summary['by_problem'], format_cost)}")
    if summary.get("with_reference"):
        line += (f"; mean gap {format_gap(summary['mean_gap_percent'])} to the known solutions "
                 f"of {summary['with_reference']} file"
                 f"{'' if summary['with_reference'] == 1 else 's'}")
    return line


def _cells(row: BatchRow, gaps: bool = False) -> list[str]:
    return [
        row.file,
        "–" if row.nodes is None else f"{row.nodes:,}",
        row.state.replace("_", " "),
        row.solver or "–",
        format_cost(row.cost),
        *([format_gap(row.gap)] if gaps else []),
        _fmt_feasible(row),
        _fmt_time(row.wall_time),
        row.error or "",
    ]


def _columns(rows: list[BatchRow]) -> tuple[tuple[str, ...], bool]:
    """The summary's columns, with the gap to the known solutions when a file has one, and
    the solver each file ran (auto's pick, or its kind's) after its state."""
    gaps = any(r.reference is not None for r in rows)
    columns = summary_columns(gaps, "time (s)")
    return (*columns[:3], "solver", *columns[3:]), gaps


def summary_table(rows: list[BatchRow], title: str, summary: dict[str, Any]) -> Table:
    """The stdout table; file names and errors are escaped so ``[...]`` in them stays text."""
    table = Table(title=escape(title), title_justify="left",
                  caption=escape(totals_line(summary)), caption_justify="left")
    columns, gaps = _columns(rows)
    for name in columns:
        table.add_column(name, justify="right" if name in ("nodes", "cost", "time (s)",
                                                           GAP_COLUMN)
                         else "left", overflow="fold")
    for row in rows:
        cells = [escape(c) for c in _cells(row, gaps)]
        if not row.ok and row.state != INTERRUPTED:
            cells[2] = f"[red]{cells[2]}[/]"
        table.add_row(*cells)
    return table


def summary_markdown(rows: list[BatchRow], title: str, summary: dict[str, Any]) -> str:
    """The same table as ``OUT/summary.md``, so the results outlive the terminal."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    columns, gaps = _columns(rows)
    lines = [
        f"# {title}",
        "",
        f"Written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC.",
        "",
        *markdown_table(columns, ([cell(c) for c in _cells(row, gaps)] for row in rows)),
        "",
        f"**Totals:** {totals_line(summary)}",
        "",
    ]
    return "\n".join(lines)


def _failure_line(rows: list[BatchRow]) -> str:
    bad = [r for r in rows if not r.ok and r.state != INTERRUPTED]
    shown = "; ".join(f"{r.file} ({r.state}: {r.error or 'no feasible solution'})"
                      for r in bad[:3])
    more = f"; and {len(bad) - 3} more" if len(bad) > 3 else ""
    return f"{len(bad)} of {len(rows)} files not solved: {shown}{more}"


# -- the command -------------------------------------------------------------------------
def batch(
    paths: Annotated[list[Path], typer.Argument(
        metavar="PATH...", help="Instance files (.tsp, .vrp, .vrptw, .json, optionally .gz) "
        "and folders of them, TSP, CVRP and CVRPTW mixed; their known solutions beside them "
        "(NAME.sol, NAME.opt.tour) give each a checked gap; a folder's other files are "
        "ignored.")],
    solver: Annotated[str, typer.Option(
        help="Solver name (see `cosolve solvers`) for every file, auto (picked per file by "
        "problem and size), or one per problem: tsp=ils,cvrp=pyvrp,cvrptw=auto.")],
    out: Annotated[Path, typer.Option(
        help="Folder for the solutions (<stem>.json plus .tour or .sol) and summary.md.")],
    time_limit: Annotated[float, typer.Option(help="Wall-clock limit per file, seconds.")] = 10.0,
    workers: Annotated[int | None, typer.Option(
        help="Files solved at the same time by the local executor; default cores − 1.")] = None,
    seed: Annotated[int, typer.Option(
        help="Seeds the solver's random choices for every file; a search the time limit "
        "stops may still vary.")] = 0,
    executor: Annotated[str, typer.Option(
        help="Where jobs run: local (process pool) or ray.")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        help="Ray cluster address; default: start a local Ray instance.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    max_vehicles: Annotated[int | None, typer.Option(
        help="CVRP and CVRPTW: at most this many vehicles for every file, in place of a file's "
             "VEHICLES; a TSP file is then rejected.")] = None,
    max_solutions: Annotated[int | None, typer.Option(
        help="A budget in solutions for every file, for solvers that take one (polynet): "
             "stop after decoding this many (rounded up to a whole pass over the symmetries "
             "decoded together, at most 7 more), or at the time limit if that comes "
             "first.")] = None,
    device: Annotated[str, DEVICE_OPTION] = "cpu",
) -> None:
    """Solve every instance file of PATH... as jobs; resumable (files solved in OUT are
    skipped). Totals are per problem kind."""
    # under --json a refusal before the run prints the batch's document with no rows and
    # the error, as the other commands do
    document = _json_document(paths, out, solver, time_limit, seed, executor, max_vehicles,
                              [], totals([], 0), completed=True, max_solutions=max_solutions)
    with json_failures(as_json, **document):
        workers, solvers = _check_options(solver, time_limit, seed, workers, executor,
                                          ray_address, max_vehicles, max_solutions)
        resolved = check_device(device)
        files, ignored = check_inputs(paths, out)
    document["totals"] = totals([], ignored)
    try:
        with json_failures(as_json, **document):  # e.g. an executor that cannot start
            rows, completed = _solve_all(files, out, solvers, time_limit, seed, workers,
                                         executor, ray_address,
                                         show_progress=not as_json and sys.stderr.isatty(),
                                         max_vehicles=max_vehicles, device=resolved,
                                         max_solutions=max_solutions)
    except KeyboardInterrupt:  # while reading the files or starting the executor
        with json_failures(as_json, **{**document, "interrupted": True}):
            fail("interrupted before the batch started; run the same command again",
                 EXIT_INTERRUPTED)
    _report(rows, ignored, completed, paths, out, solvers.text, time_limit, seed, executor,
            as_json, max_vehicles, max_solutions)


def _solve_all(files: list[Path], out: Path, solvers: BatchSolvers, time_limit: float, seed: int,
               workers: int, executor: str, ray_address: str | None,
               show_progress: bool,
               max_vehicles: int | None = None,
               device: str = "cpu",
               max_solutions: int | None = None) -> tuple[list[BatchRow], bool]:
    """Prepare, run and collect; returns the rows and False if Ctrl-C stopped the jobs."""
    rows, pending = prepare(files, out, solvers, time_limit, seed, max_vehicles, max_solutions)
    if not pending:
        return rows, True
    rejected = [r for r in rows if r.state == REJECTED]
    store = JobStore(out / STORE_FOLDER)
    store.purge_expired()
    runner, started_ray = _start_executor(executor, store, workers, ray_address, device)
    try:
        completed = run_jobs(store, runner, pending, solvers.text, time_limit, seed, rejected, out,
                             show_progress, max_vehicles, max_solutions)
    finally:
        _stop_executor(runner, started_ray)
    return rows, completed


def _json_document(paths: list[Path], out: Path, solver: str, time_limit: float, seed: int,
                   executor: str, max_vehicles: int | None, rows: list[BatchRow],
                   summary: dict[str, Any], completed: bool,
                   max_solutions: int | None = None) -> dict[str, Any]:
    """What ``--json`` prints: the batch's settings, its totals and one row per file."""
    return {
        "dir": str(paths[0]) if paths else None,  # the first, as when one folder was given
        "paths": [str(p) for p in paths],
        "out": str(out),
        "solver": solver,
        "time_limit": time_limit,
        "seed": seed,
        "max_vehicles": max_vehicles,
        "max_solutions": max_solutions,
        "executor": executor,
        "interrupted": not completed,
        "totals": summary,
        "rows": [{**{k: v for k, v in asdict(r).items() if k not in ("stem", "input_sha256")},
                  "gap_percent": r.gap} for r in rows],
    }


def _report(rows: list[BatchRow], ignored: int, completed: bool, paths: list[Path], out: Path,
            solver: str, time_limit: float, seed: int, executor: str, as_json: bool,
            max_vehicles: int | None = None, max_solutions: int | None = None) -> None:
    """The table (or JSON) on stdout, summary.md in OUT, and the exit code."""
    summary = totals(rows, ignored)
    fleet = "" if max_vehicles is None else f", at most {max_vehicles} vehicles"
    budget = "" if max_solutions is None else f", at most {max_solutions} solutions"
    title = (f"cosolve batch {' '.join(map(str, paths))}: solver {solver}, time limit "
             f"{time_limit:g} s, seed {seed}{fleet}{budget}, executor {executor}")
    markdown_error = None
    try:
        atomic_write(out / SUMMARY_FILE, summary_markdown(rows, title, summary))
    except OSError as exc:
        markdown_error = f"--out: cannot write {out / SUMMARY_FILE}: {exc.strerror or exc}"
    if as_json:
        typer.echo(json.dumps(jsonable(_json_document(
            paths, out, solver, time_limit, seed, executor, max_vehicles, rows, summary,
            completed, max_solutions)), indent=2))
    else:
        stdout_console().print(summary_table(rows, title, summary))
    if markdown_error is not None:
        fail(markdown_error, EXIT_SOLVER_FAILED)
    if not completed:
        fail(f"interrupted: {sum(1 for r in rows if r.ok)} of {len(rows)} files solved; run "
              "the same command again to solve the rest", EXIT_INTERRUPTED)
    if rows and all(r.state == REJECTED for r in rows):
        # no file could even be given to the solver: the input's fault, as the API's 422 for
        # a batch of which no file can be read: exit 2, not a solver failure
        fail("no file of the batch can be solved: " + _failure_line(rows))
    if not all(r.ok for r in rows):
        fail(_failure_line(rows), EXIT_SOLVER_FAILED)
