"""The request's body, for every family: JSON or multipart (a 415 otherwise), the form's
parts within their caps, and the options validated strictly as the OpenAPI document says.
Every failure is an ``ApiError`` naming the part at fault.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.errors import (
    ApiError,
    invalid_request,
    validation_problem,
)

#: Form fields an upload may carry besides the file; a generous cap on a hostile form.
_MAX_FORM_FIELDS = 16

ModelT = TypeVar("ModelT", bound=BaseModel)
logger = logging.getLogger("cosolve.api")


class BodyFormat(StrEnum):
    JSON = "json"
    MULTIPART = "multipart"


@dataclass(frozen=True)
class Upload:
    """A multipart request: the instance file and the other form fields (as sent)."""

    filename: str
    data: bytes
    fields: dict[str, list[str]]
    #: Further file parts an endpoint takes besides ``file`` (a compare's ``reference_file``),
    #: by part name: (filename, data).
    extras: dict[str, tuple[str, bytes]] = dataclasses.field(default_factory=dict)


# -- reading the request -----------------------------------------------------------------
#: What routing endpoints accept, for the 415 and missing-file messages.
INSTANCE_BODY = ("an instance object",
                 "the instance (.tsp, .vrp, .vrptw or .json, optionally .gz)")


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _format_of(media_type: str) -> BodyFormat | None:
    if media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    ):
        return BodyFormat.JSON
    if media_type == "multipart/form-data":
        return BodyFormat.MULTIPART
    return None


def _unsupported(media_type: str, send: str, accept: str) -> ApiError:
    return ApiError(415, f"Content-Type {media_type or '(none)'} is not accepted here. Send "
                    f"{send}.", kind="unsupported-media-type", field="content-type",
                    headers={"Accept-Post": accept})


def body_format(request: Request, accepts: tuple[str, str] = INSTANCE_BODY) -> BodyFormat:
    """JSON or multipart, from the Content-Type; anything else is a 415. ``accepts`` names
    the JSON object and the file the endpoint takes."""
    media_type = _media_type(request)
    found = _format_of(media_type)
    if found is None:
        raise _unsupported(media_type, f"application/json ({accepts[0]}) or multipart/form-data "
                           f"(a 'file' part holding {accepts[1]}, and form fields for the "
                           "options)", "application/json, multipart/form-data")
    return found


def require_format(request: Request, expected: BodyFormat, send: str) -> None:
    """A 415 unless the body is ``expected``, for endpoints that take only one of the two;
    ``send`` says what to send instead."""
    media_type = _media_type(request)
    if _format_of(media_type) is not expected:
        raise _unsupported(media_type, send, "application/json" if expected is BodyFormat.JSON
                           else "multipart/form-data")


@asynccontextmanager
async def form_parts(request: Request, max_files: int, max_fields: int,
                     file_field: str = "file", takes: str | None = None
                     ) -> AsyncIterator[FormData]:
    """The parsed multipart form, closed after use. Starlette's own refusals (too many files
    or fields, a malformed body) were bare 400s without a field; they are 422s naming the
    part, like every other invalid request."""
    try:
        form = await request.form(max_files=max_files, max_fields=max_fields)
    except StarletteHTTPException as exc:
        if exc.status_code != 400:
            raise
        detail = str(exc.detail)
        field = file_field if "files" in detail.lower() else "body"
        if field == "files":  # a batch's parts: the same 413 as too many archive members
            raise ApiError(413, f"more than {max_files} 'files' parts; a batch holds at most "
                           f"{max_files} files (COSOLVE_MAX_BATCH_FILES): split it",
                           kind="batch-too-large", title="Too many files", field="files",
                           extra={"limit": max_files}) from None
        parts = takes or f"{max_files} '{file_field}' part{'s' if max_files != 1 else ''}"
        raise invalid_request(f"{detail.rstrip('.')} (this endpoint takes at most {parts} "
                              f"and {max_fields} form fields)", field=field) from None
    try:
        yield form
    finally:
        await form.close()


async def read_upload(request: Request, accepts: tuple[str, str] = INSTANCE_BODY,
                      extra_files: tuple[str, ...] = ()) -> Upload:
    """The file part and form fields of a multipart request (exactly one file, named ``file``,
    plus at most one of each part named in ``extra_files``)."""
    file: UploadFile | None = None
    fields: dict[str, list[str]] = {}
    extras: dict[str, UploadFile] = {}
    takes = "1 'file' part" + "".join(f", 1 {e!r} part" for e in extra_files)
    async with form_parts(request, max_files=1 + len(extra_files),
                          max_fields=_MAX_FORM_FIELDS, takes=takes) as form:
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                if name in extra_files and name not in extras:
                    extras[name] = value
                    continue
                if name == "file" and file is None:
                    file = value
                    continue
                if name == "file" or name in extra_files:  # one too many of a part we take
                    raise invalid_request(f"Too many files: this endpoint takes at most "
                                          f"{takes}", field=name)
                raise invalid_request(
                    f"unexpected file part {name!r}; send {accepts[1]} as the part named "
                    f"'file'" + "".join(f" (and '{e}')" for e in extra_files), field=name)
            else:
                fields.setdefault(name, []).append(value)
        if file is None:
            # a body cut off before its closing boundary lands here too
            hint = (" (it was sent as a plain field, not a file)" if "file" in fields
                    else " (none arrived: the part is missing, or the body was cut short)")
            raise invalid_request(f"a multipart request needs a 'file' part holding "
                                  f"{accepts[1]}{hint}", field="file")
        fields.pop("file", None)
        if not file.filename:
            raise invalid_request("the 'file' part needs a filename; its extension says the "
                                  "format", field="file")
        data = await file.read()
        extra_data = {name: (part.filename or name, await part.read())
                      for name, part in extras.items()}
    return Upload(filename=file.filename, data=data, fields=fields, extras=extra_data)


# -- checks ------------------------------------------------------------------------------
def validate_json(model: type[ModelT], raw: bytes) -> ModelT:
    """A JSON body, strictly: a number written as text ("seed": "3") or an integer written as
    a float (3.0) is refused as the OpenAPI document's types say (an OpenAPI conformance check
    found options read leniently beside instance data that were not); form fields, which are
    all text, go through ``validate_fields``."""
    try:
        return model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False)) from None


def validate_fields(model: type[ModelT], fields: Mapping[str, Any]) -> ModelT:
    try:
        return model.model_validate(dict(fields))
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False)) from None


def single_values(fields: Mapping[str, list[str]]) -> dict[str, str]:
    """Form fields that must appear once."""
    out: dict[str, str] = {}
    for name, values in fields.items():
        if len(values) > 1:
            raise invalid_request(f"form field {name!r} was sent {len(values)} times; send it "
                                  "once", field=name)
        out[name] = values[0]
    return out


