"""`synctool sync-mode` and `synctool preview`: see what synctool would write before it writes."""

from __future__ import annotations

import typer

from synctool.console import AsJson, Columns, Limit, action, ctx_obj, render


@action(note="mode", when=lambda a: a["mode"] is not None)
def sync_mode(
    ctx: typer.Context,
    mode: str = typer.Argument(None, help="live or preview; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or switch the sync mode. In preview, drain runs every rule (matching, mappings, dates, amounts,
    tributes, refunds) and writes nothing to the CRM: each job ends "previewed" with its plan (see
    `synctool preview`). Switching to live queues the previewed jobs to run for real.

    Example: synctool sync-mode live
    """
    from synctool.ops.preview import ModeBody, set_mode
    from synctool.validation import parse

    body = None if mode is None else parse(ModeBody, {"mode": mode}, where="arguments")
    result = set_mode(ctx_obj(ctx).db, body)

    def for_people(data: dict) -> None:
        typer.echo(f"sync mode: {data['mode']}")
        if data["queued_for_real"]:
            typer.echo(f"{data['queued_for_real']} previewed job(s) queued to run for real; `synctool drain` (cron) writes them")
        elif data["previewed"]:
            typer.echo(f"{data['previewed']} previewed job(s): `synctool preview`")

    render(result, as_json, people=for_people)


def preview(
    ctx: typer.Context,
    limit: Limit = 200,
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List what the previewed jobs would write. For each: donor, constituent decision ("matched #959482" / "would
    create Jane Doe <jane@...>"), amount, fund, date, acknowledgement template, how each would end, and what
    else it would write (a fundraiser's soft credit, a donor's new contact point); --json adds the exact
    bodies of every CRM write.

    Example: synctool preview --json
    """
    from synctool.ops.preview import plans

    result = plans(ctx_obj(ctx).db, limit=limit)
    shown = ["decision", "amount", "fund", "date", "ack", "ends", "extras", "donor", "source"]
    render(result, as_json, rows=result["items"], columns=shown, chosen=columns, title=f"previewed jobs (mode: {result['mode']})")
