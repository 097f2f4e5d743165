"""`synctool users`: the team and their admin API tokens."""

from __future__ import annotations

import typer

from synctool.console import AsJson, ctx_obj, emit_json, key_values, render, sub_app

app = sub_app("The team: users with roles (viewer, admin, super_admin) and their admin API tokens.")


@app.command("list")
def list_(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List users.

    Example: synctool users list
    """
    from synctool.ops.users import list_users

    rows = list_users(ctx_obj(ctx).db)
    render(rows, as_json, columns=["id", "email", "role", "active", "invited_at"])


@app.command()
def invite(
    ctx: typer.Context,
    email: str = typer.Argument(..., help="their e-mail"),
    role: str = typer.Option("viewer", help="viewer, admin or super_admin"),
) -> None:
    """Add a user.

    Example: synctool users invite treasurer@example.org --role admin
    """
    from synctool.ops.users import InviteBody
    from synctool.ops.users import invite as op
    from synctool.validation import parse

    emit_json(op(ctx_obj(ctx).db, parse(InviteBody, {"email": email, "role": role}, where="arguments")))


@app.command()
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
