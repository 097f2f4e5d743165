"""Every test gets a fresh config and database under tmp_path, no keyring, and no platform settings
from the machine it runs on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from synctool.platforms import secret_names
from synctool.secrets import CORE_SECRETS

PLATFORM_ENV = (
    "CRM_API_BASE_URL",
    "CRM_ENVIRONMENT",
    "CRM_RATE_LIMIT_REQUESTS",
    "CRM_RATE_LIMIT_WINDOW_S",
    "CRM_SHARE_REQUESTS",
    "CRM_SEND_MARGIN_MS",
    "CRM_MIN_INTERVAL_MS",
    "DONATIONS_API_BASE_URL",
    "POS_API_BASE_URL",
    "MAILING_API_BASE_URL",
    "POS_WEBHOOK_NOTIFICATION_URL",
    "CRM_GROUP_ID_SCHOLARSHIP_FULL",
    "CRM_GROUP_ID_SCHOLARSHIP_PARTIAL",
)

# the values the secret-leak tests grep for
TEST_SECRETS = {
    "DONATIONS_WEBHOOK_SECRET": "gb-secret-7f3a9c",
    "POS_WEBHOOK_SIGNATURE_KEY": "sq-key-51d0e2",
    "MAILING_WEBHOOK_SECRET": "mc-secret-a8b4",
    "PAYMENTS_WEBHOOK_SECRET": "whsec_test_9e8d7c",
    "PORTAL_WEBHOOK_SECRET": "portal-secret-3c2b",
}
POS_URL = "https://sync.example.org/webhooks/pos"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in (*CORE_SECRETS, *secret_names(), *PLATFORM_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SYNCTOOL_KEYRING", "off")
    monkeypatch.setenv("SYNCTOOL_CONFIG", str(tmp_path / "config.yaml"))
    monkeypatch.setenv("SYNCTOOL_DB", str(tmp_path / "synctool.db"))
    (tmp_path / "config.yaml").write_text("{}\n")
    return tmp_path


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in TEST_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("POS_WEBHOOK_NOTIFICATION_URL", POS_URL)
    return TEST_SECRETS


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def cli(runner: CliRunner):
    """Run a synctool command; returns the click Result."""
    from synctool.cli.main import app

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return run


@pytest.fixture
def db(isolated: Path):
    from synctool import store

    conn = store.connect(os.environ["SYNCTOOL_DB"])
    yield conn
    conn.close()


CRM_KEY = "crm-test-key-0c1d"


def quick_crm(monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
    """CRM pacing scaled right down (``limit`` requests a second, no gap) and quick retries."""
    for name, value in {
        "CRM_RATE_LIMIT_REQUESTS": limit,
        "CRM_SHARE_REQUESTS": limit,
        "CRM_RATE_LIMIT_WINDOW_S": 1,
        "CRM_MIN_INTERVAL_MS": 0,
        "CRM_RETRY_BASE_MS": 10,
        "CRM_TIMEOUT_S": 0.5,
    }.items():
        monkeypatch.setenv(name, str(value))


@pytest.fixture
def fake_crm(monkeypatch):
    """The LGL fake on a loopback port, with synctool pointed at it and pacing scaled right down."""
    from synctool.crm.fake import FakeCrm, create_app
    from synctool.fakes.server import BackgroundServer

    crm = FakeCrm(CRM_KEY, limit=1000, window_s=1.0, timeout_sleep_s=1.5)
    server = BackgroundServer(create_app(crm)).start()
    monkeypatch.setenv("CRM_API_BASE_URL", server.url + "/api/v1")
    monkeypatch.setenv("CRM_API_KEY", CRM_KEY)
    quick_crm(monkeypatch, 1000)
    crm.url = server.url
    yield crm
    server.stop()


@pytest.fixture
def crm_client(fake_crm, db):
    from synctool.crm import target as crm
    from synctool.runtime import Runtime

    client = crm.open_client(db, Runtime.from_environ())
    yield client
    client.close()


@pytest.fixture
def world(monkeypatch, secrets_env):
    """Every fake running, synctool pointed at them, pacing scaled right down, quick retries."""
    from synctool.fakes.world import FakeWorld

    with FakeWorld(crm_limit=10_000, crm_window_s=1.0) as w:
        for name, value in w.env().items():
            monkeypatch.setenv(name, value)
        quick_crm(monkeypatch, 10_000)
        monkeypatch.setenv("QUEUE_RETRY_DELAY_MS", "50")
        yield w
        # whatever a test did, synctool asked the CRM only what LGL documents
        from tests.helpers import validate_against_openapi

        validate_against_openapi(w.crm.requests)


@pytest.fixture
def receiver(world):
    """The webhook receiver, in-process, pointed at the same database and fakes as the world."""
    from starlette.testclient import TestClient

    from synctool.runtime import Runtime
    from synctool.web.receiver import create_app

    with TestClient(create_app(Runtime.from_environ())) as client:
        yield client


@pytest.fixture
def coded(world, cli):
    """Reference data cached and a few mappings set, as an operator would."""
    assert cli("crm", "refresh").exit_code == 0
    assert cli("mappings", "types", "set", "donations:default", "--fund-id", "2398", "--campaign-id", "822").exit_code == 0
    assert cli("mappings", "types", "set", "donations:event", "--fund-id", "2399", "--campaign-id", "823").exit_code == 0
    assert cli("mappings", "payments", "set", "donations:card", "--payment-type-id", "1509").exit_code == 0
    assert cli("mappings", "payments", "set", "pos:CARD", "--payment-type-id", "1509").exit_code == 0
    assert cli("mappings", "payments", "set", "pos:CASH", "--payment-type-id", "1507").exit_code == 0
    assert cli("mappings", "custom-fields", "set", "77", "--crm-field", "referral_source").exit_code == 0
    return world
