"""`synctool plans`: monthly donors, the recurring plans synctool knows and what it did for each."""

from __future__ import annotations

import typer

from synctool.console import AsJson, Columns, ctx_obj, options_as, render, sub_app

app = sub_app(
    "Monthly donors: the recurring plans synctool knows. Each with its donor, constituent, amount, frequency, status, "
    "since, last and next charge; a plan's events, charges and follow-ups.\n\nExample: synctool plans list --status failed"
)


@app.command("list")
def list_(
    ctx: typer.Context,
    status: str = typer.Option(None, help="active, failed, paused, canceled or ended"),
    limit: int = typer.Option(500, help="at most this many"),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List the recurring plans, newest first.

    Each with its donor, constituent, amount, currency, frequency, status, since, last charge, next charge.

    Example: synctool plans list --status failed --json
    """
    from synctool.ops.plans import PlansQuery, list_plans

    data = list_plans(ctx_obj(ctx).db, options_as(ctx, PlansQuery))
    shown = ["plan_id", "donor", "constituent_id", "amount", "currency", "frequency", "status", "since", "last_charge",
             "next_charge"]  # fmt: skip
    rows = [{**p, "plan_id": p["ref"]} for p in data["items"]]  # another platform's plan by its ref (``paypal:I-...``)
    render(data, as_json, rows=rows, columns=shown, chosen=columns, title=f"plans{f' ({status})' if status else ''}")


@app.command("show")
def show(
    ctx: typer.Context,
    plan_id: str = typer.Argument(..., help="the plan's id (SOURCE:ID for a platform whose role is not donations, as listed)"),
    as_json: AsJson = False,
) -> None:
    """Show one plan: its events, charges, follow-ups and group membership.

    The plan's record, its events, its charges and the CRM gifts they became, its follow-ups (contact reports) and its
    donor's group membership. An unknown plan id exits 3.

    Example: synctool plans show 5KzLoa4BDzTFb5Lr --json
    """
    from synctool.console import key_values, table
    from synctool.ops.plans import show_plan

    obj = ctx_obj(ctx)
    data = show_plan(obj.db, obj.rt, plan_id)

    def for_people(plan: dict) -> None:
        key_values({k: v for k, v in plan.items() if k not in ("events", "charges", "follow_ups", "membership")})
        table(plan["events"], ["at", "kind", "detail", "followup"], "events")
        table(plan["charges"], ["at", "transaction_id", "amount", "currency", "external_id", "crm_gift_id", "status"], "charges")
        table(plan["follow_ups"], ["key", "constituent_id", "crm_report_id", "state", "written_at"], "follow-ups")
        membership = plan["membership"]
        typer.echo(
            "group membership: "
            + (f"{membership['state']} since {membership['date_start']}" + (f" until {membership['date_end']}" if membership.get("date_end") else "")
               if membership else "none")
        )  # fmt: skip

    render(data, as_json, people=for_people)
