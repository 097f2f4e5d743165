"""`synctool events`: event campaigns mapped to CRM events, their orders, invitations and check-ins."""

from __future__ import annotations

import typer

from synctool.console import AsJson, action, ctx_obj, render, sub_app

app = sub_app(
    "Who came: ticket orders as CRM event invitations, and check-ins. Each order invites its buyer, one invitation "
    "per guest, and check-ins become attendance.\n\nExample: synctool events list"
)


@app.command("list")
def list_events(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Each event campaign mapped to a CRM event: orders, tickets, invitations, guests, checked in, and the tickets
    waiting for their invitations (`waiting`: written by the next drain); then, under their own heading, the event
    campaigns whose orders wait for a mapping (`synctool mappings events set CAMPAIGN --event ID`).

    Example: synctool events list --json
    """
    from synctool.ops.events import list_events as list_op

    found = list_op(ctx_obj(ctx).db)

    def for_people(found: dict) -> None:
        render(found["items"], columns=["campaign_id", "campaign", "event_id", "event", "orders", "tickets", "waiting",
                                        "invitations", "guests", "checked_in", "attended", "refunded"], title="mapped events")  # fmt: skip
        if found["waiting"]:
            typer.echo("\nevent campaigns waiting for an event mapping:")
        for waiting in found["waiting"]:
            typer.echo(
                f"{waiting['tickets']} ticket(s) of {waiting['campaign'] or waiting['campaign_id']} wait for an event mapping:"
                f" synctool mappings events set {waiting['campaign_id']} --event N"
            )

    render(found, as_json, people=for_people)


@app.command("show")
def show(
    ctx: typer.Context, campaign: str = typer.Argument(..., help="the campaign's id or code"), as_json: AsJson = False
) -> None:
    """One event campaign's orders: the buyer, each ticket's holder (check-in, refund) and the CRM invitation ids.

    Example: synctool events show 7EJRGQ
    """
    from synctool.ops.events import show_event

    found = show_event(ctx_obj(ctx).db, campaign)
    rows = [
        {"order": o["order_id"], "buyer": o["buyer"], "invitation": o["invitation_id"], "attended": o["attended_on"],
         "holders": ", ".join(h["name"] + (" (in)" if h["checked_in_at"] else "") + (" (refunded)" if h["refunded"] else "")
                              for h in o["holders"])}
        for o in found["orders"]
    ]  # fmt: skip
    render(found, as_json, rows=rows, columns=["order", "buyer", "invitation", "attended", "holders"],
           title=f"campaign {found['campaign_id']} -> CRM event {found['event_id'] or '(not mapped)'}")  # fmt: skip


@app.command("checkins")
@action(target="campaign")
def checkins(
    ctx: typer.Context, campaign: str = typer.Argument(..., help="the campaign's id or code"), as_json: AsJson = False
) -> None:
    """Read a mapped campaign's ticket check-ins from its platform now (poll reads them from a day before the event
    to two days after it); the orders whose tickets changed are queued for drain.

    Example: synctool events checkins 7EJRGQ
    """
    from synctool.ops.events import checkins as checkins_op

    obj = ctx_obj(ctx)
    render(checkins_op(obj.db, obj.rt, campaign), as_json)
