"""``cosolve schedule …``: the workflow-scheduling endpoints' twins on the command line.

    cosolve schedule simulate [--workflows DIR_OR_FILES] [--pool 6x4] [--rate 5.4[,9]]
                              [--workflows-count N] [--policies goodrl,heft,eft] [--seed S]
                              [--gantt DIR] [--skip-bad-files] [--json]
    cosolve schedule policies [--json]
    cosolve schedule session [--pool 6x4] [--policy heft_slack] [--seed S] [--events FILE]

Without ``--workflows`` the four classic shapes (Montage, CyberShake, Inspiral, SIPHT) are
generated (``--shapes``, ``--tasks``). Exit codes as everywhere: 0 success, 2 bad input, 1 when
no policy could run or a schedule failed its independent check (``--check``).
"""

from __future__ import annotations

import functools
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_SOLVER_FAILED,
    comma_names,
    fail,
    json_failures,
    jsonable,
    stdout_console,
)
from jobs.scheduling import SessionEvents, WorkflowArrived
from jobs.simulation import Simulation, overload_warnings
from jobs.validation import InvalidFieldsError, parse_strict
from solvers.contract import MAX_SEED
from solvers.errors import (
    CheckFailedError,
    InstanceError,
    SolverUnavailableError,
    UnknownSolverError,
)
from solvers.routing.io.documents import load_json
from solvers.scheduling.registry import (
    DEFAULT_POLICIES,
    POLICIES,
    RECOMMENDED_POLICY,
    get_policy,
    policy_names,
    run_policies,
)
from solvers.scheduling.render import GANTT_WORKFLOWS, gantt_svg
from solvers.scheduling.session import Arrived, EventError, Finished, Session
from solvers.scheduling.simulator import RATE_RANGE, Arrivals, SimResult, VMPool, parse_pool
from solvers.scheduling.workflow import (
    GENERATORS,
    Workflow,
    arrival_workflow,
    generate_set,
    load_workflows,
    parse_workflow_bytes,
)

