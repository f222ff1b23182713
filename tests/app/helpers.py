"""Checks shared by the API tests."""

from __future__ import annotations

import math
from typing import Any

import httpx

PROBLEM_JSON = "application/problem+json"


def assert_problem(
    response: httpx.Response, status: int, field: str | None = None
) -> dict[str, Any]:
    """The response is an RFC 9457 problem with ``status`` (and ``field`` when given)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM_JSON), response.headers
    body = response.json()
    for key in ("type", "title", "status", "detail", "instance"):
        assert key in body, body
    assert body["status"] == status
    assert body["instance"] == response.request.url.path
    assert body["title"] and body["detail"]
    # every key is in the documented error body (before: extras were sent undocumented)
    from app.errors import ProblemDetails

    assert set(body) <= set(ProblemDetails.model_fields), set(body) - set(
        ProblemDetails.model_fields)
    if field is not None:
        assert body.get("field") == field, body
    return body


def tour_length(coords: list[list[float]], tour: list[int]) -> float:
    """Closed tour length with plain Euclidean distances, computed here, not by the server."""
    return sum(
        math.dist(coords[a], coords[b]) for a, b in zip(tour, tour[1:] + tour[:1], strict=True)
    )


def nint_distance(a: Any, b: Any) -> int:
    """TSPLIB EUC_2D: the Euclidean distance rounded half up."""
    return math.floor(math.dist(a, b) + 0.5)
