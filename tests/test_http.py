"""The one HTTP core (synctool/http.py) on httpx.MockTransport: retries, Retry-After, refusals and
uncertain writes, the same for every platform client."""

from __future__ import annotations

import httpx
import pytest

from synctool.errors import (
    RemoteError,
    TransientError,
    UncertainWrite,
    exit_code,
    http_status,
)
from synctool.http import ApiClient, backoff_s, retry_after_seconds
from tests.helpers import mock_transport


def client(responses: list, sleeps: list, **kw) -> ApiClient:
    transport = mock_transport(responses)
    api = ApiClient("https://api.test/v1", name="Test", transport=transport, sleep=sleeps.append, retry_base_s=1.0, **kw)
    api.seen = transport.seen
    return api


def test_retries_5xx_and_429_then_succeeds_with_doubling_or_retry_after():
    sleeps: list[float] = []
    api = client(
        [
            httpx.Response(503),
            httpx.Response(429, headers={"Retry-After": "7"}),
            httpx.Response(502),
            httpx.Response(200, json={"ok": True}),
        ],
        sleeps,
    )
    assert api.request("GET", "/things") == {"ok": True}
    assert sleeps == [1.0, 7.0, 4.0] and api.requests_sent == 4


def test_a_refusal_is_a_remote_error_with_its_status_and_is_not_retried():
    sleeps: list[float] = []
    api = client([httpx.Response(422, json={"message": "bad field"})], sleeps, error_text=lambda b: b["message"])
    with pytest.raises(RemoteError) as info:
        api.request("POST", "/things", json={})
    assert info.value.status == 422 and str(info.value) == "Test answered 422: bad field" and sleeps == []
    assert exit_code(info.value) == 1 and http_status(info.value) == 502


def test_giving_up_is_transient_with_the_status():
    api = client([httpx.Response(500)] * 4, [], max_retries=3)
    with pytest.raises(TransientError) as info:
        api.request("GET", "/things")
    assert info.value.status == 500 and not isinstance(info.value, UncertainWrite)


def test_uncertain_writes_are_handed_back_not_resent():
    timeout = httpx.ReadTimeout("read timed out")
    for answer in (timeout, httpx.Response(502)):
        api = client([answer, httpx.Response(201, json={"id": 1})], [], uncertain_writes=True)
        with pytest.raises(UncertainWrite):
            api.request("POST", "/things", json={})
        assert len(api.seen) == 1  # sent once, never blindly again
    # a POST refused before any work (429), or a connection never made, is safe to send again
    api = client(
        [httpx.Response(429), httpx.ConnectError("refused"), httpx.Response(200, json={"id": 2})], [], uncertain_writes=True
    )
    assert api.request("POST", "/things", json={}) == {"id": 2} and len(api.seen) == 3
    # reads are retried after a timeout
    api = client([timeout, httpx.Response(200, json={})], [], uncertain_writes=True)
    assert api.request("GET", "/things") == {}


def test_before_send_runs_before_every_attempt():
    calls: list[str] = []
    api = client([httpx.Response(503), httpx.Response(200, json={})], [], before_send=lambda: calls.append("slot"))
    api.request("GET", "/things")
    assert calls == ["slot", "slot"]


def test_retry_after_and_backoff():
    assert retry_after_seconds("3") == 3.0 and retry_after_seconds("soon") is None and retry_after_seconds(None) is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past
    assert backoff_s(1.0, 2, None) == 4.0 and backoff_s(1.0, 0, 9.0) == 9.0
