"""PayPal's own ``doctor`` rows."""

from __future__ import annotations

from synctool.platform import Connection, Runtime, mappings
from synctool.platforms.paypal.models import ROLE


def checks(conn: Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    """How deliveries are verified, and whether a PayPal gift has a fund to go to."""
    section = rt.config.section(ROLE)
    how = ("PayPal's certificate, fetched once from PayPal's own host" if section.verification == "certificate"
           else "PayPal's verification API, one request per delivery")  # fmt: skip
    rows = [("paypal signatures", "ok", how, "")]
    mapped = mappings.coding(mappings.get(conn, "type_default", f"{ROLE}:default"))
    if mapped.get("fund_id") or section.default_fund_id:
        rows.append(("paypal fund", "ok", f"fund {mapped.get('fund_id') or section.default_fund_id}", ""))
    else:
        rows.append(("paypal fund", "warn", "a PayPal gift goes to no fund",
                     "synctool mappings types set paypal:default --fund-id ID"))  # fmt: skip
    return rows


def campaigns(conn: Connection, rt: Runtime) -> dict[str, str]:
    """The Mappings page's choices, by PayPal's own keys: each ``custom_id`` and item name of the last 31 days'
    payments (Transaction Search, one request a page), as the override key the rules look up
    (``paypal:custom:<id>``, ``paypal:item:<name>``) -> its name. PayPal has no campaigns of its own; unreadable
    (no credentials, PayPal down): none, the page lists the keys already mapped."""
    from datetime import UTC, datetime, timedelta

    from synctool.platform import SynctoolError, using
    from synctool.platforms.paypal import transactions

    now = datetime.now(UTC)
    try:
        with using(rt, ROLE) as client:
            found = client.transactions(now - timedelta(days=31), now)
    except SynctoolError:
        return {}
    named: dict[str, str] = {}
    for row in found:
        if not transactions.is_payment(row):
            continue
        gift = transactions.donation(row)
        if gift.get("custom_id"):
            named[f"{ROLE}:custom:{gift['custom_id']}"] = f"{gift['custom_id']} (PayPal custom_id)"
        if gift.get("item"):
            named[f"{ROLE}:item:{gift['item']}"] = f"{gift['item']} (PayPal item)"
    return named
