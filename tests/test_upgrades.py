"""Databases written by older synctools open with today's: every row they held is still there with its values,
and the commands read them. tests/data/RELEASES.md says how each file was made (by that commit's own commands)
and what it holds; each test copies one, unzipped, to its folder and opens it with ``store.connect``."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
import time
from collections import Counter
from pathlib import Path

import jwt
import pytest

from synctool import mappings, settings, store
from synctool.errors import InvalidSignature
from tests.helpers import runtime

DATA = Path(__file__).parent / "data"
RELEASES = ["0.1.0", "0.2.0", "0.3.0-dev"]
#: the two releases whose fixtures were made by the same script (0.3.0-dev's with more in it)
SCRIPTED = ["0.2.0", "0.3.0-dev"]
#: tables a migration retires on purpose (a fixture's rows there are carried elsewhere or not needed)
RETIRED_TABLES = {
    "_migrations": "0.1.0's record of its migrations, carried into _sqlite_migrations (store._bridge)",
    "search_state": "how far the search index was filled in arrears, before it followed every write",
}
#: the signing secret the fixtures' admin API tokens were issued with (tests/data/RELEASES.md)
JWT_SECRET = "fixture-admin-jwt-secret-0123456789abcdef"

# the jobs of the scripted fixtures: (source, entity type, entity id) -> (status, attempts, constituent, gift, amount, event)
ADA = "donations_QiN7blzUhiwXBVBr"
JOBS = {
    ("portal", "user", "u1"): ("succeeded", 1, "959485", None, None, None),
    ("donations", "transaction", "QiN7blzUhiwXBVBr"): ("succeeded", 1, "959480", "959484", "10", "evt-gb-1"),
    ("donations", "refund", "rf_QiN7blzUhiwXBVBr"): ("succeeded", 1, None, "959484", "-4.00", "evt-gb-3"),
    ("donations", "transaction", "FailsT2"): ("failed", 3, None, None, "25", "evt-gb-2"),
    ("donations", "transaction", "PreviewT3"): ("previewed", 0, None, None, "7", "evt-gb-4"),
}
JOBS_030_DEV = {
    ("donations", "transaction", "AdaPhoneT4"): ("succeeded", 1, "959480", "959487", "15", "evt-gb-5"),
    ("donations", "transaction", "AdaMailT5"): ("review", 0, None, None, "20", "evt-gb-6"),
}


def as_written(release: str, folder: Path) -> sqlite3.Connection:
    """The fixture as its release left it, read-only (``immutable``: nothing, not even a WAL, is written)."""
    path = folder / f"as-written-{release}.db"
    path.write_bytes(gzip.decompress((DATA / f"release-{release}.db.gz").read_bytes()))
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


@pytest.fixture(params=RELEASES)
def release(request) -> str:
    return request.param


def upgraded(release: str, folder: Path, env: dict[str, str]) -> sqlite3.Connection:
    """The fixture, copied and opened with today's code (which migrates it); the commands use it too."""
    path = folder / f"release-{release}.db"
    path.write_bytes(gzip.decompress((DATA / f"release-{release}.db.gz").read_bytes()))
    env["SYNCTOOL_DB"] = str(path)
    return store.connect(path)


def tables(conn: sqlite3.Connection) -> list[str]:
    """The tables that hold data (the search index's virtual table and its shadow tables are derived)."""
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'jobs_search%'"
    )
    return [r[0] for r in rows]


def test_every_row_survives_the_upgrade_with_its_values(release, tmp_path, env):
    before = as_written(release, tmp_path)
    conn = upgraded(release, tmp_path, env)
    now = set(tables(conn))
    lost: dict[str, object] = {}
    for table in tables(before):
        if table in RETIRED_TABLES and table not in now:
            continue
        columns = ", ".join(f'"{r[1]}"' for r in before.execute(f'PRAGMA table_info("{table}")'))
        old = Counter(tuple(r) for r in before.execute(f'SELECT {columns} FROM "{table}"'))
        try:
            new = Counter(tuple(r) for r in conn.execute(f'SELECT {columns} FROM "{table}"'))
        except sqlite3.OperationalError as exc:  # the table or one of its columns is gone
            lost[table] = str(exc)
            continue
        missing = old - new
        extra = Counter() if table == "_sqlite_migrations" else new - old  # today's migrations follow the release's
        if missing or extra:
            lost[table] = {"missing": sorted(missing, key=repr), "extra": sorted(extra, key=repr)}
    assert lost == {}
    before.close()
    conn.close()


