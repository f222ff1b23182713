"""The classical CVRP descent that ends the neural solvers' CVRP plans."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from solvers.contract import Budget
from solvers.routing.classical.descent import cvrp_descent, polish
from solvers.routing.generate import random_cvrp
from solvers.routing.problem import CVRPInstance
from solvers.routing.solve import solve
from tests.conftest import DATA


def _random_plan(inst: CVRPInstance, rng: np.random.Generator) -> list[list[int]]:
    """A feasible but poor plan: customers in random order, a new route when one is full."""
    routes: list[list[int]] = [[]]
    load = 0
    for c in rng.permutation([i for i in range(inst.n) if i != inst.depot]):
        q = int(inst.demands[c])
        if load + q > inst.capacity:
            routes.append([])
            load = 0
        routes[-1].append(int(c))
        load += q
    return routes


def _valid(inst: CVRPInstance, routes: list[list[int]]) -> bool:
    seen = sorted(c for r in routes for c in r)
    loads_ok = all(sum(int(inst.demands[c]) for c in r) <= inst.capacity for r in routes)
    return seen == [i for i in range(inst.n) if i != inst.depot] and loads_ok


def _relocation_gain(inst: CVRPInstance, routes: list[list[int]]) -> float:
    """The best saving of any single-customer move to any place (brute force, by cost)."""
    base = inst.cost(routes)
    best = 0.0
    for a, route in enumerate(routes):
        for i, c in enumerate(route):
            rest = [list(r) for r in routes]
            del rest[a][i]
            for b, other in enumerate(rest):
                if b != a and sum(int(inst.demands[x]) for x in other) + int(
                        inst.demands[c]) > inst.capacity:
                    continue
                for p in range(len(other) + 1):
                    trial = [list(r) for r in rest]
                    trial[b].insert(p, c)
                    best = max(best, base - inst.cost(trial))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_the_descent_keeps_every_customer_and_capacity_and_only_shortens(seed: int) -> None:
    rng = np.random.default_rng(seed)
    xy, dem, cap = random_cvrp(rng, 60)
    depot = seed % 3  # the depot need not be node 0
    xy[[0, depot]], dem[[0, depot]] = xy[[depot, 0]], dem[[depot, 0]]
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap, depot=depot)
    plan = _random_plan(inst, rng)
    out = cvrp_descent(inst, plan, time.perf_counter() + 10.0)
    assert _valid(inst, out)
    assert inst.cost(out) < 0.8 * inst.cost(plan)  # a random plan is far from a local optimum
    assert len(out) <= len(plan)
    # a local optimum: a second descent finds nothing
    assert inst.cost(cvrp_descent(inst, out, time.perf_counter() + 10.0)) == pytest.approx(
        inst.cost(out))


def test_with_every_neighbour_no_relocation_is_left_on_an_asymmetric_matrix() -> None:
    """The moves' deltas are exact for asymmetric distances (no route is reversed): with
    all other customers as neighbours, brute force finds no relocation that still saves."""
    rng = np.random.default_rng(7)
    n = 14
    xy = rng.random((n, 2))
    base = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
    matrix = base * (1 + rng.random((n, n)))  # asymmetric, with a diagonal the cost ignores
    dem = np.r_[0, rng.integers(1, 5, n - 1)]
    inst = CVRPInstance(coords=xy, distance_matrix=matrix, demands=dem, capacity=10)
    plan = _random_plan(inst, rng)
    out = cvrp_descent(inst, plan, time.perf_counter() + 10.0, neighbours=n - 1)
    assert _valid(inst, out) and inst.cost(out) < inst.cost(plan)
    assert _relocation_gain(inst, out) <= 1e-9


def test_swap_and_two_opt_star_find_what_relocation_cannot() -> None:
    """Two full routes (capacity 3, three customers each), so no customer can change route
    by relocation: the exchanges between routes reach the brute-force optimum."""
    left = [(0.1, y) for y in (1, 2, 3)]
    right = [(0.9, y) for y in (1, 2, 3)]
    xy = np.array([(0.5, 0.0), *left, *right])
    inst = CVRPInstance(coords=xy, demands=[0, 1, 1, 1, 1, 1, 1], capacity=3)
    crossed = [[1, 2, 6], [4, 5, 3]]
    out = cvrp_descent(inst, crossed, time.perf_counter() + 5.0)
    best = min(inst.cost([list(p[:3]), list(p[3:])])
               for p in itertools.permutations(range(1, 7)))
    assert _valid(inst, out) and inst.cost(crossed) > 1.1 * best
    assert inst.cost(out) == pytest.approx(best)


def test_a_passed_deadline_stops_the_descent_but_not_the_polish() -> None:
    """The descent itself stops at its deadline; the solvers' polish still gets
    MIN_POLISH_SECONDS when a reconstruction round overran the time kept for it (a CI run's
    plan came back unpolished)."""
    from solvers.routing.classical.warmup import warm_up

    warm_up()  # as the solvers do at start-up: alone, loading the kernels took the 50 ms
    rng = np.random.default_rng(3)
    xy, dem, cap = random_cvrp(rng, 40)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    plan = _random_plan(inst, rng)
    assert cvrp_descent(inst, plan, time.perf_counter() - 1.0) == plan
    out = polish(inst, plan, time.perf_counter() - 1.0)
    assert out["factor"] < 0.9 and out["seconds"] < 0.1


@pytest.mark.parametrize("solver", ["reld", "polynet"])
def test_neural_cvrp_plans_end_with_the_descent(solver: str) -> None:
    rng = np.random.default_rng(11)
    xy, dem, cap = random_cvrp(rng, 51)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    sol = solve(inst, solver, Budget(time_limit=1.0, seed=0))
    assert sol.feasible and sol.wall_time < 1.2
    stats = sol.stats["polish"]
    assert stats["gain_percent"] >= 0 and stats["seconds"] < 0.2
    # nothing is left for the descent to find in the returned plan
    assert inst.cost(cvrp_descent(inst, sol.routes, time.perf_counter() + 5.0)) == (
        pytest.approx(sol.cost))


def test_permutations_of_a_tiny_instance_reach_the_optimum() -> None:
    """Four customers, capacity for two: the descent from every split of every order ends at
    a plan no worse than 2% above the brute-force optimum."""
    xy = np.array([(0.5, 0.5), (0.1, 0.1), (0.2, 0.1), (0.9, 0.9), (0.8, 0.9)])
    inst = CVRPInstance(coords=xy, demands=[0, 1, 1, 1, 1], capacity=2)
    best = min(inst.cost([list(p[:2]), list(p[2:])])
               for p in itertools.permutations([1, 2, 3, 4]))
    for p in itertools.permutations([1, 2, 3, 4]):
        out = cvrp_descent(inst, [list(p[:2]), list(p[2:])], time.perf_counter() + 5.0)
        assert _valid(inst, out) and inst.cost(out) <= 1.02 * best


@pytest.mark.parametrize("convention", ["exact", "EUC_2D", "CEIL_2D", "FLOOR_2D", "ATT"])
def test_the_descent_costs_edges_as_the_instance_does(convention: str) -> None:
    """The numba kernels compute distances on demand; they must be the instance's own, to
    the bit, on every pair (route ends, ids from n up, stand for the depot)."""
    from solvers.routing.classical.moves import dist, distance_data

    xy = np.random.default_rng(5).random((200, 2)) * 1000
    xy[7] = xy[3]  # a duplicate point: distance 0 under every convention
    inst = CVRPInstance(coords=xy, demands=[0] + [1] * 199, capacity=10, distance=convention)
    coords, mat, conv, _ = distance_data(inst)
    dense = inst.dense_matrix()
    n = inst.n
    got = np.array([[dist(a, b, coords, mat, conv, n, 0) for b in range(n)] for a in range(n)])
    np.fill_diagonal(dense, 0.0)
    assert np.array_equal(got, dense)
    assert dist(n + 3, 5, coords, mat, conv, n, 0) == dense[0, 5]


@pytest.mark.parametrize("solver", ["reld", "polynet"])
def test_a_tight_cvrp_fleet_is_kept(solver: str) -> None:
    """Regression: reld and polynet ignored max_vehicles on a plain CVRP (6 routes
    for a fleet of 5 here, where OR-Tools and PyVRP find 5; 27 for 26 on X-n101-k25). The
    route elimination that mends CVRPTW fleets now mends CVRP ones."""
    c = np.random.default_rng(21).random((11, 2))
    inst = CVRPInstance(name="bp", coords=c, demands=[0, 6, 6, 6, 4, 4, 4, 7, 3, 7, 3],
                        capacity=10, max_vehicles=5)
    sol = solve(inst, solver, Budget(time_limit=1.0, seed=0))
    assert sol.feasible and len([r for r in sol.routes if r]) <= 5, sol.stats
    assert sol.wall_time < 1.2


def test_route_elimination_works_without_windows() -> None:
    from solvers.routing.classical.fleet import fleet_repair

    c = np.random.default_rng(21).random((11, 2))
    inst = CVRPInstance(coords=c, demands=[0, 6, 6, 6, 4, 4, 4, 7, 3, 7, 3], capacity=10,
                        max_vehicles=5)
    six = [[1, 4], [2, 5], [3, 6], [7, 8], [9, 10], []]
    six[5] = [six[3].pop()]  # 8 alone: six routes
    out = fleet_repair(inst, six, time.perf_counter() + 5.0, seed=0)
    assert out["routes_before"] == 6 and out["routes"] is not None
    assert len(out["routes"]) == 5 and _valid(inst, out["routes"])


def test_a_plain_cvrp_above_the_time_window_limit_is_repaired_too() -> None:
    """Above ELIMINATION_MAX_NODES a plain CVRP goes to the numba elimination
    (``eliminate_capacity_routes``), which has no size limit (the time-window one keeps it):
    2,010 single-customer routes go down to the bin-packing bound of 201 routes, every
    customer once, every load within capacity."""
    from solvers.routing.classical.fleet import ELIMINATION_MAX_NODES, fleet_repair

    n = ELIMINATION_MAX_NODES + 11
    inst = CVRPInstance(coords=np.random.default_rng(3).random((n, 2)),
                        demands=[0] + [1] * (n - 1), capacity=10, max_vehicles=(n - 1) // 10)
    routes = [[c] for c in range(1, n)]
    out = fleet_repair(inst, routes, time.perf_counter() + 30.0, seed=0)
    assert "skipped" not in out
    assert out["routes"] is not None and len(out["routes"]) == (n - 1) // 10
    assert _valid(inst, out["routes"])


def test_a_time_window_repair_above_the_elimination_limit_says_it_was_skipped() -> None:
    """Above ELIMINATION_MAX_NODES the time-window repair leaves the plan as it is; its stats
    (which the neural solvers report) say why instead of a zero-second 'elimination'."""
    from solvers.routing.classical.fleet import ELIMINATION_MAX_NODES, fleet_repair
    from solvers.routing.generate import cvrptw_instance

    inst = cvrptw_instance(7, n=ELIMINATION_MAX_NODES + 10)
    routes = [[c] for c in range(1, inst.n)]
    inst = inst.with_fleet(inst.n - 2)
    out = fleet_repair(inst, routes, time.perf_counter() + 5.0, seed=0)
    assert out["routes"] is None and out["routes_after"] == inst.n - 1
    assert f"up to {ELIMINATION_MAX_NODES:,} nodes" in out["skipped"]


@pytest.mark.parametrize("seed", [1, 6])
def test_a_tight_capacity_fleet_is_met_by_ejecting_small_customers(seed: int) -> None:
    """X-n176-k26 (demand fills 98.4% of 26 vehicles) from ``ils``'s split start of 33-34
    routes: elimination reaches 26 routes in about 0.4 s now that the pool weighs its
    counters by demand after a failed attempt; with unweighed counters seed 1 was still at 27
    routes after 1.8 s."""
    from solvers.routing.classical.construct import random_insertion_routes
    from solvers.routing.classical.descent import polish_routes
    from solvers.routing.classical.fleet import eliminate_routes
    from solvers.routing.io.formats import load_instance

    inst = load_instance(DATA / "X-n176-k26.vrp")
    assert isinstance(inst, CVRPInstance) and inst.coords is not None
    start = polish_routes(np.asarray(inst.coords, dtype=float), inst.depot,
                          random_insertion_routes(inst, seed))
    assert len(start) > 30
    # the wall-clock deadline is generous so that other processes on the machine cannot
    # fail the test; the speed claim is held on this process's own CPU time
    cpu = time.process_time()
    out = eliminate_routes(inst, start, 26, time.perf_counter() + 6.0, seed)
    assert len(out) == 26 and _valid(inst, out)
    assert time.process_time() - cpu < 3.0


@pytest.mark.parametrize("solver", ["reld", "polynet"])
def test_neural_tsp_tours_end_with_two_opt(solver: str) -> None:
    """A 600-node TSP starts from random insertion and the neural reconstruction; 2-opt +
    Or-opt then takes out what the reconstruction's stretches left (about 2% at 1,000
    nodes), and the tour stays a tour."""
    from solvers.routing.classical.descent import polish_tour
    from solvers.routing.problem import TSPInstance

    inst = TSPInstance(coords=np.random.default_rng(600).random((600, 2)))
    sol = solve(inst, solver, Budget(time_limit=2.0, seed=0))
    assert sol.feasible and sorted(sol.routes[0]) == list(range(600))
    stats = sol.stats["polish"]
    assert stats["gain_percent"] > 0 and stats["seconds"] < 0.1 and sol.wall_time < 2.2
    again = polish_tour(inst, sol.routes[0], time.perf_counter() + 1.0)
    assert again["factor"] == pytest.approx(1.0)  # a 2-opt + Or-opt local optimum already


def test_the_tour_polish_never_worsens_the_instances_own_cost() -> None:
    """Moves are judged on Euclidean lengths; on a matrix that disagrees the tour is kept."""
    from solvers.routing.classical.descent import polish_tour
    from solvers.routing.problem import TSPInstance

    rng = np.random.default_rng(9)
    xy = rng.random((30, 2))
    matrix = rng.random((30, 30)) * 10  # unrelated to the coordinates
    inst = TSPInstance(coords=xy, distance_matrix=matrix)
    tour = list(range(30))
    out = polish_tour(inst, tour, time.perf_counter() + 1.0)
    assert inst.tour_cost(out["tour"]) <= inst.tour_cost(tour) and out["factor"] <= 1.0


def test_the_polish_runs_on_large_cvrps_without_a_matrix() -> None:
    """The descent once kept a dense matrix and skipped plans above 2,000 nodes; its numba
    kernels now compute distances on demand, so a 20,000-node plan is polished too."""
    rng = np.random.default_rng(3)
    n = 20_000
    xy = rng.random((n, 2)) * 1000
    dem = rng.integers(1, 10, n)
    dem[0] = 0
    inst = CVRPInstance(coords=xy, demands=dem, capacity=100)
    plan = _random_plan(inst, rng)
    t0 = time.perf_counter()
    out = polish(inst, plan, t0 + 1.0)
    assert time.perf_counter() - t0 < 3.0  # the deadline holds (neighbour lists included)
    assert "skipped" not in out and out["gain_percent"] > 5.0, out["gain_percent"]
    assert _valid(inst, out["routes"])
    assert inst.cost(out["routes"]) == pytest.approx(inst.cost(plan) * out["factor"])


@pytest.mark.parametrize("seed", range(3))
def test_kicks_keep_every_customer_and_capacity_and_beat_the_descent(seed: int) -> None:
    """cvrp_kicks (ruin and recreate around a customer, descent there, kept only if shorter)
    returns a valid plan no longer than the descent's, within its deadline."""
    from solvers.routing.classical.kicks import cvrp_kicks
    from solvers.routing.classical.warmup import warm_up

    warm_up()  # numba compiles on first use: not inside the timed part
    rng = np.random.default_rng(seed)
    xy, dem, cap = random_cvrp(rng, 150)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    plan = _random_plan(inst, rng)
    descended = cvrp_descent(inst, plan, time.perf_counter() + 10.0)
    t0 = time.perf_counter()
    kicked, kept = cvrp_kicks(inst, plan, t0 + 0.3, seed)
    assert time.perf_counter() - t0 < 0.3 + 0.05
    assert _valid(inst, kicked) and all(int(dem[r].sum()) <= inst.capacity for r in kicked)
    assert kept > 0 and inst.cost(kicked) < inst.cost(descended)


