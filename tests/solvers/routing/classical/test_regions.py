"""Kick searches on regions of one plan (``regions.run_regions``): the cut shares out every
route once, a region is a plan of its own, and the sewn plan keeps every customer and the
capacity, the route slots, the deadline and a cancel."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.solvers.routing.classical.test_descent import _random_plan, _valid
from tests.solvers.routing.classical.test_parallel import _instance, cancelled_after


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    from solvers.routing.classical.warmup import warm_up

    warm_up()  # numba compiles on first use: not inside the timed parts


@pytest.fixture
def small_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regions of 40 customers and rounds of 0.1 s, so a 150-customer plan is cut often."""
    from solvers.routing.classical import regions

    monkeypatch.setattr(regions, "REGION_CUSTOMERS", 40)
    monkeypatch.setattr(regions, "ROUND_SECONDS", 0.1)


def test_the_cut_shares_out_every_route_once_in_balanced_regions() -> None:
    from solvers.routing.classical import moves, regions

    inst = _instance(0)
    routes = [*_random_plan(inst, np.random.default_rng(0)), [], [], []]
    plan = moves.Plan(inst, routes, moves.NEIGHBOURS)
    cut = regions._cut(plan, plan.slots(), 3, np.random.default_rng(0))
    assert len(cut) == 3
    seen = [nodes[r].tolist() for nodes, local in cut for r in local]
    assert sorted(map(tuple, seen)) == sorted(map(tuple, routes))  # empty slots included
    sizes = [nodes.size - 1 for nodes, _ in cut]
    assert sum(sizes) == inst.n - 1
    longest = max(len(r) for r in routes)
    assert max(sizes) - min(sizes) <= 2 * longest
    for nodes, _ in cut:
        assert nodes[0] == inst.depot and len(set(nodes.tolist())) == nodes.size


def test_a_region_is_a_plan_of_its_own() -> None:
    """Its neighbour lists hold its own nodes only (never the node itself), its loads are
    its routes', and its length is what those routes cost in the whole instance."""
    from solvers.routing.classical import moves, regions

    inst = _instance(1)
    plan = moves.Plan(inst, _random_plan(inst, np.random.default_rng(1)), moves.NEIGHBOURS)
    nodes, local = regions._cut(plan, plan.slots(), 2, np.random.default_rng(1))[0]
    part = plan.region(nodes, local)
    assert part.n == nodes.size and part.near.shape == (part.n, plan.near.shape[1])
    assert (part.near >= 0).all() and (part.near < part.n).all()
    assert not (part.near == np.arange(part.n)[:, None]).any()
    whole_routes = [nodes[r].tolist() for r in local]
    assert part.load.tolist() == [int(inst.demands[r].sum()) for r in whole_routes]
    length = moves.plan_length(part.succ, part.n, part.count, part.xy, part.mat, part.conv,
                               part.depot)
    assert length == pytest.approx(inst.cost(whole_routes))


def test_regions_return_a_valid_shorter_plan_within_the_deadline(
        small_regions: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads on regions, cut anew every 0.1 s: every customer once within the
    capacity, no more routes than the start had slots for, shorter than the start, the
    shortest lengths heard never rise and the deadline holds."""
    from solvers.routing.classical import kicks

    rounds: list[int] = []
    real = kicks.run_regions

    def spy(*args: object) -> tuple[list[list[int]], int]:
        rounds.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(kicks, "run_regions", spy)
    inst = _instance(2)
    start = _random_plan(inst, np.random.default_rng(2))
    heard: list[float] = []
    t0 = time.perf_counter()
    routes, kept = kicks.cvrp_kicks(inst, start, t0 + 0.6, 0, threads=2, slice_seconds=0.05,
                                    on_slice=lambda length, _: heard.append(length))
    assert time.perf_counter() - t0 < 0.6 + 0.15
    assert rounds and kept > 0 and _valid(inst, routes)
    assert len(routes) <= len(start)
    assert inst.cost(routes) < inst.cost(start)
    assert len(heard) >= 5 and heard == sorted(heard, reverse=True)
    assert inst.cost(routes) == pytest.approx(heard[-1])


def test_a_cancel_stops_the_regions_and_keeps_the_best(small_regions: None) -> None:
    cancelled_after(0.3, 3)


def test_regions_only_where_each_holds_enough_customers() -> None:
    from solvers.routing.classical.regions import REGION_CUSTOMERS, regions_for

    assert regions_for(2 * REGION_CUSTOMERS - 1, 2) < 2
    assert regions_for(2 * REGION_CUSTOMERS, 2) == 2
    assert regions_for(100 * REGION_CUSTOMERS, 4) == 4
    assert regions_for(100 * REGION_CUSTOMERS, 1) == 1


def test_regions_keep_a_tight_fleet_and_carry_the_capacity_mode(
        small_regions: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """X-n101-k25 under 25 vehicles (3 units of room in all): the plan stays within its 25
    routes and the capacity, every customer served; and each round's regions start in the
    capacity mode the last round ended in (its count of kicks that gave up for want of
    room, which turns a tight fleet to penalized kicks), not from a fresh one."""
    from solvers.contract import Budget
    from solvers.routing.check import check_solution
    from solvers.routing.classical import kicks, regions
    from solvers.routing.io.formats import load_instance
    from solvers.routing.solve import solve
    from tests.solvers.routing.classical.test_ils import DATA, _with_fleet

    monkeypatch.setattr(regions, "REGION_CUSTOMERS", 30)
    tried: list[int] = []
    real = kicks._Search.on_region

    def spy(self: kicks._Search, *args: object) -> kicks._Search:
        tried.append(self.mode.tried)
        return real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(kicks._Search, "on_region", spy)
    monkeypatch.setenv("COSOLVE_ILS_THREADS", "2")
    inst = _with_fleet(load_instance(DATA / "X-n101-k25.vrp"), 25)
    sol = solve(inst, "ils", Budget(time_limit=2.0, seed=0))
    assert check_solution(inst, sol.routes) == [] and sol.feasible
    assert len([r for r in sol.routes if r]) <= 25
    assert tried[0] == 0 and max(tried) > 0
