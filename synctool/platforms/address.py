"""A postal address as a platform sends it (two street lines, city, state, postal code, country), and the address
a CRM person gets from it. Each platform names the six fields its own way; its model is this one with its names
(``model_config = PostalAddress.named(...)``), so the fields, their leniency and the one street rule live here."""

from __future__ import annotations

from typing import Optional

from pydantic import AliasGenerator, ConfigDict

from synctool.validation import Lenient, Payload, Text


class PostalAddress(Payload):
    """Every field lenient: an address that does not read is left out, never the payload refused."""

    line_1: Lenient[Optional[str]] = None
    line_2: Lenient[Optional[str]] = None
    city: Lenient[Optional[str]] = None
    state: Lenient[Optional[str]] = None
    postal_code: Lenient[Optional[Text]] = None
    country: Lenient[Optional[str]] = None

    @staticmethod
    def named(**names: str) -> ConfigDict:
        """A platform's model config: the key its payload holds each field under (``line_1="address_1"``); a field
        not named is read under its own name."""
        return ConfigDict(alias_generator=AliasGenerator(validation_alias=lambda field: names.get(field, field)))

    def person_address(self) -> dict[str, str | None]:
        """The CRM person's address (``Person.address``): the two street lines joined into one street."""
        street = ", ".join(p for p in (self.line_1, self.line_2) if p)
        return {
            "street": street or None,
            "city": self.city,
            "state": self.state,
            "postal_code": self.postal_code,
            "country": self.country,
        }
