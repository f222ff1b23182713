"""Neural reconstruction of TSP tours: path decoding between fixed ends, and the rounds that
re-decode stretches of a tour with the shipped ReLD weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.reld import ReLDConfig, ReLDModel
from solvers.base import Budget, Clock
from solvers.routing.env import rollout_path
from solvers.routing.problem import TSPInstance
from solvers.routing.reconstruct import path_lengths, reconstruct_tour
from solvers.routing.reld import TORCH_THREADS, read_checkpoint, weights_path
from solvers.routing.solve import solve


@pytest.mark.parametrize("decode", ["greedy", "sample", "mixed"])
def test_paths_run_from_source_through_every_node_to_target(decode: str) -> None:
    torch.manual_seed(0)
    model = ReLDModel(ReLDConfig(problem="tsp", layers=2, dim=32, heads=4, hidden=64))
    coords = torch.rand(4, 12, 2, generator=torch.Generator().manual_seed(1))
    source, target = torch.tensor([0, 3, 5, 11]), torch.tensor([11, 4, 0, 2])
    mixed = torch.tensor([True, False, True, False]) if decode == "mixed" else None
    with torch.no_grad():
        out = rollout_path(model, coords, source, target,
                           decode="greedy" if mixed is not None else decode,
                           sample_rows=mixed, generator=torch.Generator().manual_seed(0))
    assert out.actions.shape == (4, 1, 12)
    for b in range(4):
        path = out.actions[b, 0].tolist()
        assert sorted(path) == list(range(12))
        assert path[0] == int(source[b]) and path[-1] == int(target[b])
        xy = coords[b].double().numpy()
        assert float(out.lengths[b, 0]) == pytest.approx(
            float(path_lengths(xy, np.asarray(path))), rel=1e-5)


def test_reconstruction_shortens_a_bad_tour_and_never_lengthens_one() -> None:
    # as the solver runs it: more threads than free cores make small kernels wait on each
    # other (on a loaded 2-core machine a round took 1.5 s instead of 0.03 s)
    torch.set_num_threads(TORCH_THREADS)
    model = read_checkpoint(weights_path("tsp"))[0].eval()
    coords = torch.as_tensor(np.random.default_rng(7).random((60, 2)), dtype=torch.float32)
    tour = list(np.random.default_rng(8).permutation(60))
    xy = coords.double().numpy()
    start = float(path_lengths(xy, np.append(tour, tour[0])))
    budget = Budget(time_limit=1.0)
    with torch.inference_mode():  # the first decoding in a process pays one-time set-up
        reconstruct_tour(model, coords[:20], list(range(20)), Clock(budget), 0.01, seed=0)
    clock = Clock(budget)
    with torch.inference_mode():
        better, length, stats = reconstruct_tour(model, coords, tour, clock, 0.5, seed=0)
    assert clock.elapsed < 0.7
    assert sorted(better) == list(range(60))
    assert length == pytest.approx(float(path_lengths(xy, np.append(better, better[0]))))
    assert stats["rounds"] >= 2 and stats["improved_stretches"] >= 1
    assert length < 0.6 * start  # a random tour is far from what the model decodes
    assert stats["gain_percent"] == pytest.approx(100 * (start - length) / start, abs=1e-3)
    # from a tour that is already the result, rounds may find nothing, but never lose
    with torch.inference_mode():
        again, length2, _ = reconstruct_tour(model, coords, better, Clock(budget), 0.2, seed=1)
    assert sorted(again) == list(range(60)) and length2 <= length + 1e-9


def test_reld_tsp_spends_the_end_of_its_time_on_reconstruction() -> None:
    inst = TSPInstance(coords=np.random.default_rng(9).random((100, 2)))
    sol = solve(inst, "reld", Budget(time_limit=1.0))
    rebuilt = sol.stats["reconstruction"]
    assert rebuilt["rounds"] >= 1 and rebuilt["gain_percent"] >= 0
    assert sol.wall_time < 1.2
    span = float((inst.coords.max(0) - inst.coords.min(0)).max())
    assert sol.cost == pytest.approx(sol.stats["normalized_length"] * span, rel=1e-5)
