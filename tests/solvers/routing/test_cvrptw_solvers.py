"""CVRPTW solvers: OR-Tools, PyVRP and the greedy construction return checked solutions on a
Solomon instance and on generated float-time instances, within their time limits, with
progress and cancellation as for CVRP; the generator's instances are feasible by design."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from solvers.catalog import specs_for
from solvers.contract import Budget, ProgressEvent
from solvers.errors import NoSolutionError, ProblemMismatchError
from solvers.routing.check import check_solution
from solvers.routing.classical import descent, fleet
from solvers.routing.classical.fleet import eliminate_routes
from solvers.routing.classical.timewindows import (
    Schedules,
    exchange_descent,
    relocate_descent,
    time_window_routes,
)
from solvers.routing.generate import (
    SOLOMON_FAMILIES,
    cvrptw_instance,
    random_cvrptw,
    solomon_like_cvrptw,
)
from solvers.routing.io.formats import load_instance
from solvers.routing.problem import CVRPTWInstance
from solvers.routing.solve import solve
from tests.conftest import DATA

C101 = DATA / "solomon" / "C101.100.10.vrptw"
C101_BEST = 8273  # LKH-3, FLOOR_2D on coordinates × 10
R101 = DATA / "solomon" / "R101.100.20.vrptw"
R201 = DATA / "solomon" / "R201.100.8.vrptw"
R201_BEST = 11432
R101_BEST = 16377


@pytest.fixture(scope="module")
def c101() -> CVRPTWInstance:
    inst = load_instance(C101)
    assert isinstance(inst, CVRPTWInstance)
    return inst


def test_registry_says_who_solves_cvrptw():
    names = {s.name for s in specs_for("cvrptw")}
    assert {"ortools", "pyvrp", "nearest_neighbor"} <= names
    assert {"reld", "polynet"} <= names
    assert "sil" not in names  # trained without windows: refused, not silently wrong
    with pytest.raises(ProblemMismatchError):
        solve(load_instance(C101), "sil", Budget(time_limit=1))


@pytest.mark.parametrize(("solver", "path", "best", "within"),
                         [("ortools", C101, C101_BEST, 1.02), ("pyvrp", R101, R101_BEST, 1.05)])
def test_classical_solvers_on_solomon(solver, path, best, within):
    inst = load_instance(path)
    events: list[ProgressEvent] = []
    sol = solve(inst, solver, Budget(time_limit=2.0, seed=1), events.append)
    assert sol.feasible, sol.violations
    assert check_solution(inst, sol.routes) == []
    assert len(sol.routes) <= inst.max_vehicles
    assert best <= sol.cost <= within * best, sol.cost
    assert sol.distance == "FLOOR_2D"
    assert sol.wall_time <= 2.5
    assert events and events[-1].message == "done"


@pytest.mark.parametrize("solver", ["ortools", "pyvrp"])
def test_float_times_are_rounded_so_schedules_stay_on_time(solver):
    inst = cvrptw_instance(seed=7, n=51)
    assert not inst.integral_times
    sol = solve(inst, solver, Budget(time_limit=1.0))
    assert sol.feasible, sol.violations


def test_greedy_construction_respects_windows():
    c201 = load_instance(DATA / "solomon" / "C201.100.3.vrptw")
    sol = solve(c201, "nearest_neighbor", Budget(time_limit=1))
    assert sol.feasible, sol.violations
    # R101's fleet of 20 is too tight for the greedy (21 routes, every window kept): a 422
    # naming max_vehicles, as the README promises for every solver but ortools
    r101 = load_instance(R101)
    with pytest.raises(NoSolutionError) as err:
        solve(r101, "nearest_neighbor", Budget(time_limit=1))
    assert err.value.field == "max_vehicles" and "used 21 vehicles" in str(err.value)
    # it names solvers that keep a fleet with time windows (before: it suggested ils)
    assert "pyvrp, ortools, reld and polynet" in str(err.value)
    assert "ils" not in str(err.value)
    routes = time_window_routes(r101)
    assert check_solution(r101.with_fleet(None), routes) == [] and len(routes) == 21


@pytest.mark.parametrize("solver", ["ortools", "pyvrp"])
def test_cancel_stops_a_cvrptw_solve(c101, solver):
    cancel = threading.Event()

    def cancel_after_search_began(event: ProgressEvent) -> None:
        # Timed from the solver's own clock, so imports and model building do not count.
        if event.elapsed >= 1.5:
            cancel.set()

    sol = solve(c101, solver, Budget(time_limit=30.0, cancel=cancel), cancel_after_search_began)
    assert cancel.is_set()
    assert sol.wall_time < 5.0  # stopped by the cancel, not the 30 s limit
    assert sol.feasible, sol.violations  # the best schedule so far, on time


def test_generator_is_feasible_and_fixed_by_its_seed():
    for seed in range(20):
        inst, reference = random_cvrptw(np.random.default_rng(seed), 101)
        assert check_solution(inst, reference) == []
        assert (inst.demands[1:] >= 1).all() and (inst.demands[1:] <= 9).all()
        assert (inst.coords >= 0).all() and (inst.coords <= 1).all()
    a, b = cvrptw_instance(3), cvrptw_instance(3)
    assert a.time_windows.tolist() == b.time_windows.tolist()
    assert a.coords.tolist() == b.coords.tolist()
    assert cvrptw_instance(4).coords.tolist() != a.coords.tolist()
    # Windows are real constraints: the reference routes driven backwards break some.
    inst, reference = random_cvrptw(np.random.default_rng(0), 101)
    assert any("late" in v for v in check_solution(inst, [r[::-1] for r in reference]))


@pytest.mark.parametrize("family", SOLOMON_FAMILIES)
def test_solomon_like_generator_is_feasible_and_fixed_by_its_seed(family):
    inst = solomon_like_cvrptw(np.random.default_rng(1), 101, family)
    # Every customer served alone is on time (windows placed where a lone visit fits).
    assert check_solution(inst, [[c] for c in range(1, 101)]) == []
    assert (inst.coords >= 0).all() and (inst.coords <= 1).all()
    again = solomon_like_cvrptw(np.random.default_rng(1), 101, family)
    assert again.time_windows.tolist() == inst.time_windows.tolist()
    windowed = inst.time_windows[1:, 0] > 0
    assert windowed.any()  # some customers have real windows


def test_solomon_like_families_differ_as_solomons_do():
    def mean(family, f):
        return np.mean([f(solomon_like_cvrptw(np.random.default_rng(s), 101, family))
                        for s in range(8)])

    def horizon(i):
        return i.horizon[1]

    def share(i):
        return i.capacity / i.demands.sum()

    def nearest(i):
        d = np.hypot(*(i.coords[:, None] - i.coords[None]).transpose(2, 0, 1))
        np.fill_diagonal(d, np.inf)
        return d.min(axis=1).mean()

    for shape in ("R", "C", "RC"):  # type 2: long horizons, large vehicles
        assert mean(shape + "2", horizon) > 2 * mean(shape + "1", horizon)
        assert mean(shape + "2", share) > 2 * mean(shape + "1", share)
    assert mean("C1", nearest) < 0.7 * mean("R1", nearest)  # clustered customers
    with pytest.raises(ValueError, match="family"):
        solomon_like_cvrptw(np.random.default_rng(0), 20, "X9")



RC101 = DATA / "solomon" / "RC101.100.15.vrptw"


def test_route_elimination_brings_r101_within_its_fleet():
    # the greedy construction needs 21 routes for R101's 20 vehicles; one elimination pass
    # mends it, keeping every window (the independent checker agrees)
    inst = load_instance(R101)
    routes = time_window_routes(inst)
    assert len(routes) == 21 and inst.max_vehicles == 20
    fixed = eliminate_routes(inst, routes, 20, time.perf_counter() + 10.0)
    assert len(fixed) == 20
    assert check_solution(inst, fixed) == []


def test_route_elimination_keeps_its_deadline_and_every_window():
    # RC101: 18 greedy routes for 15 vehicles; with 0.3 s the repair gets as far as it can
    inst = load_instance(RC101)
    routes = time_window_routes(inst)
    t0 = time.perf_counter()
    fixed = eliminate_routes(inst, routes, 15, t0 + 0.3, seed=1)
    assert time.perf_counter() - t0 < 0.8
    assert 15 <= len(fixed) < len(routes)
    problems = check_solution(inst, fixed)
    assert all("max_vehicles" in p for p in problems)  # only the fleet, never a window


def test_route_elimination_brings_rc101_within_its_fleet():
    # RC101: the greedy construction's 18 routes for 15 vehicles; the ejection pool gets to
    # 15 (0.04-1.2 s on the development machine; the former repair stopped at 16 in 3 s)
    inst = load_instance(RC101)
    routes = time_window_routes(inst)
    for seed in (0, 1):
        fixed = eliminate_routes(inst, routes, 15, time.perf_counter() + 20.0, seed=seed)
        assert len(fixed) == 15
        assert check_solution(inst, fixed) == []
        assert sorted(v for r in fixed for v in r) == sorted(v for r in routes for v in r)


def test_relocation_descent_shortens_repaired_routes_and_keeps_them_feasible():
    # the repair's ejections leave detours; the descent removes them without a new route
    inst = load_instance(RC101)
    routes = eliminate_routes(inst, time_window_routes(inst), 15, time.perf_counter() + 20.0)
    polished = relocate_descent(inst, routes, time.perf_counter() + 20.0)
    assert check_solution(inst, polished) == [] and len(polished) <= 15
    assert sorted(v for r in polished for v in r) == sorted(v for r in routes for v in r)
    assert inst.cost(polished) < 0.97 * inst.cost(routes)
    # a local optimum: a second descent finds nothing
    assert relocate_descent(inst, polished, time.perf_counter() + 20.0) == polished


@pytest.mark.parametrize("name", ["R101", "RC101", "generated"])
def test_exchange_descent_goes_past_relocation_and_keeps_every_rule(name):
    """The CVRPTW polish: tail exchanges, swaps and reversals after relocation shorten plans
    relocation alone leaves, keep capacity, windows and every customer, never add a route,
    and end at a fixed point of all four moves."""
    inst = (cvrptw_instance(20261200) if name == "generated"
            else load_instance(R101 if name == "R101" else RC101).with_fleet(None))
    routes = time_window_routes(inst)
    relocated = relocate_descent(inst, routes, time.perf_counter() + 20.0)
    polished = exchange_descent(inst, routes, time.perf_counter() + 20.0)
    assert check_solution(inst, polished) == []
    assert sorted(v for r in polished for v in r) == sorted(v for r in routes for v in r)
    assert len(polished) <= len([r for r in routes if r])
    assert inst.cost(polished) < 0.99 * inst.cost(relocated)
    assert exchange_descent(inst, polished, time.perf_counter() + 20.0) == polished


def test_exchange_descent_keeps_capacity_and_an_asymmetric_matrix():
    """Capacity binds (wide windows, vehicles of four customers) and the matrix is
    asymmetric (no reversals then): the plan stays feasible and never gets longer."""
    rng = np.random.default_rng(3)
    n = 30
    matrix = rng.uniform(1, 10, (n, n)).round(2)
    np.fill_diagonal(matrix, 0)
    inst = CVRPTWInstance(distance_matrix=matrix.tolist(), demands=[0] + [1] * (n - 1),
                          capacity=4, time_windows=[[0, 1000]] * n)
    routes = [list(range(k, min(k + 4, n))) for k in range(1, n, 4)]
    polished = exchange_descent(inst, routes, time.perf_counter() + 20.0)
    assert check_solution(inst, polished) == []
    assert max(sum(1 for _ in r) for r in polished) <= 4
    assert inst.cost(polished) < inst.cost(routes)
    # a deadline already passed leaves the plan as it is
    assert exchange_descent(inst, routes, time.perf_counter() - 1.0) == routes


def test_insertion_places_agree_with_the_route_check():
    # the repair's O(1) place test (begin times forward, latest begins backward) must say
    # exactly what simulating the route with the customer inserted says
    rng = np.random.default_rng(0)
    for path in (R101, RC101):
        inst = load_instance(path)
        sched = Schedules(inst)
        routes = time_window_routes(inst)
        for _ in range(40):
            route = routes[int(rng.integers(len(routes)))]
            c = int(rng.integers(1, inst.n))
            if c in route:
                route = [v for v in route if v != c]
            load = sum(int(inst.demands[v]) for v in route)
            places = {p for _, p in sched.insertions(c, route, load)}
            for p in range(len(route) + 1):
                fits = load + int(inst.demands[c]) <= inst.capacity
                assert (p in places) == (fits and sched.ok([*route[:p], c, *route[p:]]))


def test_route_elimination_leaves_what_cannot_merge():
    # every customer fills a vehicle: nothing can move, and routes within the cap stay as given
    inst = CVRPTWInstance(coords=[[0, 0], [1, 0], [0, 1], [1, 1]], demands=[0, 5, 5, 5],
                          capacity=5, time_windows=[[0, 100]] * 4, max_vehicles=3)
    routes = [[1], [2], [3]]
    assert eliminate_routes(inst, routes, 2, time.perf_counter() + 1.0) == routes
    assert eliminate_routes(inst, [[3], [1, 2]], 2, time.perf_counter() + 1.0) == [[3], [1, 2]]


def test_reld_solves_cvrptw_with_its_one_strategy_model():
    """ReLD has no windows of its own: the reld solver's CVRPTW model is PolyNet's reduced to
    one strategy, searched from distinct forced first customers."""
    sol = solve(load_instance(C101), "reld", Budget(time_limit=1.5, seed=0))
    assert sol.feasible and sol.solver == "reld"
    assert sol.stats["starts"] > 1  # forced first customers, not one trajectory per strategy
    assert "strategies" not in sol.stats and "strategy" not in sol.stats["winner"]
    assert sol.cost < 1.05 * C101_BEST and sol.wall_time < 2.0


def test_the_final_cvrptw_plan_is_polished_within_the_time_limit():
    """R201 kept its fleet and so never got the repair's relocation descent: more time gave a
    worse plan (12,127 at 0.1 s, 12,819 at 1 s). Every CVRPTW result now ends with it.
    (2 s: at 1 s a machine busy with three other jobs gave 12,527-12,645.)

    How many solutions 2 s decode depends on the machine (11,720 here, 12,241 = 1.071x on a
    busy CI run), so the exact claim is that the plan is the descent's fixed point; the
    cost bound only has to catch the unpolished 12,819 (1.121x)."""
    inst = load_instance(R201)
    sol = solve(inst, "polynet", Budget(time_limit=2.0, seed=0))
    assert sol.feasible and sol.wall_time < 2.3
    polish = sol.stats["polish"]
    assert polish["gain_percent"] >= 0 and polish["seconds"] < 0.2
    again = descent.polish(inst, sol.routes, time.perf_counter() + 5.0)
    if polish["converged"]:  # the descent ended on its own: the plan is its fixed point
        assert again["gain_percent"] == 0 and again["routes"] == sol.routes
    else:  # the time limit ended it (a CI run: 0.10% was left): only a move or two remain
        assert again["gain_percent"] < 0.5
    assert sol.cost < 1.10 * R201_BEST


def test_polynet_mends_r101s_fleet_and_keeps_time_to_reconstruct():
    # PolyNet's own routes for R101 end one over the 20 vehicles (the benchmark: over
    # the cap at 5 s); the repair runs before reconstruction, so the solve is feasible
    sol = solve(load_instance(R101), "polynet", Budget(time_limit=3.0, seed=0))
    assert sol.feasible and sum(1 for r in sol.routes if r) <= 20
    repair = sol.stats.get("fleet_repair")
    assert repair is None or (repair["routes_before"] > 20 and repair["routes_after"] == 20)
    assert sol.wall_time < 3.6
    assert sol.cost < 1.1 * R101_BEST


def test_polynet_keeps_its_time_on_rc101(monkeypatch):
    # Without the fleet repair RC101 stays over its fleet cap, so PolyNet samples with full
    # vehicles to the end; a sampling round predicted from a tiny one once took 2.4 times its
    # prediction (5.4-5.6 s walls at 5 s); rounds now grow at most GROWTH-fold past the
    # largest one measured
    inst = load_instance(RC101)
    solve(cvrptw_instance(seed=7, n=21), "polynet", Budget(time_limit=0.3))  # warmed up
    with monkeypatch.context() as patched:
        patched.setattr(fleet, "eliminate_routes", lambda _inst, routes, *a, **k: routes)
        t0 = time.perf_counter()
        with pytest.raises(NoSolutionError) as err:  # still over the cap: a 422
            solve(inst, "polynet", Budget(time_limit=5.0, seed=0))
        wall = time.perf_counter() - t0
    assert err.value.field == "max_vehicles" and "max_vehicles is 15" in str(err.value)
    assert wall < 5.4, wall


def test_polynet_mends_rc101s_fleet():
    # PolyNet's own routes for RC101 end at 16 for its 15 vehicles (OR-Tools at 5 s misses the
    # cap too); the ejection-pool repair brings them to 15 within the time limit
    sol = solve(load_instance(RC101), "polynet", Budget(time_limit=5.0, seed=1))
    assert sol.feasible and sum(1 for r in sol.routes if r) == 15, sol.stats
    assert sol.stats["fleet_repair"]["routes_after"] == 15
    assert sol.wall_time < 5.4


def test_pyvrp_says_the_fleet_may_be_too_small_when_it_finds_nothing():
    """README's CVRPTW with one vehicle: no feasible solution exists, and 'give it more time'
    alone was misleading."""
    from solvers.errors import NoSolutionError

    inst = CVRPTWInstance(coords=np.array([[0, 0], [10, 0], [0, 10], [20, 0]], float),
                          distance="EUC_2D", demands=np.array([0, 3, 3, 3]), capacity=9,
                          max_vehicles=1, time_windows=np.array([[0, 50], [0, 15], [0, 50],
                                                                 [28, 30]], float),
                          service_times=np.array([0, 5, 5, 0], float))
    with pytest.raises(NoSolutionError, match=r"at most 1 vehicle: the fleet \(max_vehicles\)"):
        solve(inst, "pyvrp", Budget(time_limit=0.5, seed=0))


@pytest.mark.parametrize("solver", ["ortools", "pyvrp"])
def test_a_customer_reachable_only_exactly_is_named_not_dropped(solver):
    """Leaving the depot at 5 over a distance of exactly √2 into a window closing at 5 + √2
    is on time, but one step late once rounded up to integer time: OR-Tools answered with
    customer 1 dropped (infeasible), PyVRP with 'no solution, give it more time'. Now the
    window is named; a window wider by a hair is solved. (With whole-number times the time
    scale is whole too, so a distance of exactly 1 into a window closing at 6 is solved.)"""
    from solvers.errors import InstanceError

    def tight(close: float, node1: tuple[float, float]) -> CVRPTWInstance:
        return CVRPTWInstance(
            coords=np.array([[0, 0], node1, [1, 2], [2, 0], [2, 2]], float),
            demands=np.array([0, 1, 2, 3, 1]), capacity=5, service_times=1,
            time_windows=np.array([[5, 100], [0, close], [0, 50], [0, 50], [0, 50]], float))

    exact = 5 + math.sqrt(2)
    with pytest.raises(InstanceError) as exc:
        solve(tight(exact, (1, 1)), solver, Budget(time_limit=0.5, seed=0))
    assert exc.value.field == "time_windows[1]" and "very end" in exc.value.message
    assert solve(tight(exact, (1, 1)), "nearest_neighbor",
                 Budget(time_limit=0.5, seed=0)).feasible
    assert solve(tight(exact + 0.001, (1, 1)), solver, Budget(time_limit=0.5, seed=0)).feasible
    assert solve(tight(6, (0, 1)), solver, Budget(time_limit=0.5, seed=0)).feasible


@pytest.mark.parametrize("solver", ["ortools", "pyvrp"])
def test_a_window_narrower_than_the_integer_time_step_is_named(solver):
    """[√2, √2] is valid (polynet and nearest_neighbor serve it) but empty once rounded
    inward to integer time: OR-Tools failed with a bare 'CP Solver fail', PyVRP with a
    ValueError; now an InstanceError naming the window."""
    from solvers.errors import InstanceError

    inst = CVRPTWInstance(coords=np.array([[0, 0], [1, 1], [3, 0]], float),
                          demands=np.array([0, 1, 1]), capacity=10,
                          time_windows=np.array([[0, 100], [2 ** 0.5, 2 ** 0.5], [0, 100]]))
    with pytest.raises(InstanceError) as exc:
        solve(inst, solver, Budget(time_limit=0.5, seed=0))
    assert exc.value.field == "time_windows[1]" and "nearest_neighbor" in exc.value.message
    assert solve(inst, "nearest_neighbor", Budget(time_limit=0.5, seed=0)).feasible


def test_ortools_dropping_every_customer_is_no_solution():
    """850 customers at 0.05 s (0.1 s now, the floor): the first answer dropped them all and
    came back as a 'solution' with no routes and a NaN cost; it is NoSolutionError (as for
    CVRP)."""
    import math

    from solvers.errors import NoSolutionError

    n = 850  # below the size where ortools asks for a minimum time limit
    xy = np.random.default_rng(n).random((n, 2)) * 100
    inst = CVRPTWInstance(coords=xy, demands=np.array([0] + [1] * (n - 1)), capacity=10,
                          time_windows=np.array([[0, 100000]] * n, float), service_times=1)
    try:
        sol = solve(inst, "ortools", Budget(time_limit=0.1, seed=0))
    except NoSolutionError as exc:
        # all dropped, or (on a loaded machine) no first answer at all within the limit
        assert ("every customer still dropped" in str(exc)
                or "ROUTING_FAIL_TIMEOUT" in str(exc)), str(exc)
    else:  # a faster machine may route some: then they are routes with a real cost
        assert any(sol.routes) and math.isfinite(sol.cost)


def test_the_neural_fleet_error_names_solvers_that_take_time_windows():
    """reld's and polynet's 422 for a plan over the fleet pointed CVRPTW users to ils, which
    does not solve CVRPTW (seen in a benchmark's traceback)."""
    from solvers.routing.classical.fleet import over_fleet_error

    r101 = load_instance(R101)
    routes = time_window_routes(r101)  # 21 routes for a fleet of 20
    message = str(over_fleet_error("reld", r101, routes, {}))
    assert "21 vehicles" in message and "try pyvrp or ortools" in message
    assert "ils" not in message
    # an elimination that removed no route says so (QA: "only from 26 down to 26 routes")
    stuck = {"fleet_repair": {"routes_before": 21, "routes_after": 21, "seconds": 0.2}}
    message = str(over_fleet_error("reld", r101, routes, stuck))
    assert "removed none of its 21 routes" in message and "down to" not in message
    moved = {"fleet_repair": {"routes_before": 23, "routes_after": 21, "seconds": 0.2}}
    assert "only from 23 down to 21" in str(over_fleet_error("reld", r101, routes, moved))


@pytest.mark.parametrize("solver", ["polynet", "reld"])
def test_the_best_plans_of_distinct_strategies_are_each_rebuilt(solver):
    """CVRPTW under a time limit: the best decoded plans of up to three distinct strategies
    (distinct costs for reld) are each reconstructed and polished on a share of the time,
    and the cheapest kept (PolyNet's complementary strategies were thrown away by rebuilding
    only the single best: 128 CVRPTW100 at 4 s, -0.26% for polynet)."""
    inst = cvrptw_instance(20261200)
    sol = solve(inst, solver, Budget(time_limit=3.0, seed=0))
    assert sol.feasible, sol.violations
    rebuilt = sol.stats["reconstruction"]
    assert 2 <= rebuilt["candidates"] <= 3 and 0 <= rebuilt["chosen"] < rebuilt["candidates"]
    assert sol.wall_time < 3.3
    # the answer is the cheapest candidate's: its cost is the polished plan's own
    assert sol.cost == pytest.approx(inst.cost(sol.routes))


def test_pyvrp_reports_no_best_cost_while_it_has_no_feasible_plan() -> None:
    """Regression: a failed job's progress said best_cost 9.2e18, PyVRP's cost of an infeasible
    solution passed on as if it were one."""
    inst = CVRPTWInstance(coords=[[0, 0], [10, 0], [0, 10], [20, 0]], distance="EUC_2D",
                          demands=[0, 3, 3, 3], capacity=9, max_vehicles=1,
                          time_windows=[[0, 50], [0, 10], [0, 10], [20, 20]],
                          service_times=[0, 5, 5, 0])
    events: list[ProgressEvent] = []
    with pytest.raises(NoSolutionError):
        solve(inst, "pyvrp", Budget(time_limit=0.6, seed=0), events.append)
    assert events and all(e.best_cost is None for e in events)
