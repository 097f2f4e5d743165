"""What an LGL account holds before anyone writes, and the words its API takes: the reference lists (funds,
campaigns, ...), the tag and gift-field categories, the search terms and sorts, the fields a gift update and an
invitation take; and two rules every record follows: its time stamps (``now_stamp``) and how its custom fields
resolve (``resolve_custom_fields``)."""

from __future__ import annotations

import re
import time
from typing import Any

API = {"api_version": "1.0"}

REFERENCE = {
    "funds": [
        {"id": 2398, "name": "General", "code": "GEN"},
        {"id": 2399, "name": "Events", "code": "EVT"},
        {"id": 2400, "name": "Memberships", "code": "MEM"},
        {"id": 2401, "name": "Language Classes", "code": "LANG"},
        {"id": 2402, "name": "Retail", "code": "RET"},
    ],
    "campaigns": [
        {"id": 822, "name": "Annual Giving"},
        {"id": 823, "name": "Spring Gala"},
        {"id": 824, "name": "Membership Drive"},
    ],
    "appeals": [{"id": 2663, "name": "Annual Appeal 2026"}],
    # events are not reference data here: ``FakeCrm.events``, seeded with ``FakeCrm.add_event``
    "gift_types": [
        {"id": 1, "name": "Gift", "ordinal": 1},
        {"id": 5, "name": "Other Income", "ordinal": 2},
        {"id": 7, "name": "Pledge", "ordinal": 3},
        {"id": 8, "name": "In Kind", "ordinal": 4},
        {"id": 9, "name": "Soft Credit", "ordinal": 5},
    ],
    "gift_categories": [
        {"id": 5937, "display_name": "Donation", "gift_type_id": 1, "gift_type_name": "Gift"},
        {"id": 5938, "display_name": "Ticket", "gift_type_id": 5, "gift_type_name": "Other Income"},
        {"id": 5939, "display_name": "Membership Dues", "gift_type_id": 5, "gift_type_name": "Other Income"},
        {"id": 5940, "display_name": "Recurring", "gift_type_id": 1, "gift_type_name": "Gift"},
    ],
    "payment_types": [
        {"id": 1507, "name": "Cash", "key": "cash"},
        {"id": 1508, "name": "Check", "key": "check"},
        {"id": 1509, "name": "Credit Card", "key": "credit"},
        {"id": 1510, "name": "Other", "key": "other"},
    ],
    "membership_levels": [
        {"id": 41, "name": "Individual", "ordinal": 1},
        {"id": 42, "name": "Family", "ordinal": 2},
        {"id": 43, "name": "Student", "ordinal": 3},
    ],
    "relationship_types": [
        {"id": 3, "name": "Spouse", "short_code": "spouse", "type_code": "family", "reciprocal_id": 3},
        {"id": 4, "name": "Parent", "short_code": "parent", "type_code": "family", "reciprocal_id": 5},
        {"id": 5, "name": "Child", "short_code": "child", "type_code": "family", "reciprocal_id": 4},
        {"id": 9, "name": "Family", "short_code": "family", "type_code": "family", "reciprocal_id": 9},
    ],
    # lgl-openapi.json's example for GET /mailing_templates
    "mailing_templates": [
        {
            "id": 174,
            "name": "Donation Acknowledgment",
            "code": "donation_ack",
            "mailing_type_id": 1907,
            "mailing_type_name": "Acknowledgment",
            "template_type": "letter",
        },
        {
            "id": 175,
            "name": "Pledge Acknowledgment",
            "code": "pledge_ack",
            "mailing_type_id": 1907,
            "mailing_type_name": "Acknowledgment",
            "template_type": "letter",
        },
    ],  # fmt: skip
    # lgl-openapi.json's GET /groups item: {id, name, key, ordinal}
    "groups": [
        {"id": 701, "name": "Full Scholarship", "key": "scholarship_full", "ordinal": 0},
        {"id": 702, "name": "Partial Scholarship", "key": "scholarship_partial", "ordinal": 0},
        {"id": 703, "name": "Board Member", "key": "board", "ordinal": 0},
        {"id": 704, "name": "Monthly Donors", "key": "monthly_donors", "ordinal": 0},
    ],
    # lgl-openapi.json's example for GET /team_members (read only; its e-mails made distinct)
    "team_members": [
        {
            "id": 1047033,
            "first_name": "Tom",
            "last_name": "Talbott",
            "email": "tom@example.org",
            "role_id": 406638,
            "is_admin": True,
            "is_primary_contact": True,
            "is_billing_contact": True,
        },
        {
            "id": 1047042,
            "first_name": "Nick",
            "last_name": "Bicknell",
            "email": "nick@example.org",
            "role_id": 406638,
            "is_admin": True,
            "is_primary_contact": False,
            "is_billing_contact": False,
        },
    ],
}
#: ``GET /types/{type}``: the values of each type (lgl-openapi.json's example for ``GET /types``)
TYPES: dict[str, list[dict[str, Any]]] = {
    "contact_report_types": [
        {"id": 2183 + n, "name": name, "display_name": name, "code": code, "ordinal": n}
        for n, (name, code) in enumerate(
            [
                ("Call", "call"),
                ("Email", "email"),
                ("Meeting", "meeting"),
                ("Mailing", "letter"),
                ("Proposal", "proposal"),
                ("Other", "other"),
            ]
        )
    ],
}
TAG_CATEGORY: dict[str, Any] = {
    "id": 1201,
    "item_type": "Constituent",
    "name": "Communication Tags",
    "key": "tags",
    "facet_type": "list",
    "removable": True,
    "editable": True,
    "keywords": [
        {"id": 12221, "category_id": 1201, "name": "Newsletter", "short_code": "newsletter"},
        {"id": 12222, "category_id": 1201, "name": "Unsubscribed", "short_code": "unsubscribed"},
        {"id": 12223, "category_id": 1201, "name": "Email Bounced", "short_code": "email_bounced"},
        {"id": 12224, "category_id": 1201, "name": "Do not call", "short_code": "do_not_call"},
    ],
}

