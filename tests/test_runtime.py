"""The Runtime: built once from an environment mapping, it is all the code below reads; its transports reach
every API client; and the platform registry is the one list the receiver, doctor and the CLI are built from."""

from __future__ import annotations

import httpx
import pytest
from starlette.testclient import TestClient

from synctool import platforms, store
from synctool.crm import environment
from synctool.ops.checks import doctor
from synctool.runtime import Runtime
from synctool.web.receiver import create_app


def config_file(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("{}\n")
    return path


def test_a_runtime_reads_only_the_environment_it_was_given(tmp_path):
    seen: list[httpx.Request] = []

    def crm(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"items": [], "total_items": 0})

    environ = {
        "CRM_API_KEY": "k-123",
        "CRM_API_BASE_URL": "https://crm.example.org/api/v1",
        "SYNCTOOL_DB": str(tmp_path / "rt.db"),
        "SYNCTOOL_KEYRING": "off",
        "CRM_MIN_INTERVAL_MS": "0",
    }
    rt = Runtime.from_environ(config_file(tmp_path), environ, transports={"crm": httpx.MockTransport(crm)})
    environ["CRM_API_KEY"] = "changed later"  # a snapshot: later changes do not reach it
    conn = store.connect(rt.db_path)
    client = environment.open_client(conn, rt)
    client.request("GET", "/funds", params={"limit": 1})
    client.close()
    assert rt.db_path == tmp_path / "rt.db"
    assert seen[0].url.host == "crm.example.org" and seen[0].headers["authorization"] == "Bearer k-123"


@pytest.mark.registry
def test_every_platform_client_takes_the_runtimes_transport(tmp_path):
    hosts: list[str] = []
    transport = httpx.MockTransport(lambda r: hosts.append(r.url.host) or httpx.Response(200, json={"locations": []}))
    rt = Runtime.from_environ(
        config_file(tmp_path), {"POS_ACCESS_TOKEN": "t", "SYNCTOOL_KEYRING": "off"}, transports={"pos": transport}
    )
    with platforms.using(rt, "pos") as pos:
        assert pos.locations() == []
    assert hosts == ["connect.squareup.com"]


@pytest.mark.registry
def test_the_platform_api_settings_reach_every_platform_client(tmp_path):
    """`platform_api` in config: each platform's API, answering 503, is asked 1 + max_retries times by its client's
    connection test, which then says the error."""
    from synctool.errors import TransientError

    asked: dict[str, int] = {}

    def unavailable(role: str) -> httpx.MockTransport:
        return httpx.MockTransport(lambda r: asked.update({role: asked.get(role, 0) + 1}) or httpx.Response(503, json={}))

    path = tmp_path / "config.yaml"
    path.write_text("platform_api: {max_retries: 1, retry_base_ms: 0}\n")
    secrets = {name: "key-us1" for name in platforms.secret_names()}  # Mailchimp's key names its data centre
    probed = {role: client for role, client in platforms.clients().items() if client.probe}
    rt = Runtime.from_environ(
        path, {**secrets, "SYNCTOOL_KEYRING": "off"}, transports={role: unavailable(role) for role in probed}
    )
    for role, client in probed.items():
        with platforms.using(rt, role) as made, pytest.raises(TransientError, match="answered 503"):
            client.probe(made)
    assert asked == dict.fromkeys(probed, 2) and len(probed) >= 4


@pytest.mark.registry
def test_the_registry_builds_the_receivers_routes_and_doctors_secrets(tmp_path):
    rt = Runtime.from_environ(config_file(tmp_path), {"SYNCTOOL_DB": str(tmp_path / "r.db"), "SYNCTOOL_KEYRING": "off"})
    routes = {route.path for route in create_app(rt).routes}
    assert {f"/webhooks/{role}" for role in platforms.sources()} <= routes
    # the built-ins first, in DEFAULT_PLATFORMS order; a platform a package adds comes after them
    builtin = tuple(p.webhook.role for p in platforms.registered() if p.name in platforms.DEFAULT_PLATFORMS and p.webhook)
    assert platforms.sources()[: len(builtin)] == builtin == ("donations", "pos", "mailing", "payments", "portal")
    with TestClient(create_app(rt)) as client:  # Mailchimp's URL check is answered because it registered one
        assert client.get("/webhooks/mailing").status_code == 200
        assert client.get("/webhooks/pos").status_code == 405
    conn = store.connect(rt.db_path)
    checked = {c["check"] for c in doctor(conn, rt)}
    # the secrets of the platforms in use (an installed package's are asked for once `platforms:` names it)
    for name in [*(n for p in platforms.in_use(rt.config) for n in p.secrets), "CRM_SANDBOX_API_KEY"]:
        assert f"secret {name}" in checked
