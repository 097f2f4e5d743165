"""A local stand-in for Little Green Light's REST API v1, for `synctool demo` and the tests.

It keeps state in memory and speaks what ``shared/reference/lgl.md`` records: the same paths (with or
without ``.json``), the list envelope (``limit``/``offset``/``next_item``/``total_items``), ``q[]=field=value``
search clauses (a bare or unknown term is a 400 ``Parameter Error``; ``updated_from``/``updated_to``
filter on ``updated_at``, which every change to a constituent or its nested rows moves; ``sort`` with a
trailing ``!`` to reverse; ``expand`` for the nested arrays), Bearer authentication with LGL's two
401 bodies, 422 "External Gift ID already exists", and ``{api_version, result}`` on delete. It enforces
the rate limit (a 429 past N requests in the window, so a breach is visible), records every request,
and can be told to fail the next requests (``POST /_fake/faults``) with a 500, a timeout, a commit
followed by a timeout, or a commit that lands well after the client gave up (``late_commit``).

Events and their invitations follow ``lgl-openapi.json`` (``/events``, ``/events/{event_id}/invitations``,
``/constituents/{constituent_id}/invitations``, ``/invitations/{id}``). The documented API version cannot create
an event, so tests seed them with ``FakeCrm.add_event``; ``FakeCrm.invite`` makes an invitation as staff would.
Groups, group memberships (``/constituents/{constituent_id}/group_memberships``, ``/group_memberships/{id}``), contact
reports (``/constituents/{constituent_id}/contact_reports``, ``/contact_reports[/{id}]``), contact report types
(``/types/contact_report_types``) and team members (``/team_members``) follow it too.

It lives with the other fakes (it speaks HTTP through Starlette, which the core does not import), one idea a module:

- ``reference.py``: what the account holds before anyone writes, and the words its API takes;
- ``state.py``: ``FakeCrm``, the account in memory, with ``invitations.py`` (its events and invitations);
- ``gate.py``: what every request meets first (recording, rate limit, authentication, faults);
- ``answers.py``: what every endpoint says the same way (bodies, the list envelope, errors);
- ``constituents.py``, ``gifts.py``, ``memberships.py`` (group memberships among them), ``contact_reports.py``,
  ``events.py``, ``lists.py`` (reference lists, ``/types/{type}``, ``/team_members``): the endpoints, one small
  function per operation; ``control.py``: the fake's own ``/_fake/`` routes;
- ``app.py``: the routes table and ``create_app``.

Callers import it by this package's name: ``from synctool.fakes.crm import FakeCrm, create_app``.
"""

from __future__ import annotations

from synctool.fakes.crm.app import create_app
from synctool.fakes.crm.gifts import gift_update_problem
from synctool.fakes.crm.invitations import InvitationRefused, clean_invitation_body, invitation_status
from synctool.fakes.crm.reference import (
    API,
    CONSTITUENT_TERMS,
    CONTACT_KINDS,
    DATE,
    GIFT_FIELDS,
    GIFT_TERMS,
    GIFT_UPDATE_FIELDS,
    INVITATION_CONST_FIELDS,
    INVITATION_FIELDS,
    REFERENCE,
    SORTS,
    TAG_CATEGORY,
    TIMESTAMP,
    now_stamp,
    resolve_custom_fields,
)
from synctool.fakes.crm.state import FakeCrm

__all__ = [
    "API",
    "CONSTITUENT_TERMS",
    "CONTACT_KINDS",
    "DATE",
    "GIFT_FIELDS",
    "GIFT_TERMS",
    "GIFT_UPDATE_FIELDS",
    "INVITATION_CONST_FIELDS",
    "INVITATION_FIELDS",
    "REFERENCE",
    "SORTS",
    "TAG_CATEGORY",
    "TIMESTAMP",
    "FakeCrm",
    "InvitationRefused",
    "clean_invitation_body",
    "create_app",
    "gift_update_problem",
    "invitation_status",
    "now_stamp",
    "resolve_custom_fields",
]
