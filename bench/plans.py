"""Monthly donors (issue 53): CRM requests for a year of Givebutter monthly donors, measured at the CRM fake.

``--donors`` donors start a monthly plan (its first charge seconds before it), then a year month by month: every
giving plan is charged; ``--failures`` plans fail once (Givebutter's retry takes the next month: charged again),
``--cancellations`` are canceled, ``--resumed`` are paused and resumed three months later (charged again), and
``--changed`` change their amount. Webhooks go through the receiver (in process), the queue is drained after each
month, with the plans group, contact report type and team member mapped and charges coded recurring.

The floor: one request per membership started (each donor, and each resumed donor again) or ended (each canceled
or paused donor), one per contact report (each failure, pause and cancellation), one read per uncertain create (none
here: no faults), nothing for a charge of a donor already in the group; plus each gift's own: one gift POST per
charge and one constituent create per new donor (``requests_per_gift.py``'s floor). Prints the requests by kind,
measured / floor (goal within 5 %), and the time.

    python bench/plans.py [--donors 500] [--failures 40] [--cancellations 25] [--resumed 10] [--changed 15]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

GROUP, CALL, TEAM = 704, 2183, "tom@example.org"


def kind(method: str, path: str) -> str:
    path = re.sub(r"/\d+", "/{id}", path.removeprefix("/api/v1"))
    return f"{method} {path}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--donors", type=int, default=500)
    parser.add_argument("--failures", type=int, default=40)
    parser.add_argument("--cancellations", type=int, default=25)
    parser.add_argument("--resumed", type=int, default=10)
    parser.add_argument("--changed", type=int, default=15)
    args = parser.parse_args()
    assert args.failures + args.cancellations + args.resumed + args.changed <= args.donors

    from fake_world import fake_world
    from starlette.testclient import TestClient

    from synctool import mappings, settings
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.ops import mappings as mapping_ops
    from synctool.platforms.runner import runner
    from synctool.queue.worker import drain
    from synctool.web.receiver import create_app

    began = time.perf_counter()
    with fake_world("synctool-plans-", limit=1_000_000, window_s=1.0, interval_ms=0.0) as (world, rt, conn):
        gb, crm = world.givebutter, world.crm
        mapping_ops.set_type_default(conn, "donations:recurring", fund_id=2398, gift_category_id=5940)
        mappings.put(conn, "plans", "*", {"group_id": GROUP, "contact_report_type_id": CALL, "team_member": TEAM})
        settings.put(conn, "plans_report_changes", "on")
        mark = len(crm.requests)  # the set-up's reference reads (crm refresh) are not the plans'
        headers = {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]}
        drained: Counter[str] = Counter()

        def drain_all() -> None:
            while True:
                summary = drain(runner(rt), max_seconds=60)
                drained.update({"succeeded": summary.succeeded, "failed": summary.failed})
                left = conn.execute("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')").fetchone()[0]
                if not left:
                    return
                if summary.claimed == 0:
                    time.sleep(0.2)

        with TestClient(create_app(rt)) as client:

            def deliver(body: bytes) -> None:
                r = client.post("/webhooks/donations", content=body, headers=headers)
                assert r.status_code == 200, r.text

            gb.deliver = deliver
            start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=372)
            at = lambda m, n: start + timedelta(days=30 * m, minutes=n)  # noqa: E731
            n = 0
            fail = {n: 2 + n % 8 for n in range(args.failures)}
            cancel = {n: 3 + n % 8 for n in range(args.failures, args.failures + args.cancellations)}
            first = args.failures + args.cancellations
            pause = {n: 3 + n % 4 for n in range(first, first + args.resumed)}
            change = {n: 2 + n % 9 for n in range(first + args.resumed, first + args.resumed + args.changed)}
            plans = [gb.create_plan(f"donor{n}@example.org", "Donor", f"Monthly{n}", 10 + 5 * (n % 5), at=at(0, n))
                     for n in range(args.donors)]  # fmt: skip
            drain_all()
            for m in range(1, 12):
                for n, plan in enumerate(plans):
                    pid, status = plan["id"], gb.plans[plan["id"]]["status"]
                    if status in ("cancelled",):
                        continue
                    if change.get(n) == m:
                        gb.change_plan(pid, at=at(m, n), amount=float(plan["amount"]) + 5)
                    if cancel.get(n) == m:
                        gb.cancel_plan(pid, at=at(m, n) + timedelta(hours=1))
                    elif pause.get(n) == m:
                        gb.pause_plan(pid, at=at(m, n) + timedelta(hours=1))
                    elif n in pause and pause[n] + 3 == m:
                        gb.resume_plan(pid, at=at(m, n))
                        gb.charge_plan(pid, at=at(m, n) + timedelta(hours=2))
                    elif fail.get(n) == m:
                        gb.fail_plan(pid, at=at(m, n) + timedelta(hours=1))
                    elif status in ("active", "past_due"):
                        gb.charge_plan(pid, at=at(m, n) + timedelta(hours=2))
                drain_all()
        elapsed = time.perf_counter() - began

        # -- measured, by kind ---------------------------------------------------------------------------------------
        sent = crm.requests[mark:]
        kinds = Counter(kind(r["method"], r["path"]) for r in sent)
        started = kinds["POST /constituents/{id}/group_memberships"]
        ended = kinds["PATCH /group_memberships/{id}"]
        reports = kinds["POST /constituents/{id}/contact_reports"]
        reads = kinds["GET /constituents/{id}/group_memberships"] + kinds["GET /constituents/{id}/contact_reports"]
        gift_posts = kinds["POST /gifts"] + kinds["POST /constituents/{id}/gifts"]
        creates = kinds["POST /constituents"]
        measured = len(sent)
        # -- the floor, from what happened ---------------------------------------------------------------------------
        charges = len(gb.transactions)
        floor_started = args.donors + args.resumed
        floor_ended = args.cancellations + args.resumed
        floor_reports = args.failures + args.cancellations + args.resumed
        floor = floor_started + floor_ended + floor_reports + charges + args.donors
        current = sum(1 for g in crm.group_memberships.values() if g["group_id"] == GROUP and g["is_current"])
        giving = sum(1 for p in gb.plans.values() if p["status"] in ("active", "past_due"))
        print(
            f"plans: {args.donors} monthly donors over a year ({args.failures} failures, {args.cancellations} "
            f"cancellations, {args.resumed} paused and resumed, {args.changed} changed amounts); {charges} charges; "
            f"jobs {drained['succeeded']} succeeded, {drained['failed']} failed; {elapsed:.1f} s"
        )
        print(
            f"  memberships started {started} (floor {floor_started}), ended {ended} (floor {floor_ended}); contact "
            f"reports {reports} (floor {floor_reports}); reads after an uncertain create {reads} (floor 0); gifts "
            f"{gift_posts} (floor {charges}); constituents created {creates} (floor {args.donors})"
        )
        other = measured - started - ended - reports - reads - gift_posts - creates
        print(
            f"  CRM requests: measured {measured}; floor {floor}; measured / floor = {measured / floor:.3f} "
            f"(goal <= 1.05); other requests {other}"
        )
        print(f"  requests by kind: {dict(sorted(kinds.items()))}")
        print(f"  the group: {current} current memberships, {giving} giving plans on Givebutter")


if __name__ == "__main__":
    main()
