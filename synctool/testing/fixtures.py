"""Pytest fixtures for a platform package's own tests: ``pytest_plugins = ["synctool.testing.fixtures"]`` in its
``conftest.py``. Each test gets a synctool of its own (config and database in ``tmp_path``, no keyring, an
environment that is a dict: the machine's is never read or changed), the CRM's fake in process, and the ways in
that an operator and the platforms use: the CLI, the receiver and drain.

    from synctool.testing import deliver

    def test_a_gift_arrives(synctool_site, crm, receiver, drain):
        synctool_site.use(PLATFORM)  # registered, in use, its secrets set, its fake answering
        body = json.dumps({"id": "evt_K1", "type": "gift.created", "gift": GIFT}).encode()
        secret = synctool_site.env["KIND_WEBHOOK_SECRET"]  # use() set it to "test-kind_webhook_secret"
        deliver(receiver, "kind", body, {"X-Kind-Signature": sign(secret, body)})
        drain()
        assert [g["external_id"] for g in crm.gifts.values()] == ["kind_K1"]

The order of the fixtures does not matter: the receiver and drain read the site (its config, its secrets, the
platforms it uses) when a request comes or a drain runs, never before; a site changed after the receiver answered
(``use``, ``config``, ``env``) is read afresh at the next request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from synctool import platforms
from synctool.platforms import Platform
from synctool.platforms.runner import runner
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from starlette.testclient import TestClient
    from typer.testing import Result

    from synctool.fakes.crm import FakeCrm
    from synctool.queue.worker import DrainSummary

CRM_KEY = "testing-crm-key"


class Site:
    """One synctool in a test's folder: its environment, the transports to the fakes, the platforms the test put
    in use (``platforms:`` in its config names them) and those it registered (unregistered when the test ends)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env: dict[str, str] = {
            "SYNCTOOL_KEYRING": "off",
            "SYNCTOOL_CONFIG": str(folder / "config.yaml"),
            "SYNCTOOL_DB": str(folder / "synctool.db"),
            # the CRM's pacing scaled down: a test is not a day of cron
            "CRM_RATE_LIMIT_REQUESTS": "10000",
            "CRM_SHARE_REQUESTS": "10000",
            "CRM_RATE_LIMIT_WINDOW_S": "1",
            "CRM_MIN_INTERVAL_MS": "0",
            "CRM_RETRY_BASE_MS": "10",
            "PLATFORM_API_RETRY_BASE_MS": "10",
            "QUEUE_RETRY_DELAY_MS": "50",
        }
        self.transports: dict[str, httpx.BaseTransport] = {}
        self.fakes: dict[str, Any] = {}
        #: the platforms ``use`` put in use, by name
        self.used: list[str] = []
        self._text = ""
        self._registered: list[str] = []
        self._write()

    def config(self, text: str) -> None:
        """Write the config file (YAML), as an operator would. Unless ``text`` has a ``platforms:`` key of its own,
        the platforms ``use`` put in use are added to it."""
        self._text = text
        self._write()

    def _write(self) -> None:
        text = self._text.rstrip("\n")
        if self.used and not re.search(r"(?m)^platforms\s*:", text):
            text += ("\n" if text else "") + f"platforms: [{', '.join(self.used)}]"
        (self.folder / "config.yaml").write_text((text or "{}") + "\n")

    def use(self, platform: Platform, *, fake: bool = True, secrets: Mapping[str, str] | None = None) -> Any:
        """Put ``platform`` in use: registered (as its entry point would, unless it is already), named in the
        config's ``platforms:`` (the site then uses the platforms ``use`` named, and no other), each of its
        ``secrets`` set in ``env`` to ``test-<name in lower case>`` unless ``secrets`` gives its value, and,
        with ``fake``, its API served in process by its ``Fake`` (its ``base_url_env`` and ``key_secret`` set).
        Returns the fake's state (``Fake.make``'s first value), or None."""
        from synctool.fakes.transport import AppTransport

        if platform.name not in {p.name for p in platforms.registered()}:
            platforms.register(platform)
            self._registered.append(platform.name)
        if platform.name not in self.used:
            self.used.append(platform.name)
            self._write()
        self.env.update({name: f"test-{name.lower()}" for name in platform.secrets})
        self.env.update(secrets or {})
        if fake and platform.fake is not None:
            made, app = platform.fake.make(platform.fake.key)
            self.fakes[platform.role] = made
            self.transports[platform.role] = AppTransport(app)
            self.env[platform.fake.base_url_env] = f"http://{platform.role}.fake.invalid{platform.fake.path}"
            self.env[platform.fake.key_secret] = platform.fake.key
            return made
        return None

    def runtime(self) -> Runtime:
        """A Runtime as a command builds one (the registry first, then the config), pointed at the fakes."""
        platforms.registered()
        return Runtime.from_environ(None, self.env, transports=self.transports)

    def state(self) -> tuple[object, ...]:
        """What the receiver is built from: when this changes, a started receiver is started afresh."""
        text = (self.folder / "config.yaml").read_text()
        return (
            text,
            tuple(sorted(self.env.items())),
            tuple(sorted(self.transports)),
            tuple(p.name for p in platforms.registered()),
        )

    def close(self) -> None:
        for name in self._registered:
            platforms.unregister(name)


