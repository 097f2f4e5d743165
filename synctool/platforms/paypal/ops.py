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
