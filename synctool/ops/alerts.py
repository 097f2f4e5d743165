"""The failure digest: one e-mail after a drain in which jobs failed for good (SMTP settings in config)."""

from __future__ import annotations

import logging
import smtplib
import sqlite3
from email.message import EmailMessage
from typing import Any

from synctool import settings
from synctool.config import Config
from synctool.errors import ConfigError, InvalidInput, SyncError

logger = logging.getLogger("synctool.alerts")


def _send(config: Config, recipients: list[str], subject: str, body: str) -> None:
    from synctool.secrets import get_secret

    smtp = config.smtp
    if not smtp.host:
        raise ConfigError("smtp.host", config.source, "not set; alerts need an SMTP server")
    message = EmailMessage()
    message["From"] = smtp.sender
    message["To"] = ", ".join(recipients)
    message["Subject"] = subject
    message.set_content(body)
    try:
        with smtplib.SMTP(smtp.host, smtp.port, timeout=20) as server:
            if smtp.starttls and server.has_extn("starttls"):
                server.starttls()
            if smtp.username:
                server.login(smtp.username, get_secret("SMTP_PASSWORD") or "")
            server.send_message(message)
    except (OSError, smtplib.SMTPException) as exc:
        raise SyncError(f"could not send the alert e-mail via {smtp.host}:{smtp.port}: {exc}") from None


def recipients(conn: sqlite3.Connection) -> list[str]:
    return settings.get(conn, "alert_recipients", []) or []


def digest(conn: sqlite3.Connection, config: Config, job_ids: list[str]) -> dict[str, Any]:
    """E-mail the jobs that failed for good in one drain; nothing when there are none or no recipients."""
    to = recipients(conn)
    if not job_ids or not to:
        return {"sent": False, "failed": len(job_ids), "recipients": len(to)}
    marks = ",".join("?" * len(job_ids))
    rows = conn.execute(f"SELECT id, source, entity_type, entity_id, external_id, last_error FROM jobs WHERE id IN ({marks})",
                        job_ids).fetchall()
    lines = [f"{len(rows)} sync job(s) failed for good and need attention:", ""]
    for r in rows:
        lines.append(f"- {r['source']} {r['entity_type']} {r['entity_id']} ({r['external_id'] or 'no external id'})")
        lines.append(f"  {r['last_error']}")
        lines.append(f"  synctool syncs show {r['id']}")
    lines += ["", "Fix the cause, then `synctool jobs retry ID` or `synctool retry-all`; or `synctool syncs resolve ID`."]
    _send(config, to, f"synctool: {len(rows)} sync job(s) failed", "\n".join(lines))
    return {"sent": True, "failed": len(rows), "recipients": len(to)}


def test(conn: sqlite3.Connection, config: Config) -> dict[str, Any]:
    to = recipients(conn)
    if not to:
        raise InvalidInput("no alert recipients", "set them with `synctool settings alert-recipients EMAIL ...`")
    _send(config, to, "synctool: test alert", "This is a test of synctool's failure alerts. Nothing is wrong.")
    return {"sent": True, "recipients": to}


def after_drain(conn: sqlite3.Connection, config: Config, failed_job_ids: list[str]) -> dict[str, Any] | None:
    """Called by drain: send the digest, but never let an alert problem fail the drain itself."""
    if not failed_job_ids:
        return None
    try:
        return digest(conn, config, failed_job_ids)
    except (ConfigError, SyncError) as exc:
        logger.warning("failure alert not sent: %s", exc)
        return {"sent": False, "error": str(exc)}
