"""The web console's files as the server serves them, and its JavaScript held to the public
API: every /v1 path it calls exists in the OpenAPI document, and nothing is loaded from
another host. (The console at work in a real browser: tests/app/console/test_browser.py.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
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


def _node(script: str, timeout: float = 60.0) -> str:
    """``script`` run by Node as an ES module (the console's modules imported by file URL)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to run the console's modules")
    done = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


STREAM = (": keep-alive\r\n\r\nevent: progress\r\nid: 1\r\ndata: {\"a\": 1}\r\n\r\n"
          "event: progress\ndata: line one\ndata:line two\n\n\n"
          "data: no type\rid: 7\r\r"
          "event: end\ndata: {\"state\": \"succeeded\"}\n\nevent: cut\ndata: never ended")
EVENTS = [{"type": "progress", "data": "{\"a\": 1}", "id": "1"},
          {"type": "progress", "data": "line one\nline two", "id": None},
          {"type": "message", "data": "no type", "id": "7"},
          {"type": "end", "data": "{\"state\": \"succeeded\"}", "id": None}]


def test_the_event_parser_reads_a_stream_cut_anywhere() -> None:
    """A fetch() body arrives in chunks that split lines, and CRLF between its \\r and \\n."""
    script = f"""
import {{ EventParser }} from {json.dumps((JS_DIR / "sse.js").as_uri())};
const text = {json.dumps(STREAM)};
const runs = [];
for (let cut = 0; cut <= text.length; cut += 1) {{
  const p = new EventParser();
  runs.push([...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))]);
}}
const p = new EventParser();
runs.push([...text].flatMap((c) => p.push(c)));
console.log(JSON.stringify(runs));
"""
    runs = json.loads(_node(script))
    assert len(runs) == len(STREAM) + 2
    for events in runs:
        assert events == EVENTS


def test_with_a_key_a_job_is_followed_through_its_event_stream(api: httpx.Client,
                                                               server_url: str) -> None:
    """Before, a console with a key polled its jobs (an EventSource cannot send the key):
    now it reads the job's events through fetch() with the Authorization header."""
    job = api.post("/v1/jobs", json={"problem": "tsp", "solver": "nearest_neighbor",
                                     "instance": {"coords": [[0, 0], [3, 0], [3, 4], [0, 4],
                                                             [1, 1], [2, 3]]}})
    assert job.status_code == 202, job.text
    job_id = job.json()["id"]
    script = f"""
const base = {json.dumps(server_url)};
const store = new Map();
globalThis.sessionStorage = {{ getItem: (k) => store.get(k) ?? null,
  setItem: (k, v) => store.set(k, v), removeItem: (k) => store.delete(k) }};
globalThis.window = globalThis;
const seen = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (path, options = {{}}) => {{
  const headers = new Headers(options.headers || {{}});
  seen.push([path, headers.get("authorization")]);
  return realFetch(new URL(path, base), options);
}};
const {{ setKey, follow }} = await import({json.dumps((JS_DIR / "api.js").as_uri())});
setKey("a-console-key-0123456789");
const progress = [];
const end = await new Promise((resolve, reject) => {{
  follow({json.dumps(job_id)}, {{ onProgress: (s) => progress.push(s.state), onEnd: resolve,
                                 onError: reject }});
  setTimeout(() => reject(new Error("no end within 30 s")), 30000);
}});
console.log(JSON.stringify({{ seen, progress, end: end.state }}));
process.exit(0);  // (the timeout's timer would keep Node up)
"""
    out = json.loads(_node(script))
    assert out["end"] == "succeeded"
    stream = f"/v1/jobs/{job_id}/events"
    assert [stream, "Bearer a-console-key-0123456789"] in out["seen"]
    assert all(path == stream for path, _ in out["seen"]), out["seen"]  # no polling
