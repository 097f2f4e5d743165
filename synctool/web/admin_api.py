"""The admin API (``synctool serve --admin-api``): every ``/api/*`` route of the spec, each calling the same
operation as its CLI command, behind ``Authorization: Bearer <JWT>`` with the spec's minimum role.

Missing or bad token -> 401, too low a role -> 403, unknown id -> 404, a refused state change -> 409, bad
body or query -> 422, an outside system failing -> 502, synctool not configured for it -> 503; each with
``{"error": ..., "detail": ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from synctool import store
from synctool.config import Config
from synctool.errors import (ConfigError, Conflict, InvalidInput, InvalidSignature, NotFound, StoreUnavailable,
                             SynctoolError)

VIEWER, ADMIN, SUPER = "viewer", "admin", "super_admin"


@dataclass
class Call:
    """One API request, as the operation sees it."""

    conn: Any
    config: Config
    user: dict[str, Any]
    path: dict[str, str]
    query: dict[str, str]
    body: Any = field(default_factory=dict)

    def text(self, key: str, *, required: bool = True, source: str = "body") -> str | None:
        data = self.body if source == "body" else self.query
        value = data.get(key) if isinstance(data, dict) else None
        if value is None or value == "":
            if required:
                raise InvalidInput(f"{key} is required", f"in the request {source}")
            return None
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise InvalidInput(f"{key} must be a string", f"got {type(value).__name__}")
        return str(value)

    def integer(self, key: str, default: int | None = None, *, source: str = "query") -> int | None:
        data = self.body if source == "body" else self.query
        value = data.get(key) if isinstance(data, dict) else None
        if value is None or value == "":
            return default
        try:
            return int(value)
        except (TypeError, ValueError):
            raise InvalidInput(f"{key} must be an integer", f"got {value!r}") from None

    def boolean(self, key: str) -> bool:
        value = self.body.get(key) if isinstance(self.body, dict) else None
        if not isinstance(value, bool):
            raise InvalidInput(f"{key} must be true or false", f"got {value!r}")
        return value

    def strings(self, key: str) -> list[str]:
        value = self.body.get(key) if isinstance(self.body, dict) else None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInput(f"{key} must be an array of strings")
        return value

    def ints(self, key: str) -> list[int]:
        value = (self.body.get(key) if isinstance(self.body, dict) else None) or []
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise InvalidInput(f"{key} must be an array of integers")
        return value


def _ops():
    """The route table: (method, path, minimum role, operation). Imported lazily: ops pull in clients."""
    from synctool import mappings as mapping_store
    from synctool.ops import checks, crm, deliveries, dev, donations, mailing, mappings, poll, pos, portal, settings, syncs, users
    from synctool.ops import crm as crm_ops

    def sync_list(c: Call) -> Any:
        return syncs.list_syncs(c.conn, status=c.query.get("status"), source=c.query.get("source"),
                                date_from=c.query.get("date_from"), date_to=c.query.get("date_to"), q=c.query.get("q"),
                                page=c.integer("page", 1), limit=c.integer("limit", 50),
                                sort=c.query.get("sort", "created_at"), order=c.query.get("order", "desc"))

    def users_patch(c: Call) -> Any:
        if not isinstance(c.body, dict) or not ({"role", "deactivate", "active"} & set(c.body)):
            raise InvalidInput("give role and/or deactivate")
        deactivate = c.body.get("deactivate") is True or c.body.get("active") is False
        return users.update(c.conn, int_id(c.path["id"]), role=c.text("role", required=False),
                            deactivate=deactivate, activate=c.body.get("active") is True)

    def overrides_post(c: Call) -> Any:
        return mappings.set_campaign_override(c.conn, c.text("campaign"), **coding(c))

    def location_overrides_put(c: Call) -> Any:
        if not isinstance(c.body, list):
            raise InvalidInput("the body must be an array of {location_id, fund_id?, campaign_id?}")
        return mappings.replace_location_overrides(c.conn, c.body)

    def inject(c: Call) -> Any:
        payload = c.body.get("payload") if isinstance(c.body, dict) else None
        if isinstance(payload, (dict, list)):
            raw = json.dumps(payload).encode()
        elif isinstance(payload, str):
            raw = payload.encode()
        else:
            raise InvalidInput("payload is required", "a JSON object, or the raw body as a string (Mailchimp's form)")
        return deliveries.inject(c.conn, c.config, c.text("source"), raw)

    def pos_default(c: Call) -> Any:
        return settings.pos_default_constituent(c.conn, email=c.text("email"), first_name=c.text("first_name", required=False),
                                                last_name=c.text("last_name", required=False))

    def tag_rules_post(c: Call) -> Any:
        return mailing.set_tag_rule(c.conn, c.text("list_id"), c.text("event"), add=c.ints("add"), remove=c.ints("remove"))

    def mailing_mapping_post(c: Call) -> Any:
        enabled = c.body.get("enabled", True) if isinstance(c.body, dict) else True
        if not isinstance(enabled, bool):
            raise InvalidInput("enabled must be true or false")
        return mailing.set_mapping(c.conn, c.text("list_id"), enabled=enabled, label=c.text("label", required=False))

    def crm_config(c: Call) -> Any:
        return crm_ops.configure(c.conn, c.config, base_url=c.text("base_url", required=False),
                                 api_key=c.text("api_key", required=False))

    def crm_environment(c: Call) -> Any:
        return {"environment": crm_ops.set_environment(c.conn, c.config, c.text("environment"))["environment"]}

    return [
        ("GET", "/api/syncs", VIEWER, sync_list),
        ("GET", "/api/syncs/{id}", VIEWER, lambda c: syncs.show_sync(c.conn, c.path["id"])),
        ("PATCH", "/api/syncs/{id}/resolve", ADMIN, lambda c: syncs.resolve(
            c.conn, c.path["id"], notes=c.text("notes", required=False), by=c.text("resolvedBy", required=False)
            or c.user["email"])),
        ("GET", "/api/stats", VIEWER, lambda c: syncs.stats(c.conn, c.query.get("window", "24h"))),
        ("GET", "/api/settings/crm-environment", ADMIN, lambda c: {"environment": crm_ops.status(c.conn, c.config)["environment"]}),
        ("PATCH", "/api/settings/crm-environment", ADMIN, crm_environment),
        ("POST", "/api/settings/crm-reference-refresh", ADMIN, lambda c: crm.refresh(c.conn, c.config)),
        ("GET", "/api/settings/alert-recipients", ADMIN, lambda c: settings.alert_recipients(c.conn)),
        ("PATCH", "/api/settings/alert-recipients", ADMIN, lambda c: settings.alert_recipients(c.conn, c.strings("emails"))),
        ("GET", "/api/settings/mailing-sync-enabled", ADMIN, lambda c: settings.mailing_sync_enabled(c.conn)),
        ("PATCH", "/api/settings/mailing-sync-enabled", ADMIN, lambda c: settings.mailing_sync_enabled(c.conn, c.boolean("enabled"))),
        ("GET", "/api/settings/pos-default-constituent", ADMIN, lambda c: settings.pos_default_constituent(c.conn)),
        ("PATCH", "/api/settings/pos-default-constituent", ADMIN, pos_default),
        ("GET", "/api/users", SUPER, lambda c: users.list_users(c.conn)),
        ("POST", "/api/users/invite", SUPER, lambda c: users.invite(c.conn, c.text("email"), c.text("role", required=False) or VIEWER)),
        ("PATCH", "/api/users/{id}", SUPER, users_patch),
        ("GET", "/api/mappings/types", ADMIN, lambda c: mapping_store.all_of(c.conn, "type_default")),
        ("GET", "/api/mappings/overrides", ADMIN, lambda c: mapping_store.all_of(c.conn, "campaign_override")),
        ("POST", "/api/mappings/overrides", ADMIN, overrides_post),
        ("GET", "/api/mappings/funds", ADMIN, lambda c: mapping_store.all_of(c.conn, "fund_override")),
        ("POST", "/api/mappings/funds", ADMIN, lambda c: mappings.set_fund_override(
            c.conn, c.text("fund"), c.integer("fund_id", source="body"))),
        *[("GET", f"/api/crm/{kind}", ADMIN, (lambda k: lambda c: crm.reference(c.conn, k)["items"])(kind))
          for kind in ("funds", "campaigns", "gift-types", "gift-categories", "payment-types")],
        ("GET", "/api/pos/locations", ADMIN, lambda c: pos.locations(c.conn, c.config)),
        ("GET", "/api/pos/orders", ADMIN, lambda c: pos.orders(c.conn, c.config, cursor=c.query.get("cursor"),
                                                              limit=c.integer("limit", 50))),
        ("POST", "/api/pos/orders/enrich", ADMIN, lambda c: pos.enrich(c.config, c.strings("orderIds"))),
        ("GET", "/api/pos/location-overrides", ADMIN, lambda c: mappings.location_overrides(c.conn)),
        ("PUT", "/api/pos/location-overrides", ADMIN, location_overrides_put),
        ("POST", "/api/pos/orders/{orderId}/resync", ADMIN, lambda c: pos.resync(
            c.conn, c.config, c.path["orderId"], force=c.query.get("force", "false").lower() == "true")),
        ("GET", "/api/donations/campaigns", ADMIN, lambda c: donations.campaigns(c.conn, c.config)),
        ("POST", "/api/donations/campaigns/refresh", ADMIN, lambda c: donations.campaigns(c.conn, c.config, refresh=True)),
        ("GET", "/api/mailing/account", ADMIN, lambda c: mailing.account(c.config)),
        ("GET", "/api/mailing/lists", ADMIN, lambda c: mailing.lists(c.config)),
        ("GET", "/api/mailing/mappings", ADMIN, lambda c: mailing.list_mappings(c.conn)),
        ("POST", "/api/mailing/mappings", ADMIN, mailing_mapping_post),
        ("POST", "/api/mailing/test", ADMIN, lambda c: mailing.test(c.config)),
        ("GET", "/api/mailing/tag-rules", ADMIN, lambda c: mailing.tag_rules(c.conn)),
        ("POST", "/api/mailing/tag-rules", ADMIN, tag_rules_post),
        ("GET", "/api/test-connections", ADMIN, lambda c: checks.test_connections(c.conn, c.config)),
        ("POST", "/api/poll-now", ADMIN, lambda c: poll.poll(c.conn, c.config)),
        ("POST", "/api/dev/poll-now", ADMIN, lambda c: poll.poll(c.conn, c.config)),
        ("POST", "/api/poll-fresh", ADMIN, lambda c: poll.poll(c.conn, c.config, fresh=True)),
        ("POST", "/api/inject-webhook", ADMIN, inject),
        ("POST", "/api/retry-all", ADMIN, lambda c: syncs.retry_all(c.conn, source=c.query.get("source"))),
        ("POST", "/api/retry-all-fresh", ADMIN, lambda c: dev.retry_all_fresh(c.conn, c.config, source=c.query.get("source"))),
        ("POST", "/api/reset-test-data", ADMIN, lambda c: dev.reset_test_data(c.conn, c.config)),
        ("POST", "/api/dev/poll-cron", ADMIN, lambda c: dev.poll_cron(c.conn, c.config)),
        # the portal's admin routes (portal-sync.md)
        ("GET", "/api/admin/crm/test-connection", ADMIN, lambda c: crm_ops.test_connection(c.conn, c.config)),
        ("POST", "/api/admin/crm/sync/payment/{paymentId}", ADMIN, lambda c: portal.sync_now(
            c.conn, c.config, "payment", c.path["paymentId"], force=c.query.get("force", "false").lower() == "true")),
        ("POST", "/api/admin/crm/sync/queue-payment/{paymentId}", ADMIN, lambda c: {
            "job_id": portal.queue_sync(c.conn, "payment", c.path["paymentId"])}),
        ("POST", "/api/admin/crm/config/api", ADMIN, crm_config),
        ("POST", "/api/admin/crm/environment", ADMIN, crm_environment),
        ("POST", "/api/admin/sync/retry/{jobId}", ADMIN, lambda c: syncs.retry(c.conn, c.path["jobId"])),
    ]


def coding(c: Call) -> dict[str, Any]:
    return {k: c.integer(k, source="body") for k in ("fund_id", "campaign_id", "appeal_id", "gift_category_id")}


def int_id(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise NotFound(f"no user with id {value}") from None


def error(status: int, message: str, detail: str = "") -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail}, status_code=status)


STATUS = [(InvalidSignature, 401), (InvalidInput, 422), (NotFound, 404), (Conflict, 409), (ConfigError, 503),
          (StoreUnavailable, 503), (SynctoolError, 502)]


def routes(config: Config) -> list[Route]:
    from synctool.ops.users import RANK, verify_token

    def endpoint(min_role: str, op: Callable[[Call], Any]):
        async def handle(request: Request) -> JSONResponse:
            header = request.headers.get("authorization", "")
            if not header.lower().startswith("bearer ") or not header[7:].strip():
                return error(401, "unauthorized", "send Authorization: Bearer <token> (synctool users token EMAIL)")
            raw = await request.body()
            body: Any = {}
            if raw.strip():
                try:
                    body = json.loads(raw)
                except ValueError:
                    return error(422, "body is not valid JSON")

            def run() -> tuple[int, Any]:
                conn = store.connect(config.db_path, migrate=False)
                try:
                    try:
                        user = verify_token(conn, header[7:].strip())
                    except InvalidSignature as exc:
                        return 401, {"error": "unauthorized", "detail": str(exc)}
                    if RANK[user["role"]] < RANK[min_role]:
                        return 403, {"error": "forbidden", "detail": f"needs {min_role}; you are {user['role']}"}
                    call = Call(conn, config, user, dict(request.path_params), dict(request.query_params), body)
                    return 200, op(call)
                except SynctoolError as exc:
                    status = next(code for kind, code in STATUS if isinstance(exc, kind))
                    return status, {"error": str(exc), "detail": getattr(exc, "detail", "")}
                finally:
                    conn.close()

            status, data = await run_in_threadpool(run)
            return JSONResponse(json.loads(json.dumps(data, default=str)), status_code=status)

        return handle

    return [Route(path, endpoint(role, op), methods=[method]) for method, path, role, op in _ops()]
