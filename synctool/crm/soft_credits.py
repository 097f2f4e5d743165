"""Soft credits: the fundraiser whose page took a gift gets a related gift in the CRM.

LGL records a soft credit as a gift on the crediting constituent whose gift type is "Soft Credit" and whose
``parent_gift_id`` names the donor's gift (lgl.md, "Soft credits and acknowledgements"). Each is made exactly
once like any gift (``gifts.create_once``: its own external id ``<gift external id>_sc_<fundraiser id>`` in
the ledger), is not money (deductible 0, no acknowledgement, never counted by reconcile), and follows its
gift's refunds: lowered with it, deleted with it (``follow``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from synctool import settings
from synctool.crm import gifts
from synctool.crm.client import CrmClient
from synctool.queue.unit import Unit

if TYPE_CHECKING:
    from synctool import store
    from synctool.config import Config

GIFT_TYPE = "Soft Credit"
#: the external id's marker: ``donations_abc_sc_42`` is the soft credit of gift ``donations_abc`` to fundraiser 42
MARK = "_sc_"
#: the run-time setting that wins over ``soft_credits.enabled``
SETTING = "soft_credits_enabled"


def enabled(conn: store.Connection, config: Config) -> bool:
    return bool(settings.get(conn, SETTING, config.soft_credits.enabled))


def external_id(gift_external_id: str, fundraiser_id: str) -> str:
    return f"{gift_external_id}{MARK}{fundraiser_id}"


def is_soft_credit(gift: Mapping[str, object]) -> bool:
    """Whether a CRM gift is a soft credit (by its type, or by synctool's external id)."""
    return gift.get("gift_type_name") == GIFT_TYPE or MARK in str(gift.get("external_id") or "")


def body(parent: Mapping[str, object], parent_gift_id: str, fundraiser_id: str, fundraiser: str) -> dict[str, object]:
    """The soft credit of the donor's gift ``parent`` (its body as synctool sent it) for one fundraiser."""
    amount = parent["received_amount"]
    return {
        "external_id": external_id(str(parent["external_id"]), fundraiser_id),
        "gift_type_name": GIFT_TYPE,
        "parent_gift_id": int(parent_gift_id),
        "received_amount": amount,
        "received_date": parent["received_date"],
        "deductible_amount": 0.0,
        "ack_template_name": "do_not_ack",  # the fundraiser did not give this money
        **{k: parent[k] for k in ("fund_id", "campaign_id", "appeal_id") if parent.get(k)},
        "note": f"Soft credit: {fundraiser} raised gift {parent['external_id']} on their fundraising page",
    }


def of_gift(conn: store.Connection, gift_external_id: str) -> list[store.Row]:
    """The ledger's soft credits of one gift."""
    prefix = gift_external_id + MARK  # the keys that start so: a range the key's index reads, exact as a prefix
    after = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return conn.execute(
        "SELECT * FROM crm_writes WHERE kind = 'gift' AND key >= ? AND key < ? AND substr(key, 1, ?) = ? ORDER BY key",
        (prefix, after, len(prefix), prefix),
    ).fetchall()


def follow(crm: CrmClient, work: Unit, gift_external_id: str) -> list[str]:
    """Bring the gift's soft credits in step with it after a refund: the amount it now holds, or deleted
    with it. Idempotent (a soft credit already in step costs nothing); returns what it did, in words."""
    conn = work.conn
    parent = gifts.recorded(conn, gift_external_id)
    if parent is None:
        return []
    done = []
    for credit in of_gift(conn, gift_external_id):
        if credit["state"] != "done":
            continue
        if parent["state"] == "deleted":
            crm.delete_gift(credit["crm_id"])
            gifts.record_deleted(work, credit["key"])
            done.append(f"soft credit {credit['crm_id']} deleted")
        elif parent["amount"] is not None and credit["amount"] != parent["amount"]:
            crm.update_gift(credit["crm_id"], {"received_amount": float(parent["amount"]), "deductible_amount": 0.0})
            gifts.record_amounts(work, credit["key"], parent["amount"], 0)
            done.append(f"soft credit {credit['crm_id']} {credit['amount']} -> {parent['amount']}")
    return done
