"""`synctool mailing`: the mailing platform, its list mappings and tag rules."""

from __future__ import annotations

import typer

from synctool.platform import Hook
from synctool.platform.edges import AsJson, action, ctx_obj, emit_json, listing_group, render, render_outcome, sub_app

app = sub_app(
    "The mailing platform (Mailchimp): lists, mappings, tag rules. Its account, lists, list mappings, tag rules "
    "and a connection test."
)
#: the groups that list what they hold when named alone: name -> (what reads it, the columns its list shows, help)
LISTED = {
    "mappings": (
        Hook("synctool.platforms.mailchimp.ops:list_mappings"),
        ["list_id", "enabled", "label", "push_donors", "updated_at"],
        "List mappings: which Mailchimp lists' unsubscribes and bounces reach the CRM.\n\nExample: synctool mailing mappings",
    ),
    "tag-rules": (
        Hook("synctool.platforms.mailchimp.ops:tag_rules"),
        ["list_id", "event", "add", "remove", "updated_at"],
        "Tag rules: CRM tags (keyword ids) to add and remove per list and event.\n\nExample: synctool mailing tag-rules",
    ),
}
mappings_app, rules_app = (
    listing_group(app, name, help_text, rows, columns) for name, (rows, columns, help_text) in LISTED.items()
)


@app.command()
def account(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Show the Mailchimp account (a connection test with details).

    Example: synctool mailing account
    """
    from synctool.platforms.mailchimp.ops import account as op

    data = op(ctx_obj(ctx).rt)
    render(data, as_json)


@app.command()
def lists(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List the Mailchimp lists (audiences).

    Example: synctool mailing lists
    """
    from synctool.platforms.mailchimp.ops import lists as op

    rows = op(ctx_obj(ctx).rt)
    render(rows, as_json, columns=["id", "name", "members"])


@app.command()
def test(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Test the Mailchimp connection (GET /ping).

    Example: synctool mailing test
    """
    from synctool.platforms.mailchimp.ops import test as op

    result = op(ctx_obj(ctx).rt)
    render_outcome(result, as_json, ok=result["ok"])


@mappings_app.command("set")
@action(target="list_id")
def mappings_set(
    ctx: typer.Context,
    list_id: str = typer.Argument(..., help="the Mailchimp list id"),
    disabled: bool = typer.Option(False, "--disabled", help="keep the mapping but ignore the list"),
    label: str = typer.Option(None, help="a name for people"),
    push_donors: bool = typer.Option(
        False, "--push-donors/--no-push-donors", help="add donors who gave e-mail consent to this list, tagged"
    ),
) -> None:
    """Create or update a list mapping. With --push-donors, every donor from donations or POS who gave
    e-mail consent is added to (or updated on) this list, tagged with the source and campaign or location.

    Example: synctool mailing mappings set b7e21c0d94 --label Newsletter --push-donors
    """
    from synctool.platform import parse
    from synctool.platforms.mailchimp.ops import ListMappingBody, set_mapping

    body = parse(
        ListMappingBody,
        {"list_id": list_id, "enabled": not disabled, "label": label, "push_donors": push_donors},
        where="arguments",
    )
    emit_json(set_mapping(ctx_obj(ctx).db, body))


@rules_app.command("set")
@action(target="list_id", note="event")
def rules_set(
    ctx: typer.Context,
    list_id: str = typer.Argument(..., help="a Mailchimp list id, or * for every mapped list"),
    event: str = typer.Argument(..., help="unsubscribe or cleaned"),
    add: list[int] = typer.Option([], "--add", help="CRM tag keyword id to add (repeatable)"),
    remove: list[int] = typer.Option([], "--remove", help="CRM tag keyword id to remove (repeatable)"),
) -> None:
    """Set the tags to add and remove for an event on a list (keyword ids from `synctool crm tags`).

    Example: synctool mailing tag-rules set b7e21c0d94 unsubscribe --add 12222 --remove 12221
    """
    from synctool.platform import parse
    from synctool.platforms.mailchimp.ops import TagRuleBody, set_tag_rule

    body = parse(TagRuleBody, {"list_id": list_id, "event": event, "add": add or [], "remove": remove or []}, where="arguments")
    emit_json(set_tag_rule(ctx_obj(ctx).db, body))
