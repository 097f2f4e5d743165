"""The options more than one command takes, each declared once with its help (``--json`` and ``--columns``
are ``output``'s), and ``options_as``, which reads a command's options as the model its operation takes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer

if TYPE_CHECKING:
    from pydantic import BaseModel


def crm_id(what: str, *, required: bool = False) -> Any:  # (typer's OptionInfo, which a parameter takes as its default)
    """The option of the CRM id of a ``what`` that codes a gift (``fund_id: int = crm_id("fund")``: ``--fund-id``,
    "CRM fund id"): optional unless ``required``."""
    return typer.Option(... if required else None, help=f"CRM {what} id")


#: a listing's filters and size (typer reads the annotations at run time, hence ``Optional``)
Source = Annotated[Optional[str], typer.Option(help="a source: the role of a platform (synctool platforms lists them)")]  # noqa: UP045
Limit = Annotated[int, typer.Option(help="at most this many (1-1000)")]

Model = TypeVar("Model", bound="BaseModel")


def options_as(ctx: typer.Context, model: type[Model]) -> Model:
    """The command's options that are ``model``'s fields, as ``model`` (the admin API's query or body for the
    same operation), or InvalidInput naming the option that does not fit. An option not given is left to
    the model's default."""
    from synctool.validation import parse

    given = {name: value for name, value in ctx.params.items() if name in model.model_fields and value is not None}
    return parse(model, given, where="options")
