"""`synctool mappings`: how donation and POS data is coded in the CRM."""

from __future__ import annotations

import typer

from synctool.console import AsJson, action, ctx_obj, emit_json, render, sub_app

app = sub_app(
    "CRM coding for incoming money: type defaults, overrides, fields. Type defaults, campaign and fund overrides, "
    "payment methods, custom fields and event mappings."
)
types_app = sub_app(
    "Type defaults: fund/campaign per donation campaign type (general, collect, fundraise, event) and for POS.\n\nExample: synctool mappings types --json"
)
overrides_app = sub_app(
    "Campaign overrides: fund/campaign for one donation-platform campaign (wins over type defaults).\n\nExample: synctool mappings overrides"
)
funds_app = sub_app(
    "Fund overrides: the CRM fund for gifts designated to one donation-platform fund (wins over campaign mappings).\n\nExample: synctool mappings funds"
)
payments_app = sub_app(
    "Payment methods: a platform's payment method (ROLE:METHOD) -> CRM payment type and gift type.\n\nExample: synctool mappings payments"
)
fields_app = sub_app(
    "Custom fields: a donation-platform custom field (id or title) -> CRM gift custom field.\n\nExample: synctool mappings custom-fields"
)
app.add_typer(types_app, name="types")
app.add_typer(overrides_app, name="overrides")
app.add_typer(funds_app, name="funds")
app.add_typer(payments_app, name="payments")
app.add_typer(fields_app, name="custom-fields")
events_app = sub_app(
    "Event mappings: a donation platform's event campaign -> the CRM event its ticket orders become invitations of.\n\n"
    "Example: synctool mappings events set 7EJRGQ --event 1069"
)
app.add_typer(events_app, name="events")
plans_app = sub_app(
    "Monthly donors: the CRM group donors with an active plan are kept in, and who follows up a failed, paused or "
    "canceled plan (a contact report of the type given, assigned to the team member).\n\n"
    "Example: synctool mappings plans set --group 12 --report-type 3 --team-member dd@example.org"
)
app.add_typer(plans_app, name="plans")

CODING = ["key", "fund_id", "campaign_id", "appeal_id", "gift_category_id", "ack_template_name", "updated_at"]


def _show(ctx: typer.Context, kind: str, columns: list[str], as_json: bool) -> None:
    from synctool import mappings

    rows = mappings.all_of(ctx_obj(ctx).db, kind)
    render(rows, as_json, columns=columns)


def _opt(help_text: str):
    return typer.Option(None, help=help_text)


ACK_HELP = "the CRM acknowledgement template for these gifts (checked against `synctool crm mailing-templates` when cached)"
NO_ACK_HELP = "send no CRM acknowledgement (do_not_ack): the platform already sent the donor a receipt"


