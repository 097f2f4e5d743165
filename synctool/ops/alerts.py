"""E-mails to the alert recipients (SMTP settings in config): the failure digest after a drain in which
jobs failed for good, and the daily summary."""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from synctool import platforms, settings
from synctool.errors import ConfigError, InvalidInput, SyncError
from synctool.ops import plans as plan_ops
from synctool.queue import log
from synctool.runtime import Runtime

if TYPE_CHECKING:  # year_end is imported when the summary is counted (cron's idle drain sends nothing)
    from synctool import store
    from synctool.ops.year_end import Season

logger = logging.getLogger("synctool.alerts")


def mail_security(rt: Runtime) -> str:
    """How alert and sign-in e-mails leave, in one line (doctor, `alerts test`)."""
    if rt.mailer is not None:
        return "handed to the in-process outbox (demo or tests), no network"
    return rt.config.smtp.described()


def send_mail(rt: Runtime, recipients: list[str], subject: str, body: str, html: str | None = None) -> None:
    """Send one e-mail as ``smtp:`` says: over STARTTLS or implicit TLS with a verified certificate, or
    unencrypted to a loopback relay; anything else is refused before a byte is sent."""
    smtp = rt.config.smtp
    if not smtp.host and rt.mailer is None:
        raise ConfigError("smtp.host", rt.config.source, "not set; alerts need an SMTP server")
    import smtplib  # here, not at the top: cron's idle drain imports this module and sends nothing
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"] = smtp.sender
    message["To"] = ", ".join(recipients)
    message["Subject"] = subject
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    if rt.mailer is not None:  # the demo's and the tests' outbox
        rt.mailer(message)
        return
    host, where = smtp.host or "", f"{smtp.host}:{smtp.port}"
    refused = smtp.refusal()
    if refused:
        raise ConfigError("smtp.security", rt.config.source, refused)
    context = smtp.tls_context(rt.config.source) if smtp.security != "none" else None
    try:
        if smtp.security == "tls":
            server: smtplib.SMTP = smtplib.SMTP_SSL(host, smtp.port, context=context, timeout=20)
        else:
            server = smtplib.SMTP(host, smtp.port, timeout=20)
        with server:
            if smtp.security == "starttls":
                server.ehlo()
                if not server.has_extn("starttls"):
                    raise SyncError(
                        f"{where} does not offer STARTTLS; smtp.security is starttls, so nothing was sent "
                        "(use a port that offers it, or smtp.security: tls for port 465)"
                    )
                server.starttls(context=context)
                server.ehlo()
            if smtp.username:
                server.login(smtp.username, rt.secrets.get("SMTP_PASSWORD") or "")
            server.send_message(message)
    except ssl.SSLCertVerificationError as exc:
        raise SyncError(
            f"the certificate of {host} could not be verified: {str(exc.verify_message).rstrip('.')}; nothing was sent "
            "(smtp.ca_file names a CA bundle to trust instead of the system's)"
        ) from None
    except (OSError, smtplib.SMTPException) as exc:
        raise SyncError(f"could not send the e-mail via {where}: {exc}") from None


def recipients(conn: store.Connection) -> list[str]:
    return settings.get(conn, "alert_recipients", []) or []


class Digest(TypedDict):
    """Whether the failure digest went out, for how many failed jobs and to how many recipients."""

    sent: bool
    failed: NotRequired[int]
    recipients: NotRequired[int]
    error: NotRequired[str]


class AlertTest(TypedDict):
    sent: bool
    recipients: list[str]
    security: str


