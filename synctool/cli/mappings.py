"""`synctool mappings`: how donation and POS data is coded in the CRM."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from synctool.console import AsJson, action, crm_id, ctx_obj, emit_json, listing_group, options_as, render, sub_app
from synctool.platforms import Hook

if TYPE_CHECKING:
    from synctool import store

app = sub_app(
    "CRM coding for incoming money: type defaults, overrides, fields. Type defaults, campaign and fund overrides, "
    "payment methods, custom fields and event mappings."
)

CODING = ["key", "fund_id", "campaign_id", "appeal_id", "gift_category_id", "ack_template_name", "updated_at"]


def _all_of(kind: str) -> Callable[[store.Connection], list[dict[str, Any]]]:
    """What `synctool mappings GROUP` lists: the mappings of ``kind``."""
    return functools.partial(Hook("synctool.mappings:all_of"), kind=kind)


#: the groups of mappings, each listing its kind when named alone: name -> (kind, the columns its list shows, help)
LISTED = {
    "types": (
        "type_default",
        CODING,
        "Type defaults: fund/campaign per donation campaign type (general, collect, fundraise, event) and for POS.\n\n"
        "Example: synctool mappings types --json",
    ),
    "overrides": (
        "campaign_override",
        CODING,
        "Campaign overrides: fund/campaign for one donation-platform campaign (wins over type defaults).\n\n"
        "Example: synctool mappings overrides",
    ),
    "funds": (
        "fund_override",
        ["key", "fund_id", "updated_at"],
        "Fund overrides: the CRM fund for gifts designated to one donation-platform fund (wins over campaign mappings).\n\n"
        "Example: synctool mappings funds",
    ),
    "payments": (
        "payment_method",
        ["key", "payment_type_id", "gift_type_id", "updated_at"],
        "Payment methods: a platform's payment method (ROLE:METHOD) -> CRM payment type and gift type.\n\n"
        "Example: synctool mappings payments",
    ),
    "custom-fields": (
        "custom_field",
        ["key", "crm_field", "crm_field_name", "updated_at"],
        "Custom fields: a donation-platform custom field (id or title) -> CRM gift custom field.\n\n"
        "Example: synctool mappings custom-fields",
    ),
    "events": (
        "event",
        ["event_id", "event_name", "campaign"],
        "Event mappings: a donation platform's event campaign -> the CRM event its ticket orders become invitations of.\n\n"
        "Example: synctool mappings events set 7EJRGQ --event 1069",
    ),
}
groups = {
    name: listing_group(app, name, help_text, _all_of(kind), columns) for name, (kind, columns, help_text) in LISTED.items()
}
plans_app = sub_app(
    "Monthly donors: the CRM group donors with an active plan are kept in, and who follows up a failed, paused or "
    "canceled plan (a contact report of the type given, assigned to the team member).\n\n"
    "Example: synctool mappings plans set --group 12 --report-type 3 --team-member dd@example.org"
)
app.add_typer(plans_app, name="plans")

ACK_HELP = "the CRM acknowledgement template for these gifts (checked against `synctool crm mailing-templates` when cached)"
NO_ACK_HELP = "send no CRM acknowledgement (do_not_ack): the platform already sent the donor a receipt"


def _coding_command(
    argument_help: str, metavar: str, save: Callable[[store.Connection, str, dict[str, Any]], object], doc: str
) -> Callable[..., object]:
    """`mappings types set` and `mappings overrides set`: the coding of one key (a campaign type, a campaign),
    saved by ``save(conn, key, coding)``; the options given replace its whole coding."""

    def command(
        ctx: typer.Context,
        key: str = typer.Argument(..., help=argument_help, metavar=metavar),
        fund_id: int = crm_id("fund"),
        campaign_id: int = crm_id("campaign"),
        appeal_id: int = crm_id("appeal"),
        gift_category_id: int = crm_id("gift category"),
        ack: str = typer.Option(None, "--ack", help=ACK_HELP),
        no_ack: bool = typer.Option(False, "--no-ack", help=NO_ACK_HELP),
    ) -> None:
        from synctool.mappings import ack_choice

        ack_template_name = ack_choice(ack, no_ack)  # refused before the database is opened
        coding = {"fund_id": fund_id, "campaign_id": campaign_id, "appeal_id": appeal_id, "gift_category_id": gift_category_id}
        emit_json(save(ctx_obj(ctx).db, key, {**coding, "ack_template_name": ack_template_name}))

    command.__doc__ = doc
    return action(target="key")(command)


def _save_type_default(conn: store.Connection, key: str, coding: dict[str, Any]) -> object:
    from synctool.ops.mappings import set_type_default

    return set_type_default(conn, key, **coding)


def _save_campaign_override(conn: store.Connection, campaign: str, coding: dict[str, Any]) -> object:
    from synctool.ops.mappings import OverrideBody, set_campaign_override
    from synctool.validation import parse

    return set_campaign_override(conn, parse(OverrideBody, {"campaign": campaign, **coding}, where="options"))


groups["types"].command("set")(
    _coding_command(
        "donations:general|collect|fundraise|event, donations:recurring, donations:default or pos:default",
        "key",
        _save_type_default,
        """Set the default coding for a campaign type (ids are checked against `synctool crm refresh`'s cache),
    and whether its gifts get a CRM acknowledgement. The options given replace the type's whole coding.

    Example: synctool mappings types set donations:event --fund-id 2399 --campaign-id 823 --no-ack
    """,
    )
)
groups["overrides"].command("set")(
    _coding_command(
        "the donation platform's campaign id",
        "campaign",
        _save_campaign_override,
        """Create or update the override for one donation campaign, and whether its gifts get a CRM
    acknowledgement.

    Example: synctool mappings overrides set 118722 --fund-id 2398 --campaign-id 822 --no-ack
    """,
    )
)


@groups["funds"].command("set")
@action(target="fund")
def funds_set(
    ctx: typer.Context,
    fund: str = typer.Argument(..., help="the donation platform's fund code, or its fund id"),
    fund_id: int = crm_id("fund", required=True),
) -> None:
    """Send gifts designated to one donation-platform fund to a CRM fund, whatever their campaign's mapping says.

    Example: synctool mappings funds set BUILDING --fund-id 2401
    """
    from synctool.ops.mappings import FundOverrideBody, set_fund_override

    emit_json(set_fund_override(ctx_obj(ctx).db, options_as(ctx, FundOverrideBody)))


@groups["payments"].command("set")
@action(target="key")
def payments_set(
    ctx: typer.Context,
    key: str = typer.Argument(
        ..., help="donations:<method> (card, paypal, venmo, check, cash, ach) or pos:<tender type> (CARD, CASH, ...)"
    ),
    payment_type_id: int = crm_id("payment type"),
    gift_type_id: int = crm_id("gift type"),
) -> None:
    """Map a payment method to a CRM payment type (and gift type).

    Example: synctool mappings payments set donations:card --payment-type-id 1509 --gift-type-id 1
    """
    from synctool.ops.mappings import set_payment_method

    emit_json(set_payment_method(ctx_obj(ctx).db, key, payment_type_id=payment_type_id, gift_type_id=gift_type_id))


@groups["custom-fields"].command("set")
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


@groups["events"].command("set")
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


@groups["events"].command("remove")
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
