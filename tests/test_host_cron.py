"""A host's cron: `drain`, `poll`, `backup`, `doctor` ... with no --org do every organisation's work, each under its
own header, one's failure stopping no other; `drain` takes turns between organisations, fairly. Real organisations
under tmp, their CRMs in-process fakes told apart by host name, the commands through the CLI runner."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import httpx
import pytest

from synctool import settings, store
from synctool.fakes.crm import FakeCrm, create_app
from synctool.fakes.transport import AppTransport
from synctool.queue import jobs
from synctool.queue.handlers import ANY_SOURCE, handler

TURN = "host-turn"  # a job that takes a moment and asks nothing of anyone
ASK = "host-ask"  # a job that asks its organisation's CRM one question


#: when each TURN job's run began (``Job.run_started``: a CRM mirror is refreshed at most once a run)
RUNS_STARTED: set[str] = set()


@handler(ANY_SOURCE, TURN)
def _turn(event, job) -> None:
    import time

    RUNS_STARTED.add(job.run_started)
    time.sleep(0.01)


@handler(ANY_SOURCE, ASK)
def _ask(event, job) -> None:
    job.crm.find_gifts_by_external_id(f"host_{job.id}")


class ByHost(httpx.BaseTransport):
    """One transport for the role, each organisation's CRM told apart by the host its config names."""

    def __init__(self) -> None:
        self.routes: dict[str, httpx.BaseTransport] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.routes[request.url.host].handle_request(request)


