"""`synctool deliveries`: the stored webhooks, exactly as received."""

from __future__ import annotations

import typer

from synctool.console import AsJson, Columns, Limit, Source, ctx_obj, key_values, render, sub_app

app = sub_app("Stored webhook deliveries, with their raw bodies, newest first.")


@app.command("list")
def list_(
    ctx: typer.Context,
    source: Source = None,
    since: str = typer.Option(None, help="a duration ago (24h, 7d) or an ISO date"),
    limit: Limit = 50,
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List deliveries with their job and its status.

    Example: synctool deliveries list --source pos --since 24h
    """
    from synctool.ops.deliveries import list_deliveries

    rows = list_deliveries(ctx_obj(ctx).db, source=source, since=since, limit=limit)
    people = [
        {**r, "when": (r.get("received_at") or "")[5:16].replace("T", " "), "job_id": (r.get("job_id") or "")[:8] or None}
        for r in rows
    ]
    columns_shown = ["id", "when", "source", "event_type", "job_status", "job_id", "event_id", "verified"]
    render(rows, as_json, rows=people, columns=columns_shown, chosen=columns)


@app.command("show")
def show(
    ctx: typer.Context,
    delivery_id: int = typer.Argument(..., help="the delivery id"),
    as_json: AsJson = False,
) -> None:
    """Show one delivery: the headers kept, the raw body and its job.

    Example: synctool deliveries show 42
    """
    from synctool.ops.deliveries import show_delivery

    data = show_delivery(ctx_obj(ctx).db, delivery_id)

    def for_people(data: dict) -> None:
        key_values({k: v for k, v in data.items() if k not in ("body", "body_dropped")})
        typer.echo("body:")
        typer.echo(data["body_dropped"] or data["body"])

    render(data, as_json, people=for_people)
