"""`test-connections` and `doctor`: what works, what does not, and how to fix it. Never shows a secret.

Doctor's checks are a list (``DOCTOR_CHECKS``) of small functions, each returning its rows ``(check, status,
detail, fix)`` from one ``Examination`` (the connection, the runtime, and what several checks read once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from synctool import platforms, settings, store
from synctool.config import Config
from synctool.crm import environment as crm_environment
from synctool.crm import matching, mirror
from synctool.errors import ConfigError, SyncError, SynctoolError
from synctool.ops import webhooks
from synctool.ops.health import CronRun, DoctorRow, cron_runs, database, file_modes, mail, outbox_check, receiver
from synctool.ops.per_platform import each
from synctool.ops.reconcile import last_run
from synctool.platforms import tickets
from synctool.queue import log
from synctool.runtime import Runtime
from synctool.secrets import CORE_SECRETS
from synctool.timeutil import age_s

if TYPE_CHECKING:
    from synctool import store


def _row(name: str, outcome: str | SynctoolError) -> dict[str, str | bool]:
    """One connection's line: ``ok`` with what was read, or ``not configured`` / ``failed`` with why (both
    failures)."""
    if isinstance(outcome, str):
        return {"name": name, "ok": True, "state": "ok", "detail": outcome}
    state = "not configured" if isinstance(outcome, ConfigError) else "failed"
    return {"name": name, "ok": False, "state": state, "detail": str(outcome)}


def test_connections(conn: store.Connection, rt: Runtime) -> list[dict[str, str | bool]]:
    """One read on the CRM and on each platform in use that has a connection test; each is tried whatever
    the others answered. A platform in use without its credentials is a failure, as is one that is down."""
    from synctool.ops.crm import test_connection

    crm: str | SynctoolError
    try:
        result = test_connection(conn, rt)
        crm = f"{result['environment']} at {result['base_url']}" if result["ok"] else SyncError(result.get("error", "failed"))
    except SynctoolError as exc:  # the CRM's environment could not even be read
        crm = exc

    def probe(platform: platforms.Platform) -> str:
        assert platform.client is not None and platform.client.probe is not None
        with platforms.using(rt, platform.role) as made:
            return platform.client.probe(made)

    probed = platforms.chosen(rt.config, None, lambda p: p.client and p.client.probe)
    found, failed = each(probed, probe)
    return [_row("crm", crm)] + [_row(p.role, found[p.role] if p.role in found else failed[p.role]) for p in probed]


def jobs_unrun(config: Config) -> list[tuple[platforms.Platform, platforms.Platform]]:
    """``(platform, runner)`` for each platform in use whose jobs are run by a platform that is not in use (a
    payment processor without the member records it pays for): drain still runs them with the runner's handlers
    (``platforms.running``), but the runner's own webhook, records and reconcile are off, which is seldom what was
    meant (``doctor`` says so)."""
    used = platforms.in_use(config)
    return [(p, by) for p in used if (by := platforms.runs_jobs_of(p.role)) is not None and by not in used]


@dataclass
class Examination:
    """What doctor's checks look at: the connection and the runtime, and what several checks read, read once."""

    conn: store.Connection
    rt: Runtime

    @cached_property
    def keyring(self) -> str:
        return self.rt.secrets.keyring_name()

    @cached_property
    def used(self) -> tuple[platforms.Platform, ...]:
        return tuple(platforms.in_use(self.rt.config))

    @cached_property
    def runs(self) -> dict[str, CronRun]:
        return cron_runs(self.conn, self.rt.config)


def config_rows(ex: Examination) -> list[DoctorRow]:
    """Where the config was read from, and each key it still names by an old name."""
    read = ex.rt.config.source != "defaults"
    found = [("config", "ok" if read else "warn", f"read from {ex.rt.config.source}", "" if read else "run `synctool init`")]
    for line in ex.rt.config.renamed_keys:
        found.append(("config key", "warn", line, "rename the key in the config file (the old name is still read)"))
    return found