def test_release_0_1_0_keeps_its_rows(tmp_path, env, cli):
    conn = upgraded("0.1.0", tmp_path, env)
    [job] = conn.execute("SELECT * FROM jobs").fetchall()
    what = (job["source"], job["entity_type"], job["entity_id"], job["external_id"])
    assert what == ("donations", "transaction", "T1", "donations_T1")
    assert (job["status"], job["attempts"], job["delivery_id"]) == ("queued", 0, 1)
    delivery = conn.execute("SELECT * FROM deliveries WHERE id = 1").fetchone()
    assert (delivery["source"], delivery["event_id"], delivery["event_type"]) == ("donations", "evt-1", "transaction.succeeded")
    assert json.loads(delivery["body"])["data"] == {"id": "T1"}
    assert settings.get(conn, "crm_environment") == "sandbox"
    assert settings.cache_get(conn, "email_link", "ada@example.org") == {"constituent_id": "959480"}
    assert mappings.get(conn, "type_default", "donations:default") == {"fund_id": 2398}
    poll = conn.execute("SELECT * FROM poll_state WHERE source = 'donations'").fetchone()
    assert (poll["watermark"], poll["last_result"]) == ("2026-11-01T00:00:00Z", "ok")
    user = conn.execute("SELECT * FROM portal_users WHERE id = 'u1'").fetchone()
    assert (user["email"], user["last_name"]) == ("u1@example.org", "One")
    conn.close()

    listed = json.loads(cli("syncs", "list", "--json").stdout)
    assert [(r["external_id"], r["status"]) for r in listed["items"]] == [("donations_T1", "queued")]
    found = json.loads(cli("syncs", "list", "--q", "donations_T1", "--json").stdout)  # the search index has it
    assert [r["external_id"] for r in found["items"]] == ["donations_T1"]
    types = json.loads(cli("mappings", "types", "--json").stdout)
    assert [(t["key"], t["fund_id"]) for t in types] == [("donations:default", 2398)]


@pytest.mark.parametrize("release", SCRIPTED)
def test_jobs_deliveries_and_attempts_are_kept(release, tmp_path, env):
    conn = upgraded(release, tmp_path, env)
    expected = {**JOBS, **(JOBS_030_DEV if release == "0.3.0-dev" else {})}
    rows = conn.execute(
        "SELECT j.*, d.event_id, (SELECT count(*) FROM job_attempts a WHERE a.job_id = j.id) AS attempt_rows"
        " FROM jobs j LEFT JOIN deliveries d ON d.id = j.delivery_id"
    ).fetchall()
    found = {
        (r["source"], r["entity_type"], r["entity_id"]): (
            r["status"], r["attempts"], r["crm_constituent_id"], r["crm_gift_id"], r["amount"], r["event_id"]
        )
        for r in rows
    }  # fmt: skip
    assert found == expected
    jobs = {r["entity_id"]: r for r in rows}
    ada = jobs["QiN7blzUhiwXBVBr"]
    assert (ada["message"], ada["email"], ada["name"]) == ("gift created", "Ada.Lovelace@Example.org", "Ada Lovelace")
    assert jobs["rf_QiN7blzUhiwXBVBr"]["external_id"] == ADA
    failed = jobs["FailsT2"]
    assert failed["last_error"].startswith("gift donations_FailsT2 was not stored: CRM answered 500")
    assert failed["attempt_rows"] == 6 and failed["finished_at"] and failed["resolved_at"] is None  # 3 sent, 3 confirmed absent
    plan = json.loads(jobs["PreviewT3"]["plan"])
    assert plan["decision"] == "would create Alan Turing <alan@example.org>"
    assert [w["path"] for w in plan["writes"]] == ["/constituents", "/constituents/-1/gifts"]
    assert plan["writes"][1]["body"]["external_id"] == "donations_PreviewT3" and plan["writes"][1]["body"]["fund_id"] == 2399
    deliveries = conn.execute("SELECT event_id, event_type, body, verified FROM deliveries ORDER BY id").fetchall()
    assert {d["event_id"] for d in deliveries} == {e[5] for e in expected.values() if e[5]}
    assert all(d["verified"] == 0 for d in deliveries)  # injected: no signature was checked
    refund = next(d for d in deliveries if d["event_type"] == "refund.created")
    assert json.loads(refund["body"])["data"]["amount"] == 4
    conn.close()


