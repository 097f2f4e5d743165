"""The member portal -> CRM (spec: portal-sync.md, entity rules 1-7).

Two local steps (target ``portal``, no outside calls) turn what arrives into CRM jobs:
- a portal push upserts its record; a payment that became ``succeeded``, a membership that became
  ``active`` or an enrollment that became paid/active queues its CRM job, as the sync flags allow;
- a Stripe event, in the spec's order: (signature and de-duplication happened at the receiver) payment
  state, membership and enrollment outcomes, then jobs. The portal's ids travel in Stripe ``metadata``:
  ``portal_payment_id`` (required), ``portal_user_id``, ``portal_membership_id``, ``portal_enrollment_id``,
  ``portal_payment_type``.

Five CRM handlers then do the work: user, membership, payment, enrollment, relationship.
"""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from synctool import mappings, settings, store
from synctool.crm import constituents, gifts, mirror
from synctool.crm import currency as currency_rule
from synctool.errors import InvalidInput, PermanentError, Skip
from synctool.money import cents_to_dollars
from synctool.platforms import webhook
from synctool.platforms.context import Job
from synctool.platforms.payment_events import Event, PortalObject
from synctool.platforms.portal import PAYMENTS
from synctool.platforms.portal import records as portal_records
from synctool.queue import jobs, unit
from synctool.queue.handlers import handler
from synctool.queue.jobs import Outcome
from synctool.validation import payload

FLAGS = "portal_flags"
DEFAULT_FLAGS = {"auto_sync": True, "sync_on_payment": True, "sync_on_membership": True}
FUND_KEYS = ("membership", "language_classes", "events", "donations")
CART_GROUPS = {
    "membership": "membership",
    "family_addon": "membership",
    "class": "language_classes",
    "event": "events",
    "donation": "donations",
}
#: states a Stripe event sets, which a later push of a "pending" record does not take back
SETTLED = ("succeeded", "active", "paid", "failed")
#: sharing flags sent on every family relationship (the spec leaves their values open)
SHARING = {"share_address": 1, "share_phone": 1, "auto_soft_credit": False, "also_acknowledge": False}


def flags(conn) -> dict[str, bool]:
    return {**DEFAULT_FLAGS, **(settings.get(conn, FLAGS) or {})}


def queue(conn, entity_type: str, entity_id: str, *, force: bool = False, origin: str = "portal") -> str:
    """A CRM job for a portal record; an identical job still waiting in the queue is reused."""
    external = f"{entity_id}" if entity_type == "payment" else None
    return jobs.enqueue_unless_waiting(
        conn,
        source="portal",
        target="crm",
        entity_type=entity_type,
        entity_id=entity_id,
        external_id=external,
        force=force,
        payload={"origin": origin},
    )


def jobs_for(conn, kind: str, record: dict[str, Any], before: dict[str, Any] | None, origin: str) -> list[str]:
    """The CRM jobs a record's new state calls for, within the caller's transaction."""
    f = flags(conn)
    if not f["auto_sync"]:
        return []
    changed = before is None or before.get("status") != record.get("status")
    queued = []
    if kind == "payment" and record["status"] == "succeeded" and changed and f["sync_on_payment"]:
        queued.append(queue(conn, "payment", record["id"], origin=origin))
    elif kind == "membership" and record["status"] == "active" and changed and f["sync_on_membership"]:
        queued.append(queue(conn, "membership", record["id"], origin=origin))
    elif kind == "enrollment" and record["status"] in ("paid", "active") and changed:
        queued.append(queue(conn, "enrollment", record["id"], origin=origin))
    elif kind == "user" and (
        before is None
        or any(before.get(k) != record.get(k) for k in ("email", "first_name", "last_name", "phone", "billing_address_1"))
    ):
        queued.append(queue(conn, "user", record["id"], origin=origin))
    elif kind == "family_link" and not record.get("crm_relationship_id"):
        queued.append(queue(conn, "relationship", record["id"], origin=origin))
    return queued


