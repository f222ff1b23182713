"""ASGI middleware that caps request bodies before anything buffers them.

A body limit has to sit below the framework: by the time a route sees ``request.body()`` the
whole body is already in memory. This middleware refuses a request whose ``Content-Length``
is over the limit without reading it, and counts the bytes of a chunked (length-less) body as
they stream in, stopping at the limit. Either way the client gets a 413 problem response.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import PROBLEM_JSON, problem_bytes


class _BodyTooLargeError(Exception):
    """Raised from ``receive`` when a streamed body passes the limit."""


class BodySizeLimitMiddleware:
    """Reject HTTP request bodies larger than ``max_body_bytes`` with 413 problem details."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._refuse(scope, send, f"The body is {declared} bytes")
            return

        received = 0
        response_started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _BodyTooLargeError
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTooLargeError:
            if response_started:  # pragma: no cover - routes read bodies before answering
                raise
            await self._refuse(scope, send, f"The body passed {self.max_body_bytes} bytes")

    async def _refuse(self, scope: Scope, send: Send, what: str) -> None:
        body = problem_bytes(
            status=413,
            detail=(
                f"{what}; this server accepts at most {self.max_body_bytes} bytes per request. "
                "Send a gzipped file (.gz), or solve large instances with the CLI "
                "(cosolve solve)."
            ),
            path=scope.get("path", ""),
            kind="body-too-large",
            title="Request body too large",
            field="body",
            extra={"limit": self.max_body_bytes},
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", PROBLEM_JSON.encode()),
                    (b"content-length", str(len(body)).encode()),
                    # The rest of the body is never read, so the connection cannot be reused.
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
