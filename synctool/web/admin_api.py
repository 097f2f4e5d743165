"""The admin API (``synctool serve --admin-api``): every ``/api/*`` route of the spec, each calling the same
operation as its CLI command, behind ``Authorization: Bearer <JWT>`` with the spec's minimum role.

Read it top-down: ``ROUTES`` is the table (method, path, minimum role, handler), one row a route; the handlers
are plain functions of ``api_handlers`` taking the request's ``StaffRequest`` (the one the staff page's views
take too). ``table`` adds the routes of the platforms in use (``Platform.routes``, ``ApiRoute`` rows whose
handlers live in each platform's package). ``AdminApi.handle`` runs any row behind the request guard
(``guard``): the token and the row's role (``guard.refusal``, as every page and form), then the body, then the
handler on the request's one connection, and a change's staff-action record.

Authentication is Starlette's own: ``TokenBackend`` turns the bearer token into the user and role scopes
(a role's scopes include every lower role). Bodies and queries are the operations' pydantic models, shared
with the CLI.

Missing or bad token -> 401, too low a role -> 403, unknown id -> 404, a refused state change -> 409, bad
body or query -> 422 naming the field, an outside system failing -> 502, synctool not configured for it ->
503; each with ``{"error": ..., "detail": ...}``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, AuthenticationError, BaseUser
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from synctool import platforms
from synctool.config import Config
from synctool.errors import ConfigError, InvalidSignature, PayloadTooLarge
from synctool.platforms import ApiRoute
from synctool.runtime import Runtime
from synctool.web import api_handlers as h
from synctool.web import guard
from synctool.web.api_handlers import number
from synctool.web.auth import ADMIN, SUPER, VIEWER, credentials
from synctool.web.bounds import read_body
from synctool.web.request import Json, StaffRequest

if TYPE_CHECKING:
    from synctool import store

__all__ = ["ROUTES", "TokenBackend", "number", "routes", "table"]

ROUTES = (
    ApiRoute("GET", "/api/overview", VIEWER, h.show_overview),
    ApiRoute("GET", "/api/actions", VIEWER, h.list_actions),
    ApiRoute("GET", "/api/reconcile", ADMIN, h.differences),
    ApiRoute("GET", "/api/reconcile/accepted", ADMIN, h.accepted_differences),
    ApiRoute("POST", "/api/reconcile/accept", ADMIN, h.accept_difference),
    ApiRoute("GET", "/api/payouts", ADMIN, h.payouts),
    ApiRoute("GET", "/api/year-end/{year}", ADMIN, h.last_year_end),
    ApiRoute("POST", "/api/year-end/{year}/check", ADMIN, h.check_year_end),
    ApiRoute("POST", "/api/users/login-link", SUPER, h.login_link),
    ApiRoute("GET", "/api/syncs", VIEWER, h.list_syncs),
    ApiRoute("GET", "/api/syncs/{id}", VIEWER, h.show_sync),
    ApiRoute("PATCH", "/api/syncs/{id}/resolve", ADMIN, h.resolve),
    ApiRoute("GET", "/api/stats", VIEWER, h.stats),
    ApiRoute("GET", "/api/settings/crm-environment", ADMIN, h.crm_environment),
    ApiRoute("PATCH", "/api/settings/crm-environment", ADMIN, h.set_crm_environment),
    ApiRoute("POST", "/api/settings/crm-reference-refresh", ADMIN, h.refresh_crm_reference),
    ApiRoute("GET", "/api/settings/alert-recipients", ADMIN, h.alert_recipients),
    ApiRoute("PATCH", "/api/settings/alert-recipients", ADMIN, h.set_alert_recipients),
    ApiRoute("GET", "/api/settings/refund-policy", ADMIN, h.refund_policy),
    ApiRoute("PATCH", "/api/settings/refund-policy", ADMIN, h.set_refund_policy),
    ApiRoute("GET", "/api/refunds", VIEWER, h.list_refunds),
    ApiRoute("GET", "/api/settings/soft-credits", ADMIN, h.soft_credits),
    ApiRoute("PATCH", "/api/settings/soft-credits", ADMIN, h.set_soft_credits),
    ApiRoute("GET", "/api/settings/donor-updates", ADMIN, h.donor_updates),
    ApiRoute("PATCH", "/api/settings/donor-updates", ADMIN, h.set_donor_updates),
    ApiRoute("GET", "/api/donors/changes", ADMIN, h.donor_changes),
    ApiRoute("POST", "/api/donors/changes/apply", ADMIN, h.apply_donor_changes),
    ApiRoute("POST", "/api/donors/changes/dismiss", ADMIN, h.dismiss_donor_changes),
    ApiRoute("GET", "/api/donors/matches", ADMIN, h.donor_matches),
    ApiRoute("POST", "/api/donors/matches/{id}/accept", ADMIN, h.accept_donor_match),
    ApiRoute("POST", "/api/donors/matches/{id}/new", ADMIN, h.new_constituent),
    ApiRoute("GET", "/api/settings/donor-matching", ADMIN, h.donor_matching),
    ApiRoute("PATCH", "/api/settings/donor-matching", ADMIN, h.set_donor_matching),
    ApiRoute("GET", "/api/crm/duplicates", ADMIN, h.crm_duplicates),
    ApiRoute("GET", "/api/users", SUPER, h.list_users),
    ApiRoute("POST", "/api/users/invite", SUPER, h.invite_user),
    ApiRoute("PATCH", "/api/users/{id}", SUPER, h.update_user),
    ApiRoute("GET", "/api/mappings/types", ADMIN, h.type_defaults),
    ApiRoute("GET", "/api/mappings/overrides", ADMIN, h.campaign_overrides),
    ApiRoute("POST", "/api/mappings/overrides", ADMIN, h.set_campaign_override),
    ApiRoute("GET", "/api/mappings/funds", ADMIN, h.fund_overrides),
    ApiRoute("POST", "/api/mappings/funds", ADMIN, h.set_fund_override),
    # monthly donors (issue 53): plans read as the sync log; their group, follow-ups and settings: admin
    ApiRoute("GET", "/api/plans", VIEWER, h.list_plans),
    ApiRoute("GET", "/api/plans/{id}", VIEWER, h.show_plan),
    ApiRoute("GET", "/api/mappings/plans", ADMIN, h.plans_mapping),
    ApiRoute("POST", "/api/mappings/plans", ADMIN, h.set_plans_mapping),
    ApiRoute("GET", "/api/settings/plans-report-changes", ADMIN, h.plans_report_changes),
    ApiRoute("PATCH", "/api/settings/plans-report-changes", ADMIN, h.set_plans_report_changes),
    ApiRoute("GET", "/api/settings/plans-chat-webhook", ADMIN, h.plans_chat_webhook),
    ApiRoute("PATCH", "/api/settings/plans-chat-webhook", ADMIN, h.set_plans_chat_webhook),
    # who came: event campaigns mapped to CRM events (read as the sync log; mapping and reading check-ins: admin)
    ApiRoute("GET", "/api/events", VIEWER, h.list_events),
    ApiRoute("GET", "/api/events/{campaign}", VIEWER, h.show_event),
    ApiRoute("POST", "/api/events/{campaign}/checkins", ADMIN, h.read_checkins),
    ApiRoute("GET", "/api/mappings/events", ADMIN, h.event_mappings),
    ApiRoute("POST", "/api/mappings/events", ADMIN, h.set_event_mapping),
    ApiRoute("DELETE", "/api/mappings/events/{campaign}", ADMIN, h.remove_event_mapping),
    ApiRoute("GET", "/api/crm/funds", ADMIN, h.crm_funds),
    ApiRoute("GET", "/api/crm/campaigns", ADMIN, h.crm_campaigns),
    ApiRoute("GET", "/api/crm/gift-types", ADMIN, h.crm_gift_types),
    ApiRoute("GET", "/api/crm/gift-categories", ADMIN, h.crm_gift_categories),
    ApiRoute("GET", "/api/crm/payment-types", ADMIN, h.crm_payment_types),
    ApiRoute("GET", "/api/test-connections", ADMIN, h.check_connections),
    ApiRoute("POST", "/api/inject-webhook", ADMIN, h.inject),
    ApiRoute("POST", "/api/retry-all", ADMIN, h.retry_all),
    ApiRoute("POST", "/api/retry-all-fresh", ADMIN, h.retry_all_fresh),
    ApiRoute("POST", "/api/reset-test-data", ADMIN, h.reset_test_data),
    # the backup poll of every platform in use, as `synctool poll` (and `synctool dev poll-now`) runs it
    ApiRoute("POST", "/api/poll-now", ADMIN, h.poll_now),
    ApiRoute("POST", "/api/dev/poll-now", ADMIN, h.poll_now),
    ApiRoute("POST", "/api/poll-fresh", ADMIN, h.poll_fresh),
    ApiRoute("POST", "/api/dev/poll-cron", ADMIN, h.poll_cron),
    # the admin routes of the queue spec
    ApiRoute("GET", "/api/admin/crm/test-connection", ADMIN, h.crm_test_connection),
    ApiRoute("POST", "/api/admin/crm/config/api", ADMIN, h.configure_crm),
    ApiRoute("POST", "/api/admin/crm/environment", ADMIN, h.set_crm_environment),
    ApiRoute("POST", "/api/admin/sync/retry/{jobId}", ADMIN, h.retry_job),
    # a job held for money in another currency: written at the amount the bank credited
    ApiRoute("POST", "/api/jobs/{id}/release", ADMIN, h.release_held),
)


def platform_routes(platform: platforms.Platform) -> list[ApiRoute]:
    """A platform's rows: ``GET`` and ``PATCH /api/settings/<name>`` for each of its settings
    (``Platform.settings``, admin), then its own routes (``Platform.routes``)."""
    rows = []
    for setting in platform.settings:
        rows.append(ApiRoute("GET", f"/api/settings/{setting.name}", ADMIN, h.ReadSetting(setting)))
        rows.append(ApiRoute("PATCH", f"/api/settings/{setting.name}", ADMIN, h.ChangeSetting(setting)))
    return rows + list(platform.routes() if platform.routes else ())


def table(config: Config) -> list[ApiRoute]:
    """``ROUTES``, then the rows of each platform in use (``platform_routes``; one not in use has none: its
    routes answer 404). A platform's route that another row already answers is a ConfigError naming it."""
    rows = list(ROUTES)
    taken = {(r.method, r.path) for r in rows}
    for p in platforms.in_use(config):
        for row in platform_routes(p):
            if (row.method, row.path) in taken or row.role not in (VIEWER, ADMIN, SUPER):
                raise ConfigError("platforms", config.source, f"{p.name}'s route {row.method} {row.path} is taken or has no role")
            taken.add((row.method, row.path))
            rows.append(row)
    return rows


