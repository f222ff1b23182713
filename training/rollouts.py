"""GOODRL's rollouts: the sampler that records the actor's decisions, the recorder of a
teacher's labels, one training episode, and generalized advantage estimation."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from models.goodrl import GoodRL
from solvers.scheduling.features import Obs, collate, observe
from solvers.scheduling.heuristics import HEFT
from solvers.scheduling.simulator import Arrivals, ClusterState, Run, parse_pool, simulate
from solvers.scheduling.workflow import Workflow
from training.lookahead import equivalent_vms

#: The pools and arrival rates (workflows per hour) of the validation scenarios; a training
#: episode draws one of each.
SCENARIO_POOLS = ("6x4", "5x5")
SCENARIO_RATES = (5.4, 9.0)


# -- rollouts --------------------------------------------------------------------------------------
@dataclass
class Step:
    obs: Obs
    action: int
    logp: float
    value: float
    area: float  # ∫ workflows-in-system dt at the decision
    reward: float = 0.0
    target: np.ndarray | None = None  # imitation: VMs the expert would pick


class Sampler(HEFT):
    """Samples the actor's distribution (training) and records every decision."""

    name = "goodrl-sampler"

    def __init__(self, model: GoodRL, on_step: Any = None, greedy: bool = False) -> None:
        super().__init__()
        self.model = model
        self.steps: list[Step] = []
        self.on_step = on_step
        self.greedy = greedy
        self.state: ClusterState | None = None

    def reset(self, state: ClusterState, seed: int) -> None:
        super().reset(state, seed)
        self.state = state

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        obs = observe(state, run, task)
        with torch.no_grad():
            batch = collate([obs])
            logits = self.model.actor(batch)[0]
            value = float(self.model.critic(batch)[0])
        dist = torch.distributions.Categorical(logits=logits)
        a = int(torch.argmax(logits)) if self.greedy else int(dist.sample())
        step = Step(obs, a, float(dist.log_prob(torch.tensor(a))), value, state.area)
        if self.steps:
            self.steps[-1].reward = -(state.area - self.steps[-1].area) / 100.0
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(self)
        return a

    def close(self, final_area: float) -> None:
        if self.steps:
            self.steps[-1].reward = -(final_area - self.steps[-1].area) / 100.0


class Labelled(HEFT):
    """Records every state with the teacher's VM set as its target; acts as the teacher, or as
    ``learner`` when one is given (DAgger)."""

    name = "distill"

    def __init__(self, teacher: HEFT, learner: HEFT | None, data: list[Obs]) -> None:
        super().__init__()
        self.teacher, self.learner, self.data = teacher, learner, data

    def reset(self, state: ClusterState, seed: int) -> None:
        super().reset(state, seed)
        self.teacher.reset(state, seed)

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        obs = observe(state, run, task)
        vm = self.teacher.choose(state, run, task)
        obs.target = equivalent_vms(state, vm)  # type: ignore[attr-defined]
        self.data.append(obs)
        return vm if self.learner is None else self.learner.choose(state, run, task)


def episode(model: GoodRL, templates: list[Workflow], rng: random.Random,
            count: int = 30) -> tuple[list[Step], float]:
    pool = rng.choice(SCENARIO_POOLS)
    rate = rng.choice(SCENARIO_RATES)
    sampler = Sampler(model)
    res = simulate(templates, parse_pool(pool), Arrivals(count, (rate,)), sampler,
                   seed=rng.randrange(10**6) + 10**7)
    sampler.close(float(res.flowtimes.sum()))
    return sampler.steps, res.mean_flowtime


def gae(steps: list[Step], gamma: float, lam: float, last_value: float = 0.0
        ) -> tuple[np.ndarray, np.ndarray]:
    n = len(steps)
    adv = np.zeros(n)
    nxt, run = last_value, 0.0
    for i in range(n - 1, -1, -1):
        delta = steps[i].reward + gamma * nxt - steps[i].value
        run = delta + gamma * lam * run
        adv[i] = run
        nxt = steps[i].value
    return adv, adv + np.array([s.value for s in steps])
