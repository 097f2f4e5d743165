"""All four fakes on loopback at once, and the environment that points synctool at them.

Used by `synctool demo`, the end-to-end tests and the benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from synctool.crm import fake as lgl
from synctool.fakes.server import BackgroundServer
from synctool.platforms.givebutter import fake as givebutter
from synctool.platforms.mailchimp import fake as mailchimp
from synctool.platforms.square import fake as square

KEYS = {
    "CRM_API_KEY": "demo-crm-key",
    "DONATIONS_API_KEY": "demo-givebutter-key",
    "POS_ACCESS_TOKEN": "demo-square-token",
    "MAILING_API_KEY": "demo-mailchimp-key-us14",
}
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
    crm: lgl.FakeCrm = field(init=False)
    givebutter: givebutter.FakeGivebutter = field(init=False)
    square: square.FakeSquare = field(init=False)
    mailchimp: mailchimp.FakeMailchimp = field(init=False)

    def __post_init__(self) -> None:
        self.crm = lgl.FakeCrm(KEYS["CRM_API_KEY"], limit=self.crm_limit, window_s=self.crm_window_s, timeout_sleep_s=1.5)
        self.givebutter = givebutter.FakeGivebutter(KEYS["DONATIONS_API_KEY"])
        self.square = square.FakeSquare(KEYS["POS_ACCESS_TOKEN"])
        self.mailchimp = mailchimp.FakeMailchimp(KEYS["MAILING_API_KEY"])
        self._servers = [
            BackgroundServer(lgl.create_app(self.crm)),
            BackgroundServer(givebutter.create_app(self.givebutter)),
            BackgroundServer(square.create_app(self.square)),
            BackgroundServer(mailchimp.create_app(self.mailchimp)),
        ]

    def start(self) -> FakeWorld:
        for server in self._servers:
            server.start()
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.stop()

    def env(self) -> dict[str, str]:
        crm, gb, sq, mc = (s.url for s in self._servers)
        return {
            **KEYS,
            "CRM_API_BASE_URL": crm + "/api/v1",
            "DONATIONS_API_BASE_URL": gb + "/v1",
            "POS_API_BASE_URL": sq,
            "MAILING_API_BASE_URL": mc + "/3.0",
        }

    def __enter__(self) -> FakeWorld:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
