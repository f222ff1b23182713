"""The torch solvers on a CUDA device: skipped where torch sees none (CI, a laptop).

Run on a GPU machine with ``python -m pytest --noconftest tests/gpu`` (the GPU image lacks the
service's HTTP packages that tests/conftest.py imports). ``COSOLVE_TEST_DEVICE=cpu`` runs the
same checks on the CPU, which is how they were written and are kept honest without a GPU.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
import torch

from solvers.contract import Budget
from solvers.flow.generate import netgen_style
from solvers.flow.options import SinkhornSettings
from solvers.flow.sinkhorn import oft_sinkhorn
from solvers.routing.check import check_solution
from solvers.routing.neural.env import replay_tsp
from solvers.routing.problem import CVRPInstance, TSPInstance
from solvers.routing.solve import solve

DEVICE = os.environ.get("COSOLVE_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE.startswith("cuda") and not torch.cuda.is_available(),
                                reason="torch sees no CUDA device")


def _instances() -> list[TSPInstance | CVRPInstance]:
    rng = np.random.default_rng(3)
    dem = rng.integers(1, 10, 60)
    dem[0] = 0
    return [TSPInstance(coords=rng.random((60, 2))),
            CVRPInstance(coords=rng.random((60, 2)), demands=dem, capacity=40)]


@pytest.mark.parametrize("solver", ["reld", "polynet", "sil", "sil_ls"])
def test_neural_solvers_answer_feasibly_on_the_device(solver: str) -> None:
    for inst in _instances():
        sol = solve(inst, solver, Budget(time_limit=2.0, seed=1, device=DEVICE))
        assert sol.feasible, (solver, inst.problem, sol.violations)
        assert check_solution(inst, sol.routes) == []
        assert sol.cost == pytest.approx(inst.cost(sol.routes))


def test_replay_of_tsp_tours_stays_on_the_device() -> None:
    """Teacher forcing (ReLD and PolyNet training) built a CPU index beside CUDA tours."""
    coords = torch.rand(2, 7, 2, device=DEVICE)
    tours = torch.stack([torch.randperm(7) for _ in range(6)]).view(2, 3, 7).to(DEVICE)
    steps = replay_tsp(coords, tours)
    assert steps.target.device.type == torch.device(DEVICE).type
    assert steps.shape == (3, 6)


@pytest.mark.parametrize("engine", [{"cuda_graph": False}, {"cuda_graph": True},
                                    {"compile": True, "cuda_graph": False},
                                    {"compile": True, "cuda_graph": True}])
def test_sinkhorn_engines_match_the_cpu(engine: dict[str, bool]) -> None:
    cores = [netgen_style(seed, 40, 200).core() for seed in range(3)]
    fixed = SinkhornSettings(eps_end=0.05, tol=0.0, stage_tol=0.0, max_stage_iterations=25)
    cpu = oft_sinkhorn(cores, fixed)
    dev = oft_sinkhorn(cores, replace(fixed, **engine), device=DEVICE)
    assert dev.iterations == cpu.iterations
    np.testing.assert_allclose(dev.flow, cpu.flow, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(dev.primal_cost, cpu.primal_cost, rtol=1e-9)


def test_sampled_tsp_rollouts_of_a_training_batch_stay_finite() -> None:
    """A ReLD training batch (64 instances × 100 trajectories of TSP100) sampled on the device:
    on an H200 the cuDNN attention kernel failed or gave NaN probabilities here."""
    from models.reld import ReLDConfig, ReLDModel
    from solvers.routing.neural.env import rollout_tsp

    torch.manual_seed(0)
    model = ReLDModel(ReLDConfig(problem="tsp")).to(DEVICE)
    coords = torch.rand(64, 100, 2, device=DEVICE)
    start = torch.stack([torch.randperm(100) for _ in range(64)]).to(DEVICE)
    with torch.no_grad():
        out = rollout_tsp(model, coords, start, decode="sample")
    assert out.actions.shape == (64, 100, 100)
    assert torch.isfinite(out.lengths).all()


@pytest.mark.parametrize("solver", ["reld", "polynet"])
def test_warm_up_puts_the_checkpoints_on_the_device(solver: str) -> None:
    """The service's start copies the checkpoints to COSOLVE_DEVICE, so the first request
    does not pay for it; the cached model is then on the device."""
    from solvers.catalog import get_solver

    impl = get_solver(solver)
    impl.warm_up_device(DEVICE)
    for problem in impl.problems:
        if impl.weights_path(problem).exists():
            model = impl.model(problem, DEVICE)
            param = next(model.parameters())
            assert param.device.type == torch.device(DEVICE).type
