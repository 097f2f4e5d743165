"""The staff page as an attacker meets it on the open internet: a sign-in link is spent only by the person's
POST, "send me a link" tells no one who is on the team and cannot be used to mail-bomb, a deactivation is for
good, the sign-in page says only its own words, and every request is bounded (DESIGN.md invariant 10)."""

from __future__ import annotations

import re
from datetime import timedelta

from synctool import store
from synctool.ops import outbox
from tests.helpers import database_text
from tests.test_staff_page import csrf, link_path, page, team  # noqa: F401  (fixtures)

CSP = "content-security-policy"


def test_head_get_and_options_never_spend_a_link_or_open_a_session(page, cli, db):  # noqa: F811
    path = link_path(cli, "viewer@example.org")
    scanner = page()
    for method in ("HEAD", "GET", "HEAD"):
        r = scanner.request(method, path)
        assert r.status_code == 200 and "set-cookie" not in r.headers, method
    assert scanner.options(path).status_code == 405
    assert db.execute("SELECT used_at FROM login_links").fetchone()[0] is None
    assert scanner.get("/admin/").status_code == 303  # the scanner holds no session
    opened = page().post(path)  # the person's own press still works
    assert opened.status_code == 303 and opened.headers["location"] == "/admin/"


def _ask(client, email: str, **headers):
    return client.post("/admin/sign-in", data={"email": email}, headers=headers)


def test_send_me_a_link_answers_the_same_for_staff_deactivated_and_strangers_and_sends_nothing_itself(page, cli, db):  # noqa: F811
    user_id = db.execute("SELECT id FROM users WHERE email = 'admin@example.org'").fetchone()[0]
    assert cli("users", "update", str(user_id), "--deactivate").exit_code == 0
    anonymous = page()
    answers = [_ask(anonymous, email) for email in ("viewer@example.org", "admin@example.org", "nobody@example.org")]
    assert {r.status_code for r in answers} == {200}
    assert len({r.text for r in answers}) == 1 and "a sign-in link is on its way" in answers[0].text
    # no mail server is configured: the answer is the same all the same, and only the staff address is queued
    queued = db.execute("SELECT kind, recipients, sent_at FROM outbox").fetchall()
    assert [tuple(r) for r in queued] == [("sign_in", "viewer@example.org", None)]
    assert db.execute("SELECT count(*) FROM login_links").fetchone()[0] == 0  # the link is made as the mail leaves
    dumped = database_text(db)
    assert "nobody@example.org" not in dumped  # a stranger's address is kept only as a digest


def test_outbox_failures_are_retried_then_shown_by_doctor_and_the_overview(page, cli, db, tmp_path):  # noqa: F811
    from tests.helpers import free_port

    (tmp_path / "config.yaml").write_text(f"smtp:\n  host: 127.0.0.1\n  port: {free_port()}\n  security: none\n")
    _ask(page(), "viewer@example.org")
    assert cli("drain").exit_code == 0  # a mail problem never fails the drain
    row = db.execute("SELECT attempts, sent_at, last_error FROM outbox").fetchone()
    assert row["attempts"] == 1 and row["sent_at"] is None and "127.0.0.1" in row["last_error"]
    with store.atomic(db):
        db.execute("UPDATE outbox SET attempts = ?", (outbox.MAX_ATTEMPTS,))
    doctor = cli("doctor")
    assert "outbox" in doctor.stdout and "1 e-mail(s) could not be sent" in doctor.stdout
    shown = page("viewer").get("/admin/").text
    assert "could not be sent" in shown


def test_send_me_a_link_is_limited_per_address_and_per_client_with_the_same_answer(page, db):  # noqa: F811
    anonymous = page()
    same = {_ask(anonymous, "viewer@example.org").text for _ in range(5)}
    assert len(same) == 1
    assert db.execute("SELECT count(*) FROM outbox").fetchone()[0] == 3  # 3 per address per 15 minutes
    for n in range(20):
        assert _ask(anonymous, f"someone{n}@example.org").status_code == 200
    with store.atomic(db):  # the address's window has passed; the client's (20 an hour) has not
        db.execute("UPDATE sign_in_requests SET at = ? WHERE email_hash IN (SELECT email_hash FROM sign_in_requests LIMIT 5)",
                   (store.iso(store.utcnow() - timedelta(minutes=20)),))  # fmt: skip
    assert _ask(anonymous, "viewer@example.org").status_code == 200
    assert db.execute("SELECT count(*) FROM outbox").fetchone()[0] == 3