def test_annealed_kicks_return_the_shortest_plan_they_met() -> None:
    """At a temperature that keeps nearly every kick the plan wanders far above its start;
    cvrp_kicks must still hand back the shortest plan it met, never the last one, and
    report only the shortest lengths."""
    from solvers.routing.classical.kicks import cvrp_kicks
    from solvers.routing.classical.warmup import warm_up

    warm_up()
    rng = np.random.default_rng(7)
    xy, dem, cap = random_cvrp(rng, 150)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    plan = _random_plan(inst, rng)
    descended = inst.cost(cvrp_descent(inst, plan, time.perf_counter() + 10.0))
    heard: list[float] = []
    kicked, kept = cvrp_kicks(inst, plan, time.perf_counter() + 0.3, 0,
                              on_slice=lambda length, _: heard.append(length),
                              slice_seconds=0.02, temperature=(50.0, 50.0))
    assert kept > 10 and _valid(inst, kicked)
    assert all(int(dem[r].sum()) <= inst.capacity for r in kicked)
    assert heard and heard == sorted(heard, reverse=True)
    assert inst.cost(kicked) <= min(descended, heard[-1]) + 1e-9
    # the same kicks kept only when shorter end below the hot run's start
    cold, _ = cvrp_kicks(inst, plan, time.perf_counter() + 0.3, 0, temperature=(0.0, 0.0))
    assert inst.cost(cold) < descended


