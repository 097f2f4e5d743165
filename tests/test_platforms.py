"""Every registered platform keeps the typed contract (``synctool.platforms.Platform``): each hook, called as the
core calls it (``synctool.testing.check_platform``), answers as the contract says, and no two platforms claim the
same role, secret, external-id prefix or job type."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

from synctool import platforms
from synctool.queue.handlers import HANDLERS
from synctool.testing import Problems, check_platform

REGISTERED = platforms.registered()
pytestmark = pytest.mark.registry


def test_names_roles_secrets_and_prefixes_are_each_ones_own():
    for field in ("name", "role"):
        counts = Counter(getattr(p, field) for p in REGISTERED)
        assert max(counts.values()) == 1, counts
    # a platform that takes a share of another's endpoint (``Platform.claims``) reads the same account: its secrets
    # may be that platform's (stripe-donations reads Stripe's key), and no one else's
    claimed = {p.name: {q.name for q in REGISTERED if q.webhook and q.webhook.role in p.claims} for p in REGISTERED}
    secrets = Counter(
        name
        for p in REGISTERED
        for name in p.secrets
        if not any(name in q.secrets for q in REGISTERED if q.name in claimed[p.name])
    )
    assert max(secrets.values()) == 1, secrets
    prefixes = [prefix for p in REGISTERED for prefix in p.external_id_prefixes]
    assert not [a for a in prefixes for b in prefixes if a != b and a.startswith(b)], prefixes


@pytest.mark.parametrize("platform", REGISTERED, ids=[p.name for p in REGISTERED])
def test_each_platform_keeps_the_contract_when_its_hooks_are_called(platform: platforms.Platform):
    """``synctool.testing.check_platform``: every hook called as the core calls it, against the platform's fake."""
    exercised = check_platform(platform)
    declared = [platform.webhook, platform.client, platform.poll, platform.expected, platform.registration]
    assert len(exercised) >= sum(hook is not None for hook in declared)


def test_a_hook_written_with_other_parameters_is_caught_before_cron_runs_it():
    """The failure the string hooks let through: a ``poll`` without the keywords the core passes."""

    def poll(conn: Any, rt: Any) -> dict[str, Any]:
        return {"since": "", "seen": 0, "queued": 0, "requests": 0}

    givebutter = next(p for p in REGISTERED if p.name == "givebutter")
    wrong = dataclasses.replace(givebutter, name="wrongpoll", role="wrongpoll", poll=poll, webhook=None, fake=None, client=None,  # type: ignore[arg-type]
                                external_id_prefixes=(), config=None)  # fmt: skip
    with pytest.raises(Problems, match="poll: not callable as the core calls it"):
        check_platform(wrong)


def test_drain_knows_every_job_type_the_platforms_name():
    platforms.register_handlers()
    assert ("donations", "transaction") in HANDLERS and ("pos", "order") in HANDLERS and ("pos", "order_refund") in HANDLERS


def test_no_core_module_names_a_platform():
    """The core iterates over the registry: no module of the CLI, the receiver and admin API, the operations,
    the queue or the CRM names a registered platform (the fakes and the demo, which play each platform's
    part, and the platforms' own packages aside)."""
    import re
    from pathlib import Path

    package = Path(platforms.__file__).resolve().parents[1]
    # the built-ins' names (an installed package's name may be any word: the core cannot know it to name it)
    built_in = {p.name for p in REGISTERED if p.name in platforms.DEFAULT_PLATFORMS}
    names = re.compile("|".join(sorted(built_in | {"givebutter", "square", "mailchimp", "stripe"})), re.I)
    found = [
        f"{path.relative_to(package.parent)}:{n}"
        for folder in ("cli", "web", "ops", "queue", "crm")
        for path in sorted((package / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if names.search(line) and path.name != "fake.py"
    ]
    assert found == []


def test_platforms_lists_each_with_what_it_can_do(cli):
    import json

    rows = {r["name"]: r for r in json.loads(cli("platforms", "--json").stdout)}
    assert list(rows) == [p.name for p in REGISTERED]
    assert "poll" in rows["givebutter"]["can"] and "payouts" in rows["square"]["can"]
    assert rows["portal"]["targets"] == "portal" and rows["mailchimp"]["targets"] == "mailing"


def test_a_secret_a_client_reads_beside_its_key_is_declared_on_the_client_and_listed():
    """An outside platform whose client reads more than its key (an OAuth client secret) declares it where it is
    used, and doctor and `synctool platforms` list it with the others (``Platform.secrets``)."""
    client = platforms.Client(
        lambda rt: None,  # type: ignore[arg-type,return-value]
        key="OAUTHKIND_CLIENT_ID",
        key_help="the app's client id",
        other_secrets={"OAUTHKIND_CLIENT_SECRET": "the app's client secret"},
    )
    kind = platforms.Platform(name="oauthkind", role="oauthkind", client=client)
    assert kind.secrets == {"OAUTHKIND_CLIENT_ID": "the app's client id", "OAUTHKIND_CLIENT_SECRET": "the app's client secret"}
