"""The string kicks (SISR's removals and blink recreate) and the 2-opt inside a route that the
kicks' descent adds: plans stay whole and feasible, running lengths stay exact."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.routing.classical import kicks, moves, strings
from solvers.routing.generate import random_cvrp
from solvers.routing.problem import CVRPInstance
from tests.solvers.routing.classical.test_descent import _random_plan, _valid


def _plan(seed: int, n: int = 200) -> tuple[CVRPInstance, moves.Plan]:
    rng = np.random.default_rng(seed)
    xy, dem, cap = random_cvrp(rng, n)
    inst = CVRPInstance(coords=xy, demands=dem, capacity=cap)
    return inst, moves.Plan(inst, _random_plan(inst, rng), moves.NEIGHBOURS)


def _length(plan: moves.Plan, succ: np.ndarray | None = None) -> float:
    return moves.plan_length(plan.succ if succ is None else succ, plan.n, plan.count, plan.xy,
                             plan.mat, plan.conv, plan.depot)


@pytest.mark.parametrize("seed", range(3))
def test_string_ruin_cuts_one_run_of_consecutive_customers_per_route(seed: int) -> None:
    """Each route loses at most one string (or a string with one short run kept inside):
    what is removed from a route sits within a window of ``MAX_STRING`` + the kept run, the
    seed's route is cut (the seed itself may be the run kept inside), and nothing is
    unlinked."""
    _, plan = _plan(seed)
    strings.seed_strings(seed)
    before = plan.succ.copy()
    hit = np.zeros(plan.count, dtype=np.bool_)
    for c0 in range(1, 60):
        removed = np.empty(4 * strings.MEAN_REMOVED + 8, dtype=np.int64)
        m = strings.string_ruin(c0, strings.MEAN_REMOVED, 10.0, removed, plan.near,
                                plan.succ, plan.pred, plan.route_of, plan.n, plan.depot,
                                plan.count, hit)
        chosen = removed[:m].tolist()
        assert len(set(chosen)) == m and not hit.any()
        routes = plan.routes()
        assert any(c in chosen for c in next(r for r in routes if c0 in r))
        for route in routes:
            at = sorted(route.index(c) for c in chosen if c in route)
            if at:
                assert at[-1] - at[0] < 10 + 3
        assert (plan.succ == before).all()


@pytest.mark.parametrize("seed", range(3))
def test_route_ruin_takes_the_least_loaded_route_near_the_seed_whole(seed: int) -> None:
    """The route kick chooses every customer of the least loaded route among the seed's and
    its neighbours', none when that route holds more than ``most``, and unlinks nothing."""
    _, plan = _plan(seed)
    before = plan.succ.copy()
    routes = plan.routes()
    removed = np.empty(4 * strings.MEAN_REMOVED + 8, dtype=np.int64)
    for c0 in range(1, 60):
        near = [c0] + [int(v) for v in plan.near[c0] if v != plan.depot]
        # the first of the lightest, in the order of the neighbour list
        lightest = plan.route_of[near[int(np.argmin([plan.load[plan.route_of[v]]
                                                     for v in near]))]]
        whole = routes[lightest]
        for most in (len(whole), len(whole) - 1):
            m = strings.route_ruin(c0, removed, plan.near, plan.succ, plan.route_of,
                                   plan.load, plan.n, plan.depot, most)
            assert removed[:m].tolist() == (whole if most == len(whole) else [])
    assert (plan.succ == before).all()


@pytest.mark.parametrize(("seed", "whole"), [(0, 0.0), (1, 0.0), (0, 0.3), (1, 0.3)])
def test_string_kicks_relink_and_keep_lengths_exact(seed: int, whole: float) -> None:
    """The kick kernel with string removals (and, at ``whole``, route kicks), blink recreate
    and the 2-opt inside routes: its running lengths equal the recomputed ones, both plans
    hold every customer once within the capacity, and kicks are kept."""
    inst, plan = _plan(seed, 300)
    rng = np.random.default_rng(seed)
    strings.seed_strings(seed)
    arrays = (plan.succ, plan.pred, plan.route_of, plan.cum, plan.load)
    best = [a.copy() for a in arrays]
    dirty = np.zeros(plan.count, dtype=np.bool_)
    total = best_total = _length(plan)
    size = 4 * strings.MEAN_REMOVED + 8
    kept = 0
    for _ in range(15):
        slack = rng.random(25) * (0.3 * total / inst.n if seed % 2 else 0.0)
        total, k, best_total, _ = kicks._kicks(
            rng.integers(1, inst.n, 25), rng.random((25, size)), slack, size, total,
            best_total, *arrays, *best, dirty, plan.demand, plan.cap, plan.near, plan.xy,
            plan.mat, plan.conv, plan.n, plan.depot, plan.count, plan.eps, True,
            strings.MEAN_REMOVED, 10.0, True, False, whole, strings.MAX_STRING)
        kept += k
        assert _length(plan) == pytest.approx(total, rel=1e-9)
        assert _length(plan, best[0]) == pytest.approx(best_total, rel=1e-9)
    assert kept > 0 and best_total <= total + 1e-9
    current = plan.routes()
    plan.succ[:] = best[0]
    for routes in (current, plan.routes()):
        assert _valid(inst, routes)