def digest(conn: store.Connection, rt: Runtime, job_ids: list[str]) -> Digest:
    """E-mail the jobs that failed for good in one drain; nothing when there are none or no recipients."""
    to = recipients(conn)
    if not job_ids or not to:
        return {"sent": False, "failed": len(job_ids), "recipients": len(to)}
    rows = log.by_ids(conn, job_ids)
    lines = [f"{len(rows)} sync job(s) failed for good and need attention:", ""]
    for r in rows:
        lines.append(f"- {r['source']} {r['entity_type']} {r['entity_id']} ({r['external_id'] or 'no external id'})")
        lines.append(f"  {r['last_error']}")
        lines.append(f"  synctool syncs show {r['id']}")
    lines += ["", "Fix the cause, then `synctool jobs retry ID` or `synctool retry-all`; or `synctool syncs resolve ID`."]
    send_mail(rt, to, f"synctool: {len(rows)} sync job(s) failed", "\n".join(lines))
    return {"sent": True, "failed": len(rows), "recipients": len(to)}


def test(conn: store.Connection, rt: Runtime) -> AlertTest:
    to = recipients(conn)
    if not to:
        raise InvalidInput("no alert recipients", "set them with `synctool settings alert-recipients EMAIL ...`")
    send_mail(rt, to, "synctool: test alert", "This is a test of synctool's failure alerts. Nothing is wrong.")
    return {"sent": True, "recipients": to, "security": mail_security(rt)}


def after_drain(conn: store.Connection, rt: Runtime, failed_job_ids: list[str]) -> Digest | None:
    """Called by drain: send the digest, but never let an alert problem fail the drain itself."""
    if not failed_job_ids:
        return None
    try:
        return digest(conn, rt, failed_job_ids)
    except (ConfigError, SyncError) as exc:
        logger.warning("failure alert not sent: %s", exc)
        return {"sent": False, "error": str(exc)}


SUMMARY_LIMIT = 25


class Summary(TypedDict):
    """The daily summary: what it counted, and the e-mail it makes of them (``subject``, ``text``, ``html``)."""

    year_end: Season | None
    donor_changes_pending: int
    donor_matches_pending: int
    refunds: dict[str, Any]
    plans: Sequence[Mapping[str, object]]
    hours: int
    since: str
    per_source: dict[str, dict[str, int | None]]
    open_failures: int
    failures: list[dict[str, Any]]
    crm_requests_spent: int
    crm_budget: dict[str, float | None]
    freshness: list[dict[str, str]]
    subject: NotRequired[str]
    text: NotRequired[str]
    html: NotRequired[str]
    sent: NotRequired[bool]
    recipients: NotRequired[int]


#: doctor's rows the summary repeats (and each ``deliveries <source>`` one)
FRESHNESS = ("cron drain", "cron poll", "crm mirror", "queue backlog", "reconcile")


def summary(conn: store.Connection, rt: Runtime, *, hours: int = 24, send: bool = True) -> Summary:
    """The daily summary: per source over the last ``hours``, what succeeded, was skipped, failed, or was
    recovered by the backup poll; the failures still needing action, each with its command; the CRM
    requests spent and the budget left; and the freshness checks of ``doctor``. Sent as plain text and
    HTML unless ``send`` is false. Holds counts, ids and error messages, never a secret."""
    report = _counted(conn, rt, hours)
    totals = {
        k: sum(v[k] or 0 for v in report["per_source"].values())
        for k in ("succeeded", "skipped", "failed", "recovered_by_poll", "pending")
    }
    open_count = report["open_failures"]
    subject = f"synctool daily summary: {totals['succeeded']} synced, {totals['failed']} failed" + (
        f", {open_count} need attention" if open_count else ""
    )
    text = "\n".join([subject, *_text_lines(report)]) + "\n"
    html = _html(report, subject)
    report["subject"], report["text"], report["html"], report["sent"] = subject, text, html, False
    if send:
        to = recipients(conn)
        if not to:
            raise InvalidInput("no alert recipients", "set them with `synctool settings alert-recipients EMAIL ...`")
        send_mail(rt, to, subject, text, html)
        report["sent"], report["recipients"] = True, len(to)
    return report


