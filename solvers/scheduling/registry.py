"""The scheduling policies by name: the single list the API, the CLI and the benchmark read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from solvers.device import torch_missing
from solvers.errors import CheckFailedError, SolverUnavailableError, UnknownSolverError
from solvers.scheduling.check import ScheduleCheck, check_result, expected_stream
from solvers.scheduling.goodrl_card import GOODRL_DESCRIPTION
from solvers.scheduling.heuristics import CORRECT_HEURISTICS, HEURISTICS, STALE_HEURISTICS
from solvers.scheduling.simulator import Arrivals, Policy, SimResult, VMPool, simulate
from solvers.scheduling.workflow import Workflow


@dataclass(frozen=True)
class PolicySpec:
    """A policy's name, what it does, and whether it can run here."""

    name: str
    kind: str  # "heuristic", "heuristic-stale" or "learned"
    description: str
    factory: Callable[[], Policy]
    availability: Callable[[], str | None] = lambda: None

    def unavailable_reason(self) -> str | None:
        return self.availability()

    @property
    def available(self) -> bool:
        return self.unavailable_reason() is None


POLICIES: dict[str, PolicySpec] = {}
for _name in (*CORRECT_HEURISTICS, *STALE_HEURISTICS):
    _cls = HEURISTICS[_name]
    POLICIES[_name] = PolicySpec(_name, "heuristic" if _name in CORRECT_HEURISTICS
                                 else "heuristic-stale", _cls.description, _cls)


def _goodrl_policy() -> Policy:
    # torch loads here, on first use, so listing policies or a CLI usage error stays quick.
    from solvers.scheduling.goodrl import GoodRLPolicy

    return GoodRLPolicy()


def _goodrl_availability() -> str | None:
    missing = torch_missing()  # before the import below, which imports torch
    if missing is not None:
        return missing
    from solvers.scheduling.goodrl import availability

    return availability()


POLICIES["goodrl"] = PolicySpec("goodrl", "learned", GOODRL_DESCRIPTION, _goodrl_policy,
                                _goodrl_availability)
DEFAULT_POLICIES = ("goodrl", "heft_slack", "heft", "eft", "peft", "est", "eft_stale")
#: The rule a session uses unless told otherwise: the best correctly timed rule at every load
#: measured (benchmarks/results/scheduling_load.md: best below 0.9 utilization, by up to 14 %,
#: and within 0.5 % of the best rule on overloaded pools), so no switch by load is needed.
RECOMMENDED_POLICY = "heft_slack"


def policy_names() -> list[str]:
    return list(POLICIES)


def get_policy(name: str) -> Policy:
    """A fresh policy instance; unknown names and missing weights are domain errors."""
    spec = POLICIES.get(name)
    if spec is None:
        raise UnknownSolverError(name, policy_names())
    reason = spec.unavailable_reason()
    if reason is not None:
        raise SolverUnavailableError(name, reason)
    return spec.factory()


#: Rough seconds per decision: a fixed part, a part per task and a part per dependency of the
#: workflow (the actor reads the task's whole workflow graph), to refuse runs that cannot
#: finish in a request's time. GOODRL on one loaded core of the 2-core machine, 3 generated
#: workflows: 1.5 ms a decision at 100 tasks, 2.7 ms at 500, 7.7 ms at 2,000; on dense DAGs
#: (every task a child of all before it) 11 ms at 200 tasks and 19,900 edges, 25 ms at 300
#: and 44,850, where a 300-task chain takes 1.2 ms (without the edge term a 630-task DAG
#: with 198,000 edges passed the estimate and ran for 5 minutes). The heuristics 8 to 17 µs.
SECONDS_PER_DECISION = {"goodrl": (1.2e-3, 3.3e-6, 1e-6)}
HEURISTIC_SECONDS_PER_DECISION = (2e-5, 1e-8, 1e-8)


def estimated_seconds(names: list[str], decisions: float, tasks_per_workflow: float = 30.0,
                      edges_per_workflow: float = 0.0) -> float:
    """What running ``names`` on a stream of ``decisions`` task assignments should take, for
    workflows of ``tasks_per_workflow`` tasks and ``edges_per_workflow`` dependencies on
    average."""
    total = 0.0
    for name in names:
        fixed, per_task, per_edge = SECONDS_PER_DECISION.get(
            name, HEURISTIC_SECONDS_PER_DECISION)
        total += fixed + per_task * tasks_per_workflow + per_edge * edges_per_workflow
    return total * decisions


