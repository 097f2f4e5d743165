"""`synctool reconcile`: the platforms' money of a period against the CRM's gifts."""

from __future__ import annotations

import shutil
import textwrap

import typer

from synctool.cli.host import host_wide
from synctool.console import AsJson, Columns, action, ctx_obj, exit_if_failed, render, render_outcome, sub_app

app = sub_app(
    "Prove that every platform dollar of a period is in the CRM. Each platform transaction is matched to its gift "
    "by external id, amount (after refunds) and date. Statuses: matched, missing (with the sync log's reason), "
    "extra, amount_differs, date_differs, refund_not_applied. Differences first, then totals per source and per "
    "fund. Exit 0 when everything matches, 1 when something differs or a platform could not be read (each "
    "platform in use is read; one that fails is named on stderr and its gifts are not compared). --fix only queues jobs (drain does the "
    "work); it never changes a CRM gift itself. Monthly donors' group membership is checked too (--plans: against the CRM). `reconcile payouts` lists the bank deposits.\n\n"
    "Example: synctool reconcile --from 2026-10-01 --to 2026-10-31 --fix"
)
app.info.no_args_is_help = False

From = typer.Option(None, "--from", help="first day, YYYY-MM-DD or a duration back (30d); default: the last full month")
To = typer.Option(None, "--to", help="last day (inclusive), YYYY-MM-DD or a duration back; default: today")


