"""The admin API's handlers: one plain function a route, taking the request's ``StaffRequest`` and returning what
the route answers as JSON, through the same operation as the route's CLI command. Which method and path reach
which handler, for which role, is ``admin_api.ROUTES``; a platform's own handlers live in its package
(``Platform.routes``).

A handler raises a ``SynctoolError`` to refuse (``guard.attempt`` turns it into the status); a body or query
is read as the operation's pydantic model with ``request.body_as`` / ``request.query_as`` (422 naming the field)."""

from __future__ import annotations

from dataclasses import dataclass

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
    plans,
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
from synctool.validation import Body
from synctool.web.request import StaffRequest


@dataclass(frozen=True)
class ReadSetting:
    """``GET /api/settings/<name>`` of a platform's ``Setting``: its value as `synctool settings NAME` shows it."""

    setting: Setting

    def __call__(self, request: StaffRequest) -> object:
        return dict(self.setting.read(request.conn))


@dataclass(frozen=True)
class ChangeSetting:
    """``PATCH /api/settings/<name>`` of a platform's ``Setting``: the body checked with its model, then saved."""

    setting: Setting

    def __call__(self, request: StaffRequest) -> object:
        return dict(self.setting.write(request.conn, request.body_as(self.setting.body())))


@dataclass(frozen=True)
class CoreSetting:
    """``GET`` (no ``body``) or ``PATCH`` (the body checked with ``body``) of one of the core's settings, through
    its operation ``(conn, rt, body or None)``, as `synctool settings NAME` shows and changes it."""

    operation: settings.Operation
    body: type[Body] | None = None

    def __call__(self, request: StaffRequest) -> object:
        return self.operation(request.conn, request.rt, None if self.body is None else request.body_as(self.body))


def number(value: str, what: str) -> int:
    """A path's number; one that is not a number names nothing there (404 ``no <what> <value>``)."""
    try:
        return int(value)
    except ValueError:
        raise NotFound(f"no {what} {value}") from None


# -- the overview, the sync log and the staff actions --------------------------------------------------------


def show_overview(request: StaffRequest) -> object:
    return overview.overview(request.conn, request.rt)


def list_actions(request: StaffRequest) -> object:
    return actions.list_actions(request.conn, request.query_as(actions.ActionsQuery))


def list_syncs(request: StaffRequest) -> object:
    return syncs.list_syncs(request.conn, request.query_as(syncs.SyncQuery))


def show_sync(request: StaffRequest) -> object:
    return syncs.show_sync(request.conn, request.path["id"])


def resolve(request: StaffRequest) -> object:
    body = request.body_as(syncs.ResolveBody)
    return syncs.resolve(
        request.conn, request.path["id"], body.model_copy(update={"resolvedBy": body.resolvedBy or request.user["email"]})
    )


def stats(request: StaffRequest) -> object:
    return syncs.stats(request.conn, request.query_as(syncs.StatsQuery))


def list_refunds(request: StaffRequest) -> object:
    return refunds.list_refunds(request.conn, request.query_as(refunds.RefundsQuery))


def retry_all(request: StaffRequest) -> object:
    return syncs.retry_all(request.conn, request.query_as(syncs.SourceQuery))


def retry_all_fresh(request: StaffRequest) -> object:
    return syncs.retry_all(request.conn, request.query_as(syncs.SourceQuery), fresh=True, rt=request.rt)


def retry_job(request: StaffRequest) -> object:
    return syncs.retry(request.conn, request.path["jobId"])


def release_held(request: StaffRequest) -> object:
    """A job held for money in another currency: written at the amount the bank credited."""
    return syncs.release(request.conn, request.path["id"], request.body_as(syncs.ReleaseBody), by=request.user["email"])


# -- reconcile, payouts, the year-end check ------------------------------------------------------------------


def differences(request: StaffRequest) -> object:
    return reconcile.differences(request.conn)


def accepted_differences(request: StaffRequest) -> object:
    return reconcile.accepted(request.conn)


