"""`synctool crm`: the CRM connection, its reference lists, the constituent mirror and the request budget."""

from __future__ import annotations

from collections.abc import Callable

import typer

from synctool.console import AsJson, Columns, action, ctx_obj, render, render_outcome, sub_app
from synctool.crm import references

app = sub_app(
    "The CRM (Little Green Light): connection, lists, mirror. Its connection and environment, the reference lists, "
    "the constituent mirror and the request budget."
)


#: the CRM's reference lists the cache holds, which `synctool crm list KIND` shows
KINDS = (*references.LISTS, *references.CATEGORY_KINDS)


@app.command("list")
def list_kind(
    ctx: typer.Context,
    kind: str = typer.Argument(..., help="the list: " + ", ".join(KINDS)),
    as_json: AsJson = False,
) -> None:
    """List one of the CRM's reference lists as last cached (refresh them with `synctool crm refresh`).

    Example: synctool crm list funds --json
    """
    from synctool.ops.crm import reference

    data = reference(ctx_obj(ctx).db, kind)
    rows = [
        {
            "id": i.get("id"),
            "name": i.get("name") or i.get("display_name"),
            "extra": i.get("key") or i.get("code") or i.get("gift_type_name") or i.get("date"),
            "values": ", ".join(k["name"] for k in i.get("keywords") or []),
        }
        for i in data["items"]
    ]
    render(
        data["items"],
        as_json,
        rows=rows,
        columns=["id", "name", "extra"] + (["values"] if kind == "gift-fields" else []),
        title=f"CRM {kind} (cached {data['refreshed_at'] or 'never: run synctool crm refresh'})",
    )


def _older_name(kind: str) -> Callable[..., None]:
    def command(ctx: typer.Context, as_json: AsJson = False) -> None:
        list_kind(ctx, kind, as_json)

    command.__doc__ = f"List the cached CRM {kind} (refresh with `synctool crm refresh`).\n\nExample: synctool crm {kind} --json"
    return command


for _kind in KINDS:  # `synctool crm funds` and the like, as before `crm list`: working, not listed
    app.command(_kind, hidden=True)(_older_name(_kind))


