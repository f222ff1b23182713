"""Liveness and readiness responses."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class HealthResponse(BaseModel):
    """The process is up and serving requests."""

    status: Literal["ok"] = "ok"


class ReadinessCheck(BaseModel):
    """The result of solving the bundled smoke-test instance."""

    solver: str
    instance: str
    nodes: int
    cost: float | None
    feasible: bool
    seconds: float = Field(description="Wall time of the whole check.")


class SolverAvailability(BaseModel):
    name: str
    available: bool
    unavailable_reason: str | None = None


class ReadinessResponse(BaseModel):
    """Ready: a real solve worked; lists which solvers can run on this machine."""

    status: Literal["ready"] = "ready"
    check: ReadinessCheck
    solvers: list[SolverAvailability]
    device: str = Field(description="Where the torch solvers run (COSOLVE_DEVICE, resolved; "
                        "a GPU with its name).", examples=["cpu"])
