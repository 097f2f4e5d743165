"""Validating what people and programs send: pydantic models at the edges, errors in synctool's words.

The admin API's bodies and queries, the CLI's options and the config file are each checked by a pydantic
model. ``parse`` turns the first problem into ``InvalidInput`` naming the field (the API answers 422, the
CLI exits 2); ``problem`` words one pydantic error the same way everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
)

from synctool.errors import InvalidInput, PermanentError

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _email(value: str) -> str:
    value = value.strip()
    if not EMAIL.match(value):
        raise ValueError(f"not an e-mail address: {value!r}")
    return value


#: an e-mail address, spaces trimmed
Email = Annotated[str, AfterValidator(_email)]


def _text(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


#: an id or a code that platforms send as a number or a string (``campaign_id: 118722``)
Text = Annotated[str, BeforeValidator(_text)]


def _crm_id(value: Any) -> Any:
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f'not a CRM id: {value!r} (a whole number, as a number or a string: 6 or "6")')


#: a CRM record's id, which the specification's bodies carry as a string (``"fund_id": "6"``) and people as a
#: number: either, holding a whole number; anything else is refused by name
CrmId = Annotated[int, BeforeValidator(_crm_id)]


class Payload(BaseModel):
    """A platform's payload, loosely: the fields synctool reads are typed, everything else is ignored."""

    model_config = ConfigDict(extra="ignore")


class Body(BaseModel):
    """A request body or a command's options: unknown fields are refused, so a typo is an error."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class Query(BaseModel):
    """A list query: unknown parameters are ignored, as web APIs do."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


_PROBLEMS = {
    "int_parsing": "expected an integer",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "bool_parsing": "expected true or false",
    "bool_type": "expected true or false",
    "string_type": "expected a string",
    "list_type": "expected a list",
    "model_type": "must be a mapping of keys to values",
    "dict_type": "must be a mapping of keys to values",
    "model_attributes_type": "must be a mapping of keys to values",
}


def problem(error: Mapping[str, Any]) -> str:
    """One line for a pydantic error, in the words synctool uses everywhere."""
    kind = error["type"]
    got = error.get("input")
    if kind == "literal_error":
        allowed = error.get("ctx", {}).get("expected", "").replace("'", "").replace(" or ", ", ")
        return f"must be one of {allowed}, got {got!r}"
    if kind == "extra_forbidden":
        return "unknown key"
    bound = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("more than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }.get(kind)
    if bound:
        return f"must be {bound[0]} {error['ctx'][bound[1]]}, got {got!r}"
    if kind == "missing":
        return "is required"
    if kind in _PROBLEMS:
        return f"{_PROBLEMS[kind]}, got {got!r}"
    return error["msg"].removeprefix("Value error, ")


def field_of(error: Mapping[str, Any]) -> str:
    return ".".join(str(p) for p in error["loc"])


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: Any, *, where: str = "request body", strict: bool = False) -> M:
    """``data`` as ``model``, or InvalidInput naming the first field that does not fit. ``strict`` for JSON
    bodies (``"yes"`` is not a boolean there); options and query strings arrive as text and are converted."""
    try:
        return model.model_validate({} if data is None else data, strict=strict)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = field_of(error)
        raise InvalidInput(f"{field}: {problem(error)}" if field else problem(error), f"in the {where}") from None


def payload(model: type[M], data: Any, what: str) -> M:
    """A stored delivery's ``data`` as ``model``, or PermanentError naming the field that does not fit (the
    job fails with it; a retry will not help until the payload is fixed)."""
    try:
        return model.model_validate({} if data is None else data)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise PermanentError(f"{what} does not fit: {field_of(error) or '(body)'}: {problem(error)}") from None


class ForceQuery(Query):
    """``?force=true``: ignore the local "already synced" mark (the CRM is still searched first)."""

    force: bool = False
