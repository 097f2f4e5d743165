"""`synctool donors`: what synctool learnt about known donors, to apply to their CRM records or dismiss."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from synctool.console import AsJson, Columns, Limit, action, ctx_obj, emit_json, options_as, render, sub_app

app = sub_app(
    "Known donors: new contact points, and gifts held for a match. "
    "The new e-mail, phone or address a returning donor's gift carried, proposed for their CRM record "
    "(donors.updates: review); and the gifts held because their donor may be a known constituent under a new e-mail "
    "(donors.matching: review).\n\nExample: synctool donors matches"
)
matches_app = sub_app(
    "Gifts held because their donor may be a known constituent under a new e-mail: list them with each candidate and "
    "the evidence, then accept a candidate or make a new constituent.\n\nExample: synctool donors matches"
)
app.add_typer(matches_app, name="matches")
matches_app.info.no_args_is_help = False

#: the argument of `donors matches accept` and `new`
MatchId = Annotated[int, typer.Argument(help="the match's id (synctool donors matches)")]


@matches_app.callback(invoke_without_command=True)
def matches(
    ctx: typer.Context,
    status: str = typer.Option("pending", help="pending, accepted, new or all"),
    limit: Limit = 200,
    as_json: AsJson = False,
) -> None:
    """List the held gifts, newest first: the donor as the platform gave them, and each candidate constituent
    with the evidence (name, street address, phone). Decide with `donors matches accept ID` or `new ID`.

    Example: synctool donors matches --json
    """
    if ctx.invoked_subcommand is not None:
        return
    from synctool.ops.donors import MatchesQuery
    from synctool.ops.donors import matches as op

    data = op(ctx_obj(ctx).db, options_as(ctx, MatchesQuery))

    def for_people(d: dict) -> None:
        if not d["items"]:
            typer.echo("no gifts held for review")
        for m in d["items"]:
            donor = m["donor"]
            who = " ".join(str(donor.get(k) or "") for k in ("first_name", "last_name")).strip() or donor.get("org_name", "")
            typer.echo(f"match {m['id']} [{m['status']}]: {m['source']} {m['external_id']} from {who} <{donor.get('email', '')}>")
            for c in m["candidates"]:
                typer.echo(
                    f"  candidate {c['constituent_id']} {c['name']} <{', '.join(c['emails']) or 'no e-mail'}>: {'; '.join(c['evidence'])}"
                )
            if m["status"] != "pending":
                typer.echo(f"  decided: {m['status']} {m['constituent_id'] or ''} by {m['decided_by']} at {m['decided_at']}")
        typer.echo(f"{d['pending']} pending")

    render(data, as_json, people=for_people)


def _by() -> str:
    import getpass

    return getpass.getuser()


@matches_app.command("accept")
@action(target="match_id", note="constituent")
def accept_match(
    ctx: typer.Context,
    match_id: MatchId,
    constituent: str = typer.Option(None, "--constituent", help="the candidate the gift goes to (needed when there are several)"),
    as_json: AsJson = False,
) -> None:
    """The held gift goes to the candidate constituent: its job is queued again and the next drain writes the
    gift once; the e-mail is linked to the constituent and proposed as a donor change. Other gifts held for the
    same e-mail are settled alike.

    Example: synctool donors matches accept 12 --constituent 959480
    """
    from synctool.ops.donors import AcceptMatchBody
    from synctool.ops.donors import accept_match as op
    from synctool.validation import parse

    body = parse(AcceptMatchBody, {"constituent_id": constituent}, where="options")
    render(op(ctx_obj(ctx).db, match_id, body, by=_by()), as_json)


@matches_app.command("new")
@action(target="match_id")
def new_match(
    ctx: typer.Context,
    match_id: MatchId,
    as_json: AsJson = False,
) -> None:
    """The held gift's donor is someone new: its job is queued again and the next drain creates a constituent.

    Example: synctool donors matches new 12
    """
    from synctool.ops.donors import new_constituent as op

    render(op(ctx_obj(ctx).db, match_id, by=_by()), as_json)


IDS = typer.Argument(None, help="the ids `synctool donors changes` lists")


@app.command("changes")
def changes(
    ctx: typer.Context,
    status: str = typer.Option("pending", help="pending, applied, dismissed or all"),
    limit: Limit = 200,
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List the proposed changes, newest first: the constituent, what is new (an e-mail, a phone or an
    address the CRM record lacks), and the gift that brought it. Names are never proposed.

    Example: synctool donors changes --status all
    """
    from synctool.ops.donors import ChangesQuery
    from synctool.ops.donors import changes as op

    data = op(ctx_obj(ctx).db, options_as(ctx, ChangesQuery))
    shown = ["id", "constituent_id", "kind", "value", "external_id", "status", "created_at"]
    render(data, as_json, rows=data["items"], columns=shown, chosen=columns, title=f"{data['pending']} pending")


EVERY = typer.Option(False, "--all", help="every pending change")


def _chosen(arguments: dict[str, object]) -> object:
    """What `donors apply` or `dismiss` acts on, for the actions log: every pending change, or the ids named."""
    return "every" if arguments["every"] else arguments["ids"]


def _decision(verb: str, doc: str) -> Callable[..., object]:
    """`donors apply` or `dismiss`: the changes named (or every pending one) applied to the CRM or dismissed;
    exit 1 if the CRM refused one."""

    def command(ctx: typer.Context, ids: list[int] = IDS, every: bool = EVERY) -> None:
        from synctool.ops.donors import DecideBody
        from synctool.ops.donors import apply as apply_op
        from synctool.ops.donors import dismiss as dismiss_op
        from synctool.validation import parse

        obj = ctx_obj(ctx)
        body = parse(DecideBody, {"ids": ids or [], "all": every}, where="arguments")
        result = apply_op(obj.db, obj.rt, body) if verb == "apply" else dismiss_op(obj.db, body)
        emit_json(result)
        if any(r["result"].startswith("error") for r in result["results"]):
            raise typer.Exit(1)

    command.__doc__ = doc
    return action(target=_chosen)(command)


DECISIONS = {
    "apply": """Add each change to its constituent's CRM record as a non-preferred e-mail, phone or address (the
    preferred one stays so): one CRM request each; the mirror is updated. Exit 1 if the CRM refused one.

    Example: synctool donors apply 3 4
    """,
    "dismiss": """Dismiss changes: nothing is written, and the same news is not proposed again.

    Example: synctool donors dismiss 5
    """,
}
for _verb, _doc in DECISIONS.items():
    app.command(_verb)(_decision(_verb, _doc))
