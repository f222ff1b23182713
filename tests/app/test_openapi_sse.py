"""The OpenAPI document describes the job event stream's JSON, not just "a string"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator, ValidationError

from app.main import create_app
from app.openapi_sse import SSE
from app.routers.jobs import job_status
from jobs.store import JobStore


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app().openapi()


def _events_content(document: dict[str, Any]) -> dict[str, Any]:
    return document["paths"]["/v1/jobs/{job_id}/events"]["get"]["responses"]["200"]["content"][SSE]


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of ``schema`` that resolves the document's component references."""
    return Draft202012Validator({**schema, "components": document["components"]})


def test_every_event_stream_has_an_item_schema(document: dict[str, Any]) -> None:
    streams = [(path, response["content"][SSE])
               for path, operations in document["paths"].items()
               for operation in operations.values()
               for response in operation.get("responses", {}).values()
               if SSE in response.get("content", {})]
    assert streams, "no text/event-stream response in the document"
    for path, content in streams:
        assert "itemSchema" in content, path


def test_job_events_name_their_json(document: dict[str, Any]) -> None:
    item = _events_content(document)["itemSchema"]
    events = {branch["properties"]["event"]["const"]: branch for branch in item["oneOf"]}
    assert set(events) == {"progress", "end", "shutdown"}
    data = events["progress"]["properties"]["data"]
    assert data["contentMediaType"] == "application/json"
    assert data["contentSchema"] == {"$ref": "#/components/schemas/JobStatus"}
    assert "JobStatus" in document["components"]["schemas"]


def test_a_real_events_data_validates_against_the_documented_schema(
        document: dict[str, Any], tmp_path) -> None:
    """The data of a progress event, made as the stream makes it (``job_status`` of a stored
    job), is valid under the documented content schema; a wrong one is not."""
    store = JobStore(tmp_path)
    job = store.create(problem="tsp", solver="ortools", time_limit=5, seed=0,
                       filename="a.json", data=b"{}", nodes=4)
    payload = json.loads(job_status(job).model_dump_json())
    item = _events_content(document)["itemSchema"]
    progress = next(b for b in item["oneOf"] if b["properties"]["event"]["const"] == "progress")
    validator = _validator(document, progress["properties"]["data"]["contentSchema"])
    validator.validate(payload)
    with pytest.raises(ValidationError):
        validator.validate({**payload, "state": 5})
    end = next(b for b in item["oneOf"] if b["properties"]["event"]["const"] == "end")
    _validator(document, end["properties"]["data"]["contentSchema"]).validate(
        {"state": "expired"})
