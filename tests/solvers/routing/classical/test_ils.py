"""Iterated local search (solvers.routing.classical.ils): kicks keep a permutation, never
lengthen the tour, account for their gain exactly (the undo log restores rejected kicks), and the
solver reaches a known optimum's neighbourhood on a real TSPLIB instance."""

from __future__ import annotations

import time

import numpy as np
import pytest

from solvers.catalog import get_solver
from solvers.contract import Budget
from solvers.errors import InstanceError
from solvers.routing.check import check_solution
from solvers.routing.classical.construct import random_insertion_tour
from solvers.routing.classical.localsearch import nearest_neighbours, perturb, tour_length, two_opt
from solvers.routing.io.formats import load_instance
from solvers.routing.problem import CVRPInstance, TSPInstance
from tests.conftest import DATA
from tests.conftest import REPO as REPO_ROOT


@pytest.mark.parametrize("n", [12, 300, 2000])
def test_kicks_keep_a_permutation_never_lengthen_and_report_their_gain(n: int) -> None:
    xy = np.random.default_rng(n).random((n, 2))
    start, _ = two_opt(xy, random_insertion_tour(xy, 0))
    tour, stats = perturb(xy, start, 0.5, seed=1)
    assert np.array_equal(np.sort(tour), np.arange(n))
    before, after = tour_length(xy, start), tour_length(xy, tour)
    assert after <= before + 1e-9
    # The gain the kernel adds up must be the real change: a wrong undo would break this.
    assert after == pytest.approx(before - stats["kick_gain"], abs=1e-7)
    if n >= 300:
        assert stats["kicks_accepted"] > 0 and after < before


def test_kicks_are_seeded() -> None:
    xy = np.random.default_rng(5).random((400, 2))
    start, _ = two_opt(xy, random_insertion_tour(xy, 0))
    nb = nearest_neighbours(xy, 10)
    # One chunk of a fixed size: the same seed gives the same tour.
    from solvers.routing.classical.localsearch import _perturb_kernel

    def run(heat: float) -> np.ndarray:
        tour = start.copy()
        _perturb_kernel(tour, xy, nb, 3000, 50, 9, heat, 0.0, 0.0, tour.copy(),
                        np.zeros(400, np.bool_), np.empty(400, np.int64), np.zeros(1, np.int64))
        return tour

    assert np.array_equal(run(0.0), run(0.0))
    assert np.array_equal(run(0.01), run(0.01))  # the annealing draws are seeded too


def test_long_kicks_are_undone_exactly() -> None:
    # Kicks that move segments thousands of positions long, most of them rejected: every
    # rejected one must be undone exactly, or the gain would not add up.
    xy = np.random.default_rng(2).random((5000, 2))
    start, _ = two_opt(xy, random_insertion_tour(xy, 0))
    tour, stats = perturb(xy, start, 0.5, seed=3, window=4990)
    assert np.array_equal(np.sort(tour), np.arange(5000))
    assert tour_length(xy, tour) == pytest.approx(
        tour_length(xy, start) - stats["kick_gain"], abs=1e-7)


def test_ils_solver_is_within_two_percent_of_the_kroa100_optimum() -> None:
    instance = load_instance(DATA / "kroA100.tsp.gz")
    solution = get_solver("ils").solve(instance, Budget(time_limit=1.0, seed=0))
    assert check_solution(instance, solution.routes) == []
    assert solution.cost <= 21282 * 1.02  # proven optimum 21282
    assert solution.stats["kicks"] > 0


def test_progress_reports_costs_in_the_instance_convention() -> None:
    """eil51 is EUC_2D (rounded edges): progress showed the exact Euclidean length (428.87)
    until the last event, then the result's 427; every event is in the result's units now."""
    instance = load_instance(DATA / "eil51.tsp")
    events = []
    solution = get_solver("ils").solve(instance, Budget(time_limit=1.2, seed=0), events.append)
    costs = [e.best_cost for e in events]
    assert len(costs) >= 3 and all(c == int(c) for c in costs)
    assert costs[-2] == solution.cost == costs[-1]


