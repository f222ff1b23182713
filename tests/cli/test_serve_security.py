"""cosolve serve: serving beyond loopback without API keys is refused unless --insecure."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.exposure import is_loopback
from cli.main import app

KEY = "a-key-of-the-operator-0123456789"


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "cosolve.example"])
def test_other_hosts(host: str) -> None:
    assert not is_loopback(host)


def _serve(tmp_path: Path, *args: str, **env: str) -> tuple[int, str]:
    environment = {"COSOLVE_DATA_DIR": str(tmp_path), "COSOLVE_API_KEYS": "",
                   "COSOLVE_API_KEYS_FILE": "", **env}
    result = CliRunner().invoke(app, ["serve", *args], env=environment)
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


def test_an_open_server_without_keys_is_refused_with_the_ways_out(tmp_path: Path) -> None:
    code, out = _serve(tmp_path, "--host", "0.0.0.0", "--port", "8799")
    assert code == 2
    assert "no API keys are set" in out and "COSOLVE_API_KEYS" in out and "--insecure" in out


@pytest.mark.parametrize("how", ["keys", "insecure"])
def test_keys_or_insecure_let_it_start(tmp_path: Path, how: str) -> None:
    # the port is taken, so the start stops at the next check, past the one tested here
    with socket.create_server(("0.0.0.0", 0)) as busy:
        port = str(busy.getsockname()[1])
        if how == "keys":
            code, out = _serve(tmp_path, "--host", "0.0.0.0", "--port", port,
                               COSOLVE_API_KEYS=KEY)
        else:
            code, out = _serve(tmp_path, "--host", "0.0.0.0", "--port", port, "--insecure")
    assert code == 2 and "cannot listen" in out and "no API keys" not in out
