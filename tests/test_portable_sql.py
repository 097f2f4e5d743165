"""SQL outside ``store/`` is written for both engines (issue 59): SQLite (3.35+) and PostgreSQL (14+) accept it and
answer alike. Only ``store/`` knows the engine (``store.dialect`` spells what differs), so no SQLite-only construct
appears in the SQL of the folders checked here: in any string of their code (docstrings left out, an f-string's
text included), nor the two SQLite-only calls (``cursor.lastrowid``, sqlite-utils' ``store.database``).

``ALLOWED`` lists what is not converted yet, each entry with why; an entry that no longer occurs fails too, so the
list can only shrink."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "synctool"

#: the folders (and top-level modules) of synctool whose SQL is portable, checked here
CHECKED = ["ops", "web", "cli", "console", "testing"]

#: construct -> the pattern that finds it in SQL text (case ignored)
SQLITE_ONLY = {
    "INSERT OR": r"\bINSERT\s+OR\s+(IGNORE|REPLACE|ABORT|FAIL|ROLLBACK)\b",
    "REPLACE INTO": r"(^|[^\w.])REPLACE\s+INTO\b",
    "strftime(": r"\bstrftime\s*\(",
    "datetime(": r"\bdatetime\s*\(",
    "julianday(": r"\bjulianday\s*\(",
    "json_extract(": r"\bjson_extract\s*\(",
    "ifnull(": r"\bifnull\s*\(",
    "group_concat(": r"\bgroup_concat\s*\(",
    "GLOB": r"\sGLOB\s",
    "PRAGMA": r"\bPRAGMA\s",
    "sqlite_master": r"\bsqlite_(master|schema)\b",
    "LIMIT -1": r"\bLIMIT\s+-\s*1\b",
    "rowid": r"\b(_?rowid_?|oid)\b",
    "last_insert_rowid(": r"\blast_insert_rowid\s*\(",
    "X'' (a blob literal)": r"(^|[^\w'])X'[0-9a-f]*'",
}

#: the SQLite-only calls outside SQL text: attribute -> what it is
SQLITE_CALLS = {"lastrowid": "cursor.lastrowid (use RETURNING id)", "database": "store.database: sqlite-utils"}

#: (path under synctool/, construct) -> why it stays for now; the list only shrinks
ALLOWED: dict[tuple[str, str], str] = {}


def _files() -> list[Path]:
    found = []
    for name in CHECKED:
        path = PACKAGE / name
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    kept = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                kept.add(id(first.value))
    return kept


def constructs(source: str) -> list[tuple[int, str]]:
    """Each SQLite-only construct in ``source`` (a module's code): (line, construct)."""
    tree = ast.parse(source)
    skipped = _docstrings(tree)
    texts: list[tuple[int, str]] = []
    calls: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # its text, each {expression} standing for a name
            text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
            texts.append((node.lineno, text))
            skipped |= {id(v) for v in node.values}
        elif isinstance(node, ast.Attribute) and node.attr in SQLITE_CALLS:
            if node.attr == "lastrowid" or ast.unparse(node.value) == "store":
                calls.append((node.lineno, SQLITE_CALLS[node.attr]))
    texts += [
        (n.lineno, n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skipped
    ]
    found = [
        (line, construct)
        for line, text in texts
        for construct, pattern in SQLITE_ONLY.items()
        if re.search(pattern, text, re.IGNORECASE)
    ]
    return sorted(set(found + calls))


def _found() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for path in _files():
        for line, construct in constructs(path.read_text(encoding="utf-8")):
            found.setdefault((str(path.relative_to(PACKAGE)), construct), []).append(line)
    return found


def test_the_sql_outside_the_store_is_portable():
    unlisted = {key: lines for key, lines in _found().items() if key not in ALLOWED}
    assert not unlisted, "SQLite-only SQL outside store/ (write it for both engines, or ask store.dialect): " + "; ".join(
        f"synctool/{path}:{','.join(map(str, lines))}: {construct}" for (path, construct), lines in sorted(unlisted.items())
    )


def test_the_allowed_list_only_shrinks():
    found = _found()
    stale = [key for key in ALLOWED if key not in found]
    assert not stale, f"no longer found, take them off ALLOWED: {stale}"
    assert all(why.strip() for why in ALLOWED.values()), "each allowed construct says why it stays"


def test_every_checked_folder_is_there():
    assert all((PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file() for name in CHECKED)
    assert len(_files()) > 100


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('conn.execute("INSERT OR IGNORE INTO t (a) VALUES (?)", (1,))', ["INSERT OR"]),
        ("conn.execute(\"SELECT strftime('%s', at) FROM t\")", ["strftime("]),
        ('conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} LIMIT ?)", (5,))', ["rowid"]),
        ('q = "SELECT ifnull(a, 0), group_concat(b) FROM t GROUP BY c LIMIT -1"', ["LIMIT -1", "group_concat(", "ifnull("]),
        ("conn.execute(\"UPDATE t SET body = X'' WHERE id = 1\")", ["X'' (a blob literal)"]),
        ('conn.execute("PRAGMA optimize")', ["PRAGMA"]),
        ("conn.execute(\"SELECT name FROM sqlite_master WHERE type = 'table'\")", ["sqlite_master"]),
        ("n = cur.lastrowid", ["cursor.lastrowid (use RETURNING id)"]),
        ('store.database(conn).table("t").upsert(row, pk="id")', ["store.database: sqlite-utils"]),
        ('def f():\n    """Runs PRAGMA optimize, then VACUUM."""\n    return datetime.strftime(now, "%Y")', []),
        ('conn.execute("INSERT INTO t (a) VALUES (?) ON CONFLICT (a) DO NOTHING RETURNING id", (1,))', []),
        ("conn.execute(\"SELECT coalesce(a, 0) FROM t WHERE lower(b) LIKE lower(?) ORDER BY c NULLS FIRST\", ('x',))", []),
    ],
)
def test_the_scan_finds_what_it_looks_for(source, expected):
    assert sorted(construct for _, construct in constructs(source)) == sorted(expected)