@dataclass
class PolicyRun:
    """One policy's result, or why it has none."""

    name: str
    kind: str | None
    result: SimResult | None
    error: str | None = None
    gap_to_best: float | None = None
    #: the independent check of its schedule, when asked for (``check=True``); a row whose
    #: check failed has no result, its error says so and ``violations`` lists what was found
    check: ScheduleCheck | None = None
    violations: list[str] | None = None


def _keep_first(res: SimResult, workflows: int) -> None:
    """Drop the recorded rows of every workflow from the ``workflows``-th arrival on."""
    if res.schedule is not None:
        res.schedule = [row for row in res.schedule if row[0] < workflows]
    if res.workflows is not None:
        res.workflows = [row for row in res.workflows if row[0] < workflows]


def run_policies(templates: Sequence[Workflow], pool: VMPool, arrivals: Arrivals,
                 names: Sequence[str], seed: int = 0, *, record: bool = False,
                 measure_latency: bool = False, deadline: float | None = None,
                 cancel: Callable[[], bool] | None = None, check: bool = False,
                 keep_workflows: int | None = None,
                 progress: Callable[[int, int, str], None] | None = None) -> list[PolicyRun]:
    """Every policy on the same stream (same seed). A missing model is a row with an error,
    not a failure of the whole comparison; running out of time raises TimeoutError.

    ``check``: each schedule is recorded and verified by the independent checker
    (``solvers.scheduling.check``) against the stream its seed defines, its reported numbers
    recomputed; a row that fails (or whose policy chose a VM outside the pool) keeps no
    result, only the error and its violations, so it is never reported as a result. The
    record is dropped after the check unless ``record`` asked for it.

    ``keep_workflows``: with ``record``, keep only the first this many workflows' rows once
    the check is done (all a Gantt chart draws), so that every policy's whole record does not
    stay in memory until the last policy ran (gantt=true on 20,000 workflows × 10 policies
    would hold 1 GB more than without it).

    ``progress(workflows simulated, of total, policy)``: every policy's workflows count
    towards the total (policies × workflows), reported now and then and after each policy."""
    stream = (expected_stream(len(templates), arrivals.count, arrivals.rates, seed) if check
              else None)
    rows: list[PolicyRun] = []
    total = len(names) * arrivals.count
    for i, name in enumerate(names):
        done_before = i * arrivals.count

        def report(done: int, before: int = done_before, policy: str = name) -> None:
            if progress is not None:
                progress(before + done, total, policy)

        spec = POLICIES.get(name)
        if spec is None:
            raise UnknownSolverError(name, policy_names())
        reason = spec.unavailable_reason()
        if reason is not None:
            rows.append(PolicyRun(name, spec.kind, None, f"unavailable: {reason}"))
            continue
        try:
            res = simulate(templates, pool, arrivals, spec.factory(), seed,
                           record=record or check, measure_latency=measure_latency,
                           deadline=deadline, cancel=cancel, on_progress=report)
        except CheckFailedError as exc:
            rows.append(PolicyRun(name, spec.kind, None, f"failed its independent check: {exc}",
                                  violations=exc.violations))
            continue
        report(arrivals.count)
        verdict = check_result(templates, pool.speeds, res, stream) if check else None
        if not record:
            res.schedule = res.workflows = None
        elif keep_workflows is not None:
            _keep_first(res, keep_workflows)
        if verdict is not None and not verdict.ok:
            rows.append(PolicyRun(name, spec.kind, None, "the schedule failed its independent "
                                  f"check: {'; '.join(verdict.violations[:3])}", check=verdict,
                                  violations=verdict.violations))
            continue
        rows.append(PolicyRun(name, spec.kind, res, check=verdict))
    done = [r.result.mean_flowtime for r in rows if r.result is not None]
    best = min(done) if done else None
    for r in rows:
        if r.result is not None and best is not None:
            # all flowtimes 0 (every task of runtime 0): the best rows are 0 % from the best
            r.gap_to_best = (0.0 if r.result.mean_flowtime == best
                             else 100.0 * (r.result.mean_flowtime - best) / best)
    return rows