@pytest.mark.parametrize("release", SCRIPTED)
def test_settings_mappings_and_ledgers_are_kept(release, tmp_path, env):
    conn = upgraded(release, tmp_path, env)
    assert settings.get(conn, "sync_mode") == "preview"
    assert settings.get(conn, "crm_environment") == "production"
    assert settings.get(conn, "alert_recipients") == ["ops@example.org", "treasurer@example.org"]
    assert settings.get(conn, "refund_policy") == "delete"
    assert settings.get(conn, "mailing_sync_enabled") is False
    if release == "0.3.0-dev":
        assert (settings.get(conn, "donor_updates"), settings.get(conn, "donor_matching")) == ("review", "review")
    assert mappings.get(conn, "type_default", "donations:general") == {"fund_id": 2398, "campaign_id": 822}
    assert mappings.get(conn, "campaign_override", "118722") == {"fund_id": 2399, "campaign_id": 823}
    assert mappings.get(conn, "payment_method", "donations:card") == {"payment_type_id": 1509, "gift_type_id": 1}
    funds = conn.execute("SELECT count(*) FROM caches WHERE kind = 'crm:funds'").fetchone()[0]
    assert funds == 5 and settings.cache_get(conn, "email_link", "ada.lovelace@example.org") == {"constituent_id": "959480"}
    write = conn.execute("SELECT * FROM crm_writes WHERE key = ?", (ADA,)).fetchone()
    assert (write["state"], write["crm_id"], write["amount"], write["deductible"]) == ("done", "959484", "6.00", "6.00")
    [refund] = conn.execute("SELECT * FROM refunds").fetchall()
    assert (refund["refund_id"], refund["gift_external_id"], refund["state"]) == ("rf_QiN7blzUhiwXBVBr", ADA, "applied")
    assert (refund["amount"], refund["amount_before"], refund["amount_after"]) == ("4.00", "10.00", "6.00")
    names = {r["id"]: (r["first_name"], r["last_name"]) for r in conn.execute("SELECT * FROM crm_constituents")}
    assert sorted(names.values()) == [("Ada", "Lovelace"), ("Grace", "Hopper"), ("Una", "One")]
    assert names[959480] == ("Ada", "Lovelace")
    assert conn.execute("SELECT normalized FROM crm_constituent_emails WHERE constituent_id = 959480").fetchone()[0] == (
        "ada.lovelace@example.org"
    )
    portal = conn.execute("SELECT * FROM portal_users WHERE id = 'u1'").fetchone()
    assert (portal["email"], portal["first_name"], portal["crm_constituent_id"]) == ("u1@example.org", "Una", "959485")
    conn.close()


@pytest.mark.parametrize("release", SCRIPTED)
def test_users_and_their_admin_api_tokens_are_kept(release, tmp_path, env):
    conn = upgraded(release, tmp_path, env)
    users = {r["email"]: (r["id"], r["role"], r["active"], r["token_version"]) for r in conn.execute("SELECT * FROM users")}
    expected = {
        "treasurer@example.org": (1, "admin", 1, 0),
        "viewer@example.org": (2, "viewer", 1, 1),  # deactivated and activated again: its older tokens stay invalid
        "boss@example.org": (3, "super_admin", 1, 0),
        "former@example.org": (4, "viewer", 0, 1),
    }
    if release == "0.3.0-dev":
        expected["newhire@example.org"] = (5, "viewer", 1, 0)  # invited through the staff page
    assert users == expected

    # a token as that release issued it (`synctool users token`: sub, role, iat, exp, ver; HS256) still works
    env["ADMIN_JWT_SECRET"] = JWT_SECRET
    rt = runtime()

    def token(email: str, role: str, ver: int) -> str:
        now = int(time.time())
        return jwt.encode({"sub": email, "role": role, "iat": now, "exp": now + 600, "ver": ver}, JWT_SECRET, algorithm="HS256")

    from synctool.ops.users import verify_token

    assert verify_token(conn, rt, token("treasurer@example.org", "admin", 0))["role"] == "admin"
    assert verify_token(conn, rt, token("viewer@example.org", "viewer", 1))["email"] == "viewer@example.org"
    for stale in (token("viewer@example.org", "viewer", 0), token("former@example.org", "viewer", 0)):
        with pytest.raises(InvalidSignature):
            verify_token(conn, rt, stale)
    conn.close()


