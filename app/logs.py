"""Log lines an operator can follow: a request id on every line a request causes, and JSON.

The id lives in a context variable, set by ``RequestIdMiddleware`` for the whole of a request:
the route's code, the threads it solves in (anyio copies the context into them) and
uvicorn's access line all see it, so one grep finds everything a request did. It goes back to
the client in ``X-Request-ID`` (a client's own id is kept when it is sane, so a caller can
correlate its logs with ours). ``COSOLVE_LOG_FORMAT=json`` (``cosolve serve --log-format
json``) writes one JSON object per line, uvicorn's lines included, for log collectors.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The id of the request being handled (None outside requests: start-up, job monitor).
request_id: ContextVar[str | None] = ContextVar("cosolve_request_id", default=None)

HEADER = "X-Request-ID"
#: A client's id is kept when it is short printable ASCII without spaces (it is echoed in a
#: header and written to logs, so nothing that could split either).
_SANE_ID = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")

#: The loggers whose lines are reformatted: ours and uvicorn's.
LOGGERS = ("cosolve", "uvicorn", "uvicorn.error", "uvicorn.access")

#: LogRecord attributes that are not ``extra=`` fields.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime",
                                                                          "color_message"}


def accept_or_make_id(given: str | None) -> str:
    """The client's X-Request-ID when sane, else a new random one."""
    if given is not None and _SANE_ID.match(given):
        return given
    return uuid.uuid4().hex


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, and the record's
    ``extra`` fields (a job's id, state, cost...)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        rid = request_id.get()
        if rid is not None:
            entry["request_id"] = rid
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class WithRequestId(logging.Formatter):
    """Another formatter's line with `` [request_id=...]`` added while a request is handled."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        line = self.inner.format(record)
        rid = request_id.get()
        return f"{line} [request_id={rid}]" if rid is not None else line


def apply_format(log_format: str) -> None:
    """Put our formatter on the handlers of our and uvicorn's loggers (set up by then:
    uvicorn configures its logging before it imports the app); idempotent."""
    if log_format == "json":
        # this process's warnings as JSON lines too (they went to stderr as two text lines)
        logging.captureWarnings(True)
        warnings_logger = logging.getLogger("py.warnings")
        if not warnings_logger.handlers and not logging.getLogger().handlers:
            warnings_logger.addHandler(logging.StreamHandler())
    for name in (*LOGGERS, "py.warnings"):
        for handler in logging.getLogger(name).handlers:
            current = handler.formatter
            if log_format == "json":
                if not isinstance(current, JsonFormatter):
                    handler.setFormatter(JsonFormatter())
            elif not isinstance(current, WithRequestId | JsonFormatter):
                handler.setFormatter(WithRequestId(current))


class RequestIdMiddleware:
    """Set the request id for the request's context and answer it in ``X-Request-ID``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = None
        for name, value in scope.get("headers", []):
            if name == b"x-request-id":
                given = value.decode("latin-1")
                break
        rid = accept_or_make_id(given)
        scope.setdefault("state", {})["request_id"] = rid

        async def with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.lower() != b"x-request-id"]
                headers.append((b"x-request-id", rid.encode()))
                message = {**message, "headers": headers}
            await send(message)

        token = request_id.set(rid)
        try:
            await self.app(scope, receive, with_header)
        finally:
            request_id.reset(token)