class RunningReceiver:
    """The webhook receiver in process, answering as ``serve`` does (Starlette's TestClient: ``post``, ``get``,
    ...). It starts at its first request with the site as it is then, and starts again at the next request
    after the site changed (``use``, ``config``, ``env``): a test may ask for it before or after ``use``."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self._client: TestClient | None = None
        self._state: tuple[object, ...] | None = None

    def client(self) -> TestClient:
        """The TestClient of the receiver built from the site as it is now."""
        from starlette.testclient import TestClient

        from synctool.web.receiver import build

        state = self.site.state()
        if self._client is None or state != self._state:
            self.close()
            client = TestClient(build(self.site.runtime()))
            client.__enter__()
            self._client, self._state = client, state
        return self._client

    def __getattr__(self, name: str) -> Any:  # post, get, request, ...: the client's, started as the site is now
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.client(), name)

    def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.__exit__(None, None, None)


@pytest.fixture
def synctool_site(tmp_path: Path) -> Iterator[Site]:
    site = Site(tmp_path)
    yield site
    site.close()


@pytest.fixture
def crm(synctool_site: Site) -> FakeCrm:
    """The CRM's fake (LGL) in process, synctool pointed at it: its ``gifts`` and ``constituents`` are what the
    CRM holds."""
    from synctool.fakes.crm import FakeCrm, create_app
    from synctool.fakes.transport import AppTransport

    fake = FakeCrm(CRM_KEY, limit=10_000, window_s=1.0, timeout_sleep_s=1.5)
    synctool_site.transports["crm"] = AppTransport(create_app(fake))
    synctool_site.env.update(CRM_API_BASE_URL="http://crm.fake.invalid/api/v1", CRM_API_KEY=CRM_KEY)
    return fake


@pytest.fixture
def cli(synctool_site: Site) -> Callable[..., Result]:
    """Run a synctool command (``cli("poll", "--json")``); returns click's Result."""
    from typer.testing import CliRunner

    from synctool.cli.main import app
    from synctool.console import AppContext

    def run(*args: str, input: str | None = None) -> Result:
        obj = AppContext(environ=synctool_site.env, transports=synctool_site.transports)
        return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False, obj=obj)

    return run


@pytest.fixture
def receiver(synctool_site: Site) -> Iterator[RunningReceiver]:
    """The webhook receiver in process (``RunningReceiver``): it reads the site when a request comes, so it may be asked
    for before ``use`` put the platform in use."""
    found = RunningReceiver(synctool_site)
    yield found
    found.close()


@pytest.fixture
def drain(synctool_site: Site) -> Callable[..., DrainSummary]:
    """Run the queue as cron's drain does; returns its summary."""
    from synctool import store
    from synctool.queue.worker import drain as run_queue

    def run(max_seconds: float = 10) -> DrainSummary:
        rt = synctool_site.runtime()
        store.connect(rt.db_path).close()
        return run_queue(runner(rt), max_seconds=max_seconds)

    return run


def deliver(
    receiver: RunningReceiver, role: str, body: bytes, headers: Mapping[str, str] | None = None, query: str = ""
) -> dict[str, Any]:
    """POST a delivery to ``/webhooks/<role>`` as the platform would (signed by the caller) and return the
    receiver's answer, which must be a 200."""
    answer = receiver.post(f"/webhooks/{role}{query}", content=body, headers=dict(headers or {}))
    assert answer.status_code == 200, answer.text
    return answer.json()
