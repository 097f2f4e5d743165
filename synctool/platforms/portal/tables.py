"""The portal's own tables (``Platform.migrations``: the migration set ``synctool.portal``).

A database made before 0.3 has them already, from the core's ``m002_portal``: each statement is ``IF NOT
EXISTS``, so the first migration finds them and changes nothing.
"""

from __future__ import annotations

from synctool.platform import store


def m001_portal(conn: store.Connection) -> None:
    """The member portal's records, pushed to /webhooks/portal or imported, with their CRM linkage ids."""
    store.run_script(
        conn,
        """
    CREATE TABLE IF NOT EXISTS portal_users (
        id TEXT PRIMARY KEY, email TEXT, first_name TEXT, last_name TEXT, phone TEXT,
        billing_address_1 TEXT, billing_address_2 TEXT, billing_city TEXT, billing_state TEXT,
        billing_postcode TEXT, billing_country TEXT, crm_constituent_id TEXT, updated_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS portal_users_email ON portal_users (email);
    CREATE TABLE IF NOT EXISTS portal_products (
        id TEXT PRIMARY KEY, name TEXT, category TEXT NOT NULL, level TEXT, updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS portal_memberships (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL, product_id TEXT, level TEXT, status TEXT,
        start_date TEXT, renewal_date TEXT, subsidy_tier TEXT, crm_membership_id TEXT, updated_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS portal_memberships_user ON portal_memberships (user_id);
    CREATE TABLE IF NOT EXISTS portal_payments (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL, type TEXT NOT NULL, status TEXT NOT NULL, gateway TEXT,
        amount_cents INTEGER NOT NULL, created_at TEXT, payment_intent_id TEXT, membership_id TEXT,
        enrollment_id TEXT, scholarship INTEGER NOT NULL DEFAULT 0, crm_gift_id TEXT, crm_gift_ids TEXT,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS portal_payments_intent ON portal_payments (payment_intent_id);
    CREATE TABLE IF NOT EXISTS portal_payment_items (
        id TEXT PRIMARY KEY, payment_id TEXT NOT NULL, product_id TEXT, category TEXT, description TEXT,
        quantity INTEGER NOT NULL DEFAULT 1, amount_cents INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS portal_payment_items_payment ON portal_payment_items (payment_id);
    CREATE TABLE IF NOT EXISTS portal_enrollments (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL, product_id TEXT, payment_id TEXT, status TEXT,
        crm_synced_at TEXT, updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS portal_family_links (
        id TEXT PRIMARY KEY, primary_user_id TEXT NOT NULL, member_user_id TEXT NOT NULL,
        crm_relationship_type_id TEXT, crm_relationship_id TEXT, updated_at TEXT NOT NULL
    )
    """,
    )


def m002_payment_currency(conn: store.Connection) -> None:
    """A payment's currency (Stripe's ``currency``, or the portal's own): another than ``organisation.currency``
    holds its gifts for a person (``crm.currency``)."""
    conn.execute("ALTER TABLE portal_payments ADD COLUMN currency TEXT")


MIGRATIONS = [m001_portal, m002_payment_currency]