def accept_difference(request: StaffRequest) -> object:
    body = request.body_as(reconcile.AcceptDifferenceBody)
    return reconcile.accept(request.conn, body.external_id, body.note, request.user["email"])


def payouts(request: StaffRequest) -> object:
    query = request.query_as(reconcile.PayoutsQuery)
    return reconcile.payouts(request.conn, request.rt, start=query.start, end=query.end, source=query.source)


def last_year_end(request: StaffRequest) -> object:
    check = year_end.last(request.conn, number(request.path["year"], "year"))
    if check is None:
        raise NotFound(f"no year-end check of {request.path['year']} has run", f"POST /api/year-end/{request.path['year']}/check")
    return check


def check_year_end(request: StaffRequest) -> object:
    return year_end.check(request.conn, request.rt, number(request.path["year"], "year"))


# -- settings ------------------------------------------------------------------------------------------------


def crm_environment(request: StaffRequest) -> object:
    return {"environment": crm.status(request.conn, request.rt)["environment"]}


def set_crm_environment(request: StaffRequest) -> object:
    return {"environment": crm.set_environment(request.conn, request.rt, request.body_as(crm.EnvironmentBody))["environment"]}


def refresh_crm_reference(request: StaffRequest) -> object:
    return crm.refresh(request.conn, request.rt)


def alert_recipients(request: StaffRequest) -> object:
    return settings.alert_recipients(request.conn)


def set_alert_recipients(request: StaffRequest) -> object:
    return settings.alert_recipients(request.conn, request.body_as(settings.RecipientsBody))


refund_policy = CoreSetting(refunds.refund_policy)
set_refund_policy = CoreSetting(refunds.refund_policy, refunds.PolicyBody)


soft_credits = CoreSetting(settings.soft_credits)
set_soft_credits = CoreSetting(settings.soft_credits, settings.SoftCreditsBody)


donor_updates = CoreSetting(settings.donor_updates)
set_donor_updates = CoreSetting(settings.donor_updates, settings.DonorUpdatesBody)


donor_matching = CoreSetting(settings.donor_matching)
set_donor_matching = CoreSetting(settings.donor_matching, settings.DonorMatchingBody)


# -- donors --------------------------------------------------------------------------------------------------


def donor_changes(request: StaffRequest) -> object:
    return donors.changes(request.conn, request.query_as(donors.ChangesQuery))


def apply_donor_changes(request: StaffRequest) -> object:
    return donors.apply(request.conn, request.rt, request.body_as(donors.DecideBody))


def dismiss_donor_changes(request: StaffRequest) -> object:
    return donors.dismiss(request.conn, request.body_as(donors.DecideBody))


def donor_matches(request: StaffRequest) -> object:
    return donors.matches(request.conn, request.query_as(donors.MatchesQuery))


def accept_donor_match(request: StaffRequest) -> object:
    match = number(request.path["id"], "donor match with id")
    return donors.accept_match(request.conn, match, request.body_as(donors.AcceptMatchBody), by=request.user["email"])


def new_constituent(request: StaffRequest) -> object:
    return donors.new_constituent(request.conn, number(request.path["id"], "donor match with id"), by=request.user["email"])


# -- the team ------------------------------------------------------------------------------------------------


def list_users(request: StaffRequest) -> object:
    return users.list_users(request.conn)


def invite_user(request: StaffRequest) -> object:
    return users.invite(request.conn, request.body_as(users.InviteBody))


def update_user(request: StaffRequest) -> object:
    return users.update(request.conn, number(request.path["id"], "user with id"), request.body_as(users.UserPatch))


def login_link(request: StaffRequest) -> object:
    body = request.body_as(users.LinkBody)
    return (sign_in.mail_link if body.send else sign_in.login_link)(request.conn, request.rt, body.email)


# -- mappings and events -------------------------------------------------------------------------------------


def type_defaults(request: StaffRequest) -> object:
    return mapping_store.all_of(request.conn, "type_default")


def campaign_overrides(request: StaffRequest) -> object:
    return mapping_store.all_of(request.conn, "campaign_override")


