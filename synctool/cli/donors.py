"""`synctool donors`: what synctool learnt about known donors, to apply to their CRM records or dismiss."""

from __future__ import annotations

import typer

from synctool.console import AsJson, Columns, ctx_obj, emit_json, render, sub_app

app = sub_app(
    "News about known donors: a new e-mail, phone or address a returning donor's gift carried, proposed for their "
    "CRM record (donors.updates: review).\n\nExample: synctool donors changes"
)

IDS = typer.Argument(None, help="the ids `synctool donors changes` lists")


@app.command("changes")
def changes(
    ctx: typer.Context,
    status: str = typer.Option("pending", help="pending, applied, dismissed or all"),
    limit: int = typer.Option(200, help="at most this many (1-1000)"),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List the proposed changes, newest first: the constituent, what is new (an e-mail, a phone or an
    address the CRM record lacks), and the gift that brought it. Names are never proposed.

    Example: synctool donors changes --status all
    """
    from synctool.ops.donors import ChangesQuery
    from synctool.ops.donors import changes as op
    from synctool.validation import parse

    data = op(ctx_obj(ctx).db, parse(ChangesQuery, {"status": status, "limit": limit}, where="options"))
    shown = ["id", "constituent_id", "kind", "value", "external_id", "status", "created_at"]
    render(data, as_json, rows=data["items"], columns=shown, chosen=columns, title=f"{data['pending']} pending")


def _decide(ctx: typer.Context, ids: list[int] | None, every: bool, apply: bool) -> None:
    from synctool.ops.donors import DecideBody
    from synctool.ops.donors import apply as apply_op
    from synctool.ops.donors import dismiss as dismiss_op
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    body = parse(DecideBody, {"ids": ids or [], "all": every}, where="arguments")
    result = apply_op(obj.db, obj.rt, body) if apply else dismiss_op(obj.db, body)
    emit_json(result)
    if any(r["result"].startswith("error") for r in result["results"]):
        raise typer.Exit(1)


@app.command("apply")
def apply(
    ctx: typer.Context,
    ids: list[int] = IDS,
    every: bool = typer.Option(False, "--all", help="every pending change"),
) -> None:
    """Add each change to its constituent's CRM record as a non-preferred e-mail, phone or address (the
    preferred one stays so): one CRM request each; the mirror is updated. Exit 1 if the CRM refused one.

    Example: synctool donors apply 3 4
    """
    _decide(ctx, ids, every, apply=True)


@app.command("dismiss")
def dismiss(
    ctx: typer.Context,
    ids: list[int] = IDS,
    every: bool = typer.Option(False, "--all", help="every pending change"),
) -> None:
    """Dismiss changes: nothing is written, and the same news is not proposed again.

    Example: synctool donors dismiss 5
    """
    _decide(ctx, ids, every, apply=False)
