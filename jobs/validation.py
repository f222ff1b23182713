"""Request validation that the HTTP API and the CLI share: the number types of instance data,
and pydantic's errors as the fields at fault and one line of detail.

The CLI's scheduling session validates its input lines with the same models as the HTTP
session, so a refused line names the same field in the same words; both read the errors
through ``field_problems``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ValidationError
from pydantic_core import PydanticCustomError

ModelT = TypeVar("ModelT", bound=BaseModel)

#: How many validation problems are spelled out in a detail line and listed in full.
DETAIL_ERRORS = 3
LISTED_ERRORS = 20


def reject_bool_number(value: Any) -> Any:
    """JSON true/false would otherwise pass as 1.0/0.0 ("time_limit": true ran for 1 s)."""
    if isinstance(value, bool):
        raise PydanticCustomError("float_type", "Input should be a number, not true or false")
    return value


def reject_text_number(value: Any) -> Any:
    """Instance data is numbers: "1" in a JSON body would be read as 1 where the same
    instance as a .json upload or to the CLI is refused."""
    if type(value) is float or type(value) is int:  # the common case: once per number of data
        return value
    if isinstance(value, str):
        raise PydanticCustomError("float_type", "Input should be a number, not text")
    return reject_bool_number(value)


#: A number of an instance's or a network's data: never text, true or false.
DataNumber = Annotated[float, BeforeValidator(reject_text_number)]


# -- pydantic's errors as fields -----------------------------------------------------------
_LOCATION_ROOTS = {"body", "query", "path", "header", "cookie"}

#: Tags of the request schemas' discriminated unions (e.g. a session event's ``type``):
#: pydantic puts the matched tag into an error's ``loc``, which is not a field of the body.
UNION_TAGS: set[str] = set()

#: Characters no field name has but pydantic's labels of union branches do.
_UNION_BRANCH = re.compile(r"[\[\]()<>, ]")


def field_from_loc(loc: Iterable[int | str], prefix: str | None = None) -> str | None:
    """A pydantic ``loc`` as a readable path: ('body', 'instance', 'demands', 3) becomes
    ``instance.demands[3]``. FastAPI's location root (body, query, ...) and the tag of a
    discriminated union (``events[0].task_finished.time`` is ``events[0].time``) are dropped."""
    parts = list(loc)
    if parts and parts[0] in _LOCATION_ROOTS:
        parts = parts[1:]
    text = prefix or ""
    for i, part in enumerate(parts):
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in UNION_TAGS and i > 0 and isinstance(parts[i - 1], int):
            continue
        elif _UNION_BRANCH.search(part):
            # a plain union's branch label (``list[function-after[...]]``, with a function's
            # address in it): not a field, and different on every run
            continue
        else:
            text += f".{part}" if text else str(part)
    return text or None


def _error_field(error: Mapping[str, Any], prefix: str | None) -> str:
    field = field_from_loc(error.get("loc", ()), prefix) or prefix or "body"
    if error.get("type") in ("union_tag_invalid", "union_tag_not_found"):
        # the item's tag is what is wrong (or missing): name it
        field += "." + str(error.get("ctx", {}).get("discriminator", "type")).strip("'")
    return field


def _message(error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return "unknown field; the accepted fields are listed in the schema at /docs"
    return str(error.get("msg", "invalid value"))


def field_problems(errors: Sequence[Mapping[str, Any]],
                   prefix: str | None = None) -> tuple[list[tuple[str, str]], str]:
    """The (field, message) of each pydantic error and a one-line detail.

    A body with a wrong type in every one of 100K coordinates would otherwise answer with
    100K entries, so only the first ``LISTED_ERRORS`` are listed and the rest counted.
    """
    problems = [(_error_field(e, prefix), _message(e)) for e in errors[:LISTED_ERRORS]] \
        or [(prefix or "body", "invalid request")]
    shown = "; ".join(f"{field}: {message}" for field, message in problems[:DETAIL_ERRORS])
    more = len(errors) - min(len(errors), DETAIL_ERRORS)
    return problems, shown + (f" (and {more} more)" if more > 0 else "")


class InvalidFieldsError(ValueError):
    """A document that its model refused: ``field`` is the first field at fault, ``detail``
    the line that names them."""

    def __init__(self, problems: list[tuple[str, str]], detail: str) -> None:
        super().__init__(detail)
        self.problems = problems
        self.field = problems[0][0]
        self.detail = detail


def parse_strict(model: type[ModelT], raw: bytes) -> ModelT:
    """A JSON document, strictly: a number written as text ("seed": "3") or an integer
    written as a float (3.0) is refused as the OpenAPI document's types say."""
    try:
        return model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        raise InvalidFieldsError(*field_problems(exc.errors(include_url=False))) from None
