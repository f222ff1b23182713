"""The OpenAPI description of the server-sent event streams: what each event's JSON is.

FastAPI documents a ``StreamingResponse`` of ``text/event-stream`` as a string, so a client
generator (or a reader of /docs) learnt nothing of the events. Each stream gets an
``itemSchema`` (OpenAPI 3.2's keyword for the items of a sequential media type, the form
FastAPI itself writes for its own SSE routes): one object per event, its ``event`` name,
``id``, and ``data`` as JSON with a ``contentSchema``. The string ``schema`` stays for tools
that read only OpenAPI 3.1.
"""

from __future__ import annotations

from typing import Any

SSE = "text/event-stream"


def _json_data(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "string", "contentMediaType": "application/json", "contentSchema": schema}


def _event(name: str, data: dict[str, Any], description: str,
           with_id: bool = True) -> dict[str, Any]:
    properties: dict[str, Any] = {"event": {"const": name}, "data": _json_data(data)}
    if with_id:
        properties["id"] = {"type": "string", "description": "The job's last update time "
                            "(seconds since the epoch): changes with every event."}
    return {"type": "object", "title": f"{name} event", "description": description,
            "properties": properties, "required": ["event", "data"]}


def job_event_schema() -> dict[str, Any]:
    """The events of ``GET /v1/jobs/{job_id}/events``."""
    status = {"$ref": "#/components/schemas/JobStatus"}
    expired = {"type": "object", "properties": {"state": {"const": "expired"}},
               "required": ["state"]}
    stopping = {"type": "object", "properties": {"message": {"type": "string"}},
                "required": ["message"]}
    return {"oneOf": [
        _event("progress", status, "The job changed (state, elapsed time, best cost so far); "
               "its whole status."),
        _event("end", {"oneOf": [status, expired]}, "The job is final (its status), or expired "
               "meanwhile ({\"state\": \"expired\"}, no id). The stream ends."),
        _event("shutdown", stopping, "The server is stopping before the job ended; the job "
               "resumes when it restarts: follow it again then. The stream ends.",
               with_id=False),
    ], "description": "One server-sent event; comment lines (`: keep-alive`) carry none."}


#: The generic event (OpenAPI 3.2's shape) for a stream with no description of its own.
GENERIC_EVENT = {"type": "object", "properties": {
    "data": {"type": "string"}, "event": {"type": "string"}, "id": {"type": "string"},
    "retry": {"type": "integer", "minimum": 0}}}

#: Event descriptions by path.
STREAMS = {"/v1/jobs/{job_id}/events": job_event_schema}


def describe_event_streams(schema: dict[str, Any]) -> None:
    """Give every ``text/event-stream`` response of the document its ``itemSchema``."""
    for path, operations in schema.get("paths", {}).items():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for response in operation.get("responses", {}).values():
                content = response.get("content", {}).get(SSE)
                if content is None or "itemSchema" in content:
                    continue
                describe = STREAMS.get(path)
                content["itemSchema"] = describe() if describe else dict(GENERIC_EVENT)
                content.setdefault("schema", {"type": "string"})
