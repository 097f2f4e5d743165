"""A page form's fields, read as the operations' models read them, and what a refused form says: plain words,
beside the field they are about (never a model's ``emails.1: ...``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from synctool import validation
from synctool.errors import InvalidInput, SynctoolError
from synctool.web.render import Problem
from synctool.web.request import StaffRequest

M = TypeVar("M", bound=BaseModel)


class FormProblem(InvalidInput):
    """A form's value refused, in the words of the page: ``field`` is the form field it is about (None: the form
    as a whole), so the page shows it there."""

    def __init__(self, text: str, field: str | None = None):
        super().__init__(text)
        self.field = field


#: a form's fields that are not typed, so not kept for the next page
NOT_KEPT = ("csrf", "back")
#: the fields (a setting's under ``f_``) that may carry a secret, a chat webhook URL among them: never kept. By
#: name, not by a word in it: the type-default form's ``key`` is a type to keep
SECRET_FIELDS = frozenset({"url", "token", "secret", "password", "api_key"})


def problem(error: SynctoolError | None, form_path: str, form: dict[str, str]) -> Problem:
    """What the next page says about a refused form: the error in words, the field it is about (when the form
    has it) and what was typed."""
    detail = getattr(error, "detail", "")
    text = str(error) + ("" if isinstance(error, FormProblem) or not detail else f" ({detail})")
    name = getattr(error, "field", None)
    # a webhook URL, token or password typed into a refused form is not written into the session to be shown back
    kept = {k: v for k, v in form.items() if k not in NOT_KEPT and k.lower().removeprefix("f_") not in SECRET_FIELDS}
    return Problem(text=f"Not done: {text}", form=form_path, field=name if name in form else None,
                   target=form.get("target"), kept=kept)  # fmt: skip


def typed(value: object) -> str:
    """What a person typed, quoted (or "that" when it was not text)."""
    return f"\u201c{value}\u201d" if isinstance(value, (str, int, float)) and not isinstance(value, bool) else "that"


def field(request: StaffRequest, name: str) -> str | None:
    """A form field's text, trimmed (None: left blank)."""
    value = (request.form.get(name) or "").strip()
    return value or None


def _worded(error: ErrorDetails, label: str) -> str:
    """One pydantic error in a person's words, about the field a person knows as ``label``."""
    kind, got, message = error["type"], error.get("input"), str(error.get("msg", "")).removeprefix("Value error, ")
    given, what = typed(got), label[:1].upper() + label[1:]
    if kind == "missing" or (kind == "string_too_short" and not got):
        return f"{what} is needed."
    if message.startswith("not an e-mail address"):
        return f"{given} is not an e-mail address."
    if message.startswith("not a CRM id"):
        return f"{what}: {given} is not a CRM id (a whole number): choose it from the list."
    if kind == "literal_error":
        allowed = str(error.get("ctx", {}).get("expected", "")).replace("'", "")
        return f"{what}: {given} is not one of {allowed}."
    if kind in ("int_parsing", "int_type", "int_from_float", "float_parsing", "float_type"):
        return f"{what}: {given} is not a number."
    if kind in ("bool_parsing", "bool_type"):
        return f"{what}: choose on or off."
    if kind == "string_too_long":
        return f"{what} is too long (at most {error.get('ctx', {}).get('max_length')} characters)."
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return f"{what}: {given} {_bound_words(error)}."
    return f"{what}: {message}."


def _bound_words(error: ErrorDetails) -> str:
    return validation.problem(error).split(", got ")[0]


def read(model: type[M], data: Mapping[str, object], labels: dict[str, str] | None = None, prefix: str = "") -> M:
    """``data`` as ``model`` (as ``validation.parse`` reads a form), or a ``FormProblem`` about the first field
    that does not fit, in words; ``labels`` name the fields as the form does, ``prefix`` is the form fields'."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else None
        label = (labels or {}).get(name or "") or (name or "the form").replace("_", " ")
        raise FormProblem(_worded(error, label), prefix + name if name else None) from None