@app.callback(invoke_without_command=True)
@host_wide()
@action(target="source", when=lambda a: a["fix"])
def reconcile(
    ctx: typer.Context,
    start: str = typer.Option(
        None, "--from", help="first day, YYYY-MM-DD or a duration back (30d); default: the last full month"
    ),
    end: str = typer.Option(None, "--to", help="last day (inclusive), YYYY-MM-DD or a duration back; default: today"),
    source: str = typer.Option(None, help="a source that takes in money (synctool platforms lists them); default: all"),
    fix: bool = typer.Option(
        False, "--fix", help="queue a job for each missing item that should sync and each refund not applied"
    ),
    csv_file: str = typer.Option(None, "--csv", help="also write every item to this CSV file"),
    quiet: bool = typer.Option(False, "--quiet", help="one line when something differs, nothing when all matches (cron)"),
    plans: bool = typer.Option(
        False, "--plans", help="also read each plan donor's group memberships in the CRM (one request a donor)"
    ),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """Prove that every platform dollar of a period is in the CRM: each platform transaction is matched to
    its gift by external id, amount (after refunds) and date. Statuses: matched, missing (with the sync
    log's reason), extra, amount_differs, date_differs, refund_not_applied. Differences are listed first,
    then totals per source and per fund. Exit 0 when everything matches, 1 when something differs. --fix
    only queues jobs (drain then does the work); it never changes a CRM gift itself.

    Monthly donors: every donor with an active (or failed, still retried) plan is in the plans mapping's CRM
    group and every donor whose plans all ended is out of it, checked from synctool's ledgers (no CRM request);
    --plans also reads each plan donor's memberships in the CRM. --fix queues a forced plan job for each.

    Example: synctool reconcile --from 2026-10-01 --to 2026-10-31 --fix
    """
    if ctx.invoked_subcommand is not None:
        return
    from synctool.ops.reconcile import reconcile as op
    from synctool.ops.reconcile import write_csv

    obj = ctx_obj(ctx)
    result = op(obj.db, obj.rt, start=start, end=end, source=source, fix=fix, plans=plans)
    plan_check = result["plans"]
    if csv_file:
        write_csv(result, csv_file)
    counts = result["totals"]["by_status"]
    differing = f"{result['from']}..{result['to']}: {result['differences']} difference(s)" + "".join(
        f", {n} {s}" for s, n in counts.items() if n and s not in ("matched", "accepted")
    )
    line = (
        differing
        + f"; {counts['matched']} matched"
        + (f", {counts['accepted']} accepted" if counts.get("accepted") else "")
        + f"; {result['crm_requests']} CRM requests"
    )
    queued = sum(1 for f in result["fixed"] if f["action"] != "nothing")

    def for_people(data: dict) -> None:
        width = shutil.get_terminal_size((100, 24)).columns
        if quiet:
            if data["differences"]:
                typer.echo("reconcile " + differing)  # one line, for cron's mail
            if plan_check["differences"]:
                typer.echo(f"reconcile plans: {plan_check['differences']} donor(s) not as their plans say")
            return
        rows = [
            {**r, "platform": r["platform_amount"], "crm": r["crm_amount"], "gift": r["crm_gift_id"],
             "when": r["platform_date"] or r["crm_date"], "why": r["reason"] or ""}
            for r in data["items"]
            if r["status"] != "matched" or not data["differences"]
        ]  # fmt: skip
        shown = ["status", "source", "external_id", "platform", "crm", "when", "why", "gift"]
        render(data, rows=rows, columns=shown, chosen=columns, title=f"reconcile {data['from']} .. {data['to']}")
        totals = data["totals"]
        render(
            [{"source": s, **v} for s, v in totals["per_source"].items()],
            columns=["source", "platform_count", "platform_dollars", "crm_count", "crm_dollars"],
            title="per source",
        )
        render(
            [{"fund": f, **v} for f, v in totals["per_fund"].items()],
            columns=["fund", "crm_count", "crm_dollars"],
            title="per CRM fund",
        )
        others = totals["other_tools"]
        typer.echo(f"gifts made by other tools in the period (not compared): {others['count']}, ${others['dollars']}")
        for f in data["fixed"]:
            what = f["action"] + (f" (job {f['job_id'][:8]})" if f["job_id"] and f["action"] != "nothing" else "")
            said = f"--fix {f['external_id']}: {what}" + (f": {f['why']}" if f["why"] else "")
            typer.echo(textwrap.fill(said, width=width, subsequent_indent="    "))
        typer.echo(textwrap.fill(line, width=width, subsequent_indent="  "))
        if queued:
            typer.echo(f"--fix queued {queued} job(s); `synctool drain` runs them")
        plan_lines(plan_check)

    render(result, as_json, people=for_people)
    exit_if_failed(result["failed"], "reconcile")
    if result["differences"] or plan_check["differences"]:
        raise typer.Exit(1)


def plan_lines(found: dict) -> None:
    """The plans' part: each donor not as their plans say, with its fix, and what --fix queued."""
    if not found["checked"]:
        if found["why"] != "no platform in use keeps plans":
            typer.echo(f"plans: not checked ({found['why']})")
        return
    if found["items"]:
        render(found["items"], rows=found["items"], columns=["status", "constituent_id", "plan_id", "donor", "reason", "fix"],
               title=f"plans: the donors of CRM group {found['group_id']}")  # fmt: skip
    for f in found["fixed"]:
        typer.echo(f"--fix plan {f['plan_id']}: queued (job {f['job_id'][:8]})")
    typer.echo(f"plans: {found['donors']} donor(s), {found['differences']} difference(s); {found['crm_requests']} CRM requests")


@app.command("accept")
@action(target="external_id", note="note")
def accept(
    ctx: typer.Context,
    external_id: str = typer.Argument(..., help="the item's external id, as the last reconcile listed it"),
    note: str = typer.Option(..., "--note", help="why this difference is right (kept with it)"),
    by: str = typer.Option(None, "--by", help="who reviewed it; default: the login name"),
    as_json: AsJson = False,
) -> None:
    """Record that a difference of the last reconcile was reviewed and is right (a test gift deleted on
    purpose, a gift corrected by hand). Later runs list it as accepted, not as a difference, while it stays
    the same difference (same status and amounts); a new difference on the item is reported again.

    Example: synctool reconcile accept donations_QiN7blzUhiwXBVBr --note "test gift, deleted on purpose"
    """
    import getpass

    from synctool.ops.reconcile import accept as op

    obj = ctx_obj(ctx)
    row = op(obj.db, external_id, note, by or getpass.getuser())
    render(row, as_json, people=lambda r: typer.echo(f"accepted: {r['external_id']} {r['status']} ({r['note']})"))


@app.command("accepted")
def accepted(ctx: typer.Context, as_json: AsJson = False, columns: Columns = None) -> None:
    """The differences people reviewed and accepted, newest first: item, what was accepted, note, who, when.

    Example: synctool reconcile accepted
    """
    from synctool.ops.reconcile import accepted as op

    result = op(ctx_obj(ctx).db)
    shown = ["external_id", "status", "platform_amount", "crm_amount", "note", "accepted_by", "accepted_at"]
    render(result, as_json, people=lambda d: render(d, rows=d["items"], columns=shown, chosen=columns, title="accepted"))


@app.command("last")
def last(ctx: typer.Context, as_json: AsJson = False, columns: Columns = None) -> None:
    """The last reconcile's differences as they stand now (those reviewed since are listed as accepted), read
    from the database: no platform or CRM request. Exit 1 while any is open.

    Example: synctool reconcile last
    """
    from synctool.ops.reconcile import differences

    result = differences(ctx_obj(ctx).db)
    shown = ["status", "source", "external_id", "platform_amount", "crm_amount", "crm_gift_id", "reason"]

    def for_people(d: dict) -> None:
        if not d["ran"]:
            typer.echo("no reconcile has run: synctool reconcile")
            return
        render(d, rows=d["items"], columns=shown, chosen=columns, title=f"reconcile {d['from']} .. {d['to']} (run {d['at']})")
        typer.echo(f"{d['open']} open difference(s)")

    render_outcome(result, as_json, ok=not result["open"], people=for_people)


@app.command("payouts")
@action(target="source", when=lambda a: a["write_deposits"])
def payouts(
    ctx: typer.Context,
    start: str = From,
    end: str = To,
    source: str = typer.Option(None, help="donations or pos; default: both"),
    write_deposits: bool = typer.Option(
        False, "--write-deposits", help="queue a PATCH of each gift's deposit_date and deposited_amount (1 CRM request per gift)"
    ),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """One row per payout (bank deposit): its date, gross, fees, refunds and net (gross - fees - refunds), a
    flag when that is not the payout's own amount, and how many of its transactions have their gift in the
    CRM (which do not, and which synctool made but the CRM no longer holds), for each platform that pays out
    (`synctool platforms` says which). Costs one CRM search per 100 gifts.

    Example: synctool reconcile payouts --from 2026-10-01 --to 2026-10-31 --source pos
    """
    from synctool.ops.reconcile import payouts as op

    obj = ctx_obj(ctx)
    result = op(obj.db, obj.rt, start=start, end=end, source=source, write_deposits=write_deposits)
    rows = [
        {
            **r,
            "gifts": f"{r['with_gift']}/{r['transactions']}",
            "missing": ", ".join(r["without_gift"] + [f"{e} (deleted in the CRM)" for e in r["not_in_crm"]]),
        }
        for r in result["payouts"]
    ]
    shown = ["source", "payout_id", "date", "gross", "fees", "refunds", "net", "gifts", "missing"]

    def for_people(data: dict) -> None:
        render(data, rows=rows, columns=shown, chosen=columns, title=f"payouts {data['from']} .. {data['to']}")
        for r in data["payouts"]:
            if r["problem"]:
                typer.echo(f"payout {r['payout_id']}: {r['problem']}")
        if data["deposits_queued"]:
            typer.echo(f"{data['deposits_queued']} deposit update(s) queued; `synctool drain` writes them")

    render(result, as_json, people=for_people)
    exit_if_failed(result["failed"], "reconcile payouts")
