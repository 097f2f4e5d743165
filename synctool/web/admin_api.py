"""The admin API (``synctool serve --admin-api``): every ``/api/*`` route of the spec, each calling the same
operation as its CLI command, behind ``Authorization: Bearer <JWT>`` with the spec's minimum role.

Authentication is Starlette's own: ``TokenBackend`` turns the bearer token into the user and role scopes
(a role's scopes include every lower role), and each route checks its minimum role with
``has_required_scope``. Bodies and queries are the operations' pydantic models, shared with the CLI.

Missing or bad token -> 401, too low a role -> 403, unknown id -> 404, a refused state change -> 409, bad
body or query -> 422 naming the field, an outside system failing -> 502, synctool not configured for it ->
503; each with ``{"error": ..., "detail": ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    AuthenticationError,
    BaseUser,
    has_required_scope,
)
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from synctool import store
from synctool.config import Config
from synctool.errors import (
    ConfigError,
    InvalidSignature,
    NotFound,
    PayloadTooLarge,
    SynctoolError,
    http_status,
)
from synctool.runtime import Runtime
from synctool.validation import parse
from synctool.web.auth import ADMIN, SUPER, VIEWER, credentials
from synctool.web.bounds import read_body

M = TypeVar("M", bound=BaseModel)


@dataclass
class Call:
    """One API request, as the operation sees it."""

    conn: Any
    rt: Runtime
    user: dict[str, Any]
    path: dict[str, str]
    query: dict[str, str]
    body: Any = field(default_factory=dict)

    def body_as(self, model: type[M]) -> M:
        return parse(model, self.body, where="request body", strict=True)

    def query_as(self, model: type[M]) -> M:
        return parse(model, self.query, where="query string")


class TokenBackend(AuthenticationBackend):
    """``Authorization: Bearer <JWT>`` -> the active user, with the scopes of their role and every role below."""

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

        def verify() -> dict[str, Any]:
            db = store.connect(self.rt.db_path, migrate=False)
            try:
                return verify_token(db, self.rt, token.strip())
            finally:
                db.close()

        try:
            record = await run_in_threadpool(verify)
        except InvalidSignature as exc:
            raise AuthenticationError(str(exc)) from None
        except ConfigError as exc:
            raise AuthenticationError(str(exc)) from None
        return credentials(record)


def _ops(config: Config):
    """The route table: (method, path, minimum role, operation), with the routes of the platforms in use.
    Imported lazily: ops pull in clients."""
    from synctool import mappings as mapping_store
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
    from synctool.ops import crm as crm_ops
    from synctool.platforms import admin_routes

    def inject(c: Call) -> Any:
        body = c.body_as(deliveries.InjectBody)
        return deliveries.inject(c.conn, c.rt, body.source, body.raw())

    def resolve(c: Call) -> Any:
        body = c.body_as(syncs.ResolveBody)
        return syncs.resolve(c.conn, c.path["id"], body.model_copy(update={"resolvedBy": body.resolvedBy or c.user["email"]}))

    def crm_environment(c: Call) -> Any:
        return {"environment": crm_ops.set_environment(c.conn, c.rt, c.body_as(crm_ops.EnvironmentBody))["environment"]}

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

    def login_link(c: Call) -> Any:
        body = c.body_as(users.LinkBody)
        return (sign_in.mail_link if body.send else sign_in.login_link)(c.conn, c.rt, body.email)

    return [
        ("GET", "/api/overview", VIEWER, lambda c: overview.overview(c.conn, c.rt)),
        ("GET", "/api/actions", VIEWER, lambda c: actions.list_actions(c.conn, c.query_as(actions.ActionsQuery))),
        ("GET", "/api/reconcile", ADMIN, lambda c: reconcile.differences(c.conn)),
        ("GET", "/api/reconcile/accepted", ADMIN, lambda c: reconcile.accepted(c.conn)),
        ("POST", "/api/reconcile/accept", ADMIN, accept_difference),
        ("GET", "/api/payouts", ADMIN, payouts),
        ("GET", "/api/year-end/{year}", ADMIN, last_year_end),
        ("POST", "/api/year-end/{year}/check", ADMIN, lambda c: year_end.check(c.conn, c.rt, number(c.path["year"], "year"))),
        ("POST", "/api/users/login-link", SUPER, login_link),
        ("GET", "/api/syncs", VIEWER, lambda c: syncs.list_syncs(c.conn, c.query_as(syncs.SyncQuery))),
        ("GET", "/api/syncs/{id}", VIEWER, lambda c: syncs.show_sync(c.conn, c.path["id"])),
        ("PATCH", "/api/syncs/{id}/resolve", ADMIN, resolve),
        ("GET", "/api/stats", VIEWER, lambda c: syncs.stats(c.conn, c.query_as(syncs.StatsQuery))),
        ("GET", "/api/settings/crm-environment", ADMIN, lambda c: {"environment": crm_ops.status(c.conn, c.rt)["environment"]}),
        ("PATCH", "/api/settings/crm-environment", ADMIN, crm_environment),
        ("POST", "/api/settings/crm-reference-refresh", ADMIN, lambda c: crm.refresh(c.conn, c.rt)),
        ("GET", "/api/settings/alert-recipients", ADMIN, lambda c: settings.alert_recipients(c.conn)),
        (
            "PATCH",
            "/api/settings/alert-recipients",
            ADMIN,
            lambda c: settings.alert_recipients(c.conn, c.body_as(settings.RecipientsBody)),
        ),
        ("GET", "/api/settings/mailing-sync-enabled", ADMIN, lambda c: settings.mailing_sync_enabled(c.conn)),
        (
            "PATCH",
            "/api/settings/mailing-sync-enabled",
            ADMIN,
            lambda c: settings.mailing_sync_enabled(c.conn, c.body_as(settings.EnabledBody)),
        ),
        ("GET", "/api/settings/pos-default-constituent", ADMIN, lambda c: settings.pos_default_constituent(c.conn)),
        (
            "PATCH",
            "/api/settings/pos-default-constituent",
            ADMIN,
            lambda c: settings.pos_default_constituent(c.conn, c.body_as(settings.PosDefaultBody)),
        ),
        ("GET", "/api/settings/refund-policy", ADMIN, lambda c: refunds.refund_policy(c.conn, c.rt)),
        (
            "PATCH",
            "/api/settings/refund-policy",
            ADMIN,
            lambda c: refunds.refund_policy(c.conn, c.rt, c.body_as(refunds.PolicyBody)),
        ),
        ("GET", "/api/refunds", VIEWER, lambda c: refunds.list_refunds(c.conn, c.query_as(refunds.RefundsQuery))),
        ("GET", "/api/settings/soft-credits", ADMIN, lambda c: settings.soft_credits(c.conn, c.rt)),
        (
            "PATCH",
            "/api/settings/soft-credits",
            ADMIN,
            lambda c: settings.soft_credits(c.conn, c.rt, c.body_as(settings.SoftCreditsBody)),
        ),
        ("GET", "/api/settings/donor-updates", ADMIN, lambda c: settings.donor_updates(c.conn, c.rt)),
        (
            "PATCH",
            "/api/settings/donor-updates",
            ADMIN,
            lambda c: settings.donor_updates(c.conn, c.rt, c.body_as(settings.DonorUpdatesBody)),
        ),
        ("GET", "/api/donors/changes", ADMIN, lambda c: donors.changes(c.conn, c.query_as(donors.ChangesQuery))),
        ("POST", "/api/donors/changes/apply", ADMIN, lambda c: donors.apply(c.conn, c.rt, c.body_as(donors.DecideBody))),
        ("POST", "/api/donors/changes/dismiss", ADMIN, lambda c: donors.dismiss(c.conn, c.body_as(donors.DecideBody))),
        ("GET", "/api/donors/matches", ADMIN, lambda c: donors.matches(c.conn, c.query_as(donors.MatchesQuery))),
        (
            "POST",
            "/api/donors/matches/{id}/accept",
            ADMIN,
            lambda c: donors.accept_match(
                c.conn, number(c.path["id"], "donor match with id"), c.body_as(donors.AcceptBody), by=c.user["email"]
            ),
        ),
        (
            "POST",
            "/api/donors/matches/{id}/new",
            ADMIN,
            lambda c: donors.new_constituent(c.conn, number(c.path["id"], "donor match with id"), by=c.user["email"]),
        ),
        ("GET", "/api/settings/donor-matching", ADMIN, lambda c: settings.donor_matching(c.conn, c.rt)),
        (
            "PATCH",
            "/api/settings/donor-matching",
            ADMIN,
            lambda c: settings.donor_matching(c.conn, c.rt, c.body_as(settings.DonorMatchingBody)),
        ),
        ("GET", "/api/crm/duplicates", ADMIN, lambda c: crm.duplicates(c.conn)),
        ("GET", "/api/users", SUPER, lambda c: users.list_users(c.conn)),
        ("POST", "/api/users/invite", SUPER, lambda c: users.invite(c.conn, c.body_as(users.InviteBody))),
        (
            "PATCH",
            "/api/users/{id}",
            SUPER,
            lambda c: users.update(c.conn, number(c.path["id"], "user with id"), c.body_as(users.UserPatch)),
        ),
        ("GET", "/api/mappings/types", ADMIN, lambda c: mapping_store.all_of(c.conn, "type_default")),
        ("GET", "/api/mappings/overrides", ADMIN, lambda c: mapping_store.all_of(c.conn, "campaign_override")),
        (
            "POST",
            "/api/mappings/overrides",
            ADMIN,
            lambda c: mappings.set_campaign_override(c.conn, c.body_as(mappings.OverrideBody)),
        ),
        ("GET", "/api/mappings/funds", ADMIN, lambda c: mapping_store.all_of(c.conn, "fund_override")),
        (
            "POST",
            "/api/mappings/funds",
            ADMIN,
            lambda c: mappings.set_fund_override(c.conn, c.body_as(mappings.FundOverrideBody)),
        ),
        # who came: event campaigns mapped to CRM events (read as the sync log; mapping and reading check-ins: admin)
        ("GET", "/api/events", VIEWER, lambda c: events.list_events(c.conn)),
        ("GET", "/api/events/{campaign}", VIEWER, lambda c: events.show_event(c.conn, c.path["campaign"])),
        ("POST", "/api/events/{campaign}/checkins", ADMIN, lambda c: events.checkins(c.conn, c.rt, c.path["campaign"])),
        ("GET", "/api/mappings/events", ADMIN, lambda c: events.list_mappings(c.conn)),
        ("POST", "/api/mappings/events", ADMIN, lambda c: events.set_mapping(c.conn, c.body_as(events.EventMappingBody))),
        ("DELETE", "/api/mappings/events/{campaign}", ADMIN, lambda c: events.remove_mapping(c.conn, c.path["campaign"])),
        *[
            ("GET", f"/api/crm/{kind}", ADMIN, (lambda k: lambda c: crm.reference(c.conn, k)["items"])(kind))
            for kind in ("funds", "campaigns", "gift-types", "gift-categories", "payment-types")
        ],
        ("GET", "/api/test-connections", ADMIN, lambda c: checks.test_connections(c.conn, c.rt)),
        ("POST", "/api/inject-webhook", ADMIN, inject),
        ("POST", "/api/retry-all", ADMIN, lambda c: syncs.retry_all(c.conn, c.query_as(syncs.SourceQuery))),
        (
            "POST",
            "/api/retry-all-fresh",
            ADMIN,
            lambda c: syncs.retry_all(c.conn, c.query_as(syncs.SourceQuery), fresh=True, rt=c.rt),
        ),
        ("POST", "/api/reset-test-data", ADMIN, lambda c: dev.reset_test_data(c.conn, c.rt)),
        ("POST", "/api/dev/poll-cron", ADMIN, lambda c: dev.poll_cron(c.conn, c.rt)),
        # the admin routes of the queue spec
        ("GET", "/api/admin/crm/test-connection", ADMIN, lambda c: crm_ops.test_connection(c.conn, c.rt)),
        ("POST", "/api/admin/crm/config/api", ADMIN, lambda c: crm_ops.configure(c.conn, c.rt, c.body_as(crm_ops.CrmConfigBody))),
        ("POST", "/api/admin/crm/environment", ADMIN, crm_environment),
        ("POST", "/api/admin/sync/retry/{jobId}", ADMIN, lambda c: syncs.retry(c.conn, c.path["jobId"])),
        # a job held for money in another currency: written at the amount the bank credited
        (
            "POST",
            "/api/jobs/{id}/release",
            ADMIN,
            lambda c: syncs.release(c.conn, c.path["id"], c.body_as(syncs.ReleaseBody), by=c.user["email"]),
        ),
        # each platform's own routes (synctool.platforms)
        *admin_routes(Call, {"viewer": VIEWER, "admin": ADMIN, "super_admin": SUPER}, config),
    ]


def number(value: str, what: str) -> int:
    """A path's number; one that is not a number names nothing there (404 ``no <what> <value>``)."""
    try:
        return int(value)
    except ValueError:
        raise NotFound(f"no {what} {value}") from None