@app.command()
def refresh(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Fetch the CRM's reference lists (funds, campaigns, appeals, gift types and categories, payment types,
    membership levels, relationship types, groups, tag keywords, gift custom fields and their values) into
    the local cache.

    Example: synctool crm refresh
    """
    from synctool.ops.crm import refresh as refresh_op

    obj = ctx_obj(ctx)
    counts = refresh_op(obj.db, obj.rt)
    render(counts, as_json)


@app.command("test-connection")
def test_connection(ctx: typer.Context, as_json: AsJson = False) -> None:
    """One read on constituents: shows the configured state and success or the CRM's error.

    Example: synctool crm test-connection
    """
    from synctool.ops.crm import test_connection as op

    obj = ctx_obj(ctx)
    result = op(obj.db, obj.rt)
    render_outcome(result, as_json, ok=result["ok"])


@app.command()
@action(note="base_url", when=lambda a: a["base_url"] is not None or a["api_key"])
def config(
    ctx: typer.Context,
    base_url: str = typer.Option(None, "--base-url", help="the CRM API base URL for the active environment"),
    api_key: bool = typer.Option(False, "--api-key", help="prompt for the API key and save it in keyring"),
    as_json: AsJson = False,
) -> None:
    """Save the active environment's base URL and API key (the key goes to keyring, never to a file).

    Example: synctool crm config --base-url https://api.littlegreenlight.com/api/v1 --api-key
    """
    from synctool.ops.crm import CrmConfigBody, configure
    from synctool.validation import parse

    key = typer.prompt("CRM API key", hide_input=True) if api_key else None
    obj = ctx_obj(ctx)
    result = configure(obj.db, obj.rt, parse(CrmConfigBody, {"base_url": base_url, "api_key": key}, where="options"))
    render(result, as_json)
    notice = obj.rt.secrets.keyring_notice()
    if notice and not as_json:
        typer.echo(f"note: {notice}", err=True)


@app.command()
@action(note="name", when=lambda a: a["name"] is not None)
def environment(
    ctx: typer.Context,
    name: str = typer.Argument(None, help="production or sandbox; omit to show"),
    as_json: AsJson = False,
) -> None:
    """Show or switch the CRM environment (each has its own key and base URL).

    Example: synctool crm environment sandbox
    """
    from synctool.ops.crm import EnvironmentBody, set_environment
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    result = set_environment(
        obj.db, obj.rt, None if name is None else parse(EnvironmentBody, {"environment": name}, where="arguments")
    )
    render(result, as_json)


@app.command()
def budget(ctx: typer.Context, as_json: AsJson = False) -> None:
    """CRM requests used in the current window (shared by every synctool process) and the next free slot.

    Example: synctool crm budget
    """
    from synctool.ops.crm import budget as budget_op

    obj = ctx_obj(ctx)
    result = budget_op(obj.db, obj.rt)
    render(result, as_json)


@app.command()
def mirror(
    ctx: typer.Context,
    refresh_now: bool = typer.Option(False, "--refresh", help="load what changed in the CRM since the watermark"),
    full: bool = typer.Option(False, "--full", help="rebuild from scratch (one request per page of constituents)"),
    as_json: AsJson = False,
) -> None:
    """The local mirror of the CRM's constituents that matching reads: rows, watermark, age, and the last
    refresh with its cost in CRM requests. Without options it spends no request.

    Drain refreshes it by itself (at most once per run, only when a donor is not found locally).

    Example: synctool crm mirror --refresh
    """
    from synctool.ops.crm import mirror_refresh, mirror_status

    obj = ctx_obj(ctx)
    result = mirror_refresh(obj.db, obj.rt, full=full) if (refresh_now or full) else mirror_status(obj.db)
    render(result, as_json)


@app.command()
def find(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="part of a name, an e-mail or a phone number"),
    limit: int = typer.Option(50, "--limit", min=1, help="most constituents to show"),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """Find constituents in the local CRM mirror by name, e-mail or phone (no CRM request).

    Example: synctool crm find "jane.doe@example.org"
    """
    from synctool.ops.crm import find_constituents

    found = find_constituents(ctx_obj(ctx).db, text, limit=limit)
    rows = [
        {
            "id": c["id"],
            "name": " ".join(p for p in (c["first_name"], c["last_name"]) if p) or c["org_name"],
            "emails": ", ".join(e["address"] for e in c["email_addresses"]),
            "phones": ", ".join(p["number"] for p in c["phone_numbers"]),
            "updated_at": c["updated_at"],
        }
        for c in found
    ]
    render(
        found,
        as_json,
        rows=rows,
        columns=["id", "name", "emails", "phones", "updated_at"],
        title=f"CRM constituents matching {text!r} (mirror)",
        chosen=columns,
    )


@app.command()
def duplicates(
    ctx: typer.Context, limit: int = typer.Option(500, help="at most this many pairs"), as_json: AsJson = False
) -> None:
    """Likely duplicate constituents already in the CRM, by the rule donor matching uses (a matching name, with
    nicknames and small typos, and the same street address with postal code, or phone; an organisation by its
    exact name and address), read from the mirror: no CRM request. Merge them in the CRM.

    Example: synctool crm duplicates --json
    """
    from synctool.ops.crm import duplicates as op

    data = op(ctx_obj(ctx).db, limit=limit)
    rows = [{**p, "evidence": "; ".join(p["evidence"])} for p in data["pairs"]]
    shown = ["constituent_id", "name", "other_id", "other_name", "evidence"]
    render(data, as_json, rows=rows, columns=shown, title=f"{data['count']} likely duplicate pair(s)")
