"""Probes, the solver catalogue and the OpenAPI document."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.app.helpers import assert_problem


def test_healthz(api: httpx.Client) -> None:
    response = api.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_solves_and_lists_solvers(api: httpx.Client) -> None:
    body = api.get("/readyz").json()
    assert body["status"] == "ready"
    assert body["check"]["solver"] == "nearest_neighbor"
    assert body["check"]["feasible"] is True
    # The bundled instance is a unit square plus its centre: every tour is at least 4 long.
    assert body["check"]["cost"] >= 4.0
    names = {s["name"]: s for s in body["solvers"]}
    assert {"ortools", "pyvrp", "nearest_neighbor"} <= set(names)
    assert names["nearest_neighbor"]["available"] is True
    assert body["device"] == "cpu"  # COSOLVE_DEVICE's default


def test_docs_and_openapi(api: httpx.Client) -> None:
    docs = api.get("/docs")
    assert docs.status_code == 200
    assert "swagger" in docs.text.lower()
    # the pages' scripts come from cosolve, not a CDN (a browser without internet saw a
    # blank page), and are Swagger UI 5, which reads OpenAPI 3.1
    assert "cdn." not in docs.text and "/docs-static/swagger-ui-bundle.js" in docs.text
    script = api.get("/docs-static/swagger-ui-bundle.js")
    assert script.status_code == 200 and 'PACKAGE_VERSION:"5.' in script.text
    assert api.get("/docs-static/swagger-ui.css").status_code == 200
    redoc = api.get("/redoc")
    assert redoc.status_code == 200 and "cdn." not in redoc.text
    assert "googleapis" not in redoc.text
    assert api.get("/docs-static/redoc.standalone.js").status_code == 200
    assert api.get("/docs/oauth2-redirect").status_code == 200
    spec = api.get("/openapi.json").json()
    assert spec["info"]["title"] == "cosolve"
    assert spec["info"]["version"]
    solve = spec["paths"]["/v1/routing/tsp/solve"]["post"]
    assert solve["operationId"] == "routing-solve_tsp"
    content = solve["requestBody"]["content"]
    assert set(content) == {"application/json", "multipart/form-data"}
    schemas = spec["components"]["schemas"]
    for ref in (content["application/json"]["schema"]["$ref"],
                content["multipart/form-data"]["schema"]["$ref"]):
        assert ref.rsplit("/", 1)[-1] in schemas
    assert "application/problem+json" in solve["responses"]["422"]["content"]
    assert spec["paths"]["/v1/solvers"]["get"]["operationId"] == "solvers-list_solvers"
    assert "/v1/routing/cvrp/compare" in spec["paths"]


def test_openapi_says_what_the_server_does(api: httpx.Client) -> None:
    """An OpenAPI conformance check found bounds under pydantic's own names (gt, ge), which
    validators and client generators ignore; FastAPI's HTTPValidationError on 422s that are
    problem details; statuses the server answers but did not list; and no Location or
    Retry-After headers."""
    spec = api.get("/openapi.json").json()
    text = json.dumps(spec)
    assert not re.search(r'"(gt|ge|lt|le)": ', text)
    assert "HTTPValidationError" not in text
    limit = spec["components"]["schemas"]["TSPSolveRequest"]["properties"]["time_limit"]
    assert {"type": "number", "exclusiveMinimum": 0} in limit["anyOf"]
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert list(answer["content"]) == ["application/problem+json"], (
                        method, path, status)
    paths = spec["paths"]
    for path, method, status in (("/v1/jobs", "post", "202"), ("/v1/batches", "post", "202"),
                                 ("/v1/scheduling/sessions", "post", "201")):
        assert "Location" in paths[path][method]["responses"][status]["headers"]
    assert "Retry-After" in paths["/v1/jobs"]["post"]["responses"]["429"]["headers"]
    assert "404" in paths["/v1/batches"]["post"]["responses"]
    for path in ("/v1/scheduling/sessions", "/v1/scheduling/sessions/{session_id}/events"):
        assert "413" in paths[path]["post"]["responses"]
    # OpenAPI contract: a full disk's 507, a damaged store's 500, the event stream
    # as the only answer of /events, a typed job solution, no 422 where only a path id is read
    for path in ("/v1/jobs", "/v1/batches"):
        assert "507" in paths[path]["post"]["responses"]
    solution = paths["/v1/jobs/{job_id}/solution"]["get"]["responses"]
    assert "500" in solution
    assert solution["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/JobSolution"}
    assert "JobSolution" in spec["components"]["schemas"]
    events = paths["/v1/jobs/{job_id}/events"]["get"]["responses"]["200"]["content"]
    assert list(events) == ["text/event-stream"]
    assert "422" not in paths["/v1/jobs/{job_id}"]["get"]["responses"]
    assert "422" in paths["/v1/jobs/{job_id}/solution"]["get"]["responses"]  # ?format=


def test_list_solvers(api: httpx.Client) -> None:
    solvers = {s["name"]: s for s in api.get("/v1/solvers").json()["solvers"]}
    assert {"ortools", "pyvrp", "nearest_neighbor"} <= set(solvers)
    ortools = solvers["ortools"]
    assert set(ortools) >= {"name", "family", "problems", "kind", "description", "max_nodes",
                            "needs_weights", "available", "unavailable_reason"}
    assert ortools["family"] == "routing"
    assert "tsp" in ortools["problems"]
    assert ortools["max_nodes"]["tsp"] > 0
    assert ortools["available"] is True and ortools["unavailable_reason"] is None


def test_list_solvers_by_problem(api: httpx.Client) -> None:
    listed = api.get("/v1/solvers", params={"problem": "tsp"}).json()["solvers"]
    assert listed and all("tsp" in s["problems"] for s in listed)
    assert_problem(api.get("/v1/solvers", params={"problem": "knapsack"}), 422, field="problem")


def test_every_request_example_in_the_document_succeeds(api: httpx.Client) -> None:
    """Regression: the document had no request examples, so /docs' "Try it out" sent schema
    samples (solver "string", max_solutions for ortools) and every POST but one failed. Each
    example is posted as it is now, and must succeed."""
    spec = api.get("/openapi.json").json()
    components = spec["components"]["schemas"]
    session = api.post("/v1/scheduling/sessions", json={"pool": "6x4", "policy": "heft"})
    assert session.status_code == 201, session.text
    requests: list[tuple[str, str, dict[str, object]]] = []
    for path, operations in spec["paths"].items():
        body = operations.get("post", {}).get("requestBody", {})
        schema = body.get("content", {}).get("application/json", {}).get("schema", {})
        refs = [schema.get("$ref")] + [s.get("$ref") for s in schema.get("oneOf", [])]
        for ref in filter(None, refs):
            for example in components[ref.rsplit("/", 1)[-1]].get("examples", []):
                requests.append((path, path.replace("{session_id}", session.json()["id"]),
                                 example))
    assert len(requests) >= 14

    def post(path: str, url: str, example: dict[str, object]) -> None:
        response = api.post(url, json=example)
        assert response.status_code in (200, 201, 202), (path, response.text)

    # the solves run side by side (most wait for their time limits); a session's events in
    # their order, as a client would send them
    in_order = [r for r in requests if "{session_id}" in r[0]]
    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(post, *r) for r in requests if r not in in_order]:
            done.result()
    for r in in_order:
        post(*r)
