"""The core's operator settings (spec: Settings table), each a ``Setting`` row as a platform's own are
(``Platform.settings``): `synctool settings NAME` serves both alike. Each operation below validates its
input and returns the current value."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Optional, TypedDict

from synctool import settings, store
from synctool.crm import donor_changes
from synctool.crm import soft_credits as soft
from synctool.ops.crm import EnvironmentBody, set_environment
from synctool.ops.refunds import PolicyBody, refund_policy
from synctool.platforms import Setting
from synctool.runtime import Runtime
from synctool.validation import Body, Email


class Recipients(TypedDict):
    emails: list[str]


class Switch(TypedDict):
    """A setting that is on or off."""

    enabled: bool


class SoftCredits(Switch):
    create_fundraisers: bool


class Policy(TypedDict):
    policy: str


class DonorMatching(Policy):
    held: int


class ChatWebhook(TypedDict):
    host: str | None
    set: bool


class Environment(TypedDict):
    environment: str


class RecipientsBody(Body):
    """Spec: PATCH /api/settings/alert-recipients."""

    emails: list[Email]


def alert_recipients(conn: store.Connection, body: RecipientsBody | None = None) -> Recipients:
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, "alert_recipients", body.emails)
    return {"emails": settings.get(conn, "alert_recipients", [])}


class SoftCreditsBody(Body):
    """PATCH /api/settings/soft-credits."""

    enabled: bool


class DonorUpdatesBody(Body):
    """PATCH /api/settings/donor-updates."""

    policy: Literal["review", "add", "off"]


class DonorMatchingBody(Body):
    """PATCH /api/settings/donor-matching."""

    policy: Literal["review", "auto", "email"]


def donor_matching(conn: store.Connection, rt: Runtime, body: DonorMatchingBody | None = None) -> DonorMatching:
    """What a gift from a known donor under a new e-mail does (the setting wins over ``donors.matching``)."""
    from synctool.crm import matching

    if body is not None:
        with store.atomic(conn):
            settings.put(conn, matching.SETTING, body.policy)
    return {"policy": matching.policy(conn, rt.config), "held": matching.pending_count(conn)}


def soft_credits(conn: store.Connection, rt: Runtime, body: SoftCreditsBody | None = None) -> SoftCredits:
    """Whether peer-to-peer fundraisers get Soft Credit gifts (the setting wins over ``soft_credits.enabled``)."""
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, soft.SETTING, body.enabled)
    return {
        "enabled": soft.enabled(conn, rt.config),
        "create_fundraisers": rt.config.soft_credits.create_fundraisers,
    }


def donor_updates(conn: store.Connection, rt: Runtime, body: DonorUpdatesBody | None = None) -> Policy:
    """What a known donor's new contact points become (the setting wins over ``donors.updates``)."""
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, donor_changes.SETTING, body.policy)
    return {"policy": donor_changes.policy(conn, rt.config)}


class PlansReportChangesBody(Body):
    """PATCH /api/settings/plans-report-changes."""

    enabled: bool


class PlansChatWebhookBody(Body):
    """PATCH /api/settings/plans-chat-webhook: an https URL of a Slack or Teams incoming webhook (null: none)."""

    url: Optional[str] = None


def plans_report_changes(conn: store.Connection, rt: Runtime, body: PlansReportChangesBody | None = None) -> Switch:
    """Whether a plan's changed amount or frequency is said in its donor's next contact report (default off)."""
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, settings.PLANS_REPORT_CHANGES, "on" if body.enabled else "off")
    return {"enabled": settings.plans_report_changes(conn)}


def plans_chat_webhook(conn: store.Connection, rt: Runtime, body: PlansChatWebhookBody | None = None) -> ChatWebhook:
    """The chat incoming webhook told of each failed, paused or canceled plan: shown by its host only (the URL
    holds the webhook's secret)."""
    from synctool import notices

    if body is not None:
        with store.atomic(conn):
            if body.url:
                settings.put(
                    conn, notices.WEBHOOK_SETTING, notices.check_url(body.url, rt.config.organisation.chat_webhook_hosts)
                )
            else:
                conn.execute("DELETE FROM settings WHERE key = ?", (notices.WEBHOOK_SETTING,))
    found = notices.webhook(conn)
    return {"host": notices.host(found), "set": found is not None}