def test_ils_solver_beats_plain_two_opt_on_a_uniform_tsp1k() -> None:
    xy = np.random.default_rng(20261130).random((1000, 2)) * 1000
    instance = TSPInstance(coords=xy, distance="exact")
    solution = get_solver("ils").solve(instance, Budget(time_limit=2.0, seed=0))
    two, _ = two_opt(xy, random_insertion_tour(xy, 0))
    assert check_solution(instance, solution.routes) == []
    assert solution.cost < 0.98 * tour_length(xy, two)


def test_ils_solver_refuses_cvrptw_and_matrix_only_instances() -> None:
    with pytest.raises(InstanceError):
        get_solver("ils").solve(TSPInstance(distance_matrix=np.ones((6, 6)) - np.eye(6)),
                                Budget(time_limit=1.0))
    tw = load_instance(DATA / "solomon" / "C101.100.10.vrptw")
    with pytest.raises(InstanceError):
        get_solver("ils").solve(tw, Budget(time_limit=1.0))


def test_ils_solves_cvrp_with_kicks_and_keeps_its_time_limit() -> None:
    """CVRP: random insertion split into routes, the granular descent, then ruin-and-recreate
    kicks: the classical part of sil_ls on its own (X-n101-k25: best-known 27,591)."""
    inst = load_instance(DATA / "X-n101-k25.vrp")
    events: list[float] = []
    solver = get_solver("ils", "cvrp", inst.n, 2.0)
    # as the server and solve() do: the kernels compile outside the clock (in a fresh clone,
    # run before test_descent, the kicks compiled inside it: 31.6 s for 2 s)
    solver.warm_up()
    sol = solver.solve(inst, Budget(time_limit=2.0, seed=0),
                       lambda e: events.append(e.best_cost or 0))
    assert sol.feasible and check_solution(inst, sol.routes) == []
    assert sol.wall_time < 2.0 * 1.15
    assert sol.cost < 0.95 * sol.stats["start_length"] and sol.cost < 1.06 * 27591
    assert sol.stats["kicks_kept"] > 0 and len(events) >= 3


def _with_fleet(instance: CVRPInstance, max_vehicles: int) -> CVRPInstance:
    return CVRPInstance(coords=instance.coords, demands=instance.demands,
                        capacity=instance.capacity, depot=instance.depot,
                        max_vehicles=max_vehicles, distance=instance.distance,
                        name=instance.name)


@pytest.mark.parametrize("solver", ["ils", "sil_ls"])
def test_a_tight_fleet_is_met_by_route_elimination(solver: str) -> None:
    """The split start of X-n101-k25 takes 30 vehicles; with max_vehicles 26 (the best-known
    plan's count) ils and sil_ls used to refuse. Route elimination now brings the start within
    the cap, and the kicks never add a route (2 s here: 27,693, 0.4% above the best-known)."""
    from solvers.routing.solve import solve

    inst = _with_fleet(load_instance(DATA / "X-n101-k25.vrp"), 26)
    sol = solve(inst, solver, Budget(time_limit=3.0, seed=0))
    assert check_solution(inst, sol.routes) == [] and sol.feasible
    assert len([r for r in sol.routes if r]) <= 26
    assert sol.stats["fleet_repair"]["routes_before"] > 26
    assert sol.cost < 1.04 * 27591


def test_a_fleet_route_elimination_cannot_reach_is_refused_naming_max_vehicles() -> None:
    """Five customers of 3 on vehicles of 8 need three routes, though the demand bound says
    two: the refusal names max_vehicles."""
    from solvers.errors import NoSolutionError
    from solvers.routing.solve import solve

    inst = CVRPInstance(coords=[[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1], [1, 1]],
                        demands=[0, 3, 3, 3, 3, 3], capacity=8, max_vehicles=2)
    with pytest.raises(NoSolutionError) as err:
        solve(inst, "ils", Budget(time_limit=2.0, seed=0))
    assert err.value.field == "max_vehicles" and not err.value.more_time_helps
    assert "max_vehicles is 2" in str(err.value)


