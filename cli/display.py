"""What the CLI shows: a live progress display on stderr and result tables on stdout.

Kept apart from the commands so that ``cli/main.py`` reads as "parse, solve, report". Progress
goes to stderr and results to stdout, so ``cosolve solve ... > result.txt`` still shows the
progress bar in the terminal and leaves a clean file.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from solvers.contract import ProgressEvent, SolverSpec
from solvers.routing.problem import Instance
from solvers.routing.solution import Solution
from solvers.routing.solve import Comparison

#: Solves shorter than this finish before a progress bar would be worth drawing.
MIN_SECONDS_FOR_PROGRESS = 1.0

CONVENTION_WORDS = {
    "exact": "float Euclidean",
    "EUC_2D": "Euclidean rounded to the nearest integer (TSPLIB nint)",
    "CEIL_2D": "Euclidean rounded up",
    "FLOOR_2D": "Euclidean rounded down (LKH-3; Solomon files on coordinates × SCALE)",
    "ATT": "TSPLIB pseudo-Euclidean (ATT)",
    "EXPLICIT": "explicit distance matrix",
}


def format_cost(cost: float | None) -> str:
    """Integers as integers (TSPLIB/CVRPLIB costs), floats with four decimals."""
    if cost is None or not math.isfinite(cost):
        return "–"
    if float(cost).is_integer():
        return f"{int(cost):,}"
    return f"{cost:,.4f}"


def format_gap(gap: float | None) -> str:
    return "–" if gap is None else f"{gap:+.3f} %"


def format_max_nodes(spec: SolverSpec) -> str:
    return ", ".join(f"{p} {spec.max_nodes[p]:,}" for p in spec.problems if p in spec.max_nodes)


class _ElapsedBar(BarColumn):
    """A bar that fills with wall-clock time against the limit, not with reported work.

    Solvers report only when they improve, so a bar driven by events would stall; the clock
    keeps moving between reports.
    """

    def render(self, task: Task) -> ProgressBar:
        limit = float(task.total or 1.0)
        done = min(limit, _elapsed(task))
        return ProgressBar(total=limit, completed=done, width=self.bar_width,
                           pulse=False, animation_time=task.get_time(),
                           style=self.style, complete_style=self.complete_style,
                           finished_style=self.finished_style, pulse_style=self.pulse_style)


class _ClockColumn(ProgressColumn):
    """``elapsed / limit s``."""

    def render(self, task: Task) -> Text:
        return Text(f"{_elapsed(task):6.1f} / {float(task.total or 0):g} s")


def _elapsed(task: Task) -> float:
    return float(task.elapsed or 0.0) + float(task.fields.get("offset", 0.0))


class SolveProgress:
    """Live bars, one per solver, fed by the solvers' progress callbacks.

    Used as a context manager and passed as the ``progress`` callback. When disabled (JSON
    output, stderr not a terminal, a short time limit) it accepts events and draws nothing.
    """

    def __init__(self, time_limit: float, enabled: bool, console: Console | None = None) -> None:
        self.time_limit = time_limit
        self.enabled = enabled and time_limit > MIN_SECONDS_FOR_PROGRESS
        self._tasks: dict[str, Any] = {}
        self._progress = Progress(
            TextColumn("[bold]{task.description:<16}"),
            _ElapsedBar(bar_width=30),
            _ClockColumn(),
            TextColumn("best {task.fields[best]}"),
            console=console or Console(stderr=True),
            transient=True,
            refresh_per_second=8,
            disable=not self.enabled,
        )

    def __enter__(self) -> SolveProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def start(self, solver: str, already_elapsed: float = 0.0) -> None:
        """Begin a solver's bar (and freeze any other, since solvers run one at a time)."""
        for name, task_id in self._tasks.items():
            if name != solver:
                self._progress.stop_task(task_id)
        if solver not in self._tasks:
            self._tasks[solver] = self._progress.add_task(
                solver, total=self.time_limit, best="–", offset=already_elapsed
            )

    def __call__(self, event: ProgressEvent) -> None:
        if event.solver not in self._tasks:
            self.start(event.solver, already_elapsed=event.elapsed)
        task_id = self._tasks[event.solver]
        if event.best_cost is not None:
            self._progress.update(task_id, best=format_cost(event.best_cost))
        if event.message in ("done", "constructed"):
            self._progress.stop_task(task_id)


def solvers_table(specs: list[SolverSpec], problem: str | None = None) -> Table:
    table = Table(title="Registered solvers", title_justify="left")
    table.add_column("name", style="bold", no_wrap=True,
                     min_width=max((len(s.name) for s in specs), default=4))
    table.add_column("problems")
    table.add_column("kind")
    table.add_column("max nodes")
    table.add_column("available / reason")
    for spec in specs:
        reason = spec.unavailable_reason(problem)
        table.add_row(
            spec.name,
            ", ".join(spec.problems),
            spec.kind,
            format_max_nodes(spec) or "no limit",
            "[green]yes[/]" if reason is None else f"[red]no[/]: {reason}",
        )
    return table


