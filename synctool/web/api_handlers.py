"""The admin API's handlers: one plain function a route, taking the request's ``Call`` and returning what the
route answers as JSON, through the same operation as the route's CLI command. Which method and path reach
which handler, for which role, is ``admin_api.ROUTES``; a platform's own handlers live in its package
(``Platform.routes``).

A handler raises a ``SynctoolError`` to refuse (``guard.attempt`` turns it into the status); a body or query
is read as the operation's pydantic model with ``call.body_as`` / ``call.query_as`` (422 naming the field)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from synctool import mappings as mapping_store
from synctool.errors import NotFound
from synctool.ops import (
    actions,
    checks,
    crm,
    deliveries,
    dev,
    donors,
    events,
    mappings,
    overview,
    reconcile,
    refunds,
    settings,
    sign_in,
    syncs,
    users,
    year_end,
)
from synctool.ops import poll as poll_ops
from synctool.platforms import Setting
from synctool.runtime import Runtime
from synctool.validation import parse

M = TypeVar("M", bound=BaseModel)


@dataclass
class Call:
    """One API request, as a handler sees it: the request's connection, who asked, the path's parameters,
    the query string and the JSON body."""

    conn: sqlite3.Connection
    rt: Runtime
    user: dict[str, Any]
    path: dict[str, str]
    query: dict[str, str]
    body: Any = field(default_factory=dict)

    def body_as(self, model: type[M]) -> M:
        return parse(model, self.body, where="request body", strict=True)

    def query_as(self, model: type[M]) -> M:
        return parse(model, self.query, where="query string")


@dataclass(frozen=True)
class ReadSetting:
    """``GET /api/settings/<name>`` of a platform's ``Setting``: its value as `synctool settings NAME` shows it."""

    setting: Setting

    def __call__(self, c: Call) -> Any:
        return dict(self.setting.read(c.conn))


@dataclass(frozen=True)
class ChangeSetting:
    """``PATCH /api/settings/<name>`` of a platform's ``Setting``: the body checked with its model, then saved."""

    setting: Setting

    def __call__(self, c: Call) -> Any:
        return dict(self.setting.write(c.conn, c.body_as(self.setting.body())))


def number(value: str, what: str) -> int:
    """A path's number; one that is not a number names nothing there (404 ``no <what> <value>``)."""
    try:
        return int(value)
    except ValueError:
        raise NotFound(f"no {what} {value}") from None


# -- the overview, the sync log and the staff actions --------------------------------------------------------


def show_overview(c: Call) -> Any:
    return overview.overview(c.conn, c.rt)


def list_actions(c: Call) -> Any:
    return actions.list_actions(c.conn, c.query_as(actions.ActionsQuery))


def list_syncs(c: Call) -> Any:
    return syncs.list_syncs(c.conn, c.query_as(syncs.SyncQuery))


def show_sync(c: Call) -> Any:
    return syncs.show_sync(c.conn, c.path["id"])


def resolve(c: Call) -> Any:
    body = c.body_as(syncs.ResolveBody)
    return syncs.resolve(c.conn, c.path["id"], body.model_copy(update={"resolvedBy": body.resolvedBy or c.user["email"]}))


def stats(c: Call) -> Any:
    return syncs.stats(c.conn, c.query_as(syncs.StatsQuery))


def list_refunds(c: Call) -> Any:
    return refunds.list_refunds(c.conn, c.query_as(refunds.RefundsQuery))


def retry_all(c: Call) -> Any:
    return syncs.retry_all(c.conn, c.query_as(syncs.SourceQuery))


def retry_all_fresh(c: Call) -> Any:
    return syncs.retry_all(c.conn, c.query_as(syncs.SourceQuery), fresh=True, rt=c.rt)


def retry_job(c: Call) -> Any:
    return syncs.retry(c.conn, c.path["jobId"])


def release_held(c: Call) -> Any:
    """A job held for money in another currency: written at the amount the bank credited."""
    return syncs.release(c.conn, c.path["id"], c.body_as(syncs.ReleaseBody), by=c.user["email"])


# -- reconcile, payouts, the year-end check ------------------------------------------------------------------


def differences(c: Call) -> Any:
    return reconcile.differences(c.conn)


def accepted_differences(c: Call) -> Any:
    return reconcile.accepted(c.conn)


def accept_difference(c: Call) -> Any:
    body = c.body_as(reconcile.AcceptBody)
    return reconcile.accept(c.conn, body.external_id, body.note, c.user["email"])


def payouts(c: Call) -> Any:
    query = c.query_as(reconcile.PayoutsQuery)
    return reconcile.payouts(c.conn, c.rt, start=query.start, end=query.end, source=query.source)


def last_year_end(c: Call) -> Any:
    found = year_end.last(c.conn, number(c.path["year"], "year"))
    if found is None:
        raise NotFound(f"no year-end check of {c.path['year']} has run", f"POST /api/year-end/{c.path['year']}/check")
    return found


def check_year_end(c: Call) -> Any:
    return year_end.check(c.conn, c.rt, number(c.path["year"], "year"))


# -- settings ------------------------------------------------------------------------------------------------


def crm_environment(c: Call) -> Any:
    return {"environment": crm.status(c.conn, c.rt)["environment"]}


def set_crm_environment(c: Call) -> Any:
    return {"environment": crm.set_environment(c.conn, c.rt, c.body_as(crm.EnvironmentBody))["environment"]}


def refresh_crm_reference(c: Call) -> Any:
    return crm.refresh(c.conn, c.rt)


def alert_recipients(c: Call) -> Any:
    return settings.alert_recipients(c.conn)


def set_alert_recipients(c: Call) -> Any:
    return settings.alert_recipients(c.conn, c.body_as(settings.RecipientsBody))


