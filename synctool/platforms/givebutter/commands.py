"""`synctool donations`: the donation platform's campaigns."""

from __future__ import annotations

import typer

from synctool.console import AsJson, ctx_obj, render, sub_app

app = sub_app("The donation platform (Givebutter): cached campaigns.")


@app.command()
def campaigns(
    ctx: typer.Context,
    refresh: bool = typer.Option(False, "--refresh", help="fetch them from Givebutter first"),
    as_json: AsJson = False,
) -> None:
    """List the cached donation campaigns (their type selects the type default).

    Example: synctool donations campaigns --refresh
    """
    from synctool.platforms.givebutter.ops import campaigns as op

    obj = ctx_obj(ctx)
    rows = op(obj.db, obj.rt, refresh=refresh)
    render(rows, as_json, columns=["id", "code", "title", "type", "status"])
