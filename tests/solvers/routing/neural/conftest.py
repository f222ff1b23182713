"""The neural solvers' tests check their plans as on a machine of their own: the load other
processes put on the cores (the suite's servers, a busy CI host) is taken as none, so a plan
does not change with whatever ran in the minute before. test_under_load sets its own."""

import pytest

from solvers.routing.neural import search


@pytest.fixture(autouse=True)
def _machine_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
