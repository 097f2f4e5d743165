"""`synctool deliveries`: the stored webhooks, exactly as received."""

from __future__ import annotations

import typer

from synctool.cli.common import (
    columns_option,
    ctx_obj,
    emit_json,
    key_values,
    sub_app,
    table,
)

app = sub_app("Stored webhook deliveries (headers and raw bodies), newest first.")


@app.command("list")
def list_(
    ctx: typer.Context,
    source: str = typer.Option(None, help="donations, pos, mailing, payments or portal"),
    since: str = typer.Option(None, help="a duration ago (24h, 7d) or an ISO date"),
    limit: int = typer.Option(50, help="at most this many (1-1000)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
    columns: str = columns_option(),
) -> None:
    """List deliveries with their job and its status.

    Example: synctool deliveries list --source pos --since 24h
    """
    from synctool.ops.deliveries import list_deliveries

    rows = list_deliveries(ctx_obj(ctx).db, source=source, since=since, limit=limit)
    if as_json:
        emit_json(rows)
    else:
        people = [
            {**r, "when": (r.get("received_at") or "")[5:16].replace("T", " "), "job_id": (r.get("job_id") or "")[:8] or None}
            for r in rows
        ]
        table(people, ["id", "when", "source", "event_type", "job_status", "job_id", "event_id", "verified"], chosen=columns)


@app.command("show")
def show(
    ctx: typer.Context,
    delivery_id: int = typer.Argument(..., help="the delivery id"),
    as_json: bool = typer.Option(False, "--json", help="print JSON"),
) -> None:
    """Show one delivery: the headers kept, the raw body and its job.

    Example: synctool deliveries show 42
    """
    from synctool.ops.deliveries import show_delivery

    data = show_delivery(ctx_obj(ctx).db, delivery_id)
    if as_json:
        emit_json(data)
        return
    body = data.pop("body")
    key_values(data)
    typer.echo("body:")
    typer.echo(body)
