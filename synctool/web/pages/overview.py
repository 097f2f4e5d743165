"""The overview (``/admin/``): `synctool overview`, with what needs attention linked to where a person sees to it."""

from __future__ import annotations

from typing import TypedDict
from urllib.parse import urlencode

from synctool.ops import overview as overview_ops
from synctool.web.pages.base import ViewResult
from synctool.web.request import StaffRequest


class Need(TypedDict):
    """One thing that needs attention: its words, the page it is about, the link there (None: only the server's
    operator can see to it, with ``operator``, the command they run)."""

    text: str
    path: str
    href: str | None
    operator: str | None


class OverviewPage(TypedDict):
    overview: overview_ops.Overview
    needs: list[Need]


def _href(item: overview_ops.Attention, overview: overview_ops.Overview, path: str) -> str | None:
    """Where on the page a person sees to ``item`` (None: on no page)."""
    if item["page"] == "mappings":
        words = str(item.get("command") or "").split()
        campaign = next((c for c in overview.get("unmapped_campaigns") or [] if str(c["campaign_id"]) in words), None)
        asked = urlencode({"campaign": campaign["campaign_id"]}) if campaign else ""
        return f"/mappings?{asked}#campaign-overrides" if asked else "/mappings#campaign-overrides"
    if item["page"] == "events":
        return "/events#waiting"
    if item["page"] == "plans":
        return "/plans?status=failed"
    if item["page"] == "overview":
        return None
    return path


def needs(overview: overview_ops.Overview) -> list[Need]:
    """What needs attention, each with the page (and the place on it) where a person sees to it; what only
    the server's operator can do (cron, the mail, the platforms' delivery records) says so instead."""
    listed = []
    for item in overview["attention"]:
        path = "/" + ("" if item["page"] == "overview" else item["page"])
        href = _href(item, overview, path)
        operator = item.get("command") if href is None else None
        listed.append(Need(text=item["text"], path=path, href=href, operator=operator))
    return listed


def overview(request: StaffRequest) -> ViewResult:
    summary = overview_ops.overview(request.conn, request.rt)
    return ViewResult(OverviewPage(overview=summary, needs=needs(summary)))
