"""The tables the features after the first release added: preview, write errors, reconcile's accepted differences,
donor changes and matches, the staff page, the outbox and sign-in limits, currency holds and event invitations."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from synctool.store.times import iso

if TYPE_CHECKING:
    from sqlite_utils import Database


def m007_preview(db: Database) -> None:
    """Preview mode: a job can end ``previewed`` with its ``plan`` (what it would write)."""
    _widen_job_statuses(db.conn, "'skipped', 'failed'", "previewed", "007")
    db.conn.execute("ALTER TABLE jobs ADD COLUMN plan TEXT")


def _widen_job_statuses(conn: sqlite3.Connection, last: str, status: str, migration: str) -> None:
    """Add ``status`` to the jobs table's status CHECK, after the statuses ending in ``last``. Widening a CHECK
    constraint is the one schema change SQLite allows in place (its ALTER TABLE docs, "simpler procedure"): the
    table keeps its rows, its indexes and the attempts that reference it."""
    if hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE"):  # Python 3.12+: a build that starts defensive refuses this
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, False)  # type: ignore[attr-defined]  # 3.12+ only
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'jobs'",
        (f"{last})", f"{last}, '{status}')"),
    )
    if f"'{status}'" not in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'jobs'").fetchone()[0]:
        raise sqlite3.OperationalError(f"migration {migration}: the jobs table's status CHECK was not found")
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.execute("PRAGMA writable_schema = OFF")


def m008_write_errors(db: Database) -> None:
    """An unconfirmed gift write keeps the CRM's answer (or the lost connection) that made it uncertain, so a
    write the confirming search finds absent fails its attempt with the CRM's own error."""
    db.table("crm_writes").add_column("error", str)


def m009_reconcile_accepted(db: Database) -> None:
    """Differences a person reviewed (``synctool reconcile accept``): the item, what was accepted (status and
    both amounts: a new difference on the same item is reported again), the note, who and when."""
    db.table("reconcile_accepted").create(
        {"external_id": str, "status": str, "platform_amount": str, "crm_amount": str, "reason": str, "note": str,
         "accepted_by": str, "accepted_at": str},
        pk="external_id",
        not_null={"external_id", "status", "note", "accepted_by", "accepted_at"},
    )  # fmt: skip


def m010_donor_changes(db: Database) -> None:
    """News about known donors (``synctool donors changes``): a contact point (e-mail, phone, address) a
    matched donor's platform data carried and the CRM lacked, the gift that brought it, and what became of
    it: pending, applied (with the CRM's row id) or dismissed. One row per constituent, kind and value."""
    db.table("donor_changes").create(
        {"id": int, "constituent_id": str, "kind": str, "value": str, "match_key": str, "status": str, "source": str,
         "external_id": str, "job_id": str, "created_at": str, "decided_at": str, "crm_row_id": str},
        pk="id",
        not_null={"constituent_id", "kind", "value", "match_key", "status", "created_at"},
    )  # fmt: skip
    db.conn.execute("CREATE UNIQUE INDEX donor_changes_once ON donor_changes (constituent_id, kind, match_key)")
    db.conn.execute("CREATE INDEX donor_changes_status ON donor_changes (status)")


def m011_staff_page(db: Database) -> None:
    """The staff page (``serve --admin-ui``): one-time sign-in links and the sessions they open, each kept as
    the SHA-256 of its secret (the database never holds a usable link or cookie); and the staff actions,
    who did what through the page or the admin API."""
    db.table("login_links").create(
        {"token_hash": str, "user_id": int, "created_at": str, "expires_at": str, "used_at": str},
        pk="token_hash",
        not_null={"user_id", "created_at", "expires_at"},
    )
    db.table("staff_sessions").create(
        {"id_hash": str, "user_id": int, "csrf": str, "created_at": str, "expires_at": str, "ended_at": str, "flash": str},
        pk="id_hash",
        not_null={"user_id", "csrf", "created_at", "expires_at"},
    )
    db.table("staff_actions").create(
        {"id": int, "at": str, "who": str, "role": str, "via": str, "action": str, "target": str, "note": str,
         "outcome": str},
        pk="id",
        not_null={"at", "who", "via", "action"},
    )  # fmt: skip
    db.conn.execute("CREATE INDEX staff_actions_target ON staff_actions (target)")


def m012_donor_matches(db: Database) -> None:
    """Known donors under a new e-mail (``donors.matching``): a gift's job can wait as ``review`` while a person
    decides who its donor is (``donor_matches``: the donor, the candidates with their evidence, the decision).
    The mirror's addresses and phones are indexed by the keys the matching compares (postal code, phone's last
    ten digits). The status CHECK is widened in place, as migration 007 did."""
    conn = db.conn
    _widen_job_statuses(conn, "'failed', 'previewed'", "review", "012")
    db.table("donor_matches").create(
        {"id": int, "job_id": str, "source": str, "external_id": str, "email": str, "donor": str, "candidates": str,
         "why": str, "status": str, "constituent_id": str, "decided_by": str, "decided_at": str, "created_at": str},
        pk="id",
        not_null={"job_id", "status", "created_at"},
    )  # fmt: skip
    conn.execute("CREATE INDEX donor_matches_status ON donor_matches (status)")
    conn.execute("CREATE INDEX donor_matches_job ON donor_matches (job_id)")
    conn.execute(
        "CREATE INDEX crm_constituent_addresses_postal ON crm_constituent_addresses"
        " (upper(substr(replace(replace(postal_code, ' ', ''), '-', ''), 1, 5)))"
    )
    conn.execute("CREATE INDEX crm_constituent_phones_suffix ON crm_constituent_phones (substr(digits, -10))")


