"""`test-connections` and `doctor`: what works, what does not, and how to fix it. Never shows a secret."""

from __future__ import annotations

import shlex
import sqlite3
import stat
from pathlib import Path
from typing import Any

from synctool import platforms, settings, store
from synctool.errors import ConfigError, SyncError, SynctoolError
from synctool.ops.each import each
from synctool.queue import log
from synctool.runtime import Runtime
from synctool.timeutil import age_s


def _row(name: str, outcome: str | SynctoolError) -> dict[str, Any]:
    """One connection's line: ``ok`` with what was read, or ``not configured`` / ``failed`` with why (both
    failures)."""
    if isinstance(outcome, str):
        return {"name": name, "ok": True, "state": "ok", "detail": outcome}
    state = "not configured" if isinstance(outcome, ConfigError) else "failed"
    return {"name": name, "ok": False, "state": state, "detail": str(outcome)}


def test_connections(conn: sqlite3.Connection, rt: Runtime) -> list[dict[str, Any]]:
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


def _health(rt: Runtime, url: str) -> tuple[str | None, str]:
    """The receiver instance that answered ``GET url`` (its /health names it), or None and why not."""
    import httpx

    try:
        with httpx.Client(transport=rt.transport("receiver"), timeout=5.0, follow_redirects=False) as client:
            response = client.get(url)
    except httpx.HTTPError as exc:
        return None, f"no answer ({type(exc).__name__}: {exc})"
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200 or not isinstance(body, dict) or body.get("status") != "ok" or not body.get("receiver"):
        return None, f"answered {response.status_code}, not as synctool's receiver ({response.text[:80]!r})"
    return str(body["receiver"]), ""


def receiver(rt: Runtime, public_url: str | None) -> list[tuple[str, str, str, str]]:
    """(check, status, detail, fix): the receiver answers on its configured host and port; and, with a public
    URL, that URL reaches this same receiver. Each receiver process names itself in /health with a random
    instance id, so the same id from both addresses means the same process."""
    host, port = rt.config.receiver.host, rt.config.receiver.port
    host = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(host, f"[{host}]" if ":" in host else host)
    local_url = f"http://{host}:{port}/health"
    here, why = _health(rt, local_url)
    found = [
        ("receiver", "ok", f"answers at {local_url} (instance {here[:8]})", "")
        if here
        else ("receiver", "fail", f"{local_url}: {why}",
              "is it running? `systemctl status synctool-serve` (synctool-serve.service runs `synctool serve`)")
    ]  # fmt: skip
    if not public_url:
        return found
    url = public_url.rstrip("/") + "/health"
    there, why = _health(rt, url)
    if there is None and why.startswith("no answer"):
        found.append(("receiver public url", "warn", f"{url}: this server cannot reach it: {why}",
                      f"a server often cannot reach its own public name (NAT, split DNS): from elsewhere, `curl {url}` "
                      "must answer with this server's instance id"))  # fmt: skip
    elif there is None:
        found.append(("receiver public url", "fail", f"{url}: {why}",
                      "the proxy must pass /webhooks/* and /health to 127.0.0.1:8787 unchanged (deploy/Caddyfile)"))  # fmt: skip
    elif here is None:
        found.append(("receiver public url", "warn", f"{url} answers as receiver {there[:8]}; the local one does not answer", ""))
    elif there == here:
        found.append(
            ("receiver public url", "ok", f"{url} reaches this receiver (the same instance id {here[:8]} answered both)", "")
        )
    else:
        found.append(("receiver public url", "fail", f"{url} reaches another synctool receiver ({there[:8]}), not this one ({here[:8]})",
                      f"point the proxy at 127.0.0.1:{port} on this server, or the platforms' webhooks at this server"))  # fmt: skip
    return found


#: how old each of cron's commands' last run may be before doctor and the overview say so (crontab.example's
#: rhythm, with slack)
STALE_AFTER_S = {"drain": 180, "poll": 1800, "heal": 2 * 86400, "reconcile": 8 * 86400}


