"""Who is asking, and from where: API keys, the principal a request acts as, CORS and the
Host check.

With ``COSOLVE_API_KEYS`` set, every ``/v1`` request carries ``Authorization: Bearer <key>``
(401 otherwise) and acts as that key's principal: its jobs, batches and sessions are its own,
and another key's answer 404, as ids that do not exist (a 403 would confirm the id). Without
keys the principal is the client's address, which the quotas count by and which sees
everything, as before keys existed. The store records a hash of the key, never the key.

The probes, the docs, the console and /metrics stay open. ``current_principal`` is declared
once, as the FastAPI template declares its current user: an app-wide dependency (so no /v1
route can miss it, whichever router adds it) that asks for a key on /v1 routes only; routes
that need the principal take ``PrincipalDep``, the same call's answer.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import PROBLEM_JSON, ApiError, problem_bytes, problem_responses
from jobs.settings import Settings, read_api_keys

#: Host names a loopback server always answers (any port).
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
#: The challenge of a 401 (RFC 6750).
CHALLENGE = {"WWW-Authenticate": 'Bearer realm="cosolve"'}

#: The prefix of the routes that need a key.
API_PREFIX = "/v1"
#: The OpenAPI name of the key scheme.
SCHEME = "apiKey"
#: The request being served, for code below the route that records an owner (a job's
#: submission, however the route reached it): set by ``current_principal``.
current_request: ContextVar[Request | None] = ContextVar("cosolve_request", default=None)


def key_owner(key: str) -> str:
    """What the store records for a key: a hash, so the data folder never holds a key."""
    return "key:" + hashlib.sha256(key.encode()).hexdigest()[:32]


def address_owner(address: str) -> str:
    """What the store records for a client without keys (its address, hashed alike)."""
    return "addr:" + hashlib.sha256(address.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Principal:
    """Whom a request acts for: an API key, or without keys the client's address."""

    #: The hash recorded on jobs, batches and sessions, and the quotas' account.
    owner: str
    #: True when the server has keys: the principal then sees its own things only.
    keyed: bool

    def owns(self, owner: str | None) -> bool:
        """Whether a job, batch or session recorded with ``owner`` is this principal's."""
        return not self.keyed or (owner is not None and hmac.compare_digest(owner, self.owner))

    @property
    def only(self) -> str | None:
        """The owner a listing filters by: this key's, or None (everything) without keys."""
        return self.owner if self.keyed else None


def _unauthorized(detail: str) -> ApiError:
    return ApiError(401, detail, kind="unauthorized", title="API key needed",
                    field="Authorization", headers=CHALLENGE)


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _route_path(request: Request) -> str:
    """The request's path below the app's own root path (a proxy's prefix); a route's own
    ``path`` is relative to its router's mount, so it cannot tell /v1 from the root."""
    path = str(request.scope.get("path", ""))
    root = str(request.scope.get("app_root_path", ""))
    return path[len(root):] if root and path.startswith(root) else path


async def current_principal(request: Request) -> Principal:
    """The principal of a request: on a /v1 route of a server with keys, its key's (401
    without a known one); otherwise its address's. Kept on ``request.state`` for the solve
    quotas."""
    owners: dict[str, str] = getattr(request.app.state, "api_key_owners", {})
    if not owners or not _route_path(request).startswith(API_PREFIX):
        principal = Principal(address_owner(client_address(request)), keyed=False)
    else:
        scheme, _, token = request.headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _unauthorized("this server needs an API key: send it as "
                                "'Authorization: Bearer <key>'")
        given = hashlib.sha256(token.strip().encode()).hexdigest()
        # every digest is compared, in constant time, so the timing tells nothing
        found = [owner for digest, owner in owners.items()
                 if hmac.compare_digest(digest, given)]
        if not found:
            raise _unauthorized("the API key is not one of this server's")
        principal = Principal(found[0], keyed=True)
    request.state.principal = principal
    current_request.set(request)
    return principal


PrincipalDep = Annotated[Principal, Depends(current_principal)]