class TokenBackend(AuthenticationBackend):
    """``Authorization: Bearer <JWT>`` -> the active user, with the scopes of their role and every role below,
    checked on the request's one connection (``guard.OneConnection``)."""

    def __init__(self, rt: Runtime):
        self.rt = rt

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        from synctool.ops.users import verify_token

        header = conn.headers.get("authorization")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthenticationError("send Authorization: Bearer <token> (synctool users token EMAIL)")
        try:
            record = await guard.in_thread(conn, lambda db: verify_token(db, self.rt, token.strip()))
        except (InvalidSignature, ConfigError) as exc:
            raise AuthenticationError(str(exc)) from None
        return credentials(record)


def error(status: int, message: str, detail: str = "") -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail}, status_code=status)


def _record(conn: store.Connection, request: Request, body: Json, status: int, answer: Json) -> None:
    """A change asked of the API goes in the staff actions, done or refused, with who asked."""
    route = request.scope.get("route")
    path = getattr(route, "path", request.url.path)
    target = next(iter(request.path_params.values()), None)
    if target is None and isinstance(body, dict):
        target = body.get("external_id") or body.get("email") or body.get("campaign")
    note = body.get("notes") or body.get("note") if isinstance(body, dict) else None
    outcome = "done" if status < 400 else f"refused ({status}): {answer.get('error')}"
    actor = guard.Actor.of(request.user.record, "api")
    guard.record(conn, actor, f"{request.method} /api{path}", target=None if target is None else str(target), note=note,
                 outcome=outcome)  # fmt: skip