def apply_record(conn, kind: str, data: Any, origin: str) -> tuple[dict[str, Any], list[str]]:
    """Store one portal record, however it arrived (a push or ``portal import``), and queue the CRM jobs
    its new state calls for; within the caller's transaction. Returns the stored record and the job ids."""
    checked = portal_records.validate(kind, data)  # every field's type, before any of it reaches SQL
    before = portal_records.find(conn, kind, checked.id)
    if before is not None and data.get("status", "pending") == "pending" and before.get("status") in SETTLED:
        # the processor's event already settled it; a record carrying the older state does not undo that
        data = {**data, "status": before["status"]}
    if kind == "payment" and before is not None and before.get("currency") and not data.get("currency"):
        data = {**data, "currency": before["currency"]}  # the processor named it; a push that does not keeps it
    record = portal_records.upsert(conn, kind, data)
    return record, jobs_for(conn, kind, record, before, origin)


def stripe_event_of(event: webhook.Event) -> Event:
    """The Stripe event behind a job: the one its delivery was parsed into."""
    if not isinstance(event.data, Event):
        raise PermanentError("the job has no Stripe event (its delivery is gone)")
    return event.data


@handler("portal", "push")
def push(event: webhook.Event, job: Job) -> Outcome:
    body = event.data or {}
    kind = str(body.get("type") or "").split(".", 1)[0]
    try:
        with store.atomic(job.conn):
            record, queued = apply_record(job.conn, kind, body.get("data"), "portal push")
    except InvalidInput as exc:
        raise PermanentError(f"{exc}: {exc.detail}" if exc.detail else str(exc)) from None
    return Outcome("succeeded", f"{kind} {record['id']} stored" + (f"; queued {len(queued)} CRM job(s)" if queued else ""))


@handler(PAYMENTS, "stripe_event")
def stripe_event(event: webhook.Event, job: Job) -> Outcome:
    stripe = stripe_event_of(event)
    kind = stripe.type
    obj = payload(PortalObject, stripe.data.object, f"the {kind} object")
    meta = obj.metadata
    session = kind.startswith("checkout.session.")
    if session and kind != "checkout.session.async_payment_failed" and obj.payment_status != "paid":
        raise Skip(
            f"checkout session {obj.id} is {obj.payment_status}, not paid; nothing changes yet"
            " (a delayed payment settles with checkout.session.async_payment_succeeded)"
        )
    if kind == "payment_intent.succeeded" and obj.status not in (None, "succeeded"):
        raise Skip(f"payment intent {obj.id} is {obj.status}")
    payment_id = meta.get("portal_payment_id")
    if not payment_id:
        if kind == "payment_intent.succeeded":
            raise Skip(
                f"payment intent {obj.id} carries no metadata.portal_payment_id: a payment intent has "
                "the portal's ids only when the portal's Checkout Session sets payment_intent_data.metadata "
                "(the session's own events carry them); otherwise it is not a portal payment"
            )
        raise Skip(f"{kind} {obj.id} carries no metadata.portal_payment_id: not a portal payment")
    if kind == "checkout.session.async_payment_failed":
        return payment_failed(job, payment_id, obj)
    intent = obj.payment_intent if session else obj.id
    cents = obj.amount_total if session else (obj.amount_received if obj.amount_received is not None else obj.amount)
    with store.atomic(job.conn):
        before = portal_records.find(job.conn, "payment", payment_id)
        if before is None:  # the portal's push has not arrived yet: build the payment from the metadata
            record = payment_from_metadata(payment_id, meta, cents)
        else:
            record = {k: v for k, v in before.items() if k in portal_records.record_models()["payment"].model_fields}
        record.update(status="succeeded", payment_intent_id=intent or record.get("payment_intent_id"))
        if obj.currency:  # the money's currency as the processor took it (crm.currency holds another)
            record["currency"] = obj.currency
        payment = portal_records.upsert(job.conn, "payment", record)
        queued = jobs_for(job.conn, "payment", payment, before, kind)
        outcomes = []
        membership_id = meta.get("portal_membership_id") or payment.get("membership_id")
        membership = portal_records.find(job.conn, "membership", membership_id)
        if membership is not None and membership["status"] != "active":
            updated = portal_records.upsert(job.conn, "membership", {**membership, "status": "active"})
            outcomes.append(f"membership {membership_id} active")
            if not flags(job.conn)["sync_on_payment"]:  # otherwise the payment sync triggers it
                queued += jobs_for(job.conn, "membership", updated, membership, kind)
        enrollment_id = meta.get("portal_enrollment_id") or payment.get("enrollment_id")
        enrollment = portal_records.find(job.conn, "enrollment", enrollment_id)
        if enrollment is not None and enrollment["status"] not in ("paid", "active"):
            updated = portal_records.upsert(job.conn, "enrollment", {**enrollment, "status": "paid"})
            outcomes.append(f"enrollment {enrollment_id} paid")
            queued += jobs_for(job.conn, "enrollment", updated, enrollment, kind)
    return Outcome(
        "succeeded",
        f"payment {payment_id} succeeded" + "".join(f"; {o}" for o in outcomes) + f"; queued {len(queued)} CRM job(s)",
    )


