"""The CRM's fake and every platform's (from the registry's ``FAKE`` hooks), and the environment and
transports that point synctool at them.

In process (the default) each fake is an ASGI app behind an ``AppTransport``: no sockets, nothing to
start. ``serve=True`` puts each on a loopback port instead, for the demo and the tests and benchmarks
whose other processes must reach them. Used by `synctool demo`, the tests and the benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.types import ASGIApp

from synctool import platforms
from synctool.fakes import crm as lgl
from synctool.fakes.record import Recorder
from synctool.fakes.server import BackgroundServer
from synctool.fakes.transport import AppTransport

CRM_KEY = "demo-crm-key"
WEBHOOK_SECRETS = {
    "DONATIONS_WEBHOOK_SECRET": "demo-gb-signing-secret",
    "POS_WEBHOOK_SIGNATURE_KEY": "demo-square-sig-key",
    "MAILING_WEBHOOK_SECRET": "demo-mc-secret",
    "PAYMENTS_WEBHOOK_SECRET": "whsec_demo",
    "PORTAL_WEBHOOK_SECRET": "demo-portal-secret",
}


@dataclass
class FakeWorld:
    crm_limit: int = 300
    crm_window_s: float = 300.0
    #: on loopback ports (True) or in this process only (False)
    serve: bool = False
    crm: lgl.FakeCrm = field(init=False)
    #: role -> the platform's fake (also an attribute by its name: ``world.givebutter``)
    fakes: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.crm = lgl.FakeCrm(CRM_KEY, limit=self.crm_limit, window_s=self.crm_window_s, timeout_sleep_s=1.5)
        self.fakes = {}
        self._apps: dict[str, ASGIApp] = {"crm": lgl.create_app(self.crm)}
        #: role -> every exchange with that platform's fake (the contract tests check them)
        self.recorders: dict[str, Recorder] = {}
        self._paths, self._keys = {"crm": ("CRM_API_BASE_URL", "/api/v1")}, {"CRM_API_KEY": CRM_KEY}
        made: dict[tuple[str, str], tuple[Any, ASGIApp]] = {}
        for role, hook in platforms.fakes().items():
            # two platforms of one account (Stripe's portal payments and its donations) share the fake their
            # ``Fake.make`` names: one state, as the account is one
            same = (str(getattr(hook.make, "ref", id(hook.make))), hook.key)
            if same not in made:
                made[same] = hook.make(hook.key)
            self.fakes[role], app = made[same]
            self.recorders[role] = Recorder(app)
            self._apps[role] = self.recorders[role]
            self._paths[role] = (hook.base_url_env, hook.path)
            self._keys[hook.key_secret] = hook.key
        self._servers: dict[str, BackgroundServer] = {}
        self._transports = {role: AppTransport(app) for role, app in self._apps.items()}

    def __getattr__(self, name: str) -> Any:
        fakes = self.__dict__.get("fakes", {})
        for role, hook in platforms.fakes().items():
            if hook.name == name and role in fakes:
                return fakes[role]
        raise AttributeError(name)

    def start(self) -> FakeWorld:
        if self.serve and not self._servers:
            self._servers = {role: BackgroundServer(app).start() for role, app in self._apps.items()}
        return self

    def stop(self) -> None:
        for server in self._servers.values():
            server.stop()
        self._servers = {}

    def url(self, role: str) -> str:
        """Where the role's fake answers: its loopback address, or a made-up host its transport serves."""
        return self._servers[role].url if self._servers else f"http://{role}.fake.invalid"

    def env(self) -> dict[str, str]:
        """The API keys and base URLs that point synctool's clients at the fakes."""
        return {**self._keys, **{name: self.url(role) + path for role, (name, path) in self._paths.items()}}

    def transports(self) -> dict[str, httpx.BaseTransport]:
        """Role -> an in-process transport to its fake (none when served: the clients use the sockets)."""
        return {} if self._servers else dict(self._transports)

    def client(self, role: str, **kwargs: Any) -> httpx.Client:
        """An httpx client for poking a fake directly (a test seeding the CRM as a person would)."""
        name, path = self._paths[role]
        transport = None if self._servers else self._transports[role]
        return httpx.Client(base_url=self.url(role) + path, transport=transport, **kwargs)

    def __enter__(self) -> FakeWorld:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