def _record(conn: Any, request: Request, body: Any, result: tuple[int, Any]) -> None:
    """A change asked of the API goes in the staff actions, done or refused, with who asked."""
    from synctool.ops.actions import record

    status, data = result
    route = request.scope.get("route")
    path = getattr(route, "path", request.url.path)
    target = next(iter(request.path_params.values()), None)
    if target is None and isinstance(body, dict):
        target = body.get("external_id") or body.get("email") or body.get("campaign")
    note = body.get("notes") or body.get("note") if isinstance(body, dict) else None
    user = request.user.record
    record(
        conn,
        who=user["email"],
        role=user["role"],
        via="api",
        action=f"{request.method} /api{path}",
        target=None if target is None else str(target),
        note=note,
        outcome="done" if status < 400 else f"refused ({status}): {data.get('error')}",
    )


def _record_apart(rt: Runtime, request: Request, body: Any, result: tuple[int, Any]) -> None:
    conn = store.connect(rt.config.db_path, migrate=False)
    try:
        _record(conn, request, body, result)
    finally:
        conn.close()


def error(status: int, message: str, detail: str = "") -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail}, status_code=status)


def routes(rt: Runtime) -> list[Mount]:
    """The admin API as one mount at ``/api``, with Starlette's authentication middleware in front."""

    def endpoint(min_role: str, op: Callable[[Call], Any]):
        async def handle(request: Request) -> JSONResponse:
            if not request.user.is_authenticated:
                return error(401, "unauthorized", "send Authorization: Bearer <token> (synctool users token EMAIL)")
            if not has_required_scope(request, [min_role]):
                refused = 403, {"error": "forbidden", "detail": f"needs {min_role}; you are {request.user.role}"}
                if request.method != "GET":
                    try:
                        said = json.loads(await read_body(request, rt.config.receiver.max_body_bytes) or b"{}")
                    except (ValueError, RecursionError, PayloadTooLarge):
                        said = {}
                    await run_in_threadpool(_record_apart, rt, request, said, refused)
                return error(403, "forbidden", refused[1]["detail"])
            try:
                raw = await read_body(request, rt.config.receiver.max_body_bytes)
            except PayloadTooLarge as exc:
                return error(413, str(exc), exc.detail)
            body: Any = {}
            if raw.strip():
                try:
                    body = json.loads(raw)
                except (ValueError, RecursionError):
                    return error(422, "body is not valid JSON")

            def run() -> tuple[int, Any]:
                conn = store.connect(rt.config.db_path, migrate=False)
                try:
                    call = Call(conn, rt, request.user.record, dict(request.path_params), dict(request.query_params), body)
                    try:
                        result = 200, op(call)
                    except SynctoolError as exc:
                        result = http_status(exc), {"error": str(exc), "detail": getattr(exc, "detail", "")}
                    if request.method != "GET":
                        _record(conn, request, body, result)
                    return result
                finally:
                    conn.close()

            status, data = await run_in_threadpool(run)
            return JSONResponse(json.loads(json.dumps(data, default=str)), status_code=status)

        return handle

    def unauthorized(conn: HTTPConnection, exc: Exception) -> JSONResponse:
        return error(401, "unauthorized", str(exc))

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return error(exc.status_code, exc.detail)

    api = Starlette(
        routes=[
            Route(path.removeprefix("/api"), endpoint(role, op), methods=[method]) for method, path, role, op in _ops(rt.config)
        ],
        middleware=[Middleware(AuthenticationMiddleware, backend=TokenBackend(rt), on_error=unauthorized)],
        exception_handlers={HTTPException: http_error},
    )
    return [Mount("/api", app=api)]
