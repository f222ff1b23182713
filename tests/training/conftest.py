"""The trainers' tests use the scheduling tests' workflows (GOODRL trains on them)."""

from tests.solvers.scheduling.conftest import classic, diamond

__all__ = ["classic", "diamond"]
