"""The few SQL spellings that differ between engines, as text a query above ``store/`` writes in: each function
returns SQLite's spelling today; PostgreSQL's comes with its connection (issue 59). A caller never names an engine.
"""

from __future__ import annotations

# --- sql-b: the queue's, the CRM's and the platforms' spellings (synctool/queue, crm, platforms, *.py) ---


def arrival(table: str = "") -> str:
    """The order rows of a table arrived in (a tie-break after a time that may repeat under a stopped clock):
    SQLite's ``rowid``. ``table`` qualifies it (``jobs``, an alias) where a query reads the table twice."""
    return f"{table}.rowid" if table else "rowid"


def full_text(index: str, text: str) -> tuple[str, str]:
    """A condition on a table and its one parameter: the rows whose text its full-text ``index`` (SQLite: an FTS5
    trigram table named so, kept by triggers) holds ``text`` (three characters or more), whatever its case."""
    return f"rowid IN (SELECT rowid FROM {index} WHERE {index} MATCH ?)", '"' + text.replace('"', '""') + '"'


def last_chars(expr: str, n: int) -> str:
    """The last ``n`` characters of ``expr`` (all of it when shorter), spelt as the index on it is."""
    return f"substr({expr}, -{int(n)})"
