"""`synctool backfill`: the history before install, queued through the normal path; only what is new;
its estimate against what drain then spends."""

from __future__ import annotations

import copy
import json

from synctool.fakes import samples
from tests.flow_helpers import give, run_drain


def txn(txn_id: str, day: str, email: str) -> dict:
    t = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    t.update({"id": txn_id, "amount": 40, "email": email, "last_name": email.split("@")[0].title(),
              "transacted_at": f"{day}T15:00:00+00:00", "created_at": f"{day}T15:00:00+00:00"})  # fmt: skip
    return t


def test_backfill_queues_only_what_is_new_and_its_estimate_holds(coded, receiver, cli, db):
    gb = coded.givebutter
    history = [txn(f"H{n:03d}", f"2026-0{1 + n % 6}-{1 + n % 27:02d}", f"donor{n % 18}@example.org") for n in range(45)]
    for t in history:
        gb.add_transaction(t)
    for t in history[:10]:  # these came in by webhook after install
        give(receiver, t)
    run_drain()
    dry = cli("backfill", "--since", "2026-01-01", "--until", "2026-06-30", "--source", "donations", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert (
        "45 transaction(s)" in dry.stdout
        and "10 already synced, 35 new" in dry.stdout
        and "dry run: nothing queued" in dry.stdout
    )
    assert not [p for (p,) in db.execute("SELECT payload FROM jobs") if p and json.loads(p).get("origin") == "backfill"]
    result = json.loads(cli("backfill", "--since", "2026-01-01", "--until", "2026-06-30", "--json").stdout)
    assert result["queued"] == 35
    estimated = result["estimate"]["crm_requests"]
    mark = len(coded.crm.requests)
    run_drain()
    spent = len(coded.crm.requests) - mark
    assert len({g["external_id"] for g in coded.crm.gifts.values()}) == len(coded.crm.gifts) == 45
    print(f"backfill estimate {estimated} vs spent {spent}")
    assert abs(estimated - spent) <= 0.2 * spent, (estimated, spent)
    again = json.loads(cli("backfill", "--since", "2026-01-01", "--until", "2026-06-30", "--json").stdout)
    assert (again["new"], again["queued"]) == (0, 0)


def test_backfill_needs_a_start(cli, db):
    assert cli("backfill").exit_code == 2
    assert cli("backfill", "--since", "2026-01-01", "--source", "mailing").exit_code == 2