@pytest.fixture
def host(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A host data folder under tmp and no single install (none named, none at the default path)."""
    env["SYNCTOOL_HOME"] = str(tmp_path / "host")
    env.pop("SYNCTOOL_CONFIG")
    env.pop("SYNCTOOL_DB")
    monkeypatch.setattr("synctool.config.DEFAULT_CONFIG", tmp_path / "nowhere" / "config.yaml")
    return tmp_path / "host"


@pytest.fixture
def crms(env: dict[str, str], transports: dict) -> ByHost:
    routes = transports["crm"] = ByHost()
    env.update(CRM_RATE_LIMIT_REQUESTS="1000", CRM_SHARE_REQUESTS="1000", CRM_RATE_LIMIT_WINDOW_S="1")
    env.update(CRM_MIN_INTERVAL_MS="0", CRM_RETRY_BASE_MS="10", CRM_TIMEOUT_S="1")
    return routes


def add(cli, host: Path, name: str, *, jobs_of: str = TURN, due: int = 0, key: str | None = None, crms=None) -> Path:
    """Organisation ``name``, live, with ``due`` jobs due now; its CRM a fake of its own that takes ``key``."""
    result = cli("orgs", "add", name, "--platforms", "givebutter")
    assert result.exit_code == 0, result.output
    folder = host / "orgs" / name
    if crms is not None:
        crm = FakeCrm(f"key-{name}", limit=1000, window_s=1.0)
        crms.routes[f"crm-{name}.invalid"] = AppTransport(create_app(crm))
        config = folder / "config.yaml"
        config.write_text(
            config.read_text().replace("https://api.littlegreenlight.com/api/v1", f"http://crm-{name}.invalid/api/v1")
        )
        (folder / "secrets.env").write_text(f"CRM_API_KEY={key or f'key-{name}'}\n")
        (folder / "secrets.env").chmod(0o600)
    conn = store.connect(folder / "synctool.db")
    try:
        with store.atomic(conn):
            settings.put(conn, settings.MODE_SETTING, "live")
            for n in range(due):
                jobs.enqueue(conn, source="donations", entity_type=jobs_of, entity_id=f"{name}-{n}")
    finally:
        conn.close()
    return folder


def counts(folder: Path) -> dict[str, int]:
    conn = store.connect(folder / "synctool.db", migrate=False)
    try:
        return {r[0]: r[1] for r in conn.execute("SELECT status, count(*) FROM jobs GROUP BY status")}
    finally:
        conn.close()


def test_turns_are_taken_round_robin_and_every_part_is_visited_in_the_first_round():
    from synctool.ops.host import take_turns

    now = [0.0]
    visits: list[str | None] = []
    busy_left = {"busy": 100}

    busy_time: list[float] = []

    def visit(name, seconds):
        visits.append(name)
        if name == "busy":
            busy_time.append(seconds)
            now[0] += seconds
            busy_left["busy"] -= 10
            return 0.0 if busy_left["busy"] else None
        return None

    take_turns(["busy", "quiet", None], visit, workers=1, slice_s=10, max_seconds=45, clock=lambda: now[0])
    assert visits == ["busy", "quiet", None, "busy", "busy", "busy", "busy"]  # no visit starts after 45 s
    assert sum(busy_time) == 45  # the busy one worked the whole run: it never waited behind the quiet ones


def test_a_giving_day_at_one_organisation_holds_back_no_other_s_jobs(cli, host, env):
    """500 due jobs at one organisation, one at each of two others, one worker and short slices: the quiet
    organisations' jobs are done in the first round, and the busy one's drained count grows slice by slice."""
    from synctool.ops.host import drain_host
    from synctool.runtime import Runtime

    folders = {name: add(cli, host, name, due=due) for name, due in (("busy", 500), ("quiet-a", 1), ("quiet-b", 1))}
    RUNS_STARTED.clear()
    visits: list[tuple[str | None, int]] = []
    shares = drain_host(
        ["busy", "quiet-a", "quiet-b"],
        lambda name: Runtime.from_environ(environ=env, org=name),
        max_seconds=0.9,
        workers=1,
        slice_s=0.2,
        on_visit=lambda share, one: visits.append((share.name, share.summary.claimed)),
    )
    assert [name for name, _ in visits[:3]] == ["busy", "quiet-a", "quiet-b"]
    assert all(name == "busy" for name, _ in visits[3:]) and len(visits) >= 4
    drained = [claimed for name, claimed in visits if name == "busy"]
    assert drained == sorted(drained) and len(set(drained[:-1])) == len(drained) - 1 and 0 < drained[-1] < 500
    assert counts(folders["quiet-a"]) == {"succeeded": 1} and counts(folders["quiet-b"]) == {"succeeded": 1}
    assert counts(folders["busy"])["succeeded"] == drained[-1]
    assert {share.name: share.summary.claimed for share in shares}["quiet-a"] == 1
    assert len(RUNS_STARTED) == 1  # one run however many visits: a busy organisation's mirror is not refreshed each slice


def test_one_organisation_s_failure_stops_no_other(cli, host, crms):
    """A broken config, a wrong CRM key, and two that work: each reported under its own header, the working ones
    drained through their own CRM, the exit code the broken config's (2)."""
    alpha = add(cli, host, "alpha", jobs_of=ASK, due=2, crms=crms)
    add(cli, host, "broken", due=1)
    (host / "orgs" / "broken" / "config.yaml").write_text("crm: [not, a, mapping\n")
    wrong = add(cli, host, "wrongkey", jobs_of=ASK, due=1, key="key-alpha", crms=crms)
    zeta = add(cli, host, "zeta", jobs_of=ASK, due=1, crms=crms)
    result = cli("drain", "--max-seconds", "5")
    assert result.exit_code == 2, result.output
    out = result.stdout
    assert out.index("== alpha ==") < out.index("== broken ==") < out.index("== wrongkey ==") < out.index("== zeta ==")
    assert "2 jobs" in out.split("== broken ==")[0] and "1 jobs" in out.split("== zeta ==")[1]
    assert f"Error: line 2 ({host / 'orgs' / 'broken' / 'config.yaml'}): not valid YAML" in result.stderr
    assert "1 failed" in out.split("== wrongkey ==")[1].split("== zeta ==")[0]  # a 401 fails its job, as today
    assert counts(alpha) == {"succeeded": 2} and counts(zeta) == {"succeeded": 1}
    assert counts(wrong).get("succeeded", 0) == 0  # alpha's key is no key at wrongkey's CRM
    assert "key-alpha" not in result.output and "key-zeta" not in result.output  # no secret in any part


def test_a_host_command_s_json_is_keyed_by_organisation_and_the_single_install_joins(cli, host, env, tmp_path):
    add(cli, host, "alpha")
    add(cli, host, "beta", due=3)
    env["SYNCTOOL_CONFIG"] = str(tmp_path / "config.yaml")  # the single install beside them, as cron names it
    env["SYNCTOOL_DB"] = str(tmp_path / "synctool.db")
    doctor = cli("doctor", "--json")
    found = json.loads(doctor.stdout)
    assert list(found) == ["alpha", "beta", "(single install)", "(host)"]
    backlog = {name: next(r for r in found[name] if r["check"] == "queue backlog")["detail"] for name in ("alpha", "beta")}
    assert backlog["alpha"].startswith("0 queued") and backlog["beta"].startswith("3 queued")
    database = {name: next(r for r in found[name] if r["check"] == "database")["detail"] for name in found if name != "(host)"}
    assert str(tmp_path / "synctool.db") in database["(single install)"] and "orgs" not in database["(single install)"]
    assert "orgs/alpha" in database["alpha"] and "beta" not in database["alpha"]
    host_rows = {r["check"]: r for r in found["(host)"]}
    assert host_rows["organisations"]["detail"] == "2: alpha, beta" and host_rows["host data folder"]["status"] == "ok"

    text = cli("doctor")
    assert text.exit_code == doctor.exit_code == 1  # secrets missing: the worst part's code
    for header in ("== alpha ==", "== beta ==", "== (single install) ==", "== (host) =="):
        assert header in text.stdout
    beta_part = text.stdout.split("== beta ==")[1].split("== (single install) ==")[0]
    assert "synctool:beta" in beta_part or str(host / "orgs" / "beta" / "secrets.env") in beta_part
    assert "alpha" not in beta_part

    del env["SYNCTOOL_CONFIG"], env["SYNCTOOL_DB"]
    one = cli("--org", "beta", "doctor", "--json")  # one organisation named: today's output, no keys
    assert isinstance(json.loads(one.stdout), list) and "== " not in one.stdout


def test_host_doctor_names_an_open_data_folder(cli, host):
    add(cli, host, "alpha")
    host.chmod(0o755)
    found = json.loads(cli("doctor", "--json").stdout)
    row = next(r for r in found["(host)"] if r["check"] == "host data folder")
    assert row["status"] == "fail" and row["fix"] == f"chmod 700 {host}"


@pytest.mark.sqlite_only(reason="backups as SQLite files")
def test_backup_on_a_host_writes_each_organisation_s_copy_beside_the_named_file(cli, host, env, tmp_path):
    add(cli, host, "alpha", due=1)
    add(cli, host, "beta")
    env["SYNCTOOL_CONFIG"] = str(tmp_path / "config.yaml")
    env["SYNCTOOL_DB"] = str(tmp_path / "synctool.db")
    target = tmp_path / "backups" / "synctool-2026-12-07.db"
    target.parent.mkdir()
    result = cli("backup", str(target))
    assert result.exit_code == 0, result.output
    made = sorted(p.name for p in target.parent.iterdir())
    assert made == ["synctool-2026-12-07.alpha.db", "synctool-2026-12-07.beta.db", "synctool-2026-12-07.db"]
    for name in made:
        assert stat.S_IMODE((target.parent / name).stat().st_mode) == 0o600
    copy = store.connect(target.parent / "synctool-2026-12-07.alpha.db", migrate=False)
    try:
        assert copy.execute("SELECT count(*) FROM jobs").fetchone()[0] == 1
    finally:
        copy.close()
    assert "== alpha ==" in result.stdout and "== (single install) ==" in result.stdout


def test_quiet_commands_stay_quiet_and_a_group_s_other_commands_are_today_s(cli, host, env, tmp_path):
    add(cli, host, "alpha")
    add(cli, host, "beta")
    pruned = cli("prune", "--quiet")
    assert pruned.exit_code == 0 and pruned.output == ""  # cron's mail stays empty: no header for a silent part
    drained = cli("drain", "--max-seconds", "1")
    assert drained.exit_code == 0 and drained.output == ""
    named = cli("--org", "alpha", "prune", "--dry-run")  # one organisation named: today's output, no header
    assert named.exit_code == 0 and "== " not in named.output and "dry run: nothing was changed" in named.output
    env["SYNCTOOL_CONFIG"] = str(tmp_path / "config.yaml")
    env["SYNCTOOL_DB"] = str(tmp_path / "synctool.db")
    last = cli("reconcile", "last", "--json")  # a subcommand of a host-wide group: the single install's, as today
    assert last.exit_code == 0 and "alpha" not in last.output and "(single install)" not in last.output


def test_a_host_without_organisations_is_today_s(cli, env):
    result = cli("doctor", "--json")
    assert isinstance(json.loads(result.stdout), list)
    assert cli("drain", "--max-seconds", "1").output == ""


def test_host_tuning_is_checked(cli, host, env):
    add(cli, host, "alpha")
    env["SYNCTOOL_HOST_WORKERS"] = "none"
    result = cli("drain", "--max-seconds", "1")
    assert result.exit_code == 2 and "SYNCTOOL_HOST_WORKERS" in result.stderr and "Traceback" not in result.output
