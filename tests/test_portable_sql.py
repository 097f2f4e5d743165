"""Every SQL statement above ``store/`` is written for both engines (issue 59): SQLite 3.35+ and PostgreSQL 14+.
What one engine alone understands (SQLite's ``INSERT OR ...``, its date and JSON functions, ``GLOB``, ``PRAGMA``,
``rowid``, FTS5's ``MATCH``) is spelt by ``store.dialect`` or computed in Python. The allowlist names what is not
yet, each with its reason, so it can only shrink."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "synctool"

#: the SQLite-only spellings looked for in the package's string literals (docstrings and comments aside)
SQLITE_ONLY = {
    "INSERT OR": r"\bINSERT\s+OR\s+(IGNORE|REPLACE|ABORT|FAIL|ROLLBACK)\b",
    "REPLACE INTO": r"(?<!OR )\bREPLACE\s+INTO\b",
    "strftime(": r"\bstrftime\(",
    "datetime(": r"\bdatetime\(",
    "julianday(": r"\bjulianday\(",
    "json_*(": r"\bjson_(extract|valid|each|object|array|group_array|set|insert|patch|type)\(",
    "ifnull(": r"\bifnull\(",
    "group_concat(": r"\bgroup_concat\(",
    "GLOB": r"\bGLOB\b",
    "PRAGMA": r"\bPRAGMA\b",
    "sqlite_master": r"\bsqlite_(master|schema)\b",
    "LIMIT -1": r"\bLIMIT\s+-1\b",
    "last_insert_rowid(": r"\blast_insert_rowid\(",
    "rowid": r"\browid\b",
    "MATCH": r"\bMATCH\s+\?",
}

#: the queue, the CRM, the platforms and the package's own modules (``*.py``)
DATA_PLACES = ("queue", "crm", "platforms", "*.py")

#: ``path:construct`` -> why it stays for now (each entry one the PostgreSQL work still owes)
ALLOWED: dict[str, str] = {}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (a module's, a class's, a function's first string)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _strings(path: Path) -> list[tuple[int, str]]:
    """Each string literal of a module (an f-string's literal parts too) with its line, docstrings left out."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def _modules(places: tuple[str, ...]) -> list[Path]:
    return sorted(
        path for place in places for path in (PACKAGE.glob(place) if place.endswith(".py") else (PACKAGE / place).rglob("*.py"))
    )


@cache
def _any() -> re.Pattern[str]:
    """Any of them, so a string holding none (most) is passed over in one search."""
    return re.compile("|".join(f"(?:{pattern})" for pattern in SQLITE_ONLY.values()), re.IGNORECASE)


def _spellings(text: str) -> list[str]:
    """The SQLite-only spellings (``SQLITE_ONLY``'s names) in one string."""
    if not _any().search(text):
        return []
    return [name for name, pattern in SQLITE_ONLY.items() if re.search(pattern, text, re.IGNORECASE)]


def _found(places: tuple[str, ...]) -> dict[str, str]:
    """``path:construct`` -> the first line holding it, for each SQLite-only spelling in these places."""
    found: dict[str, str] = {}
    for path in _modules(places):
        where = path.relative_to(PACKAGE.parent).as_posix()
        for line, text in _strings(path):
            for name in _spellings(text):
                found.setdefault(f"{where}:{name}", f"line {line}: {text.strip()[:120]}")
    return found


def test_the_scan_sees_sql_in_strings_not_python_calls(tmp_path: Path):
    """The scan reads string literals: ``moment.strftime(...)`` in Python is not SQL; a docstring is not either."""
    module = tmp_path / "m.py"
    module.write_text(
        '"""Uses PRAGMA in words."""\n'
        "import datetime\n"
        "STAMP = datetime.datetime(2026, 1, 1).strftime('%Y')\n"
        "SQL = \"SELECT strftime('%Y', at) FROM t WHERE key GLOB ?\"\n"
        'OK = f"INSERT INTO t (a) VALUES (?) ON CONFLICT (a) DO NOTHING {STAMP}"\n'
    )
    hits = {name for _, text in _strings(module) for name in _spellings(text)}
    assert hits == {"strftime(", "GLOB"}


def test_the_folders_use_no_sqlite_utils_table_calls():
    """sqlite-utils' ``Table`` methods write SQLite's SQL: rows are put with plain SQL or ``store.put_row``."""
    found = [
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{n}"
        for path in _modules(DATA_PLACES)
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "store.database(" in line
    ]
    assert found == []


def test_a_gifts_soft_credits_are_the_keys_it_starts_whatever_they_hold(db):
    """The soft credits of a gift are the ledger's keys that start with its id and the mark: wildcards of any
    kind (GLOB's, LIKE's) in an external id are plain characters, and case counts."""
    from synctool.crm import soft_credits

    keys = ["a*b?[c]%_x_sc_1", "a*b?[c]%_x_sc_2", "aXb?[c]%_x_sc_1", "A*B?[C]%_X_sc_1", "a*b?[c]%_x", "a*b?[c]%_x_sc"]
    for key in keys:
        db.execute("INSERT INTO crm_writes (key, kind, state, updated_at) VALUES (?, 'gift', 'done', '2026-01-01')", (key,))
    assert [r["key"] for r in soft_credits.of_gift(db, "a*b?[c]%_x")] == ["a*b?[c]%_x_sc_1", "a*b?[c]%_x_sc_2"]


#: the operations, the web, the CLI, the console and the testing kit
SURFACE_PLACES = ("ops", "web", "cli", "console", "testing")

#: SQLite's alone too: a blob literal (PostgreSQL reads ``X''`` as a bit string; a blob goes as a parameter)
SQLITE_ONLY["X'' (a blob literal)"] = r"(^|[^\w'])X'[0-9a-f]*'"

#: SQLite-only calls, not SQL text: attribute -> what it is (``store.database`` only when called on ``store``)
SQLITE_CALLS = {"lastrowid": "cursor.lastrowid (RETURNING id instead)", "database": "store.database: sqlite-utils"}


def _calls_of(path: Path) -> list[tuple[int, str]]:
    """Each SQLite-only call a module makes, with its line."""
    return [
        (node.lineno, SQLITE_CALLS[node.attr])
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute)
        and node.attr in SQLITE_CALLS
        and (node.attr == "lastrowid" or ast.unparse(node.value) == "store")
    ]


