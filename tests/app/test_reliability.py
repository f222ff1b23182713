"""The short form of the reliability suite (the full one, with load, kill -9 and a full disk, is
``benchmarks/reliability.py``): the generated bad-file corpus posted to the five upload
endpoints, and a bounded schema fuzzing of the OpenAPI document. Every refusal is a 4xx
problem naming the field, nothing is a 5xx, and the server is alive after."""

from __future__ import annotations

import warnings

import httpx
import pytest

from benchmarks.reliability_corpus import ENDPOINTS, Bad, corpus
from tests.app.helpers import PROBLEM_JSON

#: What the short form's bombs inflate to: past the strict server's 1 MiB cap, and small
#: enough to post under its 64 KiB body cap.
BOMB_BYTES = 8 << 20


def post(client: httpx.Client, bad: Bad) -> httpx.Response:
    path, part, fields = ENDPOINTS[bad.endpoint]
    return client.post(path, files=[(part, (bad.filename, bad.data))],
                       data={**fields, **bad.extra})


def verdict(bad: Bad, response: httpx.Response) -> str | None:
    """Why the answer is wrong for ``bad`` (None: right)."""
    if response.status_code >= 500:
        return f"{response.status_code}: {response.text[:200]}"
    if not bad.refused:
        return None
    if not 400 <= response.status_code < 500:
        return f"accepted ({response.status_code}), should be refused"
    if not response.headers.get("content-type", "").startswith(PROBLEM_JSON):
        return f"not a problem document: {response.headers.get('content-type')}"
    field = response.json().get("field") or ""
    if bad.field and field != bad.field and not field.startswith(f"{bad.field}."):
        return f"names {field!r}, not {bad.field!r}"
    return None


def test_bad_files_are_refused_by_field_never_a_5xx(strict_api: httpx.Client) -> None:
    wrong = {}
    for bad in corpus(gzip_bomb_bytes=BOMB_BYTES, zip_bomb_bytes=BOMB_BYTES):
        if bad.quick and (why := verdict(bad, post(strict_api, bad))):
            wrong[bad.name] = why
    assert not wrong, wrong
    assert strict_api.get("/healthz").status_code == 200


def test_schema_fuzzing_finds_no_server_error(strict_server_url: str,
                                              strict_api: httpx.Client) -> None:
    """Every GET and DELETE operation of the OpenAPI document, a few generated cases each
    (the POSTs, which solve, are fuzzed by the benchmark with time to spare)."""
    import schemathesis

    schema = schemathesis.openapi.from_dict(strict_api.get("/openapi.json").json())
    failures, calls = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hypothesis warns about .example() outside a test
        for result in schema.get_all_operations():
            operation = result.ok()
            if operation.method.upper() not in ("GET", "DELETE"):
                continue
            strategy = operation.as_strategy()
            for _ in range(3):
                case = strategy.example()
                response = case.call(base_url=strict_server_url, timeout=30)
                calls += 1
                if response.status_code >= 500:
                    failures.append(f"{case.method} {case.formatted_path}: "
                                    f"{response.status_code} {response.text[:200]}")
    assert calls >= 30 and not failures, failures
    assert strict_api.get("/healthz").status_code == 200


@pytest.mark.heavy
def test_the_whole_corpus_at_default_limits(api: httpx.Client) -> None:
    """Bombs as large as the default limits let through: 1 GiB gzip, 256 MiB zip member."""
    wrong = {}
    for bad in corpus(gzip_bomb_bytes=1 << 30, zip_bomb_bytes=256 << 20):
        if why := verdict(bad, post(api, bad)):
            wrong[bad.name] = why
    assert not wrong, wrong
    assert api.get("/healthz").status_code == 200