def _counted(conn: store.Connection, rt: Runtime, hours: int) -> Summary:
    """What the summary counts over the last ``hours``."""
    from synctool import store  # here, not at the top: cron's idle drain imports this module and sends nothing
    from synctool.crm import donor_changes, matching
    from synctool.crm import environment as crm_environment
    from synctool.ops import refunds as refund_ops
    from synctool.ops import year_end
    from synctool.ops.checks import doctor

    since = store.iso(store.utcnow() - timedelta(hours=hours))
    idle = {p.role for p in platforms.registered()} - {p.role for p in platforms.in_use(rt.config)}
    per_source = {s: row for s, row in log.summary_per_source(conn, since).items() if s not in idle}
    open_failures = log.open_failure_rows(conn, SUMMARY_LIMIT)
    open_count = log.open_failures(conn)
    spent = log.crm_requests_since(conn, since)
    budget = crm_environment.budget(rt)
    freshness = [c for c in doctor(conn, rt) if c["check"] in FRESHNESS or c["check"].startswith("deliveries ")]
    for failure in open_failures:
        failure["fix"] = (
            f"synctool syncs show {failure['id']}; fix the cause, then synctool jobs retry {failure['id']} "
            f"(or synctool syncs resolve {failure['id']})"
        )
    refunds = refund_ops.since(conn, since)
    # the plans that failed, were paused or canceled: from the plans' own events once the platform keeps them
    # (its plan job also records created, updated and charged plans, which need no one), else the plan jobs'
    plans = (
        plan_ops.to_follow(conn, since, SUMMARY_LIMIT)
        if plan_ops.known(conn, "plan_events")
        else log.succeeded_since(conn, "plan", since, SUMMARY_LIMIT)
    )
    donor_news = donor_changes.pending_count(conn)
    held = matching.pending_count(conn)
    return {
        "year_end": year_end.season(conn, rt),
        "donor_changes_pending": donor_news,
        "donor_matches_pending": held,
        "refunds": refunds,
        "plans": plans,
        "hours": hours,
        "since": since,
        "per_source": per_source,
        "open_failures": open_count,
        "failures": open_failures,
        "crm_requests_spent": spent,
        "crm_budget": {k: budget[k] for k in ("account_limit", "limit", "window_s", "used_in_window", "remaining")},
        "freshness": freshness,
    }


def _text_lines(report: Summary) -> list[str]:
    """The plain-text summary after its subject line."""
    hours, since, budget = report["hours"], report["since"], report["crm_budget"]
    lines = ["", f"Last {hours} h (since {since}):"]
    for source, row in report["per_source"].items():
        lines.append(
            f"  {source:<10} {row['succeeded'] or 0} succeeded, {row['skipped'] or 0} skipped, "
            f"{row['failed'] or 0} failed, {row['recovered_by_poll'] or 0} recovered by poll, "
            f"{row['pending'] or 0} waiting"
        )
    if not report["per_source"]:
        lines.append("  nothing arrived")
    lines += [
        "",
        f"CRM requests spent by sync jobs: {report['crm_requests_spent']}; this window: {budget['used_in_window']} of "
        f"synctool's {budget['limit']} (the account allows {budget['account_limit']} per {budget['window_s']:g} s), "
        f"{budget['remaining']} left",
        "",
        "Health:",
    ]
    lines += [
        f"  {c['status'].upper():<5} {c['check']}: {c['detail']}" + (f" -> {c['fix']}" if c["fix"] else "")
        for c in report["freshness"]
    ]
    return lines + _failure_lines(report) + _refund_lines(report["refunds"]) + _follow_up_lines(report)


def _failure_lines(report: Summary) -> list[str]:
    open_count, failures = report["open_failures"], report["failures"]
    lines = [
        "",
        f"Failures needing action: {open_count}" + (f" (the newest {len(failures)})" if open_count > len(failures) else ""),
    ]
    for f in failures:
        lines += [
            f"  - {f['source']} {f['entity_type']} {f['entity_id']} ({f['external_id'] or 'no external id'}): {f['last_error']}",
            f"    {f['fix']}",
        ]
    return lines


