"""What a platform package's edges need: its ``commands.py`` (Typer, through ``synctool.console``) and its
``fake.py`` (Starlette, through ``synctool.platforms.fake``). Kept apart from ``synctool.platform`` so the core,
which a platform's other modules stand on, imports neither Typer nor Starlette; only the CLI imports a platform's
commands, and only the fake world its fake."""

from __future__ import annotations

from synctool.console import (
    AsJson,
    Columns,
    action,
    crm_id,
    ctx_obj,
    emit_json,
    listing_group,
    options_as,
    render,
    render_outcome,
    sub_app,
)
from synctool.platforms.fake import FakeApi, Operation, Refusal, found, json_body, shows

__all__ = [
    "AsJson",
    "Columns",
    "FakeApi",
    "Operation",
    "Refusal",
    "action",
    "crm_id",
    "ctx_obj",
    "emit_json",
    "found",
    "json_body",
    "listing_group",
    "options_as",
    "render",
    "render_outcome",
    "shows",
    "sub_app",
]