def database_rows(ex: Examination) -> list[DoctorRow]:
    engine = store.describe(ex.conn)
    said = ", ".join(part for part in (engine["where"], engine["pool"], f"schema {engine['schema']}") if part)
    found: list[DoctorRow] = [("database engine", "ok", f"{engine['engine']} {engine['version']}: {said}", "")]
    if ex.rt.config.database_url:  # no file of synctool's: the server keeps its own files, its admin their modes
        return [*found, database(ex.conn, ex.rt)]
    return [*found, database(ex.conn, ex.rt), ("database file modes", *file_modes(ex.rt.config.db_path))]


def keyring_row(ex: Examination) -> list[DoctorRow]:
    file = ex.rt.secrets.file
    if ex.keyring != "none":
        return [("keyring", "ok", ex.keyring + (f" (service {ex.rt.secrets.service})" if file else ""), "")]
    if file:  # an organisation's: its secrets.env, never the environment
        return [("keyring", "warn", ex.keyring, f"secrets come from {file} only (KEY=VALUE lines, chmod 600)")]
    return [("keyring", "warn", ex.keyring, "secrets come from the environment; set them for cron too (crontab.example)")]


def platform_rows(ex: Examination) -> list[DoctorRow]:
    """The platforms in use, and each whose jobs are run by a platform that is not."""
    found: list[DoctorRow] = [
        (
            "platforms",
            "ok",
            "in use: "
            + (", ".join(f"{p.name} ({p.role})" for p in ex.used) or "none")
            + ("" if ex.rt.config.platforms is not None else " (the built-in ones: `platforms:` is not set)"),
            "",
        )
    ]
    for unrun, by in jobs_unrun(ex.rt.config):
        found.append((f"platform {unrun.name}", "warn", f"its jobs are run by {by.name}, which is not in use",
                      platforms.turn_on(ex.rt.config, by)))  # fmt: skip
    return found


def secret_rows(ex: Examination) -> list[DoctorRow]:
    """The core's secrets, then each platform in use names its own: a platform's is needed for it to work."""
    wanted = [(name, None) for name in CORE_SECRETS] + [(name, p) for p in ex.used for name in p.secrets]
    found = []
    for name, platform in wanted:
        source = ex.rt.secrets.source(name)
        needed = platform is not None or name == "CRM_API_KEY"
        detail = (f"set ({source})" if source else "not set") + (
            f"; {platform.name}: {platform.secrets[name]}" if platform else ""
        )
        status = "ok" if source else ("fail" if needed else "warn")
        found.append((f"secret {name}", status, detail, "" if source else _secret_fix(name, platform, ex)))
    return found


def _secret_fix(name: str, platform: platforms.Platform | None, ex: Examination) -> str:
    keyring, secrets = ex.keyring, ex.rt.secrets
    if secrets.file is not None:  # an organisation's: its keyring service or its secrets.env, never the environment
        fix = f"add {name}=... to {secrets.file} (chmod 600)"
        if keyring != "none":
            fix = f"keyring set {secrets.service} {name} (keyring: {keyring}), or " + fix
    elif keyring == "none":  # only the environment works here
        fix = f"export {name}=... where serve, drain and cron run (their EnvironmentFile or crontab)"
    else:
        fix = f"keyring set synctool {name} (keyring: {keyring}), or export {name}=..."
    if platform is not None:
        fix += f"; or, if {platform.name} is not used here, leave it out of `platforms:` in config"
    return fix


def crm_row(ex: Examination) -> list[DoctorRow]:
    """Which CRM, and its key: every CRM request carries the API key to the base URL's host, so a host other than
    LGL's is worth a look (the fakes of the tests and the demo are one too)."""
    where = crm_environment.target(ex.conn, ex.rt)
    lgl, host = "api.littlegreenlight.com", urlparse(where.base_url or "").hostname or ""
    status, detail, fix = "ok", f"{where.environment} at {where.base_url}", ""
    if not where.key_source:
        status, fix = "fail", "synctool crm config --api-key"
    elif host != lgl:
        status = "warn"
        detail += f" ({where.base_url_source}): the API key is sent to {host or 'that address'}, not {lgl}"
        fix = f"unless that host is meant: synctool crm config --base-url https://{lgl}/api/v1 --api-key"
    return [("crm", status, detail, fix)]


