"""`synctool year-end`: whether the CRM's year is right before the giving statements go out."""

from __future__ import annotations

import typer

from synctool.cli.host import host_wide
from synctool.console import AsJson, Columns, ctx_obj, exit_if_failed, render, sub_app

app = sub_app(
    "Is the CRM's year right before the giving statements go out? One command says.\n\n"
    "Example: synctool year-end check 2026 --csv year-end-2026.csv"
)


@app.command("check")
@host_wide()
def check(
    ctx: typer.Context,
    year: int = typer.Argument(None, help="the calendar year (default: this year, in config's timezone)"),
    csv_file: str = typer.Option(None, "--csv", help="also write the blockers and a totals row per platform to this CSV file"),
    dry_run: bool = typer.Option(False, "--dry-run", help="say what the check would cost, and stop"),
    quiet: bool = typer.Option(False, "--quiet", help="one line when something blocks, nothing when the year is ready (cron)"),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """A pre-receipt audit of one calendar year in the organisation's time zone. It names every blocker: the
    platforms' money missing from the CRM or there at another amount (a year-long reconcile, refunds netted),
    gifts dated in the wrong year, deductible amounts their source contradicts (a ticket's fair market value, a
    shop sale, a refund), donors with $250 or more deductible and no mailing address, synced gifts with no
    acknowledgement decision. Each names the gift, the donor and the fix. Differences reviewed with `reconcile
    accept` are listed as reviewed. Soft credits are never money. It writes nothing to the CRM; its cost in CRM
    requests is said before it starts. Exit 1 when anything blocks, 0 when the year is ready.

    Example: synctool year-end check 2026 --csv year-end-2026.csv
    """
    from synctool.ops import year_end as op

    obj = ctx_obj(ctx)
    year = year or op.today(obj.rt).year
    cost = op.estimate(obj.db, obj.rt, year)
    said = (
        f"year-end check {year}: about {cost['crm_requests']} CRM requests ({cost['gifts_synced']} gifts synced in the year), "
        f"about {max(1, round(cost['seconds'] / 60))} minute(s) at synctool's share of the CRM budget, plus each platform's listing"
    )
    if dry_run:
        render(cost, as_json, people=lambda _: typer.echo(said))
        return
    if not (quiet or as_json):
        typer.echo(said, err=True)
    result = op.check(obj.db, obj.rt, year, cost=cost)
    if csv_file:
        op.write_csv(result, csv_file)

    def for_people(data: dict) -> None:
        blockers = data["blockers"]
        if quiet:
            if blockers:
                counts = ", ".join(f"{n} {k}" for k, n in data["by_kind"].items() if n)
                typer.echo(f"year-end {year}: {len(blockers)} blocker(s): {counts}; synctool year-end check {year}")
            return
        shown = ["kind", "source", "external_id", "crm_gift_id", "constituent", "detail", "fix"]
        render(data, rows=blockers, columns=shown, chosen=columns, title=f"year-end {year}: {len(blockers)} blocker(s)")
        if data["reviewed"]:
            render(
                data,
                rows=data["reviewed"],
                columns=["status", "source", "external_id", "reason"],
                title="reviewed (reconcile accept)",
            )
        render(
            [{"source": s, **t} for s, t in data["totals"].items()],
            columns=["source", "platform_count", "platform_dollars", "crm_count", "crm_dollars", "blockers"],
            title=f"{year} per platform ({data['timezone']})",
        )
        typer.echo(
            f"soft credits (never money): {data['soft_credits']}; {data['crm_requests']} CRM requests in {data['seconds']} s; "
            + ("the year is ready" if data["clean"] else "the year is not ready")
        )

    render(result, as_json, people=for_people)
    exit_if_failed(result["failed"], "year-end check")
    if result["blockers"]:
        raise typer.Exit(1)
