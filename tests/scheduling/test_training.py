"""The training pieces that decide what GOODRL learns: rewards and returns."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from models.goodrl import GoodRL
from solvers.scheduling.features import GLOBAL_FEATURES, NODE_FEATURES, VM_FEATURES
from solvers.scheduling.workflow import Workflow
from training.goodrl import Step, episode, gae


def test_rewards_sum_to_minus_total_flowtime(classic: list[Workflow]) -> None:
    torch.manual_seed(0)
    model = GoodRL(NODE_FEATURES, VM_FEATURES, GLOBAL_FEATURES, 16)
    steps, mean_flow = episode(model, classic, random.Random(1), count=4)
    total = sum(s.reward for s in steps)
    assert total == pytest.approx(-mean_flow * 4 / 100.0, rel=1e-9)
    assert all(s.reward <= 0 for s in steps) and len(steps) > 4 * 20


def test_gae_with_lambda_one_is_the_discounted_return() -> None:
    steps = [Step(obs=None, action=0, logp=0.0, value=v, area=0.0, reward=r)  # type: ignore[arg-type]
             for v, r in ((1.0, -1.0), (0.5, -2.0), (2.0, -3.0))]
    adv, ret = gae(steps, gamma=0.5, lam=1.0, last_value=4.0)
    expected = [-1 + 0.5 * (-2 + 0.5 * (-3 + 0.5 * 4)), -2 + 0.5 * (-3 + 0.5 * 4), -3 + 0.5 * 4]
    assert ret.tolist() == pytest.approx(expected)
    assert adv.tolist() == pytest.approx(np.array(expected) - [1.0, 0.5, 2.0])