def _refund_lines(refunds: dict[str, Any]) -> list[str]:
    lines = [
        "",
        f"Refunds: {refunds['applied']} applied (${refunds['amount_applied']}), {refunds['waiting']} waiting for "
        f"their gift, {refunds['flagged']} flagged, {refunds['skipped']} skipped",
    ]
    lines += [
        f"  - {r['state']}: {r['source']} refund {r['refund_id']} of ${r['amount']} on {r['gift_external_id']}: {r['reason'] or ''}"
        for r in refunds["attention"]
    ]
    return lines


def _follow_up_lines(report: Summary) -> list[str]:
    """Donor changes to review, the year-end statements in their season, gifts held for review, plans to follow."""
    lines = []
    if report["donor_changes_pending"]:
        lines += ["", f"Donor records: {report['donor_changes_pending']} proposed change(s) to review: synctool donors changes"]
    statements = report["year_end"]
    if statements is not None:
        year = statements["year"]
        if statements["checked_at"] is None:
            lines += ["", f"Year-end {year}: not checked yet; the statements go out in January: synctool year-end check {year}"]
        else:
            lines += ["", f"Year-end {year}: {statements['blockers']} blocker(s) at the last check ({statements['checked_at'][:16]}): "
                      f"synctool year-end check {year}"]  # fmt: skip
    if report["donor_matches_pending"]:
        lines += ["", f"Gifts held for review: {report['donor_matches_pending']}, each from a donor who may be a known "
                  "constituent under a new e-mail: synctool donors matches"]  # fmt: skip
    if report["plans"]:
        lines += ["", "Recurring plans to follow up (a call to the donor may save them):"]
        lines += [f"  - {p['message']}" for p in report["plans"]]
    return lines


def _html(report: Summary, subject: str) -> str:
    """The HTML summary: every value from the database escaped."""
    from html import escape

    refunds, plans, budget = report["refunds"], report["plans"], report["crm_budget"]
    rows = "".join(
        f"<tr><td>{escape(s)}</td><td>{r['succeeded'] or 0}</td><td>{r['skipped'] or 0}</td>"
        f"<td>{r['failed'] or 0}</td><td>{r['recovered_by_poll'] or 0}</td><td>{r['pending'] or 0}</td></tr>"
        for s, r in report["per_source"].items()
    )
    failures = "".join(
        f"<li><b>{escape(f['source'])} {escape(f['entity_type'])} {escape(f['entity_id'])}</b>: "
        f"{escape(f['last_error'] or '')}<br><code>{escape(f['fix'])}</code></li>"
        for f in report["failures"]
    )
    refund_items = "".join(
        f"<li>{escape(r['state'])}: {escape(r['source'])} refund {escape(r['refund_id'])} of ${escape(r['amount'])} on "
        f"{escape(r['gift_external_id'])}: {escape(r['reason'] or '')}</li>"
        for r in refunds["attention"]
    )
    plan_items = "".join(f"<li>{escape(str(p['message'] or ''))}</li>" for p in plans)
    health = "".join(
        f"<li>{escape(c['status'].upper())} {escape(c['check'])}: {escape(c['detail'])}</li>" for c in report["freshness"]
    )
    return (
        f"<html><body><h2>{escape(subject)}</h2><p>Last {report['hours']} h (since {escape(report['since'])})</p>"
        "<table border=1 cellpadding=4><tr><th>source</th><th>succeeded</th><th>skipped</th><th>failed</th>"
        f"<th>recovered by poll</th><th>waiting</th></tr>{rows}</table>"
        f"<p>CRM requests spent by sync jobs: {report['crm_requests_spent']}; {budget['remaining']} of {budget['limit']} left in this window.</p>"
        f"<h3>Health</h3><ul>{health}</ul><h3>Failures needing action: {report['open_failures']}</h3><ul>{failures}</ul>"
        f"<h3>Refunds</h3><p>{refunds['applied']} applied (${escape(refunds['amount_applied'])}), {refunds['waiting']} "
        f"waiting, {refunds['flagged']} flagged, {refunds['skipped']} skipped</p><ul>{refund_items}</ul>"
        + (f"<h3>Recurring plans to follow up</h3><ul>{plan_items}</ul>" if plans else "")
        + "</body></html>"
    )