def test_a_tight_fleet_is_met_above_two_thousand_nodes() -> None:
    """Route elimination on a plain CVRP has no size limit (it used to stop at 2,000 nodes,
    where such a cap was refused): 2,100 nodes whose demands pair up to fill a vehicle
    exactly, capped at the bin-packing bound of 1,050 vehicles (the split start takes about
    1,260), solved within the time limit."""
    from solvers.routing.solve import solve

    n = 2_101
    xy = np.random.default_rng(5).random((n, 2))
    demands = [0] + [6 if i % 2 else 4 for i in range(1, n)]  # pairs fill a vehicle
    inst = CVRPInstance(coords=xy, demands=demands, capacity=10,
                        max_vehicles=-(-sum(demands) // 10))
    get_solver("ils").warm_up()  # numba compiles on first use in a fresh clone
    sol = solve(inst, "ils", Budget(time_limit=6.0, seed=0))
    assert sol.feasible, sol.stats
    assert len([r for r in sol.routes if r]) == 1_050
    assert sol.stats["fleet_repair"]["routes_before"] > 1_100
    assert sol.wall_time < 8.0


def test_annealed_kicks_return_the_shortest_tour_they_met() -> None:
    """Hot enough to keep nearly every kick, the tour wanders above its start; perturb must
    hand back the shortest tour it met (here the start itself or better), with a gain that
    adds up to it."""
    xy = np.random.default_rng(11).random((500, 2))
    start, _ = two_opt(xy, random_insertion_tour(xy, 0))
    edge = tour_length(xy, start) / 500
    tour, stats = perturb(xy, start, 0.3, seed=3, heat=(20 * edge, 20 * edge))
    assert np.array_equal(np.sort(tour), np.arange(500)) and stats["kicks_accepted"] > 100
    after = tour_length(xy, tour)
    assert after <= tour_length(xy, start) + 1e-9
    assert after == pytest.approx(tour_length(xy, start) - stats["kick_gain"], abs=1e-7)


def test_warm_up_compiles_the_cvrp_start_before_any_clock() -> None:
    """Regression: the giant-tour split kernel compiled inside the first ils CVRP solve (1.2 s
    for a 0.3 s limit on a fresh install); the warm-up compiles it now."""
    import subprocess
    import sys

    code = ("from solvers.catalog import warm_up; from solvers.routing.classical import construct; "
            "warm_up('ils'); print(len(construct._split_kernel.signatures))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO_ROOT)
    assert int(out.stdout.strip()) >= 1


def test_a_cancel_stops_the_tsp_kicks_within_a_chunk() -> None:
    """Regression: ils read its cancel flag only between 1 s slices of kicks, so a TSP solve ran
    on about a second after its client left; the kicks hear it within a chunk now."""
    import threading
    import time

    import numpy as np

    from solvers.catalog import warm_up
    from solvers.contract import Budget
    from solvers.routing.problem import TSPInstance
    from solvers.routing.solve import solve

    warm_up("ils")
    inst = TSPInstance(coords=np.random.default_rng(1).random((300, 2)))
    cancel = threading.Event()
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    started = time.perf_counter()
    sol = solve(inst, "ils", Budget(time_limit=10.0, cancel=cancel))
    stopped_after = time.perf_counter() - started - 0.5
    assert sol.feasible and stopped_after < 0.4, stopped_after


def _exact_fill(seed: int, vehicles: int) -> CVRPInstance:
    """Customers whose demands, three or four to a vehicle, fill ``vehicles`` vehicles of
    100 exactly, scattered at random (so neighbours do not share a vehicle)."""
    rng = np.random.default_rng(seed)
    demands: list[int] = []
    for _ in range(vehicles):
        cuts = np.sort(rng.choice(np.arange(1, 100), 3, replace=False))
        demands += np.diff([0, *cuts, 100]).tolist()
    return CVRPInstance(coords=rng.random((len(demands) + 1, 2)), demands=[0, *demands],
                        capacity=100, max_vehicles=vehicles)


def test_a_fleet_with_no_room_to_spare_is_met_by_bin_packing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cap that leaves no room (before: X-n101-k25 capped at 25, 3 units spare, refused
    by ils while PyVRP met it): when route elimination stalls above it, the repair packs the
    customers into the cap's routes instead. Elimination gets no time here, so it stalls
    on every machine (with its share it reaches the cap on this instance on a fast one)."""
    from solvers.routing.classical import fleet
    from solvers.routing.solve import solve

    monkeypatch.setattr(fleet, "ELIMINATION_SHARE", 0.0)
    inst = _exact_fill(1, 8)
    get_solver("ils").warm_up()
    sol = solve(inst, "ils", Budget(time_limit=1.0, seed=0))
    assert check_solution(inst, sol.routes) == [] and sol.feasible
    assert len([r for r in sol.routes if r]) == 8
    assert sol.stats["fleet_repair"]["packed"] is True


def test_a_fleet_with_no_room_to_spare_is_searched_with_overloads_allowed() -> None:
    """X-n101-k25 capped at 25 (3 units of room in all): the plain kicks, every route full,
    left ils at 35.7k-38.1k in 2-10 s (PyVRP: 33.3k-34.4k at 2 s); the kicks that overload
    routes inside a kick and repair them reach 31.6k-33.8k in 2 s (seeds 0-2)."""
    from solvers.routing.solve import solve

    inst = _with_fleet(load_instance(DATA / "X-n101-k25.vrp"), 25)
    get_solver("ils").warm_up()
    sol = solve(inst, "ils", Budget(time_limit=5.0, seed=0))
    assert check_solution(inst, sol.routes) == [] and sol.feasible
    assert len([r for r in sol.routes if r]) <= 25
    # between the two: 35.7k+ without the overloading kicks, 31.9k with them at 3 s here.
    # At 3 s a loaded CI machine reached only 35,187 (in CI; the same figure here with
    # the test pinned to a core shared with a busy loop); at 5 s, so pinned, seeds 0-3 end at
    # 32.2k-33.6k
    assert sol.cost < 35_000


def test_bin_packing_fills_vehicles_exactly() -> None:
    """``pack_routes`` from the split start (11 routes) to the 8 exactly full ones; None for a
    cap no packing meets (five customers of 3 in vehicles of 8: three are needed)."""
    from solvers.routing.classical.construct import random_insertion_routes
    from solvers.routing.classical.fleet import pack_routes

    for seed in range(3):
        inst = _exact_fill(seed, 8)
        start = random_insertion_routes(inst, 0)
        packed = pack_routes(inst, start, 8, time.perf_counter() + 5.0, seed=0)
        assert packed is not None and len(packed) == 8
        assert sorted(c for r in packed for c in r) == list(range(1, inst.n))
        assert all(int(inst.demands[r].sum()) == 100 for r in packed)
    tight = CVRPInstance(coords=[[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1], [1, 1]],
                         demands=[0, 3, 3, 3, 3, 3], capacity=8)
    assert pack_routes(tight, [[1, 2], [3, 4], [5]], 2, time.perf_counter() + 0.3) is None


def test_ils_says_its_cvrp_start_plan_is_descending_before_any_kick(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the first descent of the start plan (about 15 s at 100K nodes) ils reported
    "0 kicks kept", as if the kicks had begun; it now says the start plan is descending, at
    the start plan's cost, and the kicks' own reports follow."""
    import functools

    import solvers.routing.classical.ils as ils_module
    from solvers.routing.generate import random_cvrp

    monkeypatch.setattr(ils_module, "cvrp_kicks",
                        functools.partial(ils_module.cvrp_kicks, slice_seconds=0.0005))
    xy, dem, cap = random_cvrp(np.random.default_rng(3), 3000)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    events: list[tuple[str, float | None]] = []
    solver = get_solver("ils")
    solver.warm_up()  # the kernels load outside the clock, as the server and solve() do
    sol = solver.solve(inst, Budget(time_limit=1.5, seed=0),
                       lambda e: events.append((e.message, e.best_cost)))
    messages = [m for m, _ in events]
    start = messages.index("start")
    descent = [i for i, m in enumerate(messages) if m == "start: descent of the start plan"]
    assert descent and descent[0] > start
    assert all(events[i][1] == pytest.approx(events[start][1]) for i in descent)
    kicks = [i for i, m in enumerate(messages) if m.endswith("kicks kept")]
    assert kicks and kicks[0] > descent[-1]
    assert sol.feasible and check_solution(inst, sol.routes) == []