def test_kick_temperature_cools_geometrically_over_the_whole_run() -> None:
    from solvers.routing.classical.kicks import KICK_TEMPERATURE, kick_temperature

    hot, cold = KICK_TEMPERATURE
    assert kick_temperature(0.0, 1.0) == pytest.approx((hot, cold))
    assert kick_temperature(-1.0, 2.0) == pytest.approx((hot, cold))  # clamped
    mid = kick_temperature(0.5, 0.5)[0]
    assert mid == pytest.approx((hot * cold) ** 0.5)


@pytest.mark.parametrize("seed", range(4))
def test_kicks_relink_and_track_only_the_routes_they_touch(seed: int) -> None:
    """The kick kernel saves only the routes a kick can reach, relinks them on a rejection
    and copies only changed routes into the best plan: its running lengths must equal the
    plans' recomputed lengths, and both plans must hold every customer once."""
    from solvers.routing.classical import kicks, moves

    rng = np.random.default_rng(seed)
    xy, dem, cap = random_cvrp(rng, 300)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    plan = moves.Plan(inst, _random_plan(inst, rng), moves.NEIGHBOURS)
    arrays = (plan.succ, plan.pred, plan.route_of, plan.cum, plan.load)
    best = [a.copy() for a in arrays]
    dirty = np.zeros(plan.count, dtype=np.bool_)
    total = best_total = moves.plan_length(plan.succ, plan.n, plan.count, plan.xy, plan.mat,
                                        plan.conv, plan.depot)
    kept = 0
    for _ in range(20):
        seeds = rng.integers(1, inst.n, 25)
        slack = rng.random(25) * (0.3 * total / inst.n if seed % 2 else 0.0)
        total, k, best_total, _ = kicks._kicks(
            seeds, rng.random((25, 20)), slack, 20, total, best_total, *arrays, *best, dirty,
            plan.demand, plan.cap, plan.near, plan.xy, plan.mat, plan.conv, plan.n,
            plan.depot, plan.count, plan.eps)
        kept += k
        for succ, length in ((plan.succ, total), (best[0], best_total)):
            assert moves.plan_length(succ, plan.n, plan.count, plan.xy, plan.mat, plan.conv,
                                  plan.depot) == pytest.approx(length, rel=1e-9)
    assert kept > 0 and best_total <= total + 1e-9
    current = plan.routes()
    plan.succ[:] = best[0]
    for routes in (current, plan.routes()):
        assert _valid(inst, routes) and all(int(dem[r].sum()) <= cap for r in routes)


