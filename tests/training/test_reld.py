"""ReLD's REINFORCE: the weights on the log-likelihoods (POMO's per-instance baseline, the
best-of-starts variant) and the teacher-forced log-likelihoods it differentiates."""

import numpy as np
import pytest
import torch

from models.reld import ReLDConfig, ReLDModel
from solvers.routing.generate import random_cvrp
from solvers.routing.neural.env import (
    replay_cvrp,
    replay_tsp,
    rollout_cvrp,
    rollout_tsp,
    sequence_log_prob,
)
from training.loop import Timer, TrainState, run, warmup_lr
from training.reld import pomo_advantage, reinforce_loss


def test_mean_baseline_is_each_instances_own_mean() -> None:
    lengths = torch.tensor([[1.0, 2.0, 3.0, 6.0], [10.0, 10.0, 10.0, 10.0]])
    adv = pomo_advantage(lengths)
    assert torch.allclose(adv[0], torch.tensor([-2.0, -1.0, 0.0, 3.0]))
    assert torch.equal(adv[1], torch.zeros(4))  # equal lengths: nothing to learn
    other = lengths.clone()
    other[1] = torch.tensor([0.0, 50.0, 7.0, 1.0])
    assert torch.equal(pomo_advantage(other)[0], adv[0])  # not mixed across instances


def test_best_baseline_weights_only_each_instances_shortest() -> None:
    lengths = torch.tensor([[4.0, 2.0, 3.0, 7.0], [5.0, 9.0, 1.0, 1.5]])
    adv = pomo_advantage(lengths, "best")
    assert torch.allclose(adv, torch.tensor([[0.0, -2.0, 0.0, 0.0], [0.0, 0.0, -3.125, 0.0]]))
    with pytest.raises(ValueError):
        pomo_advantage(lengths, "greedy")


def test_descent_raises_the_likelihood_of_the_shorter_trajectories() -> None:
    lengths = torch.tensor([[1.0, 2.0, 3.0, 6.0]])
    log_p = torch.zeros(1, 4, requires_grad=True)
    (pomo_advantage(lengths) * log_p).mean().backward()
    assert log_p.grad is not None
    step = -log_p.grad[0]  # what gradient descent adds
    assert step[0] > step[1] > 0 > step[3]


def _tiny(problem: str) -> ReLDModel:
    torch.manual_seed(0)
    return ReLDModel(ReLDConfig(problem=problem, dim=16, layers=1, heads=2, hidden=32))


def test_replayed_log_likelihood_is_the_sampled_ones() -> None:
    """REINFORCE samples without gradients and recomputes the log-likelihoods in one
    teacher-forced call: both must be the same numbers, or the gradient is another policy's."""
    torch.manual_seed(1)
    model = _tiny("tsp")
    coords = torch.rand(2, 12, 2)
    starts = torch.stack([torch.randperm(12)[:4] for _ in range(2)])
    with torch.no_grad():
        r = rollout_tsp(model, coords, starts, decode="sample", track_log_prob=True)
        replayed = sequence_log_prob(model, model.encode(coords), replay_tsp(coords, r.actions))
    assert torch.allclose(r.log_prob, replayed, atol=1e-4)
    model = _tiny("cvrp")
    made = [random_cvrp(np.random.default_rng(s), 12) for s in range(2)]
    xy = torch.as_tensor(np.stack([m[0] for m in made]), dtype=torch.float32)
    dem = torch.as_tensor(np.stack([m[1] / m[2] for m in made]), dtype=torch.float32)
    cap = torch.as_tensor([float(m[2]) for m in made])
    with torch.no_grad():
        r = rollout_cvrp(model, xy, dem, 4, decode="sample", capacity=cap, track_log_prob=True)
        seqs = torch.cat([torch.zeros(2, 4, 1, dtype=torch.long), r.actions], dim=-1)
        replayed = sequence_log_prob(model, model.encode(xy, dem),
                                     replay_cvrp(xy, dem, seqs, cap))
    assert torch.allclose(r.log_prob, replayed, atol=1e-4)


@pytest.mark.parametrize("baseline", ["mean", "best"])
def test_reinforce_loss_gives_every_parameter_a_finite_gradient(baseline: str) -> None:
    model = _tiny("tsp")
    loss, best = reinforce_loss(model, "tsp", 2, 4, (10, 12), np.random.default_rng(0), "cpu",
                                baseline)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert any(float(g.abs().sum()) > 0 for g in grads)
    assert 0 < best < 12 * 2**0.5


def test_warmup_rises_to_the_learning_rate_and_stays() -> None:
    assert warmup_lr(1e-5, 0, 100) == pytest.approx(1e-7)
    assert warmup_lr(1e-5, 49, 100) == pytest.approx(5e-6)
    assert warmup_lr(1e-5, 99, 100) == warmup_lr(1e-5, 5000, 100) == 1e-5
    assert warmup_lr(1e-5, 0, 0) == 1e-5


def test_the_shared_loop_warms_each_parameter_group_up_to_its_own_lr() -> None:
    net = torch.nn.Linear(2, 2)
    optimizer = torch.optim.Adam([{"params": [net.weight], "lr": 1e-3},
                                  {"params": [net.bias], "lr": 4e-3}])
    seen: list[list[float]] = []

    def loss() -> tuple[torch.Tensor, None]:
        seen.append([g["lr"] for g in optimizer.param_groups])
        return net(torch.ones(1, 2)).sum(), None

    state = TrainState(phases={})
    run(net, optimizer, state, Timer(0.0, False), 0.002, 60.0, loss, lambda: None, [],
        phase="p", warmup_steps=4)
    assert seen and state.steps == len(seen) == state.phases["p"]
    for k, lrs in enumerate(seen):
        assert lrs == [warmup_lr(1e-3, k, 4), warmup_lr(4e-3, k, 4)]
    assert seen[0] == [2.5e-4, 1e-3]
