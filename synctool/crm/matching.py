"""Finding a known donor who gives under a new e-mail, on the mirror (no CRM request).

Robert Smith is in the CRM as robert@work.org with his street address; on Giving Tuesday he gives as
bob.smith@gmail.com from the same address. The e-mail match (``constituents.lookup``) finds no one; this
module finds him: a constituent whose name matches the donor's **and** who shares at least one of a street
address with its postal code, or a phone number. A name alone never matches.

Names match when the last names are the same (or one a small typo of the other, or the constituent's maiden
name) and the first names are the same, related in the ``nicknames`` library's hand-curated data (Bob/Robert,
Jon/John; Kathryn/Katherine share kate and kathy), or one is a small typo of the other (Micheal/Michael). Two
guards keep a household's other members apart: a typo is one edit inside a name of five letters or more, two
in one of seven or more, with the first and the last letters the same (so Robert/Roberta, Paul/Paula and
Joan/John differ), and two full names of one stem
where one has a feminine ending and the other not (Alexander/Alexandra, Patrick/Patricia, Joseph/Josephine)
never match, whatever the nickname data says. An organisation matches only by e-mail, or by its exact name
and address.

The policy (``donors.matching``, ``synctool settings donor-matching`` wins) decides what a candidate does:
``review`` holds the gift's job for a person (``synctool donors matches``), ``auto`` gives the gift to the one
candidate (two candidates are always held), ``email`` is the e-mail match alone.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, TypedDict, cast

from synctool import settings, store
from synctool.crm import mirror
from synctool.errors import Conflict, InvalidInput, NeedsReview, NotFound
from synctool.queue.unit import Unit

if TYPE_CHECKING:
    from nicknames import NickNamer

    from synctool.config import Config
    from synctool.crm.person import Person

POLICIES = ("review", "auto", "email")
#: the run-time setting that wins over ``donors.matching``
SETTING = "donor_matching"
STATUSES = ("pending", "accepted", "new")
#: the indexed expression (migration 012) that finds the addresses in a postal code's first five characters
POSTAL_PREFIX = "upper(substr(replace(replace(postal_code, ' ', ''), '-', ''), 1, 5))"
FEMININE_ENDINGS = ("a", "ine", "ette", "elle", "yn", "ces")
#: what turns a name into its feminine form (Paul -> Paula, Henri -> Henriette)
FEMININE_SUFFIXES = ("a", "ia", "ine", "ina", "ette", "etta", "elle", "ella")
STREET_WORDS = {
    "street": "st", "str": "st", "avenue": "ave", "av": "ave", "road": "rd", "drive": "dr", "lane": "ln",
    "boulevard": "blvd", "court": "ct", "place": "pl", "terrace": "ter", "circle": "cir", "highway": "hwy",
    "parkway": "pkwy", "apartment": "apt", "suite": "ste", "unit": "apt", "#": "apt",
    "north": "n", "south": "s", "east": "e", "west": "w",
}  # fmt: skip


def policy(conn: store.Connection, config: Config) -> str:
    return str(settings.get(conn, SETTING, config.donors.matching))


class DuplicatePair(TypedDict):
    """Two mirrored constituents who look like one person, and why."""

    constituent_id: str
    name: str
    other_id: str
    other_name: str
    evidence: list[str]


class HeldDonor(TypedDict, total=False):
    """A ``donor_matches`` row as the staff read it: its columns, with the donor and candidates parsed."""

    id: int
    job_id: str
    source: str | None
    external_id: str | None
    email: str
    donor: dict[str, object]
    candidates: list[dict[str, object]]
    why: str
    status: str
    constituent_id: str | None
    decided_by: str | None
    decided_at: str | None
    created_at: str


@dataclass
class Candidate:
    """A constituent who may be the donor, and why."""

    constituent_id: str
    name: str
    evidence: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)


# -- names -------------------------------------------------------------------------------------------------


def plain(text: object) -> str:
    """Lower case, no accents, letters and digits only (``O'Brien-Smith`` -> ``obriensmith``)."""
    decomposed = unicodedata.normalize("NFKD", str(text or ""))
    return "".join(ch for ch in decomposed.lower() if ch.isalnum())


@lru_cache(maxsize=1)
def _nicknames() -> NickNamer:
    from nicknames import NickNamer  # a hand-curated name <-> nickname dataset (18 KB)

    return NickNamer()


def _osa(a: str, b: str) -> int:
    """Edits from one name to the other: letters added, dropped or changed, neighbours swapped."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def small_typo(a: str, b: str) -> bool:
    """A slip of the keyboard inside a name: one edit in a name of five letters or more, two in one of seven or
    more; the first and the last letters the same (so Robert/Roberta, Paul/Paula and Ronald/Donald differ)."""
    if a == b or min(len(a), len(b)) < 5 or a[0] != b[0] or a[-1] != b[-1]:
        return False
    return _osa(a, b) <= (2 if min(len(a), len(b)) >= 7 else 1)


def _gendered(a: str, b: str) -> bool:
    """Two names of one stem, one with a feminine ending and the other not: Paul/Paula, Louis/Louise (the
    stem and its ending), Robert/Roberta, Patrick/Patricia (two full names alike at the start)."""
    short, long_ = sorted((a, b), key=len)
    if len(short) >= 3 and long_.startswith(short):
        ending = long_[len(short) :]
        if ending in FEMININE_SUFFIXES or (ending == "e" and short.endswith("s")):
            return True
    if min(len(a), len(b)) < 6 or a[:3] != b[:3]:
        return False
    return a.endswith(FEMININE_ENDINGS) != b.endswith(FEMININE_ENDINGS)


def first_names(given: str, known: str) -> str | None:
    """Why two first names are one person's, or None."""
    a, b = plain(given), plain(known)
    if not a or not b:
        return None
    if a == b:
        return "same first name"
    if _gendered(a, b):
        return None
    names = _nicknames()
    if b in names.nicknames_of(a) or a in names.nicknames_of(b):
        return f"{given.strip()} and {known.strip()} are one name (nickname)"
    shared = names.nicknames_of(a) & names.nicknames_of(b)
    if shared and a[0] == b[0]:
        return f"{given.strip()} and {known.strip()} share nicknames ({', '.join(sorted(shared)[:3])})"
    if small_typo(a, b):
        return f"{given.strip()} looks like a typo of {known.strip()}"
    return None


def last_names(given: str, known: Mapping[str, object]) -> str | None:
    a = plain(given)
    if not a:
        return None
    for column, said in (("last_name", "same last name"), ("maiden_name", "maiden name")):
        b = plain(known.get(column))
        if b and a == b:
            return said
    b = plain(known.get("last_name"))
    if b and small_typo(a, b):
        return f"last name {given.strip()} looks like a typo of {known.get('last_name')}"
    return None


# -- addresses and phones ----------------------------------------------------------------------------------


def postal_key(code: object) -> str:
    """A postal code to compare: letters and digits, upper case; a US ZIP+4 as its five digits."""
    text = "".join(ch for ch in str(code or "").upper() if ch.isalnum())
    return text[:5] if len(text) == 9 and text.isdigit() else text


def street_key(street: object) -> str:
    words = str(street or "").lower().replace(",", " ").replace(".", " ").replace("#", " # ").split()
    return " ".join(STREET_WORDS.get(w, w) for w in words)


def phone_key(number: object) -> str:
    found = mirror.digits(number)
    return found[-10:] if len(found) >= 7 else ""


# -- the rule ----------------------------------------------------------------------------------------------


def _places(conn: store.Connection, person: Person) -> dict[int, list[str]]:
    """Constituents sharing the person's street address (with postal code) or phone: id -> the evidence."""
    found: dict[int, list[str]] = {}
    street, postal = street_key(person.address.get("street")), postal_key(person.address.get("postal_code"))
    if street and postal:
        for row in conn.execute(
            f"SELECT constituent_id, street, postal_code FROM crm_constituent_addresses WHERE {POSTAL_PREFIX} = ?", (postal[:5],)
        ):
            if postal_key(row["postal_code"]) == postal and street_key(row["street"]) == street:
                found.setdefault(row["constituent_id"], []).append(f"same street address ({row['street']}, {row['postal_code']})")
    phone = phone_key(person.phone)
    if phone:
        suffix = store.dialect.last_chars("digits", 10)  # as the index on it is spelt
        for row in conn.execute(f"SELECT constituent_id, number FROM crm_constituent_phones WHERE {suffix} = ?", (phone,)):
            found.setdefault(row["constituent_id"], []).append(f"same phone ({row['number']})")
    return found


def candidates(conn: store.Connection, person: Person) -> list[Candidate]:
    """The mirrored constituents who may be ``person`` by name and address or phone, oldest first."""
    places = _places(conn, person)
    if not places:
        return []
    marks = ",".join("?" * len(places))
    rows = conn.execute(f"SELECT * FROM crm_constituents WHERE id IN ({marks}) ORDER BY id", list(places)).fetchall()
    found = []
    for row in rows:
        record = dict(row)
        if person.org_name or record["is_org"]:
            # an organisation: its exact name and its street address, nothing looser
            same = person.org_name and record["is_org"] and plain(person.org_name) == plain(record["org_name"])
            addressed = [e for e in places[row["id"]] if e.startswith("same street address")]
            if same and addressed:
                found.append(_candidate(conn, record, ["same organisation name", *addressed]))
            continue
        last = last_names(person.last_name or "", record)
        first = first_names(person.first_name or "", record["first_name"] or "")
        if first is None and first_names(person.first_name or "", record["nick_name"] or ""):
            first = f"{person.first_name} is their nickname in the CRM"
        if last and first:
            found.append(_candidate(conn, record, [first, last, *places[row["id"]]]))
    return found


def _candidate(conn: store.Connection, record: Mapping[str, object], evidence: list[str]) -> Candidate:
    name = " ".join(str(record.get(k) or "") for k in ("first_name", "last_name")).strip() or str(record.get("org_name") or "")
    emails = [r[0] for r in conn.execute("SELECT address FROM crm_constituent_emails WHERE constituent_id = ?", (record["id"],))]
    return Candidate(str(record["id"]), name, evidence, emails)


def duplicates(conn: store.Connection, *, limit: int = 500) -> list[DuplicatePair]:
    """Likely duplicate pairs already in the CRM, by the same rule, read from the mirror."""
    from synctool.crm.person import Person

    pairs: list[DuplicatePair] = []
    seen: set[tuple[str, str]] = set()
    for row in conn.execute("SELECT * FROM crm_constituents ORDER BY id"):
        contacts = mirror.contacts(conn, row["id"])
        for address in contacts["addresses"] or [{}]:
            for phone in contacts["phones"] or [{}]:
                person = Person(first_name=row["first_name"], last_name=row["last_name"], phone=phone.get("number"),
                                address=address, org_name=row["org_name"] if row["is_org"] else None)  # fmt: skip
                for other in candidates(conn, person):
                    pair = tuple(sorted((str(row["id"]), other.constituent_id), key=int))
                    if other.constituent_id == str(row["id"]) or pair in seen:
                        continue
                    seen.add(pair)  # type: ignore[arg-type]
                    name = " ".join(str(row[k] or "") for k in ("first_name", "last_name")).strip() or str(row["org_name"] or "")
                    pairs.append({"constituent_id": str(row["id"]), "name": name, "other_id": other.constituent_id,
                                  "other_name": other.name, "evidence": other.evidence})  # fmt: skip
                    if len(pairs) >= limit:
                        return pairs
    return pairs


# -- held gifts and their decisions -------------------------------------------------------------------------


def hold(work: Unit, job: store.Row, person: Person, found: list[Candidate], why: str) -> int:
    """Record that ``job``'s donor needs a person's decision (once per job); returns the match's id."""
    known = work.conn.execute("SELECT id FROM donor_matches WHERE job_id = ? AND status = 'pending'", (job["id"],)).fetchone()
    row = {
        "job_id": job["id"],
        "source": job["source"],
        "external_id": job["external_id"],
        "email": mirror.normalize_email(person.email),
        "donor": json.dumps({k: v for k, v in asdict(person).items() if v}),
        "candidates": json.dumps([asdict(c) for c in found]),
        "why": why,
        "status": "pending",
        "created_at": store.iso(),
    }
    with work.gather() as conn:  # in a job: committed at its end, with the job held
        if known is not None:
            conn.execute("UPDATE donor_matches SET candidates = ?, why = ? WHERE id = ?", (row["candidates"], why, known[0]))
            return int(known[0])
        return int(
            conn.execute(
                f"INSERT INTO donor_matches ({', '.join(row)}) VALUES ({', '.join('?' * len(row))}) RETURNING id",
                tuple(row.values()),
            ).fetchone()[0]
        )


def resolve(work: Unit, person: Person, job: store.Row, how: str) -> tuple[str | None, str | None]:
    """For a donor whose e-mail is in no constituent: (the constituent to give the gift to, or None to create
    one; what to say about it). A person's decision for the job comes first; then the policy: ``review`` holds
    the job when any candidate is found, ``auto`` takes a single candidate and holds two or more."""
    conn = work.conn
    decided = decision(conn, job["id"])
    if decided is not None:
        if decided["status"] == "new":
            return None, f"a new constituent, as {decided['decided_by']} decided (donor match {decided['id']})"
        return decided["constituent_id"], (
            f"matched to constituent {decided['constituent_id']} by {decided['decided_by']} (donor match {decided['id']})"
        )
    if how == "email":
        return None, None
    found = candidates(conn, person)
    if not found:
        return None, None
    if how == "auto" and len(found) == 1:
        one = found[0]
        return one.constituent_id, (
            f"matched to constituent {one.constituent_id} ({one.name}) under a new e-mail: {'; '.join(one.evidence)}"
        )
    if len(found) == 1:
        why = f"{person.email} may be constituent {found[0].constituent_id} ({found[0].name}): {'; '.join(found[0].evidence)}"
    else:
        why = f"{person.email} may be any of {len(found)} constituents: " + ", ".join(
            f"{c.constituent_id} ({c.name})" for c in found
        )
    match_id = hold(work, job, person, found, why)
    raise NeedsReview(f"held for review (donor match {match_id}): {why}; `synctool donors matches`")


def decision(conn: store.Connection, job_id: str) -> store.Row | None:
    """A person's decision for this job's donor: ``accepted`` (with the constituent) or ``new``."""
    return conn.execute(
        "SELECT * FROM donor_matches WHERE job_id = ? AND status IN ('accepted', 'new') ORDER BY id DESC LIMIT 1", (job_id,)
    ).fetchone()


def as_dict(row: store.Row) -> HeldDonor:
    found = dict(row)
    found["donor"] = json.loads(found["donor"] or "{}")
    found["candidates"] = json.loads(found["candidates"] or "[]")
    return cast(HeldDonor, found)


def listing(conn: store.Connection, status: str | None = "pending", limit: int = 200) -> list[HeldDonor]:
    where, args = ("WHERE status = ?", [status]) if status else ("", [])
    return [as_dict(r) for r in conn.execute(f"SELECT * FROM donor_matches {where} ORDER BY id DESC LIMIT ?", (*args, limit))]


def pending_count(conn: store.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM donor_matches WHERE status = 'pending'").fetchone()[0])


def decide(conn: store.Connection, match_id: int, *, constituent_id: str | None, new: bool, by: str) -> list[HeldDonor]:
    """Settle a held donor: the gift goes to ``constituent_id`` (one of the candidates; the only one when not
    given) or to a new constituent. Every pending match with the same e-mail is settled alike. Returns the
    matches settled, each with its job (the caller queues the jobs)."""
    with store.atomic(conn):
        row = conn.execute("SELECT * FROM donor_matches WHERE id = ?", (match_id,)).fetchone()
        if row is None:
            raise NotFound(f"no donor match {match_id} (synctool donors matches lists them)")
        if row["status"] != "pending":
            raise Conflict(f"donor match {match_id} was settled already ({row['status']}, by {row['decided_by']})")
        offered = [c["constituent_id"] for c in json.loads(row["candidates"] or "[]")]
        chosen = None
        if not new:
            if constituent_id is None:
                if len(offered) != 1:
                    raise InvalidInput(
                        f"donor match {match_id} has {len(offered)} candidates",
                        "choose one: --constituent " + " or ".join(offered),
                    )
                chosen = offered[0]
            elif str(constituent_id) not in offered:
                raise InvalidInput(
                    f"constituent {constituent_id} is not a candidate of match {match_id}", "one of: " + ", ".join(offered)
                )
            else:
                chosen = str(constituent_id)
        same = conn.execute(
            "SELECT * FROM donor_matches WHERE status = 'pending' AND (id = ? OR (email != '' AND email = ?))",
            (match_id, row["email"]),
        ).fetchall()
        now = store.iso()
        conn.executemany(
            "UPDATE donor_matches SET status = ?, constituent_id = ?, decided_by = ?, decided_at = ? WHERE id = ?",
            [("new" if new else "accepted", chosen, by, now, r["id"]) for r in same],
        )
    return [{**as_dict(r), "status": "new" if new else "accepted", "constituent_id": chosen} for r in same]
