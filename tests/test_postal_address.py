"""``synctool.platform.PostalAddress``: one address model every platform names its own way, one street rule."""

from __future__ import annotations

from synctool.platform import PostalAddress


class Named(PostalAddress):
    model_config = PostalAddress.named(line_1="address_1", line_2="address_2", postal_code="zipcode")


def test_a_platform_reads_its_own_field_names_into_the_person_address() -> None:
    address = Named.model_validate(
        {"address_1": "1 Main St", "address_2": "Apt 2", "city": "Oakland", "state": "CA", "zipcode": 94607, "country": "US"}
    )
    assert address.person_address() == {
        "street": "1 Main St, Apt 2",
        "city": "Oakland",
        "state": "CA",
        "postal_code": "94607",
        "country": "US",
    }


def test_an_empty_or_unreadable_address_gives_no_street_and_refuses_nothing() -> None:
    assert Named().person_address() == dict.fromkeys(("street", "city", "state", "postal_code", "country"))
    odd = Named.model_validate({"address_1": "", "address_2": "PO Box 9", "city": {"not": "a city"}})
    assert odd.person_address()["street"] == "PO Box 9"
    assert odd.person_address()["city"] is None