def payment_from_metadata(payment_id: str, meta: dict[str, str], cents: int | None) -> dict[str, Any]:
    """A payment whose own push has not arrived, built from the processor's metadata."""
    if not meta.get("portal_user_id"):
        raise PermanentError(f"payment {payment_id} is unknown and the event has no metadata.portal_user_id")
    return {
        "id": payment_id,
        "user_id": meta["portal_user_id"],
        "type": meta.get("portal_payment_type", "donation"),
        "amount_cents": int(cents or 0),
        "gateway": "stripe",
        "membership_id": meta.get("portal_membership_id"),
        "enrollment_id": meta.get("portal_enrollment_id"),
    }


def payment_failed(job: Job, payment_id: str, session: PortalObject) -> Outcome:
    """A delayed payment that did not settle: the portal payment is marked failed; no gift, no membership."""
    with store.atomic(job.conn):
        before = portal_records.find(job.conn, "payment", payment_id)
        if before is None:
            record = payment_from_metadata(payment_id, session.metadata, session.amount_total)
        elif before["status"] == "succeeded":
            raise PermanentError(
                f"payment {payment_id} already succeeded, but Stripe reports its delayed payment "
                f"failed (session {session.id}): check the CRM gift and the payment in Stripe"
            )
        else:
            record = {k: v for k, v in before.items() if k in portal_records.record_models()["payment"].model_fields}
        record.update(status="failed", payment_intent_id=session.payment_intent or record.get("payment_intent_id"))
        portal_records.upsert(job.conn, "payment", record)
    return Outcome("succeeded", f"payment {payment_id} failed (delayed payment did not settle); no gift")


# -- the CRM handlers ----------------------------------------------------------------------------------


def user_person(user: dict[str, Any]) -> constituents.Person:
    street = ", ".join(p for p in (user.get("billing_address_1"), user.get("billing_address_2")) if p)
    return constituents.Person(
        user.get("first_name"),
        user.get("last_name"),
        user["email"],
        phone=user.get("phone"),
        external_id=user["id"],
        address={
            "street": street or None,
            "city": user.get("billing_city"),
            "state": user.get("billing_state"),
            "postal_code": user.get("billing_postcode"),
            "country": user.get("billing_country"),
        },
    )


def sync_user(job: Job, user_id: str) -> str:
    """Rule 1 and 2: re-validate the link against the CRM e-mails; else match or create; then contacts."""
    user = portal_records.get(job.conn, "user", user_id)
    person = user_person(user)
    crm = job.crm
    linked = user.get("crm_constituent_id")
    if linked and constituents.revalidate(crm, job.conn, linked, user["email"]):
        body = {
            "first_name": person.first_name,
            "last_name": person.last_name or person.email,
            "external_constituent_id": user["id"],
        }
        updated = crm.update_constituent(linked, body)
        contacts = {"email_addresses": [{"address": user["email"], "email_type_name": "Home"}]}
        if person.phone:
            contacts["phone_numbers"] = [{"number": person.phone, "phone_type_name": "Home"}]
        if person.address.get("street"):
            contacts["street_addresses"] = [{**{k: v for k, v in person.address.items() if v}, "street_type_name": "Home"}]
        for kind, rows in contacts.items():
            crm.replace_contacts(linked, kind, rows)
        with store.atomic(job.conn):
            mirror.put(job.conn, {**updated, "id": linked, **contacts})
        constituent_id = linked
    else:
        with store.atomic(job.conn):
            constituents.unlink(job.conn, user["email"])
        constituent_id, _ = job.match_or_create(person, use_link=False)
    portal_records.set_link(job.conn, "user", user_id, crm_constituent_id=constituent_id)
    return constituent_id


def constituent_for(job: Job, user_id: str) -> str:
    """The user's constituent, running the user sync first when there is none (rules 3, 4, 7)."""
    user = portal_records.find(job.conn, "user", user_id)
    if user is None:
        raise PermanentError(f"portal user {user_id} is unknown to synctool (push or import it first)")
    return user["crm_constituent_id"] or sync_user(job, user_id)