@types_app.callback(invoke_without_command=True)
def types_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List type defaults.

    Example: synctool mappings types --json
    """
    if ctx.invoked_subcommand is None:
        _show(ctx, "type_default", CODING, as_json)


@types_app.command("set")
@action(target="key")
def types_set(
    ctx: typer.Context,
    key: str = typer.Argument(
        ..., help="donations:general|collect|fundraise|event, donations:recurring, donations:default or pos:default"
    ),
    fund_id: int = _opt("CRM fund id"),
    campaign_id: int = _opt("CRM campaign id"),
    appeal_id: int = _opt("CRM appeal id"),
    gift_category_id: int = _opt("CRM gift category id"),
    ack: str = typer.Option(None, "--ack", help=ACK_HELP),
    no_ack: bool = typer.Option(False, "--no-ack", help=NO_ACK_HELP),
) -> None:
    """Set the default coding for a campaign type (ids are checked against `synctool crm refresh`'s cache),
    and whether its gifts get a CRM acknowledgement. The options given replace the type's whole coding.

    Example: synctool mappings types set donations:event --fund-id 2399 --campaign-id 823 --no-ack
    """
    from synctool.mappings import ack_choice
    from synctool.ops.mappings import set_type_default

    emit_json(
        set_type_default(
            ctx_obj(ctx).db,
            key,
            fund_id=fund_id,
            campaign_id=campaign_id,
            appeal_id=appeal_id,
            gift_category_id=gift_category_id,
            ack_template_name=ack_choice(ack, no_ack),
        )
    )


@overrides_app.callback(invoke_without_command=True)
def overrides_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List campaign overrides.

    Example: synctool mappings overrides
    """
    if ctx.invoked_subcommand is None:
        _show(ctx, "campaign_override", CODING, as_json)


@overrides_app.command("set")
@action(target="campaign")
def overrides_set(
    ctx: typer.Context,
    campaign: str = typer.Argument(..., help="the donation platform's campaign id"),
    fund_id: int = _opt("CRM fund id"),
    campaign_id: int = _opt("CRM campaign id"),
    appeal_id: int = _opt("CRM appeal id"),
    gift_category_id: int = _opt("CRM gift category id"),
    ack: str = typer.Option(None, "--ack", help=ACK_HELP),
    no_ack: bool = typer.Option(False, "--no-ack", help=NO_ACK_HELP),
) -> None:
    """Create or update the override for one donation campaign, and whether its gifts get a CRM
    acknowledgement.

    Example: synctool mappings overrides set 118722 --fund-id 2398 --campaign-id 822 --no-ack
    """
    from synctool.mappings import ack_choice
    from synctool.ops.mappings import OverrideBody, set_campaign_override
    from synctool.validation import parse

    given = dict(
        campaign=campaign, fund_id=fund_id, campaign_id=campaign_id, appeal_id=appeal_id, gift_category_id=gift_category_id
    )
    body = parse(OverrideBody, {**given, "ack_template_name": ack_choice(ack, no_ack)}, where="options")
    emit_json(set_campaign_override(ctx_obj(ctx).db, body))


@funds_app.callback(invoke_without_command=True)
def funds_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List fund overrides.

    Example: synctool mappings funds --json
    """
    if ctx.invoked_subcommand is None:
        _show(ctx, "fund_override", ["key", "fund_id", "updated_at"], as_json)


@funds_app.command("set")
@action(target="fund")
def funds_set(
    ctx: typer.Context,
    fund: str = typer.Argument(..., help="the donation platform's fund code, or its fund id"),
    fund_id: int = typer.Option(..., help="CRM fund id"),
) -> None:
    """Send gifts designated to one donation-platform fund to a CRM fund, whatever their campaign's mapping says.

    Example: synctool mappings funds set BUILDING --fund-id 2401
    """
    from synctool.ops.mappings import FundOverrideBody, set_fund_override
    from synctool.validation import parse

    emit_json(set_fund_override(ctx_obj(ctx).db, parse(FundOverrideBody, {"fund": fund, "fund_id": fund_id}, where="options")))


@payments_app.callback(invoke_without_command=True)
def payments_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List payment method mappings.

    Example: synctool mappings payments
    """
    if ctx.invoked_subcommand is None:
        _show(ctx, "payment_method", ["key", "payment_type_id", "gift_type_id", "updated_at"], as_json)


@payments_app.command("set")
@action(target="key")
def payments_set(
    ctx: typer.Context,
    key: str = typer.Argument(
        ..., help="donations:<method> (card, paypal, venmo, check, cash, ach) or pos:<tender type> (CARD, CASH, ...)"
    ),
    payment_type_id: int = _opt("CRM payment type id"),
    gift_type_id: int = _opt("CRM gift type id"),
) -> None:
    """Map a payment method to a CRM payment type (and gift type).

    Example: synctool mappings payments set donations:card --payment-type-id 1509 --gift-type-id 1
    """
    from synctool.ops.mappings import set_payment_method

    emit_json(set_payment_method(ctx_obj(ctx).db, key, payment_type_id=payment_type_id, gift_type_id=gift_type_id))


@fields_app.callback(invoke_without_command=True)
def fields_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List custom field mappings.

    Example: synctool mappings custom-fields
    """
    if ctx.invoked_subcommand is None:
        _show(ctx, "custom_field", ["key", "crm_field", "crm_field_name", "updated_at"], as_json)


@fields_app.command("set")
@action(target="field")
def fields_set(
    ctx: typer.Context,
    field: str = typer.Argument(..., help="the donation platform's custom field id or title"),
    crm_field: str = typer.Option(..., help="the CRM gift custom field: its key or name (synctool crm gift-fields)"),
) -> None:
    """Copy a donation-platform custom field into a CRM gift custom field. The field is checked against the cached
    CRM gift fields; each gift's value must be one of that field's values, or the job fails saying so.

    Example: synctool mappings custom-fields set 77 --crm-field referral_source
    """
    from synctool.ops.mappings import set_custom_field

    emit_json(set_custom_field(ctx_obj(ctx).db, field, crm_field))


@app.command("remove")
@action(target="key", note="kind")
def remove(
    ctx: typer.Context,
    kind: str = typer.Argument(
        ...,
        help="type_default, fund_override, campaign_override, location_override, payment_method, custom_field, list_mapping or tag_rule",
    ),
    key: str = typer.Argument(..., help="the mapping's key"),
) -> None:
    """Remove one mapping.

    Example: synctool mappings remove campaign_override 118722
    """
    from synctool.ops.mappings import remove as remove_op

    emit_json(remove_op(ctx_obj(ctx).db, kind, key))


@events_app.callback(invoke_without_command=True)
def events_list(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List event mappings (campaign -> CRM event).

    Example: synctool mappings events
    """
    if ctx.invoked_subcommand is None:
        _show(ctx, "event", ["event_id", "event_name", "campaign"], as_json)


@events_app.command("set")
@action(target="campaign", note="event")
def events_set(
    ctx: typer.Context,
    campaign: str = typer.Argument(..., help="the donation platform's event campaign: its id or its code"),
    event: int = typer.Option(..., "--event", help="the CRM event id (synctool crm events lists them)"),
) -> None:
    """Map an event campaign to a CRM event (made in the CRM first: LGL's API makes no events). Its orders that
    waited are queued: each becomes the buyer's invitation, its guests' and their attendance.

    Example: synctool mappings events set 7EJRGQ --event 1069
    """
    from synctool.ops.events import EventMappingBody, set_mapping
    from synctool.validation import parse

    body = parse(EventMappingBody, {"campaign": campaign, "event_id": event}, where="options")
    emit_json(set_mapping(ctx_obj(ctx).db, body))


@events_app.command("remove")
@action(target="campaign")
def events_remove(ctx: typer.Context, campaign: str = typer.Argument(..., help="the campaign's id or code")) -> None:
    """Remove an event mapping (invitations already written stay in the CRM; new orders wait).

    Example: synctool mappings events remove 7EJRGQ
    """
    from synctool.ops.events import remove_mapping

    emit_json(remove_mapping(ctx_obj(ctx).db, campaign))


@plans_app.command("show")
def plans_show(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Show the monthly donors' group and follow-up mapping, with the CRM's names.

    Example: synctool mappings plans show --json
    """
    from synctool.ops.mappings import plans_mapping

    render(plans_mapping(ctx_obj(ctx).db), as_json)


@plans_app.command("set")
@action(target="group", note="report_type")
def plans_set(
    ctx: typer.Context,
    group: int = typer.Option(..., "--group", help="the CRM group id (synctool crm list groups, after crm refresh)"),
    report_type: int = typer.Option(None, "--report-type", help="the CRM contact report type id of the follow-ups"),
    team_member: str = typer.Option(None, "--team-member", help="the team member's e-mail the follow-ups are assigned to"),
) -> None:
    """Keep donors with an active plan in a CRM group, and follow up each failed, paused or canceled plan with a
    contact report (of --report-type, assigned to --team-member). Checked against the cached CRM lists.

    Example: synctool mappings plans set --group 12 --report-type 3 --team-member dd@example.org
    """
    from synctool.ops.mappings import PlansMappingBody, set_plans_mapping
    from synctool.validation import parse

    given = {"group_id": group, "contact_report_type_id": report_type, "team_member": team_member}
    emit_json(set_plans_mapping(ctx_obj(ctx).db, parse(PlansMappingBody, given, where="options")))
