"""Renamed config keys, said where someone reads them: `doctor` and `init` always, any other command once.

An installation's config outlives releases: a key a release renamed (``smtp.starttls``) is still read, and the
person who upgrades is told what to rename by the first command they run, not by every cron run after it
(``drain`` every minute would add the line to cron's log forever). What was said is recorded in the database."""

from __future__ import annotations

import json

from synctool import store
from synctool.config import Config

_SAID = "renamed_keys_said"


def unsaid(conn: store.Connection, config: Config) -> list[str]:
    """The config's renamed-key lines not yet said by a command against this database, now recorded as said.
    Recording is best effort: with the database busy, the lines are said again by the next command."""
    renamed = config.renamed_keys
    if not renamed:
        return []
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (_SAID,)).fetchone()
    said = set(json.loads(row[0])) if row else set()
    new = [line for line in renamed if line not in said]
    if new:
        try:
            with store.atomic(conn):
                conn.execute(
                    "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (_SAID, json.dumps(sorted(said | set(new)))),
                )
        except store.Busy:
            pass
    return new
