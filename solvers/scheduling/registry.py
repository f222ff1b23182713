"""The scheduling policies by name: the single list the API, the CLI and the benchmark read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from solvers.errors import SolverUnavailableError, UnknownSolverError
from solvers.scheduling import goodrl
from solvers.scheduling.heuristics import CORRECT_HEURISTICS, HEURISTICS, STALE_HEURISTICS
from solvers.scheduling.simulator import Policy


@dataclass(frozen=True)
class PolicySpec:
    """A policy's name, what it does, and whether it can run here."""

    name: str
    kind: str  # "heuristic", "heuristic-stale" or "learned"
    description: str
    factory: Callable[[], Policy]
    availability: Callable[[], str | None] = lambda: None

    def unavailable_reason(self) -> str | None:
        return self.availability()

    @property
    def available(self) -> bool:
        return self.unavailable_reason() is None


POLICIES: dict[str, PolicySpec] = {}
for _name in (*CORRECT_HEURISTICS, *STALE_HEURISTICS):
    _cls = HEURISTICS[_name]
    POLICIES[_name] = PolicySpec(_name, "heuristic" if _name in CORRECT_HEURISTICS
                                 else "heuristic-stale", _cls.description, _cls)
POLICIES["goodrl"] = PolicySpec("goodrl", "learned", goodrl.GoodRLPolicy.description,
                                goodrl.GoodRLPolicy, goodrl.availability)
DEFAULT_POLICIES = ("goodrl", "heft", "eft", "peft", "est", "eft_stale")


def policy_names() -> list[str]:
    return list(POLICIES)


def get_policy(name: str) -> Policy:
    """A fresh policy instance; unknown names and missing weights are domain errors."""
    spec = POLICIES.get(name)
    if spec is None:
        raise UnknownSolverError(name, policy_names())
    reason = spec.unavailable_reason()
    if reason is not None:
        raise SolverUnavailableError(name, reason)
    return spec.factory()