def user_locked(*user_ids_of):
    """Run a CRM handler while holding the lock of every portal user it touches, so two jobs for one
    member (a user sync and a payment, two memberships) never run side by side."""

    def wrap(fn):
        def handler_(event: webhook.Event, job: Job) -> Outcome:
            users = [u for get in user_ids_of for u in get(job) if u]
            with unit.of(job.conn).lock([f"portal_user:{u}" for u in users]):
                return fn(event, job)

        handler_.__name__ = fn.__name__
        handler_.__doc__ = fn.__doc__
        return handler_

    return wrap


def _user_of(kind: str, *fields: str):
    def get(job: Job) -> list[str | None]:
        record = portal_records.find(job.conn, kind, job.row["entity_id"]) or {}
        return [record.get(f) for f in fields]

    return get


@handler("portal", "user")
@user_locked(lambda job: [job.row["entity_id"]])
def user(event: webhook.Event, job: Job) -> Outcome:
    constituent_id = sync_user(job, job.row["entity_id"])
    return Outcome("succeeded", f"user linked to constituent {constituent_id}", crm_constituent_id=constituent_id)


def level_for(job: Job, membership: dict[str, Any]) -> int:
    for key in (membership.get("product_id"), membership.get("level"), "*"):
        if key:
            mapped = mappings.get(job.conn, "portal_level", str(key))
            if mapped:
                return int(mapped["membership_level_id"])
    raise PermanentError(
        f"no membership level mapping for product {membership.get('product_id')!r} or level "
        f"{membership.get('level')!r}, and no global default (synctool portal mappings levels set)"
    )


def finish_before(start: str, existing_start: str | None) -> str:
    """The day before the new membership starts, but never before the old one started (start-date-safe)."""
    finish = date.fromisoformat(start[:10]) - timedelta(days=1)
    if existing_start:
        finish = max(finish, date.fromisoformat(existing_start[:10]))
    return finish.isoformat()


def overlaps(current: dict[str, Any], start: str) -> bool:
    """Whether a CRM membership still runs on the day a new one starts (no finish date: it runs on). Decided by
    the two memberships' own dates, never by today's: a renewal synced late ends the old one the same way."""
    finish = str(current.get("finish_date") or "")[:10]
    return not finish or finish >= start[:10]


def local_today(job: Job) -> str:
    """Today in the organisation's time zone (``timezone:``; UTC when unset), from the runtime's clock."""
    zone = gifts.zone(job.config.timezone)
    now = job.rt.clock()
    return (now.astimezone(zone) if zone else now).date().isoformat()


@handler("portal", "membership")
@user_locked(_user_of("membership", "user_id"))
def membership(event: webhook.Event, job: Job) -> Outcome:
    record = portal_records.get(job.conn, "membership", job.row["entity_id"])
    constituent_id = constituent_for(job, record["user_id"])
    crm = job.crm
    level_id = level_for(job, record)
    body = {
        "membership_level_id": level_id,
        "date_start": str(record.get("start_date") or local_today(job))[:10],
        "finish_date": record.get("renewal_date"),
        "note": f"portal membership {record['id']} ({record.get('level') or record.get('product_id') or 'level'}), "
        f"status {record.get('status')}, synced by synctool",
    }
    ended = 0
    if record.get("crm_membership_id"):
        crm.update_membership(record["crm_membership_id"], body)
        membership_id = record["crm_membership_id"]
    else:
        for current in crm.list_memberships(constituent_id):
            if not overlaps(current, str(body["date_start"])):
                continue  # over before the new one starts
            crm.update_membership(
                current["id"],
                {"finish_date": finish_before(str(body["date_start"]), str(current.get("date_start") or "") or None)},
            )
            ended += 1
        membership_id = str(crm.create_membership(constituent_id, body)["id"])
        portal_records.set_link(job.conn, "membership", record["id"], crm_membership_id=membership_id)
    group = {"full": job.config.crm.scholarship_group_full, "partial": job.config.crm.scholarship_group_partial}.get(
        record.get("subsidy_tier") or ""
    )
    if record.get("subsidy_tier") in ("full", "partial"):
        if not group:
            raise PermanentError(
                f"{record['subsidy_tier']} scholarship membership, but "
                f"CRM_GROUP_ID_SCHOLARSHIP_{record['subsidy_tier'].upper()} is not set"
            )
        in_group = any(str(g.get("group_id")) == str(group) for g in crm.list_group_memberships(constituent_id))
        if not in_group:
            crm.add_to_group(
                constituent_id,
                {
                    "group_id": int(group),
                    "date_start": body["date_start"],
                    "date_end": record.get("renewal_date"),
                    "is_current": True,
                },
            )
    return Outcome(
        "succeeded",
        f"CRM membership {membership_id}" + (f"; ended {ended} current" if ended else ""),
        crm_constituent_id=constituent_id,
        crm_ids={"membership_id": membership_id},
    )


