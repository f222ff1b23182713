"""Slow clients may not hold the server: a deadline for a request's headers and one for each
read of its body.

uvicorn closes an idle keep-alive connection (``timeout_keep_alive``, 5 s) and caps a
header's size (``h11_max_incomplete_event_size``, 16 KiB), but nothing times a request
whose headers trickle in: 300 connections sending a header byte now and then were all held
for as long as they kept going (45 s and counting). ``HeaderTimeoutProtocol`` closes a
connection whose request headers are not complete ``COSOLVE_HEADER_TIMEOUT_S`` after it
opened or after its previous response ended; ``cosolve serve`` runs uvicorn with it.
``BodyReadTimeoutMiddleware`` answers 408 when a body pauses longer than
``COSOLVE_BODY_TIMEOUT_S`` between two reads (the nginx ``client_body_timeout`` rule), so a
large upload on a slow line still goes through.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from app.errors import PROBLEM_JSON, problem_bytes
from app.settings import get_settings

#: What ``cosolve serve`` passes as uvicorn's ``http`` (an import string, as the CLI may not
#: import the app).
PROTOCOL = "app.slow_clients:HeaderTimeoutProtocol"


class _BodyTimeoutError(Exception):
    """Raised from ``receive`` when a body read waits past the limit."""


class BodyReadTimeoutMiddleware:
    """408 problem details when a request body pauses longer than ``timeout_s`` between two
    reads. Only the body's reads are timed: once it is complete, ``receive`` waits for the
    client to leave (an event stream, a solve watching for a disconnect) as long as it must."""

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_done = False
        started = False

        async def timed_receive() -> Message:
            nonlocal body_done
            if body_done:
                return await receive()
            try:
                with anyio.fail_after(self.timeout_s):
                    message = await receive()
            except TimeoutError:
                raise _BodyTimeoutError from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, tracking_send)
        except _BodyTimeoutError:
            if started:  # pragma: no cover - routes read their bodies before answering
                raise
            await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        body = problem_bytes(
            status=408, path=scope.get("path", ""), kind="body-timeout",
            title="Request body too slow", field="body",
            detail=f"the request body paused for more than {self.timeout_s:g} s "
            "(COSOLVE_BODY_TIMEOUT_S); send it again on a steadier connection")
        await send({"type": "http.response.start", "status": 408, "headers": [
            (b"content-type", PROBLEM_JSON.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close")]})  # the rest of the body is never read
        await send({"type": "http.response.body", "body": body})


class HeaderTimeoutProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP protocol (httptools, or h11 without it) plus a deadline for request
    headers. Both set ``cycle`` when a request's headers are complete and call
    ``on_response_complete`` when its answer is sent, so the deadline is armed at those two
    points and fires only if no new request has begun since."""

    #: The deadline in seconds; None reads COSOLVE_HEADER_TIMEOUT_S (a subclass may fix it).
    timeout_s: float | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout_s = self.timeout_s or get_settings().header_timeout_s
        self._header_timer: asyncio.TimerHandle | None = None

    def _arm_header_deadline(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        waiting_after = self.cycle
        self._header_timer = self.loop.call_later(
            self.header_timeout_s, self._header_deadline, waiting_after)

    def _header_deadline(self, waiting_after: object) -> None:
        self._header_timer = None
        cycle = self.cycle
        idle = cycle is None or cycle.response_complete  # not a pipelined request at work
        if cycle is waiting_after and idle and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)
