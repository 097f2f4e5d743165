"""The platforms' official API descriptions as the fakes' contract (DESIGN "Local fakes").

Each platform's fake names its description (``Fake.contract``): a subset of the platform's own machine-readable
API description, normalised to JSON Schema, in ``../shared/reference/specs/`` (used by path, never copied).
Every exchange a test has with a fake (``FakeWorld.recorders``) must be a described operation: method and path,
query parameters by name, the request body against the operation's schema, and a 2xx response's body against
the response schema. Where the description and real traffic disagree, the reference wins and ``ALLOWED``
says so, with the reference's words.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

SPECS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "specs"
#: supplements: operations a platform's own description has that the shared subset does not (tests/specs/<name>)
MORE = Path(__file__).resolve().parent / "specs"

#: (spec file, what) -> why a difference from the description is right; each names its reference
ALLOWED: dict[tuple[str, str], str] = {
    ("givebutter.json", "query page"): "pagination is documented on Givebutter's pagination page, not per operation "
    "(specs/README.md; givebutter-square.md A5)",
    ("givebutter.json", "query per_page"): "the same pagination page",
    ("givebutter.json", "GET /v1/tickets"): "the extracted description holds four of Givebutter's tags and not tickets; "
    "givebutter-square.md A5: GET /v1/tickets (GB-OAS tickets.index) takes no filters, only paging",
    (
        "givebutter.json",
        "GET /v1/tickets/{ticket}",
    ): "givebutter-square.md A5: GET /v1/tickets/{ticket uid} (GB-OAS tickets.show)",
    ("givebutter.json", "meta/unfiltered_total type"): "a count: the transactions list's own description types it as "
    "an integer, the campaigns list's (machine-generated) as a string; Laravel's paginator sends a number (A5)",
}


#: Givebutter's description is machine-generated (specs/README.md): it requires every field of every resource
#: and types most of them as strings. Real bodies (givebutter-square.md A3.1, from observed webhook traffic and
#: the 2023 spec's examples) leave fields out and carry these as integers, objects, booleans, arrays or null:
#: for them real traffic wins. The envelope (data, links, meta) is held to the description as it is, and so is
#: every field name: a field the description does not have is refused.
LOOSE: dict[str, set[str]] = {
    "givebutter.json": {
        "id", "campaign_id", "plan_id", "team_id", "member_id", "fund_id", "fund_code", "contact_id", "company",
        "address", "utm_parameters", "communication_opt_in", "captured", "refunded", "refunded_at", "captured_at",
        "last_used_at", "last_status", "last_status_description", "memo", "account_id", "event_id", "goal",
        "raised", "donors", "cover", "end_at", "settings", "subtitle", "description", "check_number",
        "check_deposited_at", "external_id", "dedication", "giving_space", "transactions", "custom_fields",
        "field_id", "value", "fair_market_value_amount", "tax_deductible_amount", "payout_id", "line_items",
        "payload", "response", "phone", "picture",
        # an event campaign's ``event`` block as recorded (givebutter-square.md A3.3): booleans and nulls where the
        # machine-generated description says strings
        "private", "tickets_required", "details", "livestream", "livestream_start_at", "livestream_end_at",
        "google_place_id", "location_name", "address_formatted",
    },
}  # fmt: skip


@cache
def load(name: str) -> dict[str, Any] | None:
    path = SPECS / name
    more = MORE / name  # operations the shared description leaves out, each naming its source
    if not path.exists():  # a platform with no shared description (Donorbox): its own, in tests/specs, alone
        return json.loads(more.read_text()) if more.exists() else None
    spec = json.loads(path.read_text())
    if more.exists():
        extra = json.loads(more.read_text())
        spec["operations"] = {**spec["operations"], **extra["operations"]}
        spec["$defs"] = {**spec["$defs"], **extra["$defs"]}
    if name in LOOSE:
        for schema in spec["$defs"].values():
            for branch in schema.get("anyOf", [schema]):
                if "properties" in branch:
                    branch.pop("required", None)
                    branch["additionalProperties"] = False
                    branch["properties"] = {k: ({} if k in LOOSE[name] else v) for k, v in branch["properties"].items()}
    return spec


@cache
def _templates(name: str) -> list[tuple[re.Pattern, dict[str, Any]]]:
    spec = load(name) or {"operations": {}}
    found = []
    for op in spec["operations"].values():
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(op["path"])) + "/?$"
        found.append((re.compile(pattern), op))
    # a literal segment beats a template (/v2/orders/search before /v2/orders/{order_id})
    found.sort(key=lambda t: t[1]["path"].count("{"))
    return found


def operation(name: str, method: str, path: str) -> dict[str, Any] | None:
    return next((op for rx, op in _templates(name) if op["method"] == method and rx.match(path)), None)


def _errors(name: str, schema: dict[str, Any], instance: Any) -> list[str]:
    """Each way ``instance`` breaks ``schema``, in words: where, and what the description expects there."""
    from jsonschema.exceptions import best_match

    found = []
    for error in _validator(name, schema).iter_errors(instance):
        if error.context:  # anyOf / oneOf: the branch that came closest
            error = best_match(error.context) or error
        where = "/".join(str(p) for p in error.absolute_path) or "(the body)"
        if (name, f"{where} {error.validator}") in ALLOWED:
            continue
        found.append(f"{where}: {error.validator} {str(error.validator_value)[:80]} ({str(error.instance)[:60]!r})")
    return found


def _validator(name: str, schema: dict[str, Any]):
    return _compiled(name, json.dumps(schema, sort_keys=True))


@cache
def _compiled(name: str, schema: str):
    """One validator per schema of a description (building one walks every $defs entry: keep it)."""
    from jsonschema import Draft202012Validator

    spec = load(name) or {}
    return Draft202012Validator({**json.loads(schema), "$defs": spec.get("$defs", {})})


def form_to_object(body: bytes) -> dict[str, Any]:
    """A Stripe form body (``enabled_events[0]=a&metadata[k]=v``) as the object its schema describes."""
    result: dict[str, Any] = {}
    for key, value in parse_qsl(body.decode(), keep_blank_values=True):
        parts = re.findall(r"[^\[\]]+|\[\]", key)
        target: Any = result
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            following = parts[i + 1] if not last else None
            container: Any = [] if following is not None and (following == "[]" or following.isdigit()) else {}
            if isinstance(target, list):
                if last:
                    target.append(value)
                    break
                if part == "[]" or int(part) >= len(target):
                    target.append(container)
                target = target[-1] if part == "[]" else target[int(part)]
            elif last:
                target[part] = True if value == "true" else False if value == "false" else value
            else:
                target = target.setdefault(part, container)
    return result


def _body_of(exchange: dict[str, Any]) -> Any:
    raw = exchange["body"]
    if not raw:
        return None
    if "x-www-form-urlencoded" in exchange["content_type"]:
        return form_to_object(raw)
    return json.loads(raw)


def _schema_of(content: dict[str, Any]) -> dict[str, Any] | None:
    for media, schema in content.items():
        if "json" in media or "form" in media:
            return schema.get("schema", schema) if isinstance(schema, dict) else None
    return None


def available() -> bool:
    """Whether the descriptions are beside the project (developers' machines and CI; a user's clone has none)."""
    return SPECS.is_dir()


#: said once, in the run's summary, when the contract checks are skipped
ABSENT = f"contract checks skipped: the platforms' API descriptions are not beside the project ({SPECS})"


def problems(name: str, exchanges: list[dict[str, Any]]) -> list[str]:
    """What in these exchanges the description ``name`` does not describe (empty when all is described).
    Raises FileNotFoundError when the description is absent: callers check ``available()`` first."""
    if load(name) is None:
        raise FileNotFoundError(SPECS / name)
    found: list[str] = []
    for ex in exchanges:
        where = f"{ex['method']} {ex['path']}"
        op = operation(name, ex["method"], ex["path"])
        if op is None:
            if not any(re.fullmatch(re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(op)), where.split("?")[0])
                       for allowed_name, op in ALLOWED if allowed_name == name):  # fmt: skip
                found.append(f"{name}: {where} is not a described operation")
            continue
        declared = {p["name"] for p in op.get("parameters", []) if p.get("in") == "query"}
        for key, _ in parse_qsl(ex["query"], keep_blank_values=True):
            base = key.split("[")[0]
            if base not in declared and (name, f"query {base}") not in ALLOWED:
                found.append(f"{name}: {where}: query parameter {base!r} is not described")
        body = _body_of(ex)
        request = op.get("requestBody") or {}
        if body is not None and request:
            schema = _schema_of(request.get("content", {}))
            if schema is not None:
                found += [f"{name}: {where}: request body {e}" for e in _errors(name, schema, body)]
        status = ex["status"] or 0
        answer = (op.get("responses") or {}).get(str(status)) or {}
        if 200 <= status < 300 and answer.get("schema") and ex["response"]:
            found += [
                f"{name}: {where}: {status} response {e}" for e in _errors(name, answer["schema"], json.loads(ex["response"]))
            ]
    return sorted(set(found))


def counted(name: str, exchanges: list[dict[str, Any]]) -> dict[str, int]:
    """How many described operations and schemas these exchanges exercised."""
    ops = {
        operation(name, ex["method"], ex["path"])["operationId"] for ex in exchanges if operation(name, ex["method"], ex["path"])
    }
    return {"operations": len(ops)}