def refund_policy(c: Call) -> Any:
    return refunds.refund_policy(c.conn, c.rt)


def set_refund_policy(c: Call) -> Any:
    return refunds.refund_policy(c.conn, c.rt, c.body_as(refunds.PolicyBody))


def soft_credits(c: Call) -> Any:
    return settings.soft_credits(c.conn, c.rt)


def set_soft_credits(c: Call) -> Any:
    return settings.soft_credits(c.conn, c.rt, c.body_as(settings.SoftCreditsBody))


def donor_updates(c: Call) -> Any:
    return settings.donor_updates(c.conn, c.rt)


def set_donor_updates(c: Call) -> Any:
    return settings.donor_updates(c.conn, c.rt, c.body_as(settings.DonorUpdatesBody))


def donor_matching(c: Call) -> Any:
    return settings.donor_matching(c.conn, c.rt)


def set_donor_matching(c: Call) -> Any:
    return settings.donor_matching(c.conn, c.rt, c.body_as(settings.DonorMatchingBody))


# -- donors --------------------------------------------------------------------------------------------------


def donor_changes(c: Call) -> Any:
    return donors.changes(c.conn, c.query_as(donors.ChangesQuery))


def apply_donor_changes(c: Call) -> Any:
    return donors.apply(c.conn, c.rt, c.body_as(donors.DecideBody))


def dismiss_donor_changes(c: Call) -> Any:
    return donors.dismiss(c.conn, c.body_as(donors.DecideBody))


def donor_matches(c: Call) -> Any:
    return donors.matches(c.conn, c.query_as(donors.MatchesQuery))


def accept_donor_match(c: Call) -> Any:
    match = number(c.path["id"], "donor match with id")
    return donors.accept_match(c.conn, match, c.body_as(donors.AcceptBody), by=c.user["email"])


def new_constituent(c: Call) -> Any:
    return donors.new_constituent(c.conn, number(c.path["id"], "donor match with id"), by=c.user["email"])


# -- the team ------------------------------------------------------------------------------------------------


def list_users(c: Call) -> Any:
    return users.list_users(c.conn)


def invite_user(c: Call) -> Any:
    return users.invite(c.conn, c.body_as(users.InviteBody))


def update_user(c: Call) -> Any:
    return users.update(c.conn, number(c.path["id"], "user with id"), c.body_as(users.UserPatch))


def login_link(c: Call) -> Any:
    body = c.body_as(users.LinkBody)
    return (sign_in.mail_link if body.send else sign_in.login_link)(c.conn, c.rt, body.email)


# -- mappings and events -------------------------------------------------------------------------------------


def type_defaults(c: Call) -> Any:
    return mapping_store.all_of(c.conn, "type_default")


def campaign_overrides(c: Call) -> Any:
    return mapping_store.all_of(c.conn, "campaign_override")


def set_campaign_override(c: Call) -> Any:
    return mappings.set_campaign_override(c.conn, c.body_as(mappings.OverrideBody))


def fund_overrides(c: Call) -> Any:
    return mapping_store.all_of(c.conn, "fund_override")


def set_fund_override(c: Call) -> Any:
    return mappings.set_fund_override(c.conn, c.body_as(mappings.FundOverrideBody))


def list_events(c: Call) -> Any:
    return events.list_events(c.conn)


def show_event(c: Call) -> Any:
    return events.show_event(c.conn, c.path["campaign"])


def read_checkins(c: Call) -> Any:
    return events.checkins(c.conn, c.rt, c.path["campaign"])


def event_mappings(c: Call) -> Any:
    return events.list_mappings(c.conn)


def set_event_mapping(c: Call) -> Any:
    return events.set_mapping(c.conn, c.body_as(events.EventMappingBody))


def remove_event_mapping(c: Call) -> Any:
    return events.remove_mapping(c.conn, c.path["campaign"])


# -- the CRM -------------------------------------------------------------------------------------------------


def crm_duplicates(c: Call) -> Any:
    return crm.duplicates(c.conn)


def crm_funds(c: Call) -> Any:
    return crm.reference(c.conn, "funds")["items"]


def crm_campaigns(c: Call) -> Any:
    return crm.reference(c.conn, "campaigns")["items"]


def crm_gift_types(c: Call) -> Any:
    return crm.reference(c.conn, "gift-types")["items"]


def crm_gift_categories(c: Call) -> Any:
    return crm.reference(c.conn, "gift-categories")["items"]


def crm_payment_types(c: Call) -> Any:
    return crm.reference(c.conn, "payment-types")["items"]


def crm_test_connection(c: Call) -> Any:
    return crm.test_connection(c.conn, c.rt)


def configure_crm(c: Call) -> Any:
    return crm.configure(c.conn, c.rt, c.body_as(crm.CrmConfigBody))


# -- running things now --------------------------------------------------------------------------------------


def check_connections(c: Call) -> Any:
    return checks.test_connections(c.conn, c.rt)


def inject(c: Call) -> Any:
    body = c.body_as(deliveries.InjectBody)
    return deliveries.inject(c.conn, c.rt, body.source, body.raw())


def poll_now(c: Call) -> Any:
    """What `synctool poll` does: the backup poll of every platform in use that polls."""
    return poll_ops.poll(c.conn, c.rt)


def poll_fresh(c: Call) -> Any:
    """`synctool poll --fresh`: each poll ignores its watermark and looks back its default window."""
    return poll_ops.poll(c.conn, c.rt, fresh=True)


def poll_cron(c: Call) -> Any:
    return dev.poll_cron(c.conn, c.rt)


def reset_test_data(c: Call) -> Any:
    return dev.reset_test_data(c.conn, c.rt)