def solution_summary(
    instance: Instance,
    solution: Solution,
    time_limit: float,
    reference: float | None,
    gap: float | None,
    written_to: str | None,
    reference_source: str | None = None,
) -> Table:
    """Two-column summary of one solve; ``reference_source`` says where the reference came
    from when a file gave it."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("instance", f"{instance.name} ({instance.problem.upper()}, {instance.n:,} nodes)")
    grid.add_row("solver", solution.solver)
    grid.add_row("cost", format_cost(solution.cost))
    words = CONVENTION_WORDS.get(solution.distance)
    grid.add_row("distance", f"{solution.distance} — {words}" if words else solution.distance)
    if solution.feasible:
        grid.add_row("feasible", "[green]yes[/]")
    else:
        grid.add_row("feasible", "[red]no[/]: " + "; ".join(solution.violations))
    if solution.problem in ("cvrp", "cvrptw"):
        grid.add_row("routes", str(sum(1 for r in solution.routes if r)))
    grid.add_row("time", f"{solution.wall_time:.2f} s (limit {time_limit:g} s)")
    if reference is not None:
        grid.add_row("reference", format_cost(reference) + _source_words(reference_source))
        grid.add_row("gap", format_gap(gap))
    if written_to is not None:
        grid.add_row("written to", written_to)
    return grid


#: Rows of the per-route table before the rest is summed up in one "… N more" line.
MAX_ROUTE_ROWS = 25


def routes_table(plan: dict[str, Any], max_rows: int = MAX_ROUTE_ROWS) -> Table | None:
    """``--routes``: one row per route of a solution document (``solution_to_dict``'s
    ``route_details``, recomputed from the instance): stops, load / capacity, distance,
    duration and, with time windows, waiting; the first ``max_rows`` routes, then a count
    of the others, and the totals. None when the plan has no details (it cannot be read
    against the instance; its violations say why)."""
    details = plan.get("route_details")
    summary = plan.get("summary")
    if details is None or summary is None:
        return None
    timed = summary.get("total_waiting") is not None
    units = plan.get("units") or {}
    table = Table(title=f"Routes ({summary['vehicles_used']:,} used)", title_justify="left",
                  caption=f"units: {units['distance']}" if units else None,
                  caption_justify="left")
    columns = ["route", "stops", "load / cap.", "distance", "duration"]
    for name in columns + (["waiting"] if timed else []):
        table.add_column(name, justify="left" if name == "load / cap." else "right")
    for d in details[:max_rows]:
        load = "–" if d["load"] is None else f"{d['load']:,} / {d['capacity']:,}"
        row = [str(d["route"]), f"{d['stops']:,}", load, format_cost(d["distance"]),
               format_cost(d["duration"])]
        table.add_row(*row, *([format_cost(d["waiting"])] if timed else []))
    if len(details) > max_rows:
        table.add_row(f"… {len(details) - max_rows:,} more", "", "", "", "",
                      *([""] if timed else []))
    total_load = summary["total_load"]
    table.add_section()
    table.add_row("total", f"{sum(d['stops'] for d in details):,}",
                  "–" if total_load is None else f"{total_load:,}",
                  format_cost(summary["total_distance"]), format_cost(summary["total_duration"]),
                  *([format_cost(summary["total_waiting"])] if timed else []),
                  style="bold")
    return table


def _source_words(source: str | None) -> str:
    """" (from FILE, checked)" for a reference read from a known solution's file."""
    if source is None or source == "--reference":
        return ""
    return f" (from {Path(source).name}, checked)"


def comparison_table(comparison: Comparison, reference_source: str | None = None) -> Table:
    inst = comparison.instance
    title = (
        f"{inst.name}: {inst.problem.upper()}, {inst.n:,} nodes, distance {inst.distance}, "
        f"time limit {comparison.budget.time_limit:g} s each"
    )
    fleet = getattr(inst, "max_vehicles", None)
    if fleet is not None:
        title += f", at most {fleet:,} vehicles"
    if comparison.reference is not None:
        title += f", reference {format_cost(comparison.reference)}"
        title += _source_words(reference_source)
    table = Table(title=title, title_justify="left")
    for name in ("solver", "cost", "gap to best", "gap to ref.", "time (s)", "feasible", "error"):
        table.add_column(name, justify="right" if name in ("cost", "time (s)") else "left")
    for row in comparison.rows:
        sol = row.solution
        table.add_row(
            row.solver,
            format_cost(row.cost),
            format_gap(row.gap_to_best),
            format_gap(row.gap_to_reference),
            f"{sol.wall_time:.2f}" if sol else "–",
            ("yes" if row.feasible else "[red]no[/]") if sol else "–",
            row.error or ("; ".join(sol.violations) if sol and sol.violations else ""),
        )
    return table