app = typer.Typer(
    name="schedule",
    help="Dynamic workflow scheduling: simulate policies (GOODRL, HEFT, EFT, …) on a stream.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _rates(text: str) -> tuple[float, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]  # in order, repeats kept
    if not parts:
        fail("--rate: give at least one value")
    try:
        rates = tuple(float(r) for r in parts)
    except ValueError:
        fail(f"--rate: {text!r} is not a comma-separated list of numbers (workflows per hour)")
    lo, hi = RATE_RANGE
    if any(not (math.isfinite(r) and lo <= r <= hi) for r in rates):
        fail(f"--rate: every rate must be in [{lo:g}, {hi:g}] workflows per hour, got {text}")
    return rates


def _templates(workflows: str | None, shapes: str, tasks: int, seed: int,
               skipped: list[tuple[Path, str]] | None = None) -> list[Workflow]:
    """The templates: generated shapes, or the given files and folders (bad files left out
    and listed in ``skipped`` when it is given)."""
    if workflows is None:
        kinds = comma_names(shapes, "--shapes", repeats=True)
        for k in kinds:
            if k not in GENERATORS:
                fail(f"--shapes: unknown shape {k!r}; known: {', '.join(GENERATORS)}")
        try:
            return generate_set(kinds, tasks, seed)
        except InstanceError as exc:
            fail(f"--tasks: {exc.message}")
    paths = [Path(p) for p in comma_names(workflows, "--workflows", repeats=True)]
    for p in paths:
        if not p.exists():
            fail(f"--workflows: no such file or folder: {p}")
    try:
        loaded = load_workflows(paths, skipped)
    except InstanceError as exc:
        fail(f"--workflows: {exc.field}: {exc.message}")
    except OSError as exc:
        fail(f"--workflows: cannot read: {exc.strerror or exc}")
    if not loaded:
        fail(f"--workflows: every workflow file was skipped as bad ({len(skipped or [])}); "
             "nothing to simulate")
    return loaded


def _pool(text: str) -> VMPool:
    try:
        return parse_pool(text, "--pool")
    except InstanceError as exc:
        fail(f"{exc.field}: {exc.message}")


#: The longest stream the CLI runs in one go (50 times the API's cap: minutes per policy at
#: the simulator's 3,000-5,000 workflows a second, and memory for every workflow's record).
MAX_CLI_WORKFLOWS = 1_000_000
#: Streams up to this many workflows (the API's cap) have every schedule checked by default;
#: a longer one only with --check, as its record takes memory (about 85 MB per 20,000
#: classic workflows and policy, 4 GB at the 1,000,000 cap).
CHECK_WORKFLOWS = 20_000


def _schedule_json(policy: str, result: SimResult, pool: VMPool,
                   templates: list[Workflow]) -> str:
    """One policy's whole schedule, as ``--schedule`` writes it (built when written)."""
    return json.dumps({"policy": policy, **pool.describe(), **result.schedule_table(templates)})


def _results_table(title: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("policy", "mean flowtime (s)", "gap to best", "makespan (s)",
                "utilization", "wall (s)", "note"):
        table.add_column(col, justify="left" if col in ("policy", "note") else "right")
    for r in rows:
        if r.get("mean_flowtime") is None:
            table.add_row(r["policy"], "–", "–", "–", "–", "–", r["error"] or "")
            continue
        note = f"p50 {r['latency_p50_ms']:.2f} ms/decision" if "latency_p50_ms" in r else ""
        table.add_row(r["policy"], f"{r['mean_flowtime']:,.1f}",
                      f"{r['gap_to_best']:+.2f} %", f"{r['makespan']:,.0f}",
                      f"{r['utilization']:.3f}", f"{r['wall_time']:.2f}", note)
    return table


def _output_folder(option: str, folder: Path | None) -> None:
    """A folder the charts or schedules go into: made when its parent exists."""
    if folder is None or folder.is_dir():
        return
    if folder.exists():
        fail(f"{option}: {folder} is a file; give a folder")
    if not folder.parent.is_dir():
        fail(f"{option}: folder {folder.parent} does not exist")
    try:
        folder.mkdir()
    except OSError as exc:
        fail(f"{option}: cannot make folder {folder}: {exc.strerror or exc}")


def _policy_rows(runs: list[Any], vm_pool: VMPool, templates: list[Workflow],
                 gantt: Path | None, schedule: Path | None
                 ) -> tuple[list[dict[str, Any]], list[tuple[str, Path, Callable[[], str]]]]:
    """One row per policy run, and the chart and schedule files to write (once the result is
    known, so a file that cannot be written still leaves the results)."""
    rows: list[dict[str, Any]] = []
    files: list[tuple[str, Path, Callable[[], str]]] = []
    for r in runs:
        row: dict[str, Any] = {"policy": r.name, "kind": r.kind, "error": r.error,
                               "gap_to_best": r.gap_to_best,
                               "checked": (None if r.check is None and r.violations is None
                                           else r.violations is None)}
        if r.violations is not None:
            row["violations"] = r.violations
        if r.result is not None:
            row.update(r.result.summary())
            result = r.result
            if gantt is not None:
                path = gantt / f"gantt_{r.name}.svg"
                files.append(("--gantt", path,
                              functools.partial(gantt_svg, result, vm_pool, templates)))
                row["gantt"] = str(path)
            if schedule is not None:
                path = schedule / f"schedule_{r.name}.json"
                files.append(("--schedule", path, functools.partial(
                    _schedule_json, r.name, result, vm_pool, templates)))
                row["schedule"] = str(path)
        rows.append(row)
    return rows, files


@app.command("simulate")
def simulate_command(
    workflows: Annotated[str | None, typer.Option(
        help="Workflow files or folders, comma-separated: Pegasus DAX (.xml/.dax) or "
        "WfCommons .json, optionally .gz. Default: generated shapes.")] = None,
    pool: Annotated[str, typer.Option(help="VM pool: TYPESxEACH (6x4, 5x5) or vCPUs "
                                      "'8,16,96'.")] = "6x4",
    rate: Annotated[str, typer.Option(help="Arrival rate(s) in workflows per hour; "
                                      "'5.4,9' changes it mid-stream (equal segments of the "
                                      "stream: at most one rate per workflow).")] = "5.4",
    workflows_count: Annotated[int, typer.Option(help="Workflows in the stream.")] = 1000,
    policies: Annotated[str, typer.Option(help="Comma-separated policy names.")] =
        ",".join(DEFAULT_POLICIES),
    seed: Annotated[int, typer.Option(help="Seeds arrivals, workflow types, ties.")] = 0,
    shapes: Annotated[str, typer.Option(help="Generated shapes when --workflows is not "
                                        "given.")] = ",".join(GENERATORS),
    tasks: Annotated[int, typer.Option(
        help="Tasks per generated workflow, 10 to 5,000 (the API's generator.tasks allows "
        "10 to 2,000); 30 gives the classic 25/30/30/29-task shapes.")] = 30,
    template_seed: Annotated[int, typer.Option(
        help="Seeds the generated workflows' runtime noise (the API's generator.seed).")] = 0,
    latency: Annotated[bool, typer.Option(help="Measure the time of each decision.")] = False,
    gantt: Annotated[Path | None, typer.Option(
        help="Write a Gantt chart SVG per policy into this folder.")] = None,
    schedule: Annotated[Path | None, typer.Option(
        help="Write every policy's whole schedule as JSON into this folder "
        "(schedule_<policy>.json: workflows' arrival and finish, tasks' VM, ready, start "
        "and finish), to check or replay it.")] = None,
    check: Annotated[bool | None, typer.Option(
        "--check/--no-check",
        help="Verify every schedule with the independent checker and recompute its "
        f"flowtimes (default: on for streams up to {CHECK_WORKFLOWS:,} workflows; the "
        "record and the check take about 10 KB a workflow at their peak). A failed check "
        "withholds the row's numbers and exits 1.")] = None,
    skip_bad_files: Annotated[bool, typer.Option(
        "--skip-bad-files", help="Leave out the workflow files of --workflows that cannot be "
        "read as workflows (each is listed with the reason) instead of stopping at the "
        "first.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] =
        False,
) -> None:
    """Run every policy on the same seeded stream and report mean flowtime and more."""
    with json_failures(as_json, best_policy=None, rows=[]):
        if not 1 <= workflows_count <= MAX_CLI_WORKFLOWS:
            fail(f"--workflows-count: must be in [1, {MAX_CLI_WORKFLOWS:,}], got {workflows_count}"
                 " (a larger study is several seeded runs)")
        if not 0 <= seed <= MAX_SEED:
            fail(f"--seed: must be an integer in [0, {MAX_SEED}], got {seed}")
        if not 0 <= template_seed <= MAX_SEED:
            fail(f"--template-seed: must be an integer in [0, {MAX_SEED}], got {template_seed}")
        names = comma_names(policies, "--policies")
        for n in names:
            if n not in POLICIES:
                fail(f"--policies: unknown policy {n!r}; known: {', '.join(policy_names())}")
        vm_pool = _pool(pool)
        rates = _rates(rate)
        try:
            arrivals = Arrivals(workflows_count, rates)
        except InstanceError as exc:  # more rates than workflows: refused, not run in part
            fail(f"--rate: {exc.message} (--workflows-count {workflows_count})")
        _output_folder("--gantt", gantt)
        _output_folder("--schedule", schedule)
        # the stream's seed does not reshape the templates: the same --seed gives the API's numbers
        skipped: list[tuple[Path, str]] = []
        templates = _templates(workflows, shapes, tasks, template_seed,
                               skipped if skip_bad_files else None)
        for path, reason in skipped:  # said before the run, which may take minutes
            typer.echo(f"skipped {path}: {reason}", err=True)
    try:
        runs = run_policies(templates, vm_pool, arrivals, names, seed,
                            record=gantt is not None or schedule is not None,
                            measure_latency=latency,
                            check=workflows_count <= CHECK_WORKFLOWS if check is None else check,
                            # the charts alone draw the first few workflows: keep only those
                            keep_workflows=GANTT_WORKFLOWS if schedule is None else None)
    except KeyboardInterrupt:  # said, with a document under --json, as every exit 130
        with json_failures(as_json, best_policy=None, rows=[], interrupted=True):
            fail("interrupted before every policy had run; nothing to report",
                 EXIT_INTERRUPTED)
    rows, files = _policy_rows(runs, vm_pool, templates, gantt, schedule)
    ok = [r for r in rows if r.get("mean_flowtime") is not None]
    best = min(ok, key=lambda r: r["mean_flowtime"])["policy"] if ok else None
    # the generator's settings as the API echoes them: every seed the numbers depend on
    generator = (None if workflows is not None else
                 {"shapes": comma_names(shapes, "--shapes", repeats=True), "tasks": tasks,
                  "seed": template_seed})
    body = {**vm_pool.describe(), "rates": list(rates), "workflows_count": workflows_count,
            "seed": seed, "generator": generator, "workflows": [w.describe() for w in templates],
            "best_policy": best, "rows": rows,
            "warnings": overload_warnings(runs, Simulation(templates, vm_pool, arrivals, names,
                                                          seed)),
            "skipped": [{"file": str(path), "reason": reason} for path, reason in skipped]}
    failed = [r["policy"] for r in rows if r["checked"] is False]
    if failed:  # the document says why it exits 1, as every --json failure does
        body["error"] = f"the schedule of {', '.join(failed)} failed its independent check"
    elif best is None:
        body["error"] = "no policy could run"
    title = (f"{workflows_count} workflows on {vm_pool.label} at "
             f"{'→'.join(f'{r:g}' for r in rates)}/h, seed {seed}")
    # a file that cannot be written still leaves the results on stdout (and the document
    # under --json), as `solve --out` does
    with json_failures(as_json, **body):
        for option, path, text in files:
            try:
                path.write_text(text())
            except OSError as exc:
                if not as_json:
                    stdout_console().print(_results_table(title, rows))
                fail(f"{option}: cannot write {path}: {exc.strerror or exc}")
    if as_json:
        typer.echo(json.dumps(jsonable(body), indent=2))
    else:
        stdout_console().print(_results_table(title, rows))
        for warning in body["warnings"]:
            typer.echo(f"warning: {warning['detail']}", err=True)
    if "error" in body:
        fail(body["error"], EXIT_SOLVER_FAILED)


@app.command("policies")
def policies_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] =
        False,
) -> None:
    """List the scheduling policies and whether they can run here."""
    rows = [{"name": s.name, "kind": s.kind, "available": s.available,
             "unavailable_reason": s.unavailable_reason(), "description": s.description}
            for s in POLICIES.values()]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="scheduling policies", title_justify="left")
    for col in ("name", "kind", "available", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["kind"], "yes" if r["available"] else
                      f"no: {r['unavailable_reason']}", r["description"])
    stdout_console().print(table)


#: The event fields that give an arrival's workflow; a CLI event may give a "file" instead.
_SOURCES = ("workflow", "document", "shape")


def _local_file(ev: dict[str, Any], where: str) -> Workflow | InstanceError:
    """The workflow of an event's local ``file``, read as ``simulate --workflows`` reads one
    (format from the extension, .gz with the same decompression cap), or the problem to report
    at the event's turn, as HTTP reports a bad document after applying the events before it
    (fields within the event: ``file``, ``tasks``). The event is left valid either way (a
    placeholder shape that the file's workflow replaces). Only a ``file`` on another kind of
    event is an InstanceError at once (naming ``events[i].file``)."""
    if ev.get("type") != "workflow_arrived":
        raise InstanceError(f"{where}.file", "only a workflow_arrived event takes a file")
    raw = ev.pop("file")
    others = [k for k in _SOURCES if k in ev]
    extras = [k for k in ("tasks", "seed", "format") if k in ev]
    for key in others + extras:
        ev.pop(key)
    ev["shape"] = "montage"
    if others:
        return InstanceError(others[0], "give one of file, workflow, document or shape")
    if extras:
        # refused beside a file, as beside a document, rather than ignored
        return InstanceError(extras[0], f"{extras[0]} does not apply to a file (its format comes "
                             "from its extension; tasks and seed size and seed a generated "
                             "shape)")
    if not isinstance(raw, str) or not raw:
        return InstanceError("file", f"expected a path, got {raw!r}")
    try:
        data = Path(raw).read_bytes()
    except OSError as exc:
        return InstanceError("file", f"cannot read {raw}: {exc.strerror or exc}")
    try:
        return parse_workflow_bytes(data, Path(raw).name)
    except InstanceError as exc:
        field = "" if exc.field == "file" else f".{exc.field}"
        return InstanceError(f"file{field}", f"{raw}: {exc.message}")


def _raise(exc: Exception) -> Workflow:
    raise exc


def _session_line(session: Session, obj: Any) -> dict[str, Any]:
    """One input line's answer: the assignments, or the problem (with the answers of the
    events before a refused one, which stay applied), as the HTTP session answers."""
    if not isinstance(obj, dict):
        return {"error": {"field": "line", "detail": "expected a JSON object: an event, "
                          "{\"events\": [...]} or {\"type\": \"state\"}"}}
    # the wrapper is validated whole, as HTTP validates its body: an unknown key beside
    # "events" is refused, not dropped (so '{"events": [...], "typo": 1}' is not applied)
    wrapper = obj if "events" in obj else {"events": [obj]}
    events = wrapper["events"]
    files: dict[int, Workflow | InstanceError] = {}
    for i, ev in enumerate(events if isinstance(events, list) else []):
        if isinstance(ev, dict) and "file" in ev:
            try:
                files[i] = _local_file(ev, f"events[{i}]")
            except InstanceError as exc:
                return {"error": {"field": exc.field, "detail": f"{exc.field}: {exc.message}"}}

    def source(i: int, ev: WorkflowArrived) -> Any:
        read = files.get(i)
        if isinstance(read, InstanceError):
            return functools.partial(_raise, read)  # refused in its turn, after the ones before
        return read if read is not None else functools.partial(arrival_workflow,
                                                                **ev.arrival_sources())

    try:
        body = parse_strict(SessionEvents, json.dumps(wrapper).encode())
    except InvalidFieldsError as exc:
        return {"error": {"field": exc.field, "detail": exc.detail}}
    batch = [Arrived(ev.time, source(i, ev), ev.workflow_id)
             if isinstance(ev, WorkflowArrived) else Finished(ev.time, ev.workflow_id, ev.task_id)
             for i, ev in enumerate(body.events)]
    before = session.ledger.checked
    try:
        ids, out = session.apply(batch)
    except EventError as failed:
        if isinstance(failed.cause, CheckFailedError):
            # a bug of ours: said, with the checked answers before it; the session then ends
            return {"error": {"field": None, "detail": f"{failed.cause} (the session ends)",
                              "violations": failed.cause.violations,
                              "applied": failed.index, "workflow_ids": failed.workflow_ids,
                              "assignments": [a.to_dict() for a in failed.assignments]}}
        if not isinstance(failed.cause, InstanceError):
            raise failed.cause from None
        field = f"events[{failed.index}].{failed.cause.field}"
        return {"error": {"field": field, "detail": f"{field}: {failed.cause.message}",
                          "applied": failed.index, "workflow_ids": failed.workflow_ids,
                          "assignments": [a.to_dict() for a in failed.assignments]}}
    return {"now": session.state.now, "workflow_ids": ids,
            "assignments": [a.to_dict() for a in out],
            "checked": session.ledger.checked - before}


@app.command("session")
def session_command(
    pool: Annotated[str, typer.Option(help="VM pool: TYPESxEACH (6x4, 5x5) or vCPUs "
                                      "'8,16,96'.")] = "6x4",
    policy: Annotated[str, typer.Option(
        help="The policy deciding the assignments.")] = RECOMMENDED_POLICY,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="The policy's seed.")] = 0,
    events: Annotated[Path | None, typer.Option(
        help="Read the events from this file instead of standard input.")] = None,
) -> None:
    """A live scheduling session on standard input and output (the twin of
    POST /v1/scheduling/sessions): each input line is an event, {"events": [...]} as the
    HTTP session takes them, or {"type": "state"}; each gets one JSON line back, the
    assignments to carry out or {"error": ...}. An arrival may name a local workflow "file"
    instead of "workflow"/"document"/"shape", read as --workflows reads one (.xml/.dax DAX or
    .json WfCommons by its extension, optionally .gz). Exit code 2 when a line was refused
    (the later lines still ran), 0 otherwise."""
    try:
        chosen = get_policy(policy)
    except UnknownSolverError:
        fail(f"--policy: unknown policy {policy!r}; known: {', '.join(policy_names())}")
    except SolverUnavailableError as exc:
        fail(f"--policy: {exc}")
    vms = _pool(pool)
    session = Session(vms, chosen, seed)
    refused = False
    try:
        # bytes, decoded line by line: a line that is not UTF-8 is one refused line, not
        # the end of the session with a traceback
        source = events.open("rb") if events is not None else sys.stdin.buffer
    except OSError as exc:
        fail(f"--events: cannot read {events}: {exc.strerror or exc}")
    try:
        with source:
            for raw in source:
                if not raw.strip():
                    continue
                answer: dict[str, Any]
                try:
                    line = raw.decode("utf-8")
                    # every failure a line can bring (too deep, digits past Python's limit)
                    # is one answer, never the end of the session
                    obj = load_json(line, "the line", "line")
                except UnicodeDecodeError as exc:
                    answer = {"error": {"field": "line", "detail": "the line is not UTF-8 "
                                        f"text (byte {exc.start + 1}: {exc.reason})"}}
                except InstanceError as exc:
                    answer = {"error": {"field": "line", "detail": exc.message}}
                else:
                    if isinstance(obj, dict) and obj.get("type") == "state":
                        answer = {"pool": vms.label, "policy": policy, **session.snapshot()}
                    else:
                        answer = _session_line(session, obj)
                refused |= "error" in answer
                sys.stdout.write(json.dumps(jsonable(answer)) + "\n")
                sys.stdout.flush()  # a live caller waits on each answer
                if "violations" in answer.get("error", {}):
                    raise typer.Exit(EXIT_SOLVER_FAILED)  # its state can no longer be trusted
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if refused:
        raise typer.Exit(EXIT_BAD_INPUT)
