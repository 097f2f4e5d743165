"""``synctool kind ...``: KindDesk's own commands (built only when the group is named)."""

from __future__ import annotations

import typer

from synctool.platform.edges import ctx_obj, emit_json, sub_app

app = sub_app("KindDesk: its gifts as KindDesk lists them.")


@app.command("gifts")
def gifts(ctx: typer.Context, since: str = typer.Option(None, help="an ISO time: only the gifts since then")) -> None:
    """List KindDesk's gifts (one request), as JSON.

    Example: synctool kind gifts --since 2026-10-01T00:00:00Z
    """
    from synctool.platform import using

    with using(ctx_obj(ctx).rt, "kind") as client:
        emit_json(client.gifts(since))
