"""The registered ``oft_sinkhorn`` solver: entropic OFT-Sinkhorn, then an exact integer flow.

Pipeline (each step's figures go into the solution's stats), after
``baselines.require_bounded`` (the cost is bounded, checked on the solver's clock):
``sinkhorn.oft_sinkhorn`` (ε-scaling until the time budget's Sinkhorn share runs out) →
``repair.repair`` (round, repair the imbalance on the residual network) →
``repair.bounded_sinkhorn_certificate`` (dual bound from the Sinkhorn potentials, stopped with
the repair: then the checked flow goes back with no certificate) →
``repair.finish`` (price-and-resolve to a proven optimum) unless the certified relative gap is
already within ``FlowOptions.tolerance`` or the time is up.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from solvers.contract import Budget, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import BudgetTooSmallError
from solvers.flow.baselines import require_bounded, stopped_at_limit
from solvers.flow.bounded import DeadlinePassedError, stop_at
from solvers.flow.bounded import warm_up as bounded_warm_up
from solvers.flow.cut import blocking_cut
from solvers.flow.options import FlowOptions
from solvers.flow.problem import FlowNetwork
from solvers.flow.repair import bounded_sinkhorn_certificate, finish, repair
from solvers.flow.sinkhorn import oft_sinkhorn
from solvers.flow.solution import (
    Certificate,
    FlowSolution,
    InfeasibleNetworkError,
    build_flow_solution,
    infeasible_solution,
)

#: Share of the time limit the entropic iterations may use; the rest is for repair/finish.
SINKHORN_SHARE = 0.8
#: Seconds per arc kept after the entropic iterations: the repair, which cannot be
#: interrupted (an OR-Tools solve on the restricted residual network: 1.8-2.5 µs per arc on
#: NETGEN-style networks of 40,000-100,000 arcs on the 2-core machine), then the certificate
#: and the independent check of the flow (about as long again).
AFTER_SECONDS_PER_ARC = 6e-6


def min_time_limit(arcs: int) -> float:
    """The shortest time limit ``oft_sinkhorn`` can keep: what follows the iterations, and
    half as long again for the iterations themselves. None is asked below 0.2 s of need: 0.1 s
    on 40,000 arcs ran 0.25-0.30 s, the repair alone taking 0.1 s."""
    needed = 1.5 * AFTER_SECONDS_PER_ARC * arcs
    return 0.0 if needed < 0.2 else math.ceil(needed * 10) / 10


class OFTSinkhornSolver:
    """OFT-Sinkhorn + rounding + repair + certificate (+ finish to optimality)."""

    name = "oft_sinkhorn"

    def warm_up(self) -> None:
        """Import OR-Tools for the repair and fork one bounded child before any clock."""
        bounded_warm_up()

    def solve(self, net: FlowNetwork, budget: Budget, progress: ProgressCallback = no_progress,
              options: FlowOptions | None = None) -> FlowSolution:
        opts = options or FlowOptions()
        started = time.perf_counter()
        deadline = started + budget.time_limit
        require_bounded(net, self.name, budget, started)
        core = net.core()
        needed = min_time_limit(core.m)
        if budget.time_limit < needed:
            raise BudgetTooSmallError(
                f"oft_sinkhorn ends with a repair that cannot be interrupted and a check, about "
                f"{AFTER_SECONDS_PER_ARC * core.m:.2g} s for {core.m} arcs, and needs a time "
                f"limit of at least {needed:g} s; got {budget.time_limit:g} s. Raise the time "
                "limit or choose ortools_mcf.", needed=needed)
        reserve = AFTER_SECONDS_PER_ARC * core.m
        # One max flow (milliseconds) saves iterating on a network that has no feasible flow.
        cut = blocking_cut(net)
        if cut is not None:
            return infeasible_solution(net, solver=self.name, cut=cut,
                                       wall_time=time.perf_counter() - started)

        def report(info: dict[str, Any]) -> None:
            progress(ProgressEvent(
                self.name, time.perf_counter() - started, int(info["iterations"]),
                float(info["primal_cost"]) + core.cost_offset,
                f"eps={info['eps']:.3g} marginal error={info['error']:.2e}"))

        result = oft_sinkhorn(
            [core], opts.sinkhorn, device=budget.device,
            deadline=started + min(SINKHORN_SHARE * budget.time_limit,
                                   budget.time_limit - reserve),
            cancelled=budget.cancelled, progress=report)
        entropic_cost = float(result.primal_cost[0]) + core.cost_offset
        # the iteration runs on costs scaled to at most 1; ε is reported in cost units, in the
        # schedule and in every stage alike, never the scaled ε beside it
        unscale = float(result.final_eps[0]) / result.eps_schedule[-1]
        stats: dict[str, Any] = {
            "device": budget.device,
            "entropic_cost": entropic_cost,
            "marginal_error": float(result.marginal_error[0]),
            "iterations": result.iterations,
            "eps_schedule": [e * unscale for e in result.eps_schedule],
            "stages": [{**stage, "eps": stage["eps"] * unscale} for stage in result.stages],
            "sinkhorn_stopped": result.stopped,
            "sinkhorn_time": result.wall_time,
        }
        repair_started = time.perf_counter()
        try:
            rep = repair(core, result.flow[0], result.potentials[0], float(result.final_eps[0]),
                         deadline=stop_at(started, budget.time_limit),
                         cancelled=budget.cancelled)
        except InfeasibleNetworkError:
            return infeasible_solution(net, solver=self.name,
                                       wall_time=time.perf_counter() - started, stats=stats)
        except DeadlinePassedError as stop:
            raise stopped_at_limit(self.name, budget, stop,
                                   f"the repair of {core.m} arcs") from None
        stats.update(rep.stats)
        stats["repaired_cost"] = rep.cost
        # on the solver's stop, as the repair: on long paths of negative uncapacitated arcs
        # each candidate takes as many rounds as the path has arcs (1.3 s on a 100,000-arc
        # chain), after the stop with no deadline before
        certified = bounded_sinkhorn_certificate(
            core, rep.cost,
            [result.row_potentials[0], result.col_potentials[0], result.potentials[0]],
            deadline=stop_at(started, budget.time_limit), cancelled=budget.cancelled)
        flow, cost = rep.flow, rep.cost
        final_cert: Certificate | None = None
        if certified is None:
            # the flow is still exact and checked; only its certificate is missing
            stats["repair_certificate"] = None
            stats["certificate_stopped"] = "cancelled" if budget.cancelled() else "time_limit"
        else:
            cert, pi = certified
            stats["repair_certificate"] = cert.to_dict()
            final_cert = cert
            done = cert.optimal or cert.relative_gap <= opts.tolerance
            # a finish round is a restricted solve like the repair's and cannot be
            # interrupted: one starts only where the repair's measured time still fits
            round_seconds = time.perf_counter() - repair_started
            if (not done and not budget.cancelled()
                    and time.perf_counter() + round_seconds < deadline):
                fin = finish(core, rep.flow, rep.candidates, pi, deadline=deadline,
                             cancelled=budget.cancelled)
                stats.update(fin.stats, finish_complete=fin.complete)
                flow, cost = fin.flow, fin.cost
                if fin.certificate is not None:
                    final_cert = fin.certificate
                else:  # stopped early: the Sinkhorn bound still certifies the better flow
                    final_cert = replace(cert, gap=cost - cert.dual_bound)
        stats["entropic_gap_percent"] = 100.0 * (entropic_cost - cost) / max(1, abs(cost))
        wall = time.perf_counter() - started
        progress(ProgressEvent(self.name, wall, result.iterations, float(cost),
                               f"certified gap {final_cert.gap}" if final_cert is not None
                               else "no certificate (stopped)"))
        return build_flow_solution(net, core.original_flow(flow), solver=self.name,
                                   wall_time=wall, proven_optimal=False, stats=stats,
                                   certificate=final_cert)
