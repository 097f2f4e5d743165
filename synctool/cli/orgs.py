"""`synctool orgs`: the organisations of one install (``synctool/orgs.py``, ``ops/orgs.py``), each its own config, database and
secrets. `synctool --org NAME COMMAND` runs any other command for one of them."""

from __future__ import annotations

from collections.abc import Mapping

import typer

from synctool.console import AsJson, ctx_obj, emit_json, key_values, render, sub_app

app = sub_app(
    "Many organisations on one install. Add, list, show, remove and import them; each has its own config, database and "
    "secrets in the host's data folder ($SYNCTOOL_HOME, else ~/.local/share/synctool); `synctool --org NAME "
    "COMMAND` runs any command for one."
)

COLUMNS = ["name", "platforms", "due", "failed", "last_drain", "last_poll", "error"]


def _environ(ctx: typer.Context) -> Mapping[str, str]:
    """The environment the root read (``cli/main.py``: the process's, unless a caller handed one in)."""
    return ctx_obj(ctx).environ or {}


@app.command()
def add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="its name: lowercase letters, digits and '-', starting with a letter"),
    platforms: str = typer.Option(
        None, "--platforms", help="the platforms it uses, comma-separated (`synctool platforms` names them)"
    ),
    currency: str = typer.Option(None, "--currency", help="its CRM's one currency, ISO 4217 (default USD)"),
) -> None:
    """Create an organisation: its folder, a starter config (as `synctool init` writes one) and its database.

    Example: synctool orgs add riverside-food-bank --platforms NAME,NAME
    """
    from synctool.ops import orgs

    chosen = [p.strip() for p in platforms.split(",") if p.strip()] if platforms is not None else None
    key_values(orgs.add(name, _environ(ctx), platforms=chosen, currency=currency))


@app.command("list")
def list_(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List the organisations: platforms in use, jobs due, open failures, last drain and last poll, each read from
    its own database. An organisation that cannot be read shows its error, the others still list, and the exit
    code is 1.

    Example: synctool orgs list --json
    """
    from synctool.ops import orgs

    rows = orgs.list_all(_environ(ctx))
    if as_json:
        emit_json(rows)
    elif rows:
        render(rows, columns=COLUMNS if any("error" in r for r in rows) else COLUMNS[:-1])
    else:
        typer.echo("no organisations yet: `synctool orgs add NAME` creates one")
    if any("error" in r for r in rows):
        raise typer.Exit(1)


@app.command()
def show(ctx: typer.Context, name: str = typer.Argument(..., help="the organisation"), as_json: AsJson = False) -> None:
    """Show one organisation: its row of `orgs list`, its paths, and each secret it has not set and where to set
    it (its keyring service or its secrets.env).

    Example: synctool orgs show riverside-food-bank
    """
    from synctool.ops import orgs

    found = orgs.show(name, _environ(ctx))
    render(found, as_json)
    if "error" in found:
        raise typer.Exit(1)


@app.command()
def remove(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="the organisation"),
    erase: bool = typer.Option(False, "--erase", help="required: its config, database, secrets and backups are erased"),
    yes: bool = typer.Option(False, "--yes", help="do not ask"),
) -> None:
    """Erase an organisation: its folder (config, database with its -wal and -shm, secrets.env, backups kept in
    it), its schema on a PostgreSQL host (dropped with every row) and its keyring entries. There is no undo: take a backup first (`synctool --org NAME backup`) if in doubt.

    Example: synctool orgs remove riverside-food-bank --erase --yes
    """
    from synctool.errors import InvalidInput
    from synctool.ops import orgs

    if not erase:
        raise InvalidInput("orgs remove erases everything of the organisation: say so with --erase", "nothing was removed")
    environ = _environ(ctx)
    org = orgs.find(name, environ)
    if not yes:
        typer.confirm(f"Erase organisation {name} ({org.folder}) and its keyring entries, for good?", abort=True)
    removed = orgs.remove(name, environ)
    typer.echo(f"removed organisation {name}: {removed['folder']}")
    for file in removed["files"]:
        typer.echo(f"  file {file}")
    if "schema" in removed:
        typer.echo(f"  schema {removed['schema']}")
    for secret in removed["keyring"]:
        typer.echo(f"  keyring {removed['keyring_service']} {secret}")
    if not removed["keyring_read"]:  # SYNCTOOL_KEYRING=off, or no backend: what it may hold is left, and said
        typer.echo(f"the keyring was not read: remove any entries of service {removed['keyring_service']} by hand")
    typer.echo("log files (--log-file, config log_file) keep its lines until they rotate")


@app.command("import")
def import_(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="the new organisation's name"),
    config: str = typer.Option(..., "--config", help="the single install's config.yaml"),
    database: str = typer.Option(..., "--database", help="the single install's synctool.db (it may be in use)"),
) -> None:
    """Make an existing single-organisation install organisation NAME: its config and database copied (the
    database with SQLite's backup API, so a running serve or drain is no matter); every row kept. Secrets are not
    copied: it names those to set again for NAME, and where.

    Example: synctool orgs import riverside-food-bank --config ~/.config/synctool/config.yaml --database ~/.local/share/synctool/synctool.db
    """
    from synctool.ops import orgs

    key_values(orgs.import_existing(name, config, database, _environ(ctx)))
