"""The CRM's side of a reconcile: the period's gifts (one search, at the largest page synctool asks for), the gifts
synctool made for it but dated elsewhere, and synctool's ledger (``crm_writes``) of which gift it made for what."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from synctool import platforms
from synctool.crm import environment as crm_environment
from synctool.crm import soft_credits
from synctool.crm.client import search_params
from synctool.platforms.reconcile import Expected
from synctool.queue import jobs
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store
    from synctool.crm.client import CrmClient

PAGE = 250
#: a CRM gift as the CRM's API returns it (its JSON, unparsed)
CrmGift = dict[str, Any]


@contextmanager
def crm_client(conn: store.Connection, rt: Runtime, client: CrmClient | None) -> Iterator[CrmClient]:
    """``client``, or one opened for the active environment and closed after."""
    if client is not None:
        yield client
        return
    owned = crm_environment.open_client(conn, rt)
    try:
        yield owned
    finally:
        owned.close()


def rows_by_key(conn: store.Connection, select: str, column: str, keys: Iterable[str]) -> dict[str, store.Row]:
    """``select`` (``SELECT ... FROM table``) for the rows whose ``column`` is one of ``keys``, 500 at a time."""
    keys = list(keys)
    found: dict[str, store.Row] = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        found.update({r[column]: r for r in conn.execute(f"{select} WHERE {column} IN ({marks})", chunk)})
    return found


def ledger_rows(conn: store.Connection, keys: Iterable[str]) -> dict[str, store.Row]:
    """synctool's ledger rows (``crm_writes``) for these external ids."""
    return rows_by_key(conn, "SELECT key, state, crm_id, job_id FROM crm_writes", "key", keys)


def gifts_by_id(crm: CrmClient, gift_ids: list[str]) -> dict[str, CrmGift]:
    """The CRM's gifts with these ids (the ones it still holds), 100 ids a search."""
    found: dict[str, CrmGift] = {}
    for chunk in (gift_ids[i : i + 100] for i in range(0, len(gift_ids), 100)):
        for g in crm.iter_items("/gifts/search", search_params({"gift_ids": ",".join(chunk)}), page_size=PAGE):
            found[str(g.get("id"))] = g
    return found


def source_of_gift(external_id: str) -> str | None:
    """The role whose gifts carry this external id's prefix; None when no platform's prefix fits."""
    return next(
        (p.role for p in platforms.registered() for prefix in p.external_id_prefixes if external_id.startswith(prefix)), None
    )


def source_of(conn: store.Connection, gift: CrmGift, made: dict[str, store.Row]) -> str:
    """The platform a synctool gift came from: its external id's prefix, else the source of the job that made it."""
    ext = str(gift.get("external_id") or "")
    found = source_of_gift(ext)
    if found is None and ext in made and made[ext]["job_id"]:
        job = jobs.get(conn, made[ext]["job_id"])
        found = job["source"] if job is not None else None
    return found or "unknown"


@dataclass
class CrmSide:
    """What the CRM holds for a period, as one reconcile read it."""

    #: every gift of the period, soft credits too
    listed: list[CrmGift]
    #: synctool's gifts of the period (no soft credit), by external id
    by_ext: dict[str, CrmGift]
    #: the period's gifts made by other tools (no synctool external id)
    others: list[CrmGift]
    #: the ledger's rows of the gifts in ``by_ext``
    made: dict[str, store.Row]
    #: the ledger's rows of the platform items with no gift in the period
    ledger: dict[str, store.Row]
    #: the gifts synctool made for the period's items but dated outside it, by external id
    elsewhere: dict[str, CrmGift]
    soft_count: int
    requests: int

    @property
    def read(self) -> dict[str, CrmGift]:
        """Every gift read, by id."""
        return {str(g.get("id")): g for g in [*self.listed, *self.elsewhere.values()]}


def read_crm(conn: store.Connection, crm: CrmClient, dates: tuple[date, date], expected: list[Expected]) -> CrmSide:
    """The period's gifts (a soft credit is not money: never extra, never in a total, crm/soft_credits.py), split
    into synctool's (its external id prefixes, or an id in its ledger: a platform's without a prefix) and the
    rest, which are other tools'; and, in one search, the gifts synctool made for this period's money but dated
    outside it."""
    first, last = dates
    sent_before = crm.requests_sent
    clauses = search_params({"date_from": str(first), "date_to": str(last)})
    listed = [g for page in crm.iter_pages("/gifts/search", clauses, page_size=PAGE) for g in page]
    in_period = [g for g in listed if not soft_credits.is_soft_credit(g)]
    made = ledger_rows(conn, {str(g["external_id"]) for g in in_period if g.get("external_id")})
    by_ext: dict[str, CrmGift] = {}
    others: list[CrmGift] = []
    for g in in_period:
        ext = str(g.get("external_id") or "")
        if ext and (source_of_gift(ext) or ext in made):
            by_ext[ext] = g
        else:
            others.append(g)
    ledger = ledger_rows(conn, {item.external_id for item in expected} - set(by_ext))
    elsewhere_ids = [r["crm_id"] for r in ledger.values() if r["state"] == "done" and r["crm_id"]]
    elsewhere = {str(g.get("external_id")): g for g in gifts_by_id(crm, elsewhere_ids).values()}
    return CrmSide(listed, by_ext, others, made, ledger, elsewhere, len(listed) - len(in_period), crm.requests_sent - sent_before)
