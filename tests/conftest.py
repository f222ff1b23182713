"""Shared fixtures: small real instances from TSPLIB and CVRPLIB (tests/data/)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# In-process apps (TestClient) keep their job store out of the working tree.
os.environ.setdefault("COSOLVE_DATA_DIR", tempfile.mkdtemp(prefix="cosolve-tests-"))

from solvers.routing.io.formats import load_instance
from solvers.routing.problem import CVRPInstance, TSPInstance

if TYPE_CHECKING:
    import httpx

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"

#: Proven optima (TSPLIB) and best-known values (CVRPLIB), EUC_2D rounded.
OPTIMA = {"eil51": 426, "berlin52": 7542, "kroA100": 21282, "X-n101-k25": 27591}


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Folder of the bundled test instances."""
    return DATA


@pytest.fixture(scope="session")
def eil51() -> TSPInstance:
    """TSPLIB eil51 (51 nodes, EUC_2D, optimum 426)."""
    inst = load_instance(DATA / "eil51.tsp")
    assert isinstance(inst, TSPInstance)
    return inst


@pytest.fixture(scope="session")
def berlin52() -> TSPInstance:
    """TSPLIB berlin52 (52 nodes, EUC_2D, optimum 7542)."""
    inst = load_instance(DATA / "berlin52.tsp")
    assert isinstance(inst, TSPInstance)
    return inst


@pytest.fixture(scope="session")
def x101() -> CVRPInstance:
    """CVRPLIB X-n101-k25 (101 nodes, capacity 206, best known 27591)."""
    inst = load_instance(DATA / "X-n101-k25.vrp")
    assert isinstance(inst, CVRPInstance)
    return inst


# -- real uvicorn servers (tests/app/conftest.py starts them) --
# Defined here, once, so that tests/api, tests/flow and tests/scheduling share one server of
# each kind for the whole session.


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """A server with the default settings."""
    from tests.app.conftest import uvicorn_server

    with uvicorn_server({}) as url:
        yield url


@pytest.fixture(scope="session")
def strict_server_url() -> Iterator[str]:
    """A server with small limits (see tests.app.conftest.STRICT_LIMITS)."""
    from tests.app.conftest import STRICT_LIMITS, uvicorn_server

    with uvicorn_server(STRICT_LIMITS) as url:
        yield url


@pytest.fixture(scope="session")
def api(server_url: str) -> Iterator[httpx.Client]:
    import httpx

    with httpx.Client(base_url=server_url, timeout=60.0) as client:
        yield client


@pytest.fixture(scope="session")
def strict_api(strict_server_url: str) -> Iterator[httpx.Client]:
    import httpx

    with httpx.Client(base_url=strict_server_url, timeout=60.0) as client:
        yield client
