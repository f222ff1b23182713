"""PolyNet: strategy codes, exact reduction to ReLD at zero init, best-of-K training, solver."""

from __future__ import annotations

import numpy as np
import torch

from models.polynet import PolyNetModel, strategy_bits
from models.reld import ReLDConfig, ReLDModel
from solvers.routing.env import (
    replay_tsp,
    rollout_cvrp,
    rollout_tsp,
    sequence_log_prob,
)
from training.polynet import poly_loss


def _parent(problem: str) -> ReLDModel:
    torch.manual_seed(0)
    return ReLDModel(ReLDConfig(problem=problem, layers=2, dim=32, heads=4, hidden=64)).eval()


def _cvrp(b: int, n: int, capacity: int = 15) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    coords = torch.rand(b, n, 2, generator=g)
    demand = torch.randint(1, 10, (b, n), generator=g).float()
    demand[:, 0] = 0
    return coords, demand / capacity, torch.full((b,), float(capacity))


def test_strategy_codes_are_distinct_binary_and_tile() -> None:
    z = strategy_bits(128)
    assert z.shape == (128, 7)
    assert set(z.unique().tolist()) == {0.0, 1.0}
    assert len({tuple(row) for row in z.tolist()}) == 128
    assert strategy_bits(5).shape == (5, 3)
    tiled = strategy_bits(8, 20)
    assert torch.equal(tiled[8:16], tiled[:8]) and torch.equal(tiled[16:], tiled[:4])


def test_zero_initialized_polynet_reproduces_reld_exactly() -> None:
    for problem in ("tsp", "cvrp"):
        parent = _parent(problem)
        poly = PolyNetModel.from_reld(parent, strategies=16).eval()
        z = strategy_bits(16)
        with torch.no_grad():
            if problem == "tsp":
                coords = torch.rand(2, 12, 2)
                starts = torch.arange(12)[None].expand(2, 12)
                # 12 trajectories, 16 strategies: rows tiled from the first 12 codes
                a = rollout_tsp(parent, coords, starts, track_log_prob=True, decode="greedy")
                b = rollout_tsp(poly, coords, starts, track_log_prob=True,
                                strategy=strategy_bits(16, 12))
            else:
                coords, dem, cap = _cvrp(2, 12)
                a = rollout_cvrp(parent, coords, dem, 16, track_log_prob=True, capacity=cap)
                b = rollout_cvrp(poly, coords, dem, 16, track_log_prob=True, capacity=cap,
                                 strategy=z, multi_start=True)
        assert torch.equal(a.actions, b.actions)
        assert torch.equal(a.lengths, b.lengths) and torch.equal(a.log_prob, b.log_prob)


def test_strategies_reach_the_decoder_once_the_block_is_nonzero() -> None:
    poly = PolyNetModel.from_reld(_parent("tsp"), strategies=8).eval()
    coords = torch.rand(1, 10, 2)
    cache = poly.encode(coords)
    last = torch.zeros(1, 8, dtype=torch.long)
    first = torch.zeros(1, 8, dtype=torch.long)
    mask = torch.ones(1, 8, 10, dtype=torch.bool)
    mask[..., 0] = False
    log_dist = torch.zeros(1, 8, 10)
    z = strategy_bits(8)
    with torch.no_grad():
        same = poly.step(cache, last, first, mask, log_dist, strategy=z)
        assert all(torch.equal(same[0, 0], same[0, i]) for i in range(8))  # zero block
        torch.nn.init.normal_(poly.poly[2].weight, std=0.5)
        logits = poly.step(cache, last, first, mask, log_dist, strategy=z)
        logits_again = poly.step(cache, last, first, mask, log_dist, strategy=z.flip(0))
    rows = {tuple(torch.round(logits[0, i], decimals=5).tolist()) for i in range(8)}
    assert len(rows) == 8  # every strategy gets its own distribution
    assert torch.allclose(logits_again[0], logits[0].flip(0))  # the code, not the row, counts


def test_teacher_forcing_with_strategies_matches_sampling() -> None:
    poly = PolyNetModel.from_reld(_parent("tsp").double(), strategies=4).double()
    torch.nn.init.normal_(poly.poly[2].weight, std=0.3)
    coords = torch.rand(2, 9, 2, dtype=torch.float64)
    z = strategy_bits(4)
    with torch.no_grad():
        out = rollout_tsp(poly, coords, torch.zeros(2, 4, dtype=torch.long), decode="sample",
                          track_log_prob=True, strategy=z)
        replayed = sequence_log_prob(poly, poly.encode(coords), replay_tsp(coords, out.actions),
                                     strategy=z)
    assert torch.allclose(replayed, out.log_prob, atol=1e-6)


def test_tiny_best_of_k_run_makes_strategies_diverge() -> None:
    """Best-of-K updates move the zero block (the winners' strategies reach the gradient), so
    the strategies stop agreeing: the same tour gets a different likelihood under each."""
    torch.manual_seed(0)
    poly = PolyNetModel.from_reld(_parent("tsp"), strategies=8, poly_hidden=32)
    before = {n: p.detach().clone() for n, p in poly.named_parameters()}
    optimizer = torch.optim.Adam(poly.parameters(), lr=3e-3)
    rng = np.random.default_rng(0)
    coords = torch.rand(1, 12, 2, generator=torch.Generator().manual_seed(9))
    tour = torch.arange(12)[None, None].expand(1, 8, 12)
    z = strategy_bits(8)

    def per_strategy_log_prob() -> torch.Tensor:
        with torch.no_grad():
            return sequence_log_prob(poly, poly.encode(coords), replay_tsp(coords, tour),
                                     strategy=z)[0]

    assert float(per_strategy_log_prob().std()) == 0.0  # zero block: one policy
    for _ in range(20):
        loss, stats = poly_loss(poly, "tsp", 8, (12, 12), rng, "cpu")
        assert stats["best"] <= stats["mean"] and float(loss.detach()) >= 0.0
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(poly.poly[2].weight.detach().abs().sum()) > 0  # the block left zero
    assert not torch.equal(before["decoder_ff.net.0.weight"], poly.decoder_ff.net[0].weight)
    assert float(per_strategy_log_prob().std()) > 1e-3


def test_missing_weights_make_the_solver_unavailable(tmp_path, monkeypatch) -> None:
    import solvers.routing.polynet as module

    monkeypatch.setattr(module, "WEIGHTS_DIR", tmp_path)
    reason = module.availability()
    assert reason is not None and "polynet_tsp.pt" in reason and "training.polynet" in reason