def gift_groups(conn, payment: dict[str, Any]) -> list[tuple[str, int]]:
    """Rule 5: (fund key, cents) per gift; a cart gives one gift per product category group."""
    kind = payment["type"]
    if kind == "membership":
        return [("membership", payment["amount_cents"])]
    if kind == "donation":
        return [("donations", payment["amount_cents"])]
    if kind == "enrollment":
        enrollment = portal_records.find(conn, "enrollment", payment.get("enrollment_id"))
        product = portal_records.find(conn, "product", (enrollment or {}).get("product_id"))
        category = (product or {}).get("category")
        key = {"class": "language_classes", "event": "events"}.get(str(category), "membership")
        return [(key, payment["amount_cents"])]
    groups: dict[str, int] = {}
    for item in payment["items"]:
        category = item.get("category")
        if not category and item.get("product_id"):
            category = (portal_records.find(conn, "product", item["product_id"]) or {}).get("category")
        key = CART_GROUPS.get(category or "", "donations")
        groups[key] = groups.get(key, 0) + item["amount_cents"] * item["quantity"]
    if not groups:
        raise PermanentError(f"cart payment {payment['id']} has no items")
    return sorted(groups.items(), key=lambda kv: FUND_KEYS.index(kv[0]))


#: the sync log's reason for a $0 payment that is no scholarship (reconcile and year end expect no gift for it)
NO_MONEY = "no money ($0 payment, no scholarship)"


def no_money(payment: dict[str, Any], groups: list[tuple[str, int]]) -> bool:
    """A payment that took no money and is no scholarship (a 100% discount code): no gift. A $0 scholarship
    payment is a gift (rule 5), as it always was."""
    return not payment.get("scholarship") and not any(cents for _, cents in groups)


def membership_sync(job: Job, record: dict[str, Any], groups: list[tuple[str, int]]) -> str:
    """A membership payment queues its membership's sync (the payment's, else the user's active one); in words."""
    if not any(k == "membership" for k, _ in groups):
        return ""
    membership_id = record.get("membership_id")
    if membership_id is None:
        active = job.conn.execute(
            "SELECT id FROM portal_memberships WHERE user_id = ? AND status = 'active' ORDER BY start_date DESC LIMIT 1",
            (record["user_id"],),
        ).fetchone()
        membership_id = active[0] if active else None
    if not membership_id or not flags(job.conn)["sync_on_membership"]:
        return ""
    with store.atomic(job.conn):
        queue(job.conn, "membership", membership_id, origin=f"payment {record['id']}")
    return f"; membership {membership_id} sync queued"


