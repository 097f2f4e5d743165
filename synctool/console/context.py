"""What a command runs with: its Runtime and its database, each opened on first use, kept on the root
click context (``ctx_obj``) so every command of one run shares them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    import httpx

    from synctool import store
    from synctool.config import Config
    from synctool.runtime import Runtime


@dataclass
class AppContext:
    """The command's Runtime (built on first use from ``--config`` and ``environ``, the process environment unless
    the caller hands one in with its transports: ``app(obj=AppContext(environ=..., transports=...))``)
    and its database."""

    config_path: str | None = None
    #: the organisation the command runs for (``--org``; else ``$SYNCTOOL_ORG`` in ``environ``, read by the Runtime)
    org: str | None = None
    runtime: Runtime | None = None
    environ: Mapping[str, str] | None = None
    transports: Mapping[str, httpx.BaseTransport] = field(default_factory=dict)
    _db: store.Connection | None = None
    extra: dict[str, object] = field(default_factory=dict)
    #: writes one row of the staff actions log: ``(conn, action, target, note, outcome)`` (the CLI's root sets it,
    #: ``synctool.cli.main``; none: a command run without the root records nothing)
    log_action: Callable[[store.Connection, str, str | None, str | None, str], None] | None = None

    @property
    def rt(self) -> Runtime:
        if self.runtime is None:
            from synctool.runtime import Runtime

            self.runtime = Runtime.from_environ(self.config_path, self.environ, org=self.org, transports=self.transports)
        return self.runtime

    @property
    def config(self) -> Config:
        return self.rt.config

    @property
    def db(self) -> store.Connection:
        if self._db is None:
            from synctool import renamed_keys

            self._db = self.rt.open_database()
            for line in renamed_keys.unsaid(self._db, self.rt.config):
                typer.echo(line, err=True)
        return self._db

    def close_database(self) -> None:
        """The command's database closed as the command ends (the CLI's root context's close): a PostgreSQL
        connection goes back to its pool then, not whenever the garbage collector reaches it."""
        db, self._db = self._db, None
        if db is not None:
            db.close()


def ctx_obj(ctx: typer.Context) -> AppContext:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = AppContext()
    return root.obj
