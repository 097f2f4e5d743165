"""`synctool syncs` and `stats`: the sync log."""

from __future__ import annotations

from collections.abc import Mapping

import typer

from synctool.console import AsJson, Columns, Source, action, ctx_obj, key_values, options_as, render, sub_app

app = sub_app("The sync log: every delivery, poll result and operator request. Each with its outcome, and the staff actions.")

#: in order of importance; a narrow terminal shows the first ones (--json has every field)
SYNC_COLUMNS = ["id", "when", "source", "entity", "status", "amount", "message", "email", "attempts", "crm_gift_id"]


def for_people(row: Mapping[str, object]) -> dict[str, object]:
    """A sync log row with the short forms a table shows: an 8-character id (`syncs show` takes it), the
    minute it arrived, "type id" for the entity, and the message or the error."""
    return {
        **row,
        "id": str(row["id"])[:8],
        "when": str(row.get("created_at") or "")[5:16].replace("T", " "),
        "entity": f"{row['entity_type']} {row['entity_id']}",
        "message": row.get("last_error") if row.get("status") == "failed" else row.get("message"),
    }


@app.command("list")
def list_(
    ctx: typer.Context,
    status: str = typer.Option(None, help="queued, running, succeeded, skipped, failed or resolved"),
    source: Source = None,
    date_from: str = typer.Option(None, "--from", help="created at or after: ISO date/time or a duration ago (24h)"),
    date_to: str = typer.Option(None, "--to", help="created at or before: ISO date/time (a bare date is inclusive)"),
    q: str = typer.Option(None, "--q", help="text in the external id, e-mail, name or error"),
    page: int = typer.Option(1, help="page number, from 1"),
    limit: int = typer.Option(50, help="rows per page (1-500)"),
    sort: str = typer.Option(
        "created_at", help="created_at, updated_at, finished_at, status, source, attempts, external_id, amount"
    ),
    order: str = typer.Option("desc", help="asc or desc"),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List sync records, newest first, with filters and paging.

    Example: synctool syncs list --status failed --source pos --from 7d --q ada@example.org
    """
    from synctool.ops.syncs import SyncQuery, list_syncs

    query = options_as(ctx, SyncQuery)
    result = list_syncs(ctx_obj(ctx).db, query)
    render(result, as_json, rows=[for_people(r) for r in result["items"]], columns=SYNC_COLUMNS, chosen=columns)
    if not as_json:
        typer.echo(f"page {result['page']} of {max(result['pages'], 1)}, {result['total']} records")


@app.command("show")
def show(
    ctx: typer.Context,
    sync_id: str = typer.Argument(..., help="the record's UUID"),
    as_json: AsJson = False,
) -> None:
    """Show one sync record with its attempts and the delivery it came from.

    Example: synctool syncs show 0b7e3c1e-6a1f-4c55-9d43-2f0f6c1b9a10
    """
    from synctool.ops.syncs import show_sync

    record = show_sync(ctx_obj(ctx).db, sync_id)

    def for_people(record: dict) -> None:
        key_values({k: v for k, v in record.items() if k not in ("attempts_log", "delivery")})
        typer.echo("\nattempts:")
        render(record["attempts_log"], columns=["number", "started_at", "finished_at", "outcome", "crm_requests", "error"])
        delivery = record["delivery"]
        if delivery:
            typer.echo(
                f"\ndelivery {delivery['id']} ({delivery['source']} {delivery['event_type']}, received {delivery['received_at']}):"
            )
            typer.echo(delivery["body_dropped"] or delivery["body"])

    render(record, as_json, people=for_people)


@app.command("resolve")
@action(target="sync_id", note="notes")
def resolve(
    ctx: typer.Context,
    sync_id: str = typer.Argument(..., help="the failed record's UUID"),
    notes: str = typer.Option(None, help="what was done about it"),
    by: str = typer.Option(None, help="who resolved it"),
    as_json: AsJson = False,
) -> None:
    """Mark a failed record resolved without running it again.

    Example: synctool syncs resolve 0b7e3c1e-6a1f-4c55-9d43-2f0f6c1b9a10 --notes "entered by hand" --by sam
    """
    from synctool.ops.syncs import ResolveBody
    from synctool.ops.syncs import resolve as resolve_op
    from synctool.validation import parse

    record = resolve_op(ctx_obj(ctx).db, sync_id, parse(ResolveBody, {"notes": notes, "resolvedBy": by}, where="options"))
    render(record, as_json, people=lambda r: typer.echo(f"resolved {sync_id} at {r['resolved_at']}"))


def stats(
    ctx: typer.Context,
    window: str = typer.Option("24h", help="24h, 7d or 30d"),
    as_json: AsJson = False,
) -> None:
    """Counts of sync records over a window, and the refunds. Total, succeeded, failed, skipped, queued, per
    source; and the refunds applied (with their dollars), waiting, flagged and skipped.

    Example: synctool stats --window 7d
    """
    from synctool.ops.syncs import StatsQuery
    from synctool.ops.syncs import stats as stats_op

    result = stats_op(ctx_obj(ctx).db, options_as(ctx, StatsQuery))

    def for_people(result: dict) -> None:
        key_values({k: v for k, v in result.items() if k not in ("per_source", "refunds")})
        r = result["refunds"]
        typer.echo(
            f"refunds  {r['applied']} applied (${r['amount_applied']}), {r['waiting']} waiting, "
            f"{r['flagged']} flagged, {r['skipped']} skipped"
        )
        render(
            [{"source": s, **v} for s, v in result["per_source"].items()],
            columns=["source", "total", "succeeded", "failed", "skipped", "queued", "running"],
        )

    render(result, as_json, people=for_people)


@app.command("actions")
def actions(
    ctx: typer.Context,
    target: str = typer.Option(None, help="only actions on this sync record id, external id or user e-mail"),
    who: str = typer.Option(None, help="only this person's actions (their e-mail, or the OS user for the CLI's)"),
    page: int = typer.Option(1, min=1),
    limit: int = typer.Option(50, min=1, max=500),
    as_json: AsJson = False,
) -> None:
    """Staff actions, newest first, wherever they were taken: the staff page, the admin API and the command
    line (a command that changes something; its who is the OS user who ran it, its role `cli`): when, who,
    through what, what, on which record, the outcome (a refused action is listed too), the note and the role.

    Example: synctool syncs actions --who treasurer@example.org
    """
    from synctool.ops.actions import ActionsQuery, list_actions

    query = options_as(ctx, ActionsQuery)
    result = list_actions(ctx_obj(ctx).db, query)
    shown = ["at", "who", "via", "action", "target", "outcome", "note", "role"]
    render(result, as_json, people=lambda d: render(d, rows=d["items"], columns=shown, title=f"{d['total']} action(s)"))


def overview(ctx: typer.Context, as_json: AsJson = False) -> None:
    """What the staff page's first page shows. The last 24 hours and 7 days (as `stats`), the queue, when
    cron's drain, poll, heal and reconcile last ran, the deliveries the platforms reported failed (as the
    last `webhooks heal` read them) and what needs a person, each with its command. Reads the database
    only.

    Example: synctool overview
    """
    from synctool.ops.overview import overview as op

    obj = ctx_obj(ctx)
    result = op(obj.db, obj.rt)

    def for_people(data: dict) -> None:
        for label, window in (("last 24 h", data["day"]), ("last 7 days", data["week"])):
            typer.echo(
                f"{label:<12} {window['total']} records: {window['succeeded']} succeeded, {window['failed']} failed, "
                f"{window['skipped']} skipped, {window['queued']} queued"
            )
        queue = data["queue"]
        typer.echo(
            f"queue        {queue['queued']} queued" + (f", oldest due {queue['oldest_due']}" if queue["oldest_due"] else "")
        )
        for run in data["last_runs"]:
            typer.echo(
                f"{run['command']:<12} "
                + (f"last ran {run['at']}" if run["at"] else "never ran")
                + (" (late)" if run["stale"] else "")
            )
        for d in data["failed_deliveries"]:
            typer.echo(f"deliveries   {d['source']}: {d['failed']} failed, {d['replayed']} replayed by heal at {d['at']}")
        if not data["attention"]:
            typer.echo("nothing needs attention")
        for a in data["attention"]:
            typer.echo(f"attention    {a['text']}: {a['command']}")

    render(result, as_json, people=for_people)
