"""`synctool donations`: the donation platform's campaigns."""

from __future__ import annotations

import typer

from synctool.platform.edges import AsJson, action, ctx_obj, render, sub_app

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


@app.command("refunded-tickets")
@action(target="order_id", note="ticket_ids")
def refunded_tickets(
    ctx: typer.Context,
    order_id: str = typer.Argument(..., help="the event order (its Givebutter transaction id)"),
    ticket_ids: list[str] = typer.Argument(..., help="the ticket ids the refund took back"),
    as_json: AsJson = False,
) -> None:
    """Say which tickets a refund of part of an event order took back, when nothing Givebutter sent says (the order's
    invitations are held for review, naming the choices): those tickets end, their guests' invitations are removed
    and the order's invitations run on the next drain.

    Example: synctool donations refunded-tickets QiN7blzUhiwXBVBr 81347746A0020
    """
    from synctool.platforms.givebutter.events import decide

    obj = ctx_obj(ctx)
    result = decide(obj.db, order_id, ticket_ids)
    render(
        result,
        as_json,
        people=lambda r: typer.echo(
            f"order {r['order_id']}: ticket(s) {', '.join(r['refunded'])} refunded; its invitations are queued, the next"
            " drain writes them"
        ),
    )
