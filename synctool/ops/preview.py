"""Preview mode: `synctool sync-mode` and `synctool preview` (``crm/preview.py`` holds the writes back;
drain runs preview jobs on a copy of the database).

In ``preview`` every rule runs and nothing is written to the CRM: each CRM job ends ``previewed`` with its
plan. Switching to ``live`` queues the previewed jobs to run for real.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypedDict

from synctool import settings, store
from synctool.crm import references, soft_credits
from synctool.errors import InvalidInput
from synctool.queue import jobs, log
from synctool.validation import Body


class ModeBody(Body):
    mode: Literal["live", "preview"]


class SyncMode(TypedDict):
    """The sync mode, the previewed jobs a switch to live queued, and those still previewed."""

    mode: str
    queued_for_real: int
    previewed: int


def set_mode(conn: store.Connection, body: ModeBody | None = None) -> SyncMode:
    """Show or switch the sync mode; going live queues every previewed job to run for real."""
    released = 0
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, settings.MODE_SETTING, body.mode)
            if body.mode == "live":
                released = jobs.release_previewed(conn)
    waiting = log.previewed_count(conn)
    return {"mode": settings.sync_mode(conn), "queued_for_real": released, "previewed": waiting}


def _gift(writes: list[dict[str, Any]]) -> dict[str, Any]:
    return next(
        (
            w["body"] or {}
            for w in writes
            if w["method"] == "POST" and str(w["path"]).endswith("/gifts") and not soft_credits.is_soft_credit(w["body"] or {})
        ),
        next((w["body"] or {} for w in writes if w["method"] == "PATCH" and str(w["path"]).startswith("/gifts/")), {}),
    )


def _extras(writes: list[dict[str, Any]]) -> str | None:
    """What else the job would write beside its gift: a soft credit, a new contact point for the donor."""
    extras = []
    for w in writes:
        body, path = w["body"] or {}, str(w["path"])
        if w["method"] == "POST" and soft_credits.is_soft_credit(body):
            extras.append(f"soft credit to #{path.split('/')[2]}")
        elif w["method"] == "POST" and path.rsplit("/", 1)[-1] in ("email_addresses", "phone_numbers", "street_addresses"):
            extras.append(f"new {path.rsplit('/', 1)[-1].replace('_', ' ')[:-2]} for #{path.split('/')[2]}")
    return "; ".join(extras) or None


def plans(conn: store.Connection, *, limit: int = 200) -> dict[str, Any]:
    """The previewed jobs, newest first: donor, decision, amount, fund, date, and the exact bodies."""
    if not 1 <= limit <= 1000:
        raise InvalidInput("limit must be between 1 and 1000")
    items = []
    for row in log.previewed(conn, limit):
        plan = json.loads(row["plan"] or "{}")
        gift = _gift(plan.get("writes") or [])
        fund = references.find(conn, "funds", gift.get("fund_id")) if gift.get("fund_id") else None
        items.append(
            {
                "job_id": row["id"],
                "source": row["source"],
                "what": f"{row['entity_type']} {row['entity_id']}",
                "donor": " ".join(p for p in (row["name"], f"<{row['email']}>" if row["email"] else None) if p) or None,
                "decision": plan.get("decision"),
                "ends": plan.get("ends"),
                "amount": gift.get("received_amount"),
                "fund": (fund or {}).get("name") or gift.get("fund_name") or gift.get("fund_id"),
                "date": gift.get("received_date"),
                "ack": gift.get("ack_template_name") or ("CRM default" if gift else None),
                "extras": _extras(plan.get("writes") or []),
                "crm_writes": len(plan.get("writes") or []),
                "message": plan.get("message"),
                "writes": plan.get("writes") or [],
            }
        )
    return {"mode": settings.sync_mode(conn), "items": items}
