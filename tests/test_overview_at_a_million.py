"""The overview at a million records: the campaigns with gifts in a window come from ``job_campaigns``, kept by
triggers as jobs and deliveries change; they equal what every job's payload and delivery say. The timings at
1,000,000 records are in bench/ (``staff_page.py``'s first requests, ``startup.py --rows``)."""

from __future__ import annotations

import json
import random
from datetime import timedelta

from synctool import store
from synctool.queue import log

#: the campaigns of the window the slow way: every gift job's payload and delivery read (what the table replaced),
#: the JSON read here rather than by the engine's JSON functions (SQLite's and PostgreSQL's differ)
SLOW = (
    "SELECT j.payload, d.body, j.entity_id, j.created_at FROM jobs j LEFT JOIN deliveries d ON d.id = j.delivery_id"
    " WHERE j.source = ? AND j.target = 'crm' AND j.entity_type = 'transaction' AND j.created_at >= ?"
)


def _at(raw, *path):
    """The value at ``path`` in the JSON text ``raw`` (None when it is not JSON or has no such value)."""
    try:
        found = json.loads(raw)
    except (TypeError, ValueError):
        return None
    for key in path:
        found = found.get(key) if isinstance(found, dict) else None
    return found


def slow(conn, source: str, since: str) -> list[tuple]:
    groups: dict[tuple, tuple[set, str]] = {}
    for payload, body, entity_id, created_at in conn.execute(SLOW, (source, since)):
        campaign = _at(payload, "transaction", "campaign_id")
        if campaign is None and body is not None:
            campaign = _at(bytes(body).decode("utf-8", "replace"), "data", "campaign_id")
        if campaign is None:
            continue
        key = (type(campaign).__name__, str(campaign))  # 118722 and "118722" are two campaigns, as the JSON gave them
        entities, latest = groups.get(key, (set(), created_at))
        groups[key] = ({*entities, entity_id}, max(latest, created_at))
    return sorted((key[1], len(entities), latest) for key, (entities, latest) in groups.items())


def fast(conn, source: str, since: str) -> list[tuple]:
    found = log.gifts_by_campaign(conn, source, since)
    assert [r["last_gift_at"] for r in found] == sorted((r["last_gift_at"] for r in found), reverse=True)
    return sorted((r["campaign_id"], r["gifts"], r["last_gift_at"]) for r in found)


def test_the_campaigns_of_a_window_follow_every_job_and_delivery_change(db):
    rng = random.Random(51)
    now = store.utcnow()
    campaigns = [118722, "118722", 5, "c-7", None]

    def body(campaign) -> bytes:
        return json.dumps({"data": {"id": "x", **({} if campaign is None else {"campaign_id": campaign})}}).encode()

    def payload(campaign) -> str | None:
        return rng.choice([None, "not json", json.dumps({"transaction": {"campaign_id": campaign}}) if campaign else "{}"])

    with store.atomic(db):
        deliveries = [
            db.execute(
                "INSERT INTO deliveries (source, event_id, received_at, body) VALUES (?, ?, ?, ?)",
                ("donations", f"evt-{n}", store.iso(now), rng.choice([body(rng.choice(campaigns)), b"not json"])),
            ).lastrowid
            for n in range(40)
        ]
        ids = []
        for n in range(300):
            created = store.iso(now - timedelta(days=rng.choice([0, 1, 29, 30, 31]), seconds=rng.randint(0, 9000)))
            row = {
                "id": f"job-{n:05d}",
                "source": rng.choice(["donations", "pos"]),
                "target": rng.choice(["crm"] * 5 + ["mailing"]),
                "entity_type": rng.choice(["transaction"] * 5 + ["refund"]),
                "entity_id": str(rng.randint(0, 30)),  # gifts with several jobs
                "delivery_id": rng.choice([None, *deliveries]),
                "payload": payload(rng.choice(campaigns)),
                "run_after": created,
                "created_at": created,
                "updated_at": created,
            }
            db.execute(f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
            ids.append(row["id"])
            if n % 25 == 0:  # a second job of the same gift at the same moment (a re-delivery)
                db.execute(f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                           (f"job-{n:05d}-again", *list(row.values())[1:]))  # fmt: skip
                ids.append(f"job-{n:05d}-again")
    windows = [store.iso(now - timedelta(days=d, seconds=s)) for d in (0, 1, 2, 29, 30, 400) for s in (0, 1800, 3599)]

    def same() -> None:
        for source in ("donations", "pos"):
            for since in windows:
                assert fast(db, source, since) == slow(db, source, since), (source, since)
        counted = db.execute(  # the hourly counters as their rows say: each gift in the hour of its latest job
            "SELECT source, substr(latest, 1, 13), campaign_id, count(*) FROM (SELECT source, campaign_id,"
            " max(created_at) AS latest FROM job_campaigns GROUP BY source, campaign_id, entity_id) GROUP BY 1, 2, 3"
        ).fetchall()
        kept = db.execute("SELECT source, hour, campaign_id, gifts FROM campaign_hours WHERE gifts != 0").fetchall()
        assert sorted(map(tuple, kept), key=repr) == sorted(map(tuple, counted), key=repr)

    same()
    assert fast(db, "donations", windows[-1])  # the fixture names campaigns
    with store.atomic(db):
        for job_id in rng.sample(ids, 60):
            db.execute("UPDATE jobs SET payload = ? WHERE id = ?", (payload(rng.choice(campaigns)), job_id))
        for job_id in rng.sample(ids, 30):
            db.execute("UPDATE jobs SET delivery_id = ? WHERE id = ?", (rng.choice([None, *deliveries]), job_id))
        for job_id in rng.sample(ids, 20):
            db.execute("UPDATE jobs SET entity_type = ?, target = ? WHERE id = ?", (rng.choice(["transaction", "refund"]),
                       rng.choice(["crm", "mailing"]), job_id))  # fmt: skip
        for job_id in rng.sample(ids, 20):
            db.execute("UPDATE jobs SET created_at = ?, source = ? WHERE id = ?", (store.iso(now - timedelta(days=40)),
                       rng.choice(["donations", "pos"]), job_id))  # fmt: skip
        for job_id in rng.sample(ids, 40):
            db.execute("UPDATE jobs SET status = 'succeeded', entity_id = ? WHERE id = ?", (str(rng.randint(0, 30)), job_id))
        for job_id in rng.sample(ids, 30):
            db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
    same()
    named = [r[0] for r in db.execute(f"SELECT id FROM deliveries d WHERE ({store.DELIVERY_CAMPAIGN.format('d')}) IS NOT NULL")]
    with store.atomic(db):  # prune drops old bodies (a delivery's campaign goes with its body); a body is written once
        moved = rng.sample(named, 5)  # were a body to name another campaign, its jobs would follow
        for delivery in moved:
            db.execute("UPDATE deliveries SET body = ? WHERE id = ?", (body("moved"), delivery))
        for delivery in rng.sample([d for d in deliveries if d not in moved], 15):
            db.execute("UPDATE deliveries SET body = X'', body_pruned_at = ? WHERE id = ?", (store.iso(now), delivery))
    same()
    with store.atomic(db):
        db.execute("DELETE FROM jobs")
    assert fast(db, "donations", windows[-1]) == [] and db.execute("SELECT count(*) FROM job_campaigns").fetchone()[0] == 0
