"""`synctool alerts`: the failure digest and the daily summary e-mail."""

from __future__ import annotations

import typer

from synctool.cli.host import host_wide
from synctool.console import AsJson, ctx_obj, render, sub_app

app = sub_app(
    "Alert e-mails: the failure digest and the daily summary. The digest goes after a drain in which jobs failed for "
    "good; the summary once a day."
)


@app.command("summary")
@host_wide()
def alerts_summary(
    ctx: typer.Context,
    hours: int = typer.Option(24, min=1, max=24 * 31, help="the window, in hours"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the e-mail instead of sending it"),
    as_json: AsJson = False,
) -> None:
    """The daily summary e-mail: per source, what succeeded, was skipped, failed or was recovered by the
    poll; the failures needing action with the command for each; CRM requests spent and budget left; cron
    and mirror freshness. Plain text and HTML, to the alert recipients (cron: once a day).

    Example: synctool alerts summary --dry-run
    """
    from synctool.ops.alerts import summary

    obj = ctx_obj(ctx)
    report = summary(obj.db, obj.rt, hours=hours, send=not dry_run)

    def for_people(_: dict) -> None:
        if dry_run:
            typer.echo(report["text"], nl=False)
        else:
            typer.echo(f"summary sent to {report['recipients']} recipient(s): {report['subject']}")

    render({k: v for k, v in report.items() if k not in ("text", "html")}, as_json, people=for_people)


@app.command("test")
def alerts_test(ctx: typer.Context) -> None:
    """Send one test alert to the alert recipients.

    Example: synctool alerts test
    """
    from synctool.ops.alerts import test

    obj = ctx_obj(ctx)
    result = test(obj.db, obj.rt)
    typer.echo(f"test alert sent to {', '.join(result['recipients'])}")
    typer.echo(f"security: {result['security']}")
