"""CLI actions join the staff actions log: a command that changes something is written with the OS user who ran
it (role and via ``cli``), its target and its outcome, done or refused; a command that only reads, or only shows a
setting, or runs with --dry-run, writes nothing. One decorator (``console.action``) marks them all."""

from __future__ import annotations

import getpass
import json

import typer

from synctool import store
from synctool.queue import jobs


def actions(cli, *args: str) -> list[dict]:
    return json.loads(cli("syncs", "actions", "--json", *args).stdout)["items"]


def failed_job(db) -> str:
    with store.atomic(db):
        job_id = jobs.enqueue(
            db, source="donations", entity_type="transaction", entity_id="T1", external_id="donations_T1", amount="5.00"
        )
        db.execute("UPDATE jobs SET status = 'failed', last_error = 'CRM answered 500' WHERE id = ?", (job_id,))
    return job_id


def test_a_command_that_changes_something_is_logged_with_the_os_user(db, cli):
    job_id = failed_job(db)
    assert cli("jobs", "retry", job_id).exit_code == 0
    [done] = actions(cli)
    assert done["who"] == getpass.getuser() and done["role"] == "cli" and done["via"] == "cli"
    assert (done["action"], done["target"], done["outcome"]) == ("jobs retry", job_id, "done")
    # a refused one is written too, with why (the job is queued now)
    refused = cli("jobs", "retry", job_id)
    assert refused.exit_code == 4
    latest = actions(cli)[0]
    assert latest["outcome"].startswith("refused: ") and "only a failed job can be retried" in latest["outcome"]
    # found again by who ran them and by their target
    assert len(actions(cli, "--who", getpass.getuser())) == 2 and len(actions(cli, "--target", job_id)) == 2
    shown = cli("syncs", "actions").stdout
    assert "jobs retry" in shown and "cli" in shown


def test_reading_showing_and_dry_runs_write_nothing(db, cli):
    failed_job(db)
    for args in (
        ("jobs", "list"),
        ("syncs", "list"),
        ("settings", "donor-matching"),
        ("settings", "mailing-sync-enabled"),
        ("settings", "pos-default-constituent"),
        ("mappings", "types"),
        ("reconcile", "accepted"),
        ("users", "list"),
        ("donors", "changes"),
    ):
        assert cli(*args).exit_code == 0, args
    assert actions(cli) == []


def test_a_setting_changed_at_the_terminal_names_its_new_value(db, cli):
    assert cli("settings", "donor-matching", "auto").exit_code == 0
    assert cli("settings", "mailing-sync-enabled", "off").exit_code == 0
    assert cli("settings", "pos-default-constituent", "--email", "nope").exit_code == 2
    found = [(a["action"], a["note"], a["outcome"].split(":")[0]) for a in actions(cli)]
    assert found == [
        ("settings pos-default-constituent", "email=nope", "refused"),
        ("settings mailing-sync-enabled", "enabled=off", "done"),
        ("settings donor-matching", "auto", "done"),
    ]


def test_a_platforms_command_is_logged_too(db, cli):
    assert cli("mailing", "mappings", "set", "b7e21c0d94").exit_code == 0
    [done] = actions(cli)
    assert (done["action"], done["target"], done["via"]) == ("mailing mappings set", "b7e21c0d94", "cli")


#: the commands that change something: each is an action (a new command that changes something joins this list)
ACTIONS = {
    "synctool backfill",
    "synctool crm config",
    "synctool crm environment",
    "synctool dev reset-test-data",
    "synctool donations refunded-tickets",
    "synctool donors apply",
    "synctool donors dismiss",
    "synctool donors matches accept",
    "synctool donors matches new",
    "synctool events checkins",
    "synctool inject",
    "synctool jobs release",
    "synctool jobs retry",
    "synctool mailing mappings set",
    "synctool mailing tag-rules set",
    "synctool mappings custom-fields set",
    "synctool mappings events remove",
    "synctool mappings events set",
    "synctool mappings funds set",
    "synctool mappings overrides set",
    "synctool mappings payments set",
    "synctool mappings plans set",
    "synctool mappings remove",
    "synctool mappings types set",
    "synctool portal flags",
    "synctool portal import",
    "synctool portal mappings funds set",
    "synctool portal mappings gateways set",
    "synctool portal mappings levels set",
    "synctool portal mappings relationship-types set",
    "synctool portal queue",
    "synctool portal scenarios create",
    "synctool portal scenarios delete",
    "synctool portal sync membership",
    "synctool portal sync payment",
    "synctool portal sync relationship",
    "synctool portal sync user",
    "synctool pos location-overrides replace",
    "synctool pos location-overrides set",
    "synctool pos resync",
    "synctool reconcile",
    "synctool reconcile accept",
    "synctool reconcile payouts",
    "synctool retry-all",
    "synctool settings alert-recipients",
    "synctool settings crm-environment",
    "synctool settings donor-matching",
    "synctool settings donor-updates",
    "synctool settings mailing-sync-enabled",
    "synctool settings plans-chat-webhook",
    "synctool settings plans-report-changes",
    "synctool settings pos-default-constituent",
    "synctool settings refund-policy",
    "synctool settings soft-credits",
    "synctool sync-mode",
    "synctool syncs resolve",
    "synctool users add",
    "synctool users invite",
    "synctool users login-link",
    "synctool users token",
    "synctool users update",
    "synctool webhooks register",
}


def test_every_command_that_changes_something_is_an_action():
    from synctool.cli.main import app
    from synctool.cli.reference import commands

    marked = {
        path for path, command in commands(typer.main.get_command(app)) if getattr(command.callback, "synctool_action", False)
    }
    assert marked == ACTIONS


def test_the_decorator_skips_dry_runs_and_says_how_a_run_ended():
    from typer.testing import CliRunner

    from synctool.console import AppContext, action, ctx_obj, sub_app

    written: list[tuple] = []
    app = sub_app("Test commands.")

    @app.command("change")
    @action(target="name", note=lambda a: f"to {a['value']}")
    def change(ctx: typer.Context, name: str, value: int = 1, dry_run: bool = typer.Option(False, "--dry-run")) -> None:
        ctx_obj(ctx)
        if value < 0:
            raise typer.Exit(1)

    @app.command("other")
    def other(ctx: typer.Context) -> None:
        pass

    obj = AppContext(log_action=lambda conn, *row: written.append(row))
    obj._db = object()  # type: ignore[assignment]  # never opened: the recorder above takes it
    runner = CliRunner()
    for args in (["change", "a"], ["change", "b", "--dry-run"], ["change", "c", "--value", "-1"], ["other"]):
        runner.invoke(app, args, obj=obj)
    assert written == [("change", "a", "to 1", "done"), ("change", "c", "to -1", "failed (exit 1)")]
