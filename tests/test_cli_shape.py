"""The CLI's shape: one table of commands (the core's and the platforms') from which `synctool --help` is built,
one line a summary at 80 columns; `synctool platforms` says everything at 80 columns, with how to turn an
installed platform on; each platform's settings and the jobs it runs for another are declared on its Platform."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer

from synctool import platforms
from synctool.platforms import Client, Platform, Webhook

ROOT = Path(__file__).resolve().parents[1]


def test_every_top_level_command_comes_from_the_one_table():
    from synctool.cli.main import COMMANDS, app, platform_commands

    assert app.registered_commands == [] and app.registered_groups == []  # no command added another way
    group = typer.main.get_command(app)
    named = group.list_commands(typer.Context(group))
    assert named == [*COMMANDS, *(n for n in platform_commands() if n not in COMMANDS)]
    assert {n for n, c in platform_commands().items() if c.section == "Platforms"} >= {"donations", "pos", "mailing", "portal"}
    # the core's CLI names no platform command (they come from Platform.commands)
    main = (ROOT / "synctool" / "cli" / "main.py").read_text()
    assert not re.search(r'"(donations|pos|mailing|portal)"', main)


def test_help_lists_each_command_once_in_its_tables_section_on_one_line(cli, env):
    from synctool.cli.main import COMMANDS, platform_commands

    env["COLUMNS"] = "80"
    out = cli("--help").stdout
    sections: dict[str, list[str]] = {}
    title = None
    for line in out.split("Options:", 1)[1].splitlines():
        if re.match(r"^[A-Z][\w ]+:$", line):
            title = line[:-1]
        elif title and line.startswith("  ") and not line.startswith("   "):
            sections.setdefault(title, []).append(line.split()[0])
        elif title and line.strip():
            raise AssertionError(f"a summary runs over one line at 80 columns: {line!r}")
    wanted: dict[str, list[str]] = {}
    for name, command in {**platform_commands(), **COMMANDS}.items():
        wanted.setdefault(command.section, []).append(name)
    assert {t: sorted(names) for t, names in sections.items()} == {t: sorted(names) for t, names in wanted.items()}
    assert list(sections)[:3] == ["Getting started", "Daily operation", "Money"]
    assert max(len(line) for line in out.splitlines()) <= 80


def test_platforms_says_everything_at_80_columns_and_how_to_turn_one_on(cli, env, secrets_env):
    platforms.register(
        Platform(
            name="boxdesk",
            role="box",
            webhook=Webhook(lambda: None, secret="BOX_WEBHOOK_SIGNING_SECRET_OF_SOME_LENGTH", secret_help="x"),  # type: ignore[arg-type,return-value]
            client=Client(lambda rt: None, key="BOX_API_KEY_FOR_THE_DONATIONS_ENDPOINT", key_help="its key"),  # type: ignore[arg-type,return-value]
        )
    )
    try:
        env["COLUMNS"] = "80"
        out = cli("platforms").stdout
        lines = out.splitlines()
        # nothing is cut; a line runs over only when one word (the config file's path) is wider than what is left
        assert "…" not in out and all(len(line) <= 80 or " " not in line[15:] for line in lines), out
        # every missing secret is named whole (the test secrets set the webhook ones, not the API keys)
        for p in platforms.registered():
            for name in p.secrets if p.name in platforms.DEFAULT_PLATFORMS else ():
                if name not in secrets_env:
                    assert re.search(rf"\b{name}\b", out), name
        assert "poll, heal, reconcile, payouts, backfill, webhook registration," in out
        block = out.split("boxdesk (box): not in use", 1)[1]
        assert "turn on" in block and "add boxdesk to `platforms:`" in block and "--platforms" in block
        listed = {r["name"]: r for r in json.loads(cli("platforms", "--json").stdout)}
        assert listed["boxdesk"]["in_use"] is False and "boxdesk" in listed["boxdesk"]["turn_on"]
        assert listed["stripe"]["jobs_run_by"] == "portal" and listed["square"]["turn_on"] is None
        assert listed["mailchimp"]["settings"] == "mailing-sync-enabled"
    finally:
        platforms.unregister("boxdesk")


def test_a_platforms_settings_are_declared_on_it_and_found_by_settings(db, cli):
    declared = {s.name: p.name for p in platforms.registered() for s in p.settings}
    assert declared == {"pos-default-constituent": "square", "mailing-sync-enabled": "mailchimp"}
    # the core names neither: they live in the platforms' packages
    for core in ("synctool/ops/settings.py", "synctool/cli/settings.py", "synctool/cli/main.py"):
        text = (ROOT / core).read_text()
        for named in ("pos_default", "pos-default", "mailing_sync", "mailing-sync", "EnabledBody", "PosDefaultBody"):
            assert named not in text, (core, named)
    assert json.loads(cli("settings", "mailing-sync-enabled", "--json").stdout) == {"enabled": True}
    assert cli("settings", "mailing-sync-enabled", "off").exit_code == 0
    assert json.loads(cli("settings", "mailing-sync-enabled", "--json").stdout) == {"enabled": False}
    set_ = cli("settings", "pos-default-constituent", "--email", "walkin@example.org", "--last-name", "Customer", "--json")
    assert json.loads(set_.stdout) == {"email": "walkin@example.org", "first_name": None, "last_name": "Customer"}
    assert "--first-name" in cli("settings", "pos-default-constituent", "--help").stdout
    setting = platforms.settings()["pos-default-constituent"]
    assert setting.read(db)["email"] == "walkin@example.org"
    assert setting.write(db, setting.body()(email="shop@example.org", last_name="Shop"))["email"] == "shop@example.org"


def test_the_jobs_the_portal_runs_for_stripe_are_declared_and_drain_runs_them(env):
    from synctool.ops.checks import jobs_unrun
    from tests.helpers import runtime

    portal = next(p for p in platforms.registered() if p.name == "portal")
    assert portal.handles == ("payments",) and platforms.runs_jobs_of("payments") is portal
    assert jobs_unrun(runtime().config) == []
    Path(env["SYNCTOOL_CONFIG"]).write_text("platforms: [stripe, givebutter]\n")
    [(stripe, by)] = jobs_unrun(runtime().config)
    assert (stripe.name, by.name) == ("stripe", "portal")
    # drain runs the handlers of the platforms in use, and the portal's for Stripe's jobs; none of another
    assert [p.name for p in platforms.running(runtime().config)] == ["givebutter", "stripe", "portal"]


def test_the_entry_points_are_read_only_when_a_distribution_may_declare_a_platform(tmp_path, monkeypatch):
    from synctool.platforms import registry

    monkeypatch.setattr(registry, "ENTRY_POINT_GROUP", "synctool.test-nobody-declares-this")
    assert registry._may_declare_platforms() is False
    found = tmp_path / "boxdesk-1.0.dist-info"
    found.mkdir()
    (found / "entry_points.txt").write_text("[synctool.test-nobody-declares-this]\nboxdesk = boxdesk:PLATFORM\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry._may_declare_platforms() is True