def test_deactivation_ends_sessions_and_links_for_good(page, cli, db):  # noqa: F811
    viewer = page("viewer")
    unused = link_path(cli, "viewer@example.org")
    user_id = db.execute("SELECT id FROM users WHERE email = 'viewer@example.org'").fetchone()[0]
    assert cli("users", "update", str(user_id), "--deactivate").exit_code == 0
    assert cli("users", "update", str(user_id), "--activate").exit_code == 0
    assert viewer.get("/admin/").status_code == 303  # the old session stays ended
    assert page().post(unused).status_code == 401  # and the old link unusable
    assert page().post(link_path(cli, "viewer@example.org")).status_code == 303  # a new link works


def test_the_sign_in_page_says_only_its_own_words(page):  # noqa: F811
    lure = "Your account is locked. Call +1 555 0100 now"
    shown = page().get("/admin/sign-in", params={"why": lure})
    assert shown.status_code == 200 and "Call +1 555" not in shown.text
    expired = page().get("/admin/sign-in", params={"why": "expired"})
    assert "Your session has expired" in expired.text


def test_control_characters_in_a_query_are_a_400_with_the_usual_body(page, db, receiver):  # noqa: F811
    viewer = page("viewer")
    for q in ("a\x00b", "\x1b[31m", "line\nbreak"):
        r = viewer.get("/admin/syncs", params={"q": q})
        assert r.status_code == 400 and CSP in r.headers, q
    assert viewer.get("/admin/syncs", params={"q": "O'Brien & Söhne"}).status_code == 200
    r = receiver.get("/health?x=%00")
    assert r.status_code == 400 and r.json()["error"] == "the query string holds a control character"


def test_every_form_is_bounded_and_every_error_page_carries_the_csp(page, cli):  # noqa: F811
    anonymous = page()
    big = anonymous.post("/admin/sign-in", content=b"email=" + b"a" * 100_000,
                         headers={"content-type": "application/x-www-form-urlencoded"})  # fmt: skip
    assert big.status_code == 413 and CSP in big.headers

    def chunks():
        for _ in range(64):
            yield b"a" * 16_384  # 1 MiB with no Content-Length

    streamed = anonymous.post("/admin/sign-in", content=chunks(), headers={"content-type": "application/x-www-form-urlencoded"})
    assert streamed.status_code == 413 and CSP in streamed.headers
    viewer = page("viewer")
    token = csrf(viewer.get("/admin/").text)
    assert viewer.post("/admin/sign-out", data={"csrf": token, "pad": "x" * 70_000}).status_code == 413
    for r in (anonymous.get("/admin/no-such-page"), anonymous.put("/admin/sign-in"), anonymous.post("/admin/login/nonsense")):
        assert r.status_code >= 400 and CSP in r.headers, r.status_code
    assert re.search(r"<title>", anonymous.get("/admin/no-such-page").text)


def test_a_body_is_counted_as_it_streams_whatever_its_content_length_says():
    """h11 (uvicorn's parser here) reads a chunked body sent with a small Content-Length too: the limit must hold."""
    import asyncio

    import pytest
    from starlette.requests import Request

    from synctool.errors import PayloadTooLarge
    from synctool.web.bounds import read_body

    chunks = [{"type": "http.request", "body": b"a" * 16_384, "more_body": True} for _ in range(8)]
    chunks.append({"type": "http.request", "body": b"", "more_body": False})

    async def receive():
        return chunks.pop(0)

    scope = {"type": "http", "method": "POST", "path": "/admin/sign-in", "query_string": b"",
             "headers": [(b"content-length", b"10"), (b"transfer-encoding", b"chunked")]}  # fmt: skip
    with pytest.raises(PayloadTooLarge):
        asyncio.run(read_body(Request(scope, receive), 64 * 1024))
