"""`synctool portal`: the member portal's records, their CRM ids, syncs, mappings, flags and test scenarios."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from synctool.platform import Hook
from synctool.platform.edges import AsJson, action, crm_id, ctx_obj, emit_json, listing_group, render, render_outcome, sub_app

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
#: the argument of `portal show` and `queue`, after the record's type
RecordId = Annotated[str, typer.Argument(help="the portal's id")]


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
    from synctool.platform import InvalidInput
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

    render_outcome(result, as_json, ok=not result["errors"], people=for_people)


@app.command()
def show(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(help="user, product, membership, payment, enrollment or family_link")],
    record_id: RecordId,
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
        render_outcome(result, as_json, ok=result["status"] in ("succeeded", "skipped", "previewed"))

    command.__doc__ = f"Sync one portal {entity} to the CRM now.\n\n    Example: synctool portal sync {entity} ID\n    "
    return action(target="record_id")(command)


for _entity in ("payment", "user", "membership", "relationship"):
    sync_app.command(_entity)(_sync(_entity))


@app.command("queue")
@action(target="record_id", note="entity")
def queue_(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(help="payment, user, membership, relationship or enrollment")],
    record_id: RecordId,
    force: bool = typer.Option(False, "--force", help="sync even if already linked"),
) -> None:
    """Queue a sync for the next drain.

    Example: synctool portal queue payment pay_123
    """
    from synctool.platforms.portal.ops import queue_sync

    typer.echo(f"queued job {queue_sync(ctx_obj(ctx).db, entity, record_id, force=force)}")


@dataclass(frozen=True)
class MappingKind:
    """One kind of portal mapping: `portal mappings KIND` lists them (``columns``); `portal mappings KIND set KEY
    --OPTION ...` sets one, its argument ``key`` described by ``key_help`` and its ``options`` (parameter name ->
    its type and its ``typer.Option``) the mapping's values."""

    group_help: str
    columns: list[str]
    key: str
    key_help: str
    options: dict[str, tuple[type, Any]]
    set_help: str
    example: str


MAPPINGS = {
    "funds": MappingKind(
        "Fund (and campaign name) per sync category: membership, language_classes, events, donations.",
        ["key", "fund_id", "campaign_name"],
        "category",
        "membership, language_classes, events or donations",
        {"fund_id": (int, crm_id("fund", required=True)), "campaign_name": (str, typer.Option(None, help="CRM campaign name"))},
        "The CRM fund (and campaign) for one sync category's gifts.",
        "membership --fund-id 2400 --campaign-name 'Membership Drive'",
    ),
    "gateways": MappingKind(
        "Payment gateway (stripe, cash, ...) -> CRM payment type.",
        ["key", "payment_type_id"],
        "gateway",
        "the portal's gateway: stripe, cash, ...",
        {"payment_type_id": (int, crm_id("payment type", required=True))},
        "The CRM payment type for one payment gateway.",
        "stripe --payment-type-id 1509",
    ),
    "levels": MappingKind(
        "Membership product id or level name -> CRM membership level; key * is the global default.",
        ["key", "membership_level_id"],
        "product",
        "a membership product id or level name; * for every other",
        {"membership_level_id": (int, crm_id("membership level", required=True))},
        "The CRM membership level for a membership product or level name.",
        "'*' --membership-level-id 41",
    ),
    "relationship-types": MappingKind(
        "The default relationship type (key default, --id) and the enabled set (key enabled, --ids).",
        ["key", "id", "ids"],
        "key",
        "default or enabled",
        {
            "id": (int, typer.Option(None, "--id", help="the default CRM relationship type id (key default)")),
            "ids": (list[int], typer.Option(None, "--ids", help="the enabled type ids (key enabled; repeatable)")),
        },
        "The default relationship type for family links (key default), or the enabled set (key enabled).",
        "default --id 9",
    ),
}


_POSITIONAL_OR_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def _mapping_commands(kind: str, spec: MappingKind) -> None:
    """`portal mappings KIND` and its `set`, as ``spec`` describes them (built as `synctool settings` builds a
    setting's command)."""
    rows = functools.partial(Hook("synctool.platforms.portal.ops:list_mappings"), kind=kind)
    group = listing_group(
        mappings_app,
        kind,
        f"{spec.group_help}\n\nExample: synctool portal mappings {kind} --json",
        rows,
        [*spec.columns, "updated_at"],
    )

    def set_mapping(ctx: typer.Context, **arguments: Any) -> None:
        from synctool.platforms.portal.ops import set_mapping as op

        key = arguments.pop(spec.key)
        # an option repeated no times (--ids) was not given
        values = {name: None if isinstance(value, (list, tuple)) and not value else value for name, value in arguments.items()}
        emit_json(op(ctx_obj(ctx).db, kind, key, **values))

    params = [
        inspect.Parameter("ctx", _POSITIONAL_OR_KEYWORD, annotation=typer.Context),
        inspect.Parameter(spec.key, _POSITIONAL_OR_KEYWORD, default=typer.Argument(..., help=spec.key_help), annotation=str),
        *(
            inspect.Parameter(name, _POSITIONAL_OR_KEYWORD, default=option, annotation=typed)
            for name, (typed, option) in spec.options.items()
        ),
    ]
    set_mapping.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    set_mapping.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    set_mapping.__doc__ = f"{spec.set_help}\n\n    Example: synctool portal mappings {kind} set {spec.example}\n    "
    group.command("set")(action(target=spec.key)(set_mapping))


for _kind, _spec in MAPPINGS.items():
    _mapping_commands(_kind, _spec)


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


def _scenario(verb: str, doc: str) -> Callable[..., object]:
    """`portal scenarios create` or `delete`: the portal's ``scenario_<verb>`` on one named scenario."""
    operation = Hook(f"synctool.platforms.portal.ops:scenario_{verb}")

    def command(ctx: typer.Context, name: ScenarioName) -> None:
        obj = ctx_obj(ctx)
        emit_json(operation(obj.db, obj.rt, name))

    command.__doc__ = f"{doc}\n\n    Example: synctool portal scenarios {verb} smoke\n    "
    return action(target="name")(command)


SCENARIO_COMMANDS = {
    "create": "Create a named set of linked test records (two users, a membership, a class, a cart, a family link).",
    "delete": "Delete a scenario's records.",
}
for _verb, _doc in SCENARIO_COMMANDS.items():
    scenarios_app.command(_verb)(_scenario(_verb, _doc))
