"""Exact min-cost-flow calls that cannot be interrupted are held to their time limit: they run
in a child process that is stopped at the deadline (before: negative costs on long paths
took OR-Tools 8-27 s and networkx 17.6 s at time limits of 1-2 s)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from solvers.catalog import get_solver, warm_up
from solvers.contract import Budget
from solvers.errors import NoSolutionError
from solvers.flow import baselines, oft
from solvers.flow.bounded import DeadlinePassedError, run_bounded
from solvers.flow.dual import UnboundedCostError, check_bounded
from solvers.flow.io import network_from_dict
from solvers.flow.problem import FlowNetwork
from solvers.flow.repair import bounded_sinkhorn_certificate, solve_min_cost_flow
from solvers.flow.solve import compare, solve
from tests.solvers.flow.conftest import HAND_CHECKED


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def _fail() -> None:
    raise ValueError("bad arcs")


def test_a_call_past_its_deadline_is_stopped_and_a_quick_one_answers() -> None:
    started = time.perf_counter()
    with pytest.raises(DeadlinePassedError) as exc:
        run_bounded(_sleep, (30.0,), deadline=time.perf_counter() + 0.3)
    assert 0.3 <= time.perf_counter() - started < 1.5 and not exc.value.cancelled
    assert run_bounded(_sleep, (0.01,), deadline=time.perf_counter() + 10) == 0.01
    with pytest.raises(ValueError, match="bad arcs"):  # the child's error, raised here
        run_bounded(_fail, (), deadline=time.perf_counter() + 10)
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    with pytest.raises(DeadlinePassedError) as exc:
        run_bounded(_sleep, (30.0,), deadline=time.perf_counter() + 30, cancelled=cancel.is_set)
    assert exc.value.cancelled and exc.value.elapsed < 1.5


def negative_chain(n: int = 5000, m: int = 100_000, seed: int = 0,
                   closed: bool = False) -> FlowNetwork:
    """A DAG of uncapacitated arcs: a chain at cost -10 a step and random forward arcs at
    cost 0..-4: bounded, no cycle, but OR-Tools takes about 8 s (0.02 s with every cost
    raised by 10). ``closed`` puts every node on one cycle, of cost +10, with a back arc
    n → 1 at cost 10·n (in place of a random arc): still bounded, but proving it takes
    label-correcting about n rounds (1.3 s)."""
    rng = np.random.default_rng(seed)
    tails = np.arange(1, n)
    k = m - (n - 1) - closed
    a, b = rng.integers(1, n, k), rng.integers(1, n + 1, k)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    hi = np.minimum(np.where(hi == lo, lo + 1, hi), n)
    supplies = np.zeros(n, dtype=np.int64)
    supplies[0], supplies[-1] = 10, -10
    back = [n] if closed else []
    return FlowNetwork.build(
        name="negative-chain", node_ids=np.arange(1, n + 1), supplies=supplies,
        tails=np.concatenate([tails, lo, back]),
        heads=np.concatenate([tails + 1, hi, [1] if closed else []]),
        costs=np.concatenate([np.full(n - 1, -10), -rng.integers(0, 5, k),
                              [10 * n] if closed else []]),
        capacities=[None] * m)


@pytest.mark.parametrize("solver", ["ortools_mcf", "oft_sinkhorn"])
def test_an_exact_step_that_overruns_is_stopped_at_the_time_limit(solver: str) -> None:
    """The estimates (OR-Tools 3 µs an arc, the repair 6 µs) accept 1 s for this network; the
    solve took 8.2 s (ortools_mcf) and 8.7 s (oft_sinkhorn's repair) before. The whole call
    answers by the stop (1.4 s): checking that the cost is bounded came before the clock and
    took 1.3 s more (before: 2.9 s in all)."""
    warm_up(solver)
    started = time.perf_counter()
    with pytest.raises(NoSolutionError, match="when its time limit of 1 s ran out") as exc:
        solve(negative_chain(), solver, Budget(time_limit=1.0))  # through the registry
    assert time.perf_counter() - started < 1.8
    assert exc.value.field == "time_limit" and exc.value.more_time_helps
    started = time.perf_counter()
    with pytest.raises(NoSolutionError):
        get_solver(solver).solve(negative_chain(), Budget(time_limit=1.0))
    assert time.perf_counter() - started < 1.8


def test_a_boundedness_check_that_overruns_is_stopped_and_says_so() -> None:
    """Proving the closed chain's cost bounded takes about 1.3 s; at 0.1 s (stopped at
    0.85 s) the answer says the check had not finished, and returns no flow unchecked
    (before, the check ran to its end before the clock and OR-Tools after it: 2.4 s)."""
    net = negative_chain(closed=True)
    warm_up("ortools_mcf")
    started = time.perf_counter()
    with pytest.raises(NoSolutionError, match=r"had not finished checking that the cost is "
                       r"bounded .* time limit of 0.5 s ran out") as exc:
        solve(net, "ortools_mcf", Budget(time_limit=0.1))
    assert time.perf_counter() - started < 1.25
    assert exc.value.field == "time_limit" and exc.value.more_time_helps
    assert not check_bounded(net.core(), deadline=time.perf_counter() + 0.1)
    assert check_bounded(net.core())  # unbounded time: it is bounded


def test_the_boundedness_check_searches_only_cycles() -> None:
    """A negative cycle lies in one strongly connected component of the uncapacitated arcs:
    the open chain has none to search (1.3 s of label-correcting before); a negative cycle
    beside it is still found, in as many rounds as its component has nodes."""
    chain = negative_chain()
    started = time.perf_counter()
    assert check_bounded(chain.core())
    assert time.perf_counter() - started < 0.3
    cycle = FlowNetwork.build(
        name="chain-and-cycle", node_ids=chain.node_ids, supplies=chain.supplies,
        tails=np.r_[chain.node_ids[chain.tails], 3], heads=np.r_[chain.node_ids[chain.heads], 2],
        costs=np.r_[chain.costs, 9], capacities=[None] * (chain.m + 1))  # 2 → 3 costs -10
    with pytest.raises(UnboundedCostError, match="unbounded below"):
        check_bounded(cycle.core(), cycle.node_ids)
    n = 200_000  # a path of negative arcs and a 2-cycle of cost -1 on it: 2 rounds, not n
    path = FlowNetwork.build(
        name="path-and-cycle", node_ids=np.arange(1, n + 1), supplies=np.zeros(n, dtype=int),
        tails=np.r_[np.arange(1, n), 4], heads=np.r_[np.arange(2, n + 1), 3],
        costs=np.r_[np.full(n - 1, -1), 0], capacities=[None] * n)
    started = time.perf_counter()
    with pytest.raises(UnboundedCostError, match="reaching node 4"):
        check_bounded(path.core(), path.node_ids)
    assert time.perf_counter() - started < 0.4  # 0.9 s searching n rounds
    short = FlowNetwork.build(
        name="short-back-arc", node_ids=np.arange(1, 5), supplies=np.zeros(4, dtype=np.int64),
        tails=np.array([1, 2, 3, 4]), heads=np.array([2, 3, 4, 1]),
        costs=np.array([-10, -10, -10, 29]), capacities=[None] * 4)
    with pytest.raises(UnboundedCostError):
        check_bounded(short.core())


def test_a_comparison_checks_the_cost_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict is kept on the network: each solver of a comparison would otherwise pay
    for the check again on its own clock."""
    calls: list[int] = []
    real = baselines.check_bounded

    def counting(*args: object, **kwargs: object) -> bool:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(baselines, "check_bounded", counting)
    net = negative_chain(200, 2000, closed=True)
    result = compare(net, ["ortools_mcf", "networkx_simplex"], Budget(time_limit=5))
    assert result.agree is True and len(calls) == 1