def _calls(places: tuple[str, ...]) -> dict[str, str]:
    """``path:call`` -> the first line making it, for each SQLite-only call in these places."""
    found: dict[str, str] = {}
    for path in _modules(places):
        for line, call in _calls_of(path):
            found.setdefault(f"{path.relative_to(PACKAGE.parent).as_posix()}:{call}", f"line {line}")
    return found


#: every place above store/ (store/ alone speaks each engine's own SQL)
PLACES = SURFACE_PLACES + DATA_PLACES


def test_no_sqlite_only_sql_above_the_store():
    """Nothing SQLite-only outside the allowlist, and the allowlist only shrinks: an entry whose construct is gone
    goes too (the list says what is left, never more). One scan for both: it reads every module."""
    found = _found(PLACES) | _calls(PLACES)
    assert {k: v for k, v in found.items() if k not in ALLOWED} == {}
    assert [k for k in ALLOWED if k not in found] == []
    assert len(_modules(PLACES)) > 200  # the places are there


def test_the_scan_finds_each_construct(tmp_path: Path):
    """Each SQLite-only spelling is found where SQL is written; the portable spellings are not."""
    module = tmp_path / "m.py"
    module.write_text(
        "conn.execute('INSERT OR IGNORE INTO t (a) VALUES (?)', (1,))\n"
        "conn.execute(f'DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} LIMIT ?)', (5,))\n"
        "conn.execute('SELECT ifnull(a, 0), group_concat(b) FROM t GROUP BY c LIMIT -1')\n"
        "conn.execute(\"UPDATE t SET body = X'' WHERE id = 1\")\n"
        "conn.execute('PRAGMA optimize')\n"
        "conn.execute(\"SELECT name FROM sqlite_master WHERE type = 'table'\")\n"
        "conn.execute('INSERT INTO t (a) VALUES (?) ON CONFLICT (a) DO NOTHING RETURNING id', (1,))\n"
        "conn.execute('SELECT coalesce(a, 0) FROM t WHERE lower(b) LIKE lower(?) ORDER BY c NULLS FIRST', ('x',))\n"
        "n = cur.lastrowid\n"
        "store.database(conn).table('t').upsert(row, pk='id')\n"
    )
    hits = {name for _, text in _strings(module) for name in _spellings(text)}
    assert hits == {
        "INSERT OR",
        "rowid",
        "ifnull(",
        "group_concat(",
        "LIMIT -1",
        "X'' (a blob literal)",
        "PRAGMA",
        "sqlite_master",
    }
    assert {call for _, call in _calls_of(module)} == set(SQLITE_CALLS.values())