def test_two_opt_inside_a_route_only_shortens_and_keeps_the_links() -> None:
    """Every 2-opt made inside a route shortens the plan by what the links say, keeps pred
    and succ mirrored and every customer in its route."""
    rng = np.random.default_rng(1)
    made = 0
    for _ in range(30):
        n = 31
        inst = CVRPInstance(coords=rng.random((n, 2)), demands=[0] + [1] * (n - 1),
                            capacity=10)
        order = rng.permutation(np.arange(1, n)).tolist()
        plan = moves.Plan(inst, [order[i:i + 10] for i in range(0, n - 1, 10)], 8)
        for _ in range(40):
            before = _length(plan)
            moved = moves.two_opt_intra(int(rng.integers(1, n)), plan.succ, plan.pred,
                                        plan.route_of, plan.cum, plan.load, plan.demand,
                                        plan.near, plan.xy, plan.mat, plan.conv, plan.n,
                                        plan.depot, plan.count, plan.eps)
            after = _length(plan)
            routes = plan.routes()
            assert sorted(c for r in routes for c in r) == list(range(1, n))
            assert inst.cost(routes) == pytest.approx(after, rel=1e-12)
            assert (after < before - 1e-12) if moved else after == pytest.approx(before)
            for v in range(plan.n, plan.n + plan.count):
                while v < plan.n + plan.count or v < plan.n:
                    w = plan.succ[v]
                    assert plan.pred[w] == v
                    if w >= plan.n + plan.count:
                        break
                    v = w
            made += moved
    assert made > 20


def test_two_opt_inside_a_route_leaves_matrix_instances_alone() -> None:
    """A matrix may be asymmetric, and a reversed stretch would be travelled the other way:
    no 2-opt is made there."""
    rng = np.random.default_rng(2)
    m = rng.random((12, 12)) * 100
    np.fill_diagonal(m, 0.0)
    inst = CVRPInstance(distance_matrix=m, demands=[0] + [1] * 11, capacity=11)
    plan = moves.Plan(inst, [list(range(1, 12))], 8)
    for c in range(1, 12):
        assert not moves.two_opt_intra(c, plan.succ, plan.pred, plan.route_of, plan.cum,
                                       plan.load, plan.demand, plan.near, plan.xy, plan.mat,
                                       plan.conv, plan.n, plan.depot, plan.count, plan.eps)


@pytest.mark.parametrize("symmetric", [True, False])
def test_runs_of_customers_move_only_to_save_within_the_capacity(symmetric: bool) -> None:
    """``or_opt`` moves a run of 2 or 3 customers into another route (reversed only when the
    distances are symmetric): every move shortens the plan by what the instance's own cost
    says, keeps the capacity, the links and every customer."""
    rng = np.random.default_rng(3)
    made = 0
    for _ in range(20):
        n = 31
        demands = [0, *rng.integers(1, 4, n - 1).tolist()]
        if symmetric:
            inst = CVRPInstance(coords=rng.random((n, 2)), demands=demands, capacity=25)
        else:
            m = rng.random((n, n)) * 100
            np.fill_diagonal(m, 0.0)
            inst = CVRPInstance(distance_matrix=m, demands=demands, capacity=25)
        order = rng.permutation(np.arange(1, n)).tolist()
        plan = moves.Plan(inst, [order[i:i + 8] for i in range(0, n - 1, 8)], 8)
        for _ in range(40):
            before = _length(plan)
            moved = moves.or_opt(int(rng.integers(1, n)), plan.succ, plan.pred, plan.route_of,
                                 plan.cum, plan.load, plan.demand, plan.cap, plan.near,
                                 plan.xy, plan.mat, plan.conv, plan.n, plan.depot, plan.count,
                                 plan.eps)
            after = _length(plan)
            routes = plan.routes()
            assert _valid(inst, routes)
            assert inst.cost(routes) == pytest.approx(after, rel=1e-9)
            assert (after < before - 1e-12) if moved else after == pytest.approx(before)
            made += moved
    assert made > 20
