"""``reconcile payouts --write-deposits``: a gift's ``deposit_date`` and ``deposited_amount`` set from the
payout that brought its money to the bank, so LGL's deposit reports match the bank statement. One paced
``PATCH /gifts/{id}`` per gift, recorded in the ledger (``deposit:<external id>``), never sent twice for
the same payout."""

from __future__ import annotations

from synctool import store
from synctool.crm import gifts
from synctool.errors import Skip
from synctool.platforms.job import Job
from synctool.platforms.webhook import Event
from synctool.queue.jobs import Outcome


def deposit(event: Event, job: Job) -> Outcome:
    details = event.payload
    ext, payout_id = job.row["external_id"], details["payout_id"]
    entry = gifts.recorded(job.conn, ext)
    if entry is None or entry["state"] != "done":
        raise Skip(f"no CRM gift {ext} in the ledger; `synctool reconcile` lists it as missing")
    key = f"deposit:{ext}"
    done = job.conn.execute("SELECT crm_id FROM crm_writes WHERE key = ?", (key,)).fetchone()
    if done is not None and done["crm_id"] == payout_id:
        raise Skip(f"CRM gift {entry['crm_id']} already carries payout {payout_id}'s deposit")
    # a payout in another currency than the organisation's is held until a person says what the bank credited
    settled = job.money("deposit", f"{key}:{payout_id}", details["deposited_amount"], details.get("currency"), ext)
    job.crm.update_gift(entry["crm_id"], {"deposit_date": details["deposit_date"], "deposited_amount": float(settled.amount)})
    with job.unit.gather():
        store.put_row(
            job.conn,
            "crm_writes",
            {"key": key},
            {"kind": "deposit", "state": "done", "crm_id": payout_id, "job_id": job.row["id"], "updated_at": store.iso()},
        )
    return Outcome(
        "succeeded",
        f"CRM gift {entry['crm_id']}: deposited {settled.amount} on {details['deposit_date']} (payout {payout_id})",
        crm_gift_id=entry["crm_id"],
    )
