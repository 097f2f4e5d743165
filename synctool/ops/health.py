"""The install's own health, each a row of ``doctor``: the receiver answering (here and at its public URL), how
e-mail leaves, the database file (its modes, migrations, size) and when cron's commands last ran. No secret is
ever shown."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TypedDict

from synctool import platforms, settings, store
from synctool.config import Config
from synctool.errors import ConfigError
from synctool.ops import outbox, webhooks
from synctool.ops.reconcile import last_run
from synctool.runtime import Runtime
from synctool.timeutil import age_s

#: one of doctor's rows: ``(check, status, detail, fix)``, a platform's ``checks`` hook's shape too
DoctorRow = tuple[str, str, str, str]


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


def receiver(rt: Runtime, public_url: str | None) -> list[DoctorRow]:
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
                      "the proxy must pass /webhooks/*, /health (and on a host /o/*) to 127.0.0.1:8787 unchanged (deploy/Caddyfile)"))  # fmt: skip
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


def mail(conn: store.Connection, rt: Runtime) -> DoctorRow:
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


def outbox_check(conn: store.Connection) -> DoctorRow:
    """Doctor's ``outbox`` row: sign-in e-mails that drain could not send in the last day, or that wait too long."""
    found = outbox.problems(conn)
    why = f" (last error: {found['last_error']})" if found["last_error"] else ""
    if found["failed"]:
        return ("outbox", "fail", f"{found['failed']} e-mail(s) could not be sent in the last day{why}",
                "synctool alerts test says why; fix smtp: in config")  # fmt: skip
    if found["late"]:
        return ("outbox", "warn", f"{found['late']} e-mail(s) waiting over 5 minutes{why}",
                "is cron's drain running? (synctool drain sends them)")  # fmt: skip
    return "outbox", "ok", f"{found['waiting']} e-mail(s) waiting", ""


class CronRun(TypedDict):
    """When one of cron's commands last ran (``cron_runs``)."""

    command: str
    at: str | None
    age_s: float | None
    stale: bool


def cron_runs(conn: store.Connection, config: Config) -> dict[str, CronRun]:
    """When each of cron's commands last ran (``poll`` only when a platform in use polls, ``heal`` only when one
    keeps a record of failed deliveries; the poll's is its stalest platform's): its time, its age in seconds, and
    whether that is too old."""
    used = platforms.in_use(config)
    found = {"drain": (settings.get(conn, "last_drain") or {}).get("at")}
    polling = [p.role for p in used if p.poll]
    if polling:
        marks = ",".join("?" * len(polling))
        found["poll"] = conn.execute(f"SELECT min(last_run_at) FROM poll_state WHERE source IN ({marks})", polling).fetchone()[0]
    if any(p.missed for p in used):
        found["heal"] = (webhooks.last_heal(conn) or {}).get("at")
    found["reconcile"] = (last_run(conn) or {}).get("at")
    runs: dict[str, CronRun] = {}
    for name, at in found.items():
        age = age_s(at)
        runs[name] = {"command": name, "at": at, "age_s": age, "stale": age is None or age >= STALE_AFTER_S[name]}
    return runs


def file_modes(db_path: Path) -> tuple[str, str, str]:
    """(status, detail, fix): the database and its ``-wal`` and ``-shm`` files are synctool's user's alone (every
    donor's name, address and phone is in them); one that its group or others may read or write fails."""
    modes = store.file_modes(db_path)
    open_ = [path for path, mode in modes.items() if mode & 0o066]
    if not open_:
        return "ok", f"{', '.join(f'{p.name} {m:04o}' for p, m in modes.items())}: synctool's user's alone", ""
    return (
        "fail",
        "; ".join(f"{p.name} is {modes[p]:04o}: {_who(modes[p])} may {_may(modes[p])} it" for p in open_),
        "chmod 600 " + " ".join(shlex.quote(str(p)) for p in open_) + ", as the user that owns them (synctool makes"
        " them 0600 whenever it opens the database, but these are not its user's to change)",
    )


def _who(mode: int) -> str:
    return " and ".join(who for who, bits in (("its group", 0o060), ("others", 0o006)) if mode & bits)


def _may(mode: int) -> str:
    return " and ".join(what for what, bits in (("read", 0o044), ("write", 0o022)) if mode & bits)


def megabytes(count: float) -> str:
    return f"{count / 1_000_000:,.1f} MB"


def database(conn: store.Connection, rt: Runtime) -> DoctorRow:
    """The database: its migrations (of the sets in use: the core's and the platforms' in use), the synctool that
    migrated it, its size, its free pages and how fast it grows (``prune`` records its size each night)."""
    sets = [store.MIGRATION_SET, *(f"{store.MIGRATION_SET}.{p.name}" for p in platforms.in_use(rt.config))]
    known = sum(len(found) for found in store.migration_names(sets).values())
    applied = len(store.applied_migrations(conn, sets))
    found = store.size(conn)
    growth = store.growth_per_month(conn)
    where = store.describe(conn)["where"] if rt.config.database_url else rt.config.db_path  # (a URL without its password)
    detail = (
        f"{where}, {applied}/{known} migrations (by synctool {store.migrated_by(conn) or 'before 0.3.0'}),"
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
