"""The web console: a page at ``/`` and its static files under ``/console/``.

The console is plain HTML, CSS and JavaScript modules shipped in the package
(``app/console/``) and talks to the service only through the public ``/v1`` API, so it proves
the API is enough for a real client. Files are served with an ETag and ``no-cache`` (the browser
revalidates, a 304 when unchanged), since their names carry no version: a new install is
picked up at the next load, never a stale script beside a new page.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import Response

from app.errors import ApiError

router = APIRouter(tags=["console"], include_in_schema=False)

#: Where the console's files live (installed as package data, pyproject.toml).
CONSOLE_DIR = Path(__file__).resolve().parents[1] / "console"

#: Content types by suffix; anything else is not served (no directory listing, no guessing).
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
    # the bundled example instances and known solutions, offered for download as text
    ".tsp": "text/plain; charset=utf-8",
    ".vrp": "text/plain; charset=utf-8",
    ".vrptw": "text/plain; charset=utf-8",
    ".sol": "text/plain; charset=utf-8",
    ".tour": "text/plain; charset=utf-8",
    ".min": "text/plain; charset=utf-8",
    ".gz": "application/gzip",
}

#: Scripts and styles come from this origin only; nothing from a CDN or another host.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; "
        "script-src 'self'; worker-src 'self' blob:; connect-src 'self'; object-src 'none'; "
        "base-uri 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@lru_cache(maxsize=256)
def _read(path: Path, mtime_ns: int) -> tuple[bytes, str]:
    """The file's bytes and ETag, cached per modification time."""
    data = path.read_bytes()
    return data, '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


def _serve(path: Path, request: Request) -> Response:
    suffix = path.suffix.lower()
    media_type = CONTENT_TYPES.get(suffix)
    if media_type is None or not path.is_file():
        raise ApiError(404, f"no console file {request.url.path!r}", kind="not-found",
                       title="Not found")
    data, etag = _read(path, path.stat().st_mtime_ns)
    headers = {"ETag": etag, "Cache-Control": "no-cache", **SECURITY_HEADERS}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(data, media_type=media_type, headers=headers)


@router.get("/")
def console_page(request: Request) -> Response:
    """The console's single page; its views are chosen by the URL's fragment (#solve)."""
    return _serve(CONSOLE_DIR / "index.html", request)


@router.get("/console/{file_path:path}")
def console_file(file_path: str, request: Request) -> Response:
    """A static file of the console; paths that leave the console's folder are a 404."""
    base = CONSOLE_DIR.resolve()
    path = (base / file_path).resolve()
    if base not in path.parents:
        raise ApiError(404, f"no console file {request.url.path!r}", kind="not-found",
                       title="Not found")
    return _serve(path, request)
