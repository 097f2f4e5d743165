"""`synctool store`: the database itself, moved between engines (``ops/store_copy.py``)."""

from __future__ import annotations

import typer

from synctool.console import AsJson, ctx_obj, emit_json, key_values, render, sub_app

app = sub_app("Copy the whole database to PostgreSQL, or back to SQLite. Each table is checked row by row.")


@app.command()
def copy(
    ctx: typer.Context,
    to: str = typer.Option(..., "--to", help="the target: postgresql://USER@HOST[:PORT]/DB (empty), or a new SQLite file's path"),
    overwrite: bool = typer.Option(False, help="replace an existing SQLite file"),
    as_json: AsJson = False,
) -> None:
    """Copy every table's rows of the database to an empty PostgreSQL database or a new SQLite file, in one
    transaction, then read both again and compare them row by row (each table's rows and digest printed). Stop cron
    and the receiver first: what is written meanwhile is not copied, and the check then fails.

    The target's schema is made first; the sync log's search, the schema's own records and the ids to come are
    rebuilt on the target, not copied (said at the end). A PostgreSQL database that holds synctool data, or a file
    that exists (without --overwrite), is refused with nothing written (exit 2); a difference found by the check
    exits 1 and leaves the target as it is. The password for PostgreSQL: the keyring's DATABASE_PASSWORD, PGPASSWORD
    or ~/.pgpass, never the URL.

    On a host with organisations and no --org, every database of the host is copied: each organisation into a
    schema of its own in the PostgreSQL database (org_NAME, '-' written '_'), the host's own (its operators) into
    host, the single install beside them into the database's own schema; to a folder, each to its place under it
    (FOLDER/orgs/NAME/synctool.db, FOLDER/host/synctool.db, FOLDER/synctool.db). Every target is looked at first;
    each database is then copied in a transaction of its own. With --org NAME, that organisation alone (into its
    schema, org_NAME).

    Example: synctool store copy --to postgresql://synctool@db.example.org/synctool
    """
    from synctool import store
    from synctool.cli.host import host_parts, part_runtime
    from synctool.ops import store_copy

    obj = ctx_obj(ctx)
    names = host_parts(ctx)
    if names:  # a host with organisations, none named: each of its databases
        single = part_runtime(ctx, None) if None in names else None
        results = store_copy.copy_host(obj.environ or {}, single, to, overwrite=overwrite)
    else:
        results = {"": store_copy.copy(obj.rt, obj.db, to, overwrite=overwrite)}

    def for_people(result: dict) -> None:
        key_values({"from": result["from"], "to": result["to"], "rows": result["rows"]})
        render(result["tables"], columns=["table", "rows", "copied", "digest", "check"])

    if as_json:
        emit_json(results if names else results[""])
    else:
        for label, result in results.items():
            if label:
                typer.echo(f"== {label} ==")
            for_people(result)
        typer.echo("rebuilt on the target, not copied:")
        for note in store.copy.REBUILT_NOTES:
            typer.echo(f"  {note}")
    failed = [(label, result) for label, result in results.items() if result["differences"]]
    for label, result in failed:
        found = "; ".join(f"{table}: {difference}" for table, difference in result["differences"].items())
        part = f"{label}: " if label else ""
        typer.echo(
            f"Error: {part}the copy differs from the source ({found}); the target is left as it is at {result['to']}", err=True
        )
    if failed:
        raise typer.Exit(1)