def m013_safe_on_the_internet(db: Database) -> None:
    """Mail waits in an ``outbox`` that drain sends (never inside a request); "send me a link" requests are
    counted per address and per client (``sign_in_requests``, as digests) for their rate limits; a delivery whose
    raw body was dropped by ``retention.raw_bodies_days`` says when (``body_pruned_at``); a link or session
    ended by a deactivation stays ended (``revoked_at``)."""
    conn = db.conn
    db.table("outbox").create(
        {"id": int, "kind": str, "user_id": int, "recipients": str, "subject": str, "body": str, "html": str,
         "created_at": str, "send_after": str, "attempts": int, "sent_at": str, "last_error": str},
        pk="id",
        not_null={"kind", "created_at", "send_after"},
        defaults={"attempts": 0},
    )  # fmt: skip
    conn.execute("CREATE INDEX outbox_due ON outbox (sent_at, send_after)")
    db.table("sign_in_requests").create(
        {"id": int, "at": str, "email_hash": str, "client_hash": str},
        pk="id",
        not_null={"at", "email_hash", "client_hash"},
    )
    conn.execute("CREATE INDEX sign_in_requests_email ON sign_in_requests (email_hash, at)")
    conn.execute("CREATE INDEX sign_in_requests_client ON sign_in_requests (client_hash, at)")
    conn.execute("ALTER TABLE deliveries ADD COLUMN body_pruned_at TEXT")
    conn.execute("ALTER TABLE login_links ADD COLUMN revoked_at TEXT")
    conn.execute("ALTER TABLE staff_sessions ADD COLUMN revoked_at TEXT")
    now = iso()
    for table in ("login_links", "staff_sessions"):  # users deactivated before this version stay out when reactivated
        conn.execute(f"UPDATE {table} SET revoked_at = ? WHERE user_id IN (SELECT id FROM users WHERE active = 0)", (now,))


def m014_currency_holds(db: Database) -> None:
    """One currency (``organisation.currency``): a gift, refund or payout line in another currency holds its job as
    ``review`` (``currency_holds``: the money line's key, its amount and currency, the decision: released at the
    amount the bank credited, or resolved)."""
    conn = db.conn
    db.table("currency_holds").create(
        {"id": int, "job_id": str, "source": str, "kind": str, "key": str, "external_id": str, "amount": str,
         "currency": str, "organisation_currency": str, "status": str, "released_amount": str, "decided_by": str,
         "decided_at": str, "created_at": str},
        pk="id",
        not_null={"job_id", "kind", "key", "amount", "currency", "status", "created_at"},
    )  # fmt: skip
    conn.execute("CREATE INDEX currency_holds_status ON currency_holds (status)")
    conn.execute("CREATE INDEX currency_holds_job ON currency_holds (job_id)")
    conn.execute("CREATE INDEX currency_holds_key ON currency_holds (key)")
    conn.execute("CREATE INDEX currency_holds_external_id ON currency_holds (external_id)")


def m016_event_invitations(db: Database) -> None:
    """Who came: a platform's event orders and their tickets (holder, type, check-in, refund), and the CRM
    invitations synctool wrote for them (``crm.invitations``): the buyer's one per event, and one per guest."""
    db.table("event_orders").create(
        {"source": str, "order_id": str, "campaign_id": str, "campaign": str, "buyer_first_name": str,
         "buyer_last_name": str, "buyer_email": str, "constituent_id": str, "constituent_new": int, "amount": str,
         "tickets_expected": int,
         "refunded": int, "ordered_at": str, "updated_at": str},
        pk=("source", "order_id"),
        not_null={"source", "order_id", "campaign_id", "updated_at"},
        defaults={"refunded": 0},
    )  # fmt: skip
    db.table("event_orders").create_index(["campaign_id"])
    db.table("event_tickets").create(
        {"source": str, "ticket_id": str, "order_id": str, "first_name": str, "last_name": str, "email": str,
         "title": str, "price": str, "checked_in_at": str, "refunded": int, "updated_at": str},
        pk=("source", "ticket_id"),
        not_null={"source", "ticket_id", "order_id", "updated_at"},
        defaults={"refunded": 0},
    )  # fmt: skip
    db.table("event_tickets").create_index(["source", "order_id"])
    db.table("invitations").create(
        {"id": int, "event_id": int, "constituent_id": str, "guest_key": str, "parent_id": int, "first_name": str,
         "last_name": str, "crm_id": str, "state": str, "rsvp": int, "notes": str, "attendee_names": str,
         "staff_notes": str, "staff_names": str, "attended_on": str, "attendance_sent": str, "job_id": str, "error": str,
         "updated_at": str},
        pk="id",
        not_null={"event_id", "constituent_id", "guest_key", "state", "updated_at"},
        defaults={"guest_key": ""},
    )  # fmt: skip
    db.conn.execute("CREATE UNIQUE INDEX invitations_once ON invitations (event_id, constituent_id, guest_key)")
