"""app.slow_clients: connections whose headers trickle in are closed at the header deadline,
and a body that stalls is a 408, on real uvicorn servers over loopback sockets.

The fast tests serve a small ASGI app in-process (the protocol and the middleware are what
is tested, not the solvers); the heavy one starts `cosolve serve` itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from app.slow_clients import BodyReadTimeoutMiddleware, HeaderTimeoutProtocol

DEADLINE_S = 0.3


class _QuickDeadline(HeaderTimeoutProtocol):
    timeout_s = DEADLINE_S


async def _echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Reads the whole body, then (on /wait) waits for the client to leave for a while, as
    an event stream or a solve watching for a disconnect does, and answers its length."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    if scope["path"] == "/wait":
        import anyio

        with anyio.move_on_after(2 * DEADLINE_S):
            await receive()
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def _serving(app: Any, protocol: type) -> Iterator[int]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=protocol, log_level="warning",
                            timeout_keep_alive=30, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def _closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed ``sock`` (None if it stayed open ``seconds``)."""
    started = time.monotonic()
    sock.settimeout(seconds)
    try:
        while True:
            if not sock.recv(4096):
                return time.monotonic() - started
    except TimeoutError:
        return None
    except ConnectionResetError:
        return time.monotonic() - started


def _slow_headers(port: int, count: int) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: a")  # never ends
        socks.append(sock)
    return socks


def test_slow_headers_are_cut_at_the_deadline_and_were_held_before() -> None:
    with _serving(_echo, AutoHTTPProtocol) as port:  # uvicorn's own protocol
        [sock] = _slow_headers(port, 1)
        with sock:
            assert _closed_within(sock, 2 * DEADLINE_S) is None  # held: nothing times it
    with _serving(_echo, _QuickDeadline) as port:
        socks = _slow_headers(port, 30)
        try:
            waits = [_closed_within(s, 4 * DEADLINE_S + 2) for s in socks]
        finally:
            for s in socks:
                s.close()
        assert all(w is not None for w in waits), waits
        # all 30 at the deadline (measured from after the last connection opened)
        assert max(w for w in waits if w is not None) < DEADLINE_S + 1.5
        # a request that is quick, even a keep-alive one after it, is served as before
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            assert client.post("/", content=b"x" * 10).text == "10"
            time.sleep(DEADLINE_S * 1.5)  # idle between requests: keep-alive's business
            assert client.post("/", content=b"x" * 20).text == "20"


def test_headers_trickling_after_a_keep_alive_answer_are_cut_too() -> None:
    with _serving(_echo, _QuickDeadline) as port, \
            socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        time.sleep(0.2)
        assert b"200 OK" in sock.recv(4096)
        sock.sendall(b"GET / HTTP/1.1\r\nHost: local")  # the next request stalls
        waited = _closed_within(sock, 4 * DEADLINE_S + 2)
        assert waited is not None and waited < DEADLINE_S + 1.5


def test_a_stalled_body_is_a_408_and_a_steady_one_goes_through() -> None:
    app = BodyReadTimeoutMiddleware(_echo, timeout_s=DEADLINE_S)
    with _serving(app, _QuickDeadline) as port:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n"
                         + b"x" * 10)
            started = time.monotonic()
            sock.settimeout(5)
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
            assert time.monotonic() - started < DEADLINE_S + 1.5
        assert answer.startswith(b"HTTP/1.1 408") and b"COSOLVE_BODY_TIMEOUT_S" in answer
        assert b"application/problem+json" in answer

        def steady() -> Iterator[bytes]:
            for _ in range(4):  # twice the deadline in all, never a pause as long as it
                time.sleep(DEADLINE_S / 2)
                yield b"y" * 100

        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            assert client.post("/", content=steady()).text == "400"
            # after the body, waiting on the client (a stream, a solve) is not timed
            assert client.post("/wait", content=b"z").text == "1"


@pytest.mark.heavy
def test_cosolve_serve_closes_slow_header_connections(tmp_path: Path) -> None:
    """The command users run: 100 connections that never finish their headers are all
    closed at COSOLVE_HEADER_TIMEOUT_S (they were held for as long as they kept sending)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env.update(COSOLVE_DATA_DIR=str(tmp_path), COSOLVE_HEADER_TIMEOUT_S="1")
    proc = subprocess.Popen([sys.executable, "-c", "from cli.main import app; app()", "serve",
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        socks = _slow_headers(port, 100)
        try:
            waits = [_closed_within(s, 6) for s in socks]
        finally:
            for s in socks:
                s.close()
        assert all(w is not None and w < 3.0 for w in waits), waits
    finally:
        proc.terminate()
        proc.wait(30)
