"""Comparing flow solvers: only proven optima can agree or disagree; certified relative gaps;
device names checked before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.contract import Budget
from solvers.device import device_problem
from solvers.errors import InstanceError
from solvers.flow import solve as flow_solve
from solvers.flow.io import network_from_dict
from solvers.flow.solution import Certificate, FlowSolution
from solvers.flow.solve import compare
from tests.solvers.flow.conftest import HAND_CHECKED

NET = network_from_dict({"name": "t", **HAND_CHECKED["two_paths"][0]})


def _answers(monkeypatch: pytest.MonkeyPatch, answers: dict[str, tuple[str, int]]) -> None:
    """Stand-in solvers returning (status, cost): compare's bookkeeping, not the solvers."""
    def fake(net, name, budget, progress, options):  # type: ignore[no-untyped-def]
        status, cost = answers[name]
        return FlowSolution(net.name, name, status, np.zeros(net.m, dtype=np.int64), cost,
                            True, [], 0.0)

    monkeypatch.setattr(flow_solve, "solve", fake)


@pytest.mark.parametrize(("answers", "agree"), [
    # a time-limited answer that costs more is its gap, not a disagreement (the QA case)
    ({"a": ("optimal", 10), "b": ("feasible", 12)}, True),
    ({"a": ("optimal", 10), "b": ("optimal", 10), "c": ("feasible", 99)}, True),
    ({"a": ("optimal", 10), "b": ("optimal", 11)}, False),
    # a checked flow below a "proven" optimum refutes it
    ({"a": ("optimal", 10), "b": ("feasible", 9)}, False),
    # nothing proven, nothing to agree on
    ({"a": ("feasible", 10), "b": ("feasible", 12)}, None),
])
def test_only_proven_optima_count_towards_agreement(
        monkeypatch: pytest.MonkeyPatch, answers: dict[str, tuple[str, int]],
        agree: bool | None) -> None:
    _answers(monkeypatch, answers)
    result = compare(NET, list(answers), Budget(time_limit=1))
    assert result.agree is agree
    assert result.best_cost == min(cost for _, cost in answers.values())


def test_compare_refuses_an_unbounded_network_once() -> None:
    net = network_from_dict({"name": "u", **HAND_CHECKED["negative_cycle"][0]})
    assert compare(net, ["ortools_mcf"], Budget(time_limit=5)).agree is True  # capped: fine
    unbounded = network_from_dict({"nodes": 3, "supplies": [0, 0, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": -5}, {"tail": 2, "head": 3, "cost": 2},
        {"tail": 3, "head": 1, "cost": 1}]})
    with pytest.raises(InstanceError) as exc:
        compare(unbounded, ["ortools_mcf", "networkx_simplex"], Budget(time_limit=5))
    assert exc.value.field == "arcs" and "unbounded" in exc.value.message


@pytest.mark.parametrize(("bound", "gap", "relative"), [
    (0, 483_014_461, 1.0),  # bound still 0: it proves nothing (was 48 301 446 100 %)
    (-1000, 1010, 1.01),  # bound ≤ 0 ≤ cost: ≥ 1
    (100, 10, 10 / 110),  # relative to the larger of cost and bound
    (-110, 10, 10 / 110),  # negative costs: |bound| is the larger
    (369_269_289, 0, 0.0),
    (0, 0, 0.0),
])
def test_relative_gap_is_bounded_and_meaningful(bound: int, gap: int, relative: float) -> None:
    cert = Certificate(dual_bound=bound, gap=gap, source="test")
    assert cert.relative_gap == pytest.approx(relative)
    assert 0 <= cert.relative_gap <= 2
    assert cert.to_dict()["relative_gap"] == pytest.approx(relative)


@pytest.mark.parametrize("device", ["banana", "CPU", "cuda:", "cuda:x", "cpu:0", " cpu", ""])
def test_unknown_device_names_are_refused(device: str) -> None:
    problem = device_problem(device)
    assert problem is not None and "cpu, cuda or cuda:N" in problem


def test_cuda_devices_are_checked_against_what_torch_sees(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    assert device_problem("cpu") is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "no CUDA GPU" in (device_problem("cuda") or "")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert device_problem("cuda") is None and device_problem("cuda:1") is None
    assert "2 CUDA GPU" in (device_problem("cuda:2") or "")


def test_auto_takes_the_gpu_only_when_torch_sees_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from solvers.device import torch_device_name

    try:
        for available, expected in ((False, "cpu"), (True, "cuda")):
            torch_device_name.cache_clear()
            monkeypatch.setattr(torch.cuda, "is_available", lambda a=available: a)
            monkeypatch.setattr(torch.cuda, "device_count", lambda a=available: int(a))
            assert torch_device_name("auto") == expected
        torch_device_name.cache_clear()
        assert torch_device_name("cpu") == "cpu"
        with pytest.raises(ValueError, match="'cuda:1' was asked for, but torch sees 1 CUDA"):
            torch_device_name("cuda:1")
    finally:
        torch_device_name.cache_clear()