@handler("portal", "payment")
@user_locked(_user_of("payment", "user_id"))
def payment(event: webhook.Event, job: Job) -> Outcome:
    record = portal_records.get(job.conn, "payment", job.row["entity_id"])
    force = bool(job.row["force"])
    if record["status"] != "succeeded":
        raise Skip(f"payment {record['id']} is {record['status']}; only succeeded payments become gifts")
    if record.get("crm_gift_id") and not force:
        raise Skip(f"payment {record['id']} is already CRM gift {record['crm_gift_id']}")
    constituent_id = constituent_for(job, record["user_id"])
    gateway = mappings.get(job.conn, "portal_gateway", str(record.get("gateway") or "")) or {}
    groups = gift_groups(job.conn, record)
    if no_money(record, groups):  # a 100% discount: no gift; its membership still syncs
        return Outcome("skipped", NO_MONEY + membership_sync(job, record, groups), crm_constituent_id=constituent_id)
    amounts = [cents_to_dollars(cents) for _, cents in groups]
    said = None
    if not all((gifts.recorded(job.conn, ext) or {"state": None})["state"] == "done" for ext in _gift_ids(record, groups)):
        # another currency than the organisation's holds the payment (crm.currency); released, its amount is shared
        settled = job.money("gift", record["id"], sum(amounts), record.get("currency"), external_id=record["id"])
        if settled.released:
            amounts, said = currency_rule.spread(amounts, settled.amount), settled.note
    gift_ids: dict[str, str] = {}
    for (key, _cents), amount in zip(groups, amounts, strict=True):
        fund = mappings.get(job.conn, "portal_fund", key)
        if not fund:
            raise PermanentError(f"no fund mapping for {key} (synctool portal mappings funds set {key} --fund-id ...)")
        external_id = record["id"] if len(groups) == 1 else f"{record['id']}-{key}"
        body = {
            "external_id": external_id,
            "received_amount": float(amount),
            "received_date": (record.get("created_at") or store.iso())[:10],
            "fund_id": fund["fund_id"],
            "gift_type_name": "Gift",
            "note": f"portal payment {record['id']} ({record['type']}, {key}); intent "
            f"{record.get('payment_intent_id') or '-'}; status {record['status']}; {record.get('created_at') or ''}",
        }
        if said:
            body["note"] += f"; {said}"
        if fund.get("campaign_name"):
            body["campaign_name"] = fund["campaign_name"]
        if gateway.get("payment_type_id"):
            body["payment_type_id"] = gateway["payment_type_id"]
        gift_id, _ = gifts.create_once(
            job.crm,
            job.conn,
            constituent_id,
            body,
            job_id=job.row["id"],
            force_lookup=force,
            confirm_after_s=job.config.crm.confirm_after_s,
        )
        gift_ids[key] = gift_id
    primary = gift_ids[groups[0][0]]
    portal_records.set_link(job.conn, "payment", record["id"], crm_gift_id=primary, crm_gift_ids=gift_ids)
    message = f"{len(gift_ids)} gift(s): " + ", ".join(f"{k} {v}" for k, v in gift_ids.items())
    message += membership_sync(job, record, groups)
    with store.atomic(job.conn):
        jobs.record_crm_ids(job.conn, job.row["id"], constituent_id=constituent_id, gift_id=primary)
    total = sum(amounts, Decimal("0.00"))
    return Outcome(
        "succeeded", message, crm_constituent_id=constituent_id, crm_gift_id=primary, crm_ids=gift_ids, amount=f"{total:.2f}"
    )


def _gift_ids(record: dict[str, Any], groups: list[tuple[str, int]]) -> list[str]:
    """The external ids of a payment's gifts: its id, or one per product group of a cart."""
    return [record["id"] if len(groups) == 1 else f"{record['id']}-{key}" for key, _ in groups]


@handler("portal", "enrollment")
def enrollment(event: webhook.Event, job: Job) -> Outcome:
    record = portal_records.get(job.conn, "enrollment", job.row["entity_id"])
    portal_records.set_link(job.conn, "enrollment", record["id"], crm_synced_at=store.iso())
    return Outcome("succeeded", "enrollment recorded (its gift comes from its payment)")


@handler("portal", "relationship")
@user_locked(_user_of("family_link", "primary_user_id", "member_user_id"))
def relationship(event: webhook.Event, job: Job) -> Outcome:
    link = portal_records.get(job.conn, "family_link", job.row["entity_id"])
    if link.get("crm_relationship_id"):
        raise Skip(f"family link {link['id']} is already CRM relationship {link['crm_relationship_id']}")
    primary = constituent_for(job, link["primary_user_id"])
    member = constituent_for(job, link["member_user_id"])
    default = mappings.get(job.conn, "portal_relationship_type", "default") or {}
    type_id = link.get("crm_relationship_type_id") or default.get("id")
    body: dict[str, Any] = {"related_constituent_id": int(member), **SHARING}
    if type_id:
        body["relationship_type_id"] = int(type_id)
    else:
        body["name"] = "Family"  # the deprecated name-based path: LGL resolves the type by name
    created = job.crm.create_relationship(primary, body)
    portal_records.set_link(job.conn, "family_link", link["id"], crm_relationship_id=str(created["id"]))
    return Outcome(
        "succeeded",
        f"CRM relationship {created['id']} ({'type ' + str(type_id) if type_id else 'by name'})",
        crm_constituent_id=primary,
        crm_ids={"relationship_id": str(created["id"])},
    )
