"""The CRM client (Little Green Light REST API v1). Every CRM request synctool makes goes through here.

It is the shared HTTP core (``synctool/http.py``) plus what only the CRM needs:
- Authentication: ``Authorization: Bearer <key>``.
- Pacing: each attempt first takes a slot from the cross-process ``Pacer`` (and is counted on the job).
- Retries: only 429, 500, 502, 503, 504 and transport errors (not 408: LGL documents none).
- Uncertain writes: a POST whose outcome is unknown raises ``UncertainWrite``; the caller looks for what it
  would have created before trying again (see ``crm/gifts.py`` and ``crm/constituents.py``).
- Errors: LGL's ``{error, description}``, OAuth's ``{error, error_description}``, HTML 401 pages and
  undocumented 422 bodies all become one readable message after "CRM answered <status>".
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from synctool.crm.pacer import Pacer
from synctool.crm.types import JsonObject
from synctool.errors import ConfigError

if TYPE_CHECKING:  # the HTTP core (and httpx, 100 ms and more) is imported by the first client made: a command
    import httpx  # that reads the database only, such as `overview`, never pays for it

RETRYABLE = frozenset({429, 500, 502, 503, 504})
EXPAND_CONTACTS = "email_addresses,phone_numbers,street_addresses"
#: a request's query: ``{name: value}``, or ``(name, value)`` pairs where a name repeats (``q[]``)
QueryParams = Mapping[str, object] | Sequence[tuple[str, object]]


def describe(response: httpx.Response) -> str:
    """One readable message for the CRM's several error shapes (``{error, description}``, OAuth's
    ``{error, error_description}``, HTML 401 pages, undocumented 422 bodies)."""
    return error_detail(response.content, response.headers.get("content-type", ""))


def error_detail(body: bytes, content_type: str = "") -> str:
    text = body.decode("utf-8", errors="replace").strip()
    detail = ""
    if "json" in content_type or text.startswith(("{", "[")):
        try:
            import json

            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = data.get("error") or data.get("title") or ""
            description = (
                data.get("description") or data.get("error_description") or data.get("message") or data.get("detail") or ""
            )
            if isinstance(data.get("errors"), (dict, list)) and not description:
                description = str(data["errors"])
            detail = ": ".join(str(p) for p in (error, description) if p)
    if not detail and text:
        if "<" in text and ">" in text:  # an HTML page, e.g. "HTTP Basic: Access denied."
            text = html.unescape(re.sub(r"<[^>]+>", " ", text))
        detail = " ".join(text.split())[:300]
    return detail


def search_params(clauses: QueryParams) -> list[tuple[str, str]]:
    """``q[]=field=value`` clauses (ANDed by LGL). A bare term is an error in LGL, so it is refused here."""
    items = clauses.items() if isinstance(clauses, Mapping) else clauses
    params = []
    for field, value in items:
        if not field or "=" in field or value is None or str(value) == "":
            raise ValueError(f"a CRM search clause needs field=value, got {field!r}={value!r}")
        params.append(("q[]", f"{field}={value}"))
    if not params:
        raise ValueError("a CRM search needs at least one q[] clause")
    return params


def check_base_url(url: str | None, where: str) -> str:
    parsed = urlparse(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError("CRM_API_BASE_URL", where, f"not a usable URL: {url!r} (expected https://host/api/v1)")
    return (url or "").rstrip("/")


class CrmClient:
    """LGL's REST API on the shared HTTP core, with the pacer before every send and uncertain POSTs
    handed back to the caller."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        pacer: Pacer | None = None,
        max_retries: int = 3,
        retry_base_s: float = 1.0,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        on_request: Callable[[], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not api_key:
            raise ConfigError("CRM_API_KEY", "keyring/environment", "not set (synctool crm config --api-key)")
        self.base_url = check_base_url(base_url, "settings/environment/config")
        self.pacer = pacer
        self.on_request = on_request
        from synctool.http import ApiClient

        self.api = ApiClient(
            self.base_url,
            name="CRM",
            describe=describe,
            headers={"Authorization": f"Bearer {api_key}"},
            timeout_s=timeout_s,
            max_retries=max_retries,
            retry_base_s=retry_base_s,
            retryable=RETRYABLE,
            uncertain_writes=True,
            before_send=self._before_send,
            sleep=sleep,
            transport=transport,
        )

    def _before_send(self) -> None:
        if self.pacer is not None:
            self.pacer.acquire("crm")
        if self.on_request:
            self.on_request()

    @property
    def requests_sent(self) -> int:
        return self.api.requests_sent

    def close(self) -> None:
        self.api.close()

    def request(
        self, method: str, path: str, *, params: QueryParams | None = None, json: Mapping[str, object] | None = None
    ) -> JsonObject:
        return self.api.request(method, path, params=params, json=json)

    def get(self, path: str, **params: object) -> JsonObject:
        return self.request("GET", path, params=params or None)

    def iter_pages(
        self, path: str, params: Sequence[tuple[str, object]] | None = None, *, page_size: int = 100, max_pages: int | None = None
    ) -> Iterator[list[JsonObject]]:
        """Walk LGL's list envelope lazily: one request per page, only as far as the caller reads."""
        offset = 0
        pages = 0
        while True:
            page = self.request("GET", path, params=list(params or []) + [("limit", page_size), ("offset", offset)])
            items = page.get("items") or []
            yield items
            pages += 1
            next_item = page.get("next_item")
            total = page.get("total_items")
            if not items or next_item is None or (total is not None and offset + len(items) >= total):
                return
            if max_pages is not None and pages >= max_pages:
                return
            offset = int(next_item)

    def iter_items(
        self, path: str, params: Sequence[tuple[str, object]] | None = None, *, page_size: int = 100, max_pages: int | None = None
    ) -> Iterator[JsonObject]:
        for items in self.iter_pages(path, params, page_size=page_size, max_pages=max_pages):
            yield from items

    # -- constituents --------------------------------------------------------------------------

    def constituents_updated_since(self, since: str, *, page_size: int = 250) -> Iterator[list[JsonObject]]:
        """Pages of constituents updated at or after ``since`` (``YYYY-MM-DDTHH:MM:SSZ``), oldest change
        first, with their e-mails, phones and street addresses."""
        params = search_params({"updated_from": since}) + [("expand", EXPAND_CONTACTS), ("sort", "date_updated")]
        return self.iter_pages("/constituents/search", params, page_size=page_size)

    def get_constituent(self, constituent_id: int | str) -> JsonObject:
        return self.request("GET", f"/constituents/{constituent_id}")

    def create_constituent(self, body: Mapping[str, object]) -> JsonObject:
        return self.request("POST", "/constituents", json=body)

    def update_constituent(self, constituent_id: int | str, body: Mapping[str, object]) -> JsonObject:
        return self.request("PATCH", f"/constituents/{constituent_id}", json=body)

    def list_contacts(self, constituent_id: int | str, kind: str) -> list[JsonObject]:
        """``kind``: email_addresses, phone_numbers or street_addresses."""
        return list(self.iter_items(f"/constituents/{constituent_id}/{kind}"))

    def add_contact(self, constituent_id: int | str, kind: str, body: Mapping[str, object]) -> JsonObject:
        return self.request("POST", f"/constituents/{constituent_id}/{kind}", json=body)

    def delete_contact(self, kind: str, row_id: int | str) -> JsonObject:
        return self.request("DELETE", f"/{kind}/{row_id}")

    def replace_contacts(self, constituent_id: int | str, kind: str, rows: Sequence[Mapping[str, object]]) -> None:
        """Contact sync by delete-then-add (spec): drop the rows that differ, add the missing ones."""
        key = {"email_addresses": "address", "phone_numbers": "number", "street_addresses": "street"}[kind]
        wanted = {str(r.get(key, "")).strip().lower() for r in rows}
        existing = self.list_contacts(constituent_id, kind)
        have = set()
        for old in existing:
            value = str(old.get(key, "")).strip().lower()
            if value in wanted and value not in have:
                have.add(value)
            else:
                self.delete_contact(kind, old["id"])
        for row in rows:
            if str(row.get(key, "")).strip().lower() not in have:
                self.add_contact(constituent_id, kind, row)

    # -- gifts ---------------------------------------------------------------------------------

    def create_gift(self, constituent_id: int | str, body: Mapping[str, object]) -> JsonObject:
        return self.request("POST", f"/constituents/{constituent_id}/gifts", json=body)

    def find_gifts_by_external_id(self, external_id: str) -> list[JsonObject]:
        return list(self.iter_items("/gifts/search", search_params({"external_gift_ids": external_id})))

    def get_gift(self, gift_id: int | str) -> JsonObject:
        return self.request("GET", f"/gifts/{gift_id}")

    def update_gift(self, gift_id: int | str, body: Mapping[str, object]) -> JsonObject:
        return self.request("PATCH", f"/gifts/{gift_id}", json=body)

    def delete_gift(self, gift_id: int | str) -> JsonObject:
        return self.request("DELETE", f"/gifts/{gift_id}")

    # -- events and invitations (LGL's events are made in LGL; their invitations through the API) ---------

    def events(self) -> list[JsonObject]:
        """Every CRM event: ``{id, name, description, date, end_date, financial_goal, projected_amount, code}``."""
        return list(self.iter_items("/events", page_size=100))

    def constituent_invitations(self, constituent_id: int | str) -> list[JsonObject]:
        """A constituent's invitations, to every event (their guests' invitations among them)."""
        return list(self.iter_items(f"/constituents/{constituent_id}/invitations"))

    def create_invitation(self, event_id: int | str, body: Mapping[str, object]) -> JsonObject:
        """``POST /events/{event_id}/invitations``: a constituent's invitation, or a guest's under one
        (``parent_invitation_id``, ``is_a_guest``, ``guest_first_name``, ``guest_last_name``)."""
        return self.request("POST", f"/events/{event_id}/invitations", json=body)

    def get_invitation(self, invitation_id: int | str) -> JsonObject:
        return self.request("GET", f"/invitations/{invitation_id}")

    def update_invitation(self, invitation_id: int | str, body: Mapping[str, object]) -> JsonObject:
        """``PATCH /invitations/{id}``; LGL requires ``constituent_id`` in the body."""
        return self.request("PATCH", f"/invitations/{invitation_id}", json=body)

    def delete_invitation(self, invitation_id: int | str) -> JsonObject:
        return self.request("DELETE", f"/invitations/{invitation_id}")

    # -- memberships, relationships, groups, tags ----------------------------------------------

    def list_memberships(self, constituent_id: int | str) -> list[JsonObject]:
        return list(self.iter_items(f"/constituents/{constituent_id}/memberships"))

    def create_membership(self, constituent_id: int | str, body: Mapping[str, object]) -> JsonObject:
        return self.request("POST", f"/constituents/{constituent_id}/memberships", json=body)

    def update_membership(self, membership_id: int | str, body: Mapping[str, object]) -> JsonObject:
        return self.request("PATCH", f"/memberships/{membership_id}", json=body)

    def create_relationship(self, constituent_id: int | str, body: Mapping[str, object]) -> JsonObject:
        return self.request("POST", f"/constituents/{constituent_id}/constituent_relationships", json=body)

    def list_group_memberships(self, constituent_id: int | str) -> list[JsonObject]:
        return list(self.iter_items(f"/constituents/{constituent_id}/group_memberships"))

    def add_to_group(self, constituent_id: int | str, body: Mapping[str, object]) -> JsonObject:
        return self.request("POST", f"/constituents/{constituent_id}/group_memberships", json=body)

    def update_group_membership(self, membership_id: int | str, body: Mapping[str, object]) -> JsonObject:
        """``PATCH /group_memberships/{id}``: ``{group_id (required by the schema), date_start, date_end,
        is_current}``."""
        return self.request("PATCH", f"/group_memberships/{membership_id}", json=body)

    # -- contact reports -----------------------------------------------------------------------

    def contact_reports(self, constituent_id: int | str) -> list[JsonObject]:
        """A constituent's contact reports (``GET /constituents/{id}/contact_reports``), every page."""
        return list(self.iter_items(f"/constituents/{constituent_id}/contact_reports"))

    def add_contact_report(self, constituent_id: int | str, body: Mapping[str, object]) -> JsonObject:
        """``POST /constituents/{id}/contact_reports``: ``{text (required), contact_report_type_id, original_date,
        team_member ("id", "email" or "first_name last_name"), name}``; answers the report with its ``id``."""
        return self.request("POST", f"/constituents/{constituent_id}/contact_reports", json=body)

    def add_keyword(self, constituent_id: int | str, keyword_id: int | str) -> JsonObject:
        return self.request("POST", f"/constituents/{constituent_id}/keywords", json={"id": int(keyword_id)})

    def remove_keyword(self, constituent_id: int | str, keyword_id: int | str) -> JsonObject:
        return self.request("DELETE", f"/constituents/{constituent_id}/keywords/{keyword_id}")

    # -- reference lists -----------------------------------------------------------------------

    def reference_list(self, path: str, **params: object) -> list[JsonObject]:
        return list(self.iter_items(path, list(params.items()), page_size=200))