def _answer(outcome: guard.Attempted[object]) -> tuple[int, Json]:
    """A handler's outcome as the route's status and JSON answer."""
    if outcome.error is not None:
        return outcome.status, {"error": str(outcome.error), "detail": outcome.detail}
    return 200, outcome.value


class AdminApi:
    """The endpoint of every row of ``table``."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.max_body = rt.config.receiver.max_body_bytes

    async def handle(self, route: ApiRoute, request: Request) -> JSONResponse:
        """The token, the role, the body, then the handler; a change (not a GET) is recorded, done or refused."""
        refused = guard.refusal(request, route.role)
        if refused and refused.signed_out:
            return error(401, "unauthorized", "send Authorization: Bearer <token> (synctool users token EMAIL)")
        if refused:
            return await self.forbidden(request, refused.reason)
        try:
            raw = await read_body(request, self.max_body)
        except PayloadTooLarge as exc:
            return error(413, str(exc), exc.detail)
        body: Json = {}
        if raw.strip():
            try:
                body = json.loads(raw)
            except (ValueError, RecursionError):
                return error(422, "body is not valid JSON")
        status, answer = await guard.in_thread(request, lambda conn: self.run(conn, route, request, body))
        return JSONResponse(json.loads(json.dumps(answer, default=str)), status_code=status)

    def run(self, conn: store.Connection, route: ApiRoute, request: Request, body: Json) -> tuple[int, Json]:
        staff_request = StaffRequest.of(conn, self.rt, request, "api", body=body)
        if request.method == "GET":
            return _answer(guard.attempt(lambda: route.handler(staff_request)))
        # the handler commits as it goes (it may wait on an outside system), then its record in one commit
        outcome = guard.perform(
            conn, lambda: route.handler(staff_request), lambda o: _record(conn, request, body, *_answer(o)), together=False
        )
        return _answer(outcome)

    async def forbidden(self, request: Request, refused: str) -> JSONResponse:
        """403; a change refused is recorded too, with what its body named."""
        if request.method != "GET":
            try:
                body = json.loads(await read_body(request, self.max_body) or b"{}")
            except (ValueError, RecursionError, PayloadTooLarge):
                body = {}
            forbidden = {"error": "forbidden", "detail": refused}
            await guard.in_thread(request, lambda conn: _record(conn, request, body, 403, forbidden))
        return error(403, "forbidden", refused)


def routes(rt: Runtime) -> list[Mount]:
    """The admin API as one mount at ``/api``: one connection per request (``guard.OneConnection``), then
    Starlette's authentication middleware in front of every route of ``table``."""
    api = AdminApi(rt)

    def unauthorized(conn: HTTPConnection, exc: Exception) -> JSONResponse:
        return error(401, "unauthorized", str(exc))

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return error(exc.status_code, exc.detail)

    app = Starlette(
        routes=[Route(r.path.removeprefix("/api"), partial(api.handle, r), methods=[r.method]) for r in table(rt.config)],
        middleware=[
            Middleware(guard.OneConnection, rt=rt),
            Middleware(AuthenticationMiddleware, backend=TokenBackend(rt), on_error=unauthorized),
        ],
        exception_handlers={HTTPException: http_error},
    )
    return [Mount("/api", app=app)]
