"""`synctool donations`: the donation platform's campaigns."""

from __future__ import annotations

import typer

from synctool.cli.common import ctx_obj, emit_json, sub_app, table

app = sub_app("The donation platform (Givebutter): cached campaigns.")


@app.command()
def campaigns(
    ctx: typer.Context,
    refresh: bool = typer.Option(False, "--refresh", help="fetch them from Givebutter first"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """List the cached donation campaigns (their type selects the type default).

    Example: synctool donations campaigns --refresh
    """
    from synctool.platforms.givebutter.ops import campaigns as op

    obj = ctx_obj(ctx)
    rows = op(obj.db, obj.rt, refresh=refresh)
    emit_json(rows) if as_json else table(rows, ["id", "code", "title", "type", "status"])