def set_campaign_override(request: StaffRequest) -> object:
    return mappings.set_campaign_override(request.conn, request.body_as(mappings.OverrideBody))


def fund_overrides(request: StaffRequest) -> object:
    return mapping_store.all_of(request.conn, "fund_override")


def set_fund_override(request: StaffRequest) -> object:
    return mappings.set_fund_override(request.conn, request.body_as(mappings.FundOverrideBody))


def plans_mapping(request: StaffRequest) -> object:
    return mappings.plans_mapping(request.conn)


def set_plans_mapping(request: StaffRequest) -> object:
    return mappings.set_plans_mapping(request.conn, request.body_as(mappings.PlansMappingBody))


def list_plans(request: StaffRequest) -> object:
    return {
        **plans.list_plans(request.conn, request.query_as(plans.PlansQuery)),
        "figures": plans.figures(request.conn, request.rt),
    }


def show_plan(request: StaffRequest) -> object:
    return plans.show_plan(request.conn, request.rt, request.path["id"])


plans_report_changes = CoreSetting(settings.plans_report_changes)
set_plans_report_changes = CoreSetting(settings.plans_report_changes, settings.PlansReportChangesBody)


plans_chat_webhook = CoreSetting(settings.plans_chat_webhook)
set_plans_chat_webhook = CoreSetting(settings.plans_chat_webhook, settings.PlansChatWebhookBody)


def list_events(request: StaffRequest) -> object:
    return events.list_events(request.conn)


def show_event(request: StaffRequest) -> object:
    return events.show_event(request.conn, request.path["campaign"])


def read_checkins(request: StaffRequest) -> object:
    return events.checkins(request.conn, request.rt, request.path["campaign"])


def event_mappings(request: StaffRequest) -> object:
    return events.list_mappings(request.conn)


def set_event_mapping(request: StaffRequest) -> object:
    return events.set_mapping(request.conn, request.body_as(events.EventMappingBody))


def remove_event_mapping(request: StaffRequest) -> object:
    return events.remove_mapping(request.conn, request.path["campaign"])


# -- the CRM -------------------------------------------------------------------------------------------------


def crm_duplicates(request: StaffRequest) -> object:
    return crm.duplicates(request.conn)


def crm_funds(request: StaffRequest) -> object:
    return crm.reference(request.conn, "funds")["items"]


def crm_campaigns(request: StaffRequest) -> object:
    return crm.reference(request.conn, "campaigns")["items"]


def crm_gift_types(request: StaffRequest) -> object:
    return crm.reference(request.conn, "gift-types")["items"]


def crm_gift_categories(request: StaffRequest) -> object:
    return crm.reference(request.conn, "gift-categories")["items"]


def crm_payment_types(request: StaffRequest) -> object:
    return crm.reference(request.conn, "payment-types")["items"]


def crm_test_connection(request: StaffRequest) -> object:
    return crm.test_connection(request.conn, request.rt)


def configure_crm(request: StaffRequest) -> object:
    return crm.configure(request.conn, request.rt, request.body_as(crm.CrmConfigBody))


# -- running things now --------------------------------------------------------------------------------------


def check_connections(request: StaffRequest) -> object:
    return checks.test_connections(request.conn, request.rt)


def inject(request: StaffRequest) -> object:
    body = request.body_as(deliveries.InjectBody)
    return deliveries.inject(request.conn, request.rt, body.source, body.raw())


def poll_now(request: StaffRequest) -> object:
    """What `synctool poll` does: the backup poll of every platform in use that polls."""
    return poll_ops.poll(request.conn, request.rt)


def poll_fresh(request: StaffRequest) -> object:
    """`synctool poll --fresh`: each poll ignores its watermark and looks back its default window."""
    return poll_ops.poll(request.conn, request.rt, fresh=True)


def poll_cron(request: StaffRequest) -> object:
    return dev.poll_cron(request.conn, request.rt)


def reset_test_data(request: StaffRequest) -> object:
    return dev.reset_test_data(request.conn, request.rt)