def mail(conn: sqlite3.Connection, rt: Runtime) -> tuple[str, str, str, str]:
    """Doctor's ``smtp`` row: how alert and sign-in e-mails would leave (no connection is made; `synctool alerts
    test` sends one). Unencrypted mail to another machine is a failure; no server while there are alert
    recipients is a warning."""
    smtp = rt.config.smtp
    if rt.mailer is not None:  # the demo's outbox
        return "smtp", "ok", "handed to the in-process outbox (demo or tests), no network", ""
    if not smtp.host:
        if settings.get(conn, "alert_recipients", []):
            return "smtp", "warn", smtp.described() + ": alert and sign-in e-mails cannot be sent", "set smtp.host in config"
        return "smtp", "ok", smtp.described(), ""
    if smtp.refusal():
        fix = "set smtp.security: starttls (port 587) or tls (port 465); none is only for a relay on this machine"
        return "smtp", "fail", smtp.described(), fix
    if smtp.security != "none":
        try:
            smtp.tls_context(rt.config.source)
        except ConfigError as exc:
            return "smtp", "fail", str(exc), "point smtp.ca_file at a readable PEM file of CA certificates, or remove it"
    return "smtp", "ok", smtp.described(), ""


def outbox_check(conn: sqlite3.Connection) -> tuple[str, str, str, str]:
    """Doctor's ``outbox`` row: sign-in e-mails that drain could not send in the last day, or that wait too long."""
    from synctool.ops import outbox

    found = outbox.problems(conn)
    why = f" (last error: {found['last_error']})" if found["last_error"] else ""
    if found["failed"]:
        return ("outbox", "fail", f"{found['failed']} e-mail(s) could not be sent in the last day{why}",
                "synctool alerts test says why; fix smtp: in config")  # fmt: skip
    if found["late"]:
        return ("outbox", "warn", f"{found['late']} e-mail(s) waiting over 5 minutes{why}",
                "is cron's drain running? (synctool drain sends them)")  # fmt: skip
    return "outbox", "ok", f"{found['waiting']} e-mail(s) waiting", ""


def cron_runs(conn: sqlite3.Connection, rt: Runtime) -> dict[str, dict[str, Any]]:
    """When each of cron's commands last ran (``poll`` only when a platform in use polls, ``heal`` only when one
    keeps a record of failed deliveries): its time, its age in seconds, and whether that is too old."""
    from synctool.ops.reconcile import last_run
    from synctool.ops.webhooks import last_heal

    used = platforms.in_use(rt.config)
    found = {"drain": (settings.get(conn, "last_drain") or {}).get("at")}
    polling = [p.role for p in used if p.poll]
    if polling:
        marks = ",".join("?" * len(polling))
        found["poll"] = conn.execute(f"SELECT min(last_run_at) FROM poll_state WHERE source IN ({marks})", polling).fetchone()[0]
    if any(p.missed for p in used):
        found["heal"] = (last_heal(conn) or {}).get("at")
    found["reconcile"] = (last_run(conn) or {}).get("at")
    runs = {}
    for name, at in found.items():
        age = age_s(at)
        runs[name] = {"command": name, "at": at, "age_s": age, "stale": age is None or age >= STALE_AFTER_S[name]}
    return runs


def file_modes(db_path: Path) -> tuple[str, str, str]:
    """(status, detail, fix): the database and its ``-wal`` and ``-shm`` files are synctool's user's alone (every
    donor's name, address and phone is in them); one that its group or others may read or write fails."""
    modes: dict[Path, int] = {}
    for path in (Path(f"{db_path}{suffix}") for suffix in ("", "-wal", "-shm")):
        try:
            modes[path] = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:  # -wal and -shm come and go with the connections
            continue
    open_ = [path for path, mode in modes.items() if mode & 0o066]
    if not open_:
        return "ok", f"{', '.join(f'{p.name} {m:04o}' for p, m in modes.items())}: synctool's user's alone", ""
    return (
        "fail",
        "; ".join(f"{p.name} is {modes[p]:04o}: {_who(modes[p])} may {_may(modes[p])} it" for p in open_),
        "chmod 600 " + " ".join(shlex.quote(str(p)) for p in open_),
    )


def _who(mode: int) -> str:
    return " and ".join(who for who, bits in (("its group", 0o060), ("others", 0o006)) if mode & bits)


def _may(mode: int) -> str:
    return " and ".join(what for what, bits in (("read", 0o044), ("write", 0o022)) if mode & bits)


def megabytes(count: float) -> str:
    return f"{count / 1_000_000:,.1f} MB"


