"""`synctool store`: the database itself, moved between engines (``ops/store_copy.py``)."""

from __future__ import annotations

import typer

from synctool.console import AsJson, ctx_obj, key_values, render, sub_app

app = sub_app("The database itself: copy it whole to PostgreSQL, or back to a SQLite file, checked row by row.")


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

    Example: synctool store copy --to postgresql://synctool@db.example.org/synctool
    """
    from synctool.ops.store_copy import copy as copy_op

    obj = ctx_obj(ctx)
    from synctool.ops.store_copy import refuse_host

    refuse_host(obj.rt)
    result = copy_op(obj.rt, obj.db, to, overwrite=overwrite)

    def for_people(result: dict) -> None:
        key_values({"from": result["from"], "to": result["to"], "rows": result["rows"]})
        render(result["tables"], columns=["table", "rows", "copied", "digest", "check"])
        typer.echo("rebuilt on the target, not copied:")
        for note in result["rebuilt"]:
            typer.echo(f"  {note}")

    render(result, as_json, people=for_people)
    if result["differences"]:
        found = "; ".join(f"{table}: {difference}" for table, difference in result["differences"].items())
        typer.echo(f"Error: the copy differs from the source ({found}); the target is left as it is at {result['to']}", err=True)
        raise typer.Exit(1)
