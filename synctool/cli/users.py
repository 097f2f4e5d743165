"""`synctool users`: the team and their admin API tokens; with ``--host-admin``, the host's operators."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from synctool.console import AsJson, action, ctx_obj, emit_json, key_values, render, sub_app
from synctool.errors import InvalidInput

if TYPE_CHECKING:
    from synctool import store
    from synctool.runtime import Runtime

app = sub_app(
    "The team: users, roles, API tokens and sign-in links. Each user has a role (viewer, admin, super_admin), admin "
    "API tokens and sign-in links to the staff page. With --host-admin: the host's operators, who see every "
    "organisation's overview on the host page (/host)."
)

HostAdmin = typer.Option(
    False,
    "--host-admin",
    help="the host's operators (in $SYNCTOOL_HOME/host, no organisation's), not an organisation's team; not with --org",
)


def _where(ctx: typer.Context, host_admin: bool) -> tuple[store.Connection, Runtime]:
    """The database and Runtime the command works on: the host's with ``--host-admin`` (the command's, so its
    record in the staff actions is the host's too), else the organisation's or the single install's."""
    obj = ctx_obj(ctx)
    if not host_admin:
        return obj.db, obj.rt
    environ = obj.environ or {}  # the process's, as the root read it
    named = obj.org if obj.org is not None else (environ.get("SYNCTOOL_ORG") or None)
    if named is not None:
        raise InvalidInput(
            f"--host-admin is the host's, not organisation {named}'s: drop --org (and SYNCTOOL_ORG)",
            "the host's operators belong to no organisation",
        )
    from synctool import host

    obj.runtime = host.runtime(environ)
    return obj.db, obj.rt


def _refuse_with_host(host_admin: bool, given: dict[str, object]) -> None:
    for option, value in given.items():
        if host_admin and value:
            raise InvalidInput(f"{option} is not for --host-admin", "the host's operators have no role and get no mail")


@app.command("list")
def list_(ctx: typer.Context, as_json: AsJson = False, host_admin: bool = HostAdmin) -> None:
    """List users (with --host-admin, the host's operators).

    Example: synctool users list
    """
    from synctool.ops.users import list_users

    conn, _ = _where(ctx, host_admin)
    rows = list_users(conn)
    render(rows, as_json, columns=["id", "email", "role", "active", "invited_at"])


@action(target="email", note="role")
def invite(
    ctx: typer.Context,
    email: str = typer.Argument(..., help="their e-mail"),
    role: str = typer.Option(None, help="viewer, admin or super_admin (default viewer)"),
    send: bool = typer.Option(False, "--send", help="e-mail them a sign-in link to the staff page (smtp: in config)"),
    host_admin: bool = HostAdmin,
) -> None:
    """Add a user; with --send, e-mail them a one-time sign-in link to the staff page (15 minutes).

    Example: synctool users invite treasurer@example.org --role admin --send
    """
    from synctool.ops.users import InviteBody
    from synctool.ops.users import invite as op
    from synctool.validation import parse

    _refuse_with_host(host_admin, {"--role": role, "--send": send})
    conn, rt = _where(ctx, host_admin)
    # a host operator is stored as an admin of the host's own database (the role says nothing on the host page)
    made = op(conn, parse(InviteBody, {"email": email, "role": "admin" if host_admin else role or "viewer"}, where="arguments"))
    user: dict[str, object] = dict(made)
    if send:
        from synctool.ops.sign_in import mail_link

        user["link"] = mail_link(conn, rt, made["email"])
    emit_json(user)


app.command("invite")(invite)
#: `users add` is `users invite` under the issue's name: one function, its own help
app.command(
    "add",
    help="Add a user (as `synctool users invite`); with --host-admin, a host operator, who signs in to the host "
    "page (/host) with `synctool users login-link EMAIL --host-admin`.\n\n"
    "Example: synctool users add ops@example.org --host-admin",
)(invite)


@app.command("login-link")
@action(target="email")
def login_link(
    ctx: typer.Context,
    email: str = typer.Argument(..., help="the user's e-mail"),
    as_json: AsJson = False,
    host_admin: bool = HostAdmin,
    url: str = typer.Option(
        None,
        "--url",
        help="with --host-admin: where the host is reached, for this link (default: the host's receiver.public_url)",
    ),
) -> None:
    """Print a one-time sign-in link to the staff page (`serve --admin-ui`) for a user: it works once, for 15
    minutes, and opens an 8-hour session. It starts with the public URL (receiver.public_url). With --host-admin,
    a host operator's link to the host page, URL/host/login/TOKEN: URL is --url, else receiver.public_url in
    $SYNCTOOL_HOME/host/config.yaml, else the receiver's address.

    Example: synctool users login-link treasurer@example.org
    """
    from synctool.ops import host_operators, sign_in

    if url and not host_admin:
        raise InvalidInput("--url is for --host-admin", "a staff page's link starts with its receiver.public_url")
    conn, rt = _where(ctx, host_admin)
    link = host_operators.login_link(conn, rt, email, url) if host_admin else sign_in.login_link(conn, rt, email)
    render(
        link,
        as_json,
        people=lambda d: typer.echo(f"{d['url']}\n(for {d['email']}, {d['role']}; works once, until {d['expires_at']})"),
    )


@app.command()
@action(target="user")
def update(
    ctx: typer.Context,
    user: str = typer.Argument(..., help="the user's id (synctool users list) or e-mail"),
    role: str = typer.Option(None, help="viewer, admin or super_admin"),
    deactivate: bool = typer.Option(False, "--deactivate", help="stop the user and their tokens"),
    activate: bool = typer.Option(False, "--activate", help="re-activate (old tokens stay invalid)"),
    host_admin: bool = HostAdmin,
) -> None:
    """Change a user's role, or deactivate them (with --host-admin, a host operator: --deactivate or --activate).

    Example: synctool users update 3 --deactivate
    """
    from synctool.ops.users import UserPatch, find_user_id
    from synctool.ops.users import update as op
    from synctool.validation import parse

    _refuse_with_host(host_admin, {"--role": role})
    conn, _ = _where(ctx, host_admin)
    patch = {"role": role, "deactivate": True if deactivate else None, "active": True if activate else None}
    parsed = parse(UserPatch, patch, where="options")
    emit_json(op(conn, find_user_id(conn, user), parsed))


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
