"""Givebutter's record of its webhook deliveries (``GET /v1/webhooks/{id}/activities``, givebutter-square.md
A7): each attempt with its status and the payload it sent. There is no redelivery endpoint, so a failed one is
replayed from that payload (``synctool webhooks heal``).

The status words are not enumerated in the API description: an attempt counts as failed unless its status
reads as a success (success, succeeded, delivered, sent, ok, 2xx). An event delivered on a later attempt is
received, whatever its failed attempts say (``webhooks heal`` skips what the receiver has). Costs one request
for the webhooks, then one per page of 100 activities of synctool's webhook (the list's order and any date
filter are undocumented, so every page is read).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from synctool.platform import Missed, Runtime, parse_iso, using

if TYPE_CHECKING:
    from synctool.platform import Connection

SUCCESS = ("success", "succeeded", "delivered", "sent", "ok")


def succeeded(activity: dict[str, Any]) -> bool:
    status = str(activity.get("status") or "").strip().lower()
    return status in SUCCESS or status.startswith("2")


def missed(conn: Connection, rt: Runtime, since: str) -> tuple[list[Missed], int]:
    """The failed deliveries to synctool's donations route since ``since`` (ISO), one per event, oldest first."""
    start = parse_iso(since)
    found: dict[str, Missed] = {}
    delivered: set[str] = set()
    with using(rt, "donations") as client:
        for hook in client.webhooks():
            if not str(hook.get("url") or "").rstrip("/").endswith("/webhooks/donations"):
                continue
            for activity in client.activities(str(hook["id"])):
                when = parse_iso(str(activity.get("created_at") or ""))
                if start is not None and (when is None or when < start):
                    continue  # the order of the list is not documented: every page is read
                envelope = activity.get("payload")
                if not isinstance(envelope, dict) or not envelope.get("event"):
                    continue  # nothing to replay
                given = envelope.get("data")
                data: dict[str, Any] = given if isinstance(given, dict) else {}
                event_id = str(envelope.get("id") or (f"{envelope['event']}:{data.get('id')}" if data.get("id") else ""))
                if not event_id:
                    continue
                if succeeded(activity):
                    delivered.add(event_id)
                    continue
                why = f"{activity.get('status')}: {activity.get('status_description') or 'no description'}"
                body = json.dumps(envelope).encode()
                found.setdefault(event_id, Missed(event_id, str(envelope["event"]), str(activity.get("created_at")), body, why))
        spent = client.api.requests_sent
    return sorted((m for key, m in found.items() if key not in delivered), key=lambda m: m.at), spent