def _full_plan(seed: int, vehicles: int) -> tuple[CVRPInstance, list[list[int]]]:
    """Customers whose demands fill ``vehicles`` vehicles of 100 exactly, scattered at random,
    and a packing of them into that many routes (no route has a unit of room)."""
    from solvers.routing.classical.construct import random_insertion_routes
    from solvers.routing.classical.fleet import pack_routes

    rng = np.random.default_rng(seed)
    demands: list[int] = []
    for _ in range(vehicles):
        cuts = np.sort(rng.choice(np.arange(1, 100), 3, replace=False))
        demands += np.diff([0, *cuts, 100]).tolist()
    inst = CVRPInstance(coords=rng.random((len(demands) + 1, 2)), demands=[0, *demands],
                        capacity=100, max_vehicles=vehicles)
    packed = pack_routes(inst, random_insertion_routes(inst, 0), vehicles,
                         time.perf_counter() + 2.0, seed=0)
    assert packed is not None and len(packed) == vehicles
    return inst, packed


@pytest.mark.parametrize("seed", range(3))
def test_penalized_kicks_end_feasible_and_track_only_the_routes_they_touch(seed: int) -> None:
    """The penalized kick kernel overloads routes inside a kick, repairs them and keeps only
    feasible plans: between calls every route keeps the capacity, every customer is there
    once, and its running lengths equal the plans' recomputed ones; on plans with no room
    at all (where every plain kick fails) it keeps kicks."""
    from solvers.routing.classical import kicks, moves
    from solvers.routing.classical.penalized import penalized_kicks

    inst, packed = _full_plan(seed, 10)
    rng = np.random.default_rng(seed)
    plan = moves.Plan(inst, packed, moves.NEIGHBOURS)
    arrays = (plan.succ, plan.pred, plan.route_of, plan.cum, plan.load)
    best = [a.copy() for a in arrays]
    dirty = np.zeros(plan.count, dtype=np.bool_)
    total = best_total = moves.plan_length(plan.succ, plan.n, plan.count, plan.xy, plan.mat,
                                        plan.conv, plan.depot)
    start = total
    kept = feasible = 0
    size = kicks.PENALIZED_RUIN
    for _ in range(40):
        seeds = rng.integers(1, inst.n, 25)
        slack = rng.random(25) * (0.3 * total / inst.n if seed % 2 else 0.0)
        total, k, best_total, fine = penalized_kicks(
            seeds, rng.random((25, size)), slack, size, total, best_total, 50.0, *arrays,
            *best, dirty, plan.demand, plan.cap, plan.near, plan.xy, plan.mat, plan.conv,
            plan.n, plan.depot, plan.count, plan.eps)
        kept += k
        feasible += fine
        assert int(plan.load.max()) <= inst.capacity
        for succ, length in ((plan.succ, total), (best[0], best_total)):
            assert moves.plan_length(succ, plan.n, plan.count, plan.xy, plan.mat, plan.conv,
                                  plan.depot) == pytest.approx(length, rel=1e-9)
        assert _valid(inst, plan.routes())
    kicked = plan.routes()
    assert kept > 0 and feasible >= kept and best_total <= total + 1e-9
    assert best_total < start and len(kicked) <= 10


