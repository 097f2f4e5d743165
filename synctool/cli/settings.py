"""`synctool settings`: the run-time settings operators change (spec: Settings): the core's, then each
platform's (``Platform.settings``), whose command is built from its declaration."""

from __future__ import annotations

import inspect
from typing import Any, Optional

import typer

from synctool.console import AsJson, action, ctx_obj, render, sub_app
from synctool.errors import one_of

app = sub_app(
    "Run-time settings, the core's and each platform's. The core's: CRM environment, alert recipients, refund policy, "
    "soft credits, donor matching and updates; each platform in `synctool platforms` names its own."
)


def _out(data: dict, as_json: bool) -> None:
    render(data, as_json)


@app.command("crm-environment")
@action(note="name", when=lambda a: a["name"] is not None)
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
@action(note="emails", when=lambda a: a["emails"] is not None or a["clear"])
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


@app.command("refund-policy")
@action(note="policy", when=lambda a: a["policy"] is not None)
def refund_policy(
    ctx: typer.Context,
    policy: str = typer.Argument(None, help="adjust, delete or flag; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or set what a platform's refund does to its CRM gift.

    adjust (the default): lower the gift's
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
@action(note="state", when=lambda a: a["state"] is not None)
def soft_credits(
    ctx: typer.Context,
    state: str = typer.Argument(None, help="on or off; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or switch soft credits for peer-to-peer fundraisers.

    On (the default), a gift made on a peer-to-peer fundraiser's page also
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
@action(note="policy", when=lambda a: a["policy"] is not None)
def donor_matching(
    ctx: typer.Context,
    policy: str = typer.Argument(None, help="review, auto or email; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or set what a gift from a known donor under a new e-mail does.

    That is a gift whose e-mail is in no constituent, when its donor matches one by name
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
@action(note="policy", when=lambda a: a["policy"] is not None)
def donor_updates(
    ctx: typer.Context,
    policy: str = typer.Argument(None, help="review, add or off; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or set what a known donor's new e-mail, phone or address becomes.

    One the CRM constituent lacks becomes, with review (the default): a proposed change for `synctool donors changes`; add: added at once as a
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


def _given(arguments: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: arguments[name] for name in names if arguments.get(name) is not None}


def _said(arguments: dict[str, Any], names: tuple[str, ...]) -> str:
    return " ".join(f"{name}={value}" for name, value in _given(arguments, names).items())


def platform_setting(setting: Any) -> None:
    """`synctool settings NAME` for a platform's setting (``platforms.Setting``): its body model's fields are its
    argument (one field) or its options (several), each described by the field's description; named alone, it
    shows the value."""
    model = setting.body()
    fields = model.model_fields
    names = tuple(fields)
    one = len(fields) == 1
    where = "arguments" if one else "options"

    def run(ctx: typer.Context, as_json: bool = False, **arguments: Any) -> None:
        from synctool.validation import parse

        conn = ctx_obj(ctx).db
        given = _given(arguments, names)
        render(dict(setting.write(conn, parse(model, given, where=where)) if given else setting.read(conn)), as_json)

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("ctx", kind, annotation=typer.Context)]
    for name, found in fields.items():
        what = found.description or name.replace("_", " ")
        default = (
            typer.Argument(None, help=f"{what}; omit to show", show_default=False)
            if one
            else typer.Option(None, f"--{name.replace('_', '-')}", help=what, show_default=False)
        )
        params.append(inspect.Parameter(name, kind, default=default, annotation=Optional[str]))  # noqa: UP045
    params.append(inspect.Parameter("as_json", kind, default=False, annotation=AsJson))
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    run.__doc__ = f"{setting.help}\n\nExample: synctool settings {setting.name} {setting.example}".rstrip()
    recorded = action(note=lambda arguments: _said(arguments, names), when=lambda arguments: _given(arguments, names))
    app.command(setting.name)(recorded(run))


def _platform_settings() -> None:
    from synctool import platforms

    core = {command.name for command in app.registered_commands}
    for name, setting in platforms.settings().items():
        if name not in core:  # a platform never takes a core setting's name
            platform_setting(setting)


_platform_settings()