#: gift custom fields are categories with ``item_type: "Gift"``; their keywords are the allowed values
GIFT_FIELDS: list[dict[str, Any]] = [
    {
        "id": 1056,
        "item_type": "Gift",
        "name": "Referral Source",
        "key": "referral_source",
        "facet_type": "list",
        "ordinal": 100,
        "removable": True,
        "editable": True,
        "keywords": [
            {"id": 12252, "category_id": 1056, "name": "A friend", "short_code": None},
            {"id": 12253, "category_id": 1056, "name": "Social media", "short_code": None},
            {"id": 12254, "category_id": 1056, "name": "Newsletter", "short_code": None},
        ],
    },
    {
        "id": 1057,
        "item_type": "Gift",
        "name": "Fee Covered",
        "key": "fee_covered",
        "facet_type": "single",
        "ordinal": 101,
        "removable": True,
        "editable": True,
        "keywords": [],
    },
]

CONSTITUENT_TERMS = {
    "name",
    "eaddr",
    "external_id",
    "keyword",
    "groups",
    "phone_number",
    "street",
    "city",
    "state",
    "postal_code",
    "country",
    "constituent_type",
    "updated_from",
    "updated_to",
    "membership_status",
    "membership_level",
    "membership_end_date_from",
    "membership_end_date_to",
    "lists",
    "class",
    "custom_attr",
    "custom_attr_int",
    "custom_attr_from",
    "custom_attr_to",
}
GIFT_TERMS = {
    "date_from",
    "date_to",
    "created_from",
    "created_to",
    "updated_from",
    "updated_to",
    "gift_types",
    "gift_amount",
    "payment_types",
    "campaigns",
    "funds",
    "appeals",
    "events",
    "categories",
    "appeal_types",
    "event_types",
    "gift_ids",
    "external_gift_ids",
}
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
SORTS = {
    "name": lambda c: (str(c.get("sort_name") or "").lower(),),
    "external_id": lambda c: (str(c.get("external_constituent_id") or ""),),
    "lgl_id": lambda c: (c["id"],),
    "date_created": lambda c: (c["created_at"],),
    "date_updated": lambda c: (c["updated_at"],),
    "membership_level": lambda c: ("",),
    "membership_end_date_from": lambda c: ("",),
}
CONTACT_KINDS = {"email_addresses": "address", "phone_numbers": "number", "street_addresses": "street", "web_addresses": "url"}

#: ``Gifts_Patch_Id_UpdateBody`` of LGL's OpenAPI document: what ``PATCH /gifts/{id}`` takes
GIFT_UPDATE_FIELDS = {
    "external_id", "is_anon", "gift_type_id", "gift_type_name", "gift_category_id", "gift_category_name",
    "campaign_id", "campaign_name", "fund_id", "fund_name", "appeal_id", "appeal_name", "event_id", "event_name",
    "received_amount", "received_date", "payment_type_id", "payment_type_name", "check_number",
    "deductible_amount", "note", "ack_template_name", "deposit_date", "deposited_amount", "parent_gift_id",
    "parent_external_id", "auto_sync_to_qbo", "tribute_name", "tributee_name", "tribute_dedication",
    "tribute_recipient_name", "tribute_recipient_salutation", "tribute_recipient_email",
    "tribute_recipient_address", "tribute_recipient_notification_template", "team_member", "custom_fields",
}  # fmt: skip
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

#: ``Invitations_Post_Invitations_CreateBody`` (``POST /events/{event_id}/invitations``); ``PATCH /invitations/{id}``'s
#: ``Invitations_Patch_Id_UpdateBody`` has the same fields
INVITATION_FIELDS = frozenset(
    {
        "constituent_id", "parent_invitation_id", "notes", "rsvp", "attended", "assigned_to", "attendee_names",
        "guest_first_name", "guest_last_name", "is_a_guest", "attendances", "custom_fields", "custom_attrs",
    }
)  # fmt: skip
#: ``Invitations_Post_Invitations_CreateBody_Const`` (``POST /constituents/{constituent_id}/invitations``)
INVITATION_CONST_FIELDS = (INVITATION_FIELDS - {"constituent_id"}) | {"event_id"}
#: rsvp: 1 Yes, 2 No, 3 Maybe, 4 Unknown (the schema); 0 is what the examples show for one never answered
RSVP_STATUS = {1: "yes", 2: "no", 3: "maybe"}
DIGITS = re.compile(r"^\d+$")


def now_stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def resolve_custom_fields(fields: list, categories: list[dict]) -> list[dict]:
    """As LGL does: a field is found by id, key or name, a value by id or name; what does not resolve is
    dropped without an error."""
    resolved = []
    for field in fields:
        category = next(
            (
                c
                for c in categories
                if field.get("id") == c["id"] or field.get("key") == c["key"] or field.get("name") == c["name"]
            ),
            None,
        )
        if category is None:
            continue
        values = [
            k
            for v in field.get("values") or []
            for k in category["keywords"]
            if v.get("id") == k["id"] or v.get("name") == k["name"]
        ]
        if values:
            resolved.append({**{k: v for k, v in category.items() if k != "keywords"}, "values": values})
    return resolved