def test_a_solver_called_directly_refuses_an_unbounded_cost() -> None:
    """The check is the solver's own step, not only the registry's: the core network caps
    uncapacitated arcs, so a solver called directly returned a finite "optimum" before."""
    net = FlowNetwork.build(
        name="unbounded", node_ids=np.arange(1, 4), supplies=np.array([1, -1, 0]),
        tails=np.array([1, 2, 3]), heads=np.array([2, 3, 2]), costs=np.array([1, -2, 1]),
        capacities=[None] * 3)
    for solver in ("ortools_mcf", "networkx_simplex", "oft_sinkhorn"):
        with pytest.raises(UnboundedCostError):
            get_solver(solver).solve(net, Budget(time_limit=5))




def long_path(n: int, m: int, seed: int = 0) -> FlowNetwork:
    """10 units along a path of n nodes (cost 1 a step) beside random forward arcs that cost
    more than the path they skip, every arc of capacity 10: OR-Tools solves it at once, but
    the optimality proof's labels fall one step a round along the path's n − 1 backward
    residual arcs (n = 1,900, 100,000 arcs: 0.35-0.6 s; 300,000 arcs: 0.9-1.1 s)."""
    rng = np.random.default_rng(seed)
    k = m - (n - 1)
    a, b = rng.integers(1, n, k), rng.integers(1, n + 1, k)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    hi = np.minimum(np.where(hi == lo, lo + 1, hi), n)
    supplies = np.zeros(n, dtype=np.int64)
    supplies[0], supplies[-1] = 10, -10
    return FlowNetwork.build(
        name="long-path", node_ids=np.arange(1, n + 1), supplies=supplies,
        tails=np.r_[np.arange(1, n), lo], heads=np.r_[np.arange(2, n + 1), hi],
        costs=np.r_[np.ones(n - 1, dtype=np.int64), hi - lo + 1], capacities=[10] * m)


