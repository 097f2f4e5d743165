"""`synctool crm`: the CRM connection, its reference lists and the request budget."""

from __future__ import annotations

import typer

from synctool.cli.common import ctx_obj, emit_json, key_values, sub_app, table

app = sub_app("The CRM (Little Green Light): connection, environment, reference lists and request budget.")


def _show_list(ctx: typer.Context, kind: str, as_json: bool) -> None:
    from synctool.ops.crm import reference

    data = reference(ctx_obj(ctx).db, kind)
    if as_json:
        emit_json(data["items"])
        return
    rows = [{"id": i.get("id"), "name": i.get("name") or i.get("display_name"), "extra": i.get("key") or i.get("code") or i.get("gift_type_name")} for i in data["items"]]
    table(rows, ["id", "name", "extra"], title=f"CRM {kind} (cached {data['refreshed_at'] or 'never: run synctool crm refresh'})")


def _list_command(kind: str):
    def command(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
        _show_list(ctx, kind, as_json)

    command.__doc__ = f"List the cached CRM {kind} (refresh with `synctool crm refresh`).\n\n    Example: synctool crm {kind} --json\n    "
    return command


for _kind in ("funds", "campaigns", "appeals", "gift-types", "gift-categories", "payment-types", "membership-levels",
              "relationship-types", "groups", "tags"):
    app.command(_kind)(_list_command(_kind))


@app.command()
def refresh(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Fetch the CRM's reference lists (funds, campaigns, appeals, gift types and categories, payment types,
    membership levels, relationship types, groups, tag keywords) into the local cache.

    Example: synctool crm refresh
    """
    from synctool.ops.crm import refresh as refresh_op

    obj = ctx_obj(ctx)
    counts = refresh_op(obj.db, obj.config)
    emit_json(counts) if as_json else key_values(counts)


@app.command("test-connection")
def test_connection(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """One read on constituents: shows the configured state and success or the CRM's error.

    Example: synctool crm test-connection
    """
    from synctool.ops.crm import test_connection as op

    obj = ctx_obj(ctx)
    result = op(obj.db, obj.config)
    emit_json(result) if as_json else key_values(result)
    if not result["ok"]:
        raise typer.Exit(1)


@app.command()
def config(ctx: typer.Context,
           base_url: str = typer.Option(None, "--base-url", help="the CRM API base URL for the active environment"),
           api_key: bool = typer.Option(False, "--api-key", help="prompt for the API key and save it in keyring"),
           as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Save the active environment's base URL and API key (the key goes to keyring, never to a file).

    Example: synctool crm config --base-url https://api.littlegreenlight.com/api/v1 --api-key
    """
    from synctool.ops.crm import configure

    key = typer.prompt("CRM API key", hide_input=True) if api_key else None
    obj = ctx_obj(ctx)
    result = configure(obj.db, obj.config, base_url=base_url, api_key=key)
    emit_json(result) if as_json else key_values(result)


@app.command()
def environment(ctx: typer.Context, name: str = typer.Argument(None, help="production or sandbox; omit to show"),
                as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Show or switch the CRM environment (each has its own key and base URL).

    Example: synctool crm environment sandbox
    """
    from synctool.ops.crm import set_environment

    obj = ctx_obj(ctx)
    result = set_environment(obj.db, obj.config, name)
    emit_json(result) if as_json else key_values(result)


@app.command()
def budget(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """CRM requests used in the current window (shared by every synctool process) and the next free slot.

    Example: synctool crm budget
    """
    from synctool.ops.crm import budget as budget_op

    obj = ctx_obj(ctx)
    obj.db
    result = budget_op(obj.config)
    emit_json(result) if as_json else key_values(result)
