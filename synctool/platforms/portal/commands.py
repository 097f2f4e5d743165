"""`synctool portal`: the member portal's records, their CRM ids, syncs, mappings, flags and test scenarios."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from synctool.console import AsJson, action, ctx_obj, emit_json, render, sub_app

app = sub_app(
    "The member portal: records, CRM ids, syncs, mappings, flags. Its records and their CRM ids, syncs, mappings, "
    "sync flags and test scenarios."
)
sync_app = sub_app("Sync one portal record to the CRM now.")
mappings_app = sub_app("Portal mappings: funds per category, gateways, membership levels, relationship types.")
scenarios_app = sub_app("Named sets of linked test records (refused in the production CRM environment).")
app.add_typer(sync_app, name="sync")
app.add_typer(mappings_app, name="mappings")
app.add_typer(scenarios_app, name="scenarios")

#: the argument of `portal scenarios create` and `delete`
ScenarioName = Annotated[str, typer.Argument(help="the scenario's name")]


@app.command("import")
@action(note="file")
def import_(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help='JSON lines: {"type": "user", "data": {...}} (\'-\' for stdin)'),
    as_json: AsJson = False,
) -> None:
    """Load portal records from a JSON-lines file, each as if the portal had pushed it: stored, and the CRM
    jobs its state calls for queued (drain runs them). A pending record never undoes a settled one. Bad
    lines are reported by number; the rest still load.

    Example: synctool portal import users.jsonl
    """
    from synctool.errors import InvalidInput
    from synctool.platforms.portal.ops import import_file

    try:
        lines = sys.stdin if str(file) == "-" else file.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {file}: {exc.strerror}") from None
    result = import_file(ctx_obj(ctx).db, lines)

    def for_people(result: dict) -> None:
        loaded = ", ".join(f"{n} {k}" for k, n in result["loaded"].items()) or "nothing"
        typer.echo(f"loaded: {loaded}; queued {result['queued']} CRM job(s)")
        for error in result["errors"]:
            typer.echo(f"line {error['line']}: {error['error']}", err=True)

    render(result, as_json, people=for_people)
    if result["errors"]:
        raise typer.Exit(1)


@app.command()
def show(
    ctx: typer.Context,
    entity: str = typer.Argument(..., help="user, product, membership, payment, enrollment or family_link"),
    record_id: str = typer.Argument(..., help="the portal's id"),
) -> None:
    """Show one portal record with its CRM linkage ids.

    Example: synctool portal show payment pay_123
    """
    from synctool.platforms.portal.ops import show as op

    emit_json(op(ctx_obj(ctx).db, entity, record_id))


@app.command()
def links(
    ctx: typer.Context,
    entity: str = typer.Option(None, help="only this record type"),
    as_json: AsJson = False,
) -> None:
    """Every portal record's CRM ids (for the portal to read back).

    Example: synctool portal links --entity user --json
    """
    from synctool.platforms.portal.ops import links as op

    rows = op(ctx_obj(ctx).db, entity)
    render(rows, as_json, columns=sorted({k for r in rows for k in r}, key=lambda k: (k != "entity", k != "id", k)))


def _sync(entity: str):
    def command(
        ctx: typer.Context,
        record_id: str = typer.Argument(..., help=f"the portal {entity} id"),
        force: bool = typer.Option(False, "--force", help="sync even if already linked (never a second gift)"),
        as_json: AsJson = False,
    ) -> None:
        from synctool.platforms.portal.ops import sync_now

        obj = ctx_obj(ctx)
        result = sync_now(obj.db, obj.rt, entity, record_id, force=force)
        render(result, as_json)
        if result["status"] not in ("succeeded", "skipped", "previewed"):
            raise typer.Exit(1)

    command.__doc__ = f"Sync one portal {entity} to the CRM now.\n\n    Example: synctool portal sync {entity} ID\n    "
    return action(target="record_id")(command)


for _entity in ("payment", "user", "membership", "relationship"):
    sync_app.command(_entity)(_sync(_entity))


@app.command("queue")
@action(target="record_id", note="entity")
def queue_(
    ctx: typer.Context,
    entity: str = typer.Argument(..., help="payment, user, membership, relationship or enrollment"),
    record_id: str = typer.Argument(..., help="the portal's id"),
    force: bool = typer.Option(False, "--force", help="sync even if already linked"),
) -> None:
    """Queue a sync for the next drain.

    Example: synctool portal queue payment pay_123
    """
    from synctool.platforms.portal.ops import queue_sync

    typer.echo(f"queued job {queue_sync(ctx_obj(ctx).db, entity, record_id, force=force)}")


def _mapping_list(kind: str, columns: list[str]):
    def command(ctx: typer.Context, as_json: AsJson = False) -> None:
        if ctx.invoked_subcommand is None:
            from synctool.platforms.portal.ops import list_mappings

            rows = list_mappings(ctx_obj(ctx).db, kind)
            render(rows, as_json, columns=columns)

    return command


def _mapping_group(kind: str, help_text: str, columns: list[str]) -> typer.Typer:
    group = sub_app(f"{help_text}\n\nExample: synctool portal mappings {kind} --json")
    group.callback(invoke_without_command=True)(_mapping_list(kind, columns + ["updated_at"]))
    mappings_app.add_typer(group, name=kind)
    return group


def _set(ctx: typer.Context, kind: str, key: str, **values) -> None:
    from synctool.platforms.portal.ops import set_mapping

    emit_json(set_mapping(ctx_obj(ctx).db, kind, key, **values))


funds_group = _mapping_group(
    "funds",
    "Fund (and campaign name) per sync category: membership, language_classes, events, donations.",
    ["key", "fund_id", "campaign_name"],
)
gateways_group = _mapping_group(
    "gateways", "Payment gateway (stripe, cash, ...) -> CRM payment type.", ["key", "payment_type_id"]
)
levels_group = _mapping_group(
    "levels",
    "Membership product id or level name -> CRM membership level; key * is the global default.",
    ["key", "membership_level_id"],
)
types_group = _mapping_group(
    "relationship-types",
    "The default relationship type (key default, --id) and the enabled set (key enabled, --ids).",
    ["key", "id", "ids"],
)


@funds_group.command("set")
@action(target="category")
def funds_set(
    ctx: typer.Context,
    category: str = typer.Argument(..., help="membership, language_classes, events or donations"),
    fund_id: int = typer.Option(..., help="CRM fund id"),
    campaign_name: str = typer.Option(None, help="CRM campaign name"),
) -> None:
    """The CRM fund (and campaign) for one sync category's gifts.

    Example: synctool portal mappings funds set membership --fund-id 2400 --campaign-name 'Membership Drive'
    """
    _set(ctx, "funds", category, fund_id=fund_id, campaign_name=campaign_name)


@gateways_group.command("set")
@action(target="gateway")
def gateways_set(
    ctx: typer.Context,
    gateway: str = typer.Argument(..., help="the portal's gateway: stripe, cash, ..."),
    payment_type_id: int = typer.Option(..., help="CRM payment type id"),
) -> None:
    """The CRM payment type for one payment gateway.

    Example: synctool portal mappings gateways set stripe --payment-type-id 1509
    """
    _set(ctx, "gateways", gateway, payment_type_id=payment_type_id)


@levels_group.command("set")
@action(target="product")
def levels_set(
    ctx: typer.Context,
    product: str = typer.Argument(..., help="a membership product id or level name; * for every other"),
    membership_level_id: int = typer.Option(..., help="CRM membership level id"),
) -> None:
    """The CRM membership level for a membership product or level name.

    Example: synctool portal mappings levels set '*' --membership-level-id 41
    """
    _set(ctx, "levels", product, membership_level_id=membership_level_id)


@types_group.command("set")
@action(target="key")
def relationship_types_set(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="default or enabled"),
    id: int = typer.Option(None, "--id", help="the default CRM relationship type id (key default)"),
    ids: list[int] = typer.Option(None, "--ids", help="the enabled type ids (key enabled; repeatable)"),
) -> None:
    """The default relationship type for family links (key default), or the enabled set (key enabled).

    Example: synctool portal mappings relationship-types set default --id 9
    """
    _set(ctx, "relationship-types", key, id=id, ids=ids or None)


@app.command()
@action(when=lambda a: any(a[k] is not None for k in ("auto_sync", "sync_on_payment", "sync_on_membership")))
def flags(
    ctx: typer.Context,
    auto_sync: bool = typer.Option(None, "--auto-sync/--no-auto-sync", help="queue CRM jobs automatically"),
    sync_on_payment: bool = typer.Option(None, "--sync-on-payment/--no-sync-on-payment", help="payments become gifts"),
    sync_on_membership: bool = typer.Option(None, "--sync-on-membership/--no-sync-on-membership", help="memberships sync"),
    as_json: AsJson = False,
) -> None:
    """Show or change the sync flags.

    Example: synctool portal flags --no-sync-on-membership
    """
    from synctool.platforms.portal.ops import get_flags

    result = get_flags(
        ctx_obj(ctx).db, auto_sync=auto_sync, sync_on_payment=sync_on_payment, sync_on_membership=sync_on_membership
    )
    render(result, as_json)


@scenarios_app.command("create")
@action(target="name")
def scenario_create(ctx: typer.Context, name: ScenarioName) -> None:
    """Create a named set of linked test records (two users, a membership, a class, a cart, a family link).

    Example: synctool portal scenarios create smoke
    """
    from synctool.platforms.portal.ops import scenario_create as op

    obj = ctx_obj(ctx)
    emit_json(op(obj.db, obj.rt, name))


@scenarios_app.command("delete")
@action(target="name")
def scenario_delete(ctx: typer.Context, name: ScenarioName) -> None:
    """Delete a scenario's records.

    Example: synctool portal scenarios delete smoke
    """
    from synctool.platforms.portal.ops import scenario_delete as op

    obj = ctx_obj(ctx)
    emit_json(op(obj.db, obj.rt, name))
