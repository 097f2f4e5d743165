"""Validating what people and programs send: pydantic models at the edges, errors in synctool's words.

The admin API's bodies and queries, the CLI's options and the config file are each checked by a pydantic
model. ``parse`` turns the first problem into ``InvalidInput`` naming the field (the API answers 422, the
CLI exits 2); ``problem`` words one pydantic error the same way everywhere.
"""

from __future__ import annotations

import logging
import re
import typing
from datetime import datetime
from typing import Annotated, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import ErrorDetails, PydanticUseDefault

from synctool.errors import InvalidInput, PermanentError

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _email(value: str) -> str:
    value = value.strip()
    if not EMAIL.match(value):
        raise ValueError(f"not an e-mail address: {value!r}")
    return value


#: an e-mail address, spaces trimmed
Email = Annotated[str, AfterValidator(_email)]


def _text(value: object) -> object:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


#: an id or a code that platforms send as a number or a string (``campaign_id: 118722``)
Text = Annotated[str, BeforeValidator(_text)]


def _moment(value: str) -> str:
    try:
        datetime.fromisoformat(value.strip().replace("Z", "+00:00"))  # as timeutil.parse_iso reads it
    except ValueError:
        raise ValueError(f"not an ISO 8601 time: {value!r}") from None
    return value


#: a time as platforms send it (ISO 8601: ``2024-02-03T20:49:24+00:00``); ``Lenient[Optional[Moment]]`` makes
#: one that is not a time none, so a gift is dated by the next time known rather than by a word
Moment = Annotated[str, AfterValidator(_moment)]


def _crm_id(value: object) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f'not a CRM id: {value!r} (a whole number, as a number or a string: 6 or "6")')


#: a CRM record's id, which the specification's bodies carry as a string (``"fund_id": "6"``) and people as a
#: number: either, holding a whole number; anything else is refused by name
CrmId = Annotated[int, BeforeValidator(_crm_id)]


class Payload(BaseModel):
    """A platform's payload, loosely: the fields synctool reads are typed, everything else is ignored. A field that
    decides the money, the person or the idempotency key is typed plainly and fails by name; every other field is
    ``Lenient[...]`` (see ``strict_fields``)."""

    model_config = ConfigDict(extra="ignore")


T = TypeVar("T")
logger = logging.getLogger("synctool.payload")


def _lenient(value: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> object:
    try:
        return handler(value)
    except ValidationError as exc:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return handler(str(value))  # a number where text is expected: the same meaning
            except ValidationError:
                pass
        # the field's name and what did not fit, never its value (it may be personal data)
        logger.info("payload field %s ignored: %s", info.field_name, problem(exc.errors()[0]).split(", got ")[0])
        raise PydanticUseDefault() from None


#: the marker ``strict_fields`` looks for
LENIENT = WrapValidator(_lenient)

#: a payload field synctool reads for a side matter (a note, a tag, consent, coding): a value that does not fit
#: (null where a boolean is expected, ``[]`` where an object is, a word synctool does not know) takes the field's
#: default and the gift goes on; a number where text is expected is read as its text. Booleans take pydantic's
#: lax forms (``"true"``, ``1``, ``"yes"``). Give it a default: ``Lenient[bool] = False``.
Lenient = Annotated[T, LENIENT]


def is_lenient(model: type[BaseModel], name: str) -> bool:
    return any(m is LENIENT for m in model.model_fields[name].metadata)


def _models_in(annotation: object) -> list[tuple[type[BaseModel], str]]:
    """The payload models a field's type holds, each with the path suffix it adds (``[]`` for a list's items)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, "")]
    origin = typing.get_origin(annotation)
    found = []
    for arg in typing.get_args(annotation):
        for model, suffix in _models_in(arg):
            found.append((model, ("[]" if origin in (list, tuple, set) else "") + suffix))
    return found


def strict_fields(model: type[BaseModel], prefix: str = "") -> set[str]:
    """The dotted paths of the fields of ``model`` (and of the models it holds) whose bad value fails the whole
    payload: each field not marked ``Lenient``, below no ``Lenient`` field. ``tests/test_strict_fields.py`` lists
    them per platform, so making one lenient (or a new one strict) is a visible decision."""
    found: set[str] = set()
    for name, field in model.model_fields.items():
        if is_lenient(model, name):
            continue
        path = f"{prefix}{name}"
        found.add(path)
        for inner, suffix in _models_in(field.annotation):
            found |= strict_fields(inner, f"{path}{suffix}.")
    return found


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


def problem(error: ErrorDetails) -> str:
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


def field_of(error: ErrorDetails) -> str:
    return ".".join(str(p) for p in error["loc"])


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: object, *, where: str = "request body", strict: bool = False) -> M:
    """``data`` as ``model``, or InvalidInput naming the first field that does not fit. ``strict`` for JSON
    bodies (``"yes"`` is not a boolean there); options and query strings arrive as text and are converted."""
    try:
        return model.model_validate({} if data is None else data, strict=strict)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = field_of(error)
        raise InvalidInput(f"{field}: {problem(error)}" if field else problem(error), f"in the {where}") from None


def payload(model: type[M], data: object, what: str) -> M:
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