def test_release_0_3_0_dev_keeps_its_staff_page_and_donor_records(tmp_path, env):
    conn = upgraded("0.3.0-dev", tmp_path, env)
    links = [(r["user_id"], r["used_at"] is not None) for r in conn.execute("SELECT * FROM login_links ORDER BY created_at")]
    assert links == [(3, True), (4, True), (4, False), (1, False)]
    assert all(len(r[0]) == 64 for r in conn.execute("SELECT token_hash FROM login_links"))  # SHA-256, never the link
    sessions = [
        (r["user_id"], r["ended_at"] is not None) for r in conn.execute("SELECT * FROM staff_sessions ORDER BY created_at")
    ]
    assert sessions == [(3, True), (4, False)]
    # a link or session of a user deactivated before the upgrade stays out if they are reactivated (m013)
    for table in ("login_links", "staff_sessions"):
        revoked = {(r["user_id"], r["revoked_at"] is not None) for r in conn.execute(f"SELECT * FROM {table}")}
        assert {user for user, is_revoked in revoked if is_revoked} == {4}, table
    actions = [
        (r["who"], r["via"], r["action"], r["target"], r["outcome"])
        for r in conn.execute("SELECT * FROM staff_actions ORDER BY id")
    ]
    assert actions == [
        ("boss@example.org", "page", "sign in", "boss@example.org", "done"),
        ("boss@example.org", "page", "invite", "newhire@example.org", "done"),
        ("boss@example.org", "page", "sign out", "boss@example.org", "done"),
        ("former@example.org", "page", "sign in", "former@example.org", "done"),
    ]
    [change] = conn.execute("SELECT * FROM donor_changes").fetchall()
    assert (change["constituent_id"], change["kind"], change["status"], change["external_id"]) == (
        "959480", "phone", "pending", "donations_AdaPhoneT4"
    )  # fmt: skip
    assert json.loads(change["value"]) == {"number": "+14155550199"} and change["match_key"] == "14155550199"
    [match] = conn.execute("SELECT * FROM donor_matches").fetchall()
    assert (match["external_id"], match["email"], match["status"]) == ("donations_AdaMailT5", "ada@analytical.example", "pending")
    assert [c["constituent_id"] for c in json.loads(match["candidates"])] == ["959480"]
    held = conn.execute("SELECT status FROM jobs WHERE id = ?", (match["job_id"],)).fetchone()[0]
    assert held == "review"
    conn.close()


@pytest.mark.parametrize("release", SCRIPTED)
def test_the_commands_read_an_upgraded_database(release, tmp_path, env, cli):
    upgraded(release, tmp_path, env).close()
    listed = json.loads(cli("syncs", "list", "--limit", "100", "--json").stdout)
    statuses = {(r["source"], r["entity_id"]): r["status"] for r in listed["items"]}
    expected = {**JOBS, **(JOBS_030_DEV if release == "0.3.0-dev" else {})}
    assert statuses == {(source, entity): job[0] for (source, _, entity), job in expected.items()}
    failed = json.loads(cli("syncs", "list", "--status", "failed", "--json").stdout)["items"]
    assert [r["external_id"] for r in failed] == ["donations_FailsT2"]
    found = json.loads(cli("syncs", "list", "--q", "Lovelace", "--json").stdout)["items"]  # the search index has them
    adas = {ADA} | ({"donations_AdaPhoneT4", "donations_AdaMailT5"} if release == "0.3.0-dev" else set())
    assert {r["external_id"] for r in found} == adas

    types = json.loads(cli("mappings", "types", "--json").stdout)
    assert [(t["key"], t["fund_id"], t["campaign_id"]) for t in types] == [("donations:general", 2398, 822)]
    overrides = json.loads(cli("mappings", "overrides", "--json").stdout)
    assert [(o["key"], o["fund_id"], o["campaign_id"]) for o in overrides] == [("118722", 2399, 823)]
    users = json.loads(cli("users", "list", "--json").stdout)
    assert [(u["email"], u["active"]) for u in users][:4] == [
        ("treasurer@example.org", True),
        ("viewer@example.org", True),
        ("boss@example.org", True),
        ("former@example.org", False),
    ]
    refunds = json.loads(cli("refunds", "list", "--since", "2026-01-01", "--json").stdout)["items"]
    assert [(r["refund_id"], r["state"], r["amount_after"]) for r in refunds] == [("rf_QiN7blzUhiwXBVBr", "applied", "6.00")]
    previewed = json.loads(cli("preview", "--json").stdout)
    assert previewed["mode"] == "preview"
    assert [(p["what"], p["decision"]) for p in previewed["items"]] == [
        ("transaction PreviewT3", "would create Alan Turing <alan@example.org>")
    ]
    if release == "0.3.0-dev":
        changes = json.loads(cli("donors", "changes", "--json").stdout)["items"]
        assert [(c["constituent_id"], c["kind"], c["value"]) for c in changes] == [("959480", "phone", "+14155550199")]
        matches = json.loads(cli("donors", "matches", "--json").stdout)["items"]
        assert [(m["external_id"], m["status"]) for m in matches] == [("donations_AdaMailT5", "pending")]


def test_doctor_counts_every_migration_of_an_upgraded_database(release, tmp_path, env, cli):
    upgraded(release, tmp_path, env).close()
    checks = json.loads(cli("doctor", "--json").stdout)
    [database] = [c for c in checks if c["check"] == "database"]
    counted = re.search(r"(\d+)/(\d+) migrations", database["detail"])
    assert counted, database["detail"]
    applied, known = counted.groups()
    assert applied == known, database["detail"]