def test_kicks_with_room_never_turn_penalized(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain CVRPs and ordinary caps keep the plain kicks: the penalized ones start only when
    19 in 20 kicks fail for want of room."""
    from solvers.routing.classical import kicks
    from solvers.routing.classical.kicks import cvrp_kicks
    from solvers.routing.classical.warmup import warm_up

    def refuse(*_: object) -> None:
        raise AssertionError("penalized kicks on a plan with room")

    warm_up()
    monkeypatch.setattr(kicks, "penalized_kicks", refuse)
    rng = np.random.default_rng(3)
    xy, dem, cap = random_cvrp(rng, 150)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    kicked, kept = cvrp_kicks(inst, _random_plan(inst, rng), time.perf_counter() + 0.3, 0)
    assert kept > 0 and _valid(inst, kicked)


def test_the_first_descent_of_the_kicks_reports_while_it_runs() -> None:
    """ils's kicks start with a descent of the whole plan (about 15 s at 100K nodes) that
    went by without a report; it now tells ``on_slice`` the starting length, with no kick
    kept, every ``slice_seconds``."""
    from solvers.routing.classical.kicks import cvrp_kicks
    from solvers.routing.classical.warmup import warm_up

    warm_up()
    rng = np.random.default_rng(4)
    xy, dem, cap = random_cvrp(rng, 2_000)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    plan = _random_plan(inst, rng)
    reports: list[tuple[float, int]] = []
    cvrp_kicks(inst, plan, time.perf_counter() + 0.5, 0, slice_seconds=0.005,
               on_slice=lambda length, kept: reports.append((length, kept)))
    assert reports[0] == (pytest.approx(inst.cost(plan)), 0)
    assert reports[-1][0] < inst.cost(plan)