#: what each core setting decides (its command's summary), then whatever else a person should know
REFUND_POLICY = """Show or set what a platform's refund does to its CRM gift.

adjust (the default): lower the gift's
received and deductible amounts by the refund (to 0 for a full refund) and note it; delete: delete a
wholly refunded gift (a partial refund is adjusted); flag: change nothing, the record fails as "needs
attention" naming the gift and the amount. Overrides the config's refunds.policy."""
SOFT_CREDITS = """Show or switch soft credits for peer-to-peer fundraisers.

On (the default), a gift made on a peer-to-peer fundraiser's page also
gives the fundraiser a Soft Credit gift in the CRM (linked to the donor's gift, not money: it never
counts in reconcile). A fundraiser the CRM does not know is created only with
soft_credits.create_fundraisers; otherwise the gift's note names them. Overrides soft_credits.enabled."""
DONOR_MATCHING = """Show or set what a gift from a known donor under a new e-mail does.

That is a gift whose e-mail is in no constituent, when its donor matches one by name
(nicknames and small typos) and by street address with postal code, or phone: review (the default): the
gift waits for a person (`synctool donors matches`); auto: it goes to that constituent, said in the sync
log, and the new e-mail becomes a proposed donor change (two candidates always wait); email: a new
constituent (the e-mail match alone). A name alone never matches. Overrides donors.matching."""
DONOR_UPDATES = """Show or set what a known donor's new e-mail, phone or address becomes.

One the CRM constituent lacks becomes, with review (the default): a proposed change for `synctool donors changes`; add: added at once as a
non-preferred contact point (one CRM request each); off: dropped. Names are never changed. Overrides
donors.updates."""
PLANS_REPORT_CHANGES_HELP = """Show or switch whether a changed monthly plan is said in the donor's next contact report.

On, a plan whose amount or frequency changed says so in the
next follow-up written for it (a failed, paused or canceled plan); off (the default), synctool's record of the
plan changes and nothing more is written."""
PLANS_CHAT_WEBHOOK = """Show or set the chat incoming webhook told of each failed, paused or canceled plan.

An https URL of a Slack or Teams incoming webhook: each failure,
pause and cancellation is posted once as it happens (drain sends it), a line of at most 2,000 characters that
names the plan and the donor, never a secret. --clear: no chat messages. Only the URL's host is ever shown."""
#: the alert recipients of the help's example
RECIPIENTS = "ops@example.org treasurer@example.org"

#: an operation of the core's: ``(conn, rt, body or None)`` -> the value after the change, if any
Operation = Callable[[store.Connection, Runtime, Any], Mapping[str, object]]


def _rows_of(runtime: Callable[[], Runtime]) -> Callable[..., Setting]:
    """How a core operation ``op(conn, rt, body or None)`` becomes a ``Setting`` row read and written with
    ``runtime()``."""

    def row(name: str, help: str, body: type[Body], op: Operation, example: str, *, title: str, description: str) -> Setting:
        def read(conn: store.Connection) -> Mapping[str, object]:
            return op(conn, runtime(), None)

        def write(conn: store.Connection, given: Body) -> Mapping[str, object]:
            return op(conn, runtime(), given)

        return Setting(name, help, lambda: body, read, write, example=example, title=title, description=description)

    return row


def core(runtime: Callable[[], Runtime]) -> tuple[Setting, ...]:
    """The core's settings as ``Setting`` rows, in the order `synctool settings` lists them, as each platform
    declares its own. A value falls back on the config, so a row reads and writes with ``runtime()``, asked
    for when the row is used (the CLI's: the running command's; a server's: its own)."""
    row = _rows_of(runtime)

    def environment(conn: store.Connection, rt: Runtime, body: EnvironmentBody | None) -> Environment:
        return {"environment": set_environment(conn, rt, body)["environment"]}

    def recipients(conn: store.Connection, rt: Runtime, body: RecipientsBody | None) -> Recipients:
        return alert_recipients(conn, body)

    return (
        row("crm-environment", "Show or switch the CRM environment.", EnvironmentBody, environment, "sandbox",
            title="CRM environment",
            description="Which of the CRM's environments synctool writes to: production, or a sandbox for trying it out."),
        row("alert-recipients", "Show or set who gets the failure digest e-mail.", RecipientsBody, recipients, RECIPIENTS,
            title="Alert recipients", description="Who gets the failure digest e-mail (no one: none is sent)."),
        row("refund-policy", REFUND_POLICY, PolicyBody, refund_policy, "delete", title="Refunds",
            description="What a platform's refund does to its gift in the CRM: adjust (the default) lowers the gift by "
            "the refund; delete deletes a wholly refunded gift; flag changes nothing and waits for a person."),
        row("soft-credits", SOFT_CREDITS, SoftCreditsBody, soft_credits, "off", title="Soft credits for fundraisers",
            description="On (the default), a gift made on a peer-to-peer fundraiser's page also gives the fundraiser "
            "a soft credit in the CRM; off, it does not."),
        row("donor-matching", DONOR_MATCHING, DonorMatchingBody, donor_matching, "auto", title="Donor matching",
            description="What a gift does whose e-mail is in no constituent when its donor matches one by name and "
            "address or phone: review, it waits for a person; auto, it goes to that constituent; email, a new "
            "constituent."),
        row("donor-updates", DONOR_UPDATES, DonorUpdatesBody, donor_updates, "add", title="Donors' new contact details",
            description="What a known donor's new e-mail, phone or address becomes: review (the default), a change "
            "a person accepts on the Donors page; add, added to the constituent at once; off, dropped."),
        *plan_settings(runtime),
    )  # fmt: skip


def plan_settings(runtime: Callable[[], Runtime]) -> tuple[Setting, ...]:
    """The two settings of monthly donors (the Settings page and the admin API list these rows)."""
    row = _rows_of(runtime)
    return (
        row("plans-report-changes", PLANS_REPORT_CHANGES_HELP, PlansReportChangesBody, plans_report_changes, "on",
            title="Plan changes in contact reports",
            description="On, a monthly plan whose amount or frequency changed says so in the next contact report "
            "written for it (a failed, paused or canceled plan); off (the default), nothing more is written."),
        row("plans-chat-webhook", PLANS_CHAT_WEBHOOK, PlansChatWebhookBody, plans_chat_webhook,
            "https://hooks.slack.com/services/T000/B000/XXXX", title="Chat messages about monthly plans",
            description="The https address of a Slack or Teams incoming webhook told once of each failed, paused or "
            "canceled plan (empty: no chat messages). Only its host is ever shown."),
    )  # fmt: skip