def database(conn: sqlite3.Connection, rt: Runtime) -> tuple[str, str, str, str]:
    """The database: its migrations (of the sets in use: the core's and the platforms' in use), the synctool that
    migrated it, its size, its free pages and how fast it grows (``prune`` records its size each night)."""
    sets = [store.MIGRATION_SET, *(f"{store.MIGRATION_SET}.{p.name}" for p in platforms.in_use(rt.config))]
    known = sum(len(found) for found in store.migration_names(sets).values())
    applied = len(store.applied_migrations(conn, sets))
    found = store.size(conn)
    growth = store.growth_per_month(conn)
    detail = (
        f"{rt.config.db_path}, {applied}/{known} migrations (by synctool {store.migrated_by(conn) or 'before 0.3.0'}),"
        f" {megabytes(found['bytes'])}, {megabytes(found['free_bytes'])} free, "
        + (
            "growth not known yet (prune records the size each night)"
            if growth is None
            else f"growing {megabytes(growth)} a month"
        )
    )
    if found["auto_vacuum"] == 0 and found["free_bytes"] > found["bytes"] / 4:
        return (
            "database",
            "warn",
            detail,
            "`synctool prune --vacuum` rewrites it once to give free pages back (and keep doing so)",
        )
    return "database", "ok", detail, ""