def test_an_unfinished_optimality_proof_does_not_say_optimal() -> None:
    """The proof after an exact solver stops at 2,000 rounds; past them it proves nothing, and
    the answer said ``optimal`` on the solver's word anyway (the 100,000-arc
    negative chain at 30 s). Now ``feasible``, the solver's word and the proof's end in the
    stats, and the proof's time inside ``wall_time``."""
    net = long_path(2500, 5000)
    for solver in ("ortools_mcf", "networkx_simplex"):
        sol = get_solver(solver).solve(net, Budget(time_limit=60))
        assert sol.feasible and sol.cost == 10 * 2499
        assert sol.status == "feasible" and sol.certificate is None, solver
        assert sol.stats["proof"] == "round_limit" and sol.stats["status"] == "OPTIMAL"
        assert sol.wall_time >= sol.stats["solve_time"] + sol.stats["certify_time"]
    proven = get_solver("ortools_mcf").solve(long_path(1500, 5000), Budget(time_limit=60))
    assert proven.status == "optimal" and proven.certificate is not None
    assert proven.certificate.optimal and proven.stats["proof"] == "proven"


def test_the_optimality_proof_stops_at_the_deadline_and_on_a_cancel() -> None:
    """The proof ran after the solver's stop, to its end (1,900 rounds on 100,000 arcs:
    0.35-0.6 s, after a stop at 0.85 s for a 0.1 s limit), and on after a cancel."""
    core = long_path(1900, 100_000).core()
    flow = solve_min_cost_flow(core.n, core.tails, core.heads, core.caps, core.costs,
                               core.supplies)
    assert flow is not None
    started = time.perf_counter()
    cert, proof = baselines.prove_optimal(core, flow, core.cost(flow),
                                          deadline=time.perf_counter() + 0.05)
    assert (cert, proof) == (None, "time_limit") and time.perf_counter() - started < 0.25
    cert, proof = baselines.prove_optimal(core, flow, core.cost(flow),
                                          deadline=time.perf_counter() + 60,
                                          cancelled=lambda: True)
    assert (cert, proof) == (None, "cancelled")
    # through the solver: OR-Tools runs in place at 60 s (it cannot be cancelled there), the
    # cancel stops the proof, and the flow comes back unproven instead of 0.4 s later
    cancel = threading.Event()
    cancel.set()
    sol = get_solver("ortools_mcf").solve(long_path(1900, 100_000),
                                         Budget(time_limit=60, cancel=cancel))
    assert sol.feasible and sol.status == "feasible" and sol.stats["proof"] == "cancelled"
    assert sol.stats["certify_time"] < 0.2


def test_a_cancel_stops_the_boundedness_check() -> None:
    """Checking the closed chain takes about 1.3 s; a cancel stopped nothing before it ended
    (then OR-Tools' child saw the cancel: "cancelled after 1.3 s")."""
    assert not check_bounded(negative_chain(closed=True).core(), cancelled=lambda: True)
    net = negative_chain(closed=True)
    warm_up("ortools_mcf")
    cancel = threading.Event()
    threading.Timer(0.05, cancel.set).start()
    started = time.perf_counter()
    with pytest.raises(NoSolutionError, match=r"cancelled .* while checking that the cost "
                       r"is bounded") as exc:
        solve(net, "ortools_mcf", Budget(time_limit=30, cancel=cancel))
    assert time.perf_counter() - started < 0.7 and not exc.value.more_time_helps


def test_the_sinkhorn_certificate_stops_at_the_deadline() -> None:
    """Making potentials feasible for uncapacitated arcs walks their negative paths: on the
    chain 1.3-1.5 s a candidate, four candidates (5.8-6.3 s), after oft_sinkhorn's stop with
    no deadline. Stopped, it gives no certificate; a cancel stops it too."""
    core = negative_chain().core()
    zeros = [np.zeros(core.n)] * 3
    started = time.perf_counter()
    assert bounded_sinkhorn_certificate(core, 0, zeros,
                                        deadline=time.perf_counter() + 0.1) is None
    assert time.perf_counter() - started < 0.5
    assert bounded_sinkhorn_certificate(core, 0, zeros, cancelled=lambda: True) is None
    small = FlowNetwork.build(  # in time: the best candidate's bound
        name="small", node_ids=np.arange(1, 4), supplies=np.array([1, 0, -1]),
        tails=np.array([1, 2]), heads=np.array([2, 3]), costs=np.array([-1, 2]),
        capacities=[None, None]).core()
    best = bounded_sinkhorn_certificate(small, 1, [np.array([0.0, 1.0, -1.0])],
                                        deadline=time.perf_counter() + 10)
    assert best is not None and best[0].dual_bound == 1


def test_oft_sinkhorn_without_its_certificate_returns_the_checked_flow(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """When the certificate's search is stopped, the repaired flow is still exact and checked:
    it comes back ``feasible`` with no certificate and the stats say why (no finish, which
    needs the certificate's potentials)."""
    monkeypatch.setattr(oft, "bounded_sinkhorn_certificate", lambda *args, **kwargs: None)
    network, optimum, _ = HAND_CHECKED["two_paths"]
    sol = get_solver("oft_sinkhorn").solve(network_from_dict(network), Budget(time_limit=5))
    assert sol.feasible and not sol.violations and sol.cost is not None
    assert sol.cost >= optimum and sol.status == "feasible" and sol.certificate is None
    assert sol.stats["certificate_stopped"] == "time_limit"
    assert sol.stats["repair_certificate"] is None and "finish_time" not in sol.stats