def principal_of(request: Request) -> Principal:
    """The request's principal, as ``current_principal`` found it (the client's address
    for a request that did not pass through it)."""
    found = getattr(request.state, "principal", None)
    if isinstance(found, Principal):
        return found
    return Principal(address_owner(client_address(request)), keyed=False)


# -- Host check ------------------------------------------------------------------------------
def _is_loopback(server: tuple[str, int] | None) -> bool:
    if not server:
        return False  # a Unix socket: no browser reaches it by name
    try:
        return ipaddress.ip_address(server[0].strip("[]")).is_loopback
    except ValueError:
        return server[0] == "localhost"


def host_name(header: str) -> str:
    """The name of a Host header, without its port: ``[::1]:8000`` -> ``[::1]``."""
    text = header.strip().lower()
    if text.startswith("["):
        return text[: text.find("]") + 1] if "]" in text else text
    return text.rsplit(":", 1)[0].rstrip(".") if text.count(":") == 1 else text.rstrip(".")


class HostCheckMiddleware:
    """On a server bound to loopback, answer only requests addressed to a loopback name
    (421 otherwise): a web page whose name was made to resolve to 127.0.0.1 (DNS rebinding)
    sends its own name as Host, so it cannot drive the API from the visitor's browser."""

    def __init__(self, app: ASGIApp, extra_hosts: frozenset[str]) -> None:
        self.app = app
        self.allowed = LOOPBACK_HOSTS | extra_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _is_loopback(scope.get("server")):
            host = next((v.decode("latin-1") for k, v in scope.get("headers", [])
                         if k == b"host"), None)
            # no Host at all is HTTP/1.0 by hand, not a browser: nothing to rebind
            if host is not None and host_name(host) not in self.allowed:
                await _refuse_host(scope, send, host)
                return
        await self.app(scope, receive, send)


async def _refuse_host(scope: Scope, send: Send, host: str) -> None:
    body = problem_bytes(
        status=421, path=scope.get("path", ""), kind="unknown-host", title="Unknown host",
        field="Host",
        detail=f"this server answers on loopback to localhost, 127.0.0.1 and [::1] only, "
        f"not to {host[:100]!r} (a guard against DNS rebinding); add the name to "
        "COSOLVE_ALLOWED_HOSTS if it is meant")
    await send({"type": "http.response.start", "status": 421, "headers": [
        (b"content-type", PROBLEM_JSON.encode()), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def install_security(app: FastAPI, settings: Settings) -> None:
    """Keys, CORS and the Host check on ``app``; call after the app's own middleware, so
    these wrap it (the Host check outermost, then CORS, whose preflights need no key)."""
    app.state.api_key_owners = {hashlib.sha256(key.encode()).hexdigest(): key_owner(key)
                                for key in read_api_keys(settings.api_keys,
                                                         settings.api_keys_file)}
    origins = _items(settings.cors_origins)
    if origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=origins, allow_methods=["*"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            expose_headers=["Location", "Retry-After", "Content-Disposition", "X-Request-ID"])
    extra = frozenset(host_name(h) if not h.startswith("::") else f"[{h}]"
                      for h in _items(settings.allowed_hosts))
    app.add_middleware(HostCheckMiddleware, extra_hosts=extra)


def document_security(app: FastAPI) -> None:
    """The OpenAPI document names the key scheme on /v1 operations when the server has keys
    (Swagger UI's Authorize button then sends it); call once the app's ``openapi`` is set."""
    if not getattr(app.state, "api_key_owners", None):
        return
    build = app.openapi

    def with_security() -> dict[str, Any]:
        schema = build()
        schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
        if SCHEME not in schemes:
            schemes[SCHEME] = {"type": "http", "scheme": "bearer",
                               "description": "An API key of COSOLVE_API_KEYS."}
            for path, operations in schema.get("paths", {}).items():
                if path.startswith(API_PREFIX):
                    for operation in operations.values():
                        if isinstance(operation, dict):
                            operation["security"] = [{SCHEME: []}]
                            operation.setdefault("responses", {}).setdefault(
                                "401", problem_responses(401)[401])
        return schema

    app.openapi = with_security  # type: ignore[method-assign]