def doctor(conn: sqlite3.Connection, rt: Runtime) -> list[dict[str, Any]]:
    """Configuration, secrets (present or not), keyring, database, cron freshness and backlog, each with a fix."""
    from synctool.crm import environment as crm_environment
    from synctool.secrets import CORE_SECRETS

    checks: list[dict[str, Any]] = []

    def add(name: str, status: str, detail: str, fix: str = "") -> None:
        checks.append({"check": name, "status": status, "detail": detail, "fix": fix})

    add(
        "config",
        "ok" if rt.config.source != "defaults" else "warn",
        f"read from {rt.config.source}",
        "" if rt.config.source != "defaults" else "run `synctool init`",
    )
    for line in rt.config.renamed_keys:
        add("config key", "warn", line, "rename the key in the config file (the old name is still read)")
    add(*database(conn, rt))
    add("database file modes", *file_modes(rt.config.db_path))
    keyring = rt.secrets.keyring_name()
    add(
        "keyring",
        "ok" if keyring != "none" else "warn",
        keyring,
        "" if keyring != "none" else "secrets come from the environment; set them for cron too (crontab.example)",
    )
    used = platforms.in_use(rt.config)
    add(
        "platforms",
        "ok",
        "in use: "
        + (", ".join(f"{p.name} ({p.role})" for p in used) or "none")
        + ("" if rt.config.platforms is not None else " (the built-in ones: `platforms:` is not set)"),
    )
    for unrun, by in platforms.jobs_unrun(rt.config):
        add(f"platform {unrun.name}", "warn", f"its jobs are run by {by.name}, which is not in use",
            platforms.turn_on(rt.config, by))  # fmt: skip
    # the core's secrets, then each platform in use names its own: a platform's is needed for it to work
    wanted = [(name, None) for name in CORE_SECRETS] + [(name, p) for p in used for name in p.secrets]
    for name, platform in wanted:
        source = rt.secrets.source(name)
        needed = platform is not None or name == "CRM_API_KEY"
        if keyring == "none":  # only the environment works here
            fix = f"export {name}=... where serve, drain and cron run (their EnvironmentFile or crontab)"
        else:
            fix = f"keyring set synctool {name} (keyring: {keyring}), or export {name}=..."
        if platform is not None:
            fix += f"; or, if {platform.name} is not used here, leave it out of `platforms:` in config"
        add(
            f"secret {name}",
            "ok" if source else ("fail" if needed else "warn"),
            (f"set ({source})" if source else "not set") + (f"; {platform.name}: {platform.secrets[name]}" if platform else ""),
            "" if source else fix,
        )
    where = crm_environment.target(conn, rt)
    from urllib.parse import urlparse

    # every CRM request carries the API key to the base URL's host: a host other than LGL's is worth a look
    # (the fakes of the tests and the demo are one too)
    lgl, host = "api.littlegreenlight.com", urlparse(where.base_url or "").hostname or ""
    crm_status, crm_detail, crm_fix = "ok", f"{where.environment} at {where.base_url}", ""
    if not where.key_source:
        crm_status, crm_fix = "fail", "synctool crm config --api-key"
    elif host != lgl:
        crm_status = "warn"
        crm_detail += f" ({where.base_url_source}): the API key is sent to {host or 'that address'}, not {lgl}"
        crm_fix = f"unless that host is meant: synctool crm config --base-url https://{lgl}/api/v1 --api-key"
    add("crm", crm_status, crm_detail, crm_fix)
    share = crm_environment.budget(rt)
    add(
        "crm budget",
        "ok",
        f"synctool may use {share['limit']} of the account's {share['account_limit']} requests per "
        f"{share['window_s']:g} s (crm.share_requests); {share['used_in_window']} used in this window",
    )
    from synctool.crm import mirror

    state = mirror.status(conn)
    stale = state["age_s"] is None or state["age_s"] > 86_400
    add(
        "crm mirror",
        "warn" if stale else "ok",
        f"{state['constituents']} constituents, watermark {state['watermark'] or 'none'}, "
        + (f"refreshed {int(state['age_s'])} s ago" if state["age_s"] is not None else "never loaded"),
        "drain refreshes it when it needs to; `synctool crm mirror --refresh` now" if stale else "",
    )
    for platform in used:  # each platform's own rows
        if platform.checks:
            for row in platform.checks(conn, rt):
                add(*row)
    runs = cron_runs(conn, rt)
    drain, poll = runs["drain"], runs.get("poll")
    age = drain["age_s"]
    add(
        "cron drain",
        "ok" if not drain["stale"] else "fail",
        f"last run {int(age)} s ago" if age is not None else "never ran",
        "" if not drain["stale"] else "install crontab.example (drain every minute)",
    )
    if poll is not None:
        age = poll["age_s"]
        add(
            "cron poll",
            "ok" if not poll["stale"] else "warn",
            f"last run {int(age)} s ago" if age is not None else "never ran",
            "" if not poll["stale"] else "install crontab.example (poll every 15 minutes)",
        )
    mode = settings.sync_mode(conn)
    add(
        "sync mode",
        "ok" if mode == "live" else "warn",
        mode if mode == "live" else "preview: drain writes nothing to the CRM (`synctool preview` shows what it would)",
        "" if mode == "live" else "synctool sync-mode live, once the previews look right",
    )
    from synctool.ops.reconcile import last_run

    last = last_run(conn) or {}
    age, fresh = runs["reconcile"]["age_s"], not runs["reconcile"]["stale"]
    add(
        "reconcile",
        "ok" if fresh else "warn",
        (f"last run {int(age // 3600)} h ago: {last.get('from')}..{last.get('to')}, {last.get('differences')} difference(s)")
        if age is not None
        else "never ran",
        "" if fresh else "install crontab.example (a nightly `synctool reconcile --from 8d --quiet`)",
    )
    backlog, oldest = log.backlog(conn, platforms.crm_bound())
    age = age_s(oldest)
    add(
        "queue backlog",
        "ok" if age is None or age < 600 else "warn",
        f"{backlog} queued" + (f", oldest due {int(age)} s ago" if age is not None and age > 0 else ""),
        "" if age is None or age < 600 else "is drain running? `synctool drain -v`; `synctool crm budget`",
    )
    from synctool.crm import matching

    held = matching.pending_count(conn)
    add(
        "donor matches",
        "ok" if not held else "warn",
        f"{held} gift(s) held for review (policy {matching.policy(conn, rt.config)})",
        "" if not held else "synctool donors matches; accept a candidate or make a new constituent",
    )
    failed = log.open_failures(conn)
    add(
        "failed jobs",
        "ok" if not failed else "warn",
        f"{failed} unresolved",
        "" if not failed else "synctool syncs list --status failed; fix, then synctool retry-all",
    )
    from synctool.platforms import tickets

    for waiting in tickets.waiting(conn):
        add("event mapping", "warn",
            f"{waiting['tickets']} ticket(s) of {waiting['campaign'] or waiting['campaign_id']} wait for an event mapping",
            f"synctool mappings events set {waiting['campaign_id']} --event N (synctool crm events lists them)")  # fmt: skip
    add(*mail(conn, rt))
    add(*outbox_check(conn))
    from synctool.ops import webhooks

    public_url = webhooks.public_url(conn, rt)
    for name, status, detail, fix in receiver(rt, public_url):
        add(name, status, detail, fix)
    if public_url:  # the webhooks, where the platforms' APIs are configured
        found_status = webhooks.status(conn, rt)
        for found in found_status["sources"]:
            if found["state"] != "not configured":
                at = f" ({found['where']})" if found["where"] else ""
                add(f"webhook {found['source']}{at}", "ok" if found["state"] == "ok" else "warn",
                    f"{found['state']}: {found['detail']}", found["fix"])  # fmt: skip
        for row in found_status["deliveries"]:  # what the platforms report they failed to deliver
            if row["failed"] is not None:
                add(f"deliveries {row['source']}", "warn" if row["not_received"] else "ok", row["detail"],
                    f"synctool webhooks heal --source {row['source']}" if row["not_received"] else "")  # fmt: skip
    return checks
