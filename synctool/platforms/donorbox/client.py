"""Donorbox's API (github.com/donorbox/donorbox-api README.md, commit e6b4daf), through synctool's HTTP core
(retries, pacing, a 429's ``Retry-After`` and errors in synctool's words).

- **Authentication**: HTTP Basic, the organisation's Donorbox login e-mail as the user name and the API key as the
  password (``DONORBOX_ACCOUNT_EMAIL``, ``DONORBOX_API_KEY``: both kept as secrets).
- **Paging**: ``page`` and ``per_page`` on every list; the default page is 50 records, at most 100 ("If it exceeds
  the maximum, it will fallback to default"): synctool asks for 100 and reads pages until one comes back short.
- **Rate limits**: Donorbox documents none. A 429 is retried after its ``Retry-After`` like any platform's, and
  the operator's ``platform_api`` pacing applies.
- **Dates**: ``date_from`` / ``date_to`` (``YYYY-mm-dd``) filter donations by their date and plans by their start.
- Donorbox's API has no webhooks, payouts or failed-delivery endpoints (its README lists campaigns, donations, plans,
  donors, events, tickets and purchases only)."""

from __future__ import annotations

import base64
from typing import Any

from synctool.platform import ApiClient, InvalidInput, Runtime

ROLE = "donorbox"
KEY = "DONORBOX_API_KEY"
EMAIL = "DONORBOX_ACCOUNT_EMAIL"
#: Donorbox's largest page (its README: "maximum 100 allowed")
PER_PAGE = 100
#: pages read at most in one listing (100,000 records): a runaway answer ends as an error, never a loop
MAX_PAGES = 1000


class DonorboxClient:
    def __init__(self, rt: Runtime) -> None:
        email = rt.secrets.require(EMAIL, "Donorbox")  # a ConfigError naming the secret when it is not set
        key = rt.secrets.require(KEY, "Donorbox")
        token = base64.b64encode(f"{email}:{key}".encode()).decode()
        self.api = ApiClient(rt.config.section(ROLE).base_url, name="Donorbox", headers={"Authorization": f"Basic {token}"},
                             **rt.api_options(ROLE))  # fmt: skip

    def _pages(self, path: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for page in range(1, MAX_PAGES + 1):
            answer = self.api.request("GET", path, params={**params, "page": page, "per_page": PER_PAGE})
            if not isinstance(answer, list):
                raise InvalidInput(f"Donorbox's {path} answered a {type(answer).__name__}, not a list", "its README")
            found += [item for item in answer if isinstance(item, dict)]
            if len(answer) < PER_PAGE:
                return found
        raise InvalidInput(f"Donorbox's {path} listed more than {MAX_PAGES} pages", "narrow the dates")

    def donations(self, date_from: str | None = None, date_to: str | None = None) -> list[dict[str, Any]]:
        """The donations dated ``date_from`` to ``date_to`` (``YYYY-mm-dd``), oldest first."""
        params = {k: v for k, v in (("date_from", date_from), ("date_to", date_to)) if v}
        return self._pages("/api/v1/donations", {**params, "order": "asc"})

    def donation(self, donation_id: str) -> dict[str, Any] | None:
        """One donation by its id (the list filtered by ``id``), or None."""
        found = self.api.request("GET", "/api/v1/donations", params={"id": donation_id})
        return next((d for d in found or [] if isinstance(d, dict) and str(d.get("id")) == str(donation_id)), None)

    def plans(self, email: str | None = None) -> list[dict[str, Any]]:
        """Every plan, or the donor's (``email``: the list has no id filter)."""
        return self._pages("/api/v1/plans", {"order": "asc", **({"email": email} if email else {})})

    def campaign_names(self) -> dict[str, str]:
        """Each campaign's mapping key (``donorbox:<id>``) -> its name."""
        return {f"{ROLE}:{c.get('id')}": str(c.get("name") or c.get("slug") or c.get("id"))[:200] for c in self.campaigns()}

    def campaigns(self) -> list[dict[str, Any]]:
        return self._pages("/api/v1/campaigns", {})

    def close(self) -> None:
        self.api.close()


def probe(client: DonorboxClient) -> str:
    """`synctool test-connections`: one read, in words."""
    found = client.api.request("GET", "/api/v1/campaigns", params={"per_page": PER_PAGE})
    return f"{len(found) if isinstance(found, list) else 0} campaign(s) listed"


def campaigns(conn: Any, rt: Runtime) -> dict[str, str]:
    """``Mappings.campaigns``: Donorbox's campaigns by their override key (``donorbox:<id>``) -> name, read from its API."""
    from synctool.platform import using

    with using(rt, ROLE) as client:
        return client.campaign_names()