def crm_budget_row(ex: Examination) -> list[DoctorRow]:
    share = crm_environment.budget(ex.rt)
    detail = (
        f"synctool may use {share['limit']} of the account's {share['account_limit']} requests per "
        f"{share['window_s']:g} s (crm.share_requests); {share['used_in_window']} used in this window"
    )
    return [("crm budget", "ok", detail, "")]


def mirror_row(ex: Examination) -> list[DoctorRow]:
    state = mirror.status(ex.conn)
    stale = state["age_s"] is None or state["age_s"] > 86_400
    detail = f"{state['constituents']} constituents, watermark {state['watermark'] or 'none'}, " + (
        f"refreshed {int(state['age_s'])} s ago" if state["age_s"] is not None else "never loaded"
    )
    return [("crm mirror", "warn" if stale else "ok", detail,
             "drain refreshes it when it needs to; `synctool crm mirror --refresh` now" if stale else "")]  # fmt: skip


def platforms_own_rows(ex: Examination) -> list[DoctorRow]:
    """Each platform in use's own rows (its ``checks`` hook)."""
    return [row for platform in ex.used if platform.checks for row in platform.checks(ex.conn, ex.rt)]


def cron_rows(ex: Examination) -> list[DoctorRow]:
    """How long ago cron's drain ran, and its poll (when a platform in use polls)."""
    drain, poll = ex.runs["drain"], ex.runs.get("poll")
    found = [_cron_row("cron drain", drain, "fail", "install crontab.example (drain every minute)")]
    if poll is not None:
        found.append(_cron_row("cron poll", poll, "warn", "install crontab.example (poll every 15 minutes)"))
    return found


def _cron_row(name: str, run: CronRun, stale_status: str, fix: str) -> DoctorRow:
    age = run["age_s"]
    return (
        name,
        "ok" if not run["stale"] else stale_status,
        f"last run {int(age)} s ago" if age is not None else "never ran",
        "" if not run["stale"] else fix,
    )


def sync_mode_row(ex: Examination) -> list[DoctorRow]:
    if settings.sync_mode(ex.conn) == "live":
        return [("sync mode", "ok", "live", "")]
    return [("sync mode", "warn", "preview: drain writes nothing to the CRM (`synctool preview` shows what it would)",
             "synctool sync-mode live, once the previews look right")]  # fmt: skip


def reconcile_row(ex: Examination) -> list[DoctorRow]:
    last = last_run(ex.conn) or {}
    age, fresh = ex.runs["reconcile"]["age_s"], not ex.runs["reconcile"]["stale"]
    detail = (
        (f"last run {int(age // 3600)} h ago: {last.get('from')}..{last.get('to')}, {last.get('differences')} difference(s)")
        if age is not None
        else "never ran"
    )
    return [("reconcile", "ok" if fresh else "warn", detail,
             "" if fresh else "install crontab.example (a nightly `synctool reconcile --from 8d --quiet`)")]  # fmt: skip


def backlog_row(ex: Examination) -> list[DoctorRow]:
    backlog, oldest = log.backlog(ex.conn, platforms.crm_bound())
    age = age_s(oldest)
    late = not (age is None or age < 600)
    return [("queue backlog", "warn" if late else "ok",
             f"{backlog} queued" + (f", oldest due {int(age)} s ago" if age is not None and age > 0 else ""),
             "is drain running? `synctool drain -v`; `synctool crm budget`" if late else "")]  # fmt: skip


