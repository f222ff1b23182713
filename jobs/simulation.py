"""A scheduling simulation as a document: every policy on the same seeded stream, the rows
the API answers (``POST /v1/scheduling/simulate``) and a job stores as its result
(``POST /v1/scheduling/simulate/jobs``), with warnings when the pool is overloaded.

It sits below app/ so the synchronous endpoint, the job worker and the CLI build the same
answer: one code path, whichever way the simulation was asked for.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import InstanceError
from solvers.scheduling.check import expected_stream
from solvers.scheduling.registry import PolicyRun, run_policies
from solvers.scheduling.render import gantt_svg
from solvers.scheduling.simulator import Arrivals, VMPool
from solvers.scheduling.workflow import Workflow, workflow_from_dict

#: The job problem name of a simulation (routing jobs are tsp, cvrp, cvrptw).
SIMULATION_PROBLEM = "scheduling"
#: A pool busier than this is overloaded: queues, not the policy, decide the flowtimes.
OVERLOAD_UTILIZATION = 0.9
#: Flowtimes "grow over the stream" when the last third's workflows are this many times
#: slower (relative to their own critical path, the median of each third) than the first
#: third's. Measured on the classic shapes, 45 and 150 workflows, 4 seeds: at 0.7 of the
#: pool's capacity the ratio stayed at or below 2.7 (the mean's reached 7.7 on one long SIPHT
#: in a third); at or above capacity it mostly read 3 to 17, and utilization above 0.9 warns
#: about the runs it missed.
GROWTH_RATIO = 3.0
#: Fewest workflows for the trend: thirds of fewer than 10 workflows are mostly noise.
GROWTH_MIN_WORKFLOWS = 30


@dataclass(frozen=True)
class Simulation:
    """A checked simulation request: what the document is built from, and what a job stores."""

    templates: list[Workflow]
    pool: VMPool
    arrivals: Arrivals
    policies: list[str]
    seed: int
    gantt: bool = False
    gantt_workflows: int = 0
    schedule: bool = False
    generator: dict[str, Any] | None = None

    def to_json(self) -> bytes:
        """The job's stored input (the workflows themselves, so a job never re-reads files)."""
        return json.dumps({
            "templates": [w.to_dict() for w in self.templates],
            "pool": {"speeds": list(self.pool.speeds), "label": self.pool.label},
            "workflows_count": self.arrivals.count, "rates": list(self.arrivals.rates),
            "policies": self.policies, "seed": self.seed, "gantt": self.gantt,
            "gantt_workflows": self.gantt_workflows, "schedule": self.schedule,
            "generator": self.generator}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Simulation:
        obj = json.loads(data)
        return cls([workflow_from_dict(w, w["name"]) for w in obj["templates"]],
                   VMPool(tuple(obj["pool"]["speeds"]), obj["pool"]["label"]),
                   Arrivals(obj["workflows_count"], tuple(obj["rates"])), obj["policies"],
                   obj["seed"], obj["gantt"], obj["gantt_workflows"], obj["schedule"],
                   obj["generator"])


def _stretch(run: PolicyRun, sim: Simulation) -> np.ndarray:
    """Each workflow's flowtime over its critical path on the fastest VM, in arrival order:
    a Montage and a SIPHT workflow then compare, so a third that happened to draw the long
    shapes does not read as a growing queue."""
    assert run.result is not None
    _, kinds = expected_stream(len(sim.templates), sim.arrivals.count, sim.arrivals.rates,
                               sim.seed)
    fastest = max(sim.pool.speeds)
    paths = np.array([w.critical_path(fastest) for w in sim.templates])[kinds]
    flow = run.result.flowtimes
    return np.where(paths > 0, flow / np.maximum(paths, 1e-12), 1.0)


def overload_warnings(runs: Sequence[PolicyRun], sim: Simulation) -> list[dict[str, Any]]:
    """Warnings about the load, from the recorded results: utilization above
    OVERLOAD_UTILIZATION (recomputed by the checker when the schedules were checked), and
    flowtimes growing over the stream (the last third's median stretch GROWTH_RATIO times
    the first third's). Either means the stream outruns the pool: the flowtimes measure a
    growing queue more than the policy."""
    busy: list[tuple[str, float]] = []
    growing: list[tuple[str, float, float]] = []
    for r in runs:
        if r.result is None:
            continue
        util = r.check.utilization if r.check is not None else r.result.utilization
        if util > OVERLOAD_UTILIZATION:
            busy.append((r.name, util))
        n = len(r.result.flowtimes)
        if n >= GROWTH_MIN_WORKFLOWS and n == sim.arrivals.count:
            stretch = _stretch(r, sim)
            first = float(np.median(stretch[: n // 3]))
            last = float(np.median(stretch[-(n // 3):]))
            if last > GROWTH_RATIO * first:
                growing.append((r.name, first, last))
    out = []
    if busy:
        out.append({"code": "pool-overloaded", "policies": [p for p, _ in busy],
                    "detail": "utilization above "
                    f"{OVERLOAD_UTILIZATION:g} ({', '.join(f'{p} {u:.3f}' for p, u in busy)}): "
                    "the pool is overloaded and queueing decides the flowtimes; add VMs or "
                    "lower the rate"})
    if growing:
        out.append({"code": "flowtimes-growing", "policies": [p for p, _, _ in growing],
                    "detail": "flowtimes grow over the stream ("
                    + ", ".join(f"{p}: the last third's workflows took {last:.1f}× their "
                                f"critical path (median), the first third's {first:.1f}×"
                                for p, first, last in growing)
                    + "): the queue never drains, so a longer stream would score worse; "
                    "add VMs or lower the rate"})
    return out


def _row(r: PolicyRun, sim: Simulation) -> dict[str, Any]:
    s = r.result.summary() if r.result is not None else {}
    svg = (gantt_svg(r.result, sim.pool, sim.templates, sim.gantt_workflows)
           if sim.gantt and r.result is not None else None)
    return {
        "policy": r.name, "kind": r.kind, "mean_flowtime": s.get("mean_flowtime"),
        "median_flowtime": s.get("median_flowtime"), "p95_flowtime": s.get("p95_flowtime"),
        "makespan": s.get("makespan"), "utilization": s.get("utilization"),
        "decisions": s.get("decisions"), "wall_time": s.get("wall_time"),
        "latency_p50_ms": s.get("latency_p50_ms"), "latency_p95_ms": s.get("latency_p95_ms"),
        "gap_to_best": r.gap_to_best, "error": r.error, "gantt_svg": svg,
        "schedule": (r.result.schedule_table(sim.templates)
                     if sim.schedule and r.result is not None else None),
        "checked": None if r.check is None and r.violations is None else r.violations is None,
        "violations": r.violations}


def simulation_document(sim: Simulation, *, deadline: float | None = None,
                        cancel: Callable[[], bool] | None = None,
                        progress: Callable[[int, int, str], None] | None = None
                        ) -> dict[str, Any]:
    """Run every policy (checked, decision latency measured) and build the answer; running
    past ``deadline`` or a ``cancel`` raises TimeoutError."""
    runs = run_policies(sim.templates, sim.pool, sim.arrivals, sim.policies, sim.seed,
                        record=sim.gantt or sim.schedule, deadline=deadline, cancel=cancel,
                        measure_latency=True, check=True, progress=progress,
                        # a chart alone draws the first few workflows: keep only those
                        keep_workflows=None if sim.schedule else sim.gantt_workflows)
    rows = [_row(r, sim) for r in runs]
    ok = [r for r in rows if r["mean_flowtime"] is not None]
    best = min(ok, key=lambda r: r["mean_flowtime"] or math.inf)["policy"] if ok else None
    return {"pool": sim.pool.label, "vms": sim.pool.size, "vcpus": list(sim.pool.speeds),
            "rates": list(sim.arrivals.rates), "workflows_count": sim.arrivals.count,
            "seed": sim.seed, "generator": sim.generator,
            "workflows": [w.describe() for w in sim.templates], "best_policy": best,
            "rows": rows, "warnings": overload_warnings(runs, sim)}


def read_simulation(data: bytes) -> Simulation:
    """A stored job input; a damaged one is an InstanceError (the job fails, saying so)."""
    try:
        return Simulation.from_json(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise InstanceError("input", f"the stored simulation cannot be read: {exc}") from None
