"""A person as a platform names them (a donor, a buyer, a member): what a constituent is matched by and made from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from synctool.crm.mirror import normalize_email


@dataclass
class Person:
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    phone: str | None = None
    address: Mapping[str, str | None] = field(default_factory=dict)  # street, city, state, postal_code, country
    external_id: str | None = None
    org_name: str | None = None

    @property
    def key(self) -> str:
        return normalize_email(self.email)
