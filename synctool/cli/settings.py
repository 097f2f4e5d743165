"""`synctool settings`: the run-time settings operators change (spec: Settings)."""

from __future__ import annotations

import typer

from synctool.console import AsJson, ctx_obj, render, sub_app
from synctool.errors import one_of

app = sub_app(
    "Run-time settings: CRM environment, alert recipients, mailing sync switch, POS default constituent, refund policy, soft credits, donor updates."
)


def _out(data: dict, as_json: bool) -> None:
    render(data, as_json)


@app.command("crm-environment")
def crm_environment(
    ctx: typer.Context,
    name: str = typer.Argument(None, help="production or sandbox; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or switch the CRM environment.

    Example: synctool settings crm-environment sandbox
    """
    from synctool.ops.crm import EnvironmentBody, set_environment
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    body = None if name is None else parse(EnvironmentBody, {"environment": name}, where="arguments")
    _out({"environment": set_environment(obj.db, obj.rt, body)["environment"]}, as_json)


@app.command("alert-recipients")
def alert_recipients(
    ctx: typer.Context,
    emails: list[str] = typer.Argument(None, help="e-mail addresses; omit to show"),
    clear: bool = typer.Option(False, "--clear", help="remove every recipient"),
    as_json: AsJson = False,
) -> None:
    """Show or set who gets the failure digest e-mail.

    Example: synctool settings alert-recipients ops@example.org treasurer@example.org
    """
    from synctool.ops.settings import RecipientsBody
    from synctool.ops.settings import alert_recipients as op
    from synctool.validation import parse

    emails = [] if clear else emails
    body = parse(RecipientsBody, {"emails": emails}, where="arguments") if emails is not None else None
    _out(op(ctx_obj(ctx).db, body), as_json)


@app.command("mailing-sync-enabled")
def mailing_sync_enabled(
    ctx: typer.Context,
    value: str = typer.Argument(None, help="on or off; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or switch whether mailing events change CRM tags.

    Example: synctool settings mailing-sync-enabled off
    """
    from synctool.ops.settings import EnabledBody
    from synctool.ops.settings import mailing_sync_enabled as op
    from synctool.validation import parse

    body = None if value is None else parse(EnabledBody, {"enabled": value}, where="arguments")
    _out(op(ctx_obj(ctx).db, body), as_json)


@app.command("pos-default-constituent")
def pos_default_constituent(
    ctx: typer.Context,
    email: str = typer.Option(None, help="the constituent's e-mail"),
    first_name: str = typer.Option(None, help="first name"),
    last_name: str = typer.Option(None, help="last name"),
    as_json: AsJson = False,
) -> None:
    """Show or set the constituent that POS orders without a customer are credited to.

    Example: synctool settings pos-default-constituent --email walkin@example.org --first-name Walk-in --last-name Customer
    """
    from synctool.ops.settings import PosDefaultBody
    from synctool.ops.settings import pos_default_constituent as op
    from synctool.validation import parse

    given = {k: v for k, v in {"email": email, "first_name": first_name, "last_name": last_name}.items() if v is not None}
    _out(op(ctx_obj(ctx).db, parse(PosDefaultBody, given, where="options") if given else None), as_json)


@app.command("refund-policy")
def refund_policy(
    ctx: typer.Context,
    policy: str = typer.Argument(None, help="adjust, delete or flag; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or set what a platform's refund does to its CRM gift. adjust (the default): lower the gift's
    received and deductible amounts by the refund (to 0 for a full refund) and note it; delete: delete a
    wholly refunded gift (a partial refund is adjusted); flag: change nothing, the record fails as "needs
    attention" naming the gift and the amount. Overrides the config's refunds.policy.

    Example: synctool settings refund-policy delete
    """
    from synctool.ops.refunds import PolicyBody
    from synctool.ops.refunds import refund_policy as op
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    body = None if policy is None else parse(PolicyBody, {"policy": policy}, where="arguments")
    _out(op(obj.db, obj.rt, body), as_json)


@app.command("soft-credits")
def soft_credits(
    ctx: typer.Context,
    state: str = typer.Argument(None, help="on or off; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or switch soft credits: on (the default), a gift made on a peer-to-peer fundraiser's page also
    gives the fundraiser a Soft Credit gift in the CRM (linked to the donor's gift, not money: it never
    counts in reconcile). A fundraiser the CRM does not know is created only with
    soft_credits.create_fundraisers; otherwise the gift's note names them. Overrides soft_credits.enabled.

    Example: synctool settings soft-credits off
    """
    from synctool.ops.settings import SoftCreditsBody
    from synctool.ops.settings import soft_credits as op
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    body = None
    if state is not None:
        one_of(state, ("on", "off"), "state")
        body = parse(SoftCreditsBody, {"enabled": state == "on"}, where="arguments")
    _out(op(obj.db, obj.rt, body), as_json)


@app.command("donor-matching")
def donor_matching(
    ctx: typer.Context,
    policy: str = typer.Argument(None, help="review, auto or email; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or set what a gift does whose e-mail is in no constituent, when its donor matches one by name
    (nicknames and small typos) and by street address with postal code, or phone: review (the default): the
    gift waits for a person (`synctool donors matches`); auto: it goes to that constituent, said in the sync
    log, and the new e-mail becomes a proposed donor change (two candidates always wait); email: a new
    constituent (the e-mail match alone). A name alone never matches. Overrides donors.matching.

    Example: synctool settings donor-matching auto
    """
    from synctool.ops.settings import DonorMatchingBody
    from synctool.ops.settings import donor_matching as op
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    body = None if policy is None else parse(DonorMatchingBody, {"policy": policy}, where="arguments")
    _out(op(obj.db, obj.rt, body), as_json)


@app.command("donor-updates")
def donor_updates(
    ctx: typer.Context,
    policy: str = typer.Argument(None, help="review, add or off; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or set what a known donor's new e-mail, phone or address (one the CRM constituent lacks) becomes:
    review (the default): a proposed change for `synctool donors changes`; add: added at once as a
    non-preferred contact point (one CRM request each); off: dropped. Names are never changed. Overrides
    donors.updates.

    Example: synctool settings donor-updates add
    """
    from synctool.ops.settings import DonorUpdatesBody
    from synctool.ops.settings import donor_updates as op
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    body = None if policy is None else parse(DonorUpdatesBody, {"policy": policy}, where="arguments")
    _out(op(obj.db, obj.rt, body), as_json)
