"""Real uvicorn servers for the API tests.

The API is tested over HTTP against `python -m uvicorn app.main:app` in a subprocess, so the
middleware, the body limits, multipart parsing and content types run exactly as in production.
Two servers: one with the default settings and one with small limits for the limit tests.
Their fixtures (``server_url``, ``strict_server_url``, ``api``, ``strict_api``) live in
tests/conftest.py, so the API, flow and scheduling tests share one server of each kind (a copy
imported into another folder's conftest.py was a second fixture: a second server).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
# generous: a cold numba cache compiles for ~40 s before /readyz answers (34 s in a CI run),
# and a loaded machine doubles that; a healthy start returns at once
STARTUP_TIMEOUT_S = 240.0

#: Limits of the strict server; tests that need them read these numbers.
STRICT_LIMITS = {
    "COSOLVE_MAX_BODY_BYTES": "65536",
    "COSOLVE_MAX_DECOMPRESSED_BYTES": "1048576",
    "COSOLVE_MAX_SYNC_NODES": "60",
    "COSOLVE_MAX_SYNC_ARCS": "1000",
    "COSOLVE_MAX_TIME_LIMIT": "5",
    "COSOLVE_DEFAULT_TIME_LIMIT": "1",
    "COSOLVE_MAX_COMPARE_SOLVERS": "2",
    "COSOLVE_MAX_ACTIVE_JOBS": "1",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _python() -> str:
    """The project's virtualenv interpreter (the one running pytest, normally)."""
    venv_python = REPO / ".venv" / "bin" / "python"
    return str(venv_python) if venv_python.exists() else sys.executable


@contextmanager
def uvicorn_server(settings_env: dict[str, str], port: int | None = None) -> Iterator[str]:
    """Start uvicorn on a free port with ``settings_env``, wait until /readyz answers, yield
    the base URL and stop the server afterwards. Its job store lives in a temporary folder
    unless ``COSOLVE_DATA_DIR`` is given."""
    port = port or _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    with tempfile.TemporaryDirectory(prefix="cosolve-test-") as data_dir:
        env["COSOLVE_DATA_DIR"] = data_dir
        env.update(settings_env)
        with _running(env, port) as url:
            yield url


@contextmanager
def _running(env: dict[str, str], port: int, kill: bool = False) -> Iterator[str]:
    """Run uvicorn with ``env`` on ``port``; stop it with SIGTERM, or SIGKILL if ``kill``."""
    base_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen(
            [_python(), "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port",
             str(port), "--log-level", "warning"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            _wait_until_healthy(proc, base_url, log)
            yield base_url
        finally:
            if kill:
                proc.kill()
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_until_warm(client: object) -> None:
    """Wait for an in-process app's (a TestClient's) background warm-up to end."""
    warm = client.app.state.warm_up  # type: ignore[attr-defined]
    assert warm.wait(STARTUP_TIMEOUT_S), "the warm-up did not end"


def _wait_until_healthy(proc: subprocess.Popen[bytes], base_url: str, log: object) -> None:
    """Until /readyz answers 200: the port opens at once, and solving requests get a 503
    while the solvers warm up."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)  # type: ignore[attr-defined]
            pytest.fail(f"uvicorn exited with {proc.returncode}:\n{log.read()}")  # type: ignore[attr-defined]
        try:
            if httpx.get(f"{base_url}/readyz", timeout=5.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"uvicorn was not ready (/readyz) within {STARTUP_TIMEOUT_S:g} s")
