"""`synctool users`: the team and their admin API tokens."""

from __future__ import annotations

import typer

from synctool.console import AsJson, action, ctx_obj, emit_json, key_values, render, sub_app

app = sub_app(
    "The team: users, roles, API tokens and sign-in links. Each user has a role (viewer, admin, super_admin), admin "
    "API tokens and sign-in links to the staff page."
)


@app.command("list")
def list_(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List users.

    Example: synctool users list
    """
    from synctool.ops.users import list_users

    rows = list_users(ctx_obj(ctx).db)
    render(rows, as_json, columns=["id", "email", "role", "active", "invited_at"])


@app.command()
@action(target="email", note="role")
def invite(
    ctx: typer.Context,
    email: str = typer.Argument(..., help="their e-mail"),
    role: str = typer.Option("viewer", help="viewer, admin or super_admin"),
    send: bool = typer.Option(False, "--send", help="e-mail them a sign-in link to the staff page (smtp: in config)"),
) -> None:
    """Add a user; with --send, e-mail them a one-time sign-in link to the staff page (15 minutes).

    Example: synctool users invite treasurer@example.org --role admin --send
    """
    from synctool.ops.users import InviteBody
    from synctool.ops.users import invite as op
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    made = op(obj.db, parse(InviteBody, {"email": email, "role": role}, where="arguments"))
    user: dict[str, object] = dict(made)
    if send:
        from synctool.ops.sign_in import mail_link

        user["link"] = mail_link(obj.db, obj.rt, made["email"])
    emit_json(user)


@app.command("login-link")
@action(target="email")
def login_link(ctx: typer.Context, email: str = typer.Argument(..., help="the user's e-mail"), as_json: AsJson = False) -> None:
    """Print a one-time sign-in link to the staff page (`serve --admin-ui`) for a user: it works once, for 15
    minutes, and opens an 8-hour session. It starts with the public URL (receiver.public_url).

    Example: synctool users login-link treasurer@example.org
    """
    from synctool.ops.sign_in import login_link as op

    obj = ctx_obj(ctx)
    link = op(obj.db, obj.rt, email)
    render(
        link,
        as_json,
        people=lambda d: typer.echo(f"{d['url']}\n(for {d['email']}, {d['role']}; works once, until {d['expires_at']})"),
    )


@app.command()
@action(target="user_id")
def update(
    ctx: typer.Context,
    user_id: int = typer.Argument(..., help="the user's id (synctool users list)"),
    role: str = typer.Option(None, help="viewer, admin or super_admin"),
    deactivate: bool = typer.Option(False, "--deactivate", help="stop the user and their tokens"),
    activate: bool = typer.Option(False, "--activate", help="re-activate (old tokens stay invalid)"),
) -> None:
    """Change a user's role, or deactivate them.

    Example: synctool users update 3 --deactivate
    """
    from synctool.ops.users import UserPatch
    from synctool.ops.users import update as op
    from synctool.validation import parse

    patch = {"role": role, "deactivate": True if deactivate else None, "active": True if activate else None}
    emit_json(op(ctx_obj(ctx).db, user_id, parse(UserPatch, patch, where="options")))


@app.command()
@action(target="email")
def token(
    ctx: typer.Context,
    email: str = typer.Argument(..., help="the user's e-mail"),
    ttl: int = typer.Option(86400, help="lifetime in seconds"),
) -> None:
    """Issue a signed admin API token (JWT) for a user; it carries their role and an expiry.

    Example: synctool users token treasurer@example.org --ttl 3600
    """
    from synctool.ops.users import issue_token

    obj = ctx_obj(ctx)
    key_values(issue_token(obj.db, obj.rt, email, ttl))