def waiting_rows(ex: Examination) -> list[DoctorRow]:
    """What waits on a person: gifts held for who the donor is, failed jobs, tickets with no event mapping."""
    held = matching.pending_count(ex.conn)
    failed = log.open_failures(ex.conn)
    found = [
        ("donor matches", "ok" if not held else "warn",
         f"{held} gift(s) held for review (policy {matching.policy(ex.conn, ex.rt.config)})",
         "" if not held else "synctool donors matches; accept a candidate or make a new constituent"),
        ("failed jobs", "ok" if not failed else "warn", f"{failed} unresolved",
         "" if not failed else "synctool syncs list --status failed; fix, then synctool retry-all"),
    ]  # fmt: skip
    for waiting in tickets.waiting(ex.conn):
        found.append(("event mapping", "warn",
                      f"{waiting['tickets']} ticket(s) of {waiting['campaign'] or waiting['campaign_id']} wait for an event mapping",
                      f"synctool mappings events set {waiting['campaign_id']} --event N (synctool crm events lists them)"))  # fmt: skip
    return found


def mail_rows(ex: Examination) -> list[DoctorRow]:
    return [mail(ex.conn, ex.rt), outbox_check(ex.conn)]


def plans_rows(ex: Examination) -> list[DoctorRow]:
    """Monthly donors: a plan known and no group mapped (nothing is written to the CRM for plans); chat notices
    the webhook would not take (its host named, never its URL)."""
    from synctool import mappings, notices
    from synctool.ops import plans

    found: list[DoctorRow] = []
    if plans.known(ex.conn) and mappings.get(ex.conn, "plans", "*") is None:
        count = ex.conn.execute("SELECT count(*) FROM plans").fetchone()[0]
        if count:
            found.append(("plans", "warn", f"plans: no group mapped ({count} plan(s) known; nothing is written to the CRM for them)",
                          "synctool crm refresh; synctool mappings plans set --group ID"))  # fmt: skip
    chat = notices.problems(ex.conn)
    if chat["failed"]:
        found.append(("chat notices", "warn", f"{chat['failed']} chat notice(s) not sent in the last day: {chat['last_error']}",
                      "synctool settings plans-chat-webhook URL (a working incoming webhook), or --clear"))  # fmt: skip
    return found


def receiver_rows(ex: Examination) -> list[DoctorRow]:
    """The receiver, here and at its public URL; with a public URL, the platforms' webhooks and what they failed to
    deliver, as their APIs report it."""
    public_url = webhooks.public_url(ex.conn, ex.rt)
    found = receiver(ex.rt, public_url)
    if not public_url:
        return found
    found_status = webhooks.status(ex.conn, ex.rt)
    for hook in found_status["sources"]:
        if hook["state"] != "not configured":
            at = f" ({hook['where']})" if hook["where"] else ""
            found.append((f"webhook {hook['source']}{at}", "ok" if hook["state"] == "ok" else "warn",
                          f"{hook['state']}: {hook['detail']}", hook["fix"]))  # fmt: skip
    for row in found_status["deliveries"]:
        if row["failed"] is not None:
            found.append((f"deliveries {row['source']}", "warn" if row["not_received"] else "ok", row["detail"],
                          f"synctool webhooks heal --source {row['source']}" if row["not_received"] else ""))  # fmt: skip
    return found


#: doctor's checks, in the order it lists their rows
DOCTOR_CHECKS: tuple[Callable[[Examination], list[DoctorRow]], ...] = (
    config_rows,
    database_rows,
    keyring_row,
    platform_rows,
    secret_rows,
    crm_row,
    crm_budget_row,
    mirror_row,
    platforms_own_rows,
    cron_rows,
    sync_mode_row,
    reconcile_row,
    backlog_row,
    waiting_rows,
    mail_rows,
    plans_rows,
    receiver_rows,
)


def doctor(conn: store.Connection, rt: Runtime) -> list[dict[str, str]]:
    """Configuration, secrets (present or not), keyring, database, cron freshness and backlog, each with a fix."""
    ex = Examination(conn, rt)
    return [
        {"check": name, "status": status, "detail": detail, "fix": fix}
        for check in DOCTOR_CHECKS
        for name, status, detail, fix in check(ex)
    ]
