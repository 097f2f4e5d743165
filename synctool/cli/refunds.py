"""`synctool refunds`: the refunds the platforms reported and what each did to its CRM gift."""

from __future__ import annotations

import typer

from synctool.console import AsJson, Columns, Limit, ctx_obj, options_as, render, sub_app

app = sub_app("Refunds from the platforms, and what each did to its CRM gift. What it did follows the refund policy.")


@app.command("list")
def list_(
    ctx: typer.Context,
    since: str = typer.Option("30d", help="a duration ago (24h, 30d) or an ISO date"),
    state: str = typer.Option(None, help="applied, waiting, pending, flagged or skipped"),
    source: str = typer.Option(None, help="donations, pos or payments"),
    limit: Limit = 200,
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List refunds, newest first: the gift each changed, its amount before and after, the policy applied,
    or why it waits, was flagged or was skipped.

    Example: synctool refunds list --since 7d --state flagged
    """
    from synctool.ops.refunds import RefundsQuery, list_refunds

    data = list_refunds(ctx_obj(ctx).db, options_as(ctx, RefundsQuery))
    rows = [
        {
            **r,
            "when": (r["created_at"] or "")[5:16].replace("T", " "),
            "gift": f"{r['gift_external_id']} ({r['crm_gift_id'] or '-'})",
            "before_after": f"{r['amount_before']} -> {r['amount_after']}" if r["amount_after"] is not None else "",
            "why": r["reason"] or "",
        }
        for r in data["items"]
    ]
    shown = ["when", "source", "refund_id", "gift", "amount", "before_after", "state", "policy", "why"]
    render(data, as_json, rows=rows, columns=shown, chosen=columns, title=f"refunds since {since}")
