"""The web console's files as the server serves them, and its JavaScript held to the public
API: every /v1 path it calls exists in the OpenAPI document, and nothing is loaded from
another host. (The console at work in a real browser: tests/app/console/test_browser.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from app.routers.console import CONSOLE_DIR

JS_DIR = CONSOLE_DIR / "js"
#: A /v1 path in a JavaScript string or template literal, up to its query or closing quote.
API_PATH = re.compile(r"""["'`](/v1/[^"'`?\s]*)""")
#: An absolute URL anywhere in the assets.
URL = re.compile(r"https?://[^\s\"'`)<>]+")


def _assets() -> list[Path]:
    return sorted(p for p in CONSOLE_DIR.rglob("*")
                  if p.suffix in (".html", ".css", ".js") and p.is_file())


def _as_pattern(path: str) -> re.Pattern[str]:
    """An OpenAPI path as a regular expression: each {parameter} one segment."""
    return re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(path)) + "$")


def test_the_page_is_served_at_the_root(api: httpx.Client) -> None:
    page = api.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-cache"
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert '<script type="module" src="/console/js/main.js">' in page.text
    # the page's own references all resolve
    for ref in re.findall(r'(?:src|href)="(/console/[^"]+)"', page.text):
        assert api.get(ref).status_code == 200, ref
    # the API and its documentation stay where they were
    assert api.get("/docs").status_code == 200
    assert api.get("/v1/solvers").status_code == 200


@pytest.mark.parametrize(("path", "media_type"), [
    ("/console/console.css", "text/css"),
    ("/console/js/main.js", "text/javascript"),
    ("/console/js/parse-worker.js", "text/javascript"),
    ("/console/examples/X-n101-k25.vrp", "text/plain"),
    ("/console/examples/netgen_8_08a.min.gz", "application/gzip"),
])
def test_static_files_have_their_content_types(api: httpx.Client, path: str,
                                               media_type: str) -> None:
    answer = api.get(path)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith(media_type)
    etag = answer.headers["etag"]
    again = api.get(path, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""


@pytest.mark.parametrize("path", [
    "/console/nothing.js", "/console/%2e%2e/routers/console.py", "/console/js/",
    "/console/..%2f..%2fpyproject.toml"])
def test_only_console_files_are_served(api: httpx.Client, path: str) -> None:
    answer = api.get(path)
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("application/problem+json")


def test_every_module_import_resolves() -> None:
    for script in JS_DIR.glob("*.js"):
        for target in re.findall(r'from "(\./[^"]+)"', script.read_text()):
            assert (JS_DIR / target).is_file(), f"{script.name} imports {target}"


def test_the_javascript_calls_only_paths_of_the_openapi_document(api: httpx.Client) -> None:
    documented = [_as_pattern(p) for p in api.get("/openapi.json").json()["paths"]]
    called = set()
    for script in JS_DIR.glob("*.js"):
        for path in API_PATH.findall(script.read_text()):
            concrete = re.sub(r"\$\{[^}]*\}", "ID", path)
            called.add(concrete)
            assert any(p.match(concrete) for p in documented), f"{script.name} calls {path}"
    # the calls the views depend on were all seen (a broken pattern would find none)
    for needed in ("/v1/jobs", "/v1/jobs/ID/events", "/v1/jobs/ID/solution", "/v1/solvers",
                   "/v1/batches", "/v1/flow/min-cost/compare", "/v1/scheduling/simulate/jobs"):
        assert needed in called


def test_no_asset_loads_anything_from_another_host() -> None:
    for asset in _assets():
        assert URL.findall(asset.read_text()) == [], asset.name
    for asset in CONSOLE_DIR.rglob("*"):
        assert asset.suffix not in (".map", ".min.js"), "no bundled third-party code"
