"""The sync log: filters, paging, sorting, free text, stats, and bad input as usage errors."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from synctool import store


def seed(db) -> None:
    """12 records over 3 sources and 4 statuses, created an hour apart (newest first: n=0)."""
    now = store.utcnow()
    statuses = ["succeeded", "failed", "skipped", "queued"]
    sources = ["donations", "pos", "mailing"]
    with store.atomic(db):
        for n in range(12):
            created = store.iso(now - timedelta(hours=n, minutes=1))
            db.execute(
                "INSERT INTO jobs (id, source, entity_type, entity_id, external_id, status, run_after, email, name,"
                " amount, last_error, attempts, created_at, updated_at) VALUES (?, ?, 'x', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    f"job-{n:02d}",
                    sources[n % 3],
                    str(n),
                    f"ext_{n:02d}",
                    statuses[n % 4],
                    created,
                    f"donor{n}@example.org",
                    f"Donor {n}",
                    f"{n}.50",
                    "CRM said: fund 77 unknown" if n == 5 else None,
                    n % 3,
                    created,
                    created,
                ),
            )


def listing(cli, *args) -> dict:
    result = cli("syncs", "list", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_filters_paging_and_sorting(db, cli):
    seed(db)
    all_ = listing(cli)
    assert all_["total"] == 12 and [r["id"] for r in all_["items"]][:2] == ["job-00", "job-01"]
    failed = listing(cli, "--status", "failed")
    assert [r["id"] for r in failed["items"]] == ["job-01", "job-05", "job-09"]
    both = listing(cli, "--status", "failed", "--source", "pos")
    assert [r["id"] for r in both["items"]] == ["job-01"]
    recent = listing(cli, "--from", "3h")
    assert [r["id"] for r in recent["items"]] == ["job-00", "job-01", "job-02"]
    page2 = listing(cli, "--limit", "5", "--page", "2")
    assert page2["pages"] == 3 and [r["id"] for r in page2["items"]] == [f"job-{n:02d}" for n in range(5, 10)]
    asc = listing(cli, "--sort", "attempts", "--order", "asc", "--limit", "4")
    assert [r["attempts"] for r in asc["items"]] == [0, 0, 0, 0]
    by_ext = listing(cli, "--sort", "external_id", "--order", "asc", "--limit", "1")
    assert by_ext["items"][0]["external_id"] == "ext_00"


def test_date_to_bare_date_is_inclusive(db, cli):
    seed(db)
    today = store.utcnow().strftime("%Y-%m-%d")
    assert listing(cli, "--to", today)["total"] >= 1
    assert listing(cli, "--to", "2000-01-01")["total"] == 0


@pytest.mark.parametrize(
    "q,expected",
    [
        ("donor7@example", ["job-07"]),
        ("ext_1", ["job-10", "job-11"]),
        ("fund 77", ["job-05"]),
        ("Donor 3", ["job-03"]),
        ("_0", [f"job-0{n}" for n in range(10)]),
        ("zz", []),
        ('"; DROP', []),
    ],
)
def test_free_text(db, cli, q, expected):
    seed(db)
    assert [r["id"] for r in listing(cli, "--q", q)["items"]] == expected


def test_free_text_sees_later_error_text(db, cli):
    seed(db)
    assert listing(cli, "--q", "timeout")["total"] == 0  # also builds the index
    db.execute("UPDATE jobs SET last_error = 'CRM timeout after 30 s' WHERE id = 'job-02'")
    assert [r["id"] for r in listing(cli, "--q", "timeout")["items"]] == ["job-02"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--sort", "id; DROP TABLE jobs"], "sort: must be one of created_at"),
        (["--status", "done"], "status: must be one of"),
        (["--order", "sideways"], "order: must be one of asc, desc"),
        (["--limit", "100000"], "limit: must be at most 500"),
        (["--source", "fax"], "source: must be one of donations"),
        (["--from", "last tuesday"], "date_from: not a date"),
        (["--page", "0"], "page: must be at least 1"),
    ],
)
def test_bad_options_are_usage_errors(db, cli, args, message):
    result = cli("syncs", "list", *args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_stats_over_known_data(db, cli):
    seed(db)
    result = json.loads(cli("stats", "--json").stdout)
    assert (result["total"], result["succeeded"], result["failed"], result["skipped"], result["queued"]) == (12, 3, 3, 3, 3)
    assert result["per_source"]["pos"] == {
        "total": 4,
        "queued": 1,
        "running": 0,
        "succeeded": 1,
        "skipped": 1,
        "failed": 1,
        "previewed": 0,
        "review": 0,
    }
    assert 3 * 3600 < result["oldest_queued_age_s"] < 11 * 3600 + 120
    assert json.loads(cli("stats", "--window", "7d", "--json").stdout)["total"] == 12
    assert cli("stats", "--window", "1y").exit_code == 2


def test_show_has_attempts_and_delivery(db, cli, tmp_path):
    from synctool.fakes import samples

    path = tmp_path / "order.json"
    path.write_bytes(samples.square_order_event("ORD-7"))
    job_id = json.loads(cli("inject", str(path), "--source", "pos", "--json").stdout)["job_id"]
    record = json.loads(cli("syncs", "show", job_id, "--json").stdout)
    assert record["delivery"]["body"] == path.read_text() and record["attempts_log"] == []
    assert cli("syncs", "show", "nope").exit_code == 3


def test_jobs_list_views(db, cli):
    seed(db)
    pending = json.loads(cli("jobs", "list", "--status", "pending", "--json").stdout)
    assert {r["status"] for r in pending} == {"queued"} and len(pending) == 3
    assert len(json.loads(cli("jobs", "list", "--status", "failed", "--json").stdout)) == 3
    assert cli("jobs", "list", "--status", "stuck").exit_code == 2
