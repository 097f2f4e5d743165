"""Every registered platform keeps the typed contract (``synctool.platforms.Platform``): each hook it names
resolves to what the core will call, and no two platforms claim the same role, secret, external-id prefix or
job type."""

from __future__ import annotations

import importlib
import inspect
from collections import Counter

import pytest

from synctool import platforms
from synctool.queue.handlers import HANDLERS

REGISTERED = platforms.registered()


def test_names_roles_secrets_and_prefixes_are_each_ones_own():
    for field in ("name", "role"):
        counts = Counter(getattr(p, field) for p in REGISTERED)
        assert max(counts.values()) == 1, counts
    secrets = Counter(name for p in REGISTERED for name in p.secrets)
    assert max(secrets.values()) == 1, secrets
    prefixes = [prefix for p in REGISTERED for prefix in p.external_id_prefixes]
    assert not [a for a in prefixes for b in prefixes if a != b and a.startswith(b)], prefixes


@pytest.mark.parametrize("platform", REGISTERED, ids=[p.name for p in REGISTERED])
def test_each_hook_resolves_to_what_the_core_calls(platform: platforms.Platform):
    if platform.webhook:
        assert platform.webhook.role == platform.role
        adapter = importlib.import_module(platform.webhook.adapter)
        for name in ("verify_webhook", "parse_webhook"):
            assert callable(getattr(adapter, name)), name
        assert isinstance(adapter.KEPT_HEADERS, tuple)
    if platform.client:
        assert platform.client.role == platform.role and callable(platforms.load(platform.client.factory))
        assert platform.client.probe is None or callable(platforms.load(platform.client.probe))
    for hook in (platform.poll, platform.refetch, platform.checks, platform.routes):
        assert hook is None or callable(platforms.load(hook))
    if platform.reconcile:
        listing = importlib.import_module(platform.reconcile)
        assert list(inspect.signature(listing.expected).parameters) == ["conn", "rt", "start", "end"]
    assert not platform.backfill or platform.reconcile  # backfill pages the reconcile listing
    if platform.registration:
        module = importlib.import_module(platform.registration)
        assert callable(module.status) and callable(module.register)
    for module in platform.handlers:
        importlib.import_module(module)
    for group in platform.commands.values():
        assert platforms.load(group).registered_commands or platforms.load(group).registered_groups
    if platform.mappings.payment_case:
        assert platform.mappings.payment_examples
    if platform.fake:
        module = importlib.import_module(platform.fake.module)
        assert callable(module.create_app) and hasattr(module, platform.fake.cls)
    if platform.config is not None:
        platform.config()  # a section that validates with no keys set


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
    names = re.compile("|".join(sorted({p.name for p in REGISTERED} | {"givebutter", "square", "mailchimp", "stripe"})), re.I)
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
