"""`synctool pos`: the POS platform's locations and orders, overrides, and resync."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from synctool.platform import Hook
from synctool.platform.edges import (
    AsJson,
    Columns,
    action,
    crm_id,
    ctx_obj,
    emit_json,
    listing_group,
    options_as,
    render,
    render_outcome,
    sub_app,
)

app = sub_app(
    "The POS platform (Square): locations, orders, overrides, resync. Its locations, orders, customer enrichment, "
    "location overrides and resync."
)
overrides_app = listing_group(
    app,
    "location-overrides",
    "Location overrides: Square location -> CRM fund and campaign.\n\nExample: synctool pos location-overrides --json",
    Hook("synctool.platforms.square.ops:location_overrides"),
    ["location_id", "fund_id", "campaign_id", "deductible", "ack_template_name", "updated_at"],
)


@app.command()
def locations(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List the POS locations (fetched live; also refreshes the local cache).

    Example: synctool pos locations
    """
    from synctool.platforms.square.ops import locations as op

    obj = ctx_obj(ctx)
    rows = op(obj.db, obj.rt)
    render(rows, as_json, columns=["id", "name", "status", "currency"])


@app.command()
def orders(
    ctx: typer.Context,
    cursor: str = typer.Option(None, help="the cursor from the previous page"),
    limit: int = typer.Option(50, help="orders per page (1-500)"),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List recent POS orders, newest first, with the CRM gift each became.

    Example: synctool pos orders --limit 20
    """
    from synctool.platforms.square.ops import OrdersQuery
    from synctool.platforms.square.ops import orders as op

    obj = ctx_obj(ctx)
    result = op(obj.db, obj.rt, options_as(ctx, OrdersQuery))
    render(
        result,
        as_json,
        rows=result["orders"],
        columns=["id", "state", "created_at", "total_cents", "crm_gift_id", "location_id", "customer_id"],
        chosen=columns,
    )
    if result["cursor"] and not as_json:
        typer.echo(f"next page: synctool pos orders --cursor {result['cursor']}")


@app.command()
def enrich(
    ctx: typer.Context,
    order_ids: list[str] = typer.Argument(..., help="one or more order ids"),
    as_json: AsJson = False,
) -> None:
    """Fetch the customer (e-mail and name) behind each order.

    Example: synctool pos enrich eA3vssLHKJrv9H0IdJCM3gNqfdcZY
    """
    from synctool.platform import parse
    from synctool.platforms.square.ops import EnrichBody
    from synctool.platforms.square.ops import enrich as op

    rows = op(ctx_obj(ctx).rt, parse(EnrichBody, {"orderIds": order_ids}, where="arguments"))
    render(rows, as_json, columns=["order_id", "customer_id", "email", "first_name", "last_name"])


@app.command()
@action(target="order_id")
def resync(
    ctx: typer.Context,
    order_id: str = typer.Argument(..., help="the Square order id"),
    force: bool = typer.Option(False, "--force", help="ignore the local 'already synced' mark (the CRM is still searched first)"),
    as_json: AsJson = False,
) -> None:
    """Sync one POS order now. Never creates a second gift for the order's external id.

    Example: synctool pos resync eA3vssLHKJrv9H0IdJCM3gNqfdcZY --force
    """
    from synctool.platforms.square.ops import resync as op

    obj = ctx_obj(ctx)
    result = op(obj.db, obj.rt, order_id, force=force)
    render_outcome(result, as_json, ok=result["status"] in ("succeeded", "skipped", "previewed"))


@overrides_app.command("set")
@action(target="location_id")
def overrides_set(
    ctx: typer.Context,
    location_id: str = typer.Argument(..., help="the Square location id"),
    fund_id: int = crm_id("fund"),
    campaign_id: int = crm_id("campaign"),
    deductible: str = typer.Option(
        None, help="full (default): a sale is deductible in full; none: not a gift (a shop sale), deductible amount 0"
    ),
    ack: str = typer.Option(None, "--ack", help="the CRM acknowledgement template for its sales"),
    no_ack: bool = typer.Option(False, "--no-ack", help="send no CRM acknowledgement (do_not_ack): Square sent a receipt"),
) -> None:
    """Create or update one location override: the fund and campaign of its sales, and whether they are
    deductible.

    Example: synctool pos location-overrides set L2GIFTSHOP001 --fund-id 2402 --deductible none --no-ack
    """
    from synctool.platform import ack_choice, parse
    from synctool.platforms.square.ops import LocationOverride, set_location_override

    given = {"location_id": location_id, "fund_id": fund_id, "campaign_id": campaign_id, "deductible": deductible,
             "ack_template_name": ack_choice(ack, no_ack)}  # fmt: skip
    body = parse(LocationOverride, given, where="options")
    emit_json(set_location_override(ctx_obj(ctx).db, body))


@overrides_app.command("replace")
@action(note="file")
def overrides_replace(
    ctx: typer.Context, file: Path = typer.Argument(..., help="JSON array of {location_id, fund_id?, campaign_id?, deductible?}")
) -> None:
    """Replace the whole set of location overrides from a JSON file (spec: PUT /api/pos/location-overrides).

    Example: synctool pos location-overrides replace overrides.json
    """
    from synctool.platform import InvalidInput, parse
    from synctool.platforms.square.ops import LocationOverrides, replace_location_overrides

    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read {file}: {exc}") from None
    emit_json(replace_location_overrides(ctx_obj(ctx).db, parse(LocationOverrides, data, where=str(file))))
