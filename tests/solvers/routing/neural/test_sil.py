"""SIL: the model, segment reconstruction, the fast constructions and the shipped weights."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from models.sil import SILConfig, SILModel
from solvers.catalog import get_solver
from solvers.contract import Budget
from solvers.routing.check import check_solution
from solvers.routing.classical.construct import random_insertion_routes, random_insertion_tour
from solvers.routing.classical.localsearch import two_opt
from solvers.routing.neural.sil.cvrp import _giant_tour, _split
from solvers.routing.neural.sil.model import (
    dihedral,
    expected_length_uniform,
    greedy_tour,
    prc_round,
    rebuild_tsp_segments,
)
from solvers.routing.neural.sil.solver import tour_length
from solvers.routing.problem import CVRPInstance, TSPInstance

torch.set_num_threads(1)


def _tiny_model(problem: str = "tsp") -> SILModel:
    torch.manual_seed(0)
    return SILModel(SILConfig(problem=problem, dim=32, layers=2, heads=4, hidden=64, reps=4))


def _uniform(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random((n, 2))


def test_one_step_is_linear_in_candidates_and_masks_padding() -> None:
    model = _tiny_model()
    first, last = torch.randn(3, 32), torch.randn(3, 32)
    cand = torch.randn(3, 7, 32)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[1, 5:] = True
    logits = model(first, last, cand, pad=pad)
    assert logits.shape == (3, 7)
    assert torch.isinf(logits[1, 5:]).all() and torch.isfinite(logits[0]).all()
    # Padded slots do not change the other candidates' scores.
    alone = model(first[1:2], last[1:2], cand[1:2, :5])
    assert torch.allclose(alone, logits[1:2, :5], atol=1e-5)


def test_cvrp_head_scores_direct_and_via_depot() -> None:
    model = _tiny_model("cvrp")
    out = model(torch.randn(2, 32), torch.randn(2, 32), torch.randn(2, 5, 32),
                capacity=torch.tensor([0.5, 1.0]))
    assert out.shape == (2, 5, 2)
    with pytest.raises(ValueError):
        model(torch.randn(2, 32), torch.randn(2, 32), torch.randn(2, 5, 32))


@pytest.mark.parametrize("symmetry", [0, 5])
def test_rebuilt_segments_keep_their_ends_and_nodes(symmetry: int) -> None:
    model = _tiny_model().eval()
    coords = torch.rand(300, 2)
    segs = torch.randperm(300)[:240].view(8, 30)
    with torch.inference_mode():
        new = rebuild_tsp_segments(model, coords, segs, symmetry=symmetry)
    assert torch.equal(new[:, 0], segs[:, 0]) and torch.equal(new[:, -1], segs[:, -1])
    assert torch.equal(new.sort(dim=1).values, segs.sort(dim=1).values)


def test_the_eight_views_are_distinct_isometries_of_the_unit_box() -> None:
    pts = torch.rand(1, 50, 2)
    views = [dihedral(pts, k) for k in range(8)]
    assert torch.equal(views[0], pts)
    for v in views:
        assert v.min() >= 0 and v.max() <= 1
        dist = (v[0, :, None] - v[0, None]).norm(dim=-1)
        assert torch.allclose(dist, (pts[0, :, None] - pts[0, None]).norm(dim=-1), atol=1e-6)
    assert len({tuple(v[0, 0].tolist()) for v in views}) == 8


def test_reconstruction_never_breaks_a_tour_or_makes_it_longer() -> None:
    model = _tiny_model().eval()
    xy = _uniform(500, 1)
    coords = torch.as_tensor(xy, dtype=torch.float32)
    tour = random_insertion_tour(xy, 0)
    length = tour_length(xy, tour)
    rng = np.random.default_rng(0)
    with torch.inference_mode():
        for _ in range(6):
            tour, _ = prc_round(model, xy, coords, tour, int(rng.integers(4, 60)), rng)
            assert sorted(tour.tolist()) == list(range(500))
            new = tour_length(xy, tour)
            assert new <= length + 1e-9
            length = new


def test_random_insertion_is_a_tour_and_beats_nearest_neighbour_quality() -> None:
    xy = _uniform(2000, 2)
    tour = random_insertion_tour(xy, 0, start=5)
    assert tour[0] == 5 and sorted(tour.tolist()) == list(range(2000))
    gap = tour_length(xy, tour) / expected_length_uniform(2000) - 1
    assert 0.05 < gap < 0.20  # random insertion sits ~13% above optimal on uniform points


def test_two_opt_or_opt_improves_and_keeps_a_permutation() -> None:
    xy = _uniform(3000, 3)
    tour = random_insertion_tour(xy, 0)
    better, moves = two_opt(xy, tour)
    assert moves > 0 and sorted(better.tolist()) == list(range(3000))
    assert tour_length(xy, better) < 0.97 * tour_length(xy, tour)


def _cvrp(n: int, seed: int, capacity: int = 50) -> CVRPInstance:
    rng = np.random.default_rng(seed)
    demands = rng.integers(1, 10, n)
    demands[0] = 0
    return CVRPInstance(coords=rng.random((n, 2)), demands=demands, capacity=capacity)


def test_split_routes_respect_capacity_and_visit_everyone_once() -> None:
    inst = _cvrp(400, 4)
    routes = random_insertion_routes(inst, seed=0)
    assert check_solution(inst, routes) == []
    # Re-splitting the angle-sorted giant tour of these routes can never cost more.
    xy = inst.coords
    again = _split(inst, _giant_tour(xy, inst.depot, routes))
    assert check_solution(inst, again) == []
    assert inst.cost(again) <= inst.cost(routes) + 1e-6


def test_shipped_weights_beat_random_insertion_on_tsp1k() -> None:
    """A fixed number of rounds (not seconds), so a loaded machine cannot change the verdict;
    the shipped weights took it 4.7% below random insertion when this was written."""
    from solvers.routing.neural.sil.solver import SILSolver

    xy = _uniform(1000, 20261201)
    model = SILSolver().model("tsp")
    tour = random_insertion_tour(xy, 0)
    start = tour_length(xy, tour)
    rng = np.random.default_rng(0)
    coords = torch.as_tensor(xy, dtype=torch.float32)
    with torch.inference_mode():
        for _ in range(15):
            tour, _ = prc_round(model, xy, coords, tour, int(rng.integers(4, 101)), rng)
    assert sorted(tour.tolist()) == list(range(1000))
    assert tour_length(xy, tour) < 0.97 * start


@pytest.mark.parametrize("k", [5, 100])
def test_greedy_construction_visits_every_node_once(k: int) -> None:
    """k=5 empties the neighbour lists quickly, so the search over all unvisited runs too."""
    xy = _uniform(300, 3)
    with torch.inference_mode():
        tour = greedy_tour(_tiny_model(), xy, k=k, start=7)
    assert tour is not None and tour[0] == 7 and sorted(tour.tolist()) == list(range(300))
    assert greedy_tour(_tiny_model(), xy, deadline=0.0) is None  # past its deadline


def test_shipped_weights_construct_a_shorter_tour_than_random_insertion() -> None:
    from solvers.routing.neural.sil.solver import SILSolver

    xy = _uniform(1000, 20261201)
    with torch.inference_mode():
        tour = greedy_tour(SILSolver().model("tsp"), xy)
    assert tour is not None and sorted(tour.tolist()) == list(range(1000))
    # 7-8 % above the reference when this was written, random insertion ~14 %
    assert tour_length(xy, tour) < 0.95 * tour_length(xy, random_insertion_tour(xy, 0))


def test_solver_starts_from_the_greedy_tour_when_asked() -> None:
    from solvers.routing.neural.sil.solver import SILSolver

    inst = TSPInstance(coords=_uniform(400, 11))
    sol = SILSolver(start="greedy").solve(inst, Budget(time_limit=4.0, seed=0))
    assert sol.feasible and sol.stats["start"].startswith("greedy")
    assert sol.cost <= sol.stats["start_length"] + 1e-6
    with pytest.raises(ValueError, match="start"):
        SILSolver(start="nearest")


def test_sil_solver_round_trip_on_tsp1k() -> None:
    inst = TSPInstance(coords=_uniform(1000, 9))
    sol = get_solver("sil", "tsp", 1000, 3.0).solve(inst, Budget(time_limit=3.0, seed=0))
    assert sol.feasible and sol.solver == "sil" and sol.stats["rounds"] > 0
    assert sol.cost <= sol.stats["start_length"] + 1e-6
    assert sol.wall_time < 3.0 * 1.15
    # ~1.2 s of greedy construction does not fit in a quarter of 3 s: random insertion
    assert sol.stats["start"] == "random insertion"


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["sil", "sil_ls"])
def test_20k_nodes_solve_within_a_short_budget(name: str) -> None:
    inst = TSPInstance(coords=_uniform(20_000, 5))
    sol = get_solver(name, "tsp", inst.n, 8.0).solve(inst, Budget(time_limit=8.0, seed=1))
    assert sol.feasible and len(sol.routes[0]) == 20_000
    assert sol.wall_time < 8.0 * 1.15
    assert sol.cost <= sol.stats["start_length"] + 1e-6


def test_cvrp_reconstruction_is_feasible_and_no_worse_than_its_start() -> None:
    inst = _cvrp(1000, 6, capacity=100)
    sol = get_solver("sil", "cvrp", inst.n, 4.0).solve(inst, Budget(time_limit=4.0, seed=0))
    assert sol.feasible, sol.violations
    assert sol.cost <= sol.stats["start_length"] + 1e-6


def test_sil_ls_cvrp_plans_end_at_a_local_optimum_of_the_route_moves() -> None:
    """sil_ls runs the granular relocate / swap / 2-opt* descent between routes after every
    round (before, only 2-opt inside routes: Leuven1 at 60 s 6.2% above its best-known,
    3.4% with it): nothing is left for a further descent to find, and it beats sil."""
    from solvers.routing.classical.descent import cvrp_descent

    inst = _cvrp(1000, 6, capacity=100)
    plain = get_solver("sil", "cvrp", inst.n, 3.0).solve(inst, Budget(time_limit=3.0, seed=0))
    sol = get_solver("sil_ls", "cvrp", inst.n, 3.0).solve(inst, Budget(time_limit=3.0, seed=0))
    assert sol.feasible and sol.wall_time < 3.0 * 1.15
    again = cvrp_descent(inst, sol.routes, time.perf_counter() + 5.0)
    # kicks end with local descents around each kick, not a full one: a whole descent found
    # 0.11% more once on a loaded machine (CI, 2026-12-03), 0 to 0.1% otherwise
    assert inst.cost(again) == pytest.approx(sol.cost, rel=2e-3)
    assert sol.cost < 0.97 * plain.cost


def test_route_rounds_keep_loads_and_never_lengthen_routes() -> None:
    from solvers.routing.classical.descent import polish_routes
    from solvers.routing.neural.sil.cvrp import route_round

    inst = _cvrp(600, 7)
    xy = inst.coords
    routes = random_insertion_routes(inst, seed=1)
    loads = sorted(int(inst.demands[r].sum()) for r in routes)
    cost = inst.cost(routes)
    model = _tiny_model().eval()
    coords = torch.as_tensor(xy, dtype=torch.float32)
    rng = np.random.default_rng(0)
    with torch.inference_mode():
        for w in (5, 17, 40):
            routes, _ = route_round(model, xy, coords, inst.depot, routes, w, rng, np.inf)
            assert check_solution(inst, routes) == []
            assert sorted(int(inst.demands[r].sum()) for r in routes) == loads
            assert inst.cost(routes) <= cost + 1e-9
            cost = inst.cost(routes)
    polished = polish_routes(xy, inst.depot, routes)
    assert check_solution(inst, polished) == [] and inst.cost(polished) < cost


def test_two_opt_refuses_a_tour_that_is_not_a_permutation() -> None:
    xy = _uniform(50, 8)
    with pytest.raises(ValueError):
        two_opt(xy, np.r_[np.arange(49), 3])


def test_two_opt_terminates_on_duplicate_points() -> None:
    """Real files repeat coordinates (CVRPLIB Leuven1); a node listed as its own neighbour
    once made 2-opt loop forever."""
    xy = np.round(_uniform(300, 10) * 10)
    tour, _ = two_opt(xy, random_insertion_tour(xy, 0))
    assert sorted(tour.tolist()) == list(range(300))


def test_a_shifted_instance_is_solved_as_well_as_the_original() -> None:
    """Regression: the coordinates were cast to float32 before being moved to the origin, so
    points 1e9 out and 1 apart collapsed: sil's tour came out 148 % longer (TSP) and 32 %
    (CVRP) for the same instance shifted by 1e9. The two 1 s runs may get different numbers
    of rounds on a slow machine (4 against 1 at half this machine's speed: 4.4 % apart), so
    the bound is 10 %, far below what the bug did."""
    import numpy as np

    from solvers.contract import Budget
    from solvers.routing.problem import CVRPInstance, TSPInstance
    from solvers.routing.solve import solve

    rng = np.random.default_rng(11)
    xy = rng.uniform(0, 1, (200, 2))
    demands = [0, *rng.integers(1, 10, 199).tolist()]
    for make in (lambda c: TSPInstance(coords=c),
                 lambda c: CVRPInstance(coords=c, demands=demands, capacity=50)):
        here = solve(make(xy), "sil", Budget(time_limit=1.0, seed=0)).cost
        far = solve(make(xy + 1e9), "sil", Budget(time_limit=1.0, seed=0)).cost
        assert far < 1.10 * here, (here, far)


def test_the_start_phases_report_while_they_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's greedy start (5 s at 20K nodes) and the first descent of a split plan
    (14 s at 100K) ran without a progress report; each now beats every HEARTBEAT_S (here
    0.02 s), before the solve's "start" report. With a cancel set in the first beat, the
    start gives up and the solve ends with a plan at once."""
    import threading

    import solvers.routing.neural.sil.model as sil_module
    from solvers.routing.neural.sil.solver import SILSolver

    monkeypatch.setattr(sil_module, "HEARTBEAT_S", 0.02)
    tsp = TSPInstance(coords=_uniform(1000, 5))
    events: list[tuple[str, float | None]] = []
    SILSolver(start="greedy").solve(tsp, Budget(time_limit=1.0, seed=0),
                                    lambda e: events.append((e.message, e.best_cost)))
    messages = [m for m, _ in events]
    greedy = messages.index("start: the model's greedy tour")
    assert greedy < messages.index("start") and events[greedy][1] is None

    cvrp = _cvrp(3000, 5)
    events.clear()
    get_solver("sil_ls").solve(cvrp, Budget(time_limit=1.0, seed=0),
                               lambda e: events.append((e.message, e.best_cost)))
    messages = [m for m, _ in events]
    descent = messages.index("start: descent from the split tour")
    assert descent < messages.index("start")
    assert events[descent][1] > events[messages.index("start")][1]  # the split's, longer

    cancel = threading.Event()
    t0 = time.perf_counter()
    sol = SILSolver(start="greedy").solve(
        TSPInstance(coords=_uniform(5000, 6)), Budget(time_limit=60.0, seed=0, cancel=cancel),
        lambda e: cancel.set())
    assert sol.feasible and time.perf_counter() - t0 < 3.0


@pytest.mark.parametrize("solver", ["sil", "sil_ls"])
def test_a_round_reports_while_one_batch_of_segments_is_decoded(
        monkeypatch: pytest.MonkeyPatch, solver: str) -> None:
    """A round beat only between its batches of segments, so one long batch (a 100K-node
    round on a slow machine: 3.7 s between reports at a third of this machine's speed) went
    by without a report. The decoding's cancel check now beats too: with every round a single
    batch, reports still come in the middle of it ("0/M segments"); a CVRP round inside the
    routes (sil_cvrp passes it the same check), which counts no segments, reports as
    "round k"."""
    import re

    import solvers.routing.neural.sil.model as sil_module
    from solvers.contract import Clock
    from solvers.routing.neural.sil.cvrp import route_round
    from solvers.routing.neural.sil.model import RoundHeartbeat

    monkeypatch.setattr(sil_module, "HEARTBEAT_S", 0.005)
    monkeypatch.setattr(sil_module, "TOKENS_PER_BATCH", 1 << 30)
    monkeypatch.setattr(sil_module, "STEP_TOKENS_PER_BATCH", 1 << 30)
    messages: list[str] = []
    get_solver(solver).solve(TSPInstance(coords=_uniform(2000, 7)),
                             Budget(time_limit=1.5, seed=0),
                             lambda e: messages.append(e.message))
    assert any(re.fullmatch(r"round \d+: 0/\d+ segments", m) for m in messages), messages
    if solver == "sil_ls":
        messages.clear()
        inst = _cvrp(600, 7)
        heartbeat = RoundHeartbeat(solver, Clock(Budget(time_limit=60.0)),
                                   lambda e: messages.append(e.message), 0.0, every=0.0)
        heartbeat.start_round(3)
        with torch.inference_mode():
            route_round(_tiny_model().eval(), inst.coords,
                        torch.as_tensor(inst.coords, dtype=torch.float32), inst.depot,
                        random_insertion_routes(inst, seed=1), 17, np.random.default_rng(0),
                        np.inf, heartbeat.check(None))
        assert messages and set(messages) == {"round 4"}
